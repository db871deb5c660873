"""Shapes from session 47: a function reached through `functools.partial` (a name bound to one,
or a helper that returns one), with the arguments the partial bound carried into it. Each with
its twin, in our own words."""

from __future__ import annotations

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
