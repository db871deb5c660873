"""Shapes from session 48, each with its twin, in our own words: a worker_init_fn handed as a
bound method, the launcher's seeding reached through helpers on the torchrun path, and a DDP
model a method unpacks into `self.model` from a loading helper's tuple."""

from __future__ import annotations

from ddpdoctor.lint.driver import gather, unreached
from tests.unit.test_lint_round50_shapes import at, line_of
from tests.unit.test_lint_session39_shapes import lint_tree


def lint_one(tmp_path, code: str, **more: str):
    return lint_tree(tmp_path, {"train.py": code, **more})


# -------------------------------------------------- worker_init_fn=self.init_fn
METHOD_INIT = """
import numpy as np
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Clips(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.randn(2) * np.random.random(), torch.randn(1)


class Runner:
    def __init__(self, seed):
        self.seed = seed
        dist.init_process_group("gloo")
        self.model = DDP(torch.nn.Linear(2, 1))
        data = Clips()
        self.loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data), num_workers=4,
                                 worker_init_fn=self.init_fn)

    def init_fn(self, worker_id):
        np.random.seed({seed})  # the seeding

    def run(self):
        for epoch in range(3):
            self.loader.sampler.set_epoch(epoch)
            for x, y in self.loader:
                (self.model(x) - y).pow(2).mean().backward()


if __name__ == "__main__":
    Runner(7).run()
"""


def test_a_bound_method_worker_init_fn_seeding_alike_on_every_rank_is_ddp808(tmp_path):
    code = METHOD_INIT.replace("{seed}", "int(self.seed) + worker_id")
    assert at(lint_one(tmp_path, code), "DDP808") == [(line_of(code, "# the seeding"), "warning")]


def test_its_twin_puts_the_rank_in_the_method_s_seed(tmp_path):
    code = METHOD_INIT.replace("{seed}", "int(self.seed) + worker_id + 8 * dist.get_rank()")
    assert at(lint_one(tmp_path, code), "DDP808") == []


# -------------------------------------------------- the launcher seeds through helpers, then runs the worker itself
LAUNCHER = """
import argparse
import random
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


def init_seeds(seed=0):
    torch.manual_seed(seed)


def configure(args):
    init_seeds(20)
    return args


class Jittered(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.randn(2) * random.random(), torch.randn(1)


def worker(gpu, cfg):
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(2, 1))
    data = Jittered()
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data), num_workers=4)  # the loader
    for epoch in range(3):
        loader.sampler.set_epoch(epoch)
        for x, y in loader:
            (model(x) - y).pow(2).mean().backward()


def main(args):
    cfg = configure(args)
{launch}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--spawn", action="store_true")
    main(parser.parse_args())
"""


def test_the_launcher_s_seeding_through_helpers_on_the_torchrun_path_is_ddp808(tmp_path):
    code = LAUNCHER.replace("{launch}", "    if cfg.spawn:\n        mp.spawn(worker, nprocs=2, args=(cfg,))\n"
                                        "    else:\n        worker(0, cfg)")
    assert at(lint_one(tmp_path, code), "DDP808") == [(line_of(code, "# the loader"), "warning")]


def test_its_twin_only_spawns_so_each_rank_starts_from_its_own_seed(tmp_path):
    code = LAUNCHER.replace("{launch}", "    mp.spawn(worker, nprocs=2, args=(cfg,))")
    assert at(lint_one(tmp_path, code), "DDP808") == []


# -------------------------------------------------- self.model, self.optimizer = self.loading()
UNPACKED = """
import os
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def is_main_process():
    return "WORLD_SIZE" not in os.environ or os.environ["LOCAL_RANK"] == "0"


def evaluate(model, batches):
    model.eval()
    with torch.no_grad():
        for x in batches:
            model(x)  # the forward


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))

    def forward(self, x):
        return self.body(x)


class Processor:
    def __init__(self, devices):
        self.devices = devices
        self.model, self.optimizer = self.loading()

    def loading(self):
        model = Net()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        return self.to_device(model), optimizer

    def to_device(self, model):
        if len(self.devices) > 1:
            model = DDP(nn.SyncBatchNorm.convert_sync_batchnorm(model))
        return model

    def start(self):
        batches = [torch.randn(8, 4) for _ in range(4)]
        for epoch in range(3):
            for x in batches:
                self.model(x).sum().backward()
                self.optimizer.step()
            if is_main_process():
                evaluate({evaluated}, batches)


if __name__ == "__main__":
    dist.init_process_group("gloo")
    Processor([0, 1]).start()
"""


def test_a_ddp_model_unpacked_into_self_from_a_loading_helper_is_seen_in_a_rank_0_evaluation(tmp_path):
    code = UNPACKED.replace("{evaluated}", "self.model")
    assert at(lint_one(tmp_path, code), "DDP801") == [(line_of(code, "# the forward"), "warning")]


def test_its_twin_evaluates_the_plain_module(tmp_path):
    code = UNPACKED.replace("{evaluated}", "self.model.module")
    assert at(lint_one(tmp_path, code), "DDP801") == []


# -------------------------------------------------- a check that each process has a GPU is no rank role
DEVICE_CHECK = """
import os
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def setup(local_rank):
    available = torch.cuda.device_count()
    if {test}:
        return False  # one-process mode
    dist.init_process_group("gloo")
    dist.barrier()  # the barrier
    return True


def main():
    setup(int(os.environ["LOCAL_RANK"]))
    model = DDP(torch.nn.Linear(2, 1))
    for step in range(3):
        model(torch.randn(4, 2)).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_local_rank_checked_against_the_device_count_is_not_a_rank_branch(tmp_path):
    code = DEVICE_CHECK.replace("{test}", "local_rank >= available")
    assert at(lint_one(tmp_path, code), "DDP801") == []


def test_its_twin_returns_on_the_nonzero_ranks_before_the_barrier(tmp_path):
    code = DEVICE_CHECK.replace("{test}", "local_rank != 0")
    assert at(lint_one(tmp_path, code), "DDP801") == [(line_of(code, "# the barrier"), "error")]


# -------------------------------------------------- a rank-0 early stop behind a store_true switch
SWITCHED_STOP = """
import argparse
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Stopper:
    def __init__(self, patience):
        self.patience, self.counter, self.early_stop, self.best = patience, 0, False, None

    def __call__(self, loss):
        if self.best is None or loss < self.best:
            self.best, self.counter = loss, 0
        else:
            self.counter += 1
            if self.counter >= self.patience:
                self.early_stop = True


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--early_stopping", action="store_true")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(2, 1))
    stopper = Stopper(3)
    for epoch in range(10):
        loss = model(torch.randn(4, 2)).sum()
        loss.backward()
        if dist.get_rank() == 0:
            {stop}


if __name__ == "__main__":
    main()
"""


def test_a_rank_0_early_stop_behind_a_store_true_switch_is_a_warning_naming_it(tmp_path):
    code = SWITCHED_STOP.replace("{stop}", "if args.early_stopping:\n                stopper(loss.item())\n"
                                           "                if stopper.early_stop:  # the stop\n                    break")
    found = [f for f in lint_one(tmp_path, code) if f.code == "DDP809"]
    assert [(f.location.line, f.severity.value) for f in found] == [(line_of(code, "# the stop"), "warning")]
    assert "`args.early_stopping` is set" in found[0].message


def test_its_twin_stops_unconditionally_and_is_an_error(tmp_path):
    code = SWITCHED_STOP.replace("{stop}", "stopper(loss.item())\n"
                                           "            if stopper.early_stop:  # the stop\n                break")
    assert at(lint_one(tmp_path, code), "DDP809") == [(line_of(code, "# the stop"), "error")]


# -------------------------------------------------- model.forward(x) on the DDP wrapper
EXPLICIT_FORWARD = """
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def evaluate(model, batches):
    with torch.no_grad():
        for x in batches:
            {call}  # the forward


def main():
    dist.init_process_group("gloo")
    model = DDP(nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4)))
    batches = [torch.randn(8, 4) for _ in range(3)]
    for epoch in range(3):
        for x in batches:
            model(x).sum().backward()
        if dist.get_rank() == 0:
            evaluate(model, batches)


if __name__ == "__main__":
    main()
"""


def test_an_explicit_forward_call_on_the_ddp_wrapper_is_its_forward(tmp_path):
    code = EXPLICIT_FORWARD.replace("{call}", "model.forward(x)")
    assert at(lint_one(tmp_path, code), "DDP801") == [(line_of(code, "# the forward"), "warning")]


def test_its_twin_calls_the_plain_module_s_forward(tmp_path):
    code = EXPLICIT_FORWARD.replace("{call}", "model.module.forward(x)")
    assert at(lint_one(tmp_path, code), "DDP801") == []


# -------------------------------------------------- a helper that always exits ends what follows it
EXITING_HELPER = """
import sys
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def backup(model):
    torch.save(model.module.state_dict(), "backup.pt")
    {end}


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(2, 1))
    try:
        for step in range(3):
            model(torch.randn(4, 2)).sum().backward()
    except RuntimeError:
        if dist.get_rank() == 0:
            backup(model)
            dist.barrier()  # the barrier
        sys.exit(1)


if __name__ == "__main__":
    main()
"""


def test_a_barrier_after_a_helper_that_always_exits_never_runs(tmp_path):
    code = EXITING_HELPER.replace("{end}", "sys.exit(1)")
    assert at(lint_one(tmp_path, code), "DDP801") == []


def test_its_twin_s_helper_returns_so_rank_0_reaches_the_barrier_alone(tmp_path):
    code = EXITING_HELPER.replace("{end}", "print('saved')")
    assert at(lint_one(tmp_path, code), "DDP801") == [(line_of(code, "# the barrier"), "error")]


# -------------------------------------------------- set_epoch on a parameter the training loader is handed to
HANDED_LOADER = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class Trainer:
    def __init__(self, model, train_loader):
        self.model, self.train_loader = model, train_loader

    def train_epoch(self, loader, epoch):
        {set_epoch}
        for x, y in loader:
            (self.model(x) - y).pow(2).mean().backward()

    def train(self, epochs):
        for epoch in range(epochs):
            self.train_epoch(self.train_loader, epoch)


def main():
    dist.init_process_group("gloo")
    data = TensorDataset(torch.randn(64, 2), torch.randn(64, 1))
    loader = DataLoader(data, batch_size=8)  # a loader of that name, for the statistics
    print(sum(len(x) for x, _ in loader))
    train_sampler = DistributedSampler(data, shuffle=True)  # the sampler
    train_loader = DataLoader(data, batch_size=8, sampler=train_sampler)
    Trainer(DDP(torch.nn.Linear(2, 1)), train_loader).train(3)


if __name__ == "__main__":
    main()
"""


def test_set_epoch_on_the_parameter_the_training_loader_is_handed_to_sets_it(tmp_path):
    code = HANDED_LOADER.replace("{set_epoch}", "loader.sampler.set_epoch(epoch)")
    assert at(lint_one(tmp_path, code), "DDP804") == []


def test_its_twin_never_sets_the_epoch(tmp_path):
    code = HANDED_LOADER.replace("{set_epoch}", "pass")
    assert at(lint_one(tmp_path, code), "DDP804") == [(line_of(code, "# the sampler"), "warning")]


# -------------------------------------------------- a shuffled loader no backward reads, beside the training one
ANALYSIS_LOADER = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def train(model, loader):
    for x, y in loader:
        (model(x) - y).pow(2).mean().backward()


def analysis(model, loader):
    model.eval()
    total = 0.0
    for x, y in loader:
        total += float((model(x) - y).pow(2).sum())
    model.train()
    return total


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(2, 1))
    data = TensorDataset(torch.randn(64, 2), torch.randn(64, 1))
    first_sampler = DistributedSampler(data)
    train_loader = DataLoader(data, batch_size=8, sampler=first_sampler)
    {second}_sampler = DistributedSampler(data)  # the second
    {second} = DataLoader(data, batch_size=8, sampler={second}_sampler)
    for epoch in range(5):
        first_sampler.set_epoch(epoch)
        train(model, train_loader)
        if epoch % 2 == 0:
            {use}


if __name__ == "__main__":
    main()
"""


def test_a_shuffled_loader_only_an_analysis_pass_reads_needs_no_set_epoch(tmp_path):
    code = ANALYSIS_LOADER.replace("{second}", "analysis_loader").replace("{use}", "analysis(model, analysis_loader)")
    assert at(lint_one(tmp_path, code), "DDP804") == []


def test_its_twin_trains_on_the_second_loader_too(tmp_path):
    code = ANALYSIS_LOADER.replace("{second}", "extra_loader").replace("{use}", "train(model, extra_loader)")
    assert at(lint_one(tmp_path, code), "DDP804") == [(line_of(code, "# the second"), "warning")]


# -------------------------------------------------- `elif get_world_size() == 1:` is the one-process side
WORLD_OF_ONE = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def get_world_size():
    return dist.get_world_size() if dist.is_initialized() else 1


def get_rank():
    return dist.get_rank() if dist.is_initialized() else 0


def save(model, path):
    if get_world_size() > 1 and get_rank() == 0:
        torch.save(model.module.state_dict(), path)
    elif {other}:
        torch.save(model.state_dict(), path)  # the other save


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(2, 2))
    for epoch in range(2):
        model(torch.randn(3, 2)).sum().backward()
        save(model, "ckpt.pt")


if __name__ == "__main__":
    main()
"""


def test_a_save_on_the_world_of_one_side_runs_in_one_process(tmp_path):
    code = WORLD_OF_ONE.replace("{other}", "get_world_size() == 1")
    assert at(lint_one(tmp_path, code), "DDP806") == []


def test_its_twin_saves_on_every_rank_past_the_first(tmp_path):
    code = WORLD_OF_ONE.replace("{other}", "get_world_size() > 1")
    assert at(lint_one(tmp_path, code), "DDP806") == [(line_of(code, "# the other save"), "warning")]


# -------------------------------------------------- one loader builder for both splits, bound as train_loader
SHARED_BUILDER = """
import random
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Jittered(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.randn(2) * random.random(), torch.randn(1)


def build_dataloader(dataset, **kwargs):
    if dist.is_initialized():
        sampler = DistributedSampler(dataset, shuffle=kwargs.get("shuffle", False))
        sampler.set_epoch(1)
        kwargs["sampler"] = sampler
        kwargs["shuffle"] = False
    loader = DataLoader(dataset, **kwargs)  # the loader
    return loader


def main():
    torch.manual_seed({seed})
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(2, 1))
    train_loader = build_dataloader(Jittered(), batch_size=8, shuffle=True, num_workers=4)
    val_loader = build_dataloader(Jittered(), batch_size=8, num_workers=4)
    Runner(model, {"train": train_loader, "val": val_loader}).run()


class Runner:
    def __init__(self, model, loaders):
        self.model, self.loaders = model, loaders

    def run(self):
        for epoch in range(3):
            for x, y in self.loaders["train"]:
                (self.model(x) - y).pow(2).mean().backward()


if __name__ == "__main__":
    main()
"""


def test_a_shared_builder_s_loader_bound_as_the_training_loader_is_judged_for_worker_seeds(tmp_path):
    code = SHARED_BUILDER.replace("{seed}", "1")
    assert at(lint_one(tmp_path, code), "DDP808") == [(line_of(code, "# the loader"), "warning")]


def test_its_twin_seeds_each_rank_apart(tmp_path):
    code = SHARED_BUILDER.replace("{seed}", "1 + dist.get_rank()").replace(
        '    torch.manual_seed(1 + dist.get_rank())\n    dist.init_process_group("gloo")\n',
        '    dist.init_process_group("gloo")\n    torch.manual_seed(1 + dist.get_rank())\n')
    assert at(lint_one(tmp_path, code), "DDP808") == []


# -------------------------------------------------- rank-0 exits counted to their bound are errors
COUNTED = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main(total_steps=30):
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(2, 1))
    batches = [torch.randn(4, 2) for _ in range(3)]
    {loop}


if __name__ == "__main__":
    main()
"""

STEPS = """step = 0
    while True:
        for x in batches:
            model(x).sum().backward()
            step += 1
        if step > total_steps and dist.get_rank() == 0:  # the exit
            exit()"""

GAP = """best, best_epoch = None, 0
    for epoch in range(100):
        for x in batches:
            model(x).sum().backward()
        if dist.get_rank() == 0:
            score = float(model(batches[0]).sum())
            if best is None or score < best:
                best, best_epoch = score, epoch
                best_epoch = epoch
            if epoch - best_epoch > {patience}:  # the exit
                break"""


def test_a_rank_0_exit_at_a_step_count_the_batch_loop_steps_up_is_an_error(tmp_path):
    code = COUNTED.replace("{loop}", STEPS)
    assert at(lint_one(tmp_path, code), "DDP809") == [(line_of(code, "# the exit"), "error")]


def test_its_twin_exits_on_every_rank(tmp_path):
    code = COUNTED.replace("{loop}", STEPS.replace(" and dist.get_rank() == 0", ""))
    assert at(lint_one(tmp_path, code), "DDP809") == []


def test_a_rank_0_early_stop_written_as_a_gap_since_the_best_epoch_is_an_error(tmp_path):
    code = COUNTED.replace("{loop}", GAP.replace("{patience}", "5"))
    assert at(lint_one(tmp_path, code), "DDP809") == [(line_of(code, "# the exit"), "error")]


def test_its_twin_compares_a_gap_the_loop_never_resets_and_stays_a_warning(tmp_path):
    code = COUNTED.replace("{loop}", GAP.replace("{patience}", "5").replace(
        "                best_epoch = epoch\n", "").replace("best, best_epoch = score, epoch", "best = score"))
    assert at(lint_one(tmp_path, code), "DDP809") == [(line_of(code, "# the exit"), "warning")]


# -------------------------------------------------- two trainers, each with its own `train_loader`
TWO_TRAINERS = {
    "pretrain.py": """
import torch
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def run(model):
    data = TensorDataset(torch.randn(64, 2), torch.randn(64, 1))
    sampler = DistributedSampler(data)
    train_loader = DataLoader(data, batch_size=8, sampler=sampler)
    for epoch in range(3):
        train_loader.sampler.set_epoch(epoch)
        for x, y in train_loader:
            (model(x) - y).pow(2).mean().backward()
""",
    "finetune.py": """
import torch
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def run(model):
    data = TensorDataset(torch.randn(64, 2), torch.randn(64, 1))
    sampler = DistributedSampler(data)  # the sampler
    train_loader = DataLoader(data, batch_size=8, sampler=sampler)
    for epoch in range(3):
        {set_epoch}
        for x, y in train_loader:
            (model(x) - y).pow(2).mean().backward()
""",
}
TWO_TRAINERS_MAIN = """
import sys
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
import pretrain
import finetune

if __name__ == "__main__":
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(2, 1))
    if sys.argv[1] == "pretrain":
        pretrain.run(model)
    else:
        finetune.run(model)
"""


def test_a_set_epoch_in_another_trainer_on_a_loader_of_the_same_name_sets_nothing_here(tmp_path):
    more = dict(TWO_TRAINERS, **{"finetune.py": TWO_TRAINERS["finetune.py"].replace("{set_epoch}", "pass")})
    found = lint_tree(tmp_path, {"train.py": TWO_TRAINERS_MAIN, **more})
    assert sorted((f.location.file.rpartition("/")[2], f.location.line) for f in found if f.code == "DDP804") == [
        ("finetune.py", line_of(more["finetune.py"], "# the sampler"))]


def test_its_twin_sets_the_epoch_in_both_trainers(tmp_path):
    more = dict(TWO_TRAINERS, **{"finetune.py": TWO_TRAINERS["finetune.py"].replace(
        "{set_epoch}", "train_loader.sampler.set_epoch(epoch)")})
    found = lint_tree(tmp_path, {"train.py": TWO_TRAINERS_MAIN, **more})
    assert [f for f in found if f.code == "DDP804"] == []


# -------------------------------------------------- FSDP.summon_full_params on rank 0 only
SUMMON = """
import torch, torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


class Monitor:
    def __init__(self, model, rank):
        self.model, self.enabled = model, {enabled}

    def log(self):
        if not self.enabled:
            return
        with FSDP.summon_full_params(self.model, writeback=False, rank0_only=True):  # the gather
            print(sum(p.norm() for p in self.model.parameters()))


def main():
    dist.init_process_group("gloo")
    model = FSDP(torch.nn.Linear(4, 4))
    monitor = Monitor(model, dist.get_rank())
    for step in range(3):
        model(torch.randn(2, 4)).sum().backward()
        monitor.log()


if __name__ == "__main__":
    main()
"""


def test_summon_full_params_on_rank_0_alone_is_ddp801(tmp_path):
    code = SUMMON.replace("{enabled}", "rank == 0")
    assert at(lint_one(tmp_path, code), "DDP801") == [(line_of(code, "# the gather"), "error")]


def test_its_twin_gathers_on_every_rank(tmp_path):
    code = SUMMON.replace("{enabled}", "True")
    assert at(lint_one(tmp_path, code), "DDP801") == []


# -------------------------------------------------- mp.spawn(pkg.sub.train) after `import pkg.sub`
PACKAGE_RUNNER = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train(rank, world):
    dist.init_process_group("gloo", rank=rank, world_size=world)
    model = DDP(torch.nn.Linear(2, 2))
    for step in range(3):
        model(torch.randn(4, 2)).sum().backward()
    if rank == 0:
        {end}
"""
PACKAGE_MAIN = """
import torch.multiprocessing as mp
import runners.ddp_runner


if __name__ == "__main__":
    mp.spawn(runners.ddp_runner.train, args=(2,), nprocs=2)
"""


def _package(tmp_path, end: str):
    return lint_tree(tmp_path, {"train.py": PACKAGE_MAIN, "runners/__init__.py": "from runners.other import *\\n",
                                "runners/other.py": "def helper():\\n    return 1\\n",
                                "runners/ddp_runner.py": PACKAGE_RUNNER.replace("{end}", end)})


def test_a_spawn_target_named_through_its_package_is_read(tmp_path):
    found = _package(tmp_path, "dist.barrier()  # the barrier")
    assert [(f.code, f.location.file.rpartition("/")[2], f.severity.value) for f in found if f.code == "DDP801"] == [
        ("DDP801", "ddp_runner.py", "error")]


def test_its_twin_ends_without_the_one_sided_barrier_and_is_judged_clean_not_incomplete(tmp_path):
    found = _package(tmp_path, "print('done')")
    assert [f for f in found if f.code.startswith("DDP8")] == []
    assert unreached(gather(str(tmp_path / "train.py"))) == ([], [])  # judged: not INCOMPLETE (exit 4)


# -------------------------------------------------- a stop field broadcast from rank 0 through a list
BROADCAST_FIELD = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self):
        dist.init_process_group("gloo")
        self.rank0 = dist.get_rank() == 0
        self.model = DDP(torch.nn.Linear(2, 1))
        self.stop, self.best, self.bad = False, None, 0

    def validate(self):
        score = float(self.model.module(torch.randn(4, 2)).sum())
        if self.best is None or score < self.best:
            self.best, self.bad = score, 0
        else:
            self.bad += 1
        self.stop = self.bad > 3

    def train(self):
        for epoch in range(50):
            self.model(torch.randn(4, 2)).sum().backward()
            if self.rank0:
                self.validate()
{share}
            if self.stop:  # the test
                break


if __name__ == "__main__":
    Trainer().train()
"""
SHARE = """            box = [self.stop if self.rank0 else None]
            dist.broadcast_object_list(box, 0)
            if not self.rank0:
                self.stop = box[0]"""


def test_a_stop_field_broadcast_from_rank_0_through_a_list_is_every_rank_s(tmp_path):
    code = BROADCAST_FIELD.replace("{share}", SHARE)
    assert at(lint_one(tmp_path, code), "DDP809") == []


def test_its_twin_never_shares_the_field(tmp_path):
    code = BROADCAST_FIELD.replace("{share}", "            pass")
    assert [line for line, _ in at(lint_one(tmp_path, code), "DDP809")] == [line_of(code, "# the test")]


# -------------------------------------------------- a count stepped alike on both sides of a value test
BOTH_SIDES = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main(total=100, every=10):
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(2, 1))
    step = 0
    while True:
        loss = model(torch.randn(4, 2)).sum()
        if loss.item() != 0.0:
            loss.backward()
            step += 1
        else:
            {other}
        if step % every == 0:  # the test
            dist.barrier()
        if step >= total:
            break


if __name__ == "__main__":
    main()
"""


def test_a_count_stepped_on_both_sides_of_a_value_test_is_not_the_value_s(tmp_path):
    code = BOTH_SIDES.replace("{other}", "step += 1")
    found = [f for f in lint_one(tmp_path, code) if f.code == "DDP809" and "`step" in f.message]
    assert found == []


def test_its_twin_steps_the_count_on_one_side_only(tmp_path):
    code = BOTH_SIDES.replace("{other}", "pass")
    found = [f for f in lint_one(tmp_path, code) if f.code == "DDP809" and "`step" in f.message]
    assert found != []


# -------------------------------------------------- an options field set to the rank, read through the trainer
OPTIONS_FIELD = """
import argparse
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, opt):
        self.opt = opt
        self.opt.is_master = self.opt.gpu == 0
        self.model = DDP(torch.nn.Linear(2, 2))

    def save(self):
        torch.save(self.model.module.state_dict(), "model.pth")  # the save

    def train(self):
        for epoch in range(3):
            self.model(torch.randn(4, 2)).sum().backward()
            if self.opt.is_master:
                self.save()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=0)
    parser.add_argument("--distributed", action="store_true")
    opts = parser.parse_args()
    if opts.distributed:
        dist.init_process_group("gloo", rank=opts.local_rank, world_size=2)
        opts.gpu = {gpu}
    else:
        opts.gpu = 0
    Trainer(opts).train()
"""


def test_an_options_field_set_to_the_rank_is_a_rank_test_where_the_trainer_reads_it(tmp_path):
    code = OPTIONS_FIELD.replace("{gpu}", "opts.local_rank")
    assert at(lint_one(tmp_path, code), "DDP806") == []


def test_its_twin_sets_the_field_to_a_device_every_rank_shares(tmp_path):
    code = OPTIONS_FIELD.replace("{gpu}", "0")
    assert at(lint_one(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]
