"""Shapes from session 64's fourth reading (holdout 87, read after its unread score), each with its
twin, in our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line


# -------------------------------------------------- a loader builder with an iterable side and a
# sampler helper that returns its sampler by name
# `if isinstance(dataset, IterableDataset): DataLoader(dataset, ...)` (no sampler there, rightly),
# else `sampler = create_sampler(dataset)` with `sampler = DistributedSampler(ds) if n > 1 else
# None; return sampler`; the loader the builder returns trains epoch after epoch
BUILDER = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, IterableDataset, TensorDataset


def create_sampler(dataset, num_gpus):
    sampler = DistributedSampler(dataset) if num_gpus > 1 else None
    return sampler


def construct_loader(dataset, num_gpus):
    if isinstance(dataset, torch.utils.data.IterableDataset):
        loader = DataLoader(dataset, batch_size=8)
    else:
        sampler = create_sampler(dataset, num_gpus)
        loader = DataLoader(dataset, batch_size=8, sampler=sampler, shuffle=False)
    return loader


def main():
    dist.init_process_group("gloo")
    train_loader = construct_loader(TensorDataset(torch.randn(64, 4)), 2)
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(3):
        SET_EPOCH
        for (x,) in train_loader:
            model(x).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_the_iterable_side_wants_no_sampler_and_the_returned_sampler_wants_set_epoch(tmp_path):
    found = lint_tree(tmp_path, {"train.py": BUILDER.replace("SET_EPOCH", "pass")})
    assert not _codes(found, "DDP802")
    assert [f.location.line for f in _codes(found, "DDP804")] == [_line(BUILDER, "sampler = DistributedSampler(dataset)")]


def test_twin_the_epoch_set_on_the_returned_loaders_sampler(tmp_path):
    found = lint_tree(tmp_path, {"train.py": BUILDER.replace("SET_EPOCH", "train_loader.sampler.set_epoch(epoch)")})
    assert not _codes(found, "DDP804") and not _codes(found, "DDP802")


# -------------------------------------------------- a comparison no constant of the function makes true
# rank 0 wraps a baseline model in DDP only `if training_phase == 1:`, where the function sets
# `training_phase = 2` and otherwise reads it from a checkpoint: the hang rests on that value
PHASE = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train(rank, resume):
    training_phase = START
    if resume:
        training_phase = torch.load(resume)["training_phase"]
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(3):
        model(torch.randn(2, 4)).sum().backward()
        if rank == 0:
            if training_phase == 1:
                baseline = DDP(torch.nn.Linear(4, 1))
                training_phase = 2


def main():
    dist.init_process_group("gloo")
    train(dist.get_rank(), None)


if __name__ == "__main__":
    main()
"""


def test_a_branch_only_a_read_value_takes_is_a_warning(tmp_path):
    body = PHASE.replace("START", "2")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")
    assert [(f.location.line, f.severity.value) for f in found] == [(_line(body, "baseline = DDP("), "warning")]


def test_twin_a_branch_the_functions_own_constant_takes_is_an_error(tmp_path):
    body = PHASE.replace("START", "1")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")
    assert [(f.location.line, f.severity.value) for f in found] == [(_line(body, "baseline = DDP("), "error")]
