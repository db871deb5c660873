"""Trainers a registry builds by a name from the config (`@TRAINERS.register_module("Default")`,
then `TRAINERS.build(dict(type=cfg.train.type))`): when the script reaches no training step of
its own, the classes its modules register are live, so the trainer's accumulation is judged
(Pointcept). A local decorator whose wrapper calls the function only under a rank test (BasicSR's
`master_only`) puts that test around the whole function, whatever it is called."""

from __future__ import annotations

from tests.unit.test_lint_table_dispatch import lint

REGISTRY = """
class Registry:
    def __init__(self):
        self._classes = {}

    def register_module(self, name):
        def add(cls):
            self._classes[name] = cls
            return cls
        return add

    def build(self, cfg):
        cfg = dict(cfg)
        return self._classes[cfg.pop("type")](**cfg)


TRAINERS = Registry()
"""
TRAINER = """
import contextlib
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from engine.registry import TRAINERS


@TRAINERS.register_module("Default")
class Trainer:
    def __init__(self, loader, steps):
        self.model = DDP(torch.nn.Linear(2, 2))
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.loader = loader
        self.steps = steps
        self.counter = 0

    def train(self):
        for epoch in range(2):
            self.loader.sampler.set_epoch(epoch)
            for (x,) in self.loader:
                self.run_step(x)

    def run_step(self, x):
        {context}
            loss = self.model(x).sum()
            loss.backward()
        self.counter += 1
        if self.counter >= self.steps:
            self.optimizer.step()
            self.optimizer.zero_grad()
            self.counter = 0
"""
SCRIPT = """
import torch.distributed as dist
from engine.registry import TRAINERS
import engine.trainer


def main(name):
    dist.init_process_group("gloo")
    ds = TensorDataset(torch.randn(64, 2))
    loader = DataLoader(ds, sampler=DistributedSampler(ds))
    TRAINERS.build(dict(type=name, loader=loader, steps=4)).train()


main("Default")
"""


def modules(context: str) -> dict:
    return {"engine/__init__": "", "engine/registry": REGISTRY, "engine/trainer": TRAINER.format(context=context)}


def test_the_trainer_a_registry_builds_is_judged(tmp_path):
    found, _ = lint(tmp_path, SCRIPT, **modules("with contextlib.nullcontext():"))
    assert [(f.code, f.severity.value) for f in found if f.code == "DDP805"] == [("DDP805", "warning")]


def test_with_no_sync_on_the_micro_steps_it_is_clean(tmp_path):
    context = "with (self.model.no_sync() if self.counter + 1 < self.steps else contextlib.nullcontext()):"
    found, facts = lint(tmp_path, SCRIPT, **modules(context))
    assert [f.code for f in found if f.code == "DDP805"] == []
    assert facts.unreached_setup is None


ZOO = """
import torch
import torch.distributed as dist
from engine.registry import TRAINERS


@TRAINERS.register_module("Zoo")
class Zoo(torch.nn.Module):
    def sync(self):
        if dist.get_rank() == 0:
            dist.barrier()
"""


def test_registered_classes_stay_unread_when_the_script_trains_itself(tmp_path):
    script = SCRIPT.replace("import engine.trainer", "import engine.zoo").replace(
        "    TRAINERS.build(dict(type=name, loader=loader, steps=4)).train()",
        "    model = DDP(torch.nn.Linear(2, 2))\n    for epoch in range(2):\n"
        "        loader.sampler.set_epoch(epoch)\n        for (x,) in loader:\n"
        "            model(x).sum().backward()")
    mods = {"engine/__init__": "", "engine/registry": REGISTRY, "engine/zoo": ZOO}
    found, facts = lint(tmp_path, script.replace("import torch.distributed as dist",
                                                 "import torch.distributed as dist\n"
                                                 "from torch.nn.parallel import DistributedDataParallel as DDP"),
                        **mods)
    assert [f.code for f in found if f.code == "DDP801"] == []  # Zoo.sync is not reached: not judged
    assert facts.unreachable >= 1


MASTER_ONLY = """
import functools
import torch
import torch.distributed as dist


def get_dist_info():
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def master_only(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        rank, _ = get_dist_info()
        {gate}
            return func(*args, **kwargs)
    return wrapper
"""
SAVER = """
import torch
import torch.distributed as dist
from util import master_only


class Model:
    def __init__(self):
        self.net = torch.nn.Linear(2, 2)

    @master_only
    def save_network(self, epoch):
        torch.save(self.net.state_dict(), f"net_{epoch}.pth")


dist.init_process_group("gloo")
Model().save_network(0)
"""


def test_a_local_decorator_that_runs_the_function_on_rank_zero_gates_it(tmp_path):
    found, _ = lint(tmp_path, SAVER, util=MASTER_ONLY.format(gate="if rank == 0:"))
    assert [f.code for f in found if f.code == "DDP806"] == []


def test_a_decorator_that_calls_it_everywhere_gates_nothing(tmp_path):
    found, _ = lint(tmp_path, SAVER, util=MASTER_ONLY.format(gate="if True:"))
    assert [f.code for f in found if f.code == "DDP806"] == ["DDP806"]
