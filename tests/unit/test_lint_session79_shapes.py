"""Shapes from session 79 (holdout 110's reading after its unread score), each with its twin, in
our own words."""

from __future__ import annotations

import textwrap

import pytest

from ddpdoctor.lint.fix.plan import lint_texts, plan
from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# -------------------------------------------------- the else of a helper true past group guards
# DeiT's `is_dist_avail_and_initialized()` (`if not dist.is_initialized(): return False` ...
# `return True`) picks the sampler; its `else:` is the run without a process group, where a
# shuffling loader without a sampler is right
HELPER_SIDE = """import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def is_dist_avail_and_initialized():
    if not dist.is_available():
        return False
    if not dist.is_initialized():
        return False
    return True


def make_loader(ds, use):
    if TEST:
        loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds, shuffle=True))
    else:
        loader = DataLoader(ds, batch_size=8, shuffle=True)
    return loader


def main(use=True):
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    loader = make_loader(TensorDataset(torch.randn(64, 4)), use)
    for epoch in range(3):
        if hasattr(loader.sampler, "set_epoch"):
            loader.sampler.set_epoch(epoch)
        for (x,) in loader:
            model(x).sum().backward()


main()
"""


@pytest.mark.parametrize("name", ["is_dist_avail_and_initialized", "group_ready"])
def test_the_else_of_a_helper_true_past_group_guards_is_the_one_process_run(tmp_path, name):
    # (read from its body, whatever it is called)
    script = HELPER_SIDE.replace("TEST", f"{name}()").replace("def is_dist_avail_and_initialized", f"def {name}")
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP802") == []


def test_its_twin_the_else_of_a_plain_switch_is_still_distributed(tmp_path):
    script = HELPER_SIDE.replace("TEST", "len(ds) > 32")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP802")
    assert [f.location.line for f in found] == [_line(script, "loader = DataLoader(ds, batch_size=8, shuffle=True)")]


# -------------------------------------------------- an element of a helper's (rank, world) pair
# mmcv's `get_dist_info()` hands back `rank, world_size` (`0, 1` without a group);
# `is_main_process()` is `get_dist_info()[0] == 0`: a save under it is rank 0's
PAIR = """import torch
import torch.distributed as dist


def get_dist_info():
    if dist.is_available() and dist.is_initialized():
        rank = dist.get_rank()
        world_size = dist.get_world_size()
    else:
        rank = 0
        world_size = 1
    return rank, world_size


def is_main_process():
    return get_dist_info()[INDEX] == 0


def main():
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    for step in range(10):
        model(torch.randn(2, 4)).sum().backward()
        if is_main_process():
            torch.save(model.module.state_dict(), "last.pt")


main()
"""


def test_an_element_of_a_helpers_rank_pair_is_a_rank_test(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": PAIR.replace("INDEX", "0")}), "DDP806") == []


def test_its_twin_the_world_size_element_is_no_rank_test(tmp_path):
    script = PAIR.replace("INDEX", "1")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP806")
    assert [f.location.line for f in found] == [_line(script, "torch.save(")]


# -------------------------------------------------- an author's absolute folder, found here
# `sys.path.append("/home/someone/video-ssl/utils")` on the author's machine: this checkout's
# `utils/` holds the module the script imports (`from loaders import ...`)
ABSOLUTE_SCRIPT = """import sys
sys.path.append("/home/someone/video-ssl/utils")
import torch
import torch.distributed as dist
from loaders import make_loader


def main():
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    loader = make_loader()
    for epoch in range(3):
        for (x,) in loader:
            model(x).sum().backward()


main()
"""
LOADERS = """import torch
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def make_loader():
    ds = TensorDataset(torch.randn(64, 4))
    sampler = DistributedSampler(ds, shuffle=True)
    return DataLoader(ds, batch_size=8, sampler=sampler)
"""


def test_an_authors_absolute_folder_is_this_checkouts_folder_of_that_name(tmp_path):
    files = {"experiments/pretrain.py": ABSOLUTE_SCRIPT, "utils/loaders.py": LOADERS}
    found = _codes(lint_tree(tmp_path, files, script="experiments/pretrain.py"), "DDP804")
    assert [(f.location.file.endswith("utils/loaders.py"), f.location.line) for f in found] == \
        [(True, _line(LOADERS, "sampler ="))]


def test_its_twin_a_folder_holding_no_imported_module_is_not_taken(tmp_path):
    # (`utils/` here holds another module: the author's folder is not this one, and the checkout's
    # root, which holds the module, is read instead)
    files = {"experiments/pretrain.py": ABSOLUTE_SCRIPT, "utils/other.py": "X = 1\n", "loaders.py": LOADERS}
    found = _codes(lint_tree(tmp_path, files, script="experiments/pretrain.py"), "DDP804")
    assert [(f.location.file.endswith("/loaders.py") and "utils" not in f.location.file, f.location.line)
            for f in found] == [(True, _line(LOADERS, "sampler ="))]


# -------------------------------------------------- a builder a store_true flag picks, not given
# `if args.big: build = build_big ... else: build = build_small`, then `build(...)`: with no
# launch giving --big the run builds the small loader, whose sampler is right
PICKED = """import argparse
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def build_big(ds):
    return DataLoader(ds, batch_size=8, shuffle=True)


def build_small(ds):
    return DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds, shuffle=True))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--big", action="store_true")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    if args.big:
        build = build_big
    else:
        build = build_small
    loader = build(TensorDataset(torch.randn(64, 4)))
    for epoch in range(3):
        loader.sampler.set_epoch(epoch)
        for (x,) in loader:
            model(x).sum().backward()


main()
"""


def test_a_builder_only_an_unset_flag_picks_is_not_the_runs(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": PICKED}), "DDP802") == []


def test_its_twin_a_launch_that_gives_the_flag_builds_it(tmp_path):
    files = {"train.py": PICKED, "run.sh": "torchrun --nproc_per_node 2 train.py --big\n"}
    found = _codes(lint_tree(tmp_path, files), "DDP802")
    assert [f.location.line for f in found] == [_line(PICKED, "return DataLoader(ds, batch_size=8, shuffle=True)")]


# -------------------------------------------------- Hydra's instantiate in a module beside the script
# the script is the Hydra app (`@hydra.main`), `from trainer import *` brings the Trainer that
# runs `instantiate(cfg.data.trainset)`; the config group names the dataset class, whose
# `__getitem__` draws its crops: its workers are seeded alike on every rank
HYDRA_SCRIPT = """import hydra
from trainer import *


@hydra.main(config_path="configs", config_name="config", version_base="1.2")
def main(cfg):
    Trainer(cfg).fit()


if __name__ == "__main__":
    main()
"""
HYDRA_TRAINER = """import os
import random
import torch
import torch.distributed as dist
from hydra.utils import instantiate
from torch.utils.data import DataLoader, DistributedSampler


class Trainer:
    def __init__(self, cfg):
        self.cfg = cfg
        dist.init_process_group("gloo")
        self.rank = int(os.environ["LOCAL_RANK"])
        torch.manual_seed(SEED)
        random.seed(SEED)
        self.net = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
        data = instantiate(cfg.data.trainset)
        self.sampler = DistributedSampler(data, shuffle=True)
        self.loader = DataLoader(data, batch_size=2, sampler=self.sampler, num_workers=4)

    def fit(self):
        for epoch in range(3):
            self.sampler.set_epoch(epoch)
            for x in self.loader:
                self.net(x).sum().backward()
"""
HYDRA_FILES = {
    "configs/config.yaml": "defaults:\n  - data: toy\n  - _self_\nmanual_seed: 1\n",
    "configs/data/toy.yaml": "trainset:\n  _target_: datasets.Crops\n  size: 8\n",
    "datasets/__init__.py": "from .crops import Crops\n",
    "datasets/crops.py": """import random
import torch
from torch.utils.data import Dataset


class Crops(Dataset):
    def __init__(self, size):
        self.size = size

    def __len__(self):
        return 64

    def __getitem__(self, i):
        x = torch.randn(4, self.size)
        at = random.randint(0, self.size - 1)
        return x[:, at]
""",
}


def test_a_dataset_the_config_names_for_a_helper_modules_instantiate_is_read(tmp_path):
    files = {"train.py": HYDRA_SCRIPT, "trainer.py": HYDRA_TRAINER.replace("SEED", "cfg.manual_seed"),
             **HYDRA_FILES}
    found = _codes(lint_tree(tmp_path, files), "DDP808")
    assert [(f.location.file.endswith("trainer.py"), f.location.line) for f in found] == \
        [(True, _line(HYDRA_TRAINER, "self.loader = DataLoader("))]


def test_its_twin_seeded_with_the_rank_stays_quiet(tmp_path):
    files = {"train.py": HYDRA_SCRIPT, "trainer.py": HYDRA_TRAINER.replace("SEED", "cfg.manual_seed + self.rank"),
             **HYDRA_FILES}
    assert _codes(lint_tree(tmp_path, files), "DDP808") == []


# -------------------------------------------------- a lone set_epoch in a helper, fixed in the loop
# the finding points at the lone call (in resume()); the fix still finds the epoch loop where the
# sampler is made
LONE = """\
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def resume(loader):
    loader.sampler.set_epoch(3)


def main():
    dist.init_process_group("gloo")
    ds = TensorDataset(torch.randn(64, 4))
    sampler = DistributedSampler(ds, shuffle=True)
    loader = DataLoader(ds, batch_size=8, sampler=sampler)
    model = DDP(torch.nn.Linear(4, 1))
    resume(loader)
    for epoch in range(3):
        for (x,) in loader:
            model(x).sum().backward()


main()
"""


def test_a_lone_set_epoch_in_a_helper_is_pointed_at_and_fixed_where_the_sampler_lives(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(LONE)
    found = [f for f in lint_texts(str(path), {}, set())[0] if f.code == "DDP804"]
    assert [f.location.line for f in found] == [_line(LONE, "loader.sampler.set_epoch(3)")]
    fixes = plan([str(path)], set())
    assert fixes.fixes, fixes.lines()
    assert "    for epoch in range(3):\n        sampler.set_epoch(epoch)\n" in fixes.new[path.resolve()]
    quiet = textwrap.dedent(fixes.new[path.resolve()])
    path.write_text(quiet)
    assert [f for f in lint_texts(str(path), {}, set())[0] if f.code == "DDP804"] == []


# -------------------------------------------------- a function in a table read two keys deep
# `LOADERS["video"] = video_loader` beside `LOADERS["clips"] = {"train": ..., "test": ...}`, read
# as `LOADERS[kind]["test"](args)`: a function is no table to subscript again, so the plain
# loader it builds is not what that read calls
TABLE = """import argparse
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def clips_train(args):
    ds = TensorDataset(torch.randn(64, 4))
    return DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds, shuffle=True))


def clips_test(args):
    ds = TensorDataset(torch.randn(16, 4))
    return DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds, shuffle=False))


def video_loader(args):
    ds = TensorDataset(torch.randn(16, 4))
    return DataLoader(ds, batch_size=8, shuffle=True)


LOADERS = {}
LOADERS["clips"] = {"train": clips_train, "test": clips_test}
LOADERS["video"] = video_loader


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kind", default="clips")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    train = READ
    test = LOADERS[args.kind]["test"](args)
    for epoch in range(3):
        for (x,) in train:
            model(x).sum().backward()
        for (x,) in test:
            model(x)


main()
"""


def test_a_function_in_a_table_is_not_what_a_two_key_read_calls(tmp_path):
    script = TABLE.replace("READ", 'LOADERS[args.kind]["train"](args)')
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP802") == []


def test_its_twin_a_one_key_read_calls_it(tmp_path):
    script = TABLE.replace("READ", 'LOADERS["video"](args)')
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP802")
    assert [f.location.line for f in found] == [_line(script, "return DataLoader(ds, batch_size=8, shuffle=True)")]


# -------------------------------------------------- a trainer's field set to the wrapper's module
# `self.model = model.module` in `__init__` (handed the DDP model), then `self.model(x)` in its
# step: the module's own forward, whose backward all-reduces nothing
FIELD = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, model, opt):
        self.model = HELD
        self.opt = opt

    def train(self, batches):
        for x in batches:
            self.opt.zero_grad()
            loss = self.model(x).pow(2).mean()
            loss.backward()
            self.opt.step()


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1)).train([torch.randn(2, 4)] * 5)


main()
"""


def test_a_field_holding_the_wrappers_module_called_in_the_step_is_ddp810(tmp_path):
    script = FIELD.replace("HELD", "model.module")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP810")
    assert [f.location.line for f in found] == [_line(script, "loss.backward()")]


def test_its_twin_a_field_holding_the_wrapper_stays_quiet(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": FIELD.replace("HELD", "model")}), "DDP810") == []
