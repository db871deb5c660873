"""Options and steps shared by every command that produces a report: the report flags, the
severity gate, and writing the report. Command modules import this, never app.py."""

from __future__ import annotations

from typing import List, Optional, Sequence

import typer

from ddpdoctor.core.output_guard import OutputPath, check_outputs
from ddpdoctor.core.findings import Severity, parse_codes
from ddpdoctor.core.registry import validate_codes
from ddpdoctor.report.model import Report
from ddpdoctor.report.outputs import OutputOptions, emit

# Options shared by every command that produces a report.
JsonOpt = typer.Option(None, "--json", metavar="PATH", help="Write the JSON report to PATH ('-' = stdout, then nothing else goes to stdout).")
JunitOpt = typer.Option(None, "--junit", metavar="PATH", help="Write a JUnit XML report (one testcase per check).")
GithubOpt = typer.Option(False, "--github", help="Print GitHub Actions ::error/::warning annotations.")
FailOnOpt = typer.Option("error", "--fail-on", metavar="error|warning|info", help="Exit 1 when a finding is at or above this severity.")
IgnoreOpt = typer.Option([], "--ignore", metavar="CODE[,CODE]", help="Do not report these check codes (repeatable).")
VerboseOpt = typer.Option(False, "--verbose", "-v", help="Show every check, evidence and all numbers.")
QuietOpt = typer.Option(False, "--quiet", "-q", help="No terminal report (exit code and files only).")
TraceOpt = typer.Option(None, "--trace", metavar="PATH", help="Write a Chrome trace-event JSON of step phases and bucket all-reduces per rank (open in Perfetto or chrome://tracing).")
ForceOpt = typer.Option(False, "--force", help="Overwrite an existing file at a report path even if it is not an earlier ddpdoctor report (never the script, its arguments or the run dir).")


def report_outputs(json_path, junit_path, github, verbose, quiet, *, trace: Optional[str] = None,
                   inputs: Sequence[str] = (), script_args: Sequence[str] = (),
                   run_dir: Optional[str] = None, force: bool = False) -> OutputOptions:
    """The report outputs, checked before anything runs: a report that cannot be written, or
    that would overwrite a file ddpdoctor did not write (the script!), is bad input, found before
    a ten-minute probe, not after it (core/output_guard.py)."""
    check_outputs([OutputPath("--json", json_path, "json"), OutputPath("--junit", junit_path, "junit"),
                   OutputPath("--trace", trace, "trace")],
                  inputs=inputs, script_args=script_args, run_dir=run_dir, force=force)
    return OutputOptions(json_path=json_path, junit_path=junit_path, github=github,
                         verbose=verbose, quiet=quiet)


def gate(fail_on: str, ignore: List[str]) -> tuple[Severity, set[str]]:
    severity = Severity.parse(fail_on)
    codes = parse_codes(ignore)
    validate_codes(codes)
    return severity, codes


def finish(report: Report, outputs: OutputOptions) -> int:
    emit(report, outputs)
    return report.exit_code
