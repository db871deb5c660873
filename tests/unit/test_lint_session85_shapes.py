"""Shapes from session 85 (holdouts 117 and 118's leftovers and holdout 119's reading), each with
its twin, in our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# -------------------------------------------------- a base's save the run's class replaces
# The worker picks its runner class by name and joins the group only where the name says DDP;
# the base's fit() calls `self.save()`, which on the DDP runner is its own rank-0 save. The
# base's save (no rank test) runs only in the one-process run.
PICKED = """import sys

import torch.distributed as dist
import torch.multiprocessing as mp

import runners


def worker(rank, world, name):
    if "DDP" in name:
        dist.init_process_group("gloo", rank=rank, world_size=world)
    klass = getattr(runners, name)
    runner = klass(rank)
    runner.fit()
    runner.save()


if __name__ == "__main__":
    name = sys.argv[1]
    if "DDP" in name:
        mp.spawn(worker, nprocs=2, args=(2, name))
    else:
        worker(0, 1, name)
"""
RUNNERS = """import torch


class SimpleRunner:
    def __init__(self, rank):
        self.rank = rank
        self.net = torch.nn.Linear(2, 2)

    def dump(self, state, path):
        torch.save(state, path)

    def save(self):
        self.dump(self.net.state_dict(), "net.pt")

    def fit(self):
        for step in range(4):
            self.net(torch.randn(2, 2)).sum().backward()
            if step % 2 == 0:
                self.save()


class DDPRunner(SimpleRunner):
    def __init__(self, rank):
        super().__init__(rank)
        self.net = torch.nn.parallel.DistributedDataParallel(self.net)

    def save(self):
        if self.rank == 0:
            self.dump(self.net.module.state_dict(), "net.pt")
"""


def test_a_base_save_no_distributed_class_runs_is_not_every_ranks(tmp_path):
    found = lint_tree(tmp_path, {"train.py": PICKED, "runners.py": RUNNERS})
    assert _codes(found, "DDP806") == []


def test_twin_a_base_save_the_group_may_run_is_every_ranks(tmp_path):
    joined = PICKED.replace('    if "DDP" in name:\n        dist.init_process_group', '    dist.init_process_group')
    assert joined != PICKED
    found = lint_tree(tmp_path, {"train.py": joined, "runners.py": RUNNERS})
    assert [f.location.line for f in _codes(found, "DDP806")] == [RUNNERS.splitlines().index("        torch.save(state, path)") + 1]


# -------------------------------------------------- an object holding the plain module, deep
# The runner hands the plain net to a denoiser, then has Accelerate prepare the net (in a run of
# several processes, a DDP wrapper) and keeps that wrapper only to save its weights; the loss is
# the denoiser's forward -> loss -> losses, which runs the plain net. (The prepared DataLoader
# handed to the progress bar is a loader, not a wrapper.)
HOLDER = """from functools import partial

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset
from tqdm import tqdm


class Denoiser(torch.nn.Module):
    def __init__(self, net, steps):
        super().__init__()
        self.net = net
        self.steps = steps

    def losses(self, x, t):
        noisy = x + torch.randn_like(x) * t
        out = self.net(noisy)
        return ((out - x) ** 2).mean()

    def loss(self, x):
        t = torch.rand(1)
        return self.losses(x, t)

    def forward(self, x):
        return self.loss(x)


class Runner:
    def __init__(self):
        self.accelerator = Accelerator()
        net = torch.nn.Linear(4, 4)
        denoiser = Denoiser(net, 10)
        self.net = self.accelerator.prepare(net)
        self.denoiser = denoiser.to(self.accelerator.device)
        self.opt = torch.optim.SGD(net.parameters(), lr=0.1)

    def fit(self):
        loader = DataLoader(TensorDataset(torch.randn(16, 4)), batch_size=4)
        loader = self.accelerator.prepare(loader)
        shown = partial(tqdm, desc="batch") if self.accelerator.is_main_process else (lambda items: items)
        for step, (x,) in enumerate(shown(loader)):
            loss = self.denoiser(x)
            self.opt.zero_grad()
            self.accelerator.backward(loss)
            self.opt.step()
        if self.accelerator.is_main_process:
            torch.save(self.accelerator.unwrap_model(self.net).state_dict(), "net.pt")


if __name__ == "__main__":
    Runner().fit()
"""


def test_a_loss_the_holder_computes_round_the_prepared_wrapper_is_reported(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": HOLDER}), "DDP810")
    assert [(f.severity.name, f.location.line) for f in found] == [("ERROR", _line(HOLDER, "self.accelerator.backward(loss)"))]


def test_twin_a_holder_handed_the_wrapper_is_not(tmp_path):
    handed = HOLDER.replace("        denoiser = Denoiser(net, 10)\n", "").replace(
        "        self.net = self.accelerator.prepare(net)\n",
        "        self.net = self.accelerator.prepare(net)\n        denoiser = Denoiser(self.net, 10)\n")
    assert handed != HOLDER
    assert _codes(lint_tree(tmp_path, {"train.py": handed}), "DDP810") == []


def test_twin_a_wrapper_handed_on_may_run(tmp_path):
    runs = HOLDER.replace("        self.opt = torch.optim", "        self.probe = Denoiser(self.net, 1)\n        self.opt = torch.optim")
    assert runs != HOLDER
    assert _codes(lint_tree(tmp_path, {"train.py": runs}), "DDP810") == []


def test_twin_a_wrapper_that_runs_elsewhere_is_not_idle(tmp_path):
    runs = HOLDER.replace("        if self.accelerator.is_main_process:\n", "        self.score(x)\n        if self.accelerator.is_main_process:\n").replace(
        "    def fit(self):", "    def score(self, x):\n        with torch.no_grad():\n            return self.net(x)\n\n    def fit(self):")
    assert runs != HOLDER
    assert _codes(lint_tree(tmp_path, {"train.py": runs}), "DDP810") == []


# -------------------------------------------------- a sibling class sets the group up
# A factory hands out the runner class the option names; only the Shared runner's own `_setup`
# joins a process group, so the Plain runner's sampler-less loader is the one-process run's.
# (The exporter's set-up sits on the export command's side of the script's switch.)
SIBLINGS = """import argparse

import torch
import torch.distributed as dist

from runners import pick_runner


class Exporter:
    def __init__(self, args):
        if args.shared:
            dist.init_process_group("gloo")
        self.args = args

    def run(self):
        print(self.args.runner, dist.is_initialized())


def train(args):
    klass = pick_runner(args)
    runner = klass(args, torch.utils.data.TensorDataset(torch.randn(16, 2)))
    runner.fit(torch.nn.Linear(2, 2))


def export(args):
    Exporter(args).run()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runner", default="plain")
    parser.add_argument("--export", action="store_true")
    parser.add_argument("--shared", action="store_true")
    args = parser.parse_args()
    if not args.export:
        train(args)
    else:
        export(args)
"""
SIBLING_RUNNERS = """import torch.distributed as dist
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


class Base:
    def __init__(self, args, data):
        self.args = args
        self.data = data
        self._setup()
        self._loaders()

    def _setup(self):
        self.world = 1

    def _loaders(self):
        raise NotImplementedError

    def fit(self, model):
        for (x,) in self.loader:
            model(x).sum().backward()


class Plain(Base):
    def _loaders(self):
        self.loader = DataLoader(self.data, batch_size=8, shuffle=True)


class Shared(Base):
    def _setup(self):
        dist.init_process_group("gloo")
        self.world = dist.get_world_size()

    def _loaders(self):
        self.loader = DataLoader(self.data, batch_size=4, sampler=DistributedSampler(self.data))


def pick_runner(args):
    if args.runner == "plain":
        return Plain
    if args.runner == "shared":
        return Shared
    raise ValueError(args.runner)
"""


def test_a_loader_only_a_runner_that_never_joins_the_group_builds_is_not_reported(tmp_path):
    found = lint_tree(tmp_path, {"train.py": SIBLINGS, "runners.py": SIBLING_RUNNERS})
    assert _codes(found, "DDP802") == []


def test_twin_a_runner_inheriting_the_set_up_is_reported(tmp_path):
    # (the set-up moves to the base: every runner joins the group)
    base = SIBLING_RUNNERS.replace("    def _setup(self):\n        self.world = 1\n",
                                   "    def _setup(self):\n        dist.init_process_group(\"gloo\")\n        self.world = 1\n")
    assert base != SIBLING_RUNNERS
    found = lint_tree(tmp_path, {"train.py": SIBLINGS, "runners.py": base})
    assert [f.location.line for f in _codes(found, "DDP802")] == [_line(base, "batch_size=8")]


def test_twin_a_set_up_on_the_same_way_is_reported(tmp_path):
    # (the exporter runs in the training command too: its group may hold the plain runner)
    both = SIBLINGS.replace("    klass = pick_runner(args)\n", "    Exporter(args)\n    klass = pick_runner(args)\n")
    assert both != SIBLINGS
    found = lint_tree(tmp_path, {"train.py": both, "runners.py": SIBLING_RUNNERS})
    assert [f.location.line for f in _codes(found, "DDP802")] == [_line(SIBLING_RUNNERS, "batch_size=8")]


# -------------------------------------------------- a module named on each side of an if/elif
# The runner names the module to load in a variable, one spelled name on each side, then loads it
# with importlib: each module named is read (FedDrive's federated and centralised mains).
RUN_BY_NAME = """import argparse
import importlib


def run():
    if args.framework == "a":
        entry = "pkg_a.main"
        main = getattr(importlib.import_module(entry), "main")
        main()
    elif args.framework == "b":
        entry = "pkg_b.main"
        main = getattr(importlib.import_module(entry), "main")
        main()
    else:
        raise NotImplementedError


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--framework", required=True)
    args = parser.parse_args()
    run()
"""
PKG_A = """import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))
    model(torch.randn(4, 2)).sum().backward()
    torch.save(model.module.state_dict(), "a.pt")
"""
PKG_B = PKG_A.replace("a.pt", "b.pt")


def _by_name_tree(run: str) -> dict:
    return {"run.py": run, "pkg_a/__init__.py": "", "pkg_a/main.py": PKG_A, "pkg_b/__init__.py": "", "pkg_b/main.py": PKG_B}


def test_a_module_spelled_on_each_side_is_read(tmp_path):
    found = lint_tree(tmp_path, _by_name_tree(RUN_BY_NAME), script="run.py")
    assert sorted((f.location.file.rpartition("/")[0][-5:], f.location.line) for f in _codes(found, "DDP806")) == \
        [("pkg_a", 9), ("pkg_b", 9)]


def test_twin_a_module_named_at_run_time_is_not_guessed(tmp_path):
    # (one side's name comes from the command line: nothing spells it)
    unspelled = RUN_BY_NAME.replace('        entry = "pkg_b.main"', "        entry = args.module")
    assert unspelled != RUN_BY_NAME
    found = lint_tree(tmp_path, _by_name_tree(unspelled), script="run.py")
    assert _codes(found, "DDP806") == []  # (the spelled side alone is no list of what the name holds)


# -------------------------------------------------- keywords handed beside a Hydra config
# `instantiate(cfg.trainer, device=local, model=model)`: the trainer the config names gets the
# LOCAL_RANK as `device`, so `if self.device == 0:` is a rank test.
HYDRA_MAIN = """import os

import hydra
import torch
import torch.distributed as dist
from hydra.utils import instantiate


@hydra.main(config_path="configs", config_name="main")
def main(cfg):
    local = int(os.environ["LOCAL_RANK"])
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))
    trainer = instantiate(cfg.trainer, device=local, model=model)
    trainer.train()


if __name__ == "__main__":
    main()
"""
HYDRA_TRAINERS = """import torch


class Trainer:
    def __init__(self, device, model, epochs=2):
        self.device = device
        self.model = model
        self.epochs = epochs

    def train(self):
        for _ in range(self.epochs):
            self.model(torch.randn(4, 2)).sum().backward()
            if self.device == 0:
                self.save()

    def save(self):
        torch.save(self.model.module.state_dict(), "model.pt")
"""
HYDRA_CONFIG = "trainer:\n  _target_: trainers.Trainer\n  epochs: 3\n"


def test_a_keyword_handed_beside_the_config_reaches_the_target(tmp_path):
    found = lint_tree(tmp_path, {"train.py": HYDRA_MAIN, "trainers.py": HYDRA_TRAINERS, "configs/main.yaml": HYDRA_CONFIG})
    assert _codes(found, "DDP806") == []


def test_twin_a_constant_handed_beside_the_config_is_no_rank(tmp_path):
    constant = HYDRA_MAIN.replace("device=local, model=model", "device=0, model=model")
    assert constant != HYDRA_MAIN
    found = lint_tree(tmp_path, {"train.py": constant, "trainers.py": HYDRA_TRAINERS, "configs/main.yaml": HYDRA_CONFIG})
    assert [f.location.line for f in _codes(found, "DDP806")] == [_line(HYDRA_TRAINERS, "torch.save(")]


# -------------------------------------------------- a record's rank field, its holder not followed
# The run's environment record (a dataclass whose `master` every construction sets from the rank,
# or True where no group is set up) is carried in an OmegaConf config; the trainer tests
# `self.env.master`. One local record class has that field: it is the rank test.
RECORD_ENV = """import os
from dataclasses import dataclass

import torch.distributed as dist


@dataclass
class Env:
    world: int
    master: bool


def setup():
    if int(os.environ.get("WORLD_SIZE", 1)) > 1:
        dist.init_process_group("gloo")
        return Env(world=dist.get_world_size(), master=dist.get_rank() == 0)
    return Env(1, True)
"""
RECORD_MAIN = """import torch
from omegaconf import OmegaConf

from env import setup


class Trainer:
    def __init__(self, env, model):
        self.env = env
        self.model = model

    def fit(self):
        for _ in range(3):
            self.model(torch.randn(4, 2)).sum().backward()
            if self.env.master:
                torch.save(self.model.module.state_dict(), "model.pt")


if __name__ == "__main__":
    config = OmegaConf.create({"runtime": {}})
    config.runtime.env = setup()
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))
    Trainer(config.runtime.env, model).fit()
"""


def test_a_field_only_the_rank_record_has_is_a_rank_test(tmp_path):
    found = lint_tree(tmp_path, {"train.py": RECORD_MAIN, "env.py": RECORD_ENV})
    assert _codes(found, "DDP806") == []


def test_twin_a_field_two_records_have_is_not_taken_for_the_rank(tmp_path):
    other = RECORD_ENV + "\n\n@dataclass\nclass Node:\n    name: str\n    master: bool\n"
    found = lint_tree(tmp_path, {"train.py": RECORD_MAIN, "env.py": other})
    assert [f.location.line for f in _codes(found, "DDP806")] == [_line(RECORD_MAIN, "torch.save(")]


# -------------------------------------------------- a training-only gather, evaluated in eval mode
# The module all-gathers only while training; rank 0's evaluation puts it in eval mode first, so
# on that way the gather never runs.
EVAL_MODE = """import torch
import torch.distributed as dist


class Retriever(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def similarity(self, text, video):
        video = self.proj(video)
        if self.training:
            gathered = [torch.zeros_like(video) for _ in range(dist.get_world_size())]
            dist.all_gather(gathered, video)
            video = torch.cat(gathered)
        return text @ video.t()


def evaluate(model, batches):
    model.eval()
    with torch.no_grad():
        for text, video in batches:
            print(model.similarity(text, video).max())


def main():
    dist.init_process_group("gloo")
    model = Retriever()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    batches = [(torch.randn(2, 4), torch.randn(2, 4)) for _ in range(3)]
    for text, video in batches:
        model.train()
        loss = model.similarity(text, video).sum()
        loss.backward()
        optimizer.step()
    if dist.get_rank() == 0:
        evaluate(model, batches)


if __name__ == "__main__":
    main()
"""


def test_a_training_only_collective_on_an_eval_mode_way_is_not_reported(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": EVAL_MODE}), "DDP801") == []


def test_twin_the_same_way_in_training_mode_is_reported(tmp_path):
    training = EVAL_MODE.replace("    model.eval()\n", "    model.train()\n")
    assert training != EVAL_MODE
    found = _codes(lint_tree(tmp_path, {"train.py": training}), "DDP801")
    assert [f.location.line for f in found] == [_line(training, "        evaluate(model, batches)")]


# -------------------------------------------------- two stages' losses in one loop
# Each stage binds `losses` and `total` afresh and backs through its own module inside the
# wrapper; the second stage's nets come from a property returning a tuple of the DDP fields.
# Each backward is judged by the bindings that reach it.
STAGES = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(4, 4)

    def compute_loss(self, batch):
        return {"total": self.body(batch).pow(2).mean()}


class Agent:
    def __init__(self):
        dist.init_process_group("gloo")
        self.encoder = DistributedDataParallel(Net())
        self.policy = DistributedDataParallel(Net())
        self.encoder_opt = torch.optim.SGD(self.encoder.parameters(), lr=0.1)
        self.policy_opt = torch.optim.SGD(self.policy.parameters(), lr=0.1)

    @property
    def policies(self):
        return (self.policy,)

    @property
    def policy_opts(self):
        return (self.policy_opt,)

    def train(self, steps):
        for _ in range(steps):
            batch = torch.randn(8, 4)
            losses = self.encoder.module.compute_loss(batch)
            total = losses["total"]
            self.encoder_opt.zero_grad()
            total.backward()
            self.encoder_opt.step()
            for opt, policy in zip(self.policy_opts, self.policies):
                losses = policy.module.compute_loss(batch)
                total = losses["total"]
                opt.zero_grad()
                total.backward()
                opt.step()


if __name__ == "__main__":
    Agent().train(3)
"""


def test_each_stage_bypassing_its_wrapper_is_reported_at_its_own_backward(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": STAGES}), "DDP810")
    lines = [i + 1 for i, text in enumerate(STAGES.splitlines()) if text.strip() == "total.backward()"]
    assert sorted(f.location.line for f in found) == lines


def test_twin_a_stage_through_its_wrapper_leaves_the_other_alone_reported(tmp_path):
    through = STAGES.replace("                losses = policy.module.compute_loss(batch)",
                             '                losses = {"total": policy(batch).pow(2).mean()}')
    assert through != STAGES
    found = _codes(lint_tree(tmp_path, {"train.py": through}), "DDP810")
    assert [f.location.line for f in found] == [_line(through, "total.backward()")]


def test_twin_a_loss_that_reads_the_wrappers_own_forward_is_not_round_it(tmp_path):
    # (the first stage's loss also reads features the wrapper's `.forward(...)` computed)
    mixed = STAGES.replace('            total = losses["total"]\n            self.encoder_opt',
                           '            total = losses["total"] + self.encoder.forward(batch).mean()\n            self.encoder_opt')
    assert mixed != STAGES
    found = _codes(lint_tree(tmp_path, {"train.py": mixed}), "DDP810")
    assert [f.location.line for f in found] == [_line(mixed, "                total.backward()")]


# -------------------------------------------------- the wrapper's forward run first, its loss read back
# The step runs `ddp.forward(x)` as a statement, then asks the module for the loss it kept: the
# backward follows a DDP forward. (Running the module's own forward there is the bypass.)
KEPT_LOSS = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


class Flow(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(4, 4)
        self.kept = None

    def forward(self, x):
        self.kept = self.net(x)
        return self.kept

    def get_loss(self):
        return self.kept.pow(2).mean()


def main():
    dist.init_process_group("gloo")
    model = Flow()
    ddp = DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        ddp.forward(torch.randn(8, 4))
        loss = model.get_loss()
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
"""


def test_a_loss_read_back_after_the_wrappers_forward_is_not_round_it(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": KEPT_LOSS}), "DDP810") == []


def test_twin_the_modules_own_forward_first_is_round_it(tmp_path):
    plain = KEPT_LOSS.replace("        ddp.forward(torch.randn(8, 4))", "        model.forward(torch.randn(8, 4))")
    assert plain != KEPT_LOSS
    found = _codes(lint_tree(tmp_path, {"train.py": plain}), "DDP810")
    assert [f.location.line for f in found] == [_line(plain, "loss.backward()")]


# -------------------------------------------------- Ray Train with one worker
# report() synchronises Ray Train's workers; where every run the source configures has one
# worker, rank 0's report waits for no one.
RAY_ONE = """import torch
import torch.distributed as dist
from ray import train
from ray.train import ScalingConfig
from ray.train.torch import TorchTrainer


def loop(config):
    model = torch.nn.Linear(2, 2)
    for epoch in range(3):
        loss = model(torch.randn(4, 2)).sum()
        loss.backward()
        if dist.get_rank() == 0:
            train.report({"loss": loss.item()})


if __name__ == "__main__":
    TorchTrainer(loop, scaling_config=ScalingConfig(num_workers=1)).fit()
"""


def test_a_report_on_rank_0_of_one_ray_worker_is_not_reported(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": RAY_ONE}), "DDP801") == []


def test_twin_a_report_on_rank_0_of_four_workers_is_an_error(tmp_path):
    four = RAY_ONE.replace("num_workers=1", "num_workers=4")
    found = _codes(lint_tree(tmp_path, {"train.py": four}), "DDP801")
    assert [(f.severity.name, f.location.line) for f in found] == [("ERROR", _line(four, "train.report("))]


# -------------------------------------------------- the plain module under another name
# The wrapper is built round `compiled` (the model, or torch.compile of it); the step calls
# `raw_model`, a copy of the model's name: the module's own forward.
RAW_COPY = """import argparse

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main(args):
    dist.init_process_group("gloo")
    model = torch.nn.Linear(8, 8)
    compiled = model
    if args.compile:
        compiled = torch.compile(model)
    wrapped = DDP(compiled)
    raw_model = model
    opt = torch.optim.AdamW(wrapped.parameters(), lr=1e-3)
    for step in range(10):
        loss = raw_model(torch.randn(4, 8)).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--compile", action="store_true")
    main(parser.parse_args())
"""


def test_a_forward_of_the_wrapped_modules_other_name_is_round_the_wrapper(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": RAW_COPY}), "DDP810")
    assert [(f.severity.name, f.location.line) for f in found] == [("ERROR", _line(RAW_COPY, "loss.backward()"))]


def test_twin_a_forward_of_a_model_never_wrapped_is_not(tmp_path):
    # (raw_model is another module: nothing wraps it)
    other = RAW_COPY.replace("    raw_model = model\n", "    raw_model = torch.nn.Linear(8, 8)\n")
    assert other != RAW_COPY
    assert _codes(lint_tree(tmp_path, {"train.py": other}), "DDP810") == []
