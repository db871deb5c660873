"""Shapes from session 61 (holdout 76), each with its twin, in our own words."""

from __future__ import annotations

import ast
import textwrap

from ddpdoctor.lint import reaching
from ddpdoctor.lint.nodes import walk
from tests.unit.test_lint_session39_shapes import lint_tree


def _codes(found, code):
    return [f for f in found if f.code == code]


def _line(body: str, needle: str) -> int:
    """The line of the first line holding needle, as lint_tree writes the body."""
    lines = textwrap.dedent(body).lstrip("\n").splitlines()
    return next(i for i, line in enumerate(lines, 1) if needle in line)


# -------------------------------------------------- a counter resumed from a checkpoint, stepped by rank 0
# every rank sets `step` from the checkpoint it loads (one item of the loader's tuple) or from 0;
# only rank 0 steps it on: rank 0 leaves the loop while the others go on into the next backward
RESUMED = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train(loader, path, num_steps):
    rank = dist.get_rank() if dist.is_initialized() else None
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    if path is not None:
        model, opt, step = load(path, model, opt)
    else:
        step = 0
    if rank is not None:
        model = DDP(model)
    while step < num_steps:
        for x in loader:
            model(x).sum().backward()
            opt.step()
            if step >= num_steps:
                break
{STEP}


def load(path, model, opt):
    state = torch.load(path)
    model.load_state_dict(state["model"])
    return model, opt, state["step"]


if __name__ == "__main__":
    dist.init_process_group("gloo")
    train([torch.randn(2, 4)], None, 10)
"""


def test_a_resumed_counter_stepped_on_rank_0_only_decides_for_every_rank(tmp_path):
    step = "            if not rank:\n                step += 1"
    body = RESUMED.replace("{STEP}", step)
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP809")
    assert found and all("`step`" in f.message for f in found)
    assert _line(body, "if step >= num_steps:") in {f.location.line for f in found}


def test_twin_a_resumed_counter_stepped_on_every_rank_decides_nothing(tmp_path):
    step = "            step += 1"
    assert not _codes(lint_tree(tmp_path, {"train.py": RESUMED.replace("{STEP}", step)}), "DDP809")


# -------------------------------------------------- a rank-local flag read only beside a setting
# `if step >= steps or (config.EARLY_STOPPING and stop): break` with `stop` set by rank 0: the
# flag decides only where the setting turns early stopping on - a warning that says so; where
# the launch's options settle it off, the flag decides nothing
GATED = """
import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
import config


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--early_stop", action="store_true")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DDP(torch.nn.Linear(4, 1))
    stop, best, stale = False, None, 0
    for step in range(1000):
        model(torch.randn(2, 4)).sum().backward()
        if rank == 0:
            loss = float(torch.rand(1))
            if best is None or loss < best:
                best, stale = loss, 0
            else:
                stale += 1
                stop = stale > 5
        if {TEST}:
            break


main()
"""


def test_a_rank_local_flag_beside_a_setting_is_a_warning_naming_the_setting(tmp_path):
    files = {"train.py": GATED.replace("{TEST}", "config.EARLY_STOPPING and stop"),
             "config.py": "EARLY_STOPPING = True\n"}
    found = _codes(lint_tree(tmp_path, files), "DDP809")
    assert len(found) == 1 and found[0].severity.value == "warning"
    assert "`config.EARLY_STOPPING` holds" in found[0].message


def test_twin_a_rank_local_flag_beside_an_option_left_off_decides_nothing(tmp_path):
    files = {"train.py": GATED.replace("{TEST}", "args.early_stop and stop"),
             "config.py": "EARLY_STOPPING = True\n"}
    assert not _codes(lint_tree(tmp_path, files), "DDP809")


def test_twin_the_flag_alone_is_still_an_error(tmp_path):
    files = {"train.py": GATED.replace("{TEST}", "stop"), "config.py": "EARLY_STOPPING = True\n"}
    found = _codes(lint_tree(tmp_path, files), "DDP809")
    assert len(found) == 1 and found[0].severity.value == "error"


# -------------------------------------------------- a switch a configurator sets, and FSDP or DDP by it
# nanoGPT's way: `use_fsdp = False` at the top, `exec(open("configurator.py").read())` lets
# `--use_fsdp=True` change it; the model is FSDP on that side, DDP on the other. A rank-0
# evaluation forward and full state dict hang only where FSDP is chosen: warnings saying so
SWITCHED = """
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, StateDictType
from torch.nn.parallel import DistributedDataParallel as DDP

use_fsdp = {DEFAULT}
{CONFIGURATOR}
dist.init_process_group("nccl")
master_process = dist.get_rank() == 0
model = torch.nn.Linear(4, 4)
if use_fsdp:
    model = FSDP(model)
else:
    model = DDP(model)


@torch.no_grad()
def estimate_loss():
    return model(torch.randn(2, 4)).mean()


for it in range(100):
    model(torch.randn(2, 4)).sum().backward()
    if it % 10 == 0 and master_process:
        print(estimate_loss())
        if use_fsdp:
            with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):
                state = model.state_dict()
            torch.save(state, "ckpt.pt")
"""


def test_fsdp_chosen_by_a_configurator_switch_is_a_warning_at_each_collective(tmp_path):
    body = SWITCHED.replace("{DEFAULT}", "False").replace("{CONFIGURATOR}", 'exec(open("configurator.py").read())')
    found = _codes(lint_tree(tmp_path, {"train.py": body, "configurator.py": "pass\n"}), "DDP801")
    lines = {f.location.line: f for f in found}
    forward, state = _line(body, "return model(torch.randn"), _line(body, "state = model.state_dict()")
    assert set(lines) == {forward, state}
    assert all(f.severity.value == "warning" for f in found)
    assert "where it holds the FSDP model" in lines[forward].message
    assert "`use_fsdp` is true on the way" in lines[state].message


def test_twin_an_fsdp_model_on_every_way_is_an_error(tmp_path):
    body = SWITCHED.replace("{DEFAULT}", "True").replace("{CONFIGURATOR}", "").replace(
        "else:\n    model = DDP(model)\n", "")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")
    forward = [f for f in found if f.location.line == _line(body, "return model(torch.randn")]
    assert len(forward) == 1 and forward[0].severity.value == "error"


# -------------------------------------------------- a loop counter past a bound is no assumption
# `if is_main and step % 2000 == 0 and step > 0:` inside `for step in range(n)`: `step > 0` holds
# on every pass after the first, on every rank alike
COUNTED = """
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def main(steps, {EXTRA}):
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    model = FSDP(torch.nn.Linear(4, 4))
    for step in range(steps):
        model(torch.randn(2, 4)).sum().backward()
        if rank == 0 and step % 100 == 0 and {BOUND} > 0:
            with FSDP.summon_full_params(model):
                print(model.weight.sum())


if __name__ == "__main__":
    main(1000, 0)
"""


def test_a_loop_counter_past_zero_is_no_assumption(tmp_path):
    body = COUNTED.replace("{EXTRA}", "unused").replace("{BOUND}", "step")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")
    assert len(found) == 1 and found[0].severity.value == "error"


def test_twin_a_parameter_past_zero_is_an_assumption(tmp_path):
    body = COUNTED.replace("{EXTRA}", "warm").replace("{BOUND}", "warm")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")
    assert len(found) == 1 and found[0].severity.value == "warning"


# -------------------------------------------------- a dataset keeps the transform it is handed
# `def __init__(self, ..., transforms=transform)` / `self.transforms = transforms`, applied in
# `__getitem__`: the default is a local function drawing from `random`, so the workers draw
DATASET = """
import torch
from torch.utils.data import Dataset
from data.augment import transform


class Frames(Dataset):
    def __init__(self, n, transforms=transform):
        self.n = n
        self.transforms = transforms

    def __getitem__(self, i):
        x = torch.zeros(4)
        if self.transforms:
            x = self.transforms(x)
        return x

    def __len__(self):
        return self.n
"""
AUGMENT_DRAWS = """
import random


def transform(x):
    return x.flip(0) if random.random() < 0.5 else x
"""
AUGMENT_PLAIN = """
def transform(x):
    return x * 2
"""
SEEDED = """
import random
import torch
import torch.distributed as dist
import data
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(42)
    random.seed(42)
    ds = {MAKE}(100)
    loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds), num_workers=4)
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(3):
        loader.sampler.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    main()
"""


def _seeded(tmp_path, augment, make):
    return _codes(lint_tree(tmp_path, {
        "train.py": SEEDED.replace("{MAKE}", make), "data/__init__.py": "from .frames import Frames\n",
        "data/frames.py": DATASET, "data/augment.py": augment}), "DDP808")


def test_a_dataset_keeping_a_drawing_transform_it_is_handed_by_default_draws(tmp_path):
    assert len(_seeded(tmp_path, AUGMENT_DRAWS, "data.Frames")) == 1


def test_twin_a_dataset_keeping_a_plain_transform_draws_nothing(tmp_path):
    assert not _seeded(tmp_path, AUGMENT_PLAIN, "data.Frames")


def test_a_dataset_built_through_the_package_name_is_judged_by_its_class(tmp_path):
    # `data.frames.Frames(...)`: the constructor the name resolves to is the class built
    assert len(_seeded(tmp_path, AUGMENT_DRAWS, "data.frames.Frames")) == 1


# -------------------------------------------------- a cache loaded in a try, built in its except
# `try: w = torch.load(p)` / `except FileNotFoundError: ...; torch.save(w, p)` is the cache the
# rule tells as such (every rank of a first run builds and writes it), not a checkpoint's race
CACHED = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

WEIGHTS = "weights.pt"


def class_weights():
    {BODY}


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 3))
    w = class_weights()
    for _ in range(10):
        out = model(torch.randn(2, 4))
        torch.nn.functional.cross_entropy(out, torch.tensor([0, 1]), w).backward()


if __name__ == "__main__":
    main()
"""
TRY_CACHE = """try:
        return torch.load(WEIGHTS)
    except FileNotFoundError:
        w = torch.ones(3)
        torch.save(w, WEIGHTS)
        return w"""
PLAIN_WRITE = """w = torch.ones(3)
    torch.save(w, WEIGHTS)
    return w"""


def test_a_cache_loaded_in_a_try_and_built_in_its_except_is_told_as_a_cache(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": CACHED.replace("{BODY}", TRY_CACHE)}), "DDP806")
    assert len(found) == 1 and "a cache of data" in found[0].message


def test_twin_a_plain_write_is_told_as_every_rank_writing(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": CACHED.replace("{BODY}", PLAIN_WRITE)}), "DDP806")
    assert len(found) == 1 and "a cache of data" not in found[0].message


# -------------------------------------------------- the reaching index, built in one walk
NESTED = """
def f(a, xs):
    import os
    total = 0
    for x in xs:
        if x > a:
            y = x
            while y:
                y -= 1
                total += y
        else:
            try:
                z = os.fspath(x)
            except TypeError:
                z = None
            finally:
                w = 1
        def inner(q):
            r = q + 1
            return r
    class K:
        v = 2
    with open(a) as fh:
        del total
    return inner
"""


def test_the_reaching_index_matches_a_walk_of_every_statement():
    """Each node's innermost block statement and each statement's bound names, as walking every
    block statement's subtree (the index's definition) gives them."""
    root = ast.parse(textwrap.dedent(NESTED)).body[0]
    index = reaching._Index(root)
    expected_holder: dict[int, ast.stmt] = {}
    expected_bound: dict[int, frozenset] = {}

    def visit(owner):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(owner, field, None)
            if not (isinstance(block, list) and block and isinstance(block[0], ast.stmt)):
                continue
            for stmt in block:
                for node in walk(stmt):
                    expected_holder[id(node)] = stmt
                expected_bound[id(stmt)] = reaching._bound_names(stmt)
                if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    visit(stmt)

    visit(root)
    singletons = {id(n) for n in walk(root) if isinstance(n, (ast.operator, ast.boolop, ast.unaryop, ast.cmpop))}
    assert {k: id(v) for k, v in index.holder.items() if k not in singletons} == \
        {k: id(v) for k, v in expected_holder.items() if k not in singletons}
    assert index.bound == expected_bound
    assert "r" in index.bound[id(root.body[2])] and "fh" in index.bound[id(root.body[4])]


# -------------------------------------------------- an epoch only rank 0 advances
# `if not rank: epoch += 1` after each pass, `sampler.set_epoch(epoch)` on every rank: the other
# ranks' epoch never moves, so their shuffle is the same every epoch
EPOCHS = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    data = TensorDataset(torch.randn(64, 4))
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    model = DDP(torch.nn.Linear(4, 1))
    epoch, step = 0, 0
    while step < 100:
        sampler.set_epoch(epoch)
        for (x,) in loader:
            model(x).sum().backward()
            step += 1
{ADVANCE}


if __name__ == "__main__":
    main()
"""


def test_an_epoch_only_rank_0_advances_pins_the_other_ranks_shuffle(tmp_path):
    body = EPOCHS.replace("{ADVANCE}", "        if not rank:\n            epoch += 1")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP804")
    assert len(found) == 1 and "advanced only under `not (rank)`" in found[0].message
    assert found[0].location.line == _line(body, "sampler.set_epoch(epoch)")


def test_twin_an_epoch_every_rank_advances_reshuffles(tmp_path):
    body = EPOCHS.replace("{ADVANCE}", "        epoch += 1")
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP804")


# -------------------------------------------------- buffers a config builds
# the blocks add a BatchNorm only `if config.NORMALIZATION == "batch":` (a layer norm by default):
# a rank-0 evaluation forward through the DDP model broadcasts buffers only where the config
# chooses batch norm - a warning that names the test; built on every way, an error
NORMED = """
import torch
import config


class Block(torch.nn.Sequential):
    def __init__(self, n):
        layers = [torch.nn.Linear(n, n)]
{NORM}
        super().__init__(*layers)
"""
NORM_BY_CONFIG = """\
        if config.NORMALIZATION == "batch":
            layers.append(torch.nn.BatchNorm1d(n))
        else:
            layers.append(torch.nn.LayerNorm(n))"""
NORM_ALWAYS = """\
        layers.append(torch.nn.BatchNorm1d(n))"""
EVALUATED = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from blocks import Block


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DDP(Block(4))
    for step in range(100):
        model(torch.randn(8, 4)).sum().backward()
        if rank == 0 and step % 10 == 0:
            print(model(torch.randn(8, 4)).mean())


if __name__ == "__main__":
    main()
"""


def test_buffers_only_a_config_builds_make_the_rank_0_forward_a_warning(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": EVALUATED, "config.py": 'NORMALIZATION = "layer"\n',
                                        "blocks.py": NORMED.replace("{NORM}", NORM_BY_CONFIG)}), "DDP801")
    assert len(found) == 1 and found[0].severity.value == "warning"
    assert "config.NORMALIZATION == 'batch'" in found[0].message


def test_twin_buffers_built_on_every_way_make_it_an_error(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": EVALUATED, "config.py": 'NORMALIZATION = "layer"\n',
                                        "blocks.py": NORMED.replace("{NORM}", NORM_ALWAYS)}), "DDP801")
    assert len(found) == 1 and found[0].severity.value == "error"


# -------------------------------------------------- a dump on the way out that waits for everyone
# `if not math.isfinite(loss.item()):` dumps `all_gather(x)` and exits 1: the rank that takes it
# waits alone in the gather (the others are in their backward) before it can stop the job
DUMPED = """
import math
import sys
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def gather(x):
    out = [torch.zeros_like(x) for _ in range(dist.get_world_size())]
    dist.all_gather(out, x)
    return torch.cat(out)


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    for _ in range(100):
        x = torch.randn(8, 4)
        loss = model(x).mean()
        if not math.isfinite(loss.item()):
{DUMP}
            sys.exit(1)
        loss.backward()


if __name__ == "__main__":
    main()
"""


def test_a_collective_dump_before_a_failing_exit_on_a_rank_local_value(tmp_path):
    body = DUMPED.replace("{DUMP}", '            torch.save(gather(x), "nan.pt")')
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP809")
    assert len(found) == 1 and "before it stops the job" in found[0].message
    assert "waits alone" in found[0].message


def test_twin_a_failing_exit_with_a_local_dump_stops_the_job_cleanly(tmp_path):
    body = DUMPED.replace("{DUMP}", '            torch.save(x, "nan.pt")')
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP809")


# -------------------------------------------------- a signal flag kept on an object
# `signal.signal(SIGTERM, self._handle)` where the method sets `self._requested = True`, and the
# loop asks `handler.should_stop()` every step before a collective save and a break: each rank
# runs its handler at its own step
SIGNALLED = """
import signal
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Stopper:
    def __init__(self):
        self._requested = False

    def register(self):
{REGISTER}

    def _handle(self, signum, frame):
        self._requested = True

    def should_stop(self):
        return self._requested


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    stopper = Stopper()
    stopper.register()
    for step in range(1000):
        model(torch.randn(8, 4)).sum().backward()
        if stopper.should_stop():
            dist.barrier()
            break


if __name__ == "__main__":
    main()
"""


def test_a_signal_flag_an_object_keeps_decides_at_each_ranks_own_step(tmp_path):
    body = SIGNALLED.replace("{REGISTER}", "        signal.signal(signal.SIGTERM, self._handle)")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP809")
    assert len(found) == 1 and "signal handler" in found[0].message
    assert found[0].location.line == _line(body, "if stopper.should_stop():")


def test_twin_the_same_object_no_signal_sets_decides_nothing(tmp_path):
    body = SIGNALLED.replace("{REGISTER}", "        pass")
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP809")


# -------------------------------------------------- a loss check that shares its verdict
# `if not detector.check(loss.item()):` where the check all-reduces a flag made of the value and
# answers from the reduced flag: every rank skips together; without the all-reduce, each its own
CHECKED = """
import math
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Detector:
    def check(self, value):
        bad = not math.isfinite(value)
{SHARE}


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    detector = Detector()
    for _ in range(100):
        loss = model(torch.randn(8, 4)).mean()
        if not detector.check(loss.item()):
            continue
        loss.backward()


if __name__ == "__main__":
    main()
"""
SHARED_CHECK = """\
        flag = torch.tensor([1.0 if bad else 0.0])
        dist.all_reduce(flag)
        return flag.item() == 0"""
LOCAL_CHECK = """\
        return not bad"""


def test_a_check_that_all_reduces_its_flag_decides_alike_on_every_rank(tmp_path):
    body = CHECKED.replace("{SHARE}", SHARED_CHECK)
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP809")


def test_twin_a_check_of_the_ranks_own_value_decides_apart(tmp_path):
    body = CHECKED.replace("{SHARE}", LOCAL_CHECK)
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP809")
    assert len(found) == 1 and found[0].location.line == _line(body, "if not detector.check(")


# -------------------------------------------------- the DDP class bound to a local name first
# `wrapper = torch.nn.parallel.DistributedDataParallel` then `model = wrapper(model, ...)`: a DDP
# model all the same (its accumulation without no_sync all-reduces every micro-step)
ALIASED = """
import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    wrapper = {WRAPPER}
    model = wrapper(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for it in range(100):
        model(torch.randn(8, 4)).mean().backward()
        if (it + 1) % 4 == 0:
            opt.step()
            opt.zero_grad()


if __name__ == "__main__":
    main()
"""


def test_a_ddp_class_bound_to_a_local_name_builds_a_ddp_model(tmp_path):
    body = ALIASED.replace("{WRAPPER}", "torch.nn.parallel.DistributedDataParallel")
    assert len(_codes(lint_tree(tmp_path, {"train.py": body}), "DDP805")) == 1


def test_twin_data_parallel_bound_to_a_local_name_is_no_ddp_model(tmp_path):
    body = ALIASED.replace("{WRAPPER}", "torch.nn.DataParallel")
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP805")


# -------------------------------------------------- a factory that returns a model builder
# `Model()()`: the factory hands back `lambda: Wrapper([...])`, called at once; the modules the
# builder's body makes hold the buffers a rank-0 forward through the DDP model broadcasts
BUILT = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Wrapper(torch.nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.layers = torch.nn.ModuleList(layers)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def Model():
    return lambda: Wrapper([torch.nn.Linear(4, 4), {LAYER}])


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DDP(Model()())
    for step in range(100):
        model(torch.randn(8, 4)).sum().backward()
        if rank == 0 and step % 10 == 0:
            print(model(torch.randn(8, 4)).mean())


if __name__ == "__main__":
    main()
"""


def test_a_builder_a_factory_returns_is_followed_for_buffers(tmp_path):
    body = BUILT.replace("{LAYER}", "torch.nn.BatchNorm1d(4)")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")
    assert len(found) == 1 and found[0].location.line == _line(body, "print(model(")


def test_twin_a_builder_without_buffers_broadcasts_nothing(tmp_path):
    body = BUILT.replace("{LAYER}", "torch.nn.ReLU()")
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")


# -------------------------------------------------- modules handed in a list, built through a package
# `pkg.model.Wrapper([torch.nn.Conv1d(...), pkg.model.Encoder()])`: the class each name reaches
# through the package's imports is what is built, and each module of the list handed in counts
PACKAGED = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
import pkg


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DDP(pkg.model.Wrapper([torch.nn.Linear(4, 4), pkg.model.Encoder()]))
    for step in range(100):
        model(torch.randn(8, 4)).sum().backward()
        if rank == 0 and step % 10 == 0:
            print(model(torch.randn(8, 4)).mean())


if __name__ == "__main__":
    main()
"""
PACKAGE_MODEL = """
import torch


class Wrapper(torch.nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.layers = torch.nn.ModuleList(layers)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
{BUFFER}

    def forward(self, x):
        return x
"""


def _packaged(tmp_path, buffer):
    return _codes(lint_tree(tmp_path, {
        "train.py": PACKAGED, "pkg/__init__.py": "from . import model\n",
        "pkg/model.py": PACKAGE_MODEL.replace("{BUFFER}", buffer)}), "DDP801")


def test_a_buffer_of_a_module_handed_in_a_list_through_a_package_counts(tmp_path):
    assert len(_packaged(tmp_path, '        self.register_buffer("pos", torch.zeros(4))')) == 1


def test_twin_the_same_modules_without_a_buffer_broadcast_nothing(tmp_path):
    assert not _packaged(tmp_path, "        self.scale = 2.0")


def test_twin_gated_norms_beside_a_library_model_stay_an_error(tmp_path):
    # a torchvision model built beside the gated blocks may hold its own buffers: no setting
    # of the script's code decides those
    body = EVALUATED.replace("model = DDP(Block(4))",
                             "backbone = torchvision.models.resnet18()\n    model = DDP(Block(4))").replace(
        "import torch\n", "import torch\nimport torchvision\n", 1)
    found = _codes(lint_tree(tmp_path, {"train.py": body, "config.py": 'NORMALIZATION = "layer"\n',
                                        "blocks.py": NORMED.replace("{NORM}", NORM_BY_CONFIG)}), "DDP801")
    assert len(found) == 1 and found[0].severity.value == "error"
