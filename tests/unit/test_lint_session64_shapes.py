"""Shapes from session 64 (holdout 84, read after its unread score), each with its twin, in our
own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line


# -------------------------------------------------- a reporter's set_epoch is not the sampler's
# the sampler's set_epoch runs once, in a resume helper before the loop; inside the epoch loop
# only a progress reporter of the script's own is told the epoch (it keeps it for its logs)
REPORTER = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class Progress:
    def __init__(self):
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch
FORWARD


def resume(path, model, loader):
    if path is None:
        return
    model.load_state_dict(torch.load(path))
    loader.sampler.set_epoch(7)


def main(path=None):
    dist.init_process_group("gloo")
    data = TensorDataset(torch.randn(64, 4))
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data, shuffle=True))
    model = DDP(torch.nn.Linear(4, 1))
    progress = Progress()
    resume(path, model, loader)
    for epoch in range(5):
        progress.set_epoch(epoch)
        for (x,) in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_a_reporter_told_the_epoch_does_not_set_the_sampler(tmp_path):
    body = REPORTER.replace("FORWARD", "")
    found = lint_tree(tmp_path, {"train.py": body})
    # (at the sampler's lone set_epoch call, in resume(): the line to move into the loop)
    assert [f.location.line for f in _codes(found, "DDP804")] == [_line(body, "set_epoch(7)")]


def test_twin_an_object_that_hands_set_epoch_on_to_the_sampler(tmp_path):
    # the same object, but its set_epoch hands the epoch on to the loader's sampler
    body = REPORTER.replace("FORWARD", """
    def attach(self, loader):
        self.loader = loader

    def forward_epoch(self, epoch):
        self.loader.sampler.set_epoch(epoch)
""").replace("        self.epoch = epoch\n", "        self.epoch = epoch\n        self.loader.sampler.set_epoch(epoch)\n", 1) \
        .replace("    progress = Progress()\n", "    progress = Progress()\n    progress.attach(loader)\n")
    found = lint_tree(tmp_path, {"train.py": body})
    assert not _codes(found, "DDP804")


# -------------------------------------------------- a trainer and a dataset picked by eval()
# the script builds `Trainer_<dataset>` and the trainer calls `get_<dataset>` through eval() of a
# formatted name; the data package imports the builders by name and the script star-imports the
# trainers package: each function and class of that shape may run
PICKED_MAIN = """
import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from trainers import *


def main(args):
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    trainer = eval('Trainer_{}'.format(args.dataset))(args=args, model=model)
    trainer.train()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--dataset", default="A")
    main(p.parse_args())
"""
PICKED_TRAINERS = """
from .trainer_a import Trainer as Trainer_A
"""
PICKED_TRAINER = """
from data import get_A, get_B


class Trainer:
    def __init__(self, args, model):
        self.model = model
        self.loader = eval('get_{}'.format(args.dataset))(args)

    def train(self):
        for epoch in range(10):
            SET_EPOCH
            for (x,) in self.loader:
                self.model(x).sum().backward()
"""
PICKED_DATA = """
from .a import get_loader as get_A
from .a import get_loader as get_B
"""
PICKED_LOADER = """
import torch
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def get_loader(args):
    data = TensorDataset(torch.randn(64, 4))
    sampler = DistributedSampler(data, shuffle=True)
    return DataLoader(data, batch_size=8, sampler=sampler)
"""


def _picked(set_epoch: str) -> dict:
    return {"train.py": PICKED_MAIN, "trainers/__init__.py": PICKED_TRAINERS,
            "trainers/trainer_a.py": PICKED_TRAINER.replace("SET_EPOCH", set_epoch),
            "data/__init__.py": PICKED_DATA, "data/a.py": PICKED_LOADER}


def test_a_trainer_and_loader_picked_by_eval_of_a_formatted_name(tmp_path):
    found = lint_tree(tmp_path, _picked("pass"))
    assert [(f.location.file.rsplit("/", 2)[-2:], f.location.line) for f in _codes(found, "DDP804")] == \
        [(["data", "a.py"], _line(PICKED_LOADER, "sampler = DistributedSampler"))]


def test_twin_the_picked_trainer_sets_the_epoch(tmp_path):
    found = lint_tree(tmp_path, _picked("self.loader.sampler.set_epoch(epoch)"))
    assert not _codes(found, "DDP804")


# -------------------------------------------------- a loader class chosen by the distributed switch
# `if opt.dist: holder = ShardedLoader() else: holder = PlainLoader()`, then `holder.setup(opt)`:
# the plain class's loader (no sampler) is built only where no process group is set up
HOLDERS = """
import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class PlainLoader:
    def setup(self, opt):
        self.loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8, shuffle=True)

    def load_data(self):
        return self.loader


class ShardedLoader:
    def setup(self, opt):
        data = TensorDataset(torch.randn(64, 4))
        self.sampler = DistributedSampler(data, shuffle=False)
        self.loader = DataLoader(data, batch_size=8, sampler=self.sampler)

    def load_data(self):
        return self.loader


def make_loader(opt):
    if opt.PICK:
        holder = ShardedLoader()
    else:
        holder = PlainLoader()
    holder.setup(opt)
    return holder


def main(opt):
    if SETUP:
        dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    loader = make_loader(opt).load_data()
    for epoch in range(3):
        for (x,) in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--dist", action="store_true")
    main(p.parse_args())
"""


def test_a_plain_loader_class_built_only_on_the_one_process_side(tmp_path):
    found = lint_tree(tmp_path, {"train.py": HOLDERS.replace("SETUP", "opt.dist").replace("PICK", "dist")})
    assert not [f for f in _codes(found, "DDP802") if f.severity.name == "ERROR"]


def test_twin_the_plain_loader_class_where_every_run_sets_up_the_group(tmp_path):
    # the class is picked by an option that has nothing to do with the group, set up on every
    # run: the plain class is built on a distributed run too
    found = lint_tree(tmp_path, {"train.py": HOLDERS.replace("SETUP", "True").replace("PICK", "big")})
    assert [f.location.line for f in _codes(found, "DDP802")] == [_line(HOLDERS, "self.loader = DataLoader(TensorDataset")]


# -------------------------------------------------- a subset drawn two constructors down
# the sharded dataset is a composite whose constructor builds a part that keeps a random subset
# of its items; the script seeds only from the clock, at each epoch, after the dataset is built
COMPOSED = """
import random
import time
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Part(Dataset):
    def __init__(self, n):
        items = list(range(1000))
        self.items = random.sample(items, n)

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return torch.full((4,), float(self.items[i]))


class Composite(Dataset):
    def __init__(self):
        self.parts = [Part(100)]

    def __len__(self):
        return sum(len(p) for p in self.parts)

    def __getitem__(self, i):
        return self.parts[0][i]


def main():
    dist.init_process_group("gloo")
    SEED
    data = Composite()
    sampler = DistributedSampler(data, shuffle=False)
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(3):
        random.seed(int(time.time()))
        for x in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_a_subset_drawn_in_a_nested_constructor_before_any_shared_seed(tmp_path):
    body = COMPOSED.replace("SEED", "pass")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP803")] == [_line(body, "sampler = DistributedSampler")]


def test_twin_the_same_subset_after_a_seed_every_rank_shares(tmp_path):
    found = lint_tree(tmp_path, {"train.py": COMPOSED.replace("SEED", "random.seed(0)")})
    assert not _codes(found, "DDP803")


# -------------------------------------------------- a list extended on both sides of a branch
# an evaluation collects each batch's outputs with `extend` on both sides of a test on the
# model's output form, then all-gathers the stacked outputs: one batch's rows per pass either way
GATHERED = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def evaluate(model, loader):
    outs = []
    two = True
    for (x,) in loader:
        out = model(x)
        if not isinstance(out, tuple):
            two = False
        if BRANCH:
            outs.extend(out[0])
        else:
            outs.extend(out)
    outs = torch.stack(outs)
    gathered = [torch.zeros_like(outs) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, outs)
    return gathered


def main():
    dist.init_process_group("gloo")
    data = TensorDataset(torch.randn(64, 4))
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data, shuffle=False))
    model = DDP(torch.nn.Linear(4, 1))
    with torch.no_grad():
        evaluate(model, loader)


if __name__ == "__main__":
    main()
"""


def test_a_list_extended_on_both_sides_of_a_branch_is_not_data_sized(tmp_path):
    found = lint_tree(tmp_path, {"train.py": GATHERED.replace("BRANCH", "two")})
    assert not _codes(found, "DDP807")


def test_twin_a_list_extended_only_where_the_output_passes_a_test(tmp_path):
    # only the batches whose output passes a test on its values are kept
    body = GATHERED.replace("BRANCH", "out.sum() > 0").replace("            outs.extend(out)\n", "            pass\n")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP807")] == [_line(body, "dist.all_gather(")]


# -------------------------------------------------- a loaded config saved beside the weights
# `AutoConfig.from_pretrained(name).save_pretrained(out)` on every rank writes a small config
# file of the same content from each (as a tokenizer's would): not the model's state
SIDE_FILE = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from transformers import AutoConfig, AutoModel


def main(out):
    dist.init_process_group("gloo")
    net = AutoModel.from_pretrained("encoder")
    model = DDP(net)
    SAVE


if __name__ == "__main__":
    main("out")
"""


def test_a_loaded_config_saved_on_every_rank_is_a_side_file(tmp_path):
    found = lint_tree(tmp_path, {"train.py": SIDE_FILE.replace(
        "SAVE", 'AutoConfig.from_pretrained("encoder").save_pretrained(out)')})
    assert not _codes(found, "DDP806")


def test_twin_a_loaded_model_saved_on_every_rank(tmp_path):
    body = SIDE_FILE.replace("SAVE", 'AutoModel.from_pretrained("encoder").save_pretrained(out)')
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP806")] == [_line(body, ".save_pretrained(out)")]


# -------------------------------------------------- a switch every launch takes is no assumption
# the whole training runs under `if opt.rank in [-1, 0]:`, itself inside `if not opt.evolve:` with
# --evolve a store_true: every launch goes that way, so the hang needs no assumption
ONLY_RANK0_TRAINS = """
import argparse
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train(opt, model):
    if SWITCH:
        for step in range(10):
            model(torch.randn(2, 4)).sum().backward()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--evolve", action="store_true")
    opt = p.parse_args()
    opt.rank = int(os.environ.get("RANK", -1))
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    if opt.rank in [-1, 0]:
        train(opt, model)
"""


def test_a_store_true_left_off_is_no_assumption_of_the_hang(tmp_path):
    body = ONLY_RANK0_TRAINS.replace("SWITCH", "not opt.evolve")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")
    assert "error" in {f.severity.value for f in found}


def test_twin_a_switch_the_environment_sets_stays_the_assumption(tmp_path):
    body = ONLY_RANK0_TRAINS.replace("SWITCH", 'os.environ.get("EVOLVE")')
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")
    assert found and {f.severity.value for f in found} == {"warning"}


# -------------------------------------------------- a switch every construction sets
# a trainer's rank-0 epoch end saves through the DeepSpeed engine under `if self.ckpt_dir and
# epoch % 3 == 0:`, and the one construction hands `ckpt_dir="checkpoints"`: no assumption
ENGINE_SAVE = """
import deepspeed
import torch
import torch.distributed as dist


class Trainer:
    def __init__(self, model, ckpt_dir=None):
        self.engine, _, _, _ = deepspeed.initialize(model=model, config="ds.json")
        self.ckpt_dir = ckpt_dir
        self.rank = dist.get_rank()

    def train(self, batches):
        for epoch in range(5):
            for x in batches:
                loss = self.engine(x).sum()
                self.engine.backward(loss)
                self.engine.step()
            if self.rank == 0:
                if self.ckpt_dir and epoch % 3 == 0:
                    self.engine.save_checkpoint(self.ckpt_dir, f"epoch{epoch}")


def main():
    deepspeed.init_distributed()
    Trainer(torch.nn.Linear(4, 1), CKPT).train([torch.randn(2, 4)] * 4)


if __name__ == "__main__":
    main()
"""


def test_a_switch_every_construction_sets_is_no_assumption(tmp_path):
    body = ENGINE_SAVE.replace("CKPT", 'ckpt_dir="checkpoints"')
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")
    assert [(f.location.line, f.severity.value) for f in found] == [(_line(body, "save_checkpoint("), "error")]


def test_twin_a_switch_a_construction_leaves_unknown_stays_the_assumption(tmp_path):
    body = ENGINE_SAVE.replace("CKPT", 'ckpt_dir=os.environ.get("CKPT")').replace("import deepspeed\n",
                                                                                 "import deepspeed\nimport os\n")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")
    assert [f.severity.value for f in found] == ["warning"]
