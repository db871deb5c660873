"""Shapes from session 66's reading of holdout 93 (after its unread scores), each with its twin, in
our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# -------------------------------------------------- `with model.no_sync():` left on for every
# micro-step (around the whole loop, or entered on every pass round the forward) while the loop
# steps: no backward ever all-reduces, unless the script all-reduces the gradients by hand
NO_SYNC_LOOP = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def train_epoch(batches):
    with model.no_sync():  # the no_sync
        for x in batches:
            model(x).sum().backward()
            BY_HAND
            opt.step()
            opt.zero_grad()


for epoch in range(2):
    train_epoch(torch.randn(10, 2, 4))
"""
HAND_REDUCE = "for p in model.parameters():\n                dist.all_reduce(p.grad)"


def test_no_sync_around_the_whole_stepping_loop(tmp_path):
    body = NO_SYNC_LOOP.replace("BY_HAND", "pass")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP805")] == [_line(body, "# the no_sync")]


def test_twin_the_gradients_all_reduced_by_hand_before_the_step(tmp_path):
    body = NO_SYNC_LOOP.replace("BY_HAND", HAND_REDUCE)
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP805")


NO_SYNC_PASS = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in torch.randn(10, 2, 4):
    with CONTEXT:  # the no_sync
        loss = model(x).sum()
    loss.backward()
    opt.step()
    opt.zero_grad()
"""


def test_no_sync_entered_round_every_passs_forward(tmp_path):
    body = NO_SYNC_PASS.replace("CONTEXT", "model.no_sync()")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP805")] == [_line(body, "# the no_sync")]


def test_twin_a_context_that_syncs(tmp_path):
    body = NO_SYNC_PASS.replace("CONTEXT", "torch.autocast('cpu')")
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP805")


# -------------------------------------------------- a rank's own decision to skip a backward that
# runs inside `with model.no_sync():` (the forward there too), the gradients all-reduced by hand
# after the block: the skipped backward all-reduces nothing
SKIPPED = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in torch.randn(10, 2, 4):
    with CONTEXT:
        out = model(x)
        if out.sum() > 0:  # the decision
            out[:, 0].sum().backward(retain_graph=True)
        out[:, 1].sum().backward()
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
    opt.step()
    opt.zero_grad()
"""


def test_a_skipped_backward_inside_no_sync_waits_for_no_one(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": SKIPPED.replace("CONTEXT", "model.no_sync()")}), "DDP809")


def test_twin_the_same_decision_with_the_sync_on(tmp_path):
    body = SKIPPED.replace("CONTEXT", "torch.autocast('cpu')")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP809")] == [_line(body, "# the decision")]


# -------------------------------------------------- a Hugging Face Trainer subclass whose
# get_train_dataloader override returns a loader it never prepares: the base method's
# accelerator.prepare() is what shards the batches
TRAINER = """
import torch
from torch.utils.data import DataLoader, RandomSampler, TensorDataset
from transformers import Trainer, TrainingArguments


class CyclingTrainer(Trainer):
    def get_train_dataloader(self):
        data = self.train_dataset
        loader = DataLoader(data, sampler=RandomSampler(data), batch_size=8)  # the loader
        return RETURNED


def main():
    model = torch.nn.Linear(4, 1)
    args = TrainingArguments(output_dir="out")
    trainer = CyclingTrainer(model=model, args=args, train_dataset=TensorDataset(torch.randn(64, 4)))
    trainer.train()


if __name__ == "__main__":
    main()
"""


def test_a_trainers_unprepared_training_loader_override(tmp_path):
    body = TRAINER.replace("RETURNED", "loader")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [(f.location.line, f.severity.value) for f in _codes(found, "DDP802")] == \
        [(_line(body, "# the loader"), "error")]


def test_twin_the_override_prepares_its_loader(tmp_path):
    body = TRAINER.replace("RETURNED", "self.accelerator.prepare(loader)")
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP802")


# -------------------------------------------------- a dataset whose draws come from generators
# __getitem__ makes from the index and hands to a helper: the workers' seeds decide nothing
HANDED = """
import random

import numpy as np
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Tokens(Dataset):
    def __len__(self):
        return 64

    def pick(self, np_rng):
        return DRAW

    def __getitem__(self, idx):
        rng = np.random.RandomState(idx)
        return torch.full((4,), float(self.pick(rng)))


dist.init_process_group("gloo")
torch.manual_seed(0)
ds = Tokens()
loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds), num_workers=2)  # the loader
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
for epoch in range(2):
    loader.sampler.set_epoch(epoch)
    for x in loader:
        model(x).sum().backward()
"""


def test_draws_from_a_generator_the_caller_made_from_the_index(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": HANDED.replace("DRAW", "np_rng.randint(10)")}), "DDP808")


def test_twin_the_helper_draws_from_the_global_stream(tmp_path):
    body = HANDED.replace("DRAW", "np.random.randint(10)")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP808")] == [_line(body, "# the loader")]


# -------------------------------------------------- pipeline stages (torch.distributed.pipelining):
# every stage reads the same batches, the same random draws included, by design
PIPELINE = """
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset


class Crops(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.rand(4)


def loss_fn(out, target):
    return out.sum()


dist.init_process_group("gloo")
torch.manual_seed(0)
train_loader = DataLoader(Crops(), batch_size=8, shuffle=True, num_workers=2)  # the loader
STAGES
for x in train_loader:
    schedule.step(x)
"""
STAGED = """from torch.distributed.pipelining import PipelineStage, ScheduleGPipe
stage = PipelineStage(torch.nn.Linear(4, 4), dist.get_rank(), dist.get_world_size(), torch.device("cpu"))
schedule = ScheduleGPipe(stage, n_microbatches=2, loss_fn=loss_fn)"""
REPLICATED = """model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 4))
schedule = None"""


def test_pipeline_stages_read_the_same_draws_by_design(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": PIPELINE.replace("STAGES", STAGED)}), "DDP808")


def test_twin_data_parallel_ranks_draw_alike(tmp_path):
    body = PIPELINE.replace("STAGES", REPLICATED).replace("schedule.step(x)", "model(x).sum().backward()")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP808")] == [_line(body, "# the loader")]


# -------------------------------------------------- Fabric's save before 2.0 took the state first,
# `fabric.save(state, path)`, and ran no barrier; 2.0's `fabric.save(path, state)` ends in one
FABRIC = """
import torch
from lightning.fabric import Fabric

fabric = Fabric()
fabric.launch()
model, opt = fabric.setup(torch.nn.Linear(4, 1), torch.optim.SGD(torch.nn.Linear(4, 1).parameters(), lr=0.1))
for step in range(100):
    fabric.backward(model(torch.randn(2, 4)).sum())
    opt.step()
    if step % 10 == 0 and fabric.global_rank == 0:
        checkpoint = {"model": model.state_dict(), "step": step}
        SAVE  # the save
"""


def test_a_content_first_fabric_save_is_the_old_api_without_a_barrier(tmp_path):
    body = FABRIC.replace("SAVE", 'fabric.save(checkpoint, "ckpt.pt")')
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")


def test_twin_the_path_first_save_ends_in_a_barrier(tmp_path):
    body = FABRIC.replace("SAVE", 'fabric.save("ckpt.pt", checkpoint)')
    found = lint_tree(tmp_path, {"train.py": body})
    assert [(f.location.line, f.severity.value) for f in _codes(found, "DDP801")] == \
        [(_line(body, "# the save"), "error")]


# -------------------------------------------------- a DataLoader subclass built by its own
# classmethod (`return cls(...)`), the class picked from a module by a configured name
LOADERS = """
import torch
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class Points(TensorDataset):
    @classmethod
    def from_config(cls, n):
        return cls(torch.randn(n, 4))


class PlainLoader(DataLoader):
    @classmethod
    def from_config(cls, dataset):
        return cls(dataset, batch_size=8, SAMPLING)  # the loader
"""
PICKED = """
import os

import torch
import torch.distributed as dist
from torch.utils.data import TensorDataset

import loaders

dist.init_process_group("gloo")
loader_type = getattr(loaders, os.environ.get("LOADER", "PlainLoader"))
dataset_type = getattr(loaders, os.environ.get("DATA", "Points"))
loader = loader_type.from_config(dataset_type.from_config(64))
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
for epoch in range(2):
    for (x,) in loader:
        model(x).sum().backward()
"""


def test_a_loader_class_built_by_its_classmethod_after_a_named_pick(tmp_path):
    files = {"train.py": PICKED, "loaders.py": LOADERS.replace("SAMPLING", "shuffle=True")}
    found = lint_tree(tmp_path, files)
    assert [f.location.line for f in _codes(found, "DDP802")] == [_line(LOADERS, "# the loader")]


def test_twin_the_classmethod_shards_its_loader(tmp_path):
    files = {"train.py": PICKED, "loaders.py": LOADERS.replace("SAMPLING", "sampler=DistributedSampler(dataset)")}
    assert not _codes(lint_tree(tmp_path, files), "DDP802")
