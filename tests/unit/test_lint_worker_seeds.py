"""DDP808 (DataLoader workers seeded alike on every rank) over small scripts: each way of seeding
without the rank is found; the ways public training code seeds workers correctly (with the rank,
from torch's per-worker seed, from the worker's own state) stay clean."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from ddpdoctor.core.findings import Finding
from ddpdoctor.lint.driver import gather, lint_results

HEAD = """\
import functools
import random
import numpy as np
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler
dist.init_process_group("gloo")
rank = dist.get_rank()
SEED = 1234
sampler = DistributedSampler(dataset)
"""


def ddp808(tmp_path: Path, body: str, head: str = HEAD) -> list[Finding]:
    path = tmp_path / "train.py"
    path.write_text(head + textwrap.dedent(body).lstrip("\n"))
    return [f for r in lint_results(gather(str(path)), set()) for f in r.findings if f.code == "DDP808"]


@pytest.mark.parametrize("body", [
    # A module-level seed and the worker id only.
    """\
    def seed_worker(worker_id):
        np.random.seed(SEED + worker_id)
        random.seed(SEED + worker_id)
    loader = DataLoader(dataset, sampler=sampler, num_workers=2, worker_init_fn=seed_worker)
    """,
    # A config attribute, through a seeding helper of the script's own.
    """\
    def set_seed(s):
        random.seed(s)
        np.random.seed(s)
    def worker_init_fn(worker_id):
        set_seed(args.seed + worker_id)
    loader = DataLoader(dataset, sampler=sampler, num_workers=4, worker_init_fn=worker_init_fn)
    """,
    # A constant, the same for every worker too.
    """\
    def worker_init_fn(worker_id):
        np.random.seed(cfg.SEED)
    loader = DataLoader(dataset, sampler=sampler, num_workers=4, worker_init_fn=worker_init_fn)
    """,
    # functools.partial binding a global seed; a local variable in between.
    """\
    def init_worker(worker_id, seed):
        worker_seed = seed + worker_id
        torch.manual_seed(worker_seed)
    loader = DataLoader(dataset, sampler=sampler, num_workers=2,
                        worker_init_fn=functools.partial(init_worker, seed=SEED))
    """,
    # A closure over a seed set the same on every rank.
    """\
    def main():
        seed = 42
        def seed_worker(worker_id):
            np.random.seed(seed + worker_id)
        return DataLoader(dataset, sampler=sampler, num_workers=2, worker_init_fn=seed_worker)
    main()
    """,
    # The PyTorch docs' recipe with a generator seeded alike on every rank.
    """\
    def seed_worker(worker_id):
        worker_seed = torch.initial_seed() % 2**32
        np.random.seed(worker_seed)
    g = torch.Generator()
    g.manual_seed(0)
    loader = DataLoader(dataset, sampler=sampler, num_workers=2, worker_init_fn=seed_worker, generator=g)
    """,
], ids=["module-seed", "config-attr-helper", "constant", "partial", "closure", "generator"])
def test_worker_seeds_without_the_rank_are_found(tmp_path, body):
    (finding,) = ddp808(tmp_path, body)
    assert finding.severity.value == "warning" and finding.location.file.endswith("train.py")
    assert "every rank" in finding.message and "rank" in finding.hint


@pytest.mark.parametrize("body", [
    # With the rank (mmengine's arithmetic).
    """\
    def seed_worker(worker_id):
        np.random.seed(2 * rank + worker_id + SEED)
    loader = DataLoader(dataset, sampler=sampler, num_workers=2, worker_init_fn=seed_worker)
    """,
    # The rank as a parameter bound by partial (mmengine's signature).
    """\
    def worker_init_fn(worker_id, num_workers, rank, seed):
        np.random.seed(num_workers * rank + worker_id + seed)
    init_fn = functools.partial(worker_init_fn, num_workers=2, rank=rank, seed=SEED)
    loader = DataLoader(dataset, sampler=sampler, num_workers=2, worker_init_fn=init_fn)
    """,
    # From torch's per-worker seed (the PyTorch docs, detectron2), torch unseeded or per rank.
    """\
    def seed_worker(worker_id):
        worker_seed = torch.initial_seed() % 2**32
        np.random.seed(worker_seed)
        random.seed(worker_seed)
    loader = DataLoader(dataset, sampler=sampler, num_workers=2, worker_init_fn=seed_worker)
    """,
    # From the worker's info (timm).
    """\
    def _worker_init(worker_id):
        info = torch.utils.data.get_worker_info()
        random.seed(info.seed)
        np.random.seed(info.seed % (2 ** 32 - 1))
    loader = DataLoader(dataset, sampler=sampler, num_workers=2, worker_init_fn=_worker_init)
    """,
    # From the worker's numpy state (a common fix of the repeated-augmentation bug).
    """\
    def worker_init_fn(worker_id):
        np.random.seed(np.random.get_state()[1][0] + worker_id)
    loader = DataLoader(dataset, sampler=sampler, num_workers=2, worker_init_fn=worker_init_fn)
    """,
    # A seed handed in by the caller: its origin is unknown here.
    """\
    def make_loader(seed):
        def seed_worker(worker_id):
            np.random.seed(seed + worker_id)
        return DataLoader(dataset, sampler=sampler, num_workers=2, worker_init_fn=seed_worker)
    make_loader(SEED + rank)
    """,
    # A generator seeded per rank; a generator on a loader without workers.
    """\
    g = torch.Generator()
    g.manual_seed(SEED + rank)
    loader = DataLoader(dataset, sampler=sampler, num_workers=2, generator=g)
    other = DataLoader(dataset, sampler=sampler, generator=torch.Generator().manual_seed(0))
    """,
    # A worker_init_fn that seeds nothing (CPU affinity), and a library's.
    """\
    import os
    from transformers.trainer_utils import seed_worker
    def pin(worker_id):
        os.sched_setaffinity(0, range(os.cpu_count()))
    a = DataLoader(dataset, sampler=sampler, num_workers=2, worker_init_fn=pin)
    b = DataLoader(dataset, sampler=sampler, num_workers=2, worker_init_fn=seed_worker)
    """,
], ids=["rank-term", "partial-rank", "initial-seed", "worker-info", "numpy-state", "caller-seed",
        "generator-per-rank", "no-seeding"])
def test_worker_seeds_that_differ_by_rank_or_may_are_clean(tmp_path, body):
    assert ddp808(tmp_path, body) == []


def test_a_script_that_is_not_distributed_is_not_judged(tmp_path):
    head = "import numpy as np\nfrom torch.utils.data import DataLoader\nSEED = 1\n"
    body = """\
    def seed_worker(worker_id):
        np.random.seed(SEED + worker_id)
    loader = DataLoader(dataset, num_workers=2, worker_init_fn=seed_worker)
    """
    assert ddp808(tmp_path, body, head=head) == []


def test_in_a_probe_report_it_is_one_finding_with_ddp305(tmp_path):
    from ddpdoctor.core.findings import Location, Severity
    from ddpdoctor.core.registry import FAILED, CheckResult, get_check
    from ddpdoctor.lint.merge import static_part
    from ddpdoctor.report.model import Report

    script = tmp_path / "train.py"
    script.write_text(HEAD + textwrap.dedent("""\
        def seed_worker(worker_id):
            np.random.seed(SEED + worker_id)
        loader = DataLoader(dataset, sampler=sampler, num_workers=2, worker_init_fn=seed_worker)
        for batch in loader:
            pass
        """))
    seen = Finding("DDP305", Severity.WARNING, "Ranks draw the same random augmentation", "same draws",
                   "seed per rank", [0, 1], [], Location(str(script), 14), {})
    results = [CheckResult(get_check("DDP305"), FAILED, [seen])]
    report = Report(command="probe", results=results + static_part(results, str(script)).results)
    assert [f.code for f in report.findings] == ["DDP305"]
    assert report.findings[0].evidence["static"]["code"] == "DDP808"


EVALUATION_ONLY = """
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

dist.init_process_group("gloo")
rank = dist.get_rank()
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
sampler = DistributedSampler(data)
g = torch.Generator()
g.manual_seed(0)
train = DataLoader(data, batch_size=8, sampler=sampler, num_workers=2{train_generator})
val_loader = DataLoader(data, batch_size=8, shuffle=False, num_workers=2, generator=g)
for epoch in range(3):
    sampler.set_epoch(epoch)
    for x, y in train:
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    if rank == 0:
        with torch.no_grad():
            print(sum(torch.nn.functional.mse_loss(model.module(x), y).item() for x, y in val_loader))
"""


def _ddp808(tmp_path: Path, source: str) -> list[str]:
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(source))
    facts = gather(str(path))
    return [str(f.evidence.get("loader_location")) for r in lint_results(facts, set()) for f in r.findings
            if f.code == "DDP808"]


def test_an_evaluation_loader_no_training_loop_reads_is_not_reported(tmp_path):
    assert _ddp808(tmp_path, EVALUATION_ONLY.format(train_generator="")) == []


def test_the_training_loader_on_the_same_generator_is(tmp_path):
    found = _ddp808(tmp_path, EVALUATION_ONLY.format(train_generator=", generator=g"))
    assert len(found) == 1 and found[0].endswith(":14")  # the training loader, not the evaluation one
