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


def _saves(tmp_path, annotation: str, parts: str) -> list:
    found = lint_tree(tmp_path, {"train.py": TRAIN.replace("{PARTS}", parts),
                                 "data.py": DATA.replace("{ANNOTATION}", annotation)})
    return [f for f in found if f.code == "DDP806"]


def test_items_of_a_zip_over_annotated_splits_are_datasets_not_the_trainer(tmp_path):
    assert _saves(tmp_path, "Tuple[Shards, Shards, Shards]", "parts = [train, val, test]") == []
    assert _saves(tmp_path / "lower", "tuple[Shards, Shards, Shards]", "parts = [train, val, test]") == []


def test_without_the_annotation_the_save_is_still_guessed_by_name(tmp_path):
    # twin: nothing says what the items are, so the call stays a guess by the method's name and
    # the saves it may reach are judged as called without a rank test (as before)
    assert _saves(tmp_path, "tuple", "parts = [train, val, test]")


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
    # twin: a rank test beside the flag settles nothing (rank 0's own flag decides for it)
    assert _decisions(tmp_path / "r", "args.check", "CHECK and not done and rank == 0")


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
