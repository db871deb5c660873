"""Shapes from session 78 (holdout 109's reading after its unread score), each with its twin, in
our own words."""

from __future__ import annotations

import pytest

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# -------------------------------------------------- submodules handed out by a package's star
# `from tools.utils import *` where tools/utils/__init__.py runs `from .seeding import *`: the
# package's attribute `seeding` (the submodule) comes along, so `seeding.fix_seed(7)` is the local
# helper, which seeds torch alike on every rank under a loader whose workers flip images
STAR_SCRIPT = """import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler
from tools.utils import *


class Flips(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        x = torch.randn(3, 8, 8)
        return torch.flip(x, [2]) if torch.rand(1).item() < 0.5 else x


def worker(rank, world):
    seeding.fix_seed(7)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    ds = Flips()
    loader = DataLoader(ds, batch_size=4, sampler=DistributedSampler(ds), num_workers=4)
    for epoch in range(3):
        loader.sampler.set_epoch(epoch)
        for x in loader:
            pass


if __name__ == "__main__":
    mp.spawn(worker, args=(2,), nprocs=2)
"""
STAR_PACKAGE = {"tools/__init__.py": "", "tools/utils/__init__.py": "from .seeding import *\n",
                "tools/utils/seeding.py": "import torch\n\n\ndef fix_seed(seed):\n    torch.manual_seed(seed)\n"}


def test_a_submodule_a_packages_star_hands_out_is_read_ddp808_sees_its_seeding(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": STAR_SCRIPT, **STAR_PACKAGE}), "DDP808")
    assert [f.location.line for f in found] == [_line(STAR_SCRIPT, "loader = DataLoader(")]


def test_its_twin_where_the_helper_is_handed_the_rank_stays_quiet(tmp_path):
    script = STAR_SCRIPT.replace("seeding.fix_seed(7)", "seeding.fix_seed(7 + rank)")
    assert _codes(lint_tree(tmp_path, {"train.py": script, **STAR_PACKAGE}), "DDP808") == []


# -------------------------------------------------- the module's own forward through a plain name
# `if args.dist: wrapped = DDP(net); model = wrapped.module` / `if not args.dist: model = net`, then
# a helper calls `model(x)`: on the distributed side the helper runs the module inside the wrapper,
# and its loss (a sum started at 0.0 over per-item terms) all-reduces nothing
BYPASS = """import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def fit(model, opt, batches):
    for x, y in batches:
        out = model(x)
        loss = 0.0
        for i, target in enumerate(y):
            pred = out[i]
            term = (pred - target).pow(2).mean()
            part = term * 0.5
            loss = loss + part
        loss = loss / len(y)
        opt.zero_grad()
        loss.backward()
        opt.step()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dist", type=int, default=1)
    args = parser.parse_args()
    net = torch.nn.Linear(8, 2)
    if args.dist:
        dist.init_process_group("gloo")
        wrapped = DistributedDataParallel(net)
        model = wrapped.module
    if not args.dist:
        model = net
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    fit(model, opt, [(torch.randn(4, 8), torch.randn(4, 2))] * 5)


if __name__ == "__main__":
    main()
"""


def test_a_helper_handed_the_wrappers_module_on_the_distributed_side_is_ddp810(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": BYPASS}), "DDP810")
    assert [(f.location.line, f.severity) for f in found] == [(_line(BYPASS, "loss.backward()"), "error")]


def test_its_twin_handed_the_wrapper_itself_stays_quiet(tmp_path):
    script = BYPASS.replace("model = wrapped.module", "model = wrapped")
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP810") == []


def test_a_name_bound_to_the_module_and_called_in_the_same_function_is_ddp810(tmp_path):
    script = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main():
    dist.init_process_group("gloo")
    wrapped = DistributedDataParallel(torch.nn.Linear(8, 2))
    raw = wrapped.module
    opt = torch.optim.SGD(wrapped.parameters(), lr=0.1)
    for _ in range(10):
        loss = raw(torch.randn(4, 8)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
"""
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP810")
    assert [f.location.line for f in found] == [_line(script, "loss.backward()")]
    quiet = script.replace("loss = raw(", "loss = wrapped(")
    assert _codes(lint_tree(tmp_path, {"train.py": quiet}), "DDP810") == []


# -------------------------------------------------- a skip flag read back from its all_reduce
# `skip = (~torch.isfinite(out)).any().item()` of the rank's own forward; under `if
# dist.is_initialized():` the flag goes through an all_reduce
# (MAX) and is read back, `skip = flag.item() > 0`: every rank tests the same verdict (the other
# side of that test is one process). Its twin tests the flag before it is shared.
READ_BACK = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    batches = [torch.randn(4, 8) for _ in range(20)]
    for step, x in enumerate(batches):
        out = model(x)
        skip = (~torch.isfinite(out)).any().item()
        if dist.is_initialized():
            flag = torch.tensor([1.0 if skip else 0.0])
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)
            skip = flag.item() > 0
        if skip:
            continue
        loss = out.pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
"""


def test_a_flag_read_back_from_its_all_reduce_before_the_test_is_every_ranks(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": READ_BACK}), "DDP809") == []


def test_its_twin_tested_before_it_is_shared_is_ddp809(tmp_path):
    script = READ_BACK.replace("""        if skip:
            continue
        loss""", """        loss""").replace("""        skip = (~torch.isfinite(out)).any().item()
""", """        skip = (~torch.isfinite(out)).any().item()
        if skip:
            continue
""")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP809")
    assert [f.location.line for f in found] == [_line(script, "if skip:")]


# -------------------------------------------------- a configargparse file sets the switch
# `parser.add_argument("-c", "--config", is_config_file=True, default="config/base.conf")`; the file
# says `ddp = True`, so the run seeds every rank alike under `if args.ddp:` and its loader's
# workers draw alike (DDP808); its twin's file says `ddp = false`
CONF_SCRIPT = """import configargparse
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Crops(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.randn(3, 8, 8)[:, :, torch.randint(0, 4, (1,)).item():]


def setup(rank, args):
    dist.init_process_group("gloo", rank=rank, world_size=args.gpu_num)
    torch.manual_seed(0)


def train(rank, args):
    if args.ddp:
        setup(rank, args)
    ds = Crops()
    if args.ddp:
        loader = DataLoader(ds, batch_size=4, sampler=DistributedSampler(ds), num_workers=4)
    else:
        loader = DataLoader(ds, batch_size=4, shuffle=True, num_workers=4)
    for epoch in range(2):
        if args.ddp:
            loader.sampler.set_epoch(epoch)
        for x in loader:
            pass


if __name__ == "__main__":
    parser = configargparse.ArgumentParser()
    parser.add_argument("-c", "--config", is_config_file=True, default="config/base.conf")
    parser.add_argument("--ddp", action="store_true")
    parser.add_argument("--gpu_num", type=int, default=1)
    args = parser.parse_known_args()[0]
    mp.spawn(train, args=(args,), nprocs=args.gpu_num)
"""
CONF = "# options\nname = crops\nddp = True\ngpu_num: 2\n"


def test_a_switch_a_configargparse_file_turns_on_reaches_the_seeding_ddp808(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": CONF_SCRIPT, "config/base.conf": CONF}), "DDP808")
    assert [f.location.line for f in found] == [_line(CONF_SCRIPT, "sampler=DistributedSampler(ds)")]


def test_its_twin_whose_file_leaves_the_switch_off_stays_quiet(tmp_path):
    conf = CONF.replace("ddp = True", "ddp = false")
    assert _codes(lint_tree(tmp_path, {"train.py": CONF_SCRIPT, "config/base.conf": conf}), "DDP808") == []


# -------------------------------------------------- options set by hand once parsed
# `args = parser.parse_args()`, then `args.accum = 1` and `args.source = "mixed"` in the main
# block before `train(args)`: every run steps each pass (no DDP805), and the builder's map-style
# fallback loader is never built (no DDP802); the twins set `args.accum = 2` and name the fallback
HAND_SET = """import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, IterableDataset


class Stream(IterableDataset):
    def __init__(self, shards):
        self.shards = shards

    def __iter__(self):
        source = iter(self.shards)
        for item in source:
            yield item


class Frames(Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, i):
        return torch.randn(8)


def make_loader(args):
    if args.source == "mixed":
        loader = DataLoader(Stream(args.shards), batch_size=4)
    else:
        loader = DataLoader(Frames(), batch_size=4)
    return loader


def train(args):
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, x in enumerate(make_loader(args)):
        loss = model(x).pow(2).mean() / args.accum
        loss.backward()
        if (step + 1) % args.accum == 0:
            opt.step()
            opt.zero_grad()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    args = parser.parse_args()
    args.accum = 1
    args.source = "mixed"
    args.shards = ["a.tar", "b.tar"]
    train(args)
"""


def test_options_set_by_hand_once_parsed_settle_the_accumulation_and_the_loader(tmp_path):
    found = lint_tree(tmp_path, {"train.py": HAND_SET})
    assert _codes(found, "DDP805") == [] and _codes(found, "DDP802") == []


def test_its_twins_a_count_of_two_and_the_fallback_named(tmp_path):
    counted = lint_tree(tmp_path, {"train.py": HAND_SET.replace("args.accum = 1", "args.accum = 2")})
    assert [f.location.line for f in _codes(counted, "DDP805")] == [_line(HAND_SET, "loss.backward()")]
    fallback = lint_tree(tmp_path, {"train.py": HAND_SET.replace('args.source = "mixed"', 'args.source = "frames"')})
    assert [f.location.line for f in _codes(fallback, "DDP802")] == [_line(HAND_SET, "DataLoader(Frames()")]


# -------------------------------------------------- a trainer and a loader builder a config names
# `instantiate(cfg["trainer"], args)` with `target: lib.trainers.shapes.ShapeTrainer`; the class
# derives from `base.BaseTrainer` (`from lib import base`), whose fit() reads the loaders a second
# config-named function builds (`target: lib.data.build_loaders`): a shuffling DistributedSampler,
# never given set_epoch, re-read every epoch (DDP804)
NAMED_SCRIPT = """import importlib
import sys

import torch.distributed as dist
import torch.multiprocessing as mp
import yaml


def instantiate(config, *args):
    module, name = config["target"].rsplit(".", 1)
    return getattr(importlib.import_module(module), name)(*args, **config.get("params", {}))


def worker(rank, cfg):
    dist.init_process_group("gloo", rank=rank, world_size=2)
    trainer = instantiate(cfg["trainer"], cfg)
    trainer.fit()


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        cfg = yaml.safe_load(f)
    mp.spawn(worker, args=(cfg,), nprocs=2)
"""
NAMED_FILES = {
    "config/shapes.yaml": "trainer:\n  target: lib.trainers.shapes.ShapeTrainer\n"
                          "dataset:\n  target: lib.data.build_loaders\n  params:\n    size: 64\n",
    "lib/trainers/shapes.py": "from lib import base\n\n\nclass ShapeTrainer(base.BaseTrainer):\n"
                              "    def step(self, x):\n        return self.model(x).pow(2).mean()\n",
    "lib/base.py": """import importlib

import torch
from torch.nn.parallel import DistributedDataParallel as DDP


class BaseTrainer:
    def __init__(self, cfg):
        self.cfg = cfg
        self.model = DDP(torch.nn.Linear(8, 1))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def fit(self):
        module, name = self.cfg["dataset"]["target"].rsplit(".", 1)
        train_dl, valid_dl = getattr(importlib.import_module(module), name)(**self.cfg["dataset"]["params"])
        for epoch in range(10):
            for x in train_dl:
                loss = self.step(x)
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
""",
    "lib/data.py": """import torch
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def build_loaders(size):
    train = TensorDataset(torch.randn(size, 8))
    valid = TensorDataset(torch.randn(size // 4, 8))
    train_dl = DataLoader(train, batch_size=4, sampler=DistributedSampler(train, shuffle=True))
    valid_dl = DataLoader(valid, batch_size=4, sampler=DistributedSampler(valid, shuffle=False))
    return train_dl, valid_dl
""",
}


def test_a_config_named_trainers_base_and_loader_builder_are_read_ddp804(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": NAMED_SCRIPT, **NAMED_FILES}), "DDP804")
    assert [(f.location.file.endswith("lib/data.py"), f.location.line) for f in found] == [
        (True, _line(NAMED_FILES["lib/data.py"], "train_dl = DataLoader("))]


def test_its_twin_whose_base_sets_the_epoch_stays_quiet(tmp_path):
    files = dict(NAMED_FILES)
    files["lib/base.py"] = files["lib/base.py"].replace(
        "            for x in train_dl:", "            train_dl.sampler.set_epoch(epoch)\n            for x in train_dl:")
    assert _codes(lint_tree(tmp_path, {"train.py": NAMED_SCRIPT, **files}), "DDP804") == []


# -------------------------------------------------- the rank handed at all, else the one process
# `is_main = (args.local_rank == 0) if args.local_rank != -1 else True`, as torch.distributed.launch
# hands --local_rank: a save under `if is_main and ...` is rank 0's; its twin saves outside it
MAIN_OR_ALONE = """import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int, default=-1)
parser.add_argument("--every", type=int, default=5)
args = parser.parse_args()
is_main = (args.local_rank == 0) if args.local_rank != -1 else True
if args.local_rank != -1:
    dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 4))
for epoch in range(10):
    model(torch.randn(2, 4)).sum().backward()
    if epoch != -1 and epoch % args.every == 0 and is_main:
        torch.save(model.state_dict(), f"model-ep{epoch}.pt")
"""
LAUNCH = "python -m torch.distributed.launch --nproc_per_node=2 train.py --every 2\n"


@pytest.mark.parametrize("flag", ["(args.local_rank == 0) if args.local_rank != -1 else True",
                                  "True if args.local_rank == -1 else (args.local_rank == 0)"])
def test_a_main_process_flag_that_is_true_only_without_a_launcher_guards_the_save(tmp_path, flag):
    script = MAIN_OR_ALONE.replace("(args.local_rank == 0) if args.local_rank != -1 else True", flag)
    assert _codes(lint_tree(tmp_path, {"train.py": script, "run.sh": LAUNCH}), "DDP806") == []


def test_its_twin_saving_outside_the_flag_is_ddp806(tmp_path):
    script = MAIN_OR_ALONE.replace(" and is_main:", ":")
    found = _codes(lint_tree(tmp_path, {"train.py": script, "run.sh": LAUNCH}), "DDP806")
    assert [f.location.line for f in found] == [_line(script, "torch.save(")]


def test_a_configargparse_file_with_one_huge_line_is_read_for_its_other_settings(tmp_path):
    # (a line of 200,000 spaces once cost a pattern quadratic time: it is skipped, the rest read)
    conf = CONF + "junk " + " " * 200_000 + "x\n"
    found = _codes(lint_tree(tmp_path, {"train.py": CONF_SCRIPT, "config/base.conf": conf}), "DDP808")
    assert [f.location.line for f in found] == [_line(CONF_SCRIPT, "sampler=DistributedSampler(ds)")]
