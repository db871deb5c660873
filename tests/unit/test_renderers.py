"""The four renderers over one hand-built report."""

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from rich.console import Console

from ddpdoctor.core.findings import Location, Problem, Severity
from ddpdoctor.core.registry import FAILED, PASSED, SKIPPED, WARNED, CheckResult, CheckSpec
from ddpdoctor.probe.records import jsonl
from ddpdoctor.report import github, json as json_report, junit, terminal
from ddpdoctor.report.model import Report


def _spec(code: str, title: str, severity: Severity) -> CheckSpec:
    return CheckSpec(code, title, severity, "probe", lambda facts: [])


def sample_report(fail_on: Severity = Severity.ERROR) -> Report:
    error_spec = _spec("DDP301", "Ranks read the same batches", Severity.ERROR)
    warn_spec = _spec("DDP402", "find_unused_parameters=True is pure overhead", Severity.WARNING)
    error = error_spec.finding(Problem("ranks 0 and 1 got identical batches, 50%, a,b", "use DistributedSampler",
                                       ranks=[1, 0], location=Location("train.py", 57)))
    warning = warn_spec.finding(Problem("every parameter got a gradient", "set it False",
                                        location=Location("train.py", 20)))
    return Report("probe", [
        CheckResult(error_spec, FAILED, [error]),
        CheckResult(warn_spec, WARNED, [warning]),
        CheckResult(_spec("DDP101", "A host does not resolve", Severity.ERROR), SKIPPED, reason="not a preflight"),
        CheckResult(_spec("DDP404", "nn.DataParallel in use", Severity.WARNING), PASSED),
    ], fail_on=fail_on, header="train.py: 2 ranks")


def test_terminal_report_leads_with_one_line_per_check_then_details():
    console = Console(width=200, record=True, color_system=None)
    terminal.render(sample_report(), console)
    text = console.export_text()
    lines = text.splitlines()
    assert any(line.startswith("[✗] DDP301") for line in lines)
    assert any(line.startswith("[!] DDP402") for line in lines)
    assert any(line.startswith("[✓] DDP404") for line in lines)
    assert "fix: use DistributedSampler" in text
    assert text.index("[✓] DDP404") < text.index("Details")
    assert "FAIL" in lines[-1] and "exit 1" in lines[-1]


def test_json_report_has_the_documented_top_level_keys():
    import json

    data = json.loads(json_report.render(sample_report()))
    assert data["tool"] == "ddpdoctor"
    assert data["command"] == "probe"
    assert data["status"] == "fail"
    assert [f["code"] for f in data["findings"]] == ["DDP301", "DDP402"]
    assert data["findings"][0]["ranks"] == [0, 1]
    assert {"version", "metrics", "run_dir"} <= set(data)


def test_json_data_is_what_render_writes_and_scrubs_every_string():
    """The form node 0 sends the other nodes: the report as data, never parsed back from text."""
    report = sample_report()
    report.metrics.update({"run": Path("/tmp/run"), "by_rank": {0: 1.5}, "arg": 'x"s3cr3t-value"'})
    assert json.loads(json_report.render(report)) == json_report.data(report)
    sent = json_report.data(report, ["s3cr3t-value"])
    assert sent["metrics"]["run"] == "/tmp/run" and sent["metrics"]["by_rank"] == {"0": 1.5}
    assert sent["metrics"]["arg"] == 'x"<redacted>"'  # a quote in it: text scrubbing of JSON missed it
    assert jsonl.loads(jsonl.body(sent, strict=True), strict=True) == sent
    assert json.loads(json_report.render(report, ["s3cr3t-value"])) == sent  # every output alike


def test_junit_has_one_testcase_per_check_and_failures_only_at_fail_on():
    root = ET.fromstring(junit.render(sample_report(Severity.ERROR)))
    assert root.get("tests") == "4"
    assert root.get("failures") == "1"
    assert root.get("skipped") == "1"
    strict = ET.fromstring(junit.render(sample_report(Severity.WARNING)))
    assert strict.get("failures") == "2"


def test_github_annotations_escape_properties_and_name_file_and_line():
    lines = github.render(sample_report()).splitlines()
    assert lines[0].startswith("::error file=train.py,line=57,title=DDP301 Ranks read the same batches::")
    assert "50%25, a,b" in lines[0]  # data escaping: % encoded, commas kept in the message
    assert lines[1].startswith("::warning file=train.py,line=20,title=DDP402 find_unused_parameters=True is pure overhead::")
