"""Shapes from session 58, each with its twin, in our own words: a save method called on each item
of `zip(datasets, names)`, where the datasets come from a local split function whose return
annotation names their class: the item is a dataset (whose save writes a per-rank path handed
in), not the script's trainer, whose save writes one shared checkpoint."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree

DATA = """
from typing import Tuple
import torch


class Shards:
    def __init__(self, items):
        self.items = items

    def save(self, path):
        torch.save(self.items, path)


def split(ds: Shards, frac: float = 0.2) -> {ANNOTATION}:
    n = int(len(ds.items) * frac)
    return Shards(ds.items[n:]), Shards(ds.items[:n // 2]), Shards(ds.items[n // 2:n])
"""

TRAIN = """
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from data import Shards, split


class Trainer:
    def __init__(self, model):
        self.model = model

    def save(self, tag):
        torch.save(self.model.state_dict(), "checkpoints/best.pt")


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DDP(torch.nn.Linear(4, 1))
    trainer = Trainer(model)
    if rank == 0:
        trainer.save("best")
    train, val, test = split(Shards(list(range(100))))
    {PARTS}
    for part, name in zip(parts, ["train", "val", "test"]):
        part.save(os.path.join("splits", str(rank), name + ".pt"))


main()
"""


def _saves(tmp_path, annotation: str, parts: str, train: str = TRAIN) -> list:
    found = lint_tree(tmp_path, {"train.py": train.replace("{PARTS}", parts),
                                 "data.py": DATA.replace("{ANNOTATION}", annotation)})
    return [f for f in found if f.code == "DDP806"]


def test_items_of_a_zip_over_annotated_splits_are_datasets_not_the_trainer(tmp_path):
    assert _saves(tmp_path, "Tuple[Shards, Shards, Shards]", "parts = [train, val, test]") == []
    assert _saves(tmp_path / "lower", "tuple[Shards, Shards, Shards]", "parts = [train, val, test]") == []


def test_without_the_annotation_the_save_is_still_guessed_by_name(tmp_path):
    # twin: nothing says what the items are, so the call stays a guess by the method's name and
    # the saves it may reach are judged as called without a rank test, on the path that call
    # hands them (session 97: here one path every rank shares; the per-rank path of the shapes
    # above is no finding, whatever the call reaches)
    shared = TRAIN.replace('os.path.join("splits", str(rank), name + ".pt")', 'os.path.join("splits", name + ".pt")')
    assert shared != TRAIN
    assert _saves(tmp_path, "tuple", "parts = [train, val, test]", shared)
    assert not _saves(tmp_path / "ranked", "tuple", "parts = [train, val, test]")


def test_a_trainer_among_the_zipped_items_is_reported(tmp_path):
    # twin: the list really holds the trainer: its shared checkpoint is written by every rank
    found = _saves(tmp_path, "Tuple[Shards, Shards, Shards]", "parts = [train, val, trainer]")
    assert any("best.pt" in f.message for f in found)


# ------------------------------ a rank-local flag read by a test that other parts already settle
FLAG = """
import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    CHECK = {CHECK}
    done = False
    for step in range(100):
        if rank == 0 and step == 10:
            done = True
        if {TEST}:
            loss = model(torch.randn(8, 4)).sum()
            loss.backward()
            opt.step()


main()
"""


def _decisions(tmp_path, check: str, test: str) -> list:
    found = lint_tree(tmp_path, {"train.py": FLAG.replace("{CHECK}", check).replace("{TEST}", test)})
    return [f for f in found if f.code == "DDP809"]


def test_a_flag_set_on_rank_0_and_read_on_every_rank_is_reported(tmp_path):
    # the shape the rule is for: the others still train after rank 0 stopped
    assert _decisions(tmp_path, "args.check", "CHECK and not done")


def test_a_part_bound_only_to_false_settles_the_branch_and_a_rank_test_does_not(tmp_path):
    # `CHECK = False` never changed: no rank takes the branch, whatever `done` holds
    assert _decisions(tmp_path, "False", "CHECK and not done") == []
    # twin: a rank test beside the flag settles nothing (rank 0's own flag decides for it); the
    # flag is read only where it was set, so the branch is told once, as the rank branch it is
    # (DDP801), not again as a disagreement on the flag (session 86)
    found = lint_tree(tmp_path / "r", {"train.py": FLAG.replace("{CHECK}", "args.check")
                                       .replace("{TEST}", "CHECK and not done and rank == 0")})
    assert [f.code for f in found if f.code in ("DDP801", "DDP809")] == ["DDP801"]


def test_a_constant_read_inside_a_with_block_is_still_a_constant(tmp_path):
    # the test sits in a `with` (Fabric's no_backward_sync, autocast): a with binds its `as`
    # names only, not every name its body reads
    inside = FLAG.replace("        if {TEST}:", "        with contextlib.nullcontext():\n          if {TEST}:") \
        .replace("import argparse", "import argparse\nimport contextlib")
    found = lint_tree(tmp_path, {"train.py": inside.replace("{CHECK}", "False").replace("{TEST}", "CHECK and not done")})
    assert [f for f in found if f.code == "DDP809"] == []
    found = lint_tree(tmp_path / "twin", {"train.py": inside.replace("{CHECK}", "args.check")
                                          .replace("{TEST}", "CHECK and not done")})
    assert [f for f in found if f.code == "DDP809"]


# ------------------------- holdout 70: a loader kept as self.x from a local factory's returned tuple
LOADERS = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class ShardLoader:
    def __init__(self, rank):
        self.rank, self.total = rank, None

    def count_tokens(self):
        total = [1000 if self.rank == 0 else None]
        dist.broadcast_object_list(total, src=0)  # every rank must come here
        return total[0]


def make_loaders(rank):
    train = ShardLoader(rank)
    val = ShardLoader(rank)
    return train, val


class Trainer:
    def __init__(self, rank):
        self.rank = rank
        self.train_loader, self.val_loader = make_loaders(rank)

    def summary(self):
        {SUMMARY}


def main():
    dist.init_process_group("gloo")
    trainer = Trainer(dist.get_rank())
    trainer.model = DDP(torch.nn.Linear(4, 1))
    trainer.summary()


main()
"""


def test_a_method_of_a_loader_unpacked_into_self_runs_its_collective_on_rank_0_alone(tmp_path):
    found = lint_tree(tmp_path, {"train.py": LOADERS.replace(
        "{SUMMARY}", "if self.rank == 0:\n            print(self.train_loader.count_tokens())")})
    assert [f.code for f in found if f.code == "DDP801"] == ["DDP801"]
    # twin: every rank counts, rank 0 prints
    found = lint_tree(tmp_path / "twin", {"train.py": LOADERS.replace(
        "{SUMMARY}", "n = self.train_loader.count_tokens()\n        if self.rank == 0:\n            print(n)")})
    assert [f for f in found if f.code == "DDP801"] == []


# ------------------------------- the sync switch's other side is the FSDP model (same flag elsewhere)
ACCUM = """
import argparse
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--{FLAG}", action="store_true")
parser.add_argument("--accum", type=int, default=4)
args = parser.parse_args()


def wrap(model):
    if args.{WRAP_FLAG}:
        return FSDP(model)
    return DDP(model)


dist.init_process_group("gloo")
ddp = dist.get_world_size() > 1
model = wrap(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    for micro in range(args.accum):
        if ddp and not args.{FLAG}:
            model.require_backward_grad_sync = micro == args.accum - 1
        model(torch.randn(8, 4)).sum().backward()
    opt.step()
    opt.zero_grad()
"""


def test_a_sync_switch_whose_other_side_is_the_fsdp_model_covers_the_ddp_model(tmp_path):
    found = lint_tree(tmp_path, {"train.py": ACCUM.replace("{FLAG}", "use_fsdp").replace("{WRAP_FLAG}", "use_fsdp")})
    assert [f for f in found if f.code == "DDP805"] == []
    # twin: the switch's flag is not the one that picks FSDP: its other side is a DDP model
    found = lint_tree(tmp_path / "twin", {"train.py": ACCUM.replace("{FLAG}", "fast").replace("{WRAP_FLAG}", "fast_never")
                                          .replace('parser.add_argument("--accum"',
                                                   'parser.add_argument("--fast_never", action="store_true")\n'
                                                   'parser.add_argument("--accum"')})
    assert [f.code for f in found if f.code == "DDP805"] == ["DDP805"]


# ---------------------------------- a GAN: the discriminator's helper steps right after its backward
GAN = """
import sys
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class GanTrainer:
    def __init__(self, w_gan):
        self.w_gan = w_gan
        self.g = DDP(torch.nn.Linear(4, 4))
        self.d = DDP(torch.nn.Linear(4, 1))
        self.opt_g = torch.optim.Adam(self.g.parameters())
        self.opt_d = torch.optim.Adam(self.d.parameters())

    def step_d(self, x):
        self.opt_d.zero_grad()
        loss_d = self.d(self.g(x).detach()).mean() - self.d(x).mean()
        loss_d.backward()
        {AFTER_D}

    def train_step(self, x, it):
        if self.w_gan > 0:
            self.step_d(x)
        if it % 5 == 0:
            self.opt_g.zero_grad()
            loss_g = -self.d(self.g(x)).mean()
            loss_g.backward()
            self.opt_g.step()


dist.init_process_group("gloo")
trainer = GanTrainer(float(sys.argv[1]))
for it in range(100):
    trainer.train_step(torch.randn(8, 4), it)
"""


def test_a_discriminator_step_right_after_its_backward_is_no_accumulation(tmp_path):
    found = lint_tree(tmp_path, {"train.py": GAN.replace("{AFTER_D}", "self.opt_d.step()")})
    assert [f for f in found if f.code == "DDP805"] == []
    # twin: the discriminator's step also waits for the generator's turn: its gradients pile up
    found = lint_tree(tmp_path / "twin", {"train.py": GAN.replace("{AFTER_D}", "pass")
                                          .replace("            self.opt_g.step()",
                                                   "            self.opt_g.step()\n            self.opt_d.step()")})
    assert [f.code for f in found if f.code == "DDP805"] == ["DDP805"]


# ------------------------------------- torch's ImageNet rank formula kept with the node's index at 0
SPAWN = """
import argparse
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def worker(gpu, ngpus_per_node, args):
    args.rank = args.rank * ngpus_per_node + gpu
    dist.init_process_group("nccl", init_method="env://", world_size=args.world_size, rank=args.rank)
    model = DDP(torch.nn.Linear(4, 1).cuda(gpu), device_ids=[gpu])
    if gpu == 0:
        torch.save(model.state_dict(), "best.pt")


def main():
    parser = argparse.ArgumentParser()
    {OPTION}
    args = parser.parse_args()
    args.ngpus_per_node = torch.cuda.device_count()
    args.world_size = args.ngpus_per_node
    {PIN}
    mp.spawn(worker, nprocs=args.ngpus_per_node, args=(args.ngpus_per_node, args))


main()
"""


def test_a_node_index_pinned_to_zero_is_a_one_node_job(tmp_path):
    found = lint_tree(tmp_path, {"train.py": SPAWN.replace("{OPTION}", "pass").replace("{PIN}", "args.rank = 0")})
    assert [f for f in found if f.code == "DDP806"] == []
    # twin: the node's index is an option a launch sets: local rank 0 of each node writes
    found = lint_tree(tmp_path / "twin", {"train.py": SPAWN.replace(
        "{OPTION}", 'parser.add_argument("--rank", type=int, default=0)').replace("{PIN}", "pass")})
    assert [f.code for f in found if f.code == "DDP806"] == ["DDP806"]


# --------------------------------- a second copy of the model under settings read by key: one write
COPY = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

config = {"save_plain": True, "gpu_mode": True, "folder": "out/"}


def save_model(model):
    torch.save(model.state_dict(), config["folder"] + "model.pt")
    if {TEST}:
        torch.save(model.module.state_dict(), config["folder"] + "model_plain.pt")


dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 1))
save_model(model)
"""


def test_a_second_copy_under_settings_is_part_of_the_same_write(tmp_path):
    found = [f for f in lint_tree(tmp_path, {"train.py": COPY.replace(
        "{TEST}", 'config["save_plain"] and config["gpu_mode"]')}) if f.code == "DDP806"]
    assert len(found) == 1 and "1 more write in the same block" in found[0].message
    # twin: a second file written on another occasion (a comparison, not a setting) is its own write
    found = [f for f in lint_tree(tmp_path / "twin", {"train.py": COPY.replace(
        "{TEST}", "model.module.weight.sum() > 0")}) if f.code == "DDP806"]
    assert len(found) == 2


# -------------------------------------- the else of a helper that says whether a group is set up
HELPER = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def is_distributed():
    return {RETURN}


def main():
    if torch.cuda.device_count() > 1:
        dist.init_process_group("nccl")
    model = torch.nn.Linear(4, 1)
    if is_distributed():
        model = DDP(model)
        if dist.get_rank() == 0:
            torch.save(model.module.state_dict(), "best.pt")
    else:
        torch.save(model.state_dict(), "best.pt")


main()
"""


def test_the_else_of_a_helper_returning_is_initialized_is_one_process(tmp_path):
    found = lint_tree(tmp_path, {"train.py": HELPER.replace("{RETURN}", "torch.distributed.is_initialized()")})
    assert [f for f in found if f.code == "DDP806"] == []
    # twin: the same write after the if/else runs on every rank of a distributed run
    found = lint_tree(tmp_path / "twin", {"train.py": HELPER.replace("{RETURN}", "torch.distributed.is_initialized()")
                                          .replace("    else:\n        torch.save(model.state_dict(), \"best.pt\")",
                                                   "    torch.save(model.state_dict(), \"last.pt\")")})
    assert [f.code for f in found if f.code == "DDP806"] == ["DDP806"]

