"""Issue 38, vision repositories new to the corpus (helper x): what the lint misjudged there, written
again in our own words as small scripts, each with its healthy twin."""

from __future__ import annotations

import ast

from ddpdoctor.lint.driver import gather, lint_results
from tests.unit.test_lint_real_patterns import codes, lint


# ---------------------------------------------------------------------- DDP805: a `continue` skips the step
SKIP_THE_STEP = """
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(64, 4)), sampler=DistributedSampler(range(64)), batch_size=4)
def fit(every):
    for i, (x,) in enumerate(loader):
        loss = model(x).sum() / every
{body}
for epoch in range(2):
    loader.sampler.set_epoch(epoch)
    fit(4)
"""


def test_a_backward_every_batch_and_a_continue_before_the_step_accumulates(tmp_path):
    # the micro-steps that `continue` still all-reduced their gradients: no no_sync
    found, _ = lint(tmp_path, SKIP_THE_STEP.format(body="""\
        loss.backward()
        if (i + 1) % every != 0:
            continue
        opt.step()
        opt.zero_grad()"""))
    assert codes(found) == [("DDP805", "warning", 13)]


def test_a_skipped_batch_before_its_backward_is_not_accumulation(tmp_path):
    # the `continue` skips the backward too: every backward is followed by its own step
    found, _ = lint(tmp_path, SKIP_THE_STEP.format(body="""\
        if not torch.isfinite(loss):
            continue
        loss.backward()
        opt.step()
        opt.zero_grad()"""))
    assert [c for c in codes(found) if c[0] == "DDP805"] == []  # (DDP809 names the rank-local decision)


def test_the_continue_before_the_step_with_no_sync_on_the_skipped_micro_steps_is_clean(tmp_path):
    found, _ = lint(tmp_path, SKIP_THE_STEP.format(body="""\
        if (i + 1) % every != 0:
            with model.no_sync():
                model(x).sum().backward()
            continue
        model(x).sum().backward()
        opt.step()
        opt.zero_grad()"""))
    assert codes(found) == []


# ---------------------------------------------------------------------- DDP806: rank 0 first, a few calls up
RANK_ZERO_FIRST_BUILDER = """
import contextlib
@contextlib.contextmanager
def local_zero_first(local_rank):
    if local_rank not in (-1, 0):
        dist.barrier()
    yield
    if local_rank == 0:
        dist.barrier()
class Labels(torch.utils.data.Dataset):
    def __init__(self, root):
        self.items = self.load(root) if os.path.exists(root + ".cache") else self.index(root)
    def index(self, root):
        items = dict(n=4)
        torch.save(items, root + ".cache")
        return items
    def load(self, root):
        return torch.load(root + ".cache")
    def __len__(self):
        return 4
    def __getitem__(self, i):
        return torch.zeros(2)
def make_loader(root, local_rank):
{build}
    return DataLoader(data, sampler=DistributedSampler(data), batch_size=2)
loader = make_loader("labels", int(os.environ["LOCAL_RANK"]))
"""


def test_a_cache_written_by_a_dataset_built_inside_a_rank_zero_first_block_is_not_every_rank(tmp_path):
    # the save is three calls below the `with`: make_loader -> Labels.__init__ -> index
    found, _ = lint(tmp_path, RANK_ZERO_FIRST_BUILDER.format(build="""\
    with local_zero_first(local_rank):
        data = Labels(root)"""))
    assert [c for c in codes(found) if c[0] == "DDP806"] == []


def test_the_same_dataset_built_outside_the_block_is_still_every_rank_writing(tmp_path):
    found, _ = lint(tmp_path, RANK_ZERO_FIRST_BUILDER.format(build="""\
    with local_zero_first(local_rank):
        pass
    data = Labels(root)"""))
    assert [c for c in codes(found) if c[0] == "DDP806"] == [("DDP806", "warning", 20)]


def test_other_ways_to_that_cache_under_a_rank_test_keep_it_one_writer(tmp_path):
    # rank 0 alone also builds the dataset a few calls down (an anchor check on the labels)
    found, _ = lint(tmp_path, RANK_ZERO_FIRST_BUILDER.format(build="""\
    with local_zero_first(local_rank):
        data = Labels(root)""") + """
def check_labels(root):
    return len(Labels(root))
if dist.get_rank() == 0:
    check_labels("labels")
""")
    assert [c for c in codes(found) if c[0] == "DDP806"] == []


# ---------------------------------------------------------------------- DDP806: a rank-0 return one block down
GATHER_THEN_WRITE = """
class Scorer:
    def __init__(self, out, distributed=True):
        self.out, self.distributed, self.rows = out, distributed, []
    def score(self):
        if self.distributed:
            parts = [None] * dist.get_world_size()
            dist.all_gather_object(parts, self.rows)
            rows = [r for part in parts for r in part]
{leave}
        else:
            rows = self.rows
        torch.save(rows, self.out + "/rows.pth")
        return len(rows)
Scorer("out").score()
"""


def test_a_write_after_the_other_ranks_returned_inside_the_distributed_branch_is_rank_zeros(tmp_path):
    # after `if distributed: gather; if not rank 0: return` only rank 0 (or a single process) writes
    found, _ = lint(tmp_path, GATHER_THEN_WRITE.format(leave="""\
            if dist.get_rank() != 0:
                return 0"""))
    assert [c for c in codes(found) if c[0] == "DDP806"] == []


def test_the_same_write_with_no_rank_returning_in_that_branch_is_every_rank(tmp_path):
    found, _ = lint(tmp_path, GATHER_THEN_WRITE.format(leave="""\
            rows = sorted(rows)"""))
    assert [c for c in codes(found) if c[0] == "DDP806"] == [("DDP806", "warning", 18)]


# ---------------------------------------------------------------------- a script that puts its repository on sys.path
SCRIPT_IN_A_FOLDER = """
import os, sys
import torch
import torch.distributed as dist
here = os.path.abspath(os.path.dirname(__file__))
{extend}
from lib.io import write_state
dist.init_process_group("gloo")
write_state({{"step": 1}}, "state.pt")
"""


def _script_in_a_folder(tmp_path, extend):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "__init__.py").write_text("")
    (tmp_path / "lib" / "io.py").write_text("import torch\ndef write_state(state, path):\n    torch.save(state, path)\n")
    (tmp_path / "scripts").mkdir()
    script = tmp_path / "scripts" / "train.py"
    script.write_text(SCRIPT_IN_A_FOLDER.format(extend=extend))
    facts = gather(str(script))
    return [f for r in lint_results(facts, set()) for f in r.findings], facts


def test_modules_found_through_the_folder_a_script_appends_to_sys_path_are_read(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path / "..")  # the working directory is neither the script's nor the repository's
    found, facts = _script_in_a_folder(tmp_path, "sys.path.append(os.path.split(here)[0])")
    assert [(f.code, f.location.line) for f in found if f.code == "DDP806"] == [("DDP806", 3)]
    # the script, lib/__init__.py (Python runs a package before its module) and lib/io.py
    assert len(facts.files) == 3


def test_without_that_line_the_helper_stays_unread(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path / "..")
    found, facts = _script_in_a_folder(tmp_path, "root = os.environ.get('ROOT', '')")
    assert [f.code for f in found if f.code == "DDP806"] == []
    assert len(facts.files) == 1


def test_the_filesystem_root_or_an_installed_packages_folder_is_no_import_root(tmp_path):
    from ddpdoctor.lint.syspath import added_roots
    site = tmp_path / "venv" / "lib" / "site-packages"
    site.mkdir(parents=True)
    (tmp_path / "lib").mkdir()
    tree = ast.parse(f"import sys\nsys.path.append('/')\nsys.path.append({str(site)!r})\n"
                     f"sys.path.insert(0, {str(tmp_path / 'lib')!r})\n")
    assert added_roots(tree, tmp_path / "train.py", tmp_path) == [tmp_path / "lib"]


# ---------------------------------------------------------------------- DDP809: a flag that comes with the batch
FLAGGED_BATCHES = """
class Clips(torch.utils.data.Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, i):
        return torch.randn(4), i % 7 != 3   # the sample, and whether it could be built
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = Clips()
loader = DataLoader(data, sampler=DistributedSampler(data), batch_size=4)
for epoch in range(2):
    loader.sampler.set_epoch(epoch)
    for step, (x, ok) in enumerate(loader):
{skip}
        model(x).sum().backward()
        opt.step()
"""


def test_a_skip_on_a_flag_that_came_with_the_ranks_own_batch_diverges(tmp_path):
    found, _ = lint(tmp_path, FLAGGED_BATCHES.format(skip="""\
        if not all(ok):
            continue"""))
    assert codes(found) == [("DDP809", "warning", 19)]
    assert "each rank's own batch" in found[0].message


def test_skips_on_the_step_counter_or_the_batch_size_are_the_same_on_every_rank(tmp_path):
    found, _ = lint(tmp_path, FLAGGED_BATCHES.format(skip="""\
        if step < 2 or len(x) < 4:
            continue"""))
    assert codes(found) == []


def test_a_batch_flag_all_reduced_before_the_skip_is_shared(tmp_path):
    found, _ = lint(tmp_path, FLAGGED_BATCHES.format(skip="""\
        bad = torch.tensor(float(not all(ok)))
        dist.all_reduce(bad)
        if bad > 0:
            continue"""))
    assert codes(found) == []


LITE_LOOP = """
from pytorch_lightning.lite import LightningLite
class Clips(torch.utils.data.Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, i):
        return torch.randn(4), i % 7 != 3
class Run(LightningLite):
    def run(self):
        model, opt = self.setup(torch.nn.Linear(4, 1), torch.optim.SGD([torch.zeros(1)], lr=0.1))
        loader = self.setup_dataloaders(DataLoader(Clips(), batch_size=4, shuffle=True))
        for x, ok in loader:
{skip}
            self.backward(model(x).sum())
            opt.step()
Run(strategy="ddp", devices=2).run()
"""


def test_a_batch_flag_skip_in_a_lightning_lite_subclass_diverges_too(tmp_path):
    # the script's own LightningLite subclass makes it a DDP run (its setup wraps the model)
    found, _ = lint(tmp_path, LITE_LOOP.format(skip="""\
            if not all(ok):
                continue"""))
    assert [c for c in codes(found) if c[0] == "DDP809"] == [("DDP809", "warning", 18)]


def test_the_lite_loop_without_that_skip_is_clean(tmp_path):
    found, _ = lint(tmp_path, LITE_LOOP.format(skip="""\
            x = x.float()"""))
    assert codes(found) == []


# ---------------------------------------------------------------------- DDP801: `local_rank >= 0` asks "distributed?"
LAUNCHED = """
import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int, default=-1)
args = parser.parse_args()
{test}
if distributed:
    dist.init_process_group("gloo")
model = torch.nn.Linear(4, 1)
if distributed:
    model = DDP(model)
    dist.barrier()
"""


def test_a_local_rank_of_at_least_zero_is_the_same_on_every_launched_rank(tmp_path):
    found, _ = lint(tmp_path, LAUNCHED.format(test="distributed = args.local_rank >= 0"))
    assert [c for c in codes(found) if c[0] == "DDP801"] == []


def test_a_local_rank_above_zero_still_leaves_local_rank_zero_out(tmp_path):
    found, _ = lint(tmp_path, LAUNCHED.format(test="distributed = args.local_rank > 0"))
    assert [c[0] for c in codes(found) if c[0] == "DDP801"] != []


# ---------------------------------------------------------------------- DDP808 under a framework that launches the ranks
LITE_SEEDED = """
import torch
from torch.utils.data import DataLoader
from pytorch_lightning.lite import LightningLite
class Clips(torch.utils.data.Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, i):
        return torch.randn(4)
class Run(LightningLite):
    def run(self):
        g = torch.Generator()
        g.manual_seed({seed})
        model, opt = self.setup(torch.nn.Linear(4, 1), torch.optim.SGD([torch.zeros(1)], lr=0.1))
        loader = self.setup_dataloaders(DataLoader(Clips(), batch_size=4, num_workers=2, generator=g))
        for x in loader:
            self.backward(model(x).sum())
            opt.step()
Run(strategy="ddp", devices=2).run()
"""


def _lite_script(tmp_path, seed):
    # no init_process_group of its own: Lightning starts the ranks and the group
    path = tmp_path / "train.py"
    path.write_text(LITE_SEEDED.format(seed=seed).lstrip("\n"))
    facts = gather(str(path))
    return [f for r in lint_results(facts, set()) for f in r.findings]


def test_workers_seeded_from_one_constant_generator_under_lightning_lite_are_the_same_on_every_rank(tmp_path):
    found = _lite_script(tmp_path, "42")
    assert [(f.code, f.location.line) for f in found if f.code == "DDP808"] == [("DDP808", 12)]


def test_a_generator_seeded_with_the_rank_under_lightning_lite_is_clean(tmp_path):
    found = _lite_script(tmp_path, "42 + self.global_rank")
    assert [f.code for f in found if f.code == "DDP808"] == []


# ---------------------------------------------------------------------- both sides of one rank test reach every rank
BOTH_SIDES = """
class Trainer:
    def __init__(self, every):
        self.every = every
        self.model = DDP(torch.nn.Linear(4, 1))
    def fit(self):
        for step in range(8):
            if step % self.every == 0:
                dist.barrier()
rank = dist.get_rank()
if rank == 0:
    trainer = Trainer(2)
{other}
trainer.fit()
"""


def test_an_object_built_on_both_sides_of_a_rank_test_holds_every_ranks_state(tmp_path):
    found, _ = lint(tmp_path, BOTH_SIDES.format(other="else:\n    trainer = Trainer(2)"))
    assert [c for c in codes(found) if c[0] == "DDP809"] == []
