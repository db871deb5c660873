"""The static lint (DDP8xx) over small scripts written to a temp dir: each rule finds its bug,
and the idioms that look alike but are safe stay clean. No torch import, no process."""

from __future__ import annotations

import re
import textwrap
import time
from pathlib import Path

import pytest

from ddpdoctor.core.errors import UsageError
from ddpdoctor.core.registry import all_checks
from ddpdoctor.lint.driver import gather, lint_results

REPO = Path(__file__).resolve().parents[2]

HEAD = """\
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
dist.init_process_group("gloo")
rank = dist.get_rank()
"""


def lint_source(tmp_path: Path, source: str, name: str = "train.py", head: bool = True, **extra: str):
    for other, text in extra.items():
        (tmp_path / f"{other}.py").write_text(textwrap.dedent(text))
    path = tmp_path / name
    path.write_text((HEAD if head else "") + textwrap.dedent(source).lstrip("\n"))
    facts = gather(str(path))
    return {f.code: f for r in lint_results(facts, set()) for f in r.findings}, facts


def findings(tmp_path, source, **kw) -> list[str]:
    found, _ = lint_source(tmp_path, source, **kw)
    return sorted(found)


def all_findings(tmp_path, source, **kw):
    path = tmp_path / "train.py"
    for other, text in kw.items():
        (tmp_path / f"{other}.py").write_text(textwrap.dedent(text))
    path.write_text(HEAD + textwrap.dedent(source).lstrip("\n"))
    return [f for r in lint_results(gather(str(path)), set()) for f in r.findings]


# ---------------------------------------------------------------------- DDP801
def test_barrier_under_rank_zero_is_reported_with_guard_and_line(tmp_path):
    found, _ = lint_source(tmp_path, """
        t = torch.zeros(1)
        if rank == 0:
            torch.save(t, "/tmp/x.pt")
            dist.barrier()
    """)
    f = found["DDP801"]
    assert f.location.line == 11 and f.evidence["guard"] == "rank == 0"
    assert f.evidence["static"] is True and "dist.barrier()" in f.message


def test_collective_reached_through_calls_names_the_chain(tmp_path):
    found, _ = lint_source(tmp_path, """
        def reduce_loss(loss):
            dist.all_reduce(loss)
            return loss

        def log(loss):
            return reduce_loss(loss).item()

        if int(os.environ["LOCAL_RANK"]) == 0:
            log(torch.ones(1))
    """)
    f = found["DDP801"]
    assert f.location.line == 9
    assert [s.split(" ")[1] for s in f.evidence["chain"]] == ["log()", "reduce_loss()"]


def test_collective_in_a_local_module_is_followed(tmp_path):
    found, facts = lint_source(tmp_path, """
        from helpers import sync_metrics
        master_process = rank == 0
        if master_process:
            sync_metrics(torch.ones(3))
    """, helpers="""
        import torch.distributed as dist
        def sync_metrics(t):
            dist.all_reduce(t)
    """)
    assert found["DDP801"].location.file.endswith("helpers.py")
    assert len(facts.files) == 2


def test_callback_registered_on_rank_zero_only_is_reported(tmp_path):
    found, _ = lint_source(tmp_path, """
        callbacks = []
        def log_global_loss(loss):
            dist.all_reduce(loss)
        if rank == 0:
            callbacks.append(log_global_loss)
    """)
    assert "DDP801" in found


def test_method_called_under_self_rank_test(tmp_path):
    found, _ = lint_source(tmp_path, """
        class Trainer:
            def __init__(self):
                self.global_rank = int(os.environ["RANK"])
            def log(self, loss):
                dist.all_reduce(loss, op=dist.ReduceOp.AVG)
            def step(self, loss):
                if self.global_rank == 0:
                    self.log(loss)
        Trainer().step(torch.ones(1))
    """)
    assert found["DDP801"].location.line == 12


def test_rank_zero_only_decorator_and_early_return(tmp_path):
    found = all_findings(tmp_path, """
        from lightning.pytorch.utilities import rank_zero_only
        @rank_zero_only
        def save():
            dist.barrier()
        def evaluate():
            if rank != 0:
                return
            dist.all_reduce(torch.ones(1))
        save()
        evaluate()
    """)
    assert sorted(f.location.line for f in found if f.code == "DDP801") == [11, 15]


def test_framework_collectives_under_main_process_tests(tmp_path):
    found = all_findings(tmp_path, """
        import lightning as L
        from accelerate import Accelerator
        accelerator = Accelerator()
        if accelerator.is_main_process:
            accelerator.wait_for_everyone()
        class Model(L.LightningModule):
            def on_validation_epoch_end(self):
                if self.trainer.is_global_zero:
                    self.log("acc", 1.0, sync_dist=True)
    """)
    ops = sorted(f.evidence["op"] for f in found if f.code == "DDP801")
    assert ops == ["accelerator.wait_for_everyone()", "self.log(..., sync_dist=True) (all-reduces the value)"]


def test_ddp_forward_on_rank_zero_only_when_the_model_has_buffers(tmp_path):
    source = """
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Sequential(nn.Linear(4, 8), nn.{norm}(8), nn.Linear(8, 2))
            def forward(self, x):
                return self.body(x)
        model = DDP(Net())
        @torch.no_grad()
        def evaluate():
            return model(torch.randn(4, 4)).sum()
        if rank == 0:
            print(evaluate())
        print(model.module(torch.randn(2, 4)))
    """
    assert "DDP801" in findings(tmp_path, source.replace("{norm}", "BatchNorm1d"))
    assert "DDP801" not in findings(tmp_path, source.replace("{norm}", "LayerNorm"))


@pytest.mark.parametrize("source", [
    # both branches meet in the same barrier
    """
    if rank == 0:
        torch.save(torch.ones(1), "/tmp/x.pt")
        dist.barrier()
    else:
        dist.barrier()
    """,
    # yolov5's torch_distributed_zero_first: the two barriers pair up
    """
    local_rank = int(os.environ["LOCAL_RANK"])
    if local_rank not in [-1, 0]:
        dist.barrier()
    prepare = 1
    if local_rank == 0:
        dist.barrier()
    """,
    # local_rank == -1 means "not distributed": the same on every rank
    """
    local_rank = int(os.environ.get("LOCAL_RANK", -1))
    if local_rank != -1:
        dist.barrier()
    """,
    # the collective on every rank, only the print on rank 0
    """
    loss = torch.ones(1)
    dist.all_reduce(loss)
    if rank == 0:
        print(loss.item())
    """,
    # a data-dependent (not rank-dependent) test
    """
    for step in range(10):
        if step % 5 == 0:
            dist.barrier()
    """,
])
def test_safe_rank_idioms_are_not_reported(tmp_path, source):
    assert "DDP801" not in findings(tmp_path, source)


# ---------------------------------------------------------------------- DDP802 / DDP803
def test_loader_without_sampler_in_a_distributed_script(tmp_path):
    found, _ = lint_source(tmp_path, """
        ds = TensorDataset(torch.randn(64, 4))
        train_loader = DataLoader(ds, batch_size=8, shuffle=True)
        model = DDP(torch.nn.Linear(4, 1))
        for x, in train_loader:
            model(x).sum().backward()
    """)
    f = found["DDP802"]
    assert f.location.line == 9 and f.evidence["loader"] == "train_loader" and f.severity.value == "error"


def test_a_loader_only_its_name_ties_to_training_is_not_judged(tmp_path):
    """No loop running backward reads it: a name alone was right once in 8 times on real code
    labelled blind (session 40), so it is no evidence that the loader trains."""
    found, _ = lint_source(tmp_path, """
        ds = TensorDataset(torch.randn(64, 4))
        train_loader = DataLoader(ds, batch_size=8, shuffle=True)
        for x, in train_loader:
            print(x.sum())
    """)
    assert "DDP802" not in found


@pytest.mark.parametrize("source", [
    "loader = DataLoader(TensorDataset(torch.randn(64, 4)[rank::2]), batch_size=8)",  # sharded by hand
    "val_loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8)",  # evaluation
    "ds = TensorDataset(torch.randn(64, 4))\nloader = DataLoader(ds, sampler=DistributedSampler(ds))",
    "if rank == 0:\n    loader = DataLoader(TensorDataset(torch.randn(64, 4)))",  # one rank only
])
def test_loaders_that_need_no_distributed_sampler(tmp_path, source):
    assert "DDP802" not in findings(tmp_path, source)


def test_no_process_group_no_data_rules(tmp_path):
    found, facts = lint_source(tmp_path, """
        import torch
        from torch.utils.data import DataLoader, TensorDataset
        loader = DataLoader(TensorDataset(torch.randn(8, 2)), shuffle=True)
        torch.save(loader, "/tmp/l.pt")
    """, head=False)
    assert found == {} and facts.distributed is None


def test_double_sharding_by_accelerate_and_by_hand(tmp_path):
    found = all_findings(tmp_path, """
        from accelerate import Accelerator
        accelerator = Accelerator()
        ds = TensorDataset(torch.randn(64, 4))
        loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds))
        loader = accelerator.prepare(loader)
        mine = TensorDataset(torch.randn(64, 4)[rank::2])
        sampler = DistributedSampler(mine)
    """)
    assert sorted(f.evidence["by"] for f in found if f.code == "DDP803") == ["accelerate", "rank-dependent dataset"]
    assert "DDP802" not in {f.code for f in found}


# ---------------------------------------------------------------------- DDP804
SAMPLER_LOOP = """
ds = TensorDataset(torch.randn(64, 4))
sampler = DistributedSampler(ds{shuffle})
loader = DataLoader(ds, batch_size=8, sampler=sampler)
for epoch in range(3):
    {set_epoch}
    for x, in loader:
        pass
"""


@pytest.mark.parametrize("shuffle,set_epoch,expected", [
    ("", "pass", "never"),
    ("", "sampler.set_epoch(0)", "constant"),
    ("", "sampler.set_epoch(epoch)", None),
    ("", "loader.sampler.set_epoch(epoch)", None),
    (", shuffle=False", "pass", None),
])
def test_set_epoch(tmp_path, shuffle, set_epoch, expected):
    found, _ = lint_source(tmp_path, SAMPLER_LOOP.format(shuffle=shuffle, set_epoch=set_epoch))
    if expected is None:
        assert "DDP804" not in found
    else:
        assert found["DDP804"].evidence["constant"] is (expected == "constant")


# ---------------------------------------------------------------------- DDP805
ACCUMULATION = """
model = DDP(torch.nn.Linear(4, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1)
for it in range(10):
    for micro in range(4):
        {sync}
        loss = model(torch.randn(2, 4)).sum()
        loss.backward()
    optimizer.step()
    scheduler.step()
"""


def test_micro_step_loop_without_no_sync(tmp_path):
    found, _ = lint_source(tmp_path, ACCUMULATION.format(sync="pass"))
    assert found["DDP805"].location.line == 15
    assert found["DDP805"].evidence["pattern"] == "micro_step_loop"


@pytest.mark.parametrize("sync", ["model.require_backward_grad_sync = micro == 3",
                                  "ctx = model.no_sync() if micro < 3 else None"])
def test_accumulation_with_sync_control_is_clean(tmp_path, sync):
    assert "DDP805" not in findings(tmp_path, ACCUMULATION.format(sync=sync))


def test_conditional_step_accumulation_and_a_plain_loop(tmp_path):
    found, _ = lint_source(tmp_path, """
        model = DDP(torch.nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        sched = torch.optim.lr_scheduler.StepLR(opt, 1)
        for i in range(10):
            model(torch.randn(2, 4)).sum().backward()
            if (i + 1) % 2 == 0:
                opt.step()
                opt.zero_grad()
        for i in range(10):
            model(torch.randn(2, 4)).sum().backward()
            opt.step()
            if i % 5 == 0:
                sched.step()
    """)
    assert found["DDP805"].evidence["pattern"] == "conditional_step"
    assert found["DDP805"].location.line == 12


# ---------------------------------------------------------------------- DDP806
def test_save_on_every_rank_and_its_safe_forms(tmp_path):
    found = all_findings(tmp_path, """
        import io
        model = DDP(torch.nn.Linear(4, 1))
        def save(path):
            torch.save(model.module.state_dict(), path)
        torch.save(model.state_dict(), "/tmp/every.pt")            # every rank: reported
        torch.save(model.state_dict(), f"/tmp/part-{rank}.pt")     # per-rank path
        buf = io.BytesIO()
        torch.save(model.state_dict(), buf)                        # memory
        if rank == 0:
            save("/tmp/rank0.pt")                                   # only called under a rank test
    """)
    assert [f.location.line for f in found if f.code == "DDP806"] == [12]


# ---------------------------------------------------------------------- the examples
# The lint code for each probe code a script's docstring may name as its bug.
STATIC_TWIN = {"DDP501": "DDP801", "DDP502": "DDP801", "DDP503": "DDP801", "DDP301": "DDP802",
               "DDP304": "DDP803", "DDP302": "DDP804", "DDP403": "DDP805", "DDP701": "DDP806",
               "DDP506": "DDP807", "DDP405": "DDP810"}
# Scripts whose lint findings are pinned exactly.
EXPECTED = {
    "examples/healthy.py": set(),
    "examples/gpu_healthy.py": set(),
    "examples/hang_barrier.py": set(),  # the barrier pair is balanced; the hang is a file poll
    "examples/uneven_batches.py": set(),  # sharded by hand: DDP303's, at run time
    "examples/random_split_per_rank.py": set(),  # sharded by a seeded split: DDP301's, at run time
    "examples/desync_collective.py": {"DDP801"},
    "examples/desync_shape.py": {"DDP807"},  # bincount without minlength: DDP501 at run time
    "examples/gpu_desync.py": {"DDP801"},
    "examples/gpu_no_sampler.py": {"DDP802"},
    "examples/no_sampler.py": {"DDP802"},
    "examples/spawn/imagenet_style_no_sampler.py": {"DDP802"},
    "examples/no_set_epoch.py": {"DDP804"},
    "examples/grad_accum_no_sync.py": {"DDP805"},
    "examples/shared_checkpoint.py": {"DDP806"},
    "tests/scripts/constant_set_epoch.py": {"DDP804"},
    "tests/scripts/epoch_checkpoints.py": {"DDP806"},
    "tests/scripts/modulo_accumulation.py": {"DDP805"},
    # its `desync` mode broadcasts on rank 1 where rank 0 all-reduces, its `timeout` mode
    # returns on rank 1 out of the loop the others go on in: the bugs it exists for
    "tests/scripts/postmortem_job.py": {"DDP801", "DDP809"},
    "tests/scripts/rank0_barrier_in_save.py": {"DDP801"},
    "tests/scripts/module_bypass.py": {"DDP810"},
    "tests/scripts/rank0_only_allreduce.py": {"DDP801"},
    "tests/scripts/lint/nanogpt/train.py": set(),
    "tests/scripts/lint/bn_eval_on_rank0.py": {"DDP801"},
    "tests/scripts/lint/accelerate_double_shard.py": {"DDP803"},
    "tests/scripts/lint/nanogpt/model.py": set(),
    # The run-time twins of these scripts' bugs have no static form (a crash, a native fault, a
    # p2p deadlock, a duplicate rank, a drift or a size that changes with the data): the lint
    # must stay silent on them.
    "tests/scripts/crash_on_node1.py": set(),
    "tests/scripts/crash_early_on_node1.py": set(),
    "tests/scripts/crash_before_init.py": set(),
    "tests/scripts/dp_inside_ddp_job.py": set(),
    "tests/scripts/duplicate_rank.py": set(),
    "tests/scripts/gpt_find_unused.py": set(),
    "tests/scripts/p2p_deadlock.py": set(),
    "tests/scripts/rank0_weight_decay.py": set(),
    "tests/scripts/segfault_rank1.py": set(),
    "tests/scripts/shared_layer_checkpoint.py": set(),
    "tests/scripts/step_interval_eval.py": set(),
    "tests/scripts/uneven_file_shards.py": set(),
    "tests/scripts/enqueue_complete_backend.py": set(),  # healthy DDP on a custom backend
    # Jobs for attach and Flight Recorder: their rank-0-only collective is deliberate (a mode of
    # attach_job.py; the skipped all-reduce fr_skip.py leaves dumps of), and the lint sees it.
    "tests/scripts/attach_job.py": {"DDP801"},
    "tests/scripts/daemon_escape.py": set(),  # healthy DDP; its detached daemon is for the teardown
    "tests/scripts/attach_long_backward.py": set(),  # healthy, its backward long
    "tests/scripts/attach_rank0_eval.py": set(),  # healthy, rank 0 evaluates alone (no collective)
    # bincount without minlength: DDP807 is the lint twin of their DDP506; the exchanged sizes stay clean.
    "tests/scripts/latent_bincount.py": {"DDP807"},
    "tests/scripts/latent_counts_after_loss.py": {"DDP807"},
    "tests/scripts/latent_counts_max_exchanged.py": set(),
    "tests/scripts/latent_counts_gathered.py": set(),
    "tests/scripts/slow_not_stuck.py": set(),  # slow in places, never a DDP bug the lint can see
    "tests/scripts/slow_launch.py": set(),  # slow before its ranks exist, no DDP bug
    # A fresh DistributedSampler each epoch and no set_epoch anywhere: DDP804 is DDP302's lint twin.
    "tests/scripts/loader_per_epoch.py": {"DDP804"},
    # Its seeds take the rank or not by a command-line switch: the lint cannot tell (DDP305 can).
    "tests/scripts/same_augmentation.py": set(),
    "tests/scripts/fr_skip.py": {"DDP801"},
    # A DataLoader of one process's own tensor with no sampler: DDP802 is right about it.
    "tests/scripts/accelerator_tour.py": {"DDP802"},
    "tests/scripts/lint/unreached_rank0_barrier.py": {"DDP801"},
    # Issue 34's first causes: run-time bugs the source does not show (an error swallowed by a
    # cleanup barrier, a rank-local skip, groups in opposite orders, a cast after wrapping, a
    # stuck worker, a custom sampler's uneven batches); the two collectives under a rank test
    # are DDP801's to see, and the rank-local skip on a non-finite loss is DDP809's (issue 38).
    "tests/scripts/swallowed_oom.py": set(),
    "tests/scripts/nan_skip.py": {"DDP809"},
    "tests/scripts/rank0_interval_allreduce.py": {"DDP801"},
    "tests/scripts/crossed_groups.py": set(),
    "tests/scripts/rank0_ddp_forward.py": {"DDP801"},
    "tests/scripts/uneven_batch_sampler.py": set(),
    "tests/scripts/cast_after_wrap.py": set(),
    "tests/scripts/stuck_worker.py": set(),
    # `self.rank = int(os.environ["LOCAL_RANK"])`, then a save under `self.rank == 0`: a one-node job
    # as written (nothing names a node rank or count; `torchrun --nproc-per-node 2`), so its local
    # rank 0 is the job's rank 0: no finding (its set_epoch bug turns on a command-line switch:
    # DDP302's, at run time)
    "examples/tutorial_style/trainer_set_epoch.py": set(),
}


def _scripts() -> list[str]:
    paths = sorted(REPO.glob("examples/**/*.py")) + sorted(REPO.glob("tests/scripts/**/*.py"))
    # tests/scripts/lint_real/ pins each file's exact findings in its own `# expect:` line
    # (tests/unit/test_lint_real.py).
    return [str(p.relative_to(REPO)) for p in paths
            if "lint_real" not in p.relative_to(REPO).parts]


def _allowed(script: str) -> set[str]:
    """What a script not pinned above may give: the lint twins of the codes its header names
    as its bug (a healthy script names none, so it must give nothing)."""
    head = "\n".join((REPO / script).read_text(encoding="utf-8").splitlines()[:25])
    return {STATIC_TWIN[c] for c in re.findall(r"DDP\d{3}", head) if c in STATIC_TWIN}


@pytest.mark.parametrize("script", _scripts())
def test_every_example_gives_no_finding_its_bug_does_not_explain(script, monkeypatch):
    monkeypatch.chdir(REPO)
    facts = gather(script)
    found = [f for r in lint_results(facts, set()) for f in r.findings]
    codes = {f.code for f in found}
    if script in EXPECTED:
        assert codes == EXPECTED[script], [f.message for f in found]
    else:  # an example names its bug in its header, or has none; every test script is pinned
        assert script.startswith("examples/"), f"{script}: pin its lint findings in EXPECTED"
        assert codes <= _allowed(script), [f.message for f in found]


def test_nanogpt_style_script_and_its_model_are_read_in_well_under_a_second(monkeypatch):
    monkeypatch.chdir(REPO)
    started = time.perf_counter()
    facts = gather("tests/scripts/lint/nanogpt/train.py")
    elapsed = time.perf_counter() - started
    assert facts.files == ["tests/scripts/lint/nanogpt/train.py", "tests/scripts/lint/nanogpt/model.py"]
    assert elapsed < 1.0


def test_every_lint_check_is_documented():
    specs = all_checks("lint")
    assert [s.code for s in specs] == ["DDP801", "DDP802", "DDP803", "DDP804", "DDP805", "DDP806",
                                         "DDP807", "DDP808", "DDP809", "DDP810"]
    for spec in specs:
        for part in ("What it detects", "Why it hurts", "How to fix"):
            assert part in spec.doc, (spec.code, part)


@pytest.mark.parametrize("content,needle", [(None, "no such file"), ("def broken(:\n", "not valid Python")])
def test_bad_input_is_a_usage_error(tmp_path, content, needle):
    path = tmp_path / "bad.py"
    if content is not None:
        path.write_text(content)
    with pytest.raises(UsageError, match=needle):
        gather(str(path))
