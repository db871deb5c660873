"""Shapes from session 87 (holdout 122's leftovers and holdout 123's reading), each with its
twin, in our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# -------------------------------------------------- a per-rank shuffle of the evaluation list only
# Each rank seeds Python's random with its rank and shuffles both lists before sharding them.
# The training list's shuffle is told at the training sampler; the evaluation list's is not a
# finding (the ranks score overlapping items, no training sample is lost or read twice).
SHUFFLED_BOTH = """import random
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group("gloo")
rank = dist.get_rank()
random.seed(rank)
model = DistributedDataParallel(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
train_items = [torch.randn(4) for _ in range(64)]
eval_items = [torch.randn(4) for _ in range(16)]
random.shuffle(train_items)
random.shuffle(eval_items)
train_sampler = DistributedSampler(train_items)
eval_sampler = DistributedSampler(eval_items)
train_loader = DataLoader(train_items, batch_size=4, sampler=train_sampler)
eval_loader = DataLoader(eval_items, batch_size=4, sampler=eval_sampler)


def evaluate():
    with torch.no_grad():
        return sum(model.module(x).sum().item() for x in eval_loader)


for epoch in range(3):
    train_sampler.set_epoch(epoch)
    for x in train_loader:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
    evaluate()
"""


def test_a_rank_seeded_shuffle_of_the_evaluation_list_alone_is_not_told(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": SHUFFLED_BOTH}), "DDP803")
    assert [f.location.line for f in found] == [_line(SHUFFLED_BOTH, "train_sampler = Distributed")]


def test_a_rank_seeded_shuffle_of_the_list_the_loop_trains_on_is_told(tmp_path):
    # twin: the loop trains on the list shuffled apart, and evaluates on the other
    body = SHUFFLED_BOTH.replace("random.shuffle(train_items)\n", "")
    assert body != SHUFFLED_BOTH
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP803")
    swapped = SHUFFLED_BOTH.replace("random.shuffle(eval_items)\n", "")
    found = _codes(lint_tree(tmp_path, {"train.py": swapped}), "DDP803")
    assert [f.location.line for f in found] == [_line(swapped, "train_sampler = Distributed")]


# -------------------------------------------------- a step helper that broadcasts the loss it returns
# The helper reduces the loss to rank 0, divides it there and broadcasts it back before returning
# it: the NaN test on what it returns is every rank's, so skipping the step is every rank's too.
BROADCAST_LOSS = """import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group("gloo")
world = dist.get_world_size()
model = DistributedDataParallel(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
items = [(torch.randn(4), torch.randn(1)) for _ in range(64)]
sampler = DistributedSampler(items)
loader = DataLoader(items, batch_size=4, sampler=sampler)


def one_batch(batch):
    x, y = batch
    loss = ((model(x) - y) ** 2).mean()
    if world > 1:
        loss = loss.unsqueeze(0)
        dist.reduce(loss, dst=0)
        loss = loss / world
        dist.broadcast(loss, src=0)
    return loss


def train_epoch():
    for batch in loader:
        loss = one_batch(batch)
        if loss is None or torch.isnan(loss).item():
            continue
        opt.zero_grad()
        loss.backward()
        opt.step()


for epoch in range(3):
    sampler.set_epoch(epoch)
    train_epoch()
"""


def test_a_nan_test_on_a_loss_the_helper_broadcast_is_every_ranks(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": BROADCAST_LOSS}), "DDP809")


def test_a_nan_test_on_a_loss_the_helper_only_reduced_to_rank_0_is_the_ranks_own(tmp_path):
    # twin: without the broadcast back, only rank 0 holds the mean; the others test their own
    body = BROADCAST_LOSS.replace("        dist.broadcast(loss, src=0)\n", "")
    assert body != BROADCAST_LOSS
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP809")
    assert [f.location.line for f in found] == [_line(body, "torch.isnan(loss)")]


# -------------------------------------------------- a rank helper read before the group exists
# The helper answers 0 until the process group is set up; the script adds it to the seed a few
# lines above the set-up, so every rank seeds torch alike and worker k of each rank draws the same
# augmentation.
SEEDED_BEFORE_GROUP = """import argparse
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel


def is_dist_ready():
    if not dist.is_available():
        return False
    if not dist.is_initialized():
        return False
    return True


def get_rank():
    if not is_dist_ready():
        return 0
    return dist.get_rank()


class JitterSet(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.full((4,), float(i)) + torch.rand(4)


def main(args):
    torch.manual_seed(args.seed + get_rank())
    dist.init_process_group("gloo")
    model = DistributedDataParallel(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = JitterSet()
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=4, sampler=sampler, num_workers=4)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    main(parser.parse_args())
"""


def test_a_rank_helper_added_to_the_seed_before_the_group_exists_is_0(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": SEEDED_BEFORE_GROUP}), "DDP808")
    assert [f.location.line for f in found] == [_line(SEEDED_BEFORE_GROUP, "loader = DataLoader(")]


def test_a_rank_helper_added_to_the_seed_after_the_group_exists_is_the_rank(tmp_path):
    # twin: the same seeding one line below the set-up puts each rank's own rank in
    body = SEEDED_BEFORE_GROUP.replace(
        '    torch.manual_seed(args.seed + get_rank())\n    dist.init_process_group("gloo")\n',
        '    dist.init_process_group("gloo")\n    torch.manual_seed(args.seed + get_rank())\n')
    assert body != SEEDED_BEFORE_GROUP
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP808")
    # nor where the helper asks the process group itself, which fails before the set-up
    asks = SEEDED_BEFORE_GROUP.replace("    if not is_dist_ready():\n        return 0\n", "")
    assert asks != SEEDED_BEFORE_GROUP
    assert not _codes(lint_tree(tmp_path, {"train.py": asks}), "DDP808")
    # nor where the fallback asks the launcher's variables, set before the group is
    launched = SEEDED_BEFORE_GROUP.replace("import argparse\n", "import argparse\nimport os\n").replace(
        "    if not dist.is_available():\n        return False\n    if not dist.is_initialized():\n        return False\n"
        "    return True\n", '    return int(os.environ.get("WORLD_SIZE", 1)) > 1\n').replace(
        "    return dist.get_rank()\n", '    return int(os.environ["RANK"])\n')
    assert launched.count("os.environ") == 2
    assert not _codes(lint_tree(tmp_path, {"train.py": launched}), "DDP808")


# -------------------------------------------------- `bool(loss == 0)` in a step picked from a table
# The per-batch step is picked from a table by the config; a first call before the loop warms it
# up once. A step that returns before the backward when its own loss is 0 leaves the other ranks
# in the gradient all-reduce.
TABLE_STEPS = """import argparse
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler
from torch.nn.parallel import DistributedDataParallel


def step_plain(batch, module, opt):
    opt.zero_grad()
    loss = module(batch).relu().sum()
    if bool(loss == 0):
        return
    loss.backward()
    opt.step()


def step_scaled(batch, module, opt):
    opt.zero_grad()
    loss = 2 * module(batch).relu().sum()
    loss.backward()
    opt.step()


STEPS = {"plain": step_plain, "scaled": step_scaled}


def main(args):
    dist.init_process_group("gloo")
    model = DistributedDataParallel(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    items = [torch.randn(4) for _ in range(64)]
    sampler = DistributedSampler(items)
    loader = DataLoader(items, batch_size=4, sampler=sampler)
    step = STEPS[args.step]
    step(next(iter(loader)), model, opt)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for batch in loader:
            step(batch, model, opt)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--step", default="plain")
    main(parser.parse_args())
"""


def test_a_zero_loss_return_in_a_step_a_table_picks_is_each_ranks(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": TABLE_STEPS}), "DDP809")
    assert [f.location.line for f in found] == [_line(TABLE_STEPS, "if bool(loss == 0):")]


def test_a_zero_test_on_a_setting_in_a_step_a_table_picks_is_every_ranks(tmp_path):
    # twin: the test reads a number every rank holds alike, not the loss
    body = TABLE_STEPS.replace("    if bool(loss == 0):\n", "    if bool(opt.defaults[\"lr\"] == 0):\n")
    assert body != TABLE_STEPS
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP809")
    # nor is a step called only once, outside any loop, a per-batch step
    once = TABLE_STEPS.replace("        for batch in loader:\n            step(batch, model, opt)\n",
                               "        sum(1 for _ in loader)\n")
    assert once != TABLE_STEPS
    assert not _codes(lint_tree(tmp_path, {"train.py": once}), "DDP809")


# -------------------------------------------------- the plain module handed on two calls down
# Rank 0 evaluates with `model.module if distributed else model`; the evaluation hands it on to
# a scoring helper, which hands it to the forward helper the training loop also calls with the
# DDP model. On this way the forward is the plain module's: no collective under the rank test.
HANDED_ON = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def forward_loss(net, x):
    return net(x).pow(2).mean()


def score(net, x):
    with torch.no_grad():
        return forward_loss(net, x).item()


def evaluate(net, batches):
    return [score(net, x) for x in batches]


def main():
    dist.init_process_group("gloo")
    distributed = dist.get_world_size() > 1
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))
    if distributed:
        model = DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        for _ in range(8):
            opt.zero_grad()
            forward_loss(model, torch.randn(4, 4)).backward()
            opt.step()
        if dist.get_rank() == 0:
            evaluate(model.module if distributed else model, [torch.randn(4, 4)])
        dist.barrier()


if __name__ == "__main__":
    main()
"""


def test_the_plain_module_handed_on_two_calls_down_runs_no_ddp_forward(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": HANDED_ON}), "DDP801")


def test_the_wrapper_handed_on_two_calls_down_runs_the_ddp_forward(tmp_path):
    # twin: rank 0 hands the DDP wrapper itself
    body = HANDED_ON.replace("evaluate(model.module if distributed else model,", "evaluate(model,")
    assert body != HANDED_ON
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")
    assert [f.location.line for f in found] == [_line(body, "return net(x)")]


# -------------------------------------------------- no_sync picked where the period is above 1
# The context is no_sync on every micro-step but the last, and only where the period is above 1
# (a period of 1 accumulates nothing): every configuration that accumulates skips the all-reduce.
PERIOD_PICKED = """import argparse
import contextlib
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler
from torch.nn.parallel import DistributedDataParallel


def main(args):
    dist.init_process_group("gloo")
    model = DistributedDataParallel(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    items = [torch.randn(4) for _ in range(64)]
    sampler = DistributedSampler(items)
    loader = DataLoader(items, batch_size=4, sampler=sampler)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for i, x in enumerate(loader):
            is_update_step = (i + 1) % args.accum == 0
            if args.accum > 1 and not is_update_step:
                ctx = model.no_sync()
            else:
                ctx = contextlib.nullcontext()
            with ctx:
                loss = model(x).sum() / args.accum
            loss.backward()
            if is_update_step:
                opt.step()
                opt.zero_grad()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--accum", type=int, default=4)
    parser.add_argument("--sharded", action="store_true")
    main(parser.parse_args())
"""


def test_no_sync_picked_where_the_period_is_above_1_covers_the_loop(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": PERIOD_PICKED}), "DDP805")


def test_no_sync_picked_under_a_configuration_switch_leaves_the_other_side(tmp_path):
    # twin: a switch that is not the period leaves its other side all-reducing every micro-step
    body = PERIOD_PICKED.replace("if args.accum > 1 and not is_update_step:", "if args.sharded and not is_update_step:")
    assert body != PERIOD_PICKED
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP805")
    assert len(found) == 1 and "only under a configuration switch" in found[0].message


# -------------------------------------------------- a dataset whose items are only the ids it holds
# The dataset is handed a random augmentation but its item method only hands back the id it
# holds; the training loop loads and augments in the process. Its workers draw nothing, so the
# seeds they share take nothing from the ranks.
IDS_ONLY = """import torch
import torch.distributed as dist
import torchvision.transforms as T
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel


class IdSet(Dataset):
    def __init__(self, n, pipeline):
        self.ids = list(range(n))
        self.pipeline = pipeline

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return self.ids[i]


torch.manual_seed(0)
dist.init_process_group("gloo")
model = DistributedDataParallel(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
augment = T.Compose([T.RandomHorizontalFlip(), T.RandomCrop(4)])
data = IdSet(64, pipeline=augment)
sampler = DistributedSampler(data)
loader = DataLoader(data, batch_size=4, sampler=sampler, num_workers=4)
for epoch in range(3):
    sampler.set_epoch(epoch)
    for ids in loader:
        x = torch.stack([data.pipeline(torch.randn(1, 4, 4)).flatten()[:4] for _ in ids])
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
"""


def test_a_dataset_that_hands_back_only_held_ids_draws_nothing_in_its_workers(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": IDS_ONLY}), "DDP808")


def test_a_dataset_that_indexes_a_dataset_it_was_handed_draws_what_that_one_draws(tmp_path):
    # twin: the items come from another dataset handed in, whose own item method flips
    body = IDS_ONLY.replace("class IdSet(Dataset):", """class Flipped(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return T.RandomHorizontalFlip()(torch.full((1, 4, 4), float(i)))


class IdSet(Dataset):""").replace("        self.ids = list(range(n))\n", "        self.ids = n\n").replace(
        "data = IdSet(64, pipeline=augment)", "data = IdSet(Flipped(), pipeline=augment)")
    assert body.count("Flipped") == 2
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP808")
    assert [f.location.line for f in found] == [_line(body, "loader = DataLoader(")]


def test_a_dataset_that_augments_its_items_draws_in_its_workers(tmp_path):
    # twin: the item method runs the augmentation it was handed
    body = IDS_ONLY.replace("        return self.ids[i]\n", "        return self.pipeline(torch.full((1, 4, 4), float(self.ids[i])))\n")
    assert body != IDS_ONLY
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP808")
    assert [f.location.line for f in found] == [_line(body, "loader = DataLoader(")]


# -------------------------------------------------- a dataset a registry builds by the config's name
# The package's own registry keeps the classes its decorator registers, in modules the package's
# __init__ imports for that; the training loader's dataset is `DATASETS.build(cfg)`. One of the
# registered classes shuffles each item's points in the workers, and every rank seeds torch alike.
REGISTRY = """class Registry:
    def __init__(self, name):
        self.name = name
        self.table = {}

    def register_module(self):
        def keep(cls):
            self.table[cls.__name__] = cls
            return cls
        return keep

    def build(self, cfg):
        return self.table[cfg["type"]](**cfg.get("args", {}))
"""
DATA_BUILD = """from registry import Registry

DATASETS = Registry("dataset")


def build_dataset(cfg):
    return DATASETS.build(cfg)
"""
DATA_INIT = """from .build import build_dataset
import data.points
"""
# (the module is long enough to be a quiet one, read only when something asks for it: the
# registry's build is what asks here)
DATA_POINTS = '"""Point sets.\n\n' + "Each item is one object's points, 16 of them, in an order drawn per item.\n" * 30 + \
    '"""\n' + """import numpy as np
import torch
from torch.utils.data import Dataset
from .build import DATASETS


@DATASETS.register_module()
class PointSet(Dataset):
    def __init__(self, n=64):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        order = np.arange(16)
        np.random.shuffle(order)
        return torch.arange(16.0)[order]
"""
REGISTRY_TRAIN = """import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler
from torch.nn.parallel import DistributedDataParallel
from data import build_dataset

torch.manual_seed(0)
dist.init_process_group("gloo")
model = DistributedDataParallel(torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
dataset = build_dataset({"type": "PointSet"})
sampler = DistributedSampler(dataset)
loader = DataLoader(dataset, batch_size=4, sampler=sampler, num_workers=4)
for epoch in range(3):
    sampler.set_epoch(epoch)
    for x in loader:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
"""


def _registry_files(points: str) -> dict:
    return {"registry.py": REGISTRY, "data/__init__.py": DATA_INIT, "data/build.py": DATA_BUILD,
            "data/points.py": points, "train.py": REGISTRY_TRAIN}


def test_a_dataset_a_registry_builds_draws_where_a_registered_class_draws(tmp_path):
    found = _codes(lint_tree(tmp_path, _registry_files(DATA_POINTS), script="train.py"), "DDP808")
    assert [f.location.line for f in found] == [_line(REGISTRY_TRAIN, "loader = DataLoader(")]


def test_a_dataset_a_registry_builds_draws_nothing_where_no_registered_class_draws(tmp_path):
    # twin: the registered class hands back its points in order
    points = DATA_POINTS.replace("        np.random.shuffle(order)\n", "")
    assert points != DATA_POINTS
    assert not _codes(lint_tree(tmp_path, _registry_files(points), script="train.py"), "DDP808")


# -------------------------------------------------- two builder calls unpacked side by side
# The builder returns (sampler, loader); the script unpacks two calls of it side by side, one
# for training and one for validation. The first pair's loader is the one the loop trains on.
SIDE_BY_SIDE = """import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel


class FlipSet(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        x = torch.arange(4.0)
        return x.flip(0) if torch.rand(1).item() < 0.5 else x


def build(split):
    dataset = FlipSet()
    sampler = DistributedSampler(dataset, shuffle=split == "train")
    loader = DataLoader(dataset, batch_size=4, sampler=sampler, num_workers=4)
    return sampler, loader


def evaluate(model, test_loader):
    total = 0.0
    with torch.no_grad():
        for x in test_loader:
            total += model.module(x).sum().item()
    return total


def main():
    torch.manual_seed(0)
    dist.init_process_group("gloo")
    model = DistributedDataParallel(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    (train_sampler, train_loader), (_, val_loader) = build("train"), build("val")
    _, test_loader = build("test")
    for epoch in range(3):
        train_sampler.set_epoch(epoch)
        for x in train_loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
        evaluate(model, val_loader)
    evaluate(model, test_loader)


if __name__ == "__main__":
    main()
"""


def test_a_loader_unpacked_beside_another_builders_call_is_the_one_trained_on(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": SIDE_BY_SIDE}), "DDP808")
    assert [f.location.line for f in found] == [_line(SIDE_BY_SIDE, "loader = DataLoader(")]


def test_a_loader_unpacked_beside_another_builders_call_seeded_by_rank_is_healthy(tmp_path):
    # twin: each rank seeds torch with its own rank after joining the group
    body = SIDE_BY_SIDE.replace('    torch.manual_seed(0)\n    dist.init_process_group("gloo")\n',
                                '    dist.init_process_group("gloo")\n    torch.manual_seed(dist.get_rank())\n')
    assert body != SIDE_BY_SIDE
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP808")


# -------------------------------------------------- an option read through the field that keeps them
# The trainer keeps the parsed options as `self.args`; its test mode picks a job by
# `self.args.test_info`. The launches beside the script give "score" or "embed"; no launch asks
# for "dump", so the every-rank dump under that branch never runs.
KEPT_OPTIONS = """import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


class Trainer:
    def __init__(self, args, model):
        self.args = args
        self.model = model

    def test(self):
        if self.args.test_info == "score":
            print(self.model(torch.randn(2, 4)).sum().item())
        elif self.args.test_info == "embed":
            print(self.model.module.weight.norm().item())
        elif self.args.test_info == "dump":
            torch.save(self.model.module.state_dict(), "/tmp/dump.pt")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--test_info", default="score")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    Trainer(args, DistributedDataParallel(torch.nn.Linear(4, 1))).test()


if __name__ == "__main__":
    main()
"""
KEPT_LAUNCH = """#!/bin/bash
torchrun --nproc_per_node=4 train.py --test_info score
torchrun --nproc_per_node=4 train.py --test_info {other}
"""


def test_a_branch_on_an_option_kept_in_a_field_that_no_launch_takes_writes_nothing(tmp_path):
    files = {"train.py": KEPT_OPTIONS, "run.sh": KEPT_LAUNCH.format(other="embed")}
    assert not _codes(lint_tree(tmp_path, files), "DDP806")


def test_a_branch_on_an_option_kept_in_a_field_that_a_launch_takes_writes_on_every_rank(tmp_path):
    # twin: one launch asks for the dump
    files = {"train.py": KEPT_OPTIONS, "run.sh": KEPT_LAUNCH.format(other="dump")}
    found = _codes(lint_tree(tmp_path, files), "DDP806")
    assert [f.location.line for f in found] == [_line(KEPT_OPTIONS, "torch.save(")]


# -------------------------------------------------- a table of loaders by split, kept by the trainer
# The script builds one loader per split in a dict comprehension and hands the table to its
# trainer, whose epoch reads `self.loaders["train" if train else "val"]` through tqdm: the
# training side's loader has a RandomSampler, so every rank trains on the whole set.
SPLIT_TABLE = """import torch
import torch.distributed as dist
from torch.utils import data
from torch.nn.parallel import DistributedDataParallel
from tqdm import tqdm


def get_data(split):
    dataset = [torch.randn(4) for _ in range(64)]
    sampler = data.RandomSampler(dataset) if split == "train" else data.SequentialSampler(dataset)
    loader = data.DataLoader(dataset, batch_size=4, sampler=sampler)
    return loader


class Trainer:
    def __init__(self, model, opt, loaders):
        self.model = model
        self.opt = opt
        self.loaders = loaders

    def train(self):
        for epoch in range(3):
            self.run_epoch(epoch, train=True)
            self.run_epoch(epoch, train=False)

    def run_epoch(self, epoch, train=True):
        loader = self.loaders["train" if train else "val"]
        with tqdm(loader) as t:
            for idx, x in enumerate(t):
                loss = self.model(x).sum()
                if train:
                    self.opt.zero_grad()
                    loss.backward()
                    self.opt.step()


def main():
    dist.init_process_group("gloo")
    model = DistributedDataParallel(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loaders = {split: get_data(split) for split in ["train", "val"]}
    Trainer(model, opt, loaders).train()


if __name__ == "__main__":
    main()
"""


def test_a_loader_kept_in_a_table_by_split_and_read_by_key_trains(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": SPLIT_TABLE}), "DDP802")
    assert [f.location.line for f in found] == [_line(SPLIT_TABLE, "loader = data.DataLoader(")]
    assert found[0].severity.value == "error"


def test_a_loader_kept_in_a_table_by_split_with_a_distributed_sampler_is_sharded(tmp_path):
    # twin: the training split's sampler is a DistributedSampler
    body = SPLIT_TABLE.replace('data.RandomSampler(dataset) if split == "train"',
                               'data.DistributedSampler(dataset) if split == "train"')
    assert body != SPLIT_TABLE
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP802")
    # nor is a table built over keys the epoch never reads read as one
    other = SPLIT_TABLE.replace('for split in ["train", "val"]}', 'for split in ["test", "extra"]}')
    assert other != SPLIT_TABLE
    assert not _codes(lint_tree(tmp_path, {"train.py": other}), "DDP802")


# -------------------------------------------------- a split drawn by the caller, wrapped in a builder
# The caller splits the list with scikit-learn's train_test_split and no random_state (nothing
# seeds numpy); the builder wraps its parameter in a dataset class and shards that: each rank
# drew its own split, so the sampler shards N different lists.
WRAPPED_SPLIT = """import torch
import torch.distributed as dist
from sklearn.model_selection import train_test_split
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel


class Patches(Dataset):
    def __init__(self, items):
        self.items = items

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return torch.full((4,), float(self.items[i]))


def train_loader(train_subset):
    data = Patches(train_subset)
    sampler = DistributedSampler(data)
    return sampler, DataLoader(data, batch_size=4, sampler=sampler)


def main():
    dist.init_process_group("gloo")
    model = DistributedDataParallel(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    train_items, test_items = train_test_split(list(range(100)), test_size=0.1, shuffle=True)
    sampler, loader = train_loader(train_items)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()


if __name__ == "__main__":
    main()
"""


def test_a_split_the_caller_drew_and_the_builder_wraps_is_drawn_apart(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": WRAPPED_SPLIT}), "DDP803")
    assert [f.location.line for f in found] == [_line(WRAPPED_SPLIT, "sampler = DistributedSampler(")]


def test_a_split_the_caller_drew_with_a_fixed_state_is_alike(tmp_path):
    # twin: the split takes a fixed random_state, the same on every rank
    body = WRAPPED_SPLIT.replace("shuffle=True)", "shuffle=True, random_state=0)")
    assert body != WRAPPED_SPLIT
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP803")


# -------------------------------------------------- a cut of a list a helper shuffled apart
# Python's random is seeded with the rank; a helper shuffles the list and splits it; the script
# cuts the training part to whole batches before wrapping it: the cut keeps the order each rank
# drew, so the sampler shards N different lists.
CUT_AFTER_SHUFFLE = """import random
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel


class Patches(Dataset):
    def __init__(self, items):
        self.items = items

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return torch.full((4,), float(self.items[i]))


def split_items(items):
    random.shuffle(items)
    cut = int(len(items) * 0.1)
    return items[cut:], items[:cut]


dist.init_process_group("gloo")
rank = dist.get_rank()
random.seed(42 + rank)
model = DistributedDataParallel(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
train_items, val_items = split_items(list(range(100)))
batches = len(train_items) // 4
train_items = train_items[:batches * 4]
train_set = Patches(train_items)
sampler = DistributedSampler(train_set)
loader = DataLoader(train_set, batch_size=4, sampler=sampler)
for epoch in range(3):
    sampler.set_epoch(epoch)
    for x in loader:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
"""


def test_a_cut_of_a_list_shuffled_apart_is_drawn_apart(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": CUT_AFTER_SHUFFLE}), "DDP803")
    assert [f.location.line for f in found] == [_line(CUT_AFTER_SHUFFLE, "sampler = DistributedSampler(")]


def test_a_cut_of_a_list_shuffled_alike_is_alike(tmp_path):
    # twin: the seed leaves the rank out, every rank draws the same order
    body = CUT_AFTER_SHUFFLE.replace("random.seed(42 + rank)", "random.seed(42)")
    assert body != CUT_AFTER_SHUFFLE
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP803")


# -------------------------------------------------- a loss summed round the wrapper, term by term
# The rollout adds each step's loss to sums started at 0, every term computed by the module
# inside the DDP wrapper: the backward of the sums prepares no reducer and all-reduces nothing.
SUMMED_ROUND = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


class Heads(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = torch.nn.Linear(4, 4)
        self.decoder = torch.nn.Linear(4, 1)


dist.init_process_group("gloo")
net = DistributedDataParallel(Heads())
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(10):
    x = torch.randn(8, 4)
    code_loss, decode_loss = 0, 0
    for k in range(3):
        z = net.module.encoder(x)
        code_loss += z.pow(2).mean()
        decode_loss += net.module.decoder(z).abs().mean()
    opt.zero_grad()
    (code_loss + decode_loss).backward()
    opt.step()
"""


def test_a_loss_summed_from_terms_round_the_wrapper_bypasses_it(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": SUMMED_ROUND}), "DDP810")
    assert [f.location.line for f in found] == [_line(SUMMED_ROUND, "(code_loss + decode_loss).backward()")]


def test_a_loss_summed_from_a_term_of_the_wrappers_forward_goes_through_it(tmp_path):
    # twin: one term comes from the wrapper's own forward (a module whose forward runs both)
    body = SUMMED_ROUND.replace(
        "        self.decoder = torch.nn.Linear(4, 1)\n",
        "        self.decoder = torch.nn.Linear(4, 1)\n\n    def forward(self, x):\n        return self.decoder(self.encoder(x))\n",
    ).replace("        decode_loss += net.module.decoder(z).abs().mean()\n", "        decode_loss += net(x).abs().mean()\n")
    assert body != SUMMED_ROUND
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP810")


# -------------------------------------------------- a Hydra `_target_` named through an interpolation
# The config names the agent class as `_target_: ${target}`, with `target: agent.Agent` at its
# top; the script instantiates it after joining the group. The agent's update is read: its loss
# goes round the wrapper.
HYDRA_SCRIPT = """import hydra
import torch.distributed as dist


@hydra.main(config_path="cfgs", config_name="config")
def main(cfg):
    dist.init_process_group("gloo")
    agent = hydra.utils.instantiate(cfg.agent)
    for step in range(10):
        agent.update()


if __name__ == "__main__":
    main()
"""
HYDRA_AGENT = """import torch
from torch.nn.parallel import DistributedDataParallel


class Parts(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(4, 4)
        self.head = torch.nn.Linear(4, 1)


class Agent:
    def __init__(self, lr):
        self.net = DistributedDataParallel(Parts())
        self.opt = torch.optim.SGD(self.net.parameters(), lr=lr)

    def update(self):
        loss = self.net.module.head(self.net.module.body(torch.randn(8, 4))).pow(2).mean()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
"""
HYDRA_CONFIG = """target: agent.Agent
agent:
  _target_: ${{{key}}}
  lr: 0.1
"""


def test_a_class_a_config_names_through_an_interpolation_is_read(tmp_path):
    files = {"train.py": HYDRA_SCRIPT, "agent.py": HYDRA_AGENT, "cfgs/config.yaml": HYDRA_CONFIG.format(key="target")}
    found = _codes(lint_tree(tmp_path, files), "DDP810")
    assert [f.location.line for f in found] == [_line(HYDRA_AGENT, "loss.backward()")]


def test_an_interpolation_to_no_key_names_no_class(tmp_path):
    # twin: the interpolation names a key the config does not hold
    files = {"train.py": HYDRA_SCRIPT, "agent.py": HYDRA_AGENT, "cfgs/config.yaml": HYDRA_CONFIG.format(key="agent_class")}
    assert not _codes(lint_tree(tmp_path, files), "DDP810")


# -------------------------------------------------- a section's count in the Hydra config the run reads
# The Hydra config the script's `@hydra.main` names sets `accumulate: 1` in every section; each part
# picks its section by name. A key the configs give is no command-line option a launch raises.
HYDRA_SECTIONS = """import hydra
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Runner:
    def __init__(self, settings):
        self.settings = settings
        self.models = {"encoder": DDP(torch.nn.Linear(4, 4)), "decoder": DDP(torch.nn.Linear(4, 4))}

    def fit_part(self, name, steps):
        section = getattr(self.settings, name).training
        model = self.models[name]
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for i in range(steps):
            model(torch.randn(2, 4)).sum().backward()
            if (i + 1) % section.accumulate == 0:
                opt.step()
                opt.zero_grad()


@hydra.main(config_path="config", config_name="trainer")
def main(cfg):
    dist.init_process_group("gloo")
    runner = Runner(cfg)
    for name in ("encoder", "decoder"):
        runner.fit_part(name, 10)


if __name__ == "__main__":
    main()
"""
HYDRA_SECTIONS_CONFIG = "encoder:\n  training:\n    accumulate: 1\n    lr: 0.1\ndecoder:\n  training:\n    accumulate: {k}\n    lr: 0.2\n"


def test_a_count_every_hydra_section_sets_to_1_accumulates_nothing(tmp_path):
    files = {"train.py": HYDRA_SECTIONS, "config/trainer.yaml": HYDRA_SECTIONS_CONFIG.format(k=1)}
    assert not _codes(lint_tree(tmp_path, files), "DDP805")


def test_a_count_one_hydra_section_sets_to_4_accumulates(tmp_path):
    # twin: one section accumulates over 4 passes
    files = {"train.py": HYDRA_SECTIONS, "config/trainer.yaml": HYDRA_SECTIONS_CONFIG.format(k=4)}
    found = _codes(lint_tree(tmp_path, files), "DDP805")
    assert [f.location.line for f in found] == [_line(HYDRA_SECTIONS, "model(torch.randn(2, 4)).sum().backward()")]


def test_a_count_read_off_the_hydra_config_handed_in_may_be_raised_at_launch(tmp_path):
    # twin: the whole config is handed in and its top-level count read; a launch overrides such a
    # key on the command line (`accumulate=20`), so the finding stands on that assumption
    body = HYDRA_SECTIONS.replace("    def fit_part(self, name, steps):\n        section = getattr(self.settings, name).training\n",
                                  "    def fit_part(self, name, steps, section):\n").replace(
        "runner.fit_part(name, 10)", "runner.fit_part(name, 10, cfg)")
    assert body.count("section") == 2
    files = {"train.py": body, "config/trainer.yaml": "accumulate: 1\nlr: 0.1\n"}
    found = _codes(lint_tree(tmp_path, files), "DDP805")
    assert [f.location.line for f in found] == [_line(body, "model(torch.randn(2, 4)).sum().backward()")]


# -------------------------------------------------- a NaN test that exits, in the optimizer's helper
# The trainer's per-batch `iter()` hands its loss to `optimize(loss)`, which exits on a NaN before
# the backward: a rank whose batch gave a NaN leaves, the others wait in the gradient all-reduce.
EXITS_ON_NAN = """import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler
from torch.nn.parallel import DistributedDataParallel


class Trainer:
    def __init__(self):
        self.model = DistributedDataParallel(torch.nn.Linear(4, 1))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def optimize(self, loss):
        if (loss != loss).data.any():
            print("NaN detected")
            exit()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()

    def iter(self, x):
        loss = self.model(x).pow(2).mean()
        self.optimize(loss)


def main():
    dist.init_process_group("gloo")
    trainer = Trainer()
    items = [torch.randn(4) for _ in range(64)]
    sampler = DistributedSampler(items)
    loader = DataLoader(items, batch_size=4, sampler=sampler)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x in loader:
            trainer.iter(x)


if __name__ == "__main__":
    main()
"""


def test_a_nan_test_that_exits_before_the_backward_in_a_per_batch_helper(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": EXITS_ON_NAN}), "DDP809")
    assert [f.location.line for f in found] == [_line(EXITS_ON_NAN, "if (loss != loss).data.any():")]


def test_a_nan_test_that_only_warns_before_the_backward_decides_nothing(tmp_path):
    # twin: the helper only reports the NaN and goes on to the backward
    body = EXITS_ON_NAN.replace("            exit()\n", "")
    assert body != EXITS_ON_NAN
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP809")
