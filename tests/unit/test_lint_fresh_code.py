"""Issue 38, measured on repositories new to the corpus: what the lint misjudged there, written
again in our own words as small scripts, each with its healthy twin."""

from __future__ import annotations

import textwrap

import pytest

from ddpdoctor.lint.driver import gather, lint_results
from tests.unit.test_lint_real_patterns import codes, lint


# ---------------------------------------------------------------------- DDP803
def test_a_dataset_placed_on_the_ranks_device_is_not_a_manual_shard(tmp_path):
    found, _ = lint(tmp_path, """
class Frames(torch.utils.data.Dataset):
    def __init__(self, files, device=None):
        self.files, self.device = files, device
    def __len__(self):
        return len(self.files)
    def __getitem__(self, i):
        return torch.zeros(2, device=self.device)
rank = dist.get_rank()
device = torch.device("cuda:{:d}".format(rank))
frames = Frames(list(range(64)), device=device)
loader = DataLoader(frames, sampler=DistributedSampler(frames), batch_size=4)
""")
    assert codes(found) == []


def test_a_dataset_cut_by_the_rank_under_a_sampler_is_still_sharded_twice(tmp_path):
    found, _ = lint(tmp_path, """
rank, world = dist.get_rank(), dist.get_world_size()
device = torch.device("cuda:{:d}".format(rank))
frames = TensorDataset(torch.randn(64, 2, device=device)[rank::world])
loader = DataLoader(frames, sampler=DistributedSampler(frames), batch_size=4)
""")
    assert codes(found) == [("DDP803", "warning", 10)]


# ---------------------------------------------------------------------- DDP805
ENGINE_OR_DDP = """
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(64, 4)), sampler=DistributedSampler(range(64)), batch_size=4)
def train_one_epoch(model, scaler, every):
    for i, (x,) in enumerate(loader):
        if scaler is None:
            loss = model(x).sum() / every
            model.backward(loss)      # an engine that owns backward and step: it knows the boundary
            model.step()
        else:
            {ddp_path}
for epoch in range(2):
    loader.sampler.set_epoch(epoch)
    train_one_epoch(model, None, 4)
"""


def test_an_engine_branch_that_owns_backward_and_step_leaves_the_ddp_branch_to_judge(tmp_path):
    found, _ = lint(tmp_path, ENGINE_OR_DDP.format(ddp_path="""(model(x).sum() / every).backward()
            if (i + 1) % every == 0:
                opt.step()
                opt.zero_grad()"""))
    assert codes(found) == [("DDP805", "warning", 17)]


def test_the_ddp_branch_with_no_sync_is_clean(tmp_path):
    found, _ = lint(tmp_path, ENGINE_OR_DDP.format(ddp_path="""if (i + 1) % every != 0:
                with model.no_sync():
                    (model(x).sum() / every).backward()
            else:
                (model(x).sum() / every).backward()
                opt.step()
                opt.zero_grad()"""))
    assert codes(found) == []


# ---------------------------------------------------------------------- DDP804
SAMPLER_HELPER = """
def make_sampler(ds, shuffle, distributed):
    if distributed:
        return DistributedSampler(ds, shuffle=shuffle)
    return RandomSampler(ds) if shuffle else None
def endless(source):
    while True:
        for batch in source:
            yield batch
model = DDP(torch.nn.Linear(4, 1))
ds = TensorDataset(torch.randn(64, 4))
loader = DataLoader(ds, batch_size=4, sampler=make_sampler(ds, shuffle={shuffle}, distributed=True))
batches = endless(loader)
for step in range(1000):
    (x,) = next(batches)
    model(x).sum().backward()
"""


def test_a_shuffling_sampler_from_a_helper_drained_by_an_endless_generator_needs_set_epoch(tmp_path):
    found, _ = lint(tmp_path, SAMPLER_HELPER.format(shuffle=True))
    assert codes(found) == [("DDP804", "warning", 9)]


def test_the_same_helper_called_without_shuffling_needs_no_set_epoch(tmp_path):
    found, _ = lint(tmp_path, SAMPLER_HELPER.format(shuffle=False))
    assert codes(found) == []


# ---------------------------------------------------------------------- DDP801
NETS = """
import torch
class Block(torch.nn.Module):
    def __init__(self, width, norm=None):
        super().__init__()
        if norm is None:
            norm = torch.nn.{norm}
        self.fc = torch.nn.Linear(width, width)
        self.norm = norm(width)
    def forward(self, x):
        return self.norm(self.fc(x))
def small(**kw):
    return Block(4, **kw), 4
def large(**kw):
    return Block(8, **kw), 8
"""

EVAL_ON_RANK_ZERO = """
import nets
rank = dist.get_rank()
backbone, width = nets.__dict__[os.environ.get("ARCH", "small")]()
model = DDP(torch.nn.Sequential(backbone, torch.nn.Linear(width, 2)))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    model(torch.randn(2, 4)).sum().backward()
    opt.step()
    if rank == 0:
        with torch.no_grad():
            model(torch.randn(2, 4))
"""


def test_a_backbone_picked_from_a_modules_table_by_name_brings_its_batchnorm_buffers(tmp_path):
    found, _ = lint(tmp_path, EVAL_ON_RANK_ZERO, nets=NETS.format(norm="BatchNorm1d"))
    assert codes(found) == [("DDP801", "warning", 17)]


def test_a_backbone_from_the_same_table_without_buffers_is_clean(tmp_path):
    found, _ = lint(tmp_path, EVAL_ON_RANK_ZERO, nets=NETS.format(norm="LayerNorm"))
    assert codes(found) == []


SAMPLER_ALIAS = """
local_rank = int(os.environ.get("LOCAL_RANK", -1))
make = RandomSampler if local_rank == -1 else DistributedSampler
model = DDP(torch.nn.Linear(4, 1))
ds = TensorDataset(torch.randn(64, 4))
loader = DataLoader(ds, batch_size=4, sampler=make(ds))
it = iter(loader)
for epoch in range(3):
    {restart}
    for step in range(10):
        try:
            (x,) = next(it)
        except StopIteration:
            it = iter(loader)
            (x,) = next(it)
        model(x).sum().backward()
"""


# ---------------------------------------------------------------------- apex's DistributedDataParallel
APEX = """
from apex.parallel import DistributedDataParallel as ApexDDP
net = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))
model = ApexDDP(net)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(64, 4)), sampler=DistributedSampler(range(64)), batch_size=4)
for epoch in range(2):
    loader.sampler.set_epoch(epoch)
    for i, (x,) in enumerate(loader):
        model(x).sum().backward()
        {step}
    if dist.get_rank() == 0:
        with torch.no_grad():
            model(torch.randn(2, 4))      # apex's forward syncs no buffers: no DDP801
"""


def test_accumulation_on_an_apex_ddp_model_all_reduces_every_micro_step(tmp_path):
    found, _ = lint(tmp_path, APEX.format(step="""if (i + 1) % 4 == 0:
            opt.step()"""))
    assert codes(found) == [("DDP805", "warning", 15)]


def test_an_apex_ddp_model_stepping_every_batch_is_clean_and_its_rank_zero_forward_too(tmp_path):
    found, _ = lint(tmp_path, APEX.format(step="opt.step()"))
    assert codes(found) == []


# ---------------------------------------------------------------------- DDP804 through wrappers
WRAPPED_LOADER = """
def make_loader(ds, distributed):
    sampler = RandomSampler(ds) if not distributed else DistributedSampler(ds)
    loader = DataLoader(ds, sampler=sampler, batch_size=4)
    return loader
model = DDP(torch.nn.Linear(4, 1))
train_loader = make_loader(TensorDataset(torch.randn(64, 4)), True)
steps = 0
while steps < 100:
    {restart}
    shown = iter(train_loader)
    for i, (x,) in enumerate(shown):
        model(x).sum().backward()
        steps += 1
"""


@pytest.mark.parametrize("script, restart, expected", [
    (SAMPLER_ALIAS, "pass", [("DDP804", "warning", 11)]),
    (SAMPLER_ALIAS, "loader.sampler.set_epoch(epoch)", []),
    (WRAPPED_LOADER, "pass", [("DDP804", "warning", 8)]),
    (WRAPPED_LOADER, "train_loader.sampler.set_epoch(steps)", []),
], ids=["class-alias-without-set-epoch", "class-alias-with-set-epoch",
        "conditional-sampler-wrapped-loader-without-set-epoch", "wrapped-loader-with-set-epoch"])
def test_a_sampler_through_a_class_alias_or_a_wrapped_loader_needs_set_epoch_and_is_clean_with_it(
        tmp_path, script, restart, expected):
    found, _ = lint(tmp_path, script.format(restart=restart))
    assert codes(found) == expected


# ---------------------------------------------------------------------- DDP806 through a returned tuple
ENVS = """
import argparse
def read_envs():
    local = int(os.getenv("LOCAL_RANK", -1))
    rank = int(os.getenv("RANK", -1))
    return local, rank, int(os.getenv("WORLD_SIZE", 1))
args = argparse.Namespace()
{unpack} = read_envs()
model = DDP(torch.nn.Linear(4, 1))
class Runner:
    def __init__(self, args):
        self.rank = args.rank
        self.main = self.rank in [-1, 0]
    def finish(self):
        if self.main:
            torch.save(model.state_dict(), "last.pt")
Runner(args).finish()
NNODES = int(os.environ.get("NNODES", 1))  # a job on several nodes
"""


@pytest.mark.parametrize("unpack, expected", [
    ("args.rank, args.local_rank, args.world_size", [("DDP806", "warning", 21)]),
    ("args.local_rank, args.rank, args.world_size", []),
], ids=["wrong-order-is-the-local-rank-one-writer-per-node", "helper-order-is-the-global-rank"])
def test_a_rank_unpacked_from_a_helpers_tuple_takes_the_helpers_element(tmp_path, unpack, expected):
    found, _ = lint(tmp_path, ENVS.format(unpack=unpack))
    assert codes(found) == expected


# ---------------------------------------------------------------------- DDP805 through functools.partial
PARTIAL = """
from functools import partial
def run_backward(scale, loss, opt):
    (loss * scale).backward()
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(64, 4)), sampler=DistributedSampler(range(64)), batch_size=4)
backwards = partial(run_backward, 1.0)
for epoch in range(2):
    loader.sampler.set_epoch(epoch)
    batches = iter(loader)
    opt.zero_grad()
    for i in range(4):
        (x,) = next(batches)
        backwards(model(x).sum(), opt)
        {inner_step}
    {outer_step}
"""


def test_a_backward_reached_through_a_partial_of_a_helper_accumulates(tmp_path):
    found, _ = lint(tmp_path, PARTIAL.format(inner_step="pass", outer_step="opt.step()"))
    assert codes(found) == [("DDP805", "warning", 20)]


def test_a_step_after_every_backward_through_the_partial_is_clean(tmp_path):
    found, _ = lint(tmp_path, PARTIAL.format(inner_step="opt.step()", outer_step="pass"))
    assert codes(found) == []


# ---------------------------------------------------------------------- DDP805: the outer loop in the caller
TRAIN_STEP = """
class Runner:
    def __init__(self):
        self.model = DDP(torch.nn.Linear(4, 1))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.every = 4
    def train_step(self, batches):
        self.opt.zero_grad()
        for i in range(self.every):
            (x,) = next(batches)
            {micro}
        self.opt.step()
runner = Runner()
loader = DataLoader(TensorDataset(torch.randn(64, 4)), sampler=DistributedSampler(range(64), shuffle=False), batch_size=4)
batches = iter(loader)
for step in range(10):
    runner.train_step(batches)
"""


def test_micro_steps_in_a_method_that_a_caller_runs_in_a_loop_accumulate(tmp_path):
    found, _ = lint(tmp_path, TRAIN_STEP.format(micro="(self.model(x).sum() / self.every).backward()"))
    assert codes(found) == [("DDP805", "warning", 16)]


def test_the_same_method_with_no_sync_on_all_but_the_last_micro_step_is_clean(tmp_path):
    found, _ = lint(tmp_path, TRAIN_STEP.format(micro="""ctx = self.model.no_sync() if i < self.every - 1 else contextlib.nullcontext()
            with ctx:
                (self.model(x).sum() / self.every).backward()"""))
    assert codes(found) == []


def test_a_method_handed_to_a_retry_wrapper_in_a_loop_runs_in_that_loop(tmp_path):
    source = TRAIN_STEP.format(micro="(self.model(x).sum() / self.every).backward()").replace(
        "    runner.train_step(batches)", "    with_retries(runner.train_step, batches)")
    found, _ = lint(tmp_path, "def with_retries(f, *args):\n    return f(*args)\n" + source)
    assert codes(found) == [("DDP805", "warning", 19)]


def test_the_same_method_handed_on_once_outside_a_loop_is_not_accumulation(tmp_path):
    source = TRAIN_STEP.format(micro="(self.model(x).sum() / self.every).backward()").replace(
        "for step in range(10):\n    runner.train_step(batches)", "with_retries(runner.train_step, batches)")
    found, _ = lint(tmp_path, "def with_retries(f, *args):\n    return f(*args)\n" + source)
    assert codes(found) == []


# ---------------------------------------------------------------------- DDP806: a per-sample cache
SAMPLE_CACHE = """
class Clips(torch.utils.data.Dataset):
    def __init__(self, files):
        self.files = files
    def __len__(self):
        return len(self.files)
    def features(self, name):
        cached = {path}
        if os.path.exists(cached):
            return torch.load(cached)
        feats = torch.randn(4)
        torch.save(feats, cached)
        return feats
    def __getitem__(self, index):
        return self.features(self.files[index])
model = DDP(torch.nn.Linear(4, 1))
ds = Clips([f"clip{{i}}.wav" for i in range(64)])
loader = DataLoader(ds, sampler=DistributedSampler(ds, shuffle=False), batch_size=4)
for x in loader:
    model(x).sum().backward()
"""


def test_a_cache_file_per_sample_written_while_loading_it_is_not_every_rank_writing(tmp_path):
    found, _ = lint(tmp_path, SAMPLE_CACHE.format(path='name.replace(".wav", ".feat.pt")'))
    assert codes(found) == []


def test_one_fixed_file_written_while_loading_every_sample_is_still_every_rank(tmp_path):
    found, _ = lint(tmp_path, SAMPLE_CACHE.format(path='"features.pt"'))
    assert codes(found) == [("DDP806", "warning", 17)]


# ---------------------------------------------------------------------- DDP802: two branches on one flag
def _lint_alone(tmp_path, source: str):
    """Lint a script without the shared header (which sets up the process group unconditionally)."""
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(source).lstrip("\n"))
    facts = gather(str(path))
    return [f for r in lint_results(facts, set()) for f in r.findings]


ONE_FLAG = """
import os
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
def start(launcher):
    if launcher == "env":
        dist.init_process_group("gloo")
opt = {"dist": os.environ.get("WORLD_SIZE") is not None}
if opt["dist"]:
    start("env")
data = TensorDataset(torch.randn(64, 4))
net = torch.nn.Linear(4, 1)
model = torch.nn.parallel.DistributedDataParallel(net) if opt["dist"] else net
for epoch in range(2):
    if opt["dist"]:
        sampler = DistributedSampler(data)
        sampler.set_epoch(epoch)
        loader = DataLoader(data, sampler=sampler, batch_size=4)
    else:
        loader = DataLoader(data, shuffle=True, batch_size=4)
    for (x,) in loader:
        model(x).sum().backward()
"""


def test_a_plain_loader_in_the_else_of_the_flag_that_starts_the_group_through_a_helper_is_single_process(tmp_path):
    found = _lint_alone(tmp_path, ONE_FLAG)
    assert codes(found) == []


def test_a_plain_loader_outside_that_flag_is_still_unsharded(tmp_path):
    found = _lint_alone(tmp_path, ONE_FLAG.replace(
        "    else:\n        loader = DataLoader(data, shuffle=True, batch_size=4)\n",
        "    loader = DataLoader(data, shuffle=True, batch_size=4)\n"))
    assert [c for c, _, _ in codes(found)] == ["DDP802"]


# ---------------------------------------------------------------------- DDP801: the model a call site passes
EVAL_HELPER = """
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 1)
        self.register_buffer("scale", torch.ones(1))
    def forward(self, x):
        return self.fc(x) * self.scale
def plain(m):
    return m.module if hasattr(m, "module") else m
@torch.no_grad()
def evaluate(net):
    return net(torch.randn(2, 4)).sum().item()
model = DDP(Net())
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    model(torch.randn(2, 4)).sum().backward()
    opt.step()
    if step % 5 == 0:
        evaluate(model)                  # every rank: fine
if dist.get_rank() == 0:
    evaluate({final})
"""


# the helper's forward also runs on every rank (the periodic evaluation): the one-sided place is
# the rank-0 call into it, not the forward inside; given the unwrapped module it is no DDP forward
@pytest.mark.parametrize("final, expected", [
    ("model", [("DDP801", "warning", 27)]),
    ("plain(model)", []),
], ids=["ddp-wrapper-reported-at-the-rank-zero-call", "unwrapped-module-is-clean"])
def test_a_final_rank_zero_evaluation_is_judged_by_the_model_that_call_passes(tmp_path, final, expected):
    found, _ = lint(tmp_path, EVAL_HELPER.format(final=final))
    assert codes(found) == expected


# ---------------------------------------------------------------------- DDP805: which branch runs by default
FLAG_BRANCHES = """
import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--half", action="store_true"{default})
args = parser.parse_args()
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(64, 4)), sampler=DistributedSampler(range(64)), batch_size=4)
for epoch in range(2):
    loader.sampler.set_epoch(epoch)
    for i, (x,) in enumerate(loader):
        loss = model(x).sum() / 4
        if args.half:
            (loss * 2.0).backward()
        else:
            loss.backward()
        if (i + 1) % 4 == 0:
            opt.step()
"""


def test_accumulation_is_reported_at_the_backward_of_the_branch_a_store_true_flag_takes_by_default(tmp_path):
    found, _ = lint(tmp_path, FLAG_BRANCHES.format(default=""))
    assert codes(found) == [("DDP805", "warning", 21)]


def test_a_store_true_flag_defaulting_to_true_takes_the_other_branch(tmp_path):
    found, _ = lint(tmp_path, FLAG_BRANCHES.format(default=", default=True"))
    assert codes(found) == [("DDP805", "warning", 19)]


# ---------------------------------------------------------------------- DDP805: no_sync around the backward only
NO_SYNC_PLACE = """
import contextlib
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(64, 4)), sampler=DistributedSampler(range(64)), batch_size=4)
for epoch in range(2):
    loader.sampler.set_epoch(epoch)
    for i, (x,) in enumerate(loader):
        last = (i + 1) % 4 == 0
        {body}
        if last:
            opt.step()
"""


def test_no_sync_around_the_backward_alone_comes_after_the_forward_that_decided_the_sync(tmp_path):
    found, _ = lint(tmp_path, NO_SYNC_PLACE.format(body="""loss = model(x).sum() / 4
        with (contextlib.nullcontext() if last else model.no_sync()):
            loss.backward()"""))
    # (at the backward the context holds, the line after the `with`: session 80)
    assert codes(found) == [("DDP805", "warning", 17)]


def test_no_sync_around_the_forward_and_the_backward_is_clean(tmp_path):
    found, _ = lint(tmp_path, NO_SYNC_PLACE.format(body="""with (contextlib.nullcontext() if last else model.no_sync()):
            loss = model(x).sum() / 4
            loss.backward()"""))
    assert codes(found) == []


# ---------------------------------------------------------------------- DDP805: no_sync out of phase with the step
PHASE = """
import contextlib
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(64, 4)), sampler=DistributedSampler(range(64)), batch_size=4)
accum = int(os.environ.get("ACCUM", 4))
for epoch in range(2):
    loader.sampler.set_epoch(epoch)
    for batch_idx, (x,) in enumerate(loader):
        with (model.no_sync() if {skip} else contextlib.nullcontext()):
            (model(x).sum() / accum).backward()
        if (batch_idx + 1) % accum == 0:
            opt.step()
            opt.zero_grad()
"""


def test_no_sync_on_the_micro_step_that_steps_leaves_the_ranks_gradients_unsynced(tmp_path):
    found, _ = lint(tmp_path, PHASE.format(skip="batch_idx % accum != 0"))
    assert codes(found) == [("DDP805", "warning", 15)]


def test_no_sync_on_all_but_the_micro_step_that_steps_is_clean(tmp_path):
    found, _ = lint(tmp_path, PHASE.format(skip="(batch_idx + 1) % accum != 0"))
    assert codes(found) == []
