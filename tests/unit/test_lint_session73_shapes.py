"""Shapes from session 73's reading of holdout 103 (after its unread score), each with its twin,
in our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# -------------------------------------------------- a trainer built with `**kwargs` keeps the wrapped
# model and the rank-0 writer out of the dict (`self.net = kw["net"]`): the forward round the wrapper
# is DDP810, and `if self.writer is not None:` is the rank test the writer's making was
KWARGS_TRAINER = """import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class Runner:
    def __init__(self, **parts):
        self.net = parts["net"]
        self.log = parts["log"]
        self.batches = parts["batches"]
        self.opt = parts["opt"]

    def epoch(self):
        for x, y in self.batches:
            out = self.net.module.embed(x)
            loss = ((out - y) ** 2).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
        if self.log is not None:
            torch.save(self.net.module.state_dict(), "last.pt")


class Embedder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 1)

    def embed(self, x):
        return self.lin(x)

    def forward(self, x):
        return self.lin(x)


def main():
    rank = int(os.environ["RANK"])
    log = None
    if rank == 0:
        log = open("train.log", "w")
    dist.init_process_group("gloo")
    net = DDP(Embedder())
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    sampler = DistributedSampler(data)
    runner = Runner(net=net, log=log, batches=DataLoader(data, batch_size=8, sampler=sampler),
                    opt=torch.optim.SGD(net.parameters(), lr=0.1))
    for e in range(3):
        sampler.set_epoch(e)
        runner.epoch()


if __name__ == "__main__":
    main()
"""


def test_a_kwargs_trainer_forward_round_the_wrapper_and_its_rank_zero_writer(tmp_path):
    found = lint_tree(tmp_path, {"train.py": KWARGS_TRAINER})
    assert [f.location.line for f in _codes(found, "DDP810")] == [_line(KWARGS_TRAINER, "loss.backward()")]
    assert _codes(found, "DDP806") == []


def test_its_twin_the_wrappers_forward_and_a_writer_on_every_rank(tmp_path):
    twin = KWARGS_TRAINER.replace("self.net.module.embed(x)", "self.net(x)").replace(
        "    log = None\n    if rank == 0:\n        log = open", "    log = open")
    assert twin != KWARGS_TRAINER
    found = lint_tree(tmp_path, {"train.py": twin})
    assert _codes(found, "DDP810") == []
    assert [f.location.line for f in _codes(found, "DDP806")] == [_line(twin, "torch.save(")]


# -------------------------------------------------- rank 0's early stop whose counter moves only
# under a store_true switch: a warning that names the switch; moved on every run, an error
EARLY_STOP_SWITCH = """import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--early_stop", action="store_true")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DDP(torch.nn.Linear(4, 1))
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    worse, last = 0, None
    for epoch in range(50):
        sampler.set_epoch(epoch)
        total = 0.0
        for x, y in loader:
            loss = ((model(x) - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
        if rank == 0:
            limit = 4
            if args.early_stop:
                if last is not None and total > last:
                    worse += 1
                else:
                    worse = 0
            last = total
            if worse == limit:
                break
        dist.barrier()


if __name__ == "__main__":
    main()
"""


def test_a_rank_zero_stop_counted_only_under_a_switch_is_a_warning_naming_it(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": EARLY_STOP_SWITCH}), "DDP809")
    assert [(f.severity.value, f.location.line) for f in found] == [
        ("warning", _line(EARLY_STOP_SWITCH, "if worse == limit:"))]
    assert "`args.early_stop` is set" in found[0].message


def test_its_twin_counted_on_every_run_is_an_error(tmp_path):
    twin = EARLY_STOP_SWITCH.replace(
        "            if args.early_stop:\n                if last is not None and total > last:\n"
        "                    worse += 1\n                else:\n                    worse = 0\n",
        "            if last is not None and total > last:\n                worse += 1\n"
        "            else:\n                worse = 0\n")
    assert twin != EARLY_STOP_SWITCH
    found = _codes(lint_tree(tmp_path, {"train.py": twin}), "DDP809")
    assert [(f.severity.value, f.location.line) for f in found] == [("error", _line(twin, "if worse == limit:"))]


# -------------------------------------------------- rank 0 leaves the loop at an `==` on a count that
# takes every value on its way (`step = epoch * n + i + 1`): how the run ends, an error
EQUAL_STEP = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DDP(torch.nn.Linear(4, 1))
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    epochs = 5
    last = epochs * len(loader)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for i, (x, y) in enumerate(loader):
            step = epoch * len(loader) + i + 1
            loss = ((model(x) - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            if rank == 0 and step == last - 3:
                break


if __name__ == "__main__":
    main()
"""


def test_a_rank_zero_break_at_an_equal_step_count_is_an_error(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": EQUAL_STEP}), "DDP809")
    assert [(f.severity.value, f.location.line) for f in found] == [
        ("error", _line(EQUAL_STEP, "if rank == 0 and step == last - 3:"))]


def test_its_twin_a_count_that_skips_values_stays_a_warning(tmp_path):
    twin = EQUAL_STEP.replace("step = epoch * len(loader) + i + 1", "step = epoch * len(loader) + 2 * i")
    assert twin != EQUAL_STEP
    found = _codes(lint_tree(tmp_path, {"train.py": twin}), "DDP809")
    assert [(f.severity.value, f.location.line) for f in found] == [
        ("warning", _line(twin, "if rank == 0 and step == last - 3:"))]


# -------------------------------------------------- a seed handed from the options, with a draw only
# where none is given, and a worker init that pins its "rank" to 0: every rank's workers alike
CONFIG_SEED = """import argparse
import random

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Jittered(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.randn(4) + np.random.normal(), torch.randn(1)


def seed_all(seed=None):
    if seed is None:
        seed = random.randint(0, 2 ** 31)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    return seed


def init_worker(worker_id):
    global_rank = 0
    base = torch.initial_seed() - worker_id
    np.random.seed((base + worker_id + global_rank) % 2 ** 32)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()
    seed_all(args.seed)
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    data = Jittered()
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=8, sampler=sampler, num_workers=4, worker_init_fn=init_worker)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = ((model(x) - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()


if __name__ == "__main__":
    main()
"""


def test_an_options_seed_with_a_fallback_draw_and_a_pinned_worker_rank_is_ddp808(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": CONFIG_SEED}), "DDP808")
    assert [f.location.line for f in found] == [_line(CONFIG_SEED, "loader = DataLoader(")]


def test_its_twins_a_real_rank_in_the_worker_or_no_seed_given(tmp_path):
    ranked = CONFIG_SEED.replace("    global_rank = 0\n", "    global_rank = dist.get_rank()\n")
    unset = CONFIG_SEED.replace("default=1234", "default=None")
    assert ranked != CONFIG_SEED and unset != CONFIG_SEED
    assert _codes(lint_tree(tmp_path / "a", {"train.py": ranked}), "DDP808") == []
    assert _codes(lint_tree(tmp_path / "b", {"train.py": unset}), "DDP808") == []


# -------------------------------------------------- each group of ranks reads its own dataset and
# shards it among the group (`num_replicas=per_set, rank=place_in_set`): one sharding, not two
GROUP_SHARDS = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

SETS = ["a", "b"]


def build(names, index):
    return TensorDataset(torch.randn(64, 4) * len(names[index]), torch.randn(64, 1))


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    per_set = dist.get_world_size() // len(SETS)
    data = build(SETS, rank // per_set)
    sampler = DistributedSampler(data, num_replicas=per_set, rank=rank % per_set)
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = ((model(x) - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()


if __name__ == "__main__":
    main()
"""


def test_a_dataset_per_group_sharded_within_its_group_is_not_ddp803(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": GROUP_SHARDS}), "DDP803") == []


def test_its_twin_the_group_dataset_sharded_over_the_whole_world(tmp_path):
    twin = GROUP_SHARDS.replace("DistributedSampler(data, num_replicas=per_set, rank=rank % per_set)",
                                "DistributedSampler(data)")
    assert twin != GROUP_SHARDS
    found = _codes(lint_tree(tmp_path, {"train.py": twin}), "DDP803")
    assert [f.location.line for f in found] == [_line(twin, "sampler = DistributedSampler(")]


# -------------------------------------------------- an evaluation that attacks its inputs (PGD: a
# backward to `x_adv.grad`, no optimizer) trains nothing: its shuffling sampler needs no set_epoch
ATTACKED_EVAL = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def attack(net, x, y, steps=3):
    x_adv = x.clone().detach().requires_grad_(True)
    for _ in range(steps):
        loss = torch.nn.functional.mse_loss(net(x_adv), y)
        loss.backward()
        x_adv = (x_adv + 0.01 * x_adv.grad.sign()).detach().requires_grad_(True)
    return x_adv.detach()


def robust_error(net, loader):
    total = 0.0
    for x, y in loader:
        x = attack(net, x, y)
        total += float(((net(x) - y) ** 2).mean())
    return total


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    train = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    val = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
    sampler = DistributedSampler(train)
    loader = DataLoader(train, batch_size=8, sampler=sampler)
    val_loader = DataLoader(val, batch_size=8, sampler=DistributedSampler(val))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = ((model(x) - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(robust_error(model.module, val_loader))


if __name__ == "__main__":
    main()
"""


def test_an_input_gradient_evaluation_loader_needs_no_set_epoch(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": ATTACKED_EVAL}), "DDP804") == []


def test_its_twin_the_attack_steps_an_optimizer_and_so_trains(tmp_path):
    twin = ATTACKED_EVAL.replace("def attack(net, x, y, steps=3):\n",
                                 "def attack(net, x, y, steps=3, opt=None):\n").replace(
        "        loss.backward()\n        x_adv", "        loss.backward()\n        opt.step()\n        x_adv")
    assert twin != ATTACKED_EVAL
    found = _codes(lint_tree(tmp_path, {"train.py": twin}), "DDP804")
    assert [f.location.line for f in found] == [_line(twin, "val_loader = DataLoader(")]


# -------------------------------------------------- ranks from an MPI library's own getter
# (`mpidist.rank()` of torchpack.distributed) through a local wrapper with a one-process fallback;
# the training loader handed to the trainer inside a dict (`loaders={"train": ...}`)
MPI_DIST = """try:
    import torchpack.distributed as mpidist
except ImportError:
    mpidist = None


def rank():
    if mpidist:
        return mpidist.rank()
    return 0


def size():
    if mpidist:
        return mpidist.size()
    return 1
"""
MPI_TRAIN = """import torch
import torch.distributed
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

import dist


class Fitter:
    def __init__(self, model, loaders, opt):
        self.model = model
        self.loaders = loaders
        self.opt = opt

    def fit(self, epochs):
        for epoch in range(epochs):
            for x, y in self.loaders["train"]:
                loss = ((self.model(x) - y) ** 2).mean()
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
            if dist.rank() == 0:
                torch.save(self.model.state_dict(), "last.pt")


def main():
    model = torch.nn.Linear(4, 1)
    if dist.size() > 1:
        model = DDP(model)
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    train_loader = DataLoader(data, batch_size=8, shuffle=True)
    Fitter(model, {"train": train_loader}, torch.optim.SGD(model.parameters(), lr=0.1)).fit(3)


if __name__ == "__main__":
    main()
"""


def test_an_mpi_librarys_rank_getter_is_a_rank_test_and_a_dict_handed_loader_trains(tmp_path):
    found = lint_tree(tmp_path, {"train.py": MPI_TRAIN, "dist.py": MPI_DIST, "run.sh": "python train.py\n"})
    assert _codes(found, "DDP806") == []
    sampler = _codes(found, "DDP802")
    # (a plain `python train.py` where the ranks come from MPI is one process: a warning)
    assert [(f.severity.value, f.location.line) for f in sampler] == [
        ("warning", _line(MPI_TRAIN, "train_loader = DataLoader("))]


def test_its_twins_a_save_with_no_rank_test_and_a_sampled_loader(tmp_path):
    unguarded = MPI_TRAIN.replace("            if dist.rank() == 0:\n                torch.save",
                                  "            if epoch >= 0:\n                torch.save")
    sampled = MPI_TRAIN.replace("DataLoader(data, batch_size=8, shuffle=True)",
                                "DataLoader(data, batch_size=8, sampler=torch.utils.data.DistributedSampler(data))")
    assert unguarded != MPI_TRAIN and sampled != MPI_TRAIN
    found = lint_tree(tmp_path / "a", {"train.py": unguarded, "dist.py": MPI_DIST})
    assert [f.location.line for f in _codes(found, "DDP806")] == [_line(unguarded, "torch.save(")]
    assert _codes(lint_tree(tmp_path / "b", {"train.py": sampled, "dist.py": MPI_DIST}), "DDP802") == []


# -------------------------------------------------- Accelerate: the loop's helper computes the loss and
# hands it to `accelerator.backward(loss)`: DDP805 points at that backward, not at the loop's call
ACCELERATE_HELPER = """import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset


def one_step(model, batch, accelerator, accum):
    x, y = batch
    loss = ((model(x) - y) ** 2).mean() / accum
    accelerator.backward(loss)
    return loss.detach()


def main():
    accelerator = Accelerator()
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8)
    model, opt, loader = accelerator.prepare(model, opt, loader)
    accum = 4
    for epoch in range(2):
        for step, batch in enumerate(loader):
            one_step(model, batch, accelerator, accum)
            if (step + 1) % accum == 0:
                opt.step()
                opt.zero_grad()


if __name__ == "__main__":
    main()
"""


def test_accelerate_accumulation_points_at_the_helpers_backward(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": ACCELERATE_HELPER}), "DDP805")
    assert [f.location.line for f in found] == [_line(ACCELERATE_HELPER, "accelerator.backward(loss)")]


def test_its_twin_a_helper_handed_the_loss_is_told_at_the_loops_call(tmp_path):
    twin = ACCELERATE_HELPER.replace(
        "def one_step(model, batch, accelerator, accum):\n    x, y = batch\n"
        "    loss = ((model(x) - y) ** 2).mean() / accum\n    accelerator.backward(loss)\n    return loss.detach()\n",
        "def one_step(loss, accelerator):\n    accelerator.backward(loss)\n").replace(
        "            one_step(model, batch, accelerator, accum)\n",
        "            x, y = batch\n            one_step(((model(x) - y) ** 2).mean() / accum, accelerator)\n")
    assert twin != ACCELERATE_HELPER
    found = _codes(lint_tree(tmp_path, {"train.py": twin}), "DDP805")
    assert [f.location.line for f in found] == [_line(twin, "one_step(((model(x)")]


# -------------------------------------------------- Lightning Fabric's no_backward_sync entered after
# the forward: DDP decided in the forward, the context around the backward alone skips nothing
FABRIC_LATE = """import torch
from lightning.fabric import Fabric
from torch.utils.data import DataLoader, TensorDataset


def main():
    fabric = Fabric(accelerator="cpu", devices=2, strategy="ddp")
    fabric.launch()
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model, opt = fabric.setup(model, opt)
    loader = fabric.setup_dataloaders(DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8))
    accum = 4
    for i, (x, y) in enumerate(loader):
        loss = ((model(x) - y) ** 2).mean()
        accumulating = (i + 1) % accum != 0
        if accumulating:
            with fabric.no_backward_sync(model, enabled=accumulating):
                fabric.backward(loss / accum)
        else:
            fabric.backward(loss / accum)
            opt.step()
            opt.zero_grad()


if __name__ == "__main__":
    main()
"""


def test_fabrics_no_backward_sync_after_the_forward_is_ddp805(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": FABRIC_LATE}), "DDP805")
    assert [f.location.line for f in found] == [_line(FABRIC_LATE, "fabric.backward(loss / accum)")]


def test_its_twin_the_forward_inside_the_context(tmp_path):
    twin = FABRIC_LATE.replace(
        "        loss = ((model(x) - y) ** 2).mean()\n        accumulating = (i + 1) % accum != 0\n"
        "        if accumulating:\n            with fabric.no_backward_sync(model, enabled=accumulating):\n"
        "                fabric.backward(loss / accum)\n",
        "        accumulating = (i + 1) % accum != 0\n"
        "        if accumulating:\n            with fabric.no_backward_sync(model, enabled=accumulating):\n"
        "                loss = ((model(x) - y) ** 2).mean()\n                fabric.backward(loss / accum)\n").replace(
        "        else:\n            fabric.backward(loss / accum)\n",
        "        else:\n            loss = ((model(x) - y) ** 2).mean()\n            fabric.backward(loss / accum)\n")
    assert twin != FABRIC_LATE
    assert _codes(lint_tree(tmp_path, {"train.py": twin}), "DDP805") == []


# -------------------------------------------------- a dataset's base constructor reseeds the process
# with the `seed` its subclass hands on through `**kwargs`, from a dict spread into the subclass: the
# rank in that seed reaches the workers' base seed
RESEEDING_BASE = """import argparse
import os

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Base(Dataset):
    def __init__(self, n, seed=None):
        if seed is not None:
            np.random.seed(seed)
            torch.manual_seed(seed)
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.randn(4) + np.random.normal(), torch.randn(1)


class Scaled(Base):
    def __init__(self, scale, **kwargs):
        super().__init__(**kwargs)
        self.scale = scale


def make_loader(args):
    shared = {"n": 64, "seed": args.seed + int(os.environ.get("LOCAL_RANK", 0))}
    data = Scaled(scale=2.0, **shared)
    sampler = DistributedSampler(data)
    return DataLoader(data, batch_size=8, sampler=sampler, num_workers=4), sampler


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    dist.init_process_group("gloo")
    loader, sampler = make_loader(args)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = ((model(x) - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()


if __name__ == "__main__":
    main()
"""


def test_a_base_constructor_reseeding_with_the_rank_handed_through_kwargs(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": RESEEDING_BASE}), "DDP808") == []


def test_its_twin_the_seed_handed_on_has_no_rank(tmp_path):
    twin = RESEEDING_BASE.replace('"seed": args.seed + int(os.environ.get("LOCAL_RANK", 0))', '"seed": args.seed')
    assert twin != RESEEDING_BASE
    found = _codes(lint_tree(tmp_path, {"train.py": twin}), "DDP808")
    assert [f.location.line for f in found] == [_line(twin, "return DataLoader(")]


# -------------------------------------------------- an epoch loop whose body ends in `return` (one
# pass, as indented) reads its loader once: no set_epoch to miss
ONE_PASS = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def train(model, data, epochs):
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(epochs):
        for x, y in loader:
            loss = ((model(x) - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        return model


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    train(model, TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), 5)


if __name__ == "__main__":
    main()
"""


def test_an_epoch_loop_ending_in_return_makes_one_pass(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": ONE_PASS}), "DDP804") == []


def test_its_twins_the_return_after_the_loop_or_a_continue_past_it(tmp_path):
    after = ONE_PASS.replace("            opt.step()\n        return model\n", "            opt.step()\n    return model\n")
    skipping = ONE_PASS.replace("    for epoch in range(epochs):\n",
                                "    for epoch in range(epochs):\n        if epoch % 2:\n            continue\n")
    assert after != ONE_PASS and skipping != ONE_PASS
    for name, twin in (("a", after), ("b", skipping)):
        found = _codes(lint_tree(tmp_path / name, {"train.py": twin}), "DDP804")
        assert [f.location.line for f in found] == [_line(twin, "loader = DataLoader(")], name
