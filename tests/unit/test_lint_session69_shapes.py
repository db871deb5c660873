"""Shapes from session 69's reading of holdout 97 (after its unread score), each with its twin, in
our own words."""

from __future__ import annotations

from ddpdoctor.lint.sources import load_program
from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# -------------------------------------------------- a seeding under a key of the YAML config that
# no shipped config sets (each holds it commented out) and the loader fills with None: the ranks
# are never seeded alike, so their workers' seeds differ
KEY_SEEDED = """
import argparse
import random

import numpy as np
import torch
import torch.distributed as dist
import yaml
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


def read_config(path):
    with open(path) as f:
        config = yaml.safe_load(f)
    if not config.get("seed"):
        config["seed"] = None
    return config


def seed_all(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


class RandomCrops(Dataset):
    def __len__(self):
        return 128

    def __getitem__(self, i):
        return torch.randn(3, 8, 8)[:, : random.randint(4, 8)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default="configs/base.yaml")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    config = read_config(args.config)
    if config["seed"] is not None:
        seed_all(config["seed"])
    model = DDP(torch.nn.Linear(3, 3))
    data = RandomCrops()
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=config["batch_size"], sampler=sampler, num_workers=4)
    opt = torch.optim.SGD(model.parameters(), lr=config["lr"])
    for epoch in range(config["epochs"]):
        sampler.set_epoch(epoch)
        for x in loader:
            opt.zero_grad()
            model(x.mean((2, 3))).sum().backward()
            opt.step()


if __name__ == "__main__":
    main()
"""


def _configs(seed_line: str) -> dict:
    return {"configs/base.yaml": f"{seed_line}\nbatch_size: 8\nlr: 0.1\nepochs: 2\n",
            "configs/large.yaml": f"{seed_line}\nbatch_size: 32\nlr: 0.2\nepochs: 4\n"}


def test_a_seeding_under_a_config_key_no_config_sets_never_runs(tmp_path):
    files = {"train.py": KEY_SEEDED, **_configs("#seed: 0")}
    assert _codes(lint_tree(tmp_path, files), "DDP808") == []


def test_its_twin_a_config_that_sets_the_key_seeds_every_rank_alike(tmp_path):
    files = {"train.py": KEY_SEEDED, **_configs("seed: 0")}
    assert len(_codes(lint_tree(tmp_path, files), "DDP808")) == 1


def test_its_twin_the_code_filling_the_key_with_a_seed_seeds_alike(tmp_path):
    body = KEY_SEEDED.replace('config["seed"] = None', 'config["seed"] = 1234')
    files = {"train.py": body, **_configs("#seed: 0")}
    assert len(_codes(lint_tree(tmp_path, files), "DDP808")) == 1


def test_its_twin_configs_that_are_not_the_scripts_say_nothing(tmp_path):
    # (YAML files beside the script that set none of the keys it reads are not its configs)
    files = {"train.py": KEY_SEEDED, "env/conda.yaml": "name: work\nchannels:\n  - defaults\n"}
    assert len(_codes(lint_tree(tmp_path, files), "DDP808")) == 1


# -------------------------------------------------- a loader built on one dataset's side and
# bound again, with the sampler, after the `if` before any read: the first is never iterated
REBOUND = """
import argparse

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main_worker(args):
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 4))
    if args.dataset == "large":
        train_set = TensorDataset(torch.randn(256, 4))
        train_loader = DataLoader(train_set, batch_size=8, shuffle=True)
        READ_EARLY
    else:
        train_set = TensorDataset(torch.randn(64, 4))
    sampler = DistributedSampler(train_set)
    train_loader = DataLoader(train_set, batch_size=8, sampler=sampler)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for (x,) in train_loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", default="large")
    main_worker(parser.parse_args())
"""


def test_a_loader_bound_again_before_any_read_is_never_iterated(tmp_path):
    body = REBOUND.replace("READ_EARLY", "pass")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP802") == []


def test_its_twin_a_read_between_the_two_bindings_iterates_the_first(tmp_path):
    body = REBOUND.replace("READ_EARLY", "for (x,) in train_loader:\n            model(x).sum().backward()")
    assert len(_codes(lint_tree(tmp_path, {"train.py": body}), "DDP802")) == 1


# -------------------------------------------------- an option named like a node count that no code
# reads (a graph model's "number of nodes"): it tells no machines apart, so a save under the
# local rank is the one-node job's rank 0
NODE_OPTION = """
import argparse
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main(args):
    local_rank = int(os.environ["LOCAL_RANK"])
    dist.init_process_group("gloo")
    WORLD
    model = DDP(torch.nn.Linear(4, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        opt.zero_grad()
        model(torch.randn(2, 4)).sum().backward()
        opt.step()
    if local_rank == 0:
        torch.save(model.module.state_dict(), "checkpoint.pth")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--num_nodes", type=int, default=100, help="number of nodes in each graph")
    main(parser.parse_args())
"""


def test_an_option_named_like_a_node_count_that_nothing_reads_tells_no_nodes_apart(tmp_path):
    body = NODE_OPTION.replace("WORLD", "pass")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP806") == []


def test_its_twin_the_option_read_into_the_world_size_is_a_machine_count(tmp_path):
    body = NODE_OPTION.replace("WORLD", "world = args.num_nodes * torch.cuda.device_count()")
    assert len(_codes(lint_tree(tmp_path, {"train.py": body}), "DDP806")) == 1


# -------------------------------------------------- after training, rank 0 rebuilds a plain model
# from the checkpoint under the same name and evaluates it: the DDP binding above never reaches
# that forward
REBUILT = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.norm = torch.nn.BatchNorm1d(4)

    def forward(self, x):
        return self.norm(self.lin(x))


def train():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = Net()
    model = DDP(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        opt.zero_grad()
        model(torch.randn(8, 4)).sum().backward()
        opt.step()
    if rank == 0:
        torch.save(model.module.state_dict(), "best.pt")
    if rank == 0:
        REBUILD
        with torch.no_grad():
            print(model(torch.randn(8, 4)).mean())
    dist.barrier()


if __name__ == "__main__":
    train()
"""


def test_a_plain_model_rebuilt_under_the_same_name_is_not_the_ddp_model(tmp_path):
    body = REBUILT.replace("REBUILD", 'del model\n        model = Net()\n        model.load_state_dict(torch.load("best.pt"))')
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801") == []


def test_its_twin_the_wrapper_itself_evaluated_on_rank_0(tmp_path):
    body = REBUILT.replace("REBUILD", "model.eval()")
    assert len(_codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")) == 1


# -------------------------------------------------- a package of the user's own that bears a
# modelled library's name (`src/lightning/` of LightningModules and DataModules, the library itself
# imported as pytorch_lightning): it holds none of the library's parts, so it is read as local code
def test_a_package_named_like_a_library_without_its_parts_is_the_users_own(tmp_path, monkeypatch):
    from tests.unit.test_lint_session65_shapes import _write

    _write(tmp_path, {"train.py": "from lightning.datamodule import DataModule\n\nDataModule().setup()\n",
                      "lightning/__init__.py": "", "lightning/datamodule.py": "class DataModule:\n"
                      "    def setup(self):\n        return 1\n"})
    monkeypatch.chdir(tmp_path)
    notes: list[str] = []
    files = load_program("train.py", notes)
    assert sorted(f.display for f in files) == ["lightning/__init__.py", "lightning/datamodule.py", "train.py"]
    assert not any("copy of the library" in n for n in notes)


def test_its_twin_a_package_holding_the_librarys_parts_is_the_library(tmp_path, monkeypatch):
    from tests.unit.test_lint_session65_shapes import _write

    _write(tmp_path, {"train.py": "from lightning.datamodule import DataModule\n\nDataModule().setup()\n",
                      "lightning/__init__.py": "", "lightning/datamodule.py": "class DataModule:\n"
                      "    def setup(self):\n        return 1\n", "lightning/pytorch/__init__.py": ""})
    monkeypatch.chdir(tmp_path)
    notes: list[str] = []
    files = load_program("train.py", notes)
    assert [f.display for f in files] == ["train.py"]
    assert any("copy of the library lightning" in n for n in notes)


# -------------------------------------------------- a base trainer's micro-step loop without the
# sync flag, built only where the run is one process; the subclass built for the distributed run
# replaces that method with one that sets the flag
OVERRIDDEN = """
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, model, groups=4):
        self.model = model
        self.groups = groups
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def sub_step(self, x):
        loss = self.model(x).sum() / self.groups
        loss.backward()

    def batch_step(self, batch):
        for chunk in torch.chunk(batch, self.groups):
            self.sub_step(chunk)
        self.opt.step()
        self.opt.zero_grad()

    def fit(self, steps):
        for _ in range(steps):
            self.batch_step(torch.randn(16, 4))


class TrainerDDP(Trainer):
OVERRIDE


def main():
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    model = torch.nn.Linear(4, 4)
    if world_size == 1:
        trainer = Trainer(model)
    else:
        dist.init_process_group("gloo")
        trainer = TrainerDDP(DDP(model))
    trainer.fit(10)


if __name__ == "__main__":
    main()
"""

SYNCED = """    def batch_step(self, batch):
        for index, chunk in enumerate(torch.chunk(batch, self.groups)):
            self.model.require_backward_grad_sync = index == self.groups - 1
            self.sub_step(chunk)
        self.opt.step()
        self.opt.zero_grad()
"""


def test_a_base_loop_built_only_for_one_process_and_replaced_for_ddp_syncs_nothing(tmp_path):
    body = OVERRIDDEN.replace("OVERRIDE\n", SYNCED)
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP805") == []


def test_its_twin_a_subclass_keeping_the_base_loop_accumulates_without_sync(tmp_path):
    body = OVERRIDDEN.replace("OVERRIDE\n", "    pass\n")
    assert len(_codes(lint_tree(tmp_path, {"train.py": body}), "DDP805")) == 1



# -------------------------------------------------- a loop with two ways to step (an engine's
# `model.step()` on one side, a loss scaler's `update_grad=(i + 1) % update_freq == 0` on the other):
# the period of either is what the launches set, and `--update_freq 1` in every launch accumulates
# nothing
TWO_STEPS = """
import argparse

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class ScaledStep:
    def __init__(self):
        self.scaler = torch.cuda.amp.GradScaler()

    def __call__(self, loss, optimizer, update_grad=True):
        self.scaler.scale(loss).backward()
        if update_grad:
            self.scaler.step(optimizer)
            self.scaler.update()


def train_one_epoch(model, loader, optimizer, loss_scaler, update_freq):
    for i, (x,) in enumerate(loader):
        loss = model(x).sum() / update_freq
        if loss_scaler is None:
            model.backward(loss)
            model.step()
        else:
            loss_scaler(loss, optimizer, update_grad=(i + 1) % update_freq == 0)
            if (i + 1) % update_freq == 0:
                optimizer.zero_grad()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--update_freq", default=1, type=int)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 4))
    data = TensorDataset(torch.randn(64, 4))
    sampler = DistributedSampler(data)
    loader = DataLoader(data, sampler=sampler, batch_size=4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        train_one_epoch(model, loader, optimizer, ScaledStep(), update_freq=args.update_freq)


if __name__ == "__main__":
    main()
"""


def _launch(freq: int) -> str:
    return f"#!/bin/bash\ntorchrun --nproc_per_node=2 train.py \\\\\n    --update_freq {freq}\n"


def test_every_launch_stepping_each_pass_accumulates_nothing_on_either_side(tmp_path):
    files = {"train.py": TWO_STEPS, "run.sh": _launch(1)}
    assert _codes(lint_tree(tmp_path, files), "DDP805") == []


def test_its_twin_a_launch_that_accumulates_is_told(tmp_path):
    files = {"train.py": TWO_STEPS, "run.sh": _launch(4)}
    assert len(_codes(lint_tree(tmp_path, files), "DDP805")) == 1


# -------------------------------------------------- the backward told is the one on the side the
# options' defaults take (`if args.fp16: scaler...backward() else: loss.backward()`, --fp16 off)
AMP_SIDES = """
import argparse

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

NATIVE = hasattr(torch.cuda, "amp")
try:
    from apex import amp
    APEX = True
except ImportError:
    APEX = False


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fp16", ACTION)
    parser.add_argument("--accum", type=int, default=4)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 4))
    scaler = torch.cuda.amp.GradScaler()
    data = TensorDataset(torch.randn(64, 4))
    sampler = DistributedSampler(data)
    loader = DataLoader(data, sampler=sampler, batch_size=4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for i, (x,) in enumerate(loader):
            loss = model(x).sum() / args.accum
            if args.fp16 and NATIVE:
                scaler.scale(loss).backward()
            elif args.fp16 and APEX:
                with amp.scale_loss(loss, opt) as scaled:
                    scaled.backward()
            else:
                loss.backward()
            if (i + 1) % args.accum == 0:
                opt.step()
                opt.zero_grad()


if __name__ == "__main__":
    main()
"""


def test_the_backward_told_is_on_the_side_the_defaults_take(tmp_path):
    body = AMP_SIDES.replace("ACTION", 'action="store_true"')
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP805")
    assert [f.location.line for f in found] == [_line(body, "                loss.backward()")]


def test_its_twin_with_the_option_on_by_default_the_scaled_backward(tmp_path):
    body = AMP_SIDES.replace("ACTION", 'action="store_false"')
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP805")
    assert [f.location.line for f in found] == [_line(body, "scaler.scale(loss).backward()")]


def test_its_twin_an_override_that_hands_on_to_the_base_loop_still_accumulates(tmp_path):
    handing_on = ("    def batch_step(self, batch):\n        self.model.train()\n"
                  "        super().batch_step(batch)\n")
    body = OVERRIDDEN.replace("OVERRIDE\n", handing_on)
    assert len(_codes(lint_tree(tmp_path, {"train.py": body}), "DDP805")) == 1
