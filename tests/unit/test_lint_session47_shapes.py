"""Shapes from session 47: a function reached through `functools.partial` (a name bound to one,
or a helper that returns one), with the arguments the partial bound carried into it. Each with
its twin, in our own words."""

from __future__ import annotations

from ddpdoctor.lint.driver import gather
from tests.unit.test_lint_round50_shapes import at, line_of
from tests.unit.test_lint_session39_shapes import lint_tree


def lint_one(tmp_path, code: str, **more: str):
    return lint_tree(tmp_path, {"train.py": code, **more})


# -------------------------------------------------- a loader builder called through functools.partial
PARTIAL = """
import functools
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def make_loader(dataset, batch_size, distributed=False):
    sampler = DistributedSampler(dataset) if distributed else None
    return DataLoader(dataset, batch_size=batch_size, sampler=sampler, shuffle=sampler is None)  # the loader


{picker}


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(2, 1))
    dataset = TensorDataset(torch.randn(64, 2), torch.randn(64, 1))
    loader = {call}
    for epoch in range(3):
        if loader.sampler is not None:
            loader.sampler.set_epoch(epoch)
        for x, y in loader:
            (model(x) - y).pow(2).mean().backward()


if __name__ == "__main__":
    main()
"""


def _partial(flag: str) -> str:
    return PARTIAL.replace("{picker}", "").replace(
        "{call}", "functools.partial(make_loader, distributed=%s)(dataset, 8)" % flag)


def test_a_loader_built_through_a_partial_that_turns_sharding_off_is_ddp802(tmp_path):
    code = PARTIAL.replace("{picker}", "").replace(
        "    loader = {call}", "    get_loader = functools.partial(make_loader, distributed=False)\n"
                             "    loader = get_loader(dataset, 8)")
    assert at(lint_one(tmp_path, code), "DDP802") == [(line_of(code, "# the loader"), "error")]


def test_its_twin_binds_sharding_on_in_the_partial_over_a_false_default(tmp_path):
    # (the default, distributed=False, is not what this call runs with)
    code = PARTIAL.replace("{picker}", "").replace(
        "    loader = {call}", "    get_loader = functools.partial(make_loader, distributed=True)\n"
                             "    loader = get_loader(dataset, 8)")
    assert at(lint_one(tmp_path, code), "DDP802") == []


PICKER = """
def pick_loader(task):
    if task == "toy":
        return functools.partial(make_loader, batch_size=8)
    return functools.partial(make_loader, batch_size=16)
"""


def test_a_helper_that_returns_a_partial_runs_the_wrapped_builder(tmp_path):
    code = PARTIAL.replace("{picker}", PICKER).replace("{call}", "pick_loader('toy')(dataset)")
    assert at(lint_one(tmp_path, code), "DDP802") == [(line_of(code, "# the loader"), "error")]


def test_its_twin_returns_a_partial_that_shards(tmp_path):
    code = PARTIAL.replace("{picker}", PICKER.replace("batch_size=8)", "batch_size=8, distributed=True)")
                           .replace("batch_size=16)", "batch_size=16, distributed=True)")) \
        .replace("{call}", "pick_loader('toy')(dataset)")
    assert at(lint_one(tmp_path, code), "DDP802") == []


def test_the_call_of_the_partial_itself_carries_its_positional_arguments(tmp_path):
    code = _partial("False")
    assert at(lint_one(tmp_path, code), "DDP802") == [(line_of(code, "# the loader"), "error")]
    assert at(lint_one(tmp_path, _partial("True")), "DDP802") == []


HANDED = """
def pick_loader(task, distributed=False):
    return functools.partial(make_loader, distributed=distributed)
"""


def test_a_partial_bound_to_its_builders_parameter_reads_what_the_builders_callers_give(tmp_path):
    # (pick_loader's `distributed` is left at False: make_loader never builds the sampler)
    code = PARTIAL.replace("{picker}", HANDED).replace("{call}", "pick_loader('toy')(dataset, 8)")
    assert at(lint_one(tmp_path, code), "DDP802") == [(line_of(code, "# the loader"), "error")]


def test_its_twin_hands_the_builder_true(tmp_path):
    code = PARTIAL.replace("{picker}", HANDED).replace("{call}", "pick_loader('toy', True)(dataset, 8)")
    assert at(lint_one(tmp_path, code), "DDP802") == []


# -------------------------------------------------- a rank-0 return two ifs down, before a collective
NESTED_RETURN = """
import json, os
import torch, torch.distributed as dist


def main(resume):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    if resume:
        if os.path.exists("done.json"):
            with open("done.json") as f:
                state = json.load(f)
            if state["finished"]{rank_part}:
                return
    total = torch.ones(1)
    dist.all_reduce(total)  # the collective


if __name__ == "__main__":
    main(resume=True)
"""


def test_a_rank_zero_return_nested_two_ifs_down_leaves_the_others_in_the_collective(tmp_path):
    code = NESTED_RETURN.replace("{rank_part}", " and rank == 0")
    found = at(lint_one(tmp_path, code), "DDP801")
    assert found == [(line_of(code, "# the collective"), "warning")]


def test_its_twin_returns_on_every_rank(tmp_path):
    code = NESTED_RETURN.replace("{rank_part}", "")
    assert at(lint_one(tmp_path, code), "DDP801") == []


# -------------------------------------------------- a global flag a signal handler sets
GLOBAL_FLAG = """
import signal
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

stop_asked = False


def on_term(signum, frame):
    global stop_asked
    stop_asked = True


def main():
    global stop_asked
    signal.signal(signal.SIGTERM, on_term)
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(2, 1))
    dataset = TensorDataset(torch.randn(64, 2), torch.randn(64, 1))
    sampler = DistributedSampler(dataset)  # the sampler
    loader = DataLoader(dataset, batch_size=4, sampler=sampler)
    try:
        for epoch in range(10):
            if stop_asked:
                break
            {set_epoch}
            for x, y in loader:
                (model(x) - y).pow(2).mean().backward()
    except KeyboardInterrupt:
        stop_asked = True


if __name__ == "__main__":
    main()
"""


def test_a_global_flag_bound_true_later_in_the_function_is_not_always_true(tmp_path):
    # (`stop_asked = True` in the except is not all it holds: the module and the handler set it)
    code = GLOBAL_FLAG.replace("{set_epoch}", "sampler.set_epoch(epoch)")
    assert at(lint_one(tmp_path, code), "DDP804") == []


def test_its_twin_never_sets_the_epoch(tmp_path):
    code = GLOBAL_FLAG.replace("{set_epoch}", "pass")
    assert at(lint_one(tmp_path, code), "DDP804") == [(line_of(code, "# the sampler"), "warning")]


# -------------------------------------------------- a NaN skip that also steps the count
NAN_SKIP = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(2, 1))
    step = 0
    while step < 100:
        loss = model(torch.randn(4, 2)).pow(2).mean()
        if torch.isnan(loss):  # the skip
            step += 1
            {leave}
        loss.backward()
        step += 1
        if step % 10 == 0:  # the count's test
            dist.barrier()


if __name__ == "__main__":
    main()
"""


def test_a_nan_skip_that_steps_the_count_is_one_finding_at_the_skip(tmp_path):
    code = NAN_SKIP.replace("{leave}", "continue")
    assert [line for line, _ in at(lint_one(tmp_path, code), "DDP809")] == [line_of(code, "# the skip")]


def test_its_twin_steps_the_count_without_skipping_and_the_count_is_told(tmp_path):
    code = NAN_SKIP.replace("{leave}", "pass")
    assert line_of(code, "# the count's test") in [line for line, _ in at(lint_one(tmp_path, code), "DDP809")]


# -------------------------------------------------- a save path named by this process's own W&B run
WANDB_PATH = """
import os
import torch, torch.distributed as dist
import wandb
from torch.nn.parallel import DistributedDataParallel as DDP

NUM_NODES = int(os.environ.get("SLURM_NNODES", 2))


class Trainer:
    def __init__(self):
        self.local_rank = int(os.environ["LOCAL_RANK"])
        run = wandb.init(project="deconv"{resume})
        self.run_id = run.id
        self.path = os.path.join("out", "model_" + str(self.run_id) + ".pt")
        self.model = DDP(torch.nn.Linear(2, 1))

    def train(self):
        for epoch in range(3):
            self.model(torch.randn(4, 2)).sum().backward()
            if self.local_rank == 0:
                torch.save(self.model.module.state_dict(), self.path)  # the save


def main():
    dist.init_process_group("gloo")
    Trainer().train()


if __name__ == "__main__":
    main()
"""


def test_a_path_named_by_each_processs_own_wandb_run_is_no_shared_file(tmp_path):
    assert at(lint_one(tmp_path, WANDB_PATH.replace("{resume}", "")), "DDP806") == []


def test_its_twin_resumes_one_run_id_in_every_process(tmp_path):
    # (`id=` names one run: every node's writer has the same path)
    code = WANDB_PATH.replace("{resume}", ", id=os.environ['RUN_ID'], resume='allow'")
    assert at(lint_one(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


# -------------------------------------------------- a training loader named for the dev split
DEV_LOADER = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset


def get_loaders():
    data = TensorDataset(torch.randn(64, 2), torch.randn(64, 1))
    loader_dev = DataLoader(data, batch_size=4, shuffle=True)  # the dev loader
    loader_test = DataLoader(data, batch_size=4)
    return loader_dev, loader_test


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(2, 1))
    loader_dev, loader_test = get_loaders()
    for epoch in range(3):
        for x, y in loader_dev:
            {step}
    with torch.no_grad():
        for x, y in loader_test:
            model(x)


if __name__ == "__main__":
    main()
"""


def test_a_loader_named_dev_that_a_backward_loop_reads_is_the_training_loader(tmp_path):
    code = DEV_LOADER.replace("{step}", "(model(x) - y).pow(2).mean().backward()")
    assert at(lint_one(tmp_path, code), "DDP802") == [(line_of(code, "# the dev loader"), "error")]


def test_its_twin_only_evaluates_on_the_dev_loader(tmp_path):
    code = DEV_LOADER.replace("{step}", "model(x)")
    assert at(lint_one(tmp_path, code), "DDP802") == []


# -------------------------------------------------- a trainer module a YAML config names
CONFIGURED = """
import importlib
import sys
import torch.distributed as dist
import yaml
from types import SimpleNamespace


def to_ns(d):
    return SimpleNamespace(**{k: to_ns(v) if isinstance(v, dict) else v for k, v in d.items()})


def main(path):
    cfg = to_ns(yaml.safe_load(open(path)))
    dist.init_process_group("gloo")
    module = importlib.import_module(cfg.TRAINER.FILE)
    trainer = getattr(module, cfg.TRAINER.NAME)(cfg)
    trainer.run()


if __name__ == "__main__":
    main(sys.argv[1])
"""
CONFIG = """
TRAINER:
  FILE: loop_trainer
  NAME: LoopTrainer
"""
LOOP_TRAINER = """
import torch.distributed as dist


class LoopTrainer:
    def __init__(self, cfg):
        self.cfg = cfg

    def run(self):
        {gate}
            dist.barrier()  # the barrier
"""


def test_a_trainer_module_named_by_a_yaml_config_is_read_and_judged(tmp_path):
    trainer = LOOP_TRAINER.replace("{gate}", "if dist.get_rank() == 0:")
    found = lint_tree(tmp_path, {"train.py": CONFIGURED, "configs/run.yaml": CONFIG, "loop_trainer.py": trainer})
    assert at(found, "DDP801") == [(line_of(trainer, "# the barrier"), "error")]


def test_its_twin_barriers_on_every_rank(tmp_path):
    trainer = LOOP_TRAINER.replace("{gate}", "if True:")
    found = lint_tree(tmp_path, {"train.py": CONFIGURED, "configs/run.yaml": CONFIG, "loop_trainer.py": trainer})
    assert at(found, "DDP801") == []


# -------------------------------------------------- a save a spawned rank reaches through train(*ops)
STARRED = """
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


class Saver:
    def save(self, state):
        {gate}
            torch.save(state, "checkpoint.pt")  # the save


def train(model, saver):
    for epoch in range(3):
        model(torch.randn(4, 2)).sum().backward()
        saver.save(model.state_dict())


def main_worker(gpu, ngpus):
    dist.init_process_group("gloo", rank=gpu, world_size=ngpus)
    ops = (DDP(torch.nn.Linear(2, 1)), Saver())
    train(*ops)


if __name__ == "__main__":
    mp.spawn(main_worker, nprocs=2, args=(2,))
"""


def test_a_save_a_spawned_rank_reaches_through_a_starred_call_is_the_ranks_own(tmp_path):
    code = STARRED.replace("{gate}", "if True:")
    assert at(lint_one(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


def test_its_twin_saves_on_rank_zero(tmp_path):
    code = STARRED.replace("{gate}", "if dist.get_rank() == 0:")
    assert at(lint_one(tmp_path, code), "DDP806") == []


# -------------------------------------------------- holdout 57's second wave (read after its unread score)
TOP_K = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self):
        self.rank = dist.get_rank()
        self.model = DDP(torch.nn.Linear(2, 1))
        self.top_k = []

    def save_checkpoint(self, path):
        if self.rank == 0:
            torch.save(self.model.state_dict(), path)
        dist.barrier()

    def train(self):
        for step in range(100):
            loss = self.model(torch.randn(4, 2)).sum()
            loss.backward()
            if len(self.top_k) == 3 and self.top_k[-1] < loss.item():  # the test
                pass
            else:
                {gate}
                    self.top_k.append(loss.item())
                self.save_checkpoint("ckpt.pt")


if __name__ == "__main__":
    dist.init_process_group("gloo")
    Trainer().train()
"""


def test_a_top_k_list_kept_on_rank_zero_that_decides_a_save_ending_in_a_barrier_is_ddp809(tmp_path):
    code = TOP_K.replace("{gate}", "if self.rank == 0:")
    assert at(lint_one(tmp_path, code), "DDP809") == [(line_of(code, "# the test"), "error")]


def test_its_twin_keeps_the_list_on_every_rank(tmp_path):
    code = TOP_K.replace("{gate}", "if True:")
    assert at(lint_one(tmp_path, code), "DDP809") == []


TURNS = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main(resume):
    dist.init_process_group("gloo")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    model = DDP(torch.nn.Linear(2, 1))
    start = 0
    if resume:
        for idx_rank in range({turns}):
            if rank == idx_rank:
                start = torch.load("ckpt.pt")["step"]
            dist.barrier()
    for step in range(100):
        if step <= start:  # the test
            continue
        model(torch.randn(4, 2)).sum().backward()
    ranks_seen = [0]
    for idx_rank in ranks_seen:
        print(idx_rank)


if __name__ == "__main__":
    main(True)
"""


def test_ranks_taking_turns_set_the_value_on_every_rank_whatever_a_later_loop_reuses_the_name_for(tmp_path):
    assert at(lint_one(tmp_path, TURNS.replace("{turns}", "world_size")), "DDP809") == []


def test_its_twin_sets_it_on_one_rank(tmp_path):
    code = TURNS.replace("{turns}", "1")
    assert [line for line, _ in at(lint_one(tmp_path, code), "DDP809")] == [line_of(code, "# the test")]


RANKED_DIR = """
import os
import torch, torch.distributed as dist


def main(args, rank, size):
    dist.init_process_group("gloo", rank=rank, world_size=size)
    args.save_dir = os.path.join(args.save_dir, {folder})
    policy = torch.nn.Linear(2, 1)
    for step in range(10):
        policy(torch.randn(4, 2)).sum().backward()
        save_path = os.path.join(args.save_dir, "ppo")
        torch.save(policy.state_dict(), os.path.join(save_path, "policy.pt"))  # the save


if __name__ == "__main__":
    import argparse, torch.multiprocessing as mp
    parser = argparse.ArgumentParser()
    parser.add_argument("--save-dir", default="runs")
    args = parser.parse_args()
    procs = [mp.Process(target=main, args=(args, r, 2)) for r in range(2)]
"""


def test_an_options_folder_rebound_with_the_rank_names_each_ranks_own_file(tmp_path):
    assert at(lint_one(tmp_path, RANKED_DIR.replace("{folder}", "f'member_{rank}'")), "DDP806") == []


def test_its_twin_rebinds_it_without_the_rank(tmp_path):
    code = RANKED_DIR.replace("{folder}", "'members'")
    assert at(lint_one(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


ENV_OPTION = """
import argparse, os
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def setup(args):
    rank = int(os.environ[args.env_rank])
    dist.init_process_group("gloo", rank=rank, world_size=int(os.environ[args.env_world_size]))


def main(args):
    local_rank = int(os.environ[args.env_rank])
    setup(args)
    net = DDP(torch.nn.Linear(2, 1))
    for epoch in range(3):
        net(torch.randn(4, 2)).sum().backward()
        if local_rank == 0:
            torch.save(net.state_dict(), "model/checkpoint.pth")  # the save


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--env_world_size", default="WORLD_SIZE")
    parser.add_argument("--env_rank", default="{variable}")
    main(parser.parse_args())
"""


def test_the_rank_read_from_an_environment_variable_an_option_names_is_the_rank(tmp_path):
    assert at(lint_one(tmp_path, ENV_OPTION.replace("{variable}", "LOCAL_RANK")), "DDP806") == []


def test_its_twin_names_a_variable_that_is_no_rank(tmp_path):
    code = ENV_OPTION.replace("{variable}", "JOB_COLOR")
    assert at(lint_one(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


MODULE_CRITERION = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, SubsetRandomSampler, TensorDataset


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(2, 1)

    def forward(self, x):
        return self.fc(x), x

    def criterion(self, out, y):
        return (out - y).pow(2).mean()


def train(loader, model):
    for x, y in loader:
        out, hidden = {forward}
        loss = model.module.criterion(out, y)
        loss.backward()


def main():
    dist.init_process_group("gloo")
    data = TensorDataset(torch.randn(64, 2), torch.randn(64, 1))
    loader = DataLoader(data, batch_size=4, sampler=SubsetRandomSampler(range(64)))  # the loader
    model = DDP(Net())
    for epoch in range(3):
        train(loader, model)


if __name__ == "__main__":
    main()
"""


def test_a_loss_computed_by_the_wrapped_module_from_a_ddp_forward_trains_the_ddp_model(tmp_path):
    code = MODULE_CRITERION.replace("{forward}", "model(x)")
    assert at(lint_one(tmp_path, code), "DDP802") == [(line_of(code, "# the loader"), "error")]


def test_its_twin_runs_the_forward_through_the_module_too(tmp_path):
    # (no DDP forward in the loss: the loop trains no DDP model)
    code = MODULE_CRITERION.replace("{forward}", "model.module(x)")
    assert at(lint_one(tmp_path, code), "DDP802") == []


INTERLEAVED = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(2, 1))
    train_data = TensorDataset(torch.randn(64, 2), torch.randn(64, 1))
    test_data = TensorDataset(torch.randn(16, 2), torch.randn(16, 1))
    train_loader = DataLoader(train_data, batch_size=4, sampler=DistributedSampler(train_data, shuffle=False))
    test_loader = DataLoader(test_data, batch_size=4, sampler=DistributedSampler(test_data))  # the test loader
    for epoch in range(3):
        train_enum = enumerate(train_loader, 0)
        test_enum = enumerate(test_loader, 0)
        done = -1
        for i, (x, y) in train_enum:
            model(x).sum().backward()
            while done < i and done + 1 < 4:
                done, (tx, ty) = next(test_enum)
                {use}


if __name__ == "__main__":
    main()
"""


def test_test_batches_read_between_training_steps_in_a_loop_of_their_own_are_evaluation(tmp_path):
    # (TRNet's shape: each test batch is scored, in its own `while`, as training goes on)
    code = INTERLEAVED.replace("{use}", "model.module(tx)")
    assert at(lint_one(tmp_path, code), "DDP804") == []


def test_its_twin_trains_on_the_batches_that_loop_reads(tmp_path):
    code = INTERLEAVED.replace("{use}", "model(tx).sum().backward()")
    assert at(lint_one(tmp_path, code), "DDP804") == [(line_of(code, "# the test loader"), "warning")]


SEEDED_WORKERS = """
import random
import numpy as np
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Features(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        x = torch.full((2,), float(i))
        {draw}
        return x, x.sum(0, keepdim=True)


def init_seeds(worker_id):
    random.seed(88)  # the seeding
    np.random.seed(88)


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(2, 1))
    data = Features()
    sampler = DistributedSampler(data, shuffle=False)
    loader = DataLoader(data, batch_size=4, sampler=sampler, num_workers=2, worker_init_fn=init_seeds)
    for x, y in loader:
        (model(x) - y).pow(2).mean().backward()


if __name__ == "__main__":
    main()
"""


def test_workers_seeded_alike_over_a_local_dataset_that_draws_nothing_draw_nothing_alike(tmp_path):
    code = SEEDED_WORKERS.replace("{draw}", "pass")
    assert at(lint_one(tmp_path, code), "DDP808") == []


def test_its_twin_draws_a_random_flip(tmp_path):
    code = SEEDED_WORKERS.replace("{draw}", "x = x.flip(0) if random.random() < 0.5 else x")
    assert at(lint_one(tmp_path, code), "DDP808") == [(line_of(code, "# the seeding"), "warning")]


UNCALLED = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(2, 1))
    data = TensorDataset(torch.randn(64, 2), torch.randn(64, 1))
    loader = DataLoader(data, batch_size=4, sampler=DistributedSampler(data))  # the loader
    for epoch in range(3):
        {set_epoch}
        for x, y in loader:
            (model(x) - y).pow(2).mean().backward()


if __name__ == "__main__":
    main()
"""


def test_set_epoch_named_without_its_parentheses_sets_nothing(tmp_path):
    code = UNCALLED.replace("{set_epoch}", "loader.sampler.set_epoch")
    found = at(lint_one(tmp_path, code), "DDP804")
    assert len(found) == 1 and found[0][1] == "warning"


def test_its_twin_calls_it(tmp_path):
    code = UNCALLED.replace("{set_epoch}", "loader.sampler.set_epoch(epoch)")
    assert at(lint_one(tmp_path, code), "DDP804") == []


OPTIONAL_SAVE = """
import argparse
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def main(rank, world, args):
    dist.init_process_group("gloo", rank=rank, world_size=world)
    model = FSDP(torch.nn.Linear(2, 1))
    model(torch.randn(4, 2)).sum().backward()
    if {switch}:
        dist.barrier()
        if rank == 0:
            torch.save(model.state_dict(), "model.pt")  # the gather


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--save-model", action="store_true")
    parser.add_argument("--mode", default="train")
    args = parser.parse_args()
    mp.spawn(main, args=(2, args), nprocs=2)
"""


def test_a_rank_zero_gather_behind_a_switch_the_user_turns_on_is_a_warning_that_names_it(tmp_path):
    code = OPTIONAL_SAVE.replace("{switch}", "args.save_model")
    found = [f for f in lint_one(tmp_path, code) if f.code == "DDP801"]
    assert [(f.location.line, f.severity.value) for f in found] == [(line_of(code, "# the gather"), "warning")]
    assert "args.save_model" in found[0].message


def test_its_twin_sits_on_a_side_of_a_choice_the_launch_does_not_make(tmp_path):
    # (`--mode` chooses among runs: one that is not launched is still not judged)
    assert at(lint_one(tmp_path, OPTIONAL_SAVE.replace("{switch}", "args.mode == 'export'")), "DDP801") == []


# -------------------------------------------------- holdout 57's third wave (read after its unread score)
FAILURE_DUMP = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Field(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(2, 1)

    def surface(self, t):
        try:
            return self.net(torch.randn(4, 2)).sum()
        except RuntimeError:
            torch.save(self.state_dict(), f"failed_{t}.pth")  # the dump
            {leave}


def main():
    dist.init_process_group("gloo")
    field = Field()
    model = DDP(field)
    for t in range(3):
        model(torch.randn(4, 2)).sum().backward()
        field.surface(t)


if __name__ == "__main__":
    main()
"""


def test_a_dump_in_an_except_that_raises_again_is_the_failing_ranks_own(tmp_path):
    assert at(lint_one(tmp_path, FAILURE_DUMP.replace("{leave}", "raise")), "DDP806") == []


def test_its_twin_swallows_the_error_and_goes_on(tmp_path):
    code = FAILURE_DUMP.replace("{leave}", "return None")
    assert at(lint_one(tmp_path, code), "DDP806") == [(line_of(code, "# the dump"), "warning")]


COUNTED_EXIT = """
import sys
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DDP(torch.nn.Linear(2, 1))
    best, bad = float("inf"), 0
    for epoch in range(100):
        loss = model(torch.randn(4, 2)).pow(2).mean()
        loss.backward()
        if rank == 0:
            if loss.item() < best:
                best, bad = loss.item(), 0
            else:
                bad = bad {step}
            if bad >= 5:  # the stop
                dist.destroy_process_group()
                sys.exit("stopped early")


if __name__ == "__main__":
    main()
"""


def test_an_early_stop_counted_with_the_step_spelt_out_is_an_error(tmp_path):
    code = COUNTED_EXIT.replace("{step}", "+ 1")
    assert at(lint_one(tmp_path, code), "DDP809") == [(line_of(code, "# the stop"), "error")]


def test_its_twin_sets_the_count_from_elsewhere_and_stays_an_assumption(tmp_path):
    code = COUNTED_EXIT.replace("{step}", "* 0 + int(loss.item() > 1)")
    assert at(lint_one(tmp_path, code), "DDP809") == [(line_of(code, "# the stop"), "warning")]


ENV_ROOT = """
import os, sys
sys.path.append(os.environ["PROJECT_ROOT"] + "/src")
from tasks import run


if __name__ == "__main__":
    run()
"""
TASKS = """
import torch, torch.distributed as dist


def run():
    dist.init_process_group("gloo")
    if dist.get_rank() == 0:
        dist.barrier()  # the barrier
"""


def test_a_folder_of_an_environment_named_root_is_read_under_the_project(tmp_path):
    found = lint_tree(tmp_path, {"bin/train.py": ENV_ROOT, "src/tasks.py": TASKS}, script="bin/train.py")
    assert [line for line, _ in at(found, "DDP801")] == [line_of(TASKS, "# the barrier")]


def test_its_twin_names_a_folder_the_project_does_not_have(tmp_path):
    found = lint_tree(tmp_path, {"bin/train.py": ENV_ROOT.replace("/src", "/lib"), "src/tasks.py": TASKS},
                      script="bin/train.py")
    assert at(found, "DDP801") == []


VOCAB_RANK = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Vocab:
    def __init__(self, path, rank=0):
        self.words = {"unk": 0}
        self.rank = rank
        {use}

    def size(self):
        return len(self.words)


class Lines(Dataset):
    def __init__(self, vocab):
        self.vocab = vocab

    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.tensor(i % self.vocab.size())


def main():
    dist.init_process_group("gloo")
    vocab = Vocab("words.txt", dist.get_rank())
    data = Lines(vocab)
    sampler = DistributedSampler(data)  # the sampler
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x in DataLoader(data, batch_size=4, sampler=sampler):
            pass


if __name__ == "__main__":
    main()
"""


def test_a_rank_an_object_keeps_only_to_ask_who_logs_is_no_shard(tmp_path):
    code = VOCAB_RANK.replace("{use}", "if self.rank == 0:\n            print(len(self.words))")
    assert at(lint_one(tmp_path, code), "DDP803") == []


def test_its_twin_keeps_only_its_ranks_words(tmp_path):
    code = VOCAB_RANK.replace("{use}", "self.words = {w: i for i, w in enumerate(open(path)) if i % 2 == self.rank}")
    assert at(lint_one(tmp_path, code), "DDP803") == [(line_of(code, "# the sampler"), "warning")]


HYDRA_AGENT = """
import os
import hydra
import torch
from torch.distributed import init_process_group


def _main(cfg):
    if torch.cuda.device_count() > 1:
        init_process_group(backend="gloo")
        cfg["gpu_id"] = int(os.environ["LOCAL_RANK"])
    else:
        cfg["gpu_id"] = 0
    cls = hydra.utils.get_class(cfg._target_)
    agent = cls(cfg)
    agent.run()


@hydra.main(version_base=None, config_path=os.path.join(os.getcwd(), "cfg/train"), config_name="agent.yaml")
def main(cfg):
    _main(cfg)


if __name__ == "__main__":
    main()
"""
AGENT = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


class Agent:
    def __init__(self, cfg):
        self.gpu_id = int(cfg.{field})
        self.model = DDP(torch.nn.Linear(2, 1))

    def run(self):
        for epoch in range(3):
            self.model(torch.randn(4, 2)).sum().backward()
            if self.gpu_id == 0:
                torch.save(self.model.state_dict(), "agent.pt")  # the save
"""


def test_a_hydra_target_built_by_get_class_from_a_config_under_the_working_directory_is_judged(tmp_path, monkeypatch):
    # (and `cfg["gpu_id"] = LOCAL_RANK` where the group is set up, read back as `cfg.gpu_id`: a rank)
    monkeypatch.chdir(tmp_path)
    found = lint_tree(tmp_path, {"scripts/run.py": HYDRA_AGENT, "agents/agent.py": AGENT.replace("{field}", "gpu_id"),
                                 "agents/__init__.py": "", "cfg/train/agent.yaml": "_target_: agents.agent.Agent\n"},
                      script="scripts/run.py")
    assert at(found, "DDP806") == []
    facts = gather(str(tmp_path / "scripts/run.py"))
    assert facts.config_named is None and facts.unreached_setup is None  # judged, not "incomplete"


def test_its_twin_reads_another_field_every_rank_holds_alike(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    agent = AGENT.replace("{field}", "device_id")
    found = lint_tree(tmp_path, {"scripts/run.py": HYDRA_AGENT.replace('cfg["gpu_id"] = 0', 'cfg["gpu_id"] = 0\n'
                                                                       '    cfg["device_id"] = 0'),
                                 "agents/agent.py": agent, "agents/__init__.py": "",
                                 "cfg/train/agent.yaml": "_target_: agents.agent.Agent\n"},
                      script="scripts/run.py")
    assert at(found, "DDP806") == [(line_of(agent, "# the save"), "warning")]


BEFORE_GROUP = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, RandomSampler, TensorDataset


def is_dist_initialized():
    return dist.is_initialized()


def make_loader(data):
    sampler = DistributedSampler(data) if is_dist_initialized() else RandomSampler(data)
    return DataLoader(data, batch_size=4, sampler=sampler)  # the loader


def main():
    data = TensorDataset(torch.randn(64, 2), torch.randn(64, 1))
    {first}
    {second}
    model = DDP(torch.nn.Linear(2, 1))
    for epoch in range(3):
        if isinstance(loader.sampler, DistributedSampler):
            loader.sampler.set_epoch(epoch)
        for x, y in loader:
            (model(x) - y).pow(2).mean().backward()


if __name__ == "__main__":
    main()
"""


def test_a_sampler_chosen_by_is_initialized_before_the_group_exists_is_the_plain_one(tmp_path):
    code = BEFORE_GROUP.replace("{first}", "loader = make_loader(data)").replace(
        "{second}", 'dist.init_process_group("gloo")')
    assert at(lint_one(tmp_path, code), "DDP802") == [(line_of(code, "# the loader"), "error")]


def test_its_twin_builds_the_loader_once_the_group_exists(tmp_path):
    code = BEFORE_GROUP.replace("{first}", 'dist.init_process_group("gloo")').replace(
        "{second}", "loader = make_loader(data)")
    assert at(lint_one(tmp_path, code), "DDP802") == []


UNDEFINED = """
import os
import torch
import torch.distributed as dist
{import_line}


def main():
    dist.init_process_group("gloo")
    model = torch.nn.Linear(2, 1)
    train_ddp(model, rank=int(os.environ["RANK"]))  # the call


if __name__ == "__main__":
    main()
"""
HELPERS = """
def train_ddp(model, rank):
    return model
"""


def test_a_script_that_calls_a_name_it_never_imports_is_not_judged_a_pass(tmp_path):
    code = UNDEFINED.replace("{import_line}", "")
    (tmp_path / "train.py").write_text(code.lstrip("\n"))
    facts = gather(str(tmp_path / "train.py"))
    assert facts.undefined_name == "train_ddp" and facts.undefined_call.line == line_of(code, "# the call")


def test_its_twin_imports_it(tmp_path):
    (tmp_path / "helpers.py").write_text(HELPERS)
    code = UNDEFINED.replace("{import_line}", "from helpers import train_ddp")
    (tmp_path / "train.py").write_text(code.lstrip("\n"))
    facts = gather(str(tmp_path / "train.py"))
    assert facts.undefined_call is None and facts.undefined_name == ""


BOUND_EVERY_WAY = """
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")

    def inner(x):
        return x

    from json import dumps
    make = lambda v: v
    for step in (inner, make):
        step(1)
    try:
        dumps({})
    except ValueError as err:
        print(err)
    inner(make(2))


if __name__ == "__main__":
    main()
"""


def test_names_bound_by_a_loop_a_nested_def_a_local_import_or_a_lambda_are_defined(tmp_path):
    (tmp_path / "train.py").write_text(BOUND_EVERY_WAY.lstrip("\n"))
    assert gather(str(tmp_path / "train.py")).undefined_call is None


def test_a_script_that_makes_its_names_at_run_time_is_not_said_to_call_an_undefined_one(tmp_path):
    # (`globals().update(...)`: the names no statement binds are there when it runs)
    code = UNDEFINED.replace("{import_line}", "import helpers\nglobals().update(vars(helpers))")
    (tmp_path / "helpers.py").write_text(HELPERS)
    (tmp_path / "train.py").write_text(code.lstrip("\n"))
    assert gather(str(tmp_path / "train.py")).undefined_call is None
