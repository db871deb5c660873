"""Shapes from session 54 (holdout 63's read residue and holdout 64), each with its twin, in our own
words: a model a registry builds by a configured name, seeds set again after the loader is built or
only on a machine without a GPU, a rank that is None in the one-process run, an optimizer over a
model a trainer keeps in a field and prepares, a rank helper's truth compared with 0, a method the
one-process run picks, and a rank that leaves after the backward the others run."""

from __future__ import annotations

from tests.unit.test_lint_round50_shapes import at, line_of
from tests.unit.test_lint_session39_shapes import lint_tree


def lint_one(tmp_path, code: str, **more: str):
    return lint_tree(tmp_path, {"train.py": code, **more})


# -------------------------------------------------- a model out of a registry, picked by a config
ZOO = """
import torch.nn as nn


class Table:
    def __init__(self, name):
        self.name, self.kinds = name, {}

    def register_module(self):
        def keep(cls):
            self.kinds[cls.__name__] = cls
            return cls
        return keep

    def get(self, key):
        return self.kinds.get(key)


NETS = Table("nets")


def make(cfg, table):
    kind = table.get(cfg["type"])
    return kind(cfg)


def make_net(cfg):
    return make(cfg, NETS)


@NETS.register_module()
class Small(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 4, 3), {norm})

    def forward(self, x):
        return self.body(x)


@NETS.register_module()
class Large(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 16, 3), {norm})

    def forward(self, x):
        return self.body(x)
"""

REGISTRY_TRAIN = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP
from zoo import make_net


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DDP(make_net({"type": "Small"}))
    data = TensorDataset(torch.randn(16, 3, 8, 8))
    loader = DataLoader(data, batch_size=4, sampler=DistributedSampler(data))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for (x,) in loader:
            opt.zero_grad()
            model(x).mean().backward()
            opt.step()
        if rank == 0:
            with torch.no_grad():
                model(x)  # rank 0's look
    dist.destroy_process_group()


main()
"""


def test_a_registry_of_batchnorm_models_makes_rank_0s_look_a_buffer_broadcast(tmp_path):
    found = lint_one(tmp_path, REGISTRY_TRAIN, **{"zoo.py": ZOO.replace("{norm}", "nn.BatchNorm2d(4)")})
    assert at(found, "DDP801") == [(line_of(REGISTRY_TRAIN, "# rank 0's look"), "warning")]


def test_its_twin_registers_models_without_buffers(tmp_path):
    found = lint_one(tmp_path, REGISTRY_TRAIN, **{"zoo.py": ZOO.replace("{norm}", "nn.ReLU()")})
    assert at(found, "DDP801") == []


# -------------------------------------------------- seeded alike, then per rank before the loop
RESEED = """
import random, argparse
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP


class Jittered(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.full((4,), float(i)) + random.random()


def set_seed(seed):
    random.seed(seed)
    torch.manual_seed(seed)


def loaders():
    torch.manual_seed(0)
    data = Jittered()
    return DataLoader(data, batch_size=8, sampler=DistributedSampler(data), num_workers=2)  # the loader


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    seed = args.seed
    loader = loaders()
    {reseed}
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        loader.sampler.set_epoch(epoch)
        for x in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()


main()
"""


def test_a_seed_per_rank_set_after_the_loader_is_built_is_the_workers_seed(tmp_path):
    code = RESEED.replace("{reseed}", "set_seed(seed + dist.get_rank())")
    assert at(lint_one(tmp_path, code), "DDP808") == []


def test_its_twin_sets_the_same_seed_again(tmp_path):
    code = RESEED.replace("{reseed}", "print(seed)")
    assert at(lint_one(tmp_path, code), "DDP808") == [(line_of(code, "# the loader"), "warning")]


# -------------------------------------------------- torch's own generator seeded only without a GPU
NO_GPU_SEED = """
import random
import numpy as np
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP


class Cropped(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.full((4,), float(i)) * np.random.rand()


def fix_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
{seeding}


def main():
    fix_seed(7)
    dist.init_process_group("gloo")
    data = Cropped()
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data), num_workers=2)  # the loader
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()


main()
"""
ONLY_WITHOUT_GPU = """    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)
    else:
        torch.manual_seed(seed)"""


def test_torch_seeded_only_where_no_gpu_is_leaves_the_workers_seeds_apart(tmp_path):
    code = NO_GPU_SEED.replace("{seeding}", ONLY_WITHOUT_GPU)
    assert at(lint_one(tmp_path, code), "DDP808") == []


def test_its_twin_seeds_torch_on_every_machine(tmp_path):
    code = NO_GPU_SEED.replace("{seeding}", "    torch.manual_seed(seed)")
    assert at(lint_one(tmp_path, code), "DDP808") == [(line_of(code, "# the loader"), "warning")]


# -------------------------------------------------- the rank a one-process run leaves at None
NONE_RANK = """
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.utils.data import DataLoader, TensorDataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP


def run_epoch(model, data, ddp_rank=None):
    if {test}:
        loader = DataLoader(data, batch_size=4, shuffle=True)  # the plain loader
    else:
        loader = DataLoader(data, batch_size=4, sampler=DistributedSampler(data))
    for (x,) in loader:
        model(x).sum().backward()


def worker(rank, world):
    dist.init_process_group("gloo", rank=rank, world_size=world)
    run_epoch(DDP(torch.nn.Linear(4, 1)), TensorDataset(torch.randn(32, 4)), rank)


if __name__ == "__main__":
    mp.spawn(worker, args=(2,), nprocs=2)
"""


def test_a_loader_built_where_the_rank_is_none_is_the_one_process_runs(tmp_path):
    code = NONE_RANK.replace("{test}", "ddp_rank is None")
    assert at(lint_one(tmp_path, code), "DDP802") == []


def test_its_twin_builds_the_plain_loader_where_a_rank_is_given(tmp_path):
    code = NONE_RANK.replace("{test}", "ddp_rank is not None")
    assert [line for line, _ in at(lint_one(tmp_path, code), "DDP802")] == [line_of(code, "# the plain loader")]


# -------------------------------------------------- an optimizer over the model a trainer prepares
KEPT = """
import torch
from torch.utils.data import DataLoader, TensorDataset
from accelerate import Accelerator


class Trainer:
    def __init__(self, model, accum=2):
        self.accelerator = Accelerator()
        self.model = model
        self.opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        self.accum = accum
        self.dl = DataLoader(TensorDataset(torch.randn(32, 4)), batch_size=4, shuffle=True)
        {prepared} = self.accelerator.prepare({prepared})

    def train(self):
        count = 0
        for (x,) in self.dl:
            loss = self.model(x).sum()
            self.accelerator.backward(loss / self.accum)  # the backward
            count += 1
            if count == self.accum:
                self.opt.step()
                self.opt.zero_grad()
                count = 0


Trainer(torch.nn.Linear(4, 1)).train()
"""


def test_an_optimizer_over_the_model_kept_in_a_prepared_field_accumulates_by_hand(tmp_path):
    code = KEPT.replace("{prepared}", "self.model, self.opt, self.dl")
    assert at(lint_one(tmp_path, code), "DDP805") == [(line_of(code, "# the backward"), "warning")]


def test_its_twin_prepares_the_optimizer_and_loader_but_not_the_model(tmp_path):
    code = KEPT.replace("{prepared}", "self.opt, self.dl")
    assert at(lint_one(tmp_path, code), "DDP805") == []


# -------------------------------------------------- a rank helper's truth compared with 0
COMPARED = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def is_main():
    return dist.get_rank() == 0


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    if is_main() == {value}:
        torch.save(model.state_dict(), "base.pt")  # the save


main()
"""


def test_is_main_compared_with_0_is_every_rank_but_0(tmp_path):
    code = COMPARED.replace("{value}", "0")
    assert at(lint_one(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


def test_its_twin_compares_with_1(tmp_path):
    code = COMPARED.replace("{value}", "1")
    assert at(lint_one(tmp_path, code), "DDP806") == []


# -------------------------------------------------- a method the one-process run picks
PICKED = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP


class Tuner:
    def __init__(self, world):
        self.ddp = world > 1
        if self.ddp:
            dist.init_process_group("gloo")
        self.model = DDP(torch.nn.Linear(4, 2)) if self.ddp else torch.nn.Linear(4, 2)

    def epoch_plain(self, data, wanted, epoch):
        loader = DataLoader(data, batch_size=4, shuffle=True)  # the plain loader
        for batch in loader:
            keep = [i for i, u in enumerate(batch[1]) if u in wanted]
            if not keep:
                continue
            self.model(batch[0][keep]).sum().backward()

    def epoch_ddp(self, data, wanted, epoch):
        sampler = DistributedSampler(data)
        sampler.set_epoch(epoch)
        loader = DataLoader(data, batch_size=4, sampler=sampler)
        for batch in loader:
            weight = torch.tensor([float(u in wanted) for u in batch[1]])
            (self.model(batch[0]).sum(1) * weight).sum().backward()

    def fit(self, data, wanted):
        run = {pick}
        for epoch in range(2):
            run(data, wanted, epoch)


Tuner(2).fit(TensorDataset(torch.randn(16, 4), torch.arange(16)), {1, 2, 3})
"""


def test_the_method_a_one_process_run_picks_trains_no_rank(tmp_path):
    code = PICKED.replace("{pick}", "self.epoch_ddp if self.ddp else self.epoch_plain")
    found = lint_one(tmp_path, code)
    assert at(found, "DDP802") == [] and at(found, "DDP809") == []


def test_its_twin_picks_it_for_the_distributed_run(tmp_path):
    code = PICKED.replace("{pick}", "self.epoch_plain if self.ddp else self.epoch_ddp")
    assert at(lint_one(tmp_path, code), "DDP802") == [(line_of(code, "# the plain loader"), "error")]


# -------------------------------------------------- a rank that leaves after the backward it skips
LEAVES = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP


class Stepper:
    def __init__(self):
        dist.init_process_group("gloo")
        self.model = DDP(torch.nn.Linear(4, 1))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def micro(self, x):
        loss = self.model(x).sum()
        if not torch.isfinite(loss):  # the skip
            {zero}
            return False
        loss.backward()
        return True

    def fit(self, loader):
        for (x,) in loader:
            self.opt.zero_grad()
            if self.micro(x):
                self.opt.step()


data = TensorDataset(torch.randn(32, 4))
Stepper().fit(DataLoader(data, batch_size=4, sampler=DistributedSampler(data)))
"""


def test_a_rank_that_runs_a_zero_backward_before_it_leaves_stays_in_step(tmp_path):
    code = LEAVES.replace("{zero}", "(loss * 0).backward()")
    assert at(lint_one(tmp_path, code), "DDP809") == []


def test_its_twin_leaves_before_any_backward(tmp_path):
    code = LEAVES.replace("{zero}", "print('skipped')")
    assert at(lint_one(tmp_path, code), "DDP809") == [(line_of(code, "# the skip"), "warning")]


LOOP_LEAVES = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = TensorDataset(torch.randn(32, 4))
for (x,) in DataLoader(data, batch_size=4, sampler=DistributedSampler(data)):
    opt.zero_grad()
    loss = model(x).sum()
    if not torch.isfinite(loss):  # the skip
        {zero}
        continue
    loss.backward()
    opt.step()
"""


def test_a_pass_that_runs_a_zero_backward_before_it_continues_stays_in_step(tmp_path):
    code = LOOP_LEAVES.replace("{zero}", "(loss * 0).backward()")
    assert at(lint_one(tmp_path, code), "DDP809") == []


def test_its_twin_continues_before_any_backward(tmp_path):
    code = LOOP_LEAVES.replace("{zero}", "print('skipped')")
    assert at(lint_one(tmp_path, code), "DDP809") == [(line_of(code, "# the skip"), "warning")]
