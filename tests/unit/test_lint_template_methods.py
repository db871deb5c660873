"""A base class's template method runs what its subclasses put in its hooks: `self._train_epoch()`
in BaseTrainer.train, where BaseTrainer's own `_train_epoch` only raises NotImplementedError, runs
the subclass's (STAR's trainers), and `self.model` read in a base method is what the subclasses set
(`self.model = DDP(...)` in the subclass's __init__). A subclass that overrides the template method
itself never runs the base one, and a hook reached this way does not make its class live."""

from __future__ import annotations

from tests.unit.test_lint_real_patterns import lint

EARLY_STOP = """
class Trainer:
    def __init__(self, early_stop):
        self.rank = dist.get_rank()
        self.early_stop = early_stop
        self.best = 1e9

    def train(self, epochs):
        not_improved = 0
        for epoch in range(epochs):
            loss = self._train_epoch(epoch)
            if self.rank == 0:
                if loss < self.best:
                    self.best, not_improved = loss, 0
                else:
                    not_improved += 1
                if not_improved > self.early_stop:
                    break

    def _train_epoch(self, epoch):
        raise NotImplementedError

class SegTrainer(Trainer):
    def _train_epoch(self, epoch):
        {work}
        return float(epoch)

SegTrainer(early_stop=3).train(100)
"""


def test_rank_zeros_early_stop_before_the_subclass_hooks_collective_is_found(tmp_path):
    found, _ = lint(tmp_path, EARLY_STOP.format(work="dist.barrier()"))
    assert [f.code for f in found if f.code in ("DDP809", "DDP801")] == ["DDP809"]


def test_a_hook_without_a_collective_leaves_nothing_to_wait_in(tmp_path):
    found, _ = lint(tmp_path, EARLY_STOP.format(work="pass"))
    assert [f.code for f in found if f.code in ("DDP809", "DDP801")] == []


PROTOTYPES = """
class BaseTrainer:
    def __init__(self, loader):
        self.rank = dist.get_rank()
        self.loader = loader

    def train(self, epochs):
        for epoch in range(epochs):
            self._train_epoch(epoch)
            if self.rank == 0:
                self.compute_prototypes()

    def compute_prototypes(self):
        with torch.no_grad():
            for (x,) in self.loader:
                {forward}

class Trainer(BaseTrainer):
    def __init__(self, model, loader):
        super().__init__(loader)
        self.model = DDP(model)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def _train_epoch(self, epoch):
        self.loader.sampler.set_epoch(epoch)
        for (x,) in self.loader:
            self.opt.zero_grad()
            self.model(x).sum().backward()
            self.opt.step()

model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))
ds = TensorDataset(torch.randn(64, 4))
Trainer(model, DataLoader(ds, sampler=DistributedSampler(ds), batch_size=8)).train(2)
"""


def test_a_base_methods_rank_zero_forward_through_the_subclass_ddp_model_is_found(tmp_path):
    found, _ = lint(tmp_path, PROTOTYPES.format(forward="self.model(x)"))
    assert [(f.code, f.severity.value) for f in found if f.code == "DDP801"] == [("DDP801", "warning")]


def test_through_the_plain_module_it_is_clean(tmp_path):
    found, _ = lint(tmp_path, PROTOTYPES.format(forward="self.model.module(x)"))
    assert [f.code for f in found if f.code == "DDP801"] == []


ENGINE = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class TrainerBase:
    def train(self):
        for epoch in range(2):
            for (x,) in self.loader:
                self.run_step(x)

    def run_step(self, x):
        raise NotImplementedError

class Trainer(TrainerBase):
    def __init__(self, loader):
        self.model = DDP(torch.nn.Linear(4, 1))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.loader = loader
        self.counter = 0

    def train(self):
        for epoch in range(2):
            self.loader.sampler.set_epoch(epoch)
            for (x,) in self.loader:
                self.run_step(x)

    def run_step(self, x):
        self.model(x).sum().backward()
        self.counter += 1
        if self.counter >= 4:
            self.opt.step()
            self.opt.zero_grad()
            self.counter = 0

class Unused(TrainerBase):
    def run_step(self, x):
        if dist.get_rank() == 0:
            dist.barrier()
"""
TEMPLATE = """
from engine import Trainer

ds = TensorDataset(torch.randn(64, 4))
Trainer(DataLoader(ds, sampler=DistributedSampler(ds))).train()
"""


def test_a_subclass_that_overrides_the_template_method_never_runs_the_base_one(tmp_path):
    found, _ = lint(tmp_path, TEMPLATE, engine=ENGINE)
    lines = ENGINE.splitlines()
    backward = next(i for i, line in enumerate(lines, 1) if line.strip() == "self.model(x).sum().backward()")
    assert [(f.code, f.location.file.rsplit("/", 1)[-1], f.location.line) for f in found
            if f.code == "DDP805"] == [("DDP805", "engine.py", backward)]
    # Unused.run_step may run under TrainerBase.train, but no Unused is ever built: not judged
    assert [f.code for f in found if f.code == "DDP801"] == []
