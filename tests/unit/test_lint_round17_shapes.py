"""Shapes from session 17's last blind round (SCRL's launcher and trainer) and session 18's
seventeenth, each with its twin, written in our own words."""

from __future__ import annotations

import textwrap

from ddpdoctor.lint.driver import gather, lint_results
from tests.unit.test_lint_real_patterns import codes, lint


def lint_plain(tmp_path, source: str, **modules: str):
    """A script without the shared header (these shapes decide where the group is set up)."""
    for name, body in modules.items():
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(body))
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(source).lstrip("\n"))
    return [f for r in lint_results(gather(str(path)), set()) for f in r.findings]


LAUNCHER = """
import torch, torch.distributed as dist, torch.multiprocessing as mp

def launch(main_func, n):
    mp.spawn(_worker, nprocs=n, args=(main_func,))

def _worker(i, main_func):
    main_func()

def train():
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    model(torch.randn(2, 4)).sum().backward()
    torch.save(model.module.state_dict(), "best.pth")

if __name__ == "__main__":
{main}
"""


def test_a_launcher_the_script_never_calls_starts_no_ranks(tmp_path):
    # SCRL imports a detectron2-style launch() and its __main__ never uses it for this path
    found = lint_plain(tmp_path, LAUNCHER.format(main="    train()"))
    assert ("DDP806", "warning", 13) in codes(found)


def test_the_same_save_in_ranks_a_called_launcher_starts_is_still_judged(tmp_path):
    found = lint_plain(tmp_path, LAUNCHER.format(main="    launch(train, 2)"))
    assert ("DDP806", "warning", 13) in codes(found)


def test_a_save_in_the_launching_process_of_a_called_launcher_is_not_every_ranks(tmp_path):
    source = LAUNCHER.format(main="    launch(train, 2)\n    torch.save({}, 'launched.pth')")
    found = lint_plain(tmp_path, source)
    assert [f for f in found if f.code == "DDP806" and f.location.line == 17] == []


PARENT_JOINS = """
import torch, torch.distributed as dist, torch.multiprocessing as mp

def rank():
    return dist.get_rank() if dist.is_initialized() else 0

def {helper}(r, n):
{body}
    dist.barrier()

def worker(i, n):
    {helper}(i + 1, n)
    main(n)

def main(n):
    if rank() == 0:
        mp.spawn(worker, nprocs=n - 1, args=(n,), join=False)
        {helper}(0, n)

if __name__ == "__main__":
    main(4)
"""


def test_the_parent_that_joins_as_rank_zero_barriers_in_its_own_set_up(tmp_path):
    # SCRL: the process that spawned the others joins as rank 0; each joins through its own call
    body = '    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29500", rank=r, world_size=n)'
    found = lint_plain(tmp_path, PARENT_JOINS.format(helper="setup", body=body))
    assert [f for f in found if f.code == "DDP801"] == []


def test_a_barrier_helper_under_a_rank_test_after_the_set_up_is_one_sided(tmp_path):
    body = '    pass'
    source = PARENT_JOINS.format(helper="sync", body=body).replace(
        "def main(n):\n", 'def main(n):\n    dist.init_process_group("gloo")\n')
    found = lint_plain(tmp_path, source)
    assert ("DDP801", "error", 8) in codes(found)


KEPT_SAMPLER = """
class KeepingLoader(DataLoader):
    def __init__(self, dataset, batch_size, sampler):
        self.origin = sampler
        super().__init__(dataset, batch_sampler=BatchSampler(sampler, batch_size, False))

def build_loader():
    ds = TensorDataset(torch.randn(64, 4))
    sampler = DistributedSampler(ds, shuffle=True)
    return KeepingLoader(ds, 8, sampler=sampler)

class Trainer:
    def __init__(self, loader):
        self.loader = loader
        self.model = DDP(torch.nn.Linear(4, 1))
    def run(self):
        for epoch in range(3):
{reset}
            for (x,) in self.loader:
                self.model(x).sum().backward()

Trainer(build_loader()).run()
"""


def test_set_epoch_on_the_sampler_a_loader_subclass_keeps_is_seen(tmp_path):
    # SCRL: a DataLoader subclass keeps its sampler as `self.origin`, the trainer resets it
    found, _ = lint(tmp_path, KEPT_SAMPLER.format(reset="            self.loader.origin.set_epoch(epoch)"))
    assert [f for f in found if f.code == "DDP804"] == []


def test_the_kept_sampler_never_reset_still_needs_set_epoch(tmp_path):
    found, _ = lint(tmp_path, KEPT_SAMPLER.format(reset="            pass"))
    assert ("DDP804", "warning", 14) in codes(found)


INHERITED_FACTORY = """
import torch.distributed as dist
from trainers import Trainer

if __name__ == "__main__":
    dist.init_process_group("gloo")
    Trainer.build("out").run()
"""

TRAINERS = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

class Base:
    def __init__(self, out):
        self.out = out
        self.model = DDP(torch.nn.Linear(4, 4))

    @classmethod
    def build(cls, out):
        return cls(out)

class Trainer(Base):
    def run(self):
        for epoch in range(10):
            self.model(torch.randn(2, 4)).sum().backward()
{save}
"""


def test_an_inherited_classmethod_factory_builds_the_class_it_is_called_on(tmp_path):
    # SCRL's SCRLTrainer.init_from_config, defined on its base trainer: the subclass's run() runs
    save = '            torch.save(self.model.module.state_dict(), f"{self.out}/best.pth")'
    found = lint_plain(tmp_path, INHERITED_FACTORY, trainers=TRAINERS.format(save=save))
    assert [(f.code, f.severity.value, f.location.line) for f in found if f.code == "DDP806"] == \
        [("DDP806", "warning", 19)]


def test_the_inherited_factorys_save_under_a_rank_test_is_one_writer(tmp_path):
    save = ('            if dist.get_rank() == 0:\n'
            '                torch.save(self.model.module.state_dict(), f"{self.out}/best.pth")')
    found = lint_plain(tmp_path, INHERITED_FACTORY, trainers=TRAINERS.format(save=save))
    assert [f for f in found if f.code == "DDP806"] == []


ATTRIBUTE_STOP = """
class Trainer:
    def __init__(self, model):
        self.model, self.stop = model, False
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)
    def train(self):
        for step in range(1000):
            loss = self.model(torch.randn(8, 4)).sum()
            self.opt.zero_grad(); loss.backward(); self.opt.step()
            if {test}:
                self.stop = loss.item() > 9
            if self.stop:
                break

Trainer(DDP(torch.nn.Linear(4, 4))).train()
"""


def test_a_flag_kept_on_the_object_set_on_rank_zero_decides_every_ranks_break(tmp_path):
    # ParaGen: `self._early_stopping` unpacked in __init__ with the model, set on the master only
    found, _ = lint(tmp_path, ATTRIBUTE_STOP.format(test="dist.get_rank() == 0"))
    assert ("DDP809", "error", 17) in codes(found)


def test_the_same_flag_every_rank_sets_decides_alike(tmp_path):
    found, _ = lint(tmp_path, ATTRIBUTE_STOP.format(test="step > 10"))
    assert [f for f in found if f.code == "DDP809"] == []


RESTORED_STOP = """
class Trainer:
    def __init__(self, model, patience):
        self.model, self.stop, self.bad, self.patience = model, False, 0, patience
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)
    def record(self, score):
        self.bad = 0 if score < 0.5 else self.bad + 1
        if self.bad > self.patience:
            self.stop = True
    def restore(self, state_dict):
        trainer_state = state_dict["trainer"]
        self.stop = trainer_state["stop"]
    def train(self):
        while True:
            self.epoch()
            if self.stop:
                break
    def epoch(self):
        for step in range(100):
            self.step()
            if {guard}:
                self.record(step / 100)
            if self.stop:
                break
    def step(self):
        self.backward(self.model(torch.randn(8, 4)).sum())
    def backward(self, loss):
        self.opt.zero_grad()
        self.scaled(loss)
        self.opt.step()
    def scaled(self, loss):
        (loss * 1.0).backward()

trainer = Trainer(DDP(torch.nn.Linear(4, 4)), 3)
trainer.restore(torch.load("last.pt"))
trainer.train()
"""


def test_a_flag_a_master_only_method_sets_is_told_once_as_a_warning(tmp_path):
    # ParaGen: set in _save_best_model (the master's) past a patience test, restored from the
    # checkpoint on every rank, read by two loops whose work is a few helpers down
    found, _ = lint(tmp_path, RESTORED_STOP.format(guard="dist.get_rank() == 0"))
    assert [(f.code, f.severity.value, f.location.line) for f in found if f.code == "DDP809"] == \
        [("DDP809", "warning", 28)]


def test_the_flag_every_rank_records_is_the_same_everywhere(tmp_path):
    found, _ = lint(tmp_path, RESTORED_STOP.format(guard="step % 10 == 0"))
    assert [f for f in found if f.code == "DDP809"] == []


ELSE_CONTINUE = """
model = DDP(torch.nn.Linear(4, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
rank = dist.get_rank()
for it in range(10):
    loss = model(torch.randn(8, 4)).sum(); opt.zero_grad(); loss.backward(); opt.step()
    if {test}:
        print(loss.item())
    else:
        continue
    torch.save(model.state_dict(), "ckpt.pt")
"""


def test_a_save_after_an_else_continue_of_a_rank_test_is_rank_zeros(tmp_path):
    # adaptive-span: the loop's tail `if rank == 0: ... else: continue`, then the checkpoint
    found, _ = lint(tmp_path, ELSE_CONTINUE.format(test="rank == 0"))
    assert [f for f in found if f.code == "DDP806"] == []


def test_a_save_after_an_else_continue_of_a_plain_test_is_every_ranks(tmp_path):
    found, _ = lint(tmp_path, ELSE_CONTINUE.format(test="it % 2 == 0"))
    assert ("DDP806", "warning", 16) in codes(found)


MODE_SWITCH = """
def micro(model, x, eval_only, div):
    loss = model(x).sum()
    if not eval_only:
        (loss / div).backward()

def step(model, opt, x, splits):
    opt.zero_grad()
    for i in range(splits):
        micro(model, x.chunk(splits)[i], {mode}, splits)
    opt.step()

model = DDP(torch.nn.Linear(4, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for it in range(10):
    step(model, opt, torch.randn(8, 4), 2)
"""


def test_a_micro_step_called_with_its_switch_off_runs_its_backward(tmp_path):
    # adaptive-span: `_train_step(..., eval_only=False, ...)` per micro-batch, no no_sync
    found, _ = lint(tmp_path, MODE_SWITCH.format(mode="False"))
    # (at the backward inside `micro`, which computes the loss it backpropagates)
    assert ("DDP805", "warning", 10) in codes(found)


def test_the_micro_step_called_to_evaluate_runs_none(tmp_path):
    found, _ = lint(tmp_path, MODE_SWITCH.format(mode="True"))
    assert [f for f in found if f.code == "DDP805"] == []


IGNORED_RANK = """
class Points(torch.utils.data.Dataset):
    def __init__(self, split, rank, world):
        self.items = {items}
    def __len__(self):
        return len(self.items)
    def __getitem__(self, i):
        return self.items[i]

model = DDP(torch.nn.Linear(4, 1))
ds = Points("train", dist.get_rank(), dist.get_world_size())
loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds))
for epoch in range(10):
    for x in loader:
        model(x).sum().backward()
"""


def test_a_dataset_that_ignores_the_rank_it_takes_is_not_sharded(tmp_path):
    # pytorch-project-template: `Dataset(cfg, mode, rank, world)` never reads the two
    found, _ = lint(tmp_path, IGNORED_RANK.format(items="[torch.zeros(4) for _ in range(64)]"))
    assert [c for c in codes(found) if c[0] in ("DDP803", "DDP804")] == [("DDP804", "warning", 17)]


def test_a_dataset_that_slices_by_the_rank_it_takes_is_sharded(tmp_path):
    found, _ = lint(tmp_path, IGNORED_RANK.format(items="[torch.zeros(4) for _ in range(64)][rank::world]"))
    assert ("DDP803", "warning", 17) in codes(found)


MM_WRAPPER = """
from mmcv.parallel import MMDistributedDataParallel
ds = TensorDataset(torch.randn(64, 4))
sampler = DistributedSampler(ds)
loader = DataLoader(ds, batch_size=8, sampler=sampler)
model = {wrapper}(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    sampler.set_epoch(epoch)
    for i, (x,) in enumerate(loader):
        model(x).sum().backward()
        if (i + 1) % 4 == 0:
            opt.step(); opt.zero_grad()
"""


def test_openmmlabs_ddp_subclass_all_reduces_every_backward(tmp_path):
    # GroupViT: mmcv's MMDistributedDataParallel around the model, accumulation without no_sync
    found, _ = lint(tmp_path, MM_WRAPPER.format(wrapper="MMDistributedDataParallel"))
    assert ("DDP805", "warning", 16) in codes(found)


def test_a_local_wrapper_of_that_name_is_not_taken_for_it(tmp_path):
    source = "class MMDistributedDataParallel(torch.nn.Module):\n    def __init__(self, m):\n" \
             "        super().__init__(); self.m = m\n    def forward(self, x):\n        return self.m(x)\n" \
             + MM_WRAPPER.replace("from mmcv.parallel import MMDistributedDataParallel\n", "")
    found, _ = lint(tmp_path, source.format(wrapper="MMDistributedDataParallel"))
    assert [f for f in found if f.code == "DDP805"] == []


MM_SETUP = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset
{setup}
loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8, shuffle=True)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for (x,) in loader:
        opt.zero_grad(); model(x).sum().backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
        opt.step()
"""


def test_openmmlabs_init_dist_sets_up_the_process_group(tmp_path):
    found = lint_plain(tmp_path, MM_SETUP.format(setup='from mmcv.runner import init_dist\ninit_dist("pytorch")'))
    assert ("DDP802", "error", 5) in codes(found)


def test_without_a_set_up_the_script_is_not_distributed(tmp_path):
    found = lint_plain(tmp_path, MM_SETUP.format(setup="pass\n"))
    assert [f for f in found if f.code == "DDP802"] == []


EVERY_EPOCH = """
def gather_samples(x):
    xs = [torch.zeros_like(x) for _ in range(dist.get_world_size())]
    dist.all_gather(xs, x)
    return torch.cat(xs)

rank = dist.get_rank()
for epoch in range(10):
    if {test}:
        gather_samples(torch.randn(4))
"""


def test_a_periodic_test_written_with_not_is_no_switch_to_assume(tmp_path):
    # minimal-diffusion: `if not epoch % 1 and rank == 0:` around the sampler that all_gathers
    found, _ = lint(tmp_path, EVERY_EPOCH.format(test="not epoch % 1 and rank == 0"))
    assert ("DDP801", "error", 9) in codes(found)


def test_a_config_switch_beside_the_rank_test_is_assumed(tmp_path):
    found, _ = lint(tmp_path, EVERY_EPOCH.format(test="not args_sample_off and rank == 0").replace(
        "rank = dist.get_rank()", "rank = dist.get_rank()\nargs_sample_off = os.environ.get('OFF') == '1'"))
    assert ("DDP801", "warning", 9) in codes(found)


NAMED_SAMPLER = """
class SequentialDistributedSampler(torch.utils.data.Sampler):
    def __init__(self, ds, num_replicas, rank):
        self.n, self.r = len(ds) // num_replicas, rank
    def __iter__(self):
        return iter(range(self.r * self.n, (self.r + 1) * self.n))
    def __len__(self):
        return self.n
{more}

ds = TensorDataset(torch.randn(64, 2))
model = DDP(torch.nn.Linear(2, 1))
val_loader = DataLoader(ds, batch_size=8, sampler=SequentialDistributedSampler(ds, 2, dist.get_rank()))
for epoch in range(3):
    for (x,) in val_loader:
        model(x).sum().backward()
"""


def test_a_local_sampler_named_distributed_that_never_shuffles_needs_no_set_epoch(tmp_path):
    # IDM: a fixed per-rank slice, named after torch's sampler
    found, _ = lint(tmp_path, NAMED_SAMPLER.format(more=""))
    assert [f for f in found if f.code == "DDP804"] == []


def test_a_local_sampler_with_its_own_set_epoch_is_one_that_needs_it(tmp_path):
    more = "    def set_epoch(self, epoch):\n        self.epoch = epoch"
    found, _ = lint(tmp_path, NAMED_SAMPLER.format(more=more))
    assert ("DDP804", "warning", 19) in codes(found)


FALL_THROUGH = """
def make_loader(ds, sharded):
    if sharded:
        sampler = DistributedSampler(ds)
        return DataLoader(ds, batch_size=8, sampler=sampler)
    return DataLoader(ds, batch_size=8)

train_loader = make_loader(TensorDataset(torch.randn(64, 2)), {sharded})
model = DDP(torch.nn.Linear(2, 1))
for epoch in range(3):
    for (x,) in train_loader:
        model(x).sum().backward()
"""


def test_the_fall_through_loader_a_call_never_reaches_is_not_built(tmp_path):
    # IDM-style builder: `if phase == "train": return <sampled>` then `return DataLoader(ds)`
    found, _ = lint(tmp_path, FALL_THROUGH.format(sharded="True"))
    assert [f for f in found if f.code == "DDP802"] == []


def test_the_fall_through_loader_a_call_reaches_is_judged(tmp_path):
    found, _ = lint(tmp_path, FALL_THROUGH.format(sharded="False"))
    assert codes(found) == [("DDP802", "error", 11)]  # and the sampler no call builds needs no set_epoch


CLOCKED = """
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
last_log = time.time()
for step in range(1000):
    model(torch.randn(8, 4)).sum().backward(); opt.step(); opt.zero_grad()
    if {test}:
        t = torch.tensor(1.0); dist.all_reduce(t)
        last_log = time.time()
"""


def test_a_collective_each_ranks_own_clock_decides_is_a_warning(tmp_path):
    # PufferLib: `if time.time() > last_log + 0.25:` -> the logging all_reduce
    found, _ = lint(tmp_path, "import time\n" + CLOCKED.format(test="time.time() > last_log + 0.25"))
    assert ("DDP809", "warning", 14) in codes(found)


def test_the_same_collective_every_hundredth_step_is_alike_everywhere(tmp_path):
    found, _ = lint(tmp_path, "import time\n" + CLOCKED.format(test="step % 100 == 0"))
    assert [f for f in found if f.code in ("DDP809", "DDP801")] == []


NESTED_SETUP = """
import os, torch, torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset

class _Config:
    def __init__(self):
        class Torch:
            def __init__(self):
{setup}
        self.torch = Torch()

config = _Config()
model = torch.nn.Linear(4, 1)
loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8, shuffle=True)
for (x,) in loader:
    model(x).sum().backward()
"""


def test_a_class_defined_in_a_function_runs_its_init_when_built(tmp_path):
    # skrl: the process group is set up by `Torch()` defined inside the config's __init__
    setup = '                dist.init_process_group("gloo")'
    found = lint_plain(tmp_path, NESTED_SETUP.format(setup=setup))
    assert ("DDP802", "error", 13) in codes(found)


def test_the_nested_class_that_sets_up_nothing_leaves_one_process(tmp_path):
    found = lint_plain(tmp_path, NESTED_SETUP.format(setup="                self.ok = True"))
    assert [f for f in found if f.code == "DDP802"] == []


def test_the_ranks_own_truth_is_a_rank_test(tmp_path):
    # skrl: `if config.torch.is_distributed and config.torch.rank:` - every rank but 0
    found, _ = lint(tmp_path, "if dist.get_rank():\n    dist.barrier()\n")
    assert codes(found) == [("DDP801", "error", 8)]
    found, _ = lint(tmp_path, "if dist.get_world_size():\n    dist.barrier()\n")
    assert codes(found) == []


TURNED_OFF = """
class Agent:
    def __init__(self):
        self.model = DDP(torch.nn.Linear(4, 1))
        self.interval = 10
        if {test}:
            self.interval = 0
    def step(self, t):
        self.model(torch.randn(2, 4)).sum().backward()
        if self.interval > 0 and not t % self.interval:
            self.write(t)
    def write(self, t):
        torch.save(self.model.state_dict(), f"ckpt_{{t}}.pt")

agent = Agent()
for t in range(100):
    agent.step(t)
"""


def test_a_switch_every_other_rank_turns_off_leaves_one_writer(tmp_path):
    # skrl: `if rank: self.checkpoint_interval = 0`, then `if self.checkpoint_interval > 0 ...`
    found, _ = lint(tmp_path, TURNED_OFF.format(test="dist.get_rank()"))
    assert [f for f in found if f.code == "DDP806"] == []
    found, _ = lint(tmp_path, TURNED_OFF.format(test="dist.get_rank() != 0"))
    assert [f for f in found if f.code == "DDP806"] == []


def test_the_switch_rank_zero_turns_off_leaves_the_others_writing(tmp_path):
    found, _ = lint(tmp_path, TURNED_OFF.format(test="dist.get_rank() == 0"))
    assert ("DDP806", "warning", 18) in codes(found)


LOCAL_OFF = """
model = DDP(torch.nn.Linear(4, 1))
save_every = 10
if {test}:
    save_every = 0
for step in range(100):
    model(torch.randn(2, 4)).sum().backward()
    if save_every > 0 and step % save_every == 0:
        torch.save(model.state_dict(), "ckpt.pt")
"""


def test_a_local_switch_the_other_ranks_zero_leaves_rank_zero_writing(tmp_path):
    found, _ = lint(tmp_path, LOCAL_OFF.format(test="dist.get_rank() != 0"))
    assert [f for f in found if f.code == "DDP806"] == []
    found, _ = lint(tmp_path, LOCAL_OFF.format(test="os.environ.get('QUIET')"))
    assert ("DDP806", "warning", 14) in codes(found)


BOTH_SIDES = """
import fire, torch, torch.distributed as dist
import torch.multiprocessing as mp

class Trainer:
    def __init__(self, rank, world):
        if world > 1:
            dist.init_process_group("gloo", rank=rank, world_size=world)
        self.model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    def save(self):
        torch.save(self.model.state_dict(), "model.pt")

def run(rank, world):
    trainer = Trainer(rank, world)
    trainer.model(torch.randn(2, 4)).sum().backward()
    trainer.save()

def main(generate=False, world=2):
    if generate:
        Trainer(0, 1)
        return
    mp.spawn(run, args=(world,), nprocs=world)

if __name__ == "__main__":
    fire.Fire(main)
"""


def test_a_switch_whose_both_sides_set_up_the_group_is_no_single_process_side(tmp_path):
    # lightweight-gan: `if generate: Trainer(...); return` before the training that spawns ranks
    found = lint_plain(tmp_path, BOTH_SIDES)
    assert ("DDP806", "warning", 10) in codes(found)


def test_a_switch_only_one_side_of_which_sets_up_the_group_leaves_the_other_single(tmp_path):
    source = BOTH_SIDES.replace("        Trainer(0, 1)\n        return\n    mp.spawn", "        mp.spawn").replace(
        "nprocs=world)\n", "nprocs=world)\n    else:\n        torch.save({}, 'single.pt')\n")
    found = lint_plain(tmp_path, source)
    assert [f for f in found if f.code == "DDP806" and f.location.line == 24] == []


EXPORTING = """
class Memory:
    def __init__(self, *, size, export=False):
        self.size, self.export, self.items = size, export, []
    def add(self, x):
        self.items.append(x)
        if len(self.items) >= self.size:
            self.items = []
            if self.export:
                self.save()
    def save(self):
        torch.save(self.items, "memory.pt")

class RandomMemory(Memory):
    def __init__(self, *, size, export=False):
        super().__init__(size=size, export=export)

memory = RandomMemory(size=8{more})
model = DDP(torch.nn.Linear(4, 1))
for step in range(100):
    model(torch.randn(2, 4)).sum().backward()
    memory.add(step)
"""


def test_a_save_called_only_under_a_switch_every_construction_leaves_off_never_runs(tmp_path):
    # skrl's replay memory: `if self.export: self.save(...)`, export a keyword-only False
    found, _ = lint(tmp_path, EXPORTING.format(more=""))
    assert [f for f in found if f.code == "DDP806"] == []


def test_the_same_save_with_the_switch_on_is_every_ranks(tmp_path):
    found, _ = lint(tmp_path, EXPORTING.format(more=", export=True"))
    assert ("DDP806", "warning", 17) in codes(found)


NESTED_TAIL = """
distributed = dist.is_initialized()
model = DDP(torch.nn.Linear(4, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for it in range(10):
    loss = model(torch.randn(8, 4)).sum(); opt.zero_grad(); loss.backward(); opt.step()
    if distributed:
        stats = torch.tensor([loss.item()]); dist.reduce(stats, 0)
        if {test}:
            print(stats.item())
        else:
            continue
    torch.save(model.state_dict(), "ckpt.pt")
"""


def test_a_save_after_a_distributed_blocks_else_continue_is_rank_zeros(tmp_path):
    # adaptive-span: `if distributed: reduce; if rank == 0: ... else: continue`, then the save
    found, _ = lint(tmp_path, NESTED_TAIL.format(test="dist.get_rank() == 0"))
    assert [f for f in found if f.code == "DDP806"] == []
    found, _ = lint(tmp_path, NESTED_TAIL.format(test="it % 2 == 0"))
    assert ("DDP806", "warning", 18) in codes(found)


RELAYED = """
def micro(model, x, eval_only, div):
    loss = model(x).sum()
    if not eval_only:
        (loss / div).backward()

def batch(model, opt, x, eval_only, splits):
    opt.zero_grad()
    for i in range(splits):
        micro(model, x.chunk(splits)[i], eval_only, splits)
    if not eval_only:
        opt.step()

model = DDP(torch.nn.Linear(4, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for it in range(10):
    batch(model, opt, torch.randn(8, 4), {train}, 2)
    with torch.no_grad():
        batch(model, opt, torch.randn(8, 4), True, 2)
"""


def test_a_switch_relayed_by_the_loops_function_from_a_training_way_in_runs_the_backward(tmp_path):
    # adaptive-span: `_train_batch(..., eval_only, ...)` entered with False to train, True to evaluate
    found, _ = lint(tmp_path, RELAYED.format(train="False"))
    assert ("DDP805", "warning", 10) in codes(found)  # the backward in `micro`


def test_the_relayed_switch_on_every_way_in_evaluates(tmp_path):
    found, _ = lint(tmp_path, RELAYED.format(train="True"))
    assert [f for f in found if f.code == "DDP805"] == []


SEEDED_LAUNCHER = """
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.utils.data import DataLoader, Dataset, DistributedSampler

class Clips(Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, i):
        return torch.rand(4)

def train(rank, gpus):
    if gpus > 1:
        dist.init_process_group("gloo", rank=rank, world_size=gpus)
    ds = Clips()
    loader = DataLoader(ds, batch_size=8, num_workers=2, sampler=DistributedSampler(ds) if gpus > 1 else None)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    for epoch in range(2):
        for x in loader:
            model(x).sum().backward()

def main(gpus):
    torch.manual_seed(0)
    if gpus > 1:
        mp.spawn(train, nprocs=gpus, args=(gpus,))
    else:
{single}

if __name__ == "__main__":
    main(torch.cuda.device_count())
"""


def test_a_launchers_seed_does_not_reach_the_ranks_it_spawns(tmp_path):
    # HiFi-GAN: `torch.manual_seed(h.seed)` in main, then `if num_gpus > 1: mp.spawn(train)
    # else: train(0)`, whose set-up runs only when num_gpus > 1: the seeded process is no rank
    found = lint_plain(tmp_path, SEEDED_LAUNCHER.format(single="        train(0, gpus)"))
    assert [f for f in found if f.code == "DDP808"] == []


def test_a_launcher_that_runs_a_rank_itself_seeds_that_rank(tmp_path):
    # (the rank a launcher hands, not a constant 0: `train(0, 2)` is the one process a direct
    # call with a constant index stands for - session 95, ULE's `runner(rank=0, args=args)`)
    found = lint_plain(tmp_path, SEEDED_LAUNCHER.format(single='        train(int(os.environ["LOCAL_RANK"]), 2)').replace(
        "    if gpus > 1:\n        dist", "    if True:\n        dist").replace("import torch, ", "import os, torch, "))
    assert [f for f in found if f.code == "DDP808"] != []


NAMESPACE = """
import sys
class Trainer:
    def __init__(self, cfg):
        ds = TensorDataset(torch.randn(64, 4))
        self.loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds))
        self.model = DDP(torch.nn.Linear(4, 1))
    def train(self):
        for epoch in range(3):
{reset}
            for (x,) in self.loader:
                self.model(x).sum().backward()

sys.modules[__name__].__dict__[os.environ.get("TRAINER", "Trainer")]({{}}).train()
"""


def test_a_trainer_picked_from_a_modules_namespace_is_followed(tmp_path):
    # ProPainter: `core.__dict__[version].__dict__["Trainer"](config).train()`
    found, _ = lint(tmp_path, NAMESPACE.format(reset="            pass"))
    assert ("DDP804", "warning", 11) in codes(found)


def test_the_namespace_trainer_that_resets_its_sampler_is_clean(tmp_path):
    found, _ = lint(tmp_path, NAMESPACE.format(reset="            self.loader.sampler.set_epoch(epoch)"))
    assert [f for f in found if f.code == "DDP804"] == []
