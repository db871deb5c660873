"""Shapes from session 65's reading of holdout 91 (after its unread score), each with its twin, in
our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line


# -------------------------------------------------- an agent class picked from its package's own
# namespace by a configured name (`getattr(sys.modules[__name__], name)`), handed to the spawned
# ranks and built there
AGENT_PACKAGE = """
import sys

from .trainer import Agent


def get_agent_cls(name):
    return getattr(sys.modules[__name__], name)
"""
AGENT = """
import torch
import torch.distributed as dist
import torchvision.transforms as T
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Crops(Dataset):
    def __init__(self):
        self.crop = T.RandomResizedCrop(8)

    def __len__(self):
        return 64

    def __getitem__(self, i):
        return self.crop(torch.rand(3, 16, 16))


class Agent:
    def __init__(self, config, rank):
        self.rank = rank
        self.sampler = DistributedSampler(Crops())
        self.loader = DataLoader(Crops(), batch_size=8, sampler=self.sampler, num_workers=4)  # the loader
        self.model = DDP(torch.nn.Linear(8, 1))

    def train(self):
        for epoch in range(2):
            self.sampler.set_epoch(epoch)
            for x in self.loader:
                self.model(x.flatten(1)[:, :8]).sum().backward()
"""
SPAWNING = """
import random
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from agents import get_agent_cls


def worker(i, agent_cls, config):
    SEED
    dist.init_process_group("gloo", rank=i, world_size=2)
    agent = agent_cls(config, rank=i)
    agent.train()


if __name__ == "__main__":
    mp.spawn(worker, nprocs=2, args=(get_agent_cls("Agent"), {}))
"""


def _agent_tree(seed: str) -> dict[str, str]:
    return {"train.py": SPAWNING.replace("SEED", seed), "agents/__init__.py": AGENT_PACKAGE, "agents/trainer.py": AGENT}


def test_a_class_picked_from_the_packages_namespace_is_built_in_the_ranks(tmp_path):
    found = lint_tree(tmp_path, _agent_tree("torch.manual_seed(0)"))
    assert [f.location.line for f in _codes(found, "DDP808")] == [_line(AGENT, "# the loader")]


def test_twin_the_ranks_seeded_with_their_rank(tmp_path):
    found = lint_tree(tmp_path, _agent_tree("torch.manual_seed(i)"))
    assert not _codes(found, "DDP808")


# -------------------------------------------------- `if P and rank == 0: A elif P and rank > 0: B
# else: C`: C runs only where P is false, on every rank; A is rank 0's alone
SPLIT = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Runner:
    def __init__(self, config, rank):
        self.config, self.rank = config, rank
        self.model = DDP(torch.nn.BatchNorm1d(4))

    def validate(self):
        with torch.no_grad():
            self.model(torch.randn(8, 4))  # the forward

    def train(self):
        for epoch in range(3):
            self.model(torch.randn(8, 4)).sum().backward()
            if self.config["mode"] == "parallel" and self.rank == 0:
                RANK_ZERO  # the rank-0 call
            elif self.config["mode"] == "parallel" and self.rank > 0:
                pass
            else:
                self.validate()  # the one-process call


def main():
    dist.init_process_group("gloo")
    Runner({"mode": "parallel"}, dist.get_rank()).train()


if __name__ == "__main__":
    main()
"""


def test_the_else_of_two_rank_tests_no_rank_passes_is_no_rank_branch(tmp_path):
    found = lint_tree(tmp_path, {"train.py": SPLIT.replace("RANK_ZERO", "pass")})
    assert not _codes(found, "DDP801")


def test_twin_rank_zero_validates_alone(tmp_path):
    found = lint_tree(tmp_path, {"train.py": SPLIT.replace("RANK_ZERO", "self.validate()")})
    assert [f.location.line for f in _codes(found, "DDP801")] == [_line(SPLIT, "# the rank-0 call")]


# -------------------------------------------------- the `else:` of `if args.world_size <= 1:` is the
# spawning side: a cache every spawned rank writes
WORLD = """
import argparse
import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def prepare(path):
    if not os.path.exists(path):
        torch.save(torch.randn(4), path)  # the cache


def ddp_main(rank, args):
    dist.init_process_group("gloo", rank=rank, world_size=args.world_size)
    prepare("processed.pt")


def main(args):
    prepare("processed.pt")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--world_size", type=int, default=2)
    args = parser.parse_args()
    if args.world_size <= 1:
        main(args)
    else:
        SPAWN
"""


def test_the_spawn_on_the_else_of_a_world_of_one_is_the_distributed_run(tmp_path):
    body = WORLD.replace("SPAWN", "mp.spawn(ddp_main, args=(args,), nprocs=args.world_size)")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP806")] == [_line(WORLD, "# the cache")]


def test_twin_no_spawn_leaves_the_one_process_run(tmp_path):
    found = lint_tree(tmp_path, {"train.py": WORLD.replace("SPAWN", "main(args)")})
    assert not _codes(found, "DDP806")


# -------------------------------------------------- a DistributedSampler subclass that shuffles only
# when told (catalyst's `DistributedSamplerWrapper(sampler, ..., shuffle=False)`)
WRAPPER = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, SubsetRandomSampler, TensorDataset


class DistributedSamplerWrapper(DistributedSampler):
    def __init__(self, sampler, num_replicas=None, rank=None, shuffle=False):
        super().__init__(list(sampler), num_replicas=num_replicas, rank=rank, shuffle=shuffle)
        self.sampler = sampler


def main():
    dist.init_process_group("gloo")
    data = TensorDataset(torch.randn(64, 4))
    sampler = DistributedSamplerWrapper(SubsetRandomSampler(range(64))ARGS)  # the sampler
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(3):
        for (x,) in DataLoader(data, batch_size=8, sampler=sampler):
            model(x).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_a_sampler_subclass_that_keeps_order_by_default_wants_no_set_epoch(tmp_path):
    found = lint_tree(tmp_path, {"train.py": WRAPPER.replace("ARGS", "")})
    assert not _codes(found, "DDP804")


def test_twin_told_to_shuffle(tmp_path):
    found = lint_tree(tmp_path, {"train.py": WRAPPER.replace("ARGS", ", shuffle=True")})
    assert [f.location.line for f in _codes(found, "DDP804")] == [_line(WRAPPER, "# the sampler")]


# -------------------------------------------------- no_sync entered after a forward one method down
# (`metrics = self._loss(x)`, whose body runs `self.model(x)`, then `with self.model.no_sync():
# loss.backward()`)
HELPER_FORWARD = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self):
        self.model = DDP(torch.nn.Linear(4, 1))
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def _loss(self, x):
        return self.model(x).sum()

    def step(self, batches):
        self.optimizer.zero_grad()
        for i, x in enumerate(batches):
            BODY
        self.optimizer.step()


def main():
    dist.init_process_group("gloo")
    trainer = Trainer()
    for it in range(10):
        trainer.step([torch.randn(8, 4) for _ in range(4)])


if __name__ == "__main__":
    main()
"""
AFTER = """loss = self._loss(x)
            with self.model.no_sync():
                loss.backward()  # the backward"""
AROUND = """with self.model.no_sync():
                loss = self._loss(x)
                loss.backward()"""


def test_no_sync_after_a_forward_in_a_helper_method_changes_nothing(tmp_path):
    body = HELPER_FORWARD.replace("BODY", AFTER)
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP805")] == [_line(body, "# the backward")]


def test_twin_no_sync_around_the_helpers_forward(tmp_path):
    found = lint_tree(tmp_path, {"train.py": HELPER_FORWARD.replace("BODY", AROUND)})
    assert not [f for f in _codes(found, "DDP805") if "after the forward" in f.message]


# -------------------------------------------------- rank 0 writes the config, the barrier, every rank
# reads it back (`cfg = pickle.load(f)`): a shared value again
READ_BACK = """
import pickle
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train(rank, cfg):
    dist.init_process_group("gloo", rank=rank, world_size=2)
    if rank == 0:
        cfg = dict(cfg, epochs=4)
        with open("cfg.pkl", "wb") as f:
            pickle.dump(cfg, f)
    dist.barrier()
    READ
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(cfg["epochs"]):  # the loop
        model(torch.randn(8, 4)).sum().backward()


if __name__ == "__main__":
    torch.multiprocessing.spawn(train, args=({"epochs": 2},), nprocs=2)
"""


def test_a_config_every_rank_reads_back_after_the_barrier_is_shared(tmp_path):
    body = READ_BACK.replace("READ", 'with open("cfg.pkl", "rb") as f:\n        cfg = pickle.load(f)')
    found = lint_tree(tmp_path, {"train.py": body})
    assert not _codes(found, "DDP809")


def test_twin_only_rank_zero_holds_the_changed_config(tmp_path):
    found = lint_tree(tmp_path, {"train.py": READ_BACK.replace("READ", "pass")})
    assert [f.location.line for f in _codes(found, "DDP809")] == [_line(READ_BACK, "# the loop")]


# -------------------------------------------------- a name called to rebind itself (`v = v()`, a
# dataclass field's default_factory): what the name holds is asked round a cycle - answered, not
# recursed into (holdout 92's Hydra initializer, refused as "nested too deeply" on its unread score)
SELF_CALL = """
import dataclasses
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset


@dataclasses.dataclass
class Config:
    lr: float = 0.1


def init_configs():
    for k in Config.__dataclass_fields__:
        v = Config.__dataclass_fields__[k].default_factory
        if v is not None:
            v = v()


def main():
    init_configs()
    dist.init_process_group("gloo")
    loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8, shuffle=True)  # the loader
    model = torch.nn.Linear(4, 1)
    for (x,) in loader:
        model(x).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_a_name_called_to_rebind_itself_is_read_not_recursed_into(tmp_path):
    found = lint_tree(tmp_path, {"train.py": SELF_CALL})
    assert [f.location.line for f in _codes(found, "DDP802")] == [_line(SELF_CALL, "# the loader")]


# -------------------------------------------------- a helper's loader rebuilt with a DistributedSampler
# inside `if train_loader is not None:` (the helper's plain shuffling loader is never iterated); the
# spawn sits on the `else:` of `if world_size == 1:`, the distributed side
REBUILT = """
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def get_loaders():
    data = TensorDataset(torch.randn(64, 4))
    return DataLoader(data, batch_size=8, shuffle=True), None  # the helper's loader


def get_distributed_loaders(rank, world_size):
    train_loader, val_loader = get_loaders()
    if train_loader is not None:
        REBUILD
    return train_loader, val_loader


def worker(rank, world_size):
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    train_loader, _ = get_distributed_loaders(rank, world_size)
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(2):
        train_loader.sampler.set_epoch(epoch)
        for (x,) in train_loader:
            model(x).sum().backward()


if __name__ == "__main__":
    world_size = 2
    if world_size == 1:
        worker(0, 1)
    else:
        mp.spawn(worker, args=(world_size,), nprocs=world_size)
"""
SHARDED = """sampler = DistributedSampler(train_loader.dataset, num_replicas=world_size, rank=rank)
        train_loader = DataLoader(train_loader.dataset, batch_size=8, sampler=sampler)"""


def test_a_helpers_loader_rebuilt_with_a_sampler_inside_a_presence_test_is_never_iterated(tmp_path):
    found = lint_tree(tmp_path, {"train.py": REBUILT.replace("REBUILD", SHARDED)})
    assert not _codes(found, "DDP802")


def test_twin_not_rebuilt_the_helpers_loader_trains_on_every_rank(tmp_path):
    found = lint_tree(tmp_path, {"train.py": REBUILT.replace("REBUILD", "pass")})
    assert [f.location.line for f in _codes(found, "DDP802")] == [_line(REBUILT, "# the helper's loader")]
