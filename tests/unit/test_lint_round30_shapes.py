"""Shapes from session 21 (the s20 holdout's false alarms and blind round 30), each with its
healthy twin, written in our own words."""

from __future__ import annotations

import textwrap

from ddpdoctor.lint.driver import gather, lint_results
from tests.unit.test_lint_round17_shapes import lint_plain
from tests.unit.test_lint_round25_shapes import lines_of

# -------------------------------------------------- a flag set on rank 0, then broadcast to all
BROADCAST_FLAG = """
import os, torch, torch.distributed as dist

def load(path, rank, distributed):
    found = None
    if rank == 0:
        found = os.path.isfile(path)
    if distributed:
        {sync}
    if found is not None:
        t = torch.zeros(1)
        dist.broadcast(t, 0)

dist.init_process_group("gloo")
load("ckpt.pt", dist.get_rank(), dist.get_world_size() > 1)
"""


def test_a_flag_broadcast_from_rank_0_is_the_same_on_every_rank(tmp_path):
    code = BROADCAST_FLAG.replace("{sync}", "found = bcast_object(found)").replace(
        "def load", "def bcast_object(x):\n    box = [x]\n    dist.broadcast_object_list(box, 0)\n    return box[0]\n\ndef load")
    assert lines_of(lint_plain(tmp_path, code), "DDP801") == []


def test_its_twin_a_flag_left_as_rank_0_set_it_keeps_the_broadcast_on_rank_0(tmp_path):
    code = BROADCAST_FLAG.replace("{sync}", "pass")
    assert lines_of(lint_plain(tmp_path, code), "DDP801") == [11]


# -------------------------------------------------- a dataset sharded by rank, returned in a tuple
UNPACKED = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset

class Lines(Dataset):
    def __init__(self, path, part=0, parts=1):
        self.items = [l for i, l in enumerate(open(path)) if i % parts == part]
    def __len__(self):
        return len(self.items)
    def __getitem__(self, i):
        return self.items[i]

def load(path):
    data = {made}
    count = torch.tensor(len(data))
    dist.all_reduce(count, dist.ReduceOp.MIN)
    return data, count

def one_epoch(model, data):
    loader = DataLoader(data, shuffle=True, batch_size=4)
    for x in loader:
        model(x).sum().backward()

if __name__ == "__main__":
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    data, count = load("lines.txt")
    for epoch in range(3):
        one_epoch(model, data)
"""


def test_a_dataset_given_the_rank_and_returned_in_a_tuple_is_sharded(tmp_path):
    code = UNPACKED.replace("{made}", "Lines(path, dist.get_rank(), dist.get_world_size())")
    assert lines_of(lint_plain(tmp_path, code), "DDP802") == []


def test_its_twin_the_same_dataset_not_given_the_rank_is_read_whole_by_every_rank(tmp_path):
    assert lines_of(lint_plain(tmp_path, UNPACKED.replace("{made}", "Lines(path)")), "DDP802") == [19]


# -------------------------------------------------- a loader built by a helper, iterated at its call
ITERATED_AT_CALL = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

def make_loader(data):
    return DataLoader(data, batch_size=4{sampler})

dist.init_process_group("gloo")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
data = TensorDataset(torch.randn(64, 4))
for (x,) in make_loader(data):
    model(x).sum().backward()
"""


def test_a_loader_iterated_where_its_builder_is_called_trains_without_a_sampler(tmp_path):
    assert lines_of(lint_plain(tmp_path, ITERATED_AT_CALL.replace("{sampler}", ", shuffle=True")), "DDP802") == [5]


def test_its_twin_the_builder_gives_it_a_distributed_sampler(tmp_path):
    code = ITERATED_AT_CALL.replace("{sampler}", ", sampler=DistributedSampler(data)")
    assert lines_of(lint_plain(tmp_path, code), "DDP802") == []


# -------------------------------------------------- the project's own Accelerator subclass
OWN_ACCELERATOR = """
import os, torch, torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset
from myacc import MyAccelerator

def ensure_group():
    if int(os.getenv("WORLD_SIZE", 1)) > 1 and not dist.is_initialized():
        dist.init_process_group("gloo")

acc = MyAccelerator()
model = acc.prepare(torch.nn.Linear(4, 1))
loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8, shuffle=True)
loader = acc.prepare(loader)
ensure_group()
for (x,) in loader:
    acc.backward(model(x).sum())
"""
DERIVED = """
import accelerate

class MyAccelerator(accelerate.Accelerator):
    def __repr__(self):
        return "mine"
"""
PLAIN = """
class MyAccelerator:
    def prepare(self, thing):
        return thing
    def backward(self, loss):
        loss.backward()
"""


def test_a_local_subclass_of_accelerator_is_accelerate_and_prepares_the_loader(tmp_path):
    assert lines_of(lint_plain(tmp_path, OWN_ACCELERATOR, myacc=DERIVED), "DDP802") == []


def test_the_stock_class_imported_under_another_name_is_accelerate_too(tmp_path):
    code = OWN_ACCELERATOR.replace("from myacc import MyAccelerator", "from accelerate import Accelerator as MyAccelerator")
    assert lines_of(lint_plain(tmp_path, code), "DDP802") == []


def test_its_twin_a_local_class_of_the_same_name_prepares_nothing(tmp_path):
    assert lines_of(lint_plain(tmp_path, OWN_ACCELERATOR, myacc=PLAIN), "DDP802") == [11]


# -------------------------------------------------- accumulation by hand under Accelerate
BY_HAND = """
import torch
from accelerate import Accelerator

def train(batches, accum):
    acc = Accelerator({options})
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model, opt = acc.prepare(model, opt)
{loop}

train(torch.randn(64, 2, 4), 4)
"""
PLAIN_BACKWARD = """
    for step, batch in enumerate(batches):
        {ctx}loss = model(batch).pow(2).mean() / accum
        {ind}loss.backward()
        {ind}if step % accum == 0:
            {ind}opt.step()
            {ind}opt.zero_grad()
"""
MICRO_STEPS = """
    for chunk in batches.split(accum):
        opt.zero_grad()
        for micro in chunk:
            {ctx}loss = model(micro).pow(2).mean() / accum
            {ind}acc.backward(loss)
        opt.step()
"""


def _by_hand(loop: str, within: bool) -> str:
    ctx, ind = ("with acc.accumulate(model):\n            ", "    ") if within else ("", "")
    if "micro" in loop:
        ctx = ctx.replace("            ", "                ")
    return BY_HAND.replace("{options}", "gradient_accumulation_steps=accum" if within else "").replace(
        "{loop}", loop.replace("{ctx}", ctx).replace("{ind}", ind))


def test_a_plain_backward_of_a_prepared_model_every_batch_is_accumulation_by_hand(tmp_path):
    assert lines_of(lint_plain(tmp_path, _by_hand(PLAIN_BACKWARD, False)), "DDP805") == [12]


def test_its_twin_under_accumulate_syncs_once_per_step(tmp_path):
    assert lines_of(lint_plain(tmp_path, _by_hand(PLAIN_BACKWARD, True)), "DDP805") == []


def test_accelerator_backward_in_a_micro_step_loop_before_one_step_is_accumulation_by_hand(tmp_path):
    assert lines_of(lint_plain(tmp_path, _by_hand(MICRO_STEPS, False)), "DDP805") == [14]


def test_its_twin_the_micro_steps_under_accumulate(tmp_path):
    assert lines_of(lint_plain(tmp_path, _by_hand(MICRO_STEPS, True)), "DDP805") == []


# -------------------------------------------------- a LightningModule's training_step returning None
SKIPPING_STEP = """
import torch
import lightning as L
{imports}

class Policy(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(4, 1)
        self.ema = None

    def training_step(self, batch, batch_idx):
        loss = self.net(batch).pow(2).mean()
        seen = loss.detach()
        if {test}:
            return None
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

{launch}
"""
DIRECT = "L.Trainer(strategy='ddp', devices=2).fit(Policy(), torch.randn(64, 4))"
HYDRA = """def main(cfg):
    trainer: L.Trainer = hydra.utils.instantiate(cfg.trainer)
    trainer.fit(model=hydra.utils.instantiate(cfg.model))"""


def _skipping(test: str, launch: str = DIRECT) -> str:
    return SKIPPING_STEP.replace("{test}", test).replace("{launch}", launch).replace(
        "{imports}", "import hydra" if "hydra" in launch else "")


def test_training_step_returning_none_on_its_own_loss_is_a_rank_local_skip(tmp_path):
    found = [f for f in lint_plain(tmp_path, _skipping("not torch.isfinite(loss)")) if f.code == "DDP809"]
    assert [(f.location.line, f.severity.value) for f in found] == [(14, "warning")]


def test_a_value_computed_from_the_loss_decides_alike(tmp_path):
    assert lines_of(lint_plain(tmp_path, _skipping("seen > 10.0")), "DDP809") == [14]


def test_its_twin_a_test_on_the_batch_index_is_the_same_on_every_rank(tmp_path):
    assert lines_of(lint_plain(tmp_path, _skipping("batch_idx % 100 == 99")), "DDP809") == []


def test_its_twin_under_manual_optimization_the_step_runs_its_own_backward(tmp_path):
    code = _skipping("not torch.isfinite(loss)").replace(
        "self.ema = None", "self.ema = None\n        self.automatic_optimization = False")
    assert lines_of(lint_plain(tmp_path, code), "DDP809") == []


def test_a_trainer_made_by_hydra_still_runs_the_modules_training_step(tmp_path):
    assert lines_of(lint_plain(tmp_path, _skipping("not torch.isfinite(loss)", HYDRA)), "DDP809") == [14]


# -------------------------------------------------- object state set on the one-process side only
ONE_PROCESS_SIDE = """
import os, torch, torch.distributed as dist

class Shifted:
    def __init__(self, n, world_size=1):
        self.n = n
        self.world_size = world_size

    def reset(self):
        pick = torch.randint(1, self.n, (1,))
        if self.world_size > 1:
            dist.broadcast(pick, src=0)
        return int(pick)

def main():
    distributed = int(os.environ.get("WORLD_SIZE", 0)) > 1
    if distributed:
        dist.init_process_group("gloo")
    {made}
    for epoch in range(3):
        if sampler is not None:
            sampler.reset()

main()
"""


def test_state_set_where_the_run_is_not_distributed_is_no_rank_local_state(tmp_path):
    code = ONE_PROCESS_SIDE.replace("{made}", "sampler = None\n    if not distributed:\n        sampler = Shifted(8)")
    assert lines_of(lint_plain(tmp_path, code), "DDP809") == []


def test_its_twin_state_set_on_rank_0_alone_decides_the_broadcast(tmp_path):
    code = ONE_PROCESS_SIDE.replace("{made}", "sampler = Shifted(8, 2)\n    if dist.get_rank() == 0:\n"
                                              "        sampler.alone()").replace(
        "    def reset(self):", "    def alone(self):\n        self.world_size = 1\n\n    def reset(self):").replace(
        "self.world_size = world_size", "self.world_size = 2")
    assert lines_of(lint_plain(tmp_path, code), "DDP809") == [13]


# -------------------------------------------------- a class chosen by whether the run is distributed
CHOSEN_SAVER = """
import os, torch, torch.distributed as dist

class Saver:
    def __init__(self, path):
        self.path = path
    def save(self, state, step):
        torch.save(state, f"{self.path}/state_{step}.pt")

class AloneSaver(Saver):
    pass

class GroupSaver(Saver):
    def save(self, state, step):
        if dist.get_rank() == 0:
            super().save(state, step)
        dist.barrier()

class Runner:
    def __init__(self, model, path):
        self.distributed = "LOCAL_RANK" in os.environ
        saver_cls = {choice}
        self.saver = saver_cls(path)
        self.model = model

    def run(self, steps):
        for step in range(steps):
            self.model(torch.randn(4, 2)).sum().backward()
            self.saver.save(self.model.state_dict(), step)

model = torch.nn.Linear(2, 1)
if "LOCAL_RANK" in os.environ:
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(model)
Runner(model, "out").run(3)
"""


def test_the_class_a_distributed_run_picks_is_the_one_that_saves(tmp_path):
    code = CHOSEN_SAVER.replace("{choice}", "GroupSaver if self.distributed else AloneSaver")
    assert lines_of(lint_plain(tmp_path, code), "DDP806") == []


def test_its_twin_the_distributed_run_picks_the_class_that_saves_on_every_rank(tmp_path):
    code = CHOSEN_SAVER.replace("{choice}", "AloneSaver if self.distributed else GroupSaver")
    assert lines_of(lint_plain(tmp_path, code), "DDP806") == [7]


# -------------------------------------------------- sampler options spread from a dict literal
SPREAD_SAMPLER = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

dist.init_process_group("gloo")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
data = TensorDataset(torch.randn(64, 4))
options = {"shuffle": {shuffle}, "drop_last": False}
loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data, **options))
for epoch in range(3):
    for (x,) in loader:
        model(x).sum().backward()
"""


def test_a_sampler_told_not_to_shuffle_through_a_spread_dict_needs_no_set_epoch(tmp_path):
    assert lines_of(lint_plain(tmp_path, SPREAD_SAMPLER.replace("{shuffle}", "False")), "DDP804") == []


def test_its_twin_the_spread_dict_says_shuffle(tmp_path):
    assert lines_of(lint_plain(tmp_path, SPREAD_SAMPLER.replace("{shuffle}", "True")), "DDP804") == [8]


# -------------------------------------------------- a trainer from a decorator-filled registry
REGISTERED = """
import torch
from accelerate import Accelerator
from transformers import AutoModelForCausalLM

TRAINERS = {}

def register(cls):
    TRAINERS[cls.__name__.lower()] = cls
    return cls

@register
class Tuner:
    def __init__(self, path):
        self.acc = Accelerator()
        self.model = self.acc.prepare(AutoModelForCausalLM.from_pretrained(path))

    def save_pretrained(self, directory, **kwargs):
        self.acc.wait_for_everyone()
        self.acc.unwrap_model(self.model).save_pretrained(directory, **kwargs)

def get_trainer(name):
    return TRAINERS[name.lower()]

def main(name, path):
    trainer = get_trainer(name)(path)
    trainer.save_pretrained("out"{passed})

main("Tuner", "gpt2")
"""


def test_a_registered_trainers_save_forwarding_empty_kwargs_writes_on_every_rank(tmp_path):
    found = lint_plain(tmp_path, REGISTERED.replace("{passed}", ""))
    assert lines_of(found, "DDP806") == [19]


def test_its_twin_the_caller_passes_is_main_process_through_the_kwargs(tmp_path):
    code = REGISTERED.replace("{passed}", ", is_main_process=False")
    assert lines_of(lint_plain(tmp_path, code), "DDP806") == []


# -------------------------------------------------- a gather in a loop the way in never enters
NEVER_ENTERED = """
import torch, torch.distributed as dist

def draw(model, wanted=-1, per_call=8):
    made = 0
    while wanted > made:
        out = model(torch.randn(per_call, 4))
        parts = [torch.zeros_like(out) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, out)
        made += per_call * dist.get_world_size()

dist.init_process_group("gloo")
model = torch.nn.Linear(4, 4)
for step in range(100):
    if dist.get_rank() == 0 and step % 10 == 0:
        draw(model{given})
"""


def test_a_gather_in_a_loop_whose_first_test_fails_on_that_way_in_never_runs(tmp_path):
    assert lines_of(lint_plain(tmp_path, NEVER_ENTERED.replace("{given}", "")), "DDP801") == []


def test_its_twin_asked_for_samples_on_rank_0_alone_it_gathers_and_hangs(tmp_path):
    assert lines_of(lint_plain(tmp_path, NEVER_ENTERED.replace("{given}", ", wanted=64")), "DDP801") == [8]


# -------------------------------------------------- which keys a dict holds is the code's, not the batch's
KEYED = """
import random, torch, torch.distributed as dist

def terms_of(model, x, extra):
    out = model(x)
    return {"extra": out.abs().mean()} if extra else {"main": out.pow(2).mean()}

dist.init_process_group("gloo")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 4))
flag = [random.random() < 0.5]
dist.broadcast_object_list(flag, 0)
for x in torch.randn(10, 8, 4):
    terms = terms_of(model, x, flag[0])
    if {test}:
        terms["main"].backward()
"""


def test_a_test_on_which_keys_the_terms_hold_decides_alike_on_every_rank(tmp_path):
    assert lines_of(lint_plain(tmp_path, KEYED.replace("{test}", '"main" in list(terms.keys())')), "DDP809") == []


def test_its_twin_a_test_on_the_terms_value_is_each_ranks_own(tmp_path):
    assert lines_of(lint_plain(tmp_path, KEYED.replace("{test}", 'terms["main"] < 10.0')), "DDP809") == [13]


# -------------------------------------------------- Accelerate's sync_gradients is every rank's step phase
SYNC_PHASE = """
import torch
from accelerate import Accelerator

acc = Accelerator(gradient_accumulation_steps=4)
model = acc.prepare(torch.nn.Linear(4, 1))
for step, x in enumerate(torch.randn(32, 8, 4)):
    with acc.accumulate(model):
        acc.backward(model(x).sum())
    if acc.sync_gradients and acc.is_main_process{more}:
        acc.wait_for_everyone()
"""


def test_a_barrier_on_the_main_process_at_a_sync_step_is_a_certain_hang(tmp_path):
    found = [f for f in lint_plain(tmp_path, SYNC_PHASE.replace("{more}", "")) if f.code == "DDP801"]
    assert [(f.location.line, f.severity.value) for f in found] == [(10, "error")]


def test_its_twin_a_flag_of_unknown_value_beside_it_is_an_assumption(tmp_path):
    found = [f for f in lint_plain(tmp_path, SYNC_PHASE.replace("{more}", " and want_log")) if f.code == "DDP801"]
    assert [(f.location.line, f.severity.value) for f in found] == [(10, "warning")]


# -------------------------------------------------- a LightningModule named only by a Hydra config
HYDRA_SCRIPT = """
import hydra
import lightning as L

@hydra.main(version_base="1.3", config_path="configs", config_name="train.yaml")
def main(cfg):
    model: L.LightningModule = hydra.utils.instantiate(cfg.model)
    trainer: L.Trainer = hydra.utils.instantiate(cfg.trainer)
    trainer.fit(model=model)

if __name__ == "__main__":
    main()
"""
HYDRA_MODULE = """
import torch
import lightning as L

class Policy(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(4, 1)

    def training_step(self, batch, batch_idx):
        loss = self.net(batch).pow(2).mean()
        if not torch.isfinite(loss):
            return None
        return loss
"""


def _hydra_project(tmp_path, target: str):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "policy.py").write_text(textwrap.dedent(HYDRA_MODULE))
    (tmp_path / "configs" / "model").mkdir(parents=True)
    (tmp_path / "configs" / "train.yaml").write_text("defaults:\n  - model: policy\ntrainer:\n"
                                                     "  _target_: lightning.Trainer\n  strategy: ddp\n")
    (tmp_path / "configs" / "model" / "policy.yaml").write_text(f"_target_: {target}\n")
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(HYDRA_SCRIPT).lstrip("\n"))
    return [f for r in lint_results(gather(str(script)), set()) for f in r.findings]


def test_a_module_a_hydra_config_targets_is_read_and_its_hooks_judged(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    found = _hydra_project(tmp_path, "pkg.policy.Policy")
    assert [(f.code, f.location.file, f.location.line) for f in found if f.code == "DDP809"] == \
        [("DDP809", "pkg/policy.py", 12)]


def test_its_twin_a_config_that_targets_another_class_leaves_the_module_unjudged(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert [f for f in _hydra_project(tmp_path, "torch.nn.Identity") if f.code == "DDP809"] == []


# -------------------------------------------------- set_epoch called once, before the epoch loop
ONCE = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

dist.init_process_group("gloo")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
data = TensorDataset(torch.randn(64, 4))
start = 0
sampler = DistributedSampler(data, shuffle=True)
loader = DataLoader(data, batch_size=8, sampler=sampler)
{before}
for epoch in range(start, 5):
    {inside}
    for (x,) in loader:
        model(x).sum().backward()
"""


def test_set_epoch_once_before_the_epoch_loop_fixes_one_order(tmp_path):
    code = ONCE.replace("{before}", "sampler.set_epoch(start - 1)").replace("{inside}", "pass")
    # (at the lone set_epoch call: the line to move into the loop)
    assert lines_of(lint_plain(tmp_path, code), "DDP804") == [10]


def test_its_twin_set_epoch_at_the_top_of_each_epoch(tmp_path):
    code = ONCE.replace("{before}", "").replace("{inside}", "sampler.set_epoch(epoch)")
    assert lines_of(lint_plain(tmp_path, code), "DDP804") == []


# -------------------------------------------------- a wall-clock wait in seconds decides a report
CLOCKED = """
from datetime import datetime
import torch, torch.distributed as dist

class Reporter:
    def __init__(self, every_s=20.0):
        self.every_s = every_s
        self.last = datetime.now()
        self.total = torch.zeros(())

    def on_step(self, loss, step):
        self.total += loss
        now = datetime.now()
        waited = {waited}
        if waited < self.every_s:
            return
        dist.all_reduce(self.total)
        self.last = now

dist.init_process_group("gloo")
reporter = Reporter()
for step in range(1000):
    reporter.on_step(torch.ones(()), step)
"""


def test_a_wait_in_seconds_of_each_ranks_own_clock_decides_the_all_reduce(tmp_path):
    code = CLOCKED.replace("{waited}", "(now - self.last).total_seconds()")
    assert lines_of(lint_plain(tmp_path, code), "DDP809") == [14]


def test_its_twin_a_wait_counted_in_steps_is_the_same_on_every_rank(tmp_path):
    assert lines_of(lint_plain(tmp_path, CLOCKED.replace("{waited}", "step % 100")), "DDP809") == []


# -------------------------------------------------- a forward's input made from the step counter
STAGED = """
import torch, torch.distributed as dist

STAGES = {0: {"size": 8, "scale": 1.0}, 500: {"size": 4, "scale": 0.5}}

def stage_at(step):
    return dict(STAGES[max(s for s in STAGES if s <= step)])

class Net(torch.nn.Linear):
    def forward(self, x, scale=1.0, size=None):
        return super().forward(x) * scale

dist.init_process_group("gloo")
model = torch.nn.parallel.DistributedDataParallel(Net(4, 1))
step = 0
for x in torch.randn(100, 8, 4):
    cfg = stage_at(step)
    out = model(x, **cfg)
    loss = out.mean()
    if {test}:
        break
    loss.backward()
    step += 1
"""


def test_a_setting_made_from_the_step_counter_is_the_same_on_every_rank(tmp_path):
    assert lines_of(lint_plain(tmp_path, STAGED.replace("{test}", 'cfg["size"] != 8')), "DDP809") == []


def test_its_twin_a_value_made_from_the_forwards_output_is_each_ranks_own(tmp_path):
    assert lines_of(lint_plain(tmp_path, STAGED.replace("{test}", "out.max() > 100")), "DDP809") == [19]


# -------------------------------------------------- a trainer class held in a name, built by a classmethod
HELD_CLASS = """
import argparse, torch, torch.distributed as dist

class Tagger:
    def __init__(self, model):
        self.model = model

    @classmethod
    def build(cls, **kwargs):
        return cls(torch.nn.Linear(4, 2))

    def save(self, path):
        torch.save(self.model.state_dict(), path)

    def train(self, path, **kwargs):
        net = torch.nn.parallel.DistributedDataParallel(self.model)
        net(torch.randn(8, 4)).sum().backward()
        dist.barrier()
        {save}

class PosTagger(Tagger):
    pass

def run(opts):
    dist.init_process_group("gloo")
    Model = {held}
    tagger = Model.build(**opts)
    tagger.train(**opts)

cli = argparse.ArgumentParser()
cli.add_argument("--path", default="tagger.pt")
cli.set_defaults(Model=PosTagger)
run(vars(cli.parse_args()))
"""


def test_a_class_held_in_a_name_then_built_by_its_classmethod_saves_on_every_rank(tmp_path):
    code = HELD_CLASS.replace("{save}", "self.save(path)").replace("{held}", "PosTagger")
    assert lines_of(lint_plain(tmp_path, code), "DDP806") == [12]


def test_the_class_given_as_an_argparse_default_is_followed_alike(tmp_path):
    code = HELD_CLASS.replace("{save}", "self.save(path)").replace("{held}", 'opts.pop("Model")')
    assert lines_of(lint_plain(tmp_path, code), "DDP806") == [12]


def test_its_twin_the_save_under_rank_0(tmp_path):
    code = HELD_CLASS.replace("{save}", "if dist.get_rank() == 0:\n            self.save(path)").replace(
        "{held}", 'opts.pop("Model")')
    assert lines_of(lint_plain(tmp_path, code), "DDP806") == []


# -------------------------------------------------- one builder makes the training and the validation loader
TRAIN_VAL = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler

class Noisy(Dataset):
    def __init__(self, n):
        self.x = torch.randn(n, 8)
    def __len__(self):
        return len(self.x)
    def __getitem__(self, i):
        return self.x[i] + torch.rand_like(self.x[i])

def wrap(ds):
    return DataLoader(ds, batch_size=16, sampler=DistributedSampler(ds), num_workers=4)

def {builder}(n):
    return wrap(Noisy(n)), wrap(Noisy(n // 10))

torch.manual_seed(1234)
dist.init_process_group("gloo")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 1))
train_loader, val_loader = {builder}(1000)
for epoch in range(2):
    train_loader.sampler.set_epoch(epoch)
    for x in train_loader:
        model(x).sum().backward()
"""


def test_a_builder_of_both_loaders_is_no_evaluation_helper(tmp_path):
    code = TRAIN_VAL.replace("{builder}", "make_train_val_loaders")
    assert lines_of(lint_plain(tmp_path, code), "DDP808") == [13]


def test_its_twin_a_builder_of_evaluation_loaders_alone(tmp_path):
    code = TRAIN_VAL.replace("{builder}", "make_val_loaders").replace(
        "    for x in train_loader:\n        model(x).sum().backward()\n",
        "    with torch.no_grad():\n        for x in train_loader:\n            model(x)\n")
    assert lines_of(lint_plain(tmp_path, code), "DDP808") == []


# -------------------------------------------------- a model wrapper forwarding **kwargs to the library save
WRAPPER = """
import torch, torch.distributed as dist
from transformers import AutoModelForCausalLM

class Wrapped(torch.nn.Module):
    def __init__(self, base):
        super().__init__()
        self.base = base

    def save_pretrained(self, *args, **kwargs):
        return self.base.save_pretrained(*args, **kwargs)

def unwrap(model):
    return model.module

dist.init_process_group("gloo")
model = torch.nn.parallel.DistributedDataParallel(Wrapped(AutoModelForCausalLM.from_pretrained("gpt2")))
unwrap(model).save_pretrained("out", is_main_process=dist.get_rank() == 0)
{direct}
"""


def test_a_wrapper_that_hands_on_unknown_kwargs_is_not_judged_a_write(tmp_path):
    assert lines_of(lint_plain(tmp_path, WRAPPER.replace("{direct}", "")), "DDP806") == []


def test_its_twin_a_resolved_call_into_it_passes_nothing(tmp_path):
    code = WRAPPER.replace("{direct}", 'Wrapped(AutoModelForCausalLM.from_pretrained("gpt2")).save_pretrained("out")')
    assert lines_of(lint_plain(tmp_path, code), "DDP806") == [10]


def test_a_sampler_primed_in_a_constructor_of_a_class_that_hands_set_epoch_on(tmp_path):
    code = '''
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler

class Batcher(Dataset):
    def __init__(self, n):
        self.x = torch.randn(n, 4)
        self.sampler = DistributedSampler(self, shuffle=True)
        self.sampler.set_epoch(0)
        self.order = list(self.sampler)
    def set_epoch(self, epoch):
        self.sampler.set_epoch(epoch)
    def __len__(self):
        return len(self.x)
    def __getitem__(self, i):
        return self.x[self.order[i % len(self.order)]]

dist.init_process_group("gloo")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
loader = DataLoader(Batcher(64), batch_size=8)
for epoch in range(3):
    getattr(loader.dataset, "set_epoch")(epoch)
    for x in loader:
        model(x).sum().backward()
'''
    assert lines_of(lint_plain(tmp_path, code), "DDP804") == []


# -------------------------------------------------- a factory returning `model.eval()`
EVAL_RETURNED = """
import torch, torch.nn as nn, torch.distributed as dist

class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 4), {norm})
    def forward(self, x):
        return self.body(x).mean()

def build():
    model = Encoder()
    return model.eval()

dist.init_process_group("gloo")
model = torch.nn.parallel.DistributedDataParallel(build())
for step in range(10):
    model(torch.randn(2, 4)).backward()
    if dist.get_rank() == 0:
        with torch.no_grad():
            model(torch.randn(2, 4))
"""


def test_a_model_returned_as_model_eval_keeps_its_buffers(tmp_path):
    assert lines_of(lint_plain(tmp_path, EVAL_RETURNED.replace("{norm}", "nn.BatchNorm1d(4)")), "DDP801") == [20]


def test_its_twin_a_model_without_buffers(tmp_path):
    assert lines_of(lint_plain(tmp_path, EVAL_RETURNED.replace("{norm}", "nn.ReLU()")), "DDP801") == []


# -------------------------------------------------- a torchmetrics metric computed on rank 0 alone
METRIC = """
import torch, torch.distributed as dist
from torchmetrics.regression import MeanSquaredError

def evaluate(pred, target):
    metric = MeanSquaredError({options})
    metric.update(pred, target)
    return metric.compute().item()

dist.init_process_group("gloo")
net = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
for epoch in range(3):
    net(torch.randn(8, 4)).sum().backward()
    if dist.get_rank() == 0:
        print(evaluate(torch.randn(8), torch.randn(8)))
"""


def test_a_metric_computed_on_rank_0_alone_all_gathers_alone(tmp_path):
    assert lines_of(lint_plain(tmp_path, METRIC.replace("{options}", "")), "DDP801") == [7]


def test_its_twin_a_metric_told_not_to_sync_on_compute(tmp_path):
    assert lines_of(lint_plain(tmp_path, METRIC.replace("{options}", "sync_on_compute=False")), "DDP801") == []


# -------------------------------------------------- set_epoch kept as a bound method
BOUND = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

def build(ds):
    sampler = DistributedSampler(ds, shuffle=True)
    return DataLoader(ds, sampler=sampler, batch_size=8), {hook}

dist.init_process_group("gloo")
net = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
loader, hook = build(TensorDataset(torch.randn(64, 4)))
for epoch in range(10):
    if hook is not None:
        hook(epoch)
    for (x,) in loader:
        net(x).sum().backward()
"""


def test_a_set_epoch_handed_on_as_a_bound_method_is_called_by_whoever_keeps_it(tmp_path):
    assert lines_of(lint_plain(tmp_path, BOUND.replace("{hook}", "sampler.set_epoch")), "DDP804") == []


def test_its_twin_no_set_epoch_handed_on(tmp_path):
    assert lines_of(lint_plain(tmp_path, BOUND.replace("{hook}", "None")), "DDP804") == [5]


def test_a_set_epoch_kept_in_a_local_name_and_called(tmp_path):
    code = BOUND.replace("{hook}", "None").replace("for epoch in range(10):",
                                                   "on_epoch = loader.sampler.set_epoch\nfor epoch in range(10):\n    on_epoch(epoch)")
    assert lines_of(lint_plain(tmp_path, code), "DDP804") == []


# -------------------------------------------------- micro-steps in a method, the step in its caller
MICRO_METHOD = """
import contextlib, torch, torch.distributed as dist

class Runner:
    def __init__(self, model, micro):
        self.model = torch.nn.parallel.DistributedDataParallel(model)
        self.micro = micro
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def accumulate(self, batch):
        chunks = batch.split(self.micro)
        for i, chunk in enumerate(chunks):
            with {ctx}:
                self.model(chunk).sum().backward()

    def run(self, batches):
        for batch in batches:
            self.optimizer.zero_grad()
            self.accumulate(batch)
            self.optimizer.step()

dist.init_process_group("gloo")
Runner(torch.nn.Linear(4, 1), 8).run([torch.randn(64, 4) for _ in range(10)])
"""


def test_micro_steps_in_a_method_whose_caller_steps_after_it_accumulate(tmp_path):
    assert lines_of(lint_plain(tmp_path, MICRO_METHOD.replace("{ctx}", "contextlib.nullcontext()")), "DDP805") == [13]


def test_its_twin_no_sync_on_all_but_the_last_chunk(tmp_path):
    code = MICRO_METHOD.replace("{ctx}", "self.model.no_sync() if i < len(chunks) - 1 else contextlib.nullcontext()")
    assert lines_of(lint_plain(tmp_path, code), "DDP805") == []


# -------------------------------------------------- loader options collected with dict(...)
DICT_OPTIONS = """
import random, torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler

class Crops(Dataset):
    def __len__(self):
        return 100
    def __getitem__(self, i):
        top = random.randint(0, 8)
        return torch.randn(16)[top:top + 8]

dist.init_process_group("gloo")
torch.manual_seed({seed})
random.seed({seed})
data = Crops()
sampler = DistributedSampler(data)
options = dict(dataset=data, batch_size=4, num_workers=3, sampler=sampler)
loader = DataLoader(**options)
net = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 1))
for epoch in range(3):
    sampler.set_epoch(epoch)
    for x in loader:
        net(x).sum().backward()
"""


def test_loader_options_collected_with_dict_are_read(tmp_path):
    assert lines_of(lint_plain(tmp_path, DICT_OPTIONS.replace("{seed}", "10")), "DDP808") == [17]


def test_its_twin_the_seed_holds_the_rank(tmp_path):
    assert lines_of(lint_plain(tmp_path, DICT_OPTIONS.replace("{seed}", "10 + dist.get_rank()")), "DDP808") == []


# -------------------------------------------------- loaders made in a loop over datasets: which classes are built
ZIPPED = """
import random, torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler

class Plain(Dataset):
    def __init__(self, n):
        self.n = n
    def __len__(self):
        return self.n
    def __getitem__(self, i):
        return torch.full((4,), float(i))

class Noisy(Dataset):
    def __init__(self, n):
        self.n = n
    def __len__(self):
        return self.n
    def __getitem__(self, i):
        return torch.full((4,), float(random.randrange(self.n)))

def make_loaders(datasets, samplers):
    return [DataLoader(d, batch_size=8, sampler=s, num_workers=4) for d, s in zip(datasets, samplers)]

dist.init_process_group("gloo")
torch.manual_seed(0)
train_set = {built}(256)
sampler = DistributedSampler(train_set)
(train_loader,) = make_loaders([train_set], [sampler])
net = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
for epoch in range(3):
    sampler.set_epoch(epoch)
    for x in train_loader:
        net(x).sum().backward()
"""


def test_a_drawing_dataset_class_the_run_never_builds_decides_nothing(tmp_path):
    assert lines_of(lint_plain(tmp_path, ZIPPED.replace("{built}", "Plain")), "DDP808") == []


def test_its_twin_the_run_builds_the_drawing_class(tmp_path):
    assert lines_of(lint_plain(tmp_path, ZIPPED.replace("{built}", "Noisy")), "DDP808") == [21]


# -------------------------------------------------- the FSDP side of a helper entered with a DDP model
WRAPPER_SIDE = """
import torch, torch.nn as nn, torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.nn.parallel import DistributedDataParallel as DDP

def grad_stats(model, log):
    sums = torch.stack([p.detach().square().sum() for p in model.parameters()])
    if isinstance(model, FSDP):
        dist.all_reduce(sums)
    log.append(sums.sum().item())

dist.init_process_group("gloo")
net = {wrapper}(nn.Linear(4, 4))
log = []
for step in range(10):
    net(torch.randn(2, 4)).sum().backward()
    if dist.get_rank() == 0:
        grad_stats(net, log)
"""


def test_the_fsdp_side_of_a_helper_handed_a_ddp_model_never_runs(tmp_path):
    assert lines_of(lint_plain(tmp_path, WRAPPER_SIDE.replace("{wrapper}", "DDP")), "DDP801") == []


def test_its_twin_handed_an_fsdp_model_it_all_reduces_on_rank_0_alone(tmp_path):
    assert lines_of(lint_plain(tmp_path, WRAPPER_SIDE.replace("{wrapper}", "FSDP")), "DDP801") == [8]


# -------------------------------------------------- a flag named distributed_enabled, os.pardir on sys.path
ENABLED = """
import torch, torch.distributed as dist

def train(rank, args):
    if args.distributed_enabled:
        dist.init_process_group("gloo", rank=rank, world_size=2)
    is_master = True if not args.distributed_enabled else args.distributed_enabled and rank == 0
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    for step in range(10):
        model(torch.randn(2, 4)).sum().backward()
        if {test}:
            torch.save(model.state_dict(), "ckpt.pt")

class Args:
    distributed_enabled = True

torch.multiprocessing.spawn(train, nprocs=2, args=(Args(),))
"""


def test_a_one_process_fallback_on_a_flag_named_distributed_enabled_is_no_writer(tmp_path):
    assert lines_of(lint_plain(tmp_path, ENABLED.replace("{test}", "is_master")), "DDP806") == []


def test_its_twin_a_save_with_no_test(tmp_path):
    assert lines_of(lint_plain(tmp_path, ENABLED.replace("{test}", "step % 5 == 0")), "DDP806") == [11]


def test_a_folder_put_on_sys_path_through_os_pardir_is_read(tmp_path):
    (tmp_path / "lib" / "pkg").mkdir(parents=True)
    (tmp_path / "lib" / "pkg" / "__init__.py").write_text("")
    (tmp_path / "lib" / "pkg" / "data.py").write_text(
        "import torch\n\nclass Stream(torch.utils.data.IterableDataset):\n"
        "    def __iter__(self):\n        rank = torch.distributed.get_rank()\n        yield from range(rank, 100, 2)\n")
    code = '''
import os, sys
here = os.path.dirname(os.path.realpath(__file__))
sys.path.insert(0, os.path.abspath(os.path.join(here, "lib", "pkg", os.pardir)))
import torch, torch.distributed as dist
from torch.utils.data import DataLoader
from pkg.data import Stream

dist.init_process_group("gloo")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(1, 1))
for x in DataLoader(Stream(), batch_size=4):
    model(x.float().view(-1, 1)).sum().backward()
'''
    assert lines_of(lint_plain(tmp_path, code), "DDP802") == []


# -------------------------------------------------- a trainer built by a callable a factory returns
LAMBDA_FACTORY = """
import torch, torch.distributed as dist

class Trainer:
    def __init__(self, model):
        self.model = model

    def train(self):
        self.model(torch.randn(2, 4)).sum().backward()
        if dist.get_rank() == 0:
            self.log("done")

    def log(self, message):
        print(message)
        {sync}

def build_trainer(kind):
    {maker}

dist.init_process_group("gloo")
create = build_trainer("own")
trainer = create(torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1)))
trainer.train()
"""
NESTED_MAKER = "def make(*args):\n        return Trainer(*args)\n    return make"


def test_a_trainer_a_returned_lambda_builds_is_followed(tmp_path):
    code = LAMBDA_FACTORY.replace("{sync}", "dist.barrier()").replace("{maker}", "return lambda *a: Trainer(*a)")
    assert lines_of(lint_plain(tmp_path, code), "DDP801") == [14]


def test_a_trainer_a_returned_nested_def_builds_is_followed(tmp_path):
    code = LAMBDA_FACTORY.replace("{sync}", "dist.barrier()").replace("{maker}", NESTED_MAKER)
    assert lines_of(lint_plain(tmp_path, code), "DDP801") == [14]


def test_its_twin_the_log_syncs_nothing(tmp_path):
    code = LAMBDA_FACTORY.replace("{sync}", "pass").replace("{maker}", "return lambda *a: Trainer(*a)")
    assert lines_of(lint_plain(tmp_path, code), "DDP801") == []


# -------------------------------------------------- a stream that reseeds itself, drawing through an object it holds
RESEEDING = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, IterableDataset

torch.manual_seed(42)

class Simulator:
    def sample(self, n):
        return torch.rand(n, 4)

class Simulated(IterableDataset):
    def __init__(self, simulator, rank):
        self.simulator, self.rank = simulator, rank
    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        {seed}
        for _ in range(64):
            yield self.simulator.sample(8)

dist.init_process_group("gloo")
loader = DataLoader(Simulated(Simulator(), dist.get_rank()), batch_size=None, num_workers=2)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
for x in loader:
    model(x).sum().backward()
"""


def test_a_stream_that_reseeds_in_its_worker_governs_what_it_holds(tmp_path):
    code = RESEEDING.replace("{seed}", "torch.manual_seed(self.rank * 1000 + (info.id if info else 0))")
    assert lines_of(lint_plain(tmp_path, code), "DDP808") == []


def test_its_twin_no_reseeding_the_held_simulator_draws_alike(tmp_path):
    assert lines_of(lint_plain(tmp_path, RESEEDING.replace("{seed}", "pass")), "DDP808") == [20]


# -------------------------------------------------- an evaluation sampler beside the training one
EVAL_BESIDE = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

@torch.no_grad()
def test_epoch(model, loader):
    for (x,) in loader:
        model(x)

dist.init_process_group("gloo")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
loaders = {}
for name in ["a", "b"]:
    testset = TensorDataset(torch.randn(16, 4))
    {sampler_name} = DistributedSampler(testset, shuffle=True)
    loaders[name] = DataLoader(testset, batch_size=4, sampler={sampler_name})
trainset = TensorDataset(torch.randn(64, 4))
train_sampler = DistributedSampler(trainset, shuffle=True)
train_loader = DataLoader(trainset, batch_size=4, sampler=train_sampler)
for epoch in range(10):
    for (x,) in train_loader:
        model(x).sum().backward()
    for name, loader in loaders.items():
        test_epoch(model, loader)
"""


def test_an_evaluation_sampler_beside_the_training_one_is_not_asked_for_set_epoch(tmp_path):
    assert lines_of(lint_plain(tmp_path, EVAL_BESIDE.replace("{sampler_name}", "test_sampler")), "DDP804") == [17]


# -------------------------------------------------- whether a name was set is no value a batch gave
RESUMED = """
import os
from pathlib import Path
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def run_dir(root: Path, name: str, create: bool = True) -> Path:
    path = root / name
    if create:
        path.mkdir(parents=True, exist_ok=True)
    return path


def train(rank, world, epochs=5):
    dist.init_process_group("gloo", rank=rank, world_size=world)
    path = run_dir(Path("runs"), "exp", create=(rank == 0))
    ckpt_path = path / "last.pth"

    model = nn.Linear(4, 4)
    checkpoint = None
    if ckpt_path.exists():
        checkpoint = torch.load(ckpt_path)

    last_epoch, best = -1, None
    if {test}:
        model.load_state_dict(checkpoint["model"])
        last_epoch = checkpoint["last_epoch"]
        best = checkpoint["best"]
        del checkpoint

    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    dist.barrier()
    for epoch in range(last_epoch + 1, epochs):
        loss = ddp(torch.randn(2, 4)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        val = loss.item()
        if rank == 0:
            if best is None or val < best:
                best = val
            checkpoint = {"model": ddp.module.state_dict(), "last_epoch": epoch, "best": best}
            torch.save(checkpoint, ckpt_path)
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    torch.multiprocessing.spawn(train, args=(2,), nprocs=2)
"""


def test_a_test_of_whether_the_checkpoint_was_loaded_is_the_same_on_every_rank(tmp_path):
    assert lines_of(lint_plain(tmp_path, RESUMED.replace("{test}", "checkpoint is not None")), "DDP809") == []


def test_its_twin_a_resume_on_rank_0_alone(tmp_path):
    code = RESUMED.replace("{test}", "checkpoint is not None and rank == 0")
    assert lines_of(lint_plain(tmp_path, code), "DDP809") == [36]


# -------------------------------------------------- a loss computed through the wrapped module
THROUGH_MODULE = """
import torch, torch.nn as nn, torch.distributed as dist

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 1)
    def loss(self, x):
        return self.lin(x).pow(2).mean()
    def forward(self, x):
        return self.loss(x)

dist.init_process_group("gloo")
model = torch.nn.parallel.DistributedDataParallel(Net())
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(100):
    loss = {forward} / 4
    loss.backward()
    if (step + 1) % 4 == 0:
        opt.step()
        opt.zero_grad()
"""


def test_a_loss_through_the_wrapped_module_skips_ddp_so_accumulates_no_syncs(tmp_path):
    assert lines_of(lint_plain(tmp_path, THROUGH_MODULE.replace("{forward}", "model.module.loss(torch.randn(8, 4))")),
                    "DDP805") == []


def test_its_twin_the_loss_through_the_ddp_forward(tmp_path):
    assert lines_of(lint_plain(tmp_path, THROUGH_MODULE.replace("{forward}", "model(torch.randn(8, 4))")),
                    "DDP805") == [17]


# -------------------------------------------------- the parsed options handed to a dataset
OPTIONS_ARG = """
import argparse, random, torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler

def get_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--random_flip", action="store_true")
    return parser.parse_args()

class Features(Dataset):
    def __init__(self, args):
        self.args = args
    def __len__(self):
        return 100
    def __getitem__(self, i):
        return {item}

args = get_args()
dist.init_process_group("gloo")
torch.manual_seed(0)
data = Features(args=args)
loader = DataLoader(data, batch_size=4, sampler=DistributedSampler(data), num_workers=2)
net = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(1, 1))
for x in loader:
    net(x.float().view(-1, 1)).sum().backward()
"""


def test_an_option_parser_with_an_augmentation_flag_is_no_drawing_dataset(tmp_path):
    assert lines_of(lint_plain(tmp_path, OPTIONS_ARG.replace("{item}", "torch.tensor(i)")), "DDP808") == []


def test_its_twin_the_dataset_draws_itself(tmp_path):
    code = OPTIONS_ARG.replace("{item}", "torch.tensor(i + random.random())")
    assert lines_of(lint_plain(tmp_path, code), "DDP808") == [21]


# -------------------------------------------------- a helper model every rank fine-tunes before the DDP run
HELPER_FINETUNE = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

def finetune_aligner(dataset):
    loader = DataLoader(dataset, batch_size=8, shuffle=True)
    aligner = {helper}
    opt = torch.optim.Adam(aligner.parameters())
    for (x,) in loader:
        opt.zero_grad()
        (aligner(x) - x).pow(2).mean().backward()
        opt.step()
    return aligner

dist.init_process_group("gloo")
data = TensorDataset(torch.randn(256, 4))
aligner = finetune_aligner(data)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
sampler = DistributedSampler(data)
for epoch in range(3):
    sampler.set_epoch(epoch)
    for (x,) in DataLoader(data, sampler=sampler, batch_size=8):
        model(aligner(x).detach()).sum().backward()
"""


def test_a_loader_that_trains_a_plain_helper_model_is_no_ddp_training_loader(tmp_path):
    assert lines_of(lint_plain(tmp_path, HELPER_FINETUNE.replace("{helper}", "torch.nn.Linear(4, 4)")), "DDP802") == []


def test_its_twin_the_helper_is_the_ddp_model_itself(tmp_path):
    code = HELPER_FINETUNE.replace("{helper}", "torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 4))")
    assert lines_of(lint_plain(tmp_path, code), "DDP802") == [5]


# -------------------------------------------------- a skip before a DeepSpeed engine's backward
ENGINE_SKIP = """
import torch, deepspeed

model = torch.nn.Linear(8, 1)
engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config="ds.json")
for x in torch.randn(100, 4, 8):
    loss = engine(x).pow(2).mean()
    if {test}:
        continue
    engine.backward(loss)
    engine.step()
"""


def test_a_skip_on_the_ranks_own_loss_before_the_engines_backward(tmp_path):
    assert lines_of(lint_plain(tmp_path, ENGINE_SKIP.replace("{test}", "not torch.isfinite(loss)")), "DDP809") == [7]


def test_its_twin_a_skip_every_rank_takes_alike(tmp_path):
    assert lines_of(lint_plain(tmp_path, ENGINE_SKIP.replace("{test}", "engine.global_steps % 1000 == 999")),
                    "DDP809") == []


# -------------------------------------------------- a `while True:` epoch loop ended by a step count
WHILE_EPOCHS = """
import torch, torch.distributed as dist
from torch.utils.data import BatchSampler, DataLoader, DistributedSampler, TensorDataset

def train_loop(net, dataset, sampler, steps):
    loader = DataLoader(dataset, batch_sampler=BatchSampler(sampler, 8, drop_last=True))
    step, epoch = 0, 0
    while True:
        epoch += 1
        {hook}
        for (x,) in loader:
            net(x).sum().backward()
            step += 1
        if step > steps:
            return

dist.init_process_group("gloo")
data = TensorDataset(torch.randn(256, 4))
sampler = DistributedSampler(data, shuffle=True)
train_loop(torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1)), data, sampler, 1000)
"""


def test_a_while_true_epoch_loop_rereads_the_loader_without_set_epoch(tmp_path):
    assert lines_of(lint_plain(tmp_path, WHILE_EPOCHS.replace("{hook}", "pass")), "DDP804") == [18]


def test_its_twin_set_epoch_at_the_top_of_each_pass(tmp_path):
    assert lines_of(lint_plain(tmp_path, WHILE_EPOCHS.replace("{hook}", "sampler.set_epoch(epoch)")), "DDP804") == []


# -------------------------------------------------- a step counter past a bound is every rank's alike
COUNTER_PAST = """
import torch, torch.distributed as dist

dist.init_process_group("gloo")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
global_step = 0
for x in torch.randn(100, 2, 4):
    model(x).sum().backward()
    global_step += 1
    if global_step % 10 == 0 and {extra} and dist.get_rank() == 0:
        dist.barrier()
"""


def test_a_counter_past_its_first_step_is_no_assumption(tmp_path):
    found = [f for f in lint_plain(tmp_path, COUNTER_PAST.replace("{extra}", "global_step > 0")) if f.code == "DDP801"]
    assert [(f.location.line, f.severity.value) for f in found] == [(10, "error")]


def test_its_twin_a_flag_of_unknown_value_stays_an_assumption(tmp_path):
    found = [f for f in lint_plain(tmp_path, COUNTER_PAST.replace("{extra}", "want_sync > 0")) if f.code == "DDP801"]
    assert [(f.location.line, f.severity.value) for f in found] == [(10, "warning")]


# -------------------------------------------------- a library's wrapper of a collective, by its name
LIBRARY_WRAPPER = """
import torch, torch.distributed as dist
from ding.utils import broadcast_object_list, get_rank

dist.init_process_group("gloo")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
for step in range(10):
    model(torch.randn(2, 4)).sum().backward()
    result = [None]
    {guard}
        result = [step]
        broadcast_object_list(result, src=0)
"""


def test_a_librarys_collective_wrapper_under_rank_0_is_a_collective(tmp_path):
    assert lines_of(lint_plain(tmp_path, LIBRARY_WRAPPER.replace("{guard}", "if get_rank() == 0:")), "DDP801") == [11]


def test_its_twin_every_rank_calls_it(tmp_path):
    assert lines_of(lint_plain(tmp_path, LIBRARY_WRAPPER.replace("{guard}", "if True:")), "DDP801") == []


# -------------------------------------------------- a rank flag spelled `True if <rank test> else False`
TRUE_IF = """
import torch, torch.distributed as dist

dist.init_process_group("gloo")
is_main = True if {test} else False
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
for epoch in range(3):
    model(torch.randn(2, 4)).sum().backward()
    if is_main:
        torch.save(model.state_dict(), "ckpt.pt")
"""


def test_a_flag_true_if_rank_0_else_false_is_that_rank_test(tmp_path):
    assert lines_of(lint_plain(tmp_path, TRUE_IF.replace("{test}", "dist.get_rank() == 0")), "DDP806") == []


def test_its_twin_a_flag_on_something_every_rank_holds(tmp_path):
    assert lines_of(lint_plain(tmp_path, TRUE_IF.replace("{test}", "torch.cuda.is_available() or True")), "DDP806") == [9]
