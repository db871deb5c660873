"""DDP807 (a collective whose size comes from the data) over small scripts: each source of a
data-sized tensor is found, a size exchanged or fixed first stays clean, and in a probe's report
it is one finding with DDP506."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from ddpdoctor.core.findings import Finding, Location, Severity
from ddpdoctor.core.registry import FAILED, CheckResult, get_check
from ddpdoctor.lint.merge import static_part
from ddpdoctor.lint.driver import gather, lint_results
from ddpdoctor.report.model import Report

HEAD = """\
import torch
import torch.distributed as dist
import torch.nn.functional as F
dist.init_process_group("gloo")
"""


def ddp807(tmp_path: Path, body: str) -> list[Finding]:
    path = tmp_path / "train.py"
    path.write_text(HEAD + textwrap.dedent(body).lstrip("\n"))
    return [f for r in lint_results(gather(str(path)), set()) for f in r.findings if f.code == "DDP807"]


@pytest.mark.parametrize("body, source", [
    ("counts = torch.bincount(preds)\ndist.all_reduce(counts)\n", "torch.bincount(preds) without minlength"),
    ("dist.all_reduce(preds.bincount().float())\n", "preds.bincount() without minlength"),
    ("seen = torch.unique(labels)\ndist.all_reduce(seen)\n", "torch.unique(labels)"),
    ("idx = (preds == labels).nonzero()\ndist.all_gather(out, idx)\n", "(preds == labels).nonzero()"),
    ("mask = preds > 0.5\nhits = scores[mask]\ndist.all_reduce(hits)\n", "scores[mask] (a boolean mask)"),
    ("hits = scores[scores > 0]\ndist.broadcast(hits.float() * 2, src=0)\n", "scores[scores > 0] (a boolean mask)"),
    ("sel = torch.masked_select(x, m)\ndist.all_reduce(sel)\n", "torch.masked_select(x, m)"),
    ("""\
     def step(batch):
         kept = []
         for item in batch:
             if item.sum() > 0:
                 kept.append(item)
         dist.all_reduce(torch.stack(kept))
     step(batch)  # called: only code the script runs is judged
     """, "kept (filled under a condition in a loop)"),
])
def test_data_sized_tensors_handed_to_a_collective_are_found(tmp_path, body, source):
    [finding] = ddp807(tmp_path, body)
    assert finding.severity is Severity.WARNING and finding.evidence["source"] == source
    line = (tmp_path / "train.py").read_text().splitlines()[finding.location.line - 1]
    assert "dist." in line  # the collective's own line
    assert "nothing before it in that function exchanges the size" in finding.message


def test_the_finding_names_the_collective_line_and_the_source_line(tmp_path):
    [finding] = ddp807(tmp_path, """
        loss = torch.ones(())
        dist.all_reduce(loss)              # an unrelated small all_reduce is no exchange
        counts = torch.bincount(preds)
        dist.all_reduce(counts)
        """)
    assert finding.location.line == 8 and finding.evidence["source_location"].endswith("train.py:7")


@pytest.mark.parametrize("body", [
    "counts = torch.bincount(preds, minlength=10)\ndist.all_reduce(counts)\n",
    "counts = torch.bincount(preds, None, 10)\ndist.all_reduce(counts)\n",
    """\
    counts = torch.bincount(preds)
    n = torch.tensor([counts.numel()])
    dist.all_reduce(n, op=dist.ReduceOp.MAX)
    counts = F.pad(counts, (0, int(n) - counts.numel()))
    dist.all_reduce(counts)
    """,
    """\
    counts = torch.bincount(preds)
    sizes = [torch.zeros(1) for _ in range(2)]
    dist.all_gather(sizes, torch.tensor([counts.numel()]))
    dist.all_reduce(F.pad(counts, (0, 3)))
    """,
    "total = torch.bincount(preds).sum()\ndist.all_reduce(total)\n",
    "loss = F.cross_entropy(out[mask], y[mask])\ndist.all_reduce(loss)\n",
    "dist.all_gather_object(out, torch.unique(labels).tolist())\n",
    "kept = [x for x in batch]\ndist.all_reduce(torch.tensor(kept))\n",
])
def test_fixed_or_exchanged_sizes_are_clean(tmp_path, body):
    assert ddp807(tmp_path, body) == []


def test_a_function_the_script_never_calls_is_not_judged(tmp_path):
    found = ddp807(tmp_path, """
        def report(preds):
            dist.all_reduce(torch.bincount(preds))
        """)
    assert found == []


def test_exchange_in_another_function_does_not_count(tmp_path):
    found = ddp807(tmp_path, """
        def agree(n):
            dist.all_reduce(n, op=dist.ReduceOp.MAX)
        def report(preds):
            dist.all_reduce(torch.bincount(preds))
        agree(n)
        report(preds)
        """)
    assert [f.evidence["function"] for f in found] == ["report"]


def test_in_a_probe_report_it_is_one_finding_with_ddp506(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(HEAD + "counts = torch.bincount(preds)\ndist.all_reduce(counts)\n")
    seen = Finding("DDP506", Severity.WARNING, "A collective's size changes with the data",
                   "all_reduce changed size", "minlength", [0, 1], [], Location(str(script), 6), {})
    results = [CheckResult(get_check("DDP506"), FAILED, [seen])]
    report = Report(command="probe", results=results + static_part(results, str(script)).results)
    assert [f.code for f in report.findings] == ["DDP506"]
    assert report.findings[0].evidence["static"]["code"] == "DDP807"


@pytest.mark.parametrize("imports, call", [
    ("import torch\n", "torch.distributed.all_reduce(counts)"),
    ("import torch\nfrom torch.distributed import all_reduce\n", "all_reduce(counts)"),
    ("import torch\nfrom torch import distributed as d\n", "d.all_reduce(counts)"),
])
def test_every_spelling_of_torch_distributed_is_read_in_a_module_the_script_imports(tmp_path, imports, call):
    # A file is only walked when it calls a collective the rule reads: the check that decides
    # it must know every name torch.distributed goes by, in a module as in the script.
    (tmp_path / "metrics.py").write_text(imports + textwrap.dedent(f"""
        def class_counts(preds):
            counts = torch.bincount(preds)
            {call}
            return counts
        """))
    (tmp_path / "train.py").write_text("import torch\nfrom metrics import class_counts\n"
                                       "class_counts(torch.tensor([1, 2]))\n")
    found = [f for r in lint_results(gather(str(tmp_path / "train.py")), set())
             for f in r.findings if f.code == "DDP807"]
    assert [(Path(f.location.file).name, f.location.line) for f in found] == [("metrics.py", len(imports.splitlines()) + 4)]
