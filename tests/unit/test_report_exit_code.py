"""The report's exit code gates on --fail-on (moved here from core.findings.exit_code_for, which
only these tests called: Report.exit_code is what the commands return)."""

from ddpdoctor.core.findings import (EXIT_FINDINGS, EXIT_INCOMPLETE, EXIT_OK, EXIT_TOOL, Location,
                                     Problem, Severity)
from ddpdoctor.core.registry import CRASHED, FAILED, INCOMPLETE, PASSED, WARNED, CheckResult, CheckSpec
from ddpdoctor.report.model import Report


def _result(severity: Severity, status: str, findings: bool = True) -> CheckResult:
    spec = CheckSpec("DDP101", "t", severity, "probe", lambda facts: [])
    found = [spec.finding(Problem("m", "h", location=Location("train.py", 57)))] if findings else []
    return CheckResult(spec, status, found)


def test_a_warning_fails_only_a_gate_set_at_warning():
    warning = [_result(Severity.WARNING, WARNED)]
    assert Report("probe", warning, fail_on=Severity.ERROR).exit_code == EXIT_OK
    assert Report("probe", warning, fail_on=Severity.WARNING).exit_code == EXIT_FINDINGS


def test_an_info_finding_never_fails_a_warning_gate_and_no_finding_passes():
    assert Report("probe", [_result(Severity.INFO, WARNED)], fail_on=Severity.WARNING).exit_code == EXIT_OK
    assert Report("probe", [], fail_on=Severity.INFO).exit_code == EXIT_OK
    assert Report("probe", [_result(Severity.ERROR, PASSED, findings=False)]).exit_code == EXIT_OK


def test_gating_findings_win_over_a_tool_failure_and_an_incomplete_verdict():
    error = _result(Severity.ERROR, FAILED)
    assert Report("probe", [error], tool_error="no stacks").exit_code == EXIT_FINDINGS
    assert Report("probe", [error, _result(Severity.ERROR, INCOMPLETE, findings=False)]).exit_code == EXIT_FINDINGS


def test_a_crashed_check_is_a_tool_failure_and_a_missing_verdict_is_incomplete():
    assert Report("probe", [_result(Severity.ERROR, CRASHED, findings=False)]).exit_code == EXIT_TOOL
    missing = CheckResult(CheckSpec("DDP101", "t", Severity.ERROR, "probe", lambda f: []), INCOMPLETE,
                          reason="no data")
    assert Report("probe", [missing]).exit_code == EXIT_INCOMPLETE
