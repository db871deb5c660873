"""The lint's findings in a probe report: static-only findings are added and marked static; a
bug the probe saw at the same place becomes one finding with both evidences."""

from __future__ import annotations

from pathlib import Path

from ddpdoctor.core.findings import Finding, Location, Severity
from ddpdoctor.core.registry import FAILED, SKIPPED, CheckResult, get_check
from ddpdoctor.lint.merge import static_part
from ddpdoctor.report.model import Report

SCRIPT = """\
import torch, torch.distributed as dist
dist.init_process_group("gloo")
if dist.get_rank() == 0:
    dist.barrier()
torch.save({}, "/tmp/same.pt")
"""


def probed(script: Path, *findings: Finding, ignore: frozenset[str] = frozenset()) -> Report:
    """A probe report built as probe/report.py builds one: the probe's results (one per finding)
    and the lint of `script` merged with them before the Report exists."""
    results = [CheckResult(get_check(f.code), FAILED, [f]) for f in findings]
    static = static_part(results, str(script), ignore=ignore)
    metrics = {"lint": static.metrics} if static.metrics is not None else {}
    return Report(command="probe", results=results + static.results, metrics=metrics, notes=static.notes)


def skipped_at(path: Path, line: int) -> Finding:
    return Finding("DDP502", Severity.ERROR, "A rank skipped a collective", "rank 0 entered barrier",
                   "call it everywhere", [0, 1], [], Location(str(path), line), {"seq": 3})


def test_static_only_findings_join_the_report_marked_static(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    report = probed(script)
    codes = {f.code: f for f in report.findings}
    assert set(codes) == {"DDP801", "DDP806"}
    assert all(f.evidence["static"] is True for f in codes.values())
    assert report.metrics["lint"]["statements"] == 5


def test_an_unconfirmed_static_finding_is_one_step_lower_and_never_gates(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    report = probed(script)
    codes = {f.code: f for f in report.findings}
    assert codes["DDP801"].severity.value == "warning" and codes["DDP806"].severity.value == "info"
    assert codes["DDP801"].evidence["confirmed"] is False
    assert codes["DDP801"].evidence["severity_in_lint"] == "error"
    assert "did not reach or confirm it" in codes["DDP801"].message
    assert report.status == "pass" and report.exit_code == 0
    report.fail_on = Severity.INFO  # even the strictest gate: a claim alone fails nothing
    assert report.status == "pass" and report.exit_code == 0


def test_same_bug_seen_at_run_time_is_one_finding_with_both_evidences(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    report = probed(script, skipped_at(script, 4))
    codes = [f.code for f in report.findings]
    assert sorted(codes) == ["DDP502", "DDP806"]
    runtime = next(f for f in report.findings if f.code == "DDP502")
    assert runtime.evidence["seq"] == 3 and runtime.evidence["static"]["code"] == "DDP801"
    lint_check = next(r for r in report.results if r.spec.code == "DDP801")
    assert lint_check.status == SKIPPED and "DDP502" in lint_check.reason


def test_a_different_line_is_a_different_bug(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    report = probed(script, skipped_at(script, 5))
    assert sorted(f.code for f in report.findings) == ["DDP502", "DDP801", "DDP806"]


def test_ignored_codes_and_an_unreadable_script(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    report = probed(script, ignore={"DDP801", "DDP806"})
    assert report.findings == []
    broken = probed(tmp_path / "gone.py")
    assert broken.findings == [] and any("static lint not run" in n for n in broken.notes)
