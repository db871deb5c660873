"""Shapes from session 49 (holdout 59), each with its twin, in our own words: a pipeline stage's
micro-batch count received from the stage before, no_sync behind `isinstance(model, DDP)`, a
resumed step read before the loop's item-valued record, a rank test on `device.index`, a metric
moved with `.to(device)`, accumulation periods every config sets to 1, an elif the rank test's
other part rules out, a trainer picked by an option's prefix, a seed drawn where the option gives
none, a progress bar's kind as the rank test, the job's GPU count, and per-sample paths handed
down through helpers."""

from __future__ import annotations

from tests.unit.test_lint_round50_shapes import at, line_of
from tests.unit.test_lint_session39_shapes import lint_tree


def lint_one(tmp_path, code: str, **more: str):
    return lint_tree(tmp_path, {"train.py": code, **more})


# -------------------------------------------------- a count received from the stage before
PIPELINE = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def stage_step(model, batches, rank):
    count = torch.zeros(1, dtype=torch.long)
    if rank == 0:
        n = len(batches)
    else:
        {other}
    for i in range(n):  # the decision
        model(torch.randn(2, 4)).sum().backward()


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    for _ in range(3):
        stage_step(model, [1, 2], dist.get_rank())


main()
"""


def test_a_count_the_other_ranks_receive_from_rank_0_decides_nothing_rank_local(tmp_path):
    code = PIPELINE.replace("{other}", "dist.recv(count, src=0)\n        n = int(count.item())")
    assert at(lint_one(tmp_path, code), "DDP809") == []


def test_its_twin_gives_the_other_ranks_a_count_of_their_own(tmp_path):
    code = PIPELINE.replace("{other}", "n = 1")
    assert at(lint_one(tmp_path, code), "DDP809") == [(line_of(code, "# the decision"), "error")]


# -------------------------------------------------- no_sync behind isinstance(model, DDP)
NO_SYNC_KIND = """
from contextlib import nullcontext
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    accum = 4
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for step, (x, y) in enumerate(loader):
            boundary = (step + 1) % accum == 0
            ctx = model.no_sync() if (not boundary and isinstance(model, {kind})) else nullcontext()
            with ctx:
                loss = (model(x) - y).pow(2).mean() / accum
            loss.backward()  # the backward
            if boundary:
                opt.step()
                opt.zero_grad()


main()
"""


def test_no_sync_behind_isinstance_of_ddp_covers_the_ddp_model(tmp_path):
    assert at(lint_one(tmp_path, NO_SYNC_KIND.replace("{kind}", "DDP")), "DDP805") == []


def test_its_twin_uses_no_sync_only_for_an_fsdp_model(tmp_path):
    code = NO_SYNC_KIND.replace("{kind}", "FSDP")
    assert at(lint_one(tmp_path, code), "DDP805") == [(line_of(code, "# the backward"), "warning")]


# -------------------------------------------------- a resumed step read before the loop's record
RESUMED = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    state = torch.load("state.pt")
    {before}
    while True:
        loss = model(torch.randn(2, 4)).sum()
        loss.backward()
        state = dict(step=step, loss=loss.item())
        {inside}
        if step >= 100:  # the decision
            break
        step += 1


main()
"""


def test_a_step_resumed_before_the_loop_is_not_the_loss_recorded_in_it(tmp_path):
    code = RESUMED.replace("{before}", 'step = state.pop("step")').replace("{inside}", "pass")
    assert at(lint_one(tmp_path, code), "DDP809") == []


def test_its_twin_reads_the_step_back_from_the_record_after_it(tmp_path):
    code = RESUMED.replace("{before}", 'step = state.pop("step")').replace("{inside}", 'step = state["loss"]')
    assert at(lint_one(tmp_path, code), "DDP809") == [(line_of(code, "# the decision"), "warning")]


# -------------------------------------------------- device.index as the rank test
DEVICE_INDEX = """
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def train(model, device):
    for epoch in range(3):
        model(torch.randn(2, 4)).sum().backward()
        if device.index == 0:
            torch.save(model.state_dict(), "best.pt")  # the save


def run(rank, world):
    dist.init_process_group("gloo", rank=rank, world_size=world)
    device = torch.device("cuda", {index})
    model = DDP(torch.nn.Linear(4, 1))
    train(model, device=device)


if __name__ == "__main__":
    mp.spawn(run, args=(2,), nprocs=2)
"""


def test_device_index_of_a_device_made_for_the_rank_is_a_rank_test(tmp_path):
    assert at(lint_one(tmp_path, DEVICE_INDEX.replace("{index}", "rank")), "DDP806") == []


def test_its_twin_makes_every_rank_s_device_index_0(tmp_path):
    code = DEVICE_INDEX.replace("{index}", "0")
    assert at(lint_one(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


# -------------------------------------------------- a torchmetrics metric moved with .to(device)
METRIC = """
import torch, torch.distributed as dist, torchmetrics
from torch.nn.parallel import DistributedDataParallel as DDP


def evaluate(device):
    metric = torchmetrics.Accuracy(task="multiclass", num_classes=3).to(device)
    metric.update(torch.tensor([0, 1]), torch.tensor([0, 2]))
    return metric.compute()  # the compute


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(3):
        model(torch.randn(2, 4)).sum().backward()
        {guard}
            print(evaluate("cpu"))


main()
"""


def test_compute_of_a_metric_moved_to_the_device_on_rank_0_alone_is_ddp801(tmp_path):
    code = METRIC.replace("{guard}", "if dist.get_rank() == 0:")
    assert at(lint_one(tmp_path, code), "DDP801") == [(line_of(code, "# the compute"), "error")]


def test_its_twin_computes_the_metric_on_every_rank(tmp_path):
    assert at(lint_one(tmp_path, METRIC.replace("{guard}", "if True:")), "DDP801") == []


# -------------------------------------------------- a loader wrapped in list(...)
LISTED = """
import random
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


def same_seed(worker_id):
    random.seed(1)
    torch.manual_seed(1)


class Frames(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return {item}


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    data = Frames()
    sampler = DistributedSampler(data)
    batches = list(DataLoader(data, batch_size=8, sampler=sampler, num_workers=2, worker_init_fn=same_seed))
    for epoch in range(3):
        for x in batches:
            model(x).sum().backward()


main()
"""


def test_a_listed_loader_whose_dataset_draws_nothing_is_no_ddp808(tmp_path):
    assert at(lint_one(tmp_path, LISTED.replace("{item}", "torch.ones(4) * i")), "DDP808") == []


def test_its_twin_s_dataset_draws_a_random_crop(tmp_path):
    code = LISTED.replace("{item}", "torch.ones(4) * random.random()")
    assert [s for _, s in at(lint_one(tmp_path, code), "DDP808")] == ["warning"]


# -------------------------------------------------- accumulation every config sets to 1
CONFIG_ACCUM = """
import torch, torch.distributed as dist, yaml
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, cfg):
        self.cfg = cfg
        self.model = DDP(torch.nn.Linear(4, 1))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def fit(self):
        for step in range(100):
            for _ in range(self.cfg.grad_accum):
                self.model(torch.randn(2, 4)).sum().backward()  # the backward
            self.opt.step()
            self.opt.zero_grad()


def main():
    dist.init_process_group("gloo")
    cfg = yaml.safe_load(open("configs/run.yaml"))
    Trainer(type("C", (), cfg)).fit()


main()
"""


def test_a_micro_step_loop_every_config_runs_once_accumulates_nothing(tmp_path):
    found = lint_tree(tmp_path, {"train.py": CONFIG_ACCUM, "configs/run.yaml": "lr: 0.1\ngrad_accum: 1\n"})
    assert at(found, "DDP805") == []


def test_its_twin_s_config_accumulates_four(tmp_path):
    found = lint_tree(tmp_path, {"train.py": CONFIG_ACCUM, "configs/run.yaml": "lr: 0.1\ngrad_accum: 4\n"})
    assert at(found, "DDP805") == [(line_of(CONFIG_ACCUM, "# the backward"), "warning")]


CONFIG_PERIOD = """
import torch, torch.distributed as dist, yaml
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    cfg = load(open("configs/exp.yaml"))
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i in range(100):
        model(torch.randn(2, 4)).sum().backward()  # the backward
        if i % cfg.optimizer.step == 0:
            opt.step()
            opt.zero_grad()


main()
"""


def test_a_step_every_config_takes_each_pass_accumulates_nothing(tmp_path):
    found = lint_tree(tmp_path, {"train.py": CONFIG_PERIOD, "configs/exp.yaml": "optimizer:\n  lr: 0.1\n  step: 1\n"})
    assert at(found, "DDP805") == []


def test_its_twin_s_config_steps_every_second_pass(tmp_path):
    found = lint_tree(tmp_path, {"train.py": CONFIG_PERIOD, "configs/exp.yaml": "optimizer:\n  lr: 0.1\n  step: 2\n"})
    assert at(found, "DDP805") == [(line_of(CONFIG_PERIOD, "# the backward"), "warning")]


# -------------------------------------------------- an elif the rank test's other part rules out
ELIF = """
import argparse
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def main(gpu, cfg):
    dist.init_process_group("gloo")
    if gpu == 0 and not cfg.mode == "valid":
        print("writer")
    {other}
        cfg = torch.load("config.pt")
    model = DDP(torch.nn.Linear(4, 1))
    if cfg.mode == "valid":  # the decision
        model(torch.randn(2, 4)).sum().backward()


if __name__ == "__main__":
    mp.spawn(main, args=(argparse.Namespace(mode="train", epochs=3),), nprocs=2)
"""


def test_an_elif_where_the_rank_test_cannot_hold_is_every_rank_s(tmp_path):
    assert at(lint_one(tmp_path, ELIF.replace("{other}", 'elif cfg.mode == "valid":')), "DDP809") == []


def test_its_twin_s_else_is_the_ranks_the_rank_test_leaves_out(tmp_path):
    code = ELIF.replace("{other}", "else:")
    assert [s for _, s in at(lint_one(tmp_path, code), "DDP809")] != []


# -------------------------------------------------- a trainer an option's prefix picks
PICKED = """
import argparse
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--loss_type", default="{loss}")
opt = parser.parse_args()
dist.init_process_group("gloo")
if opt.loss_type.split("_")[0] == "plain":
    from trainers.plain import train
elif opt.loss_type.split("_")[0] == "stop":
    from trainers.stop import train
train(opt)
"""
STOPPER = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train(opt):
    model = DDP(torch.nn.Linear(4, 1))
    stale = 0
    for epoch in range(10):
        model(torch.randn(2, 4)).sum().backward()
        if dist.get_rank() == 0:
            stale += 1
        if stale > 3:  # the stop
            break
"""
PLAIN = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train(opt):
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(10):
        model(torch.randn(2, 4)).sum().backward()
"""


def _picked(tmp_path, loss: str):
    return lint_tree(tmp_path, {"train.py": PICKED.replace("{loss}", loss), "trainers/__init__.py": "",
                                "trainers/plain.py": PLAIN, "trainers/stop.py": STOPPER})


def test_the_trainer_the_option_s_prefix_picks_is_the_one_judged(tmp_path):
    assert at(_picked(tmp_path, "stop_softmax"), "DDP809") == [(line_of(STOPPER, "# the stop"), "error")]


def test_its_twin_s_option_picks_the_healthy_trainer(tmp_path):
    assert at(_picked(tmp_path, "plain_softmax"), "DDP809") == []


# -------------------------------------------------- a seed drawn where the option gives none
DRAWN_SEED = """
import argparse, random
import numpy as np
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler

parser = argparse.ArgumentParser()
parser.add_argument("--manual_seed", type=int, default={default})
opt = parser.parse_args()
if opt.manual_seed is None:
    opt.manual_seed = random.randint(1, 10000)
torch.manual_seed(opt.manual_seed)


class Clips(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.randn(4) * np.random.random()


dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 1))
data = Clips()
sampler = DistributedSampler(data)
loader = DataLoader(data, batch_size=8, sampler=sampler, num_workers=2)  # the loader
for epoch in range(3):
    sampler.set_epoch(epoch)
    for x in loader:
        model(x).sum().backward()
"""


def test_a_seed_each_process_draws_where_the_option_gives_none_is_no_ddp808(tmp_path):
    assert at(lint_one(tmp_path, DRAWN_SEED.replace("{default}", "None")), "DDP808") == []


def test_its_twin_s_option_gives_every_rank_the_same_seed(tmp_path):
    code = DRAWN_SEED.replace("if opt.manual_seed is None:\n    opt.manual_seed = random.randint(1, 10000)\n", "")
    code = code.replace("{default}", "7")
    assert [s for _, s in at(lint_one(tmp_path, code), "DDP808")] == ["warning"]


# -------------------------------------------------- isinstance(pbar, tqdm) as the rank test
PBAR = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from tqdm import tqdm


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    {made}
    for step in pbar:
        model(torch.randn(2, 4)).sum().backward()
        if isinstance(pbar, tqdm) and step % 100 == 0:
            torch.save(model.state_dict(), "ckpt.pt")  # the save


main()
"""


def test_a_progress_bar_made_on_rank_0_alone_makes_its_kind_the_rank_test(tmp_path):
    made = "if dist.get_rank() == 0:\n        pbar = tqdm(range(1000))\n    else:\n        pbar = range(1000)"
    assert at(lint_one(tmp_path, PBAR.replace("{made}", made)), "DDP806") == []


def test_its_twin_makes_the_bar_on_every_rank(tmp_path):
    code = PBAR.replace("{made}", "pbar = tqdm(range(1000))")
    assert at(lint_one(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


# -------------------------------------------------- the job's GPU count in a master flag
GPU_COUNT = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def is_master_proc(num_gpus):
    return num_gpus == 1 or dist.get_rank() == 0


class Trainer:
    def __init__(self, cfg):
        self.is_master = is_master_proc(cfg.num_gpus) if {test} else True
        self.model = DDP(torch.nn.Linear(4, 1))

    def train(self):
        for it in range(100):
            self.model(torch.randn(2, 4)).sum().backward()
            if it % 10 == 0 and self.is_master:
                torch.save(self.model.state_dict(), "last.pt")  # the save


class Cfg:
    num_gpus = 2
    fast = False


dist.init_process_group("gloo")
Trainer(Cfg()).train()
"""


def test_a_master_flag_asked_only_when_the_job_has_several_gpus_is_a_rank_test(tmp_path):
    assert at(lint_one(tmp_path, GPU_COUNT.replace("{test}", "cfg.num_gpus > 1")), "DDP806") == []


def test_its_twin_asks_on_a_switch_that_says_nothing_of_the_job_s_size(tmp_path):
    code = GPU_COUNT.replace("{test}", "cfg.fast")
    assert at(lint_one(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


# -------------------------------------------------- a per-sample path handed down two helpers
SAMPLE_PATH = """
import os
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def inner(x, model_kwargs=None):
    noise = torch.randn_like(x)
    torch.save(noise, model_kwargs["noise_path"])  # the save
    return x + noise


def outer(x, model_kwargs=None):
    return inner(x, model_kwargs=model_kwargs)


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    data = TensorDataset(torch.arange(64), torch.randn(64, 4))
    loader = DataLoader(data, batch_size=1, sampler=DistributedSampler(data, shuffle=False))
    with torch.no_grad():
        for ids, x in loader:
            kwargs = {"noise_path": {path}}
            outer(model(x), model_kwargs=kwargs)


main()
"""


def test_a_path_made_of_each_sample_s_id_two_helpers_down_is_one_writer_per_file(tmp_path):
    code = SAMPLE_PATH.replace("{path}", 'os.path.join("noise", f"{ids[0]}.pt")')
    assert at(lint_one(tmp_path, code), "DDP806") == []


def test_its_twin_writes_every_sample_to_one_path(tmp_path):
    code = SAMPLE_PATH.replace("{path}", 'os.path.join("noise", "last.pt")')
    assert at(lint_one(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


# -------------------------------------------------- a loader stored at a key of a dict
KEYED = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
from tqdm import tqdm


class Processor:
    def __init__(self, phase, ddp):
        self.phase, self.ddp = phase, ddp
        self.model = DDP(torch.nn.Linear(4, 1))
        self.load_data()

    def load_data(self):
        data = TensorDataset(torch.randn(64, 4))
        self.data_loader = dict()
        if self.phase == "train" and not self.ddp:
            self.data_loader["train"] = DataLoader(data, batch_size=8, shuffle=True)
        elif self.phase == "train" and self.ddp:
            self.train_sampler = DistributedSampler(data)  # the sampler
            self.data_loader["train"] = DataLoader(data, batch_size=8, sampler=self.train_sampler)
        self.data_loader["test"] = DataLoader(data, batch_size=8)

    def train(self, epoch):
        loader = self.data_loader["train"]
        for (x,) in tqdm(loader):
            self.model(x).sum().backward()

    def start(self):
        for epoch in range(10):
            {epoch}
            self.train(epoch)


dist.init_process_group("gloo")
Processor("train", True).start()
"""


def test_a_loader_kept_at_a_dict_key_is_the_training_loader_its_key_names(tmp_path):
    code = KEYED.replace("{epoch}", "pass")
    assert at(lint_one(tmp_path, code), "DDP804") == [(line_of(code, "# the sampler"), "warning")]


def test_its_twin_sets_the_sampler_s_epoch(tmp_path):
    code = KEYED.replace("{epoch}", "self.train_sampler.set_epoch(epoch)")
    assert at(lint_one(tmp_path, code), "DDP804") == []


# -------------------------------------------------- options handed back by a rank-0 helper
HANDED_BACK = """
import argparse
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def record(args):
    with open("args.txt", "w") as f:
        f.write(str(vars(args)))
    return {returned}


def main(args):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DDP(torch.nn.Linear(4, 1))
    if rank == 0:
        args = record(args)
    for epoch in range(args.epochs):  # the decision
        model(torch.randn(2, 4)).sum().backward()


main(argparse.Namespace(epochs=3))
"""


def test_options_a_rank_0_helper_hands_back_as_they_came_are_every_rank_s(tmp_path):
    assert at(lint_one(tmp_path, HANDED_BACK.replace("{returned}", "args")), "DDP809") == []


def test_its_twin_s_helper_returns_new_options(tmp_path):
    code = HANDED_BACK.replace("{returned}", "argparse.Namespace(epochs=args.epochs + 1)")
    assert at(lint_one(tmp_path, code), "DDP809") == [(line_of(code, "# the decision"), "error")]


# -------------------------------------------------- absl flags as options
ABSL = """
import numpy as np
import torch, torch.distributed as dist
from absl import app, flags
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler

FLAGS = flags.FLAGS
flags.DEFINE_integer("num_workers", {workers}, "loader workers")


class Pairs(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.randn(4) * np.random.random()


def main(argv):
    torch.manual_seed(0)
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    data = Pairs()
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=8, sampler=sampler, num_workers=FLAGS.num_workers)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()


app.run(main)
"""


def _seed_messages(tmp_path, code):
    return [f.message for f in lint_one(tmp_path, code) if f.code == "DDP808"]


def test_an_absl_flag_s_default_of_no_workers_is_said_as_the_assumption(tmp_path):
    said = _seed_messages(tmp_path, ABSL.replace("{workers}", "0"))
    assert len(said) == 1 and said[0].startswith("if --num_workers is above its default 0")


def test_its_twin_s_flag_defaults_to_four_workers(tmp_path):
    said = _seed_messages(tmp_path, ABSL.replace("{workers}", "4"))
    assert len(said) == 1 and not said[0].startswith("if ")
