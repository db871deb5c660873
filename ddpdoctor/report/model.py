"""The report: check results, findings, numbers, and the status and exit code they imply."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ddpdoctor.core.version import __version__
from ddpdoctor.core.findings import (EXIT_FINDINGS, EXIT_INCOMPLETE, EXIT_OK, EXIT_TOOL, Finding,
                                     Severity, gating)
from ddpdoctor.core.registry import CRASHED, IGNORED, INCOMPLETE, CheckResult


@dataclass
class Table:
    """A table of numbers for the terminal report (per bucket, per rank, per node)."""

    title: str
    columns: list[str]
    rows: list[list[Any]]

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "columns": self.columns, "rows": self.rows}


@dataclass
class Report:
    command: str  # "preflight" | "probe"
    results: list[CheckResult]
    fail_on: Severity = Severity.ERROR
    header: str = ""
    metrics: dict[str, Any] = field(default_factory=dict)
    tables: list[Table] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # e.g. "NCCL not checked here: no GPU"
    run_dir: Optional[str] = None
    tool_error: Optional[str] = None  # ddpdoctor could not do (all of) its job
    interrupted_by: Optional[int] = None  # signal that stopped the run (SIGINT, SIGTERM)
    # Set on a report relayed from elsewhere (another node's ddpdoctor): the exit code it had there.
    forced_exit: Optional[int] = None
    # Why the verdict is incomplete beyond single checks (e.g. "no rank trained"), in the headline.
    incomplete_because: list[str] = field(default_factory=list)
    # Set on a report relayed from elsewhere: its JSON form as it came (node 0's verdict on
    # another node), which is what this report's JSON output is; None for a report built here.
    relayed: Optional[dict[str, Any]] = None

    @property
    def missing(self) -> list[str]:
        """What kept the verdict from being reached: the report's own reasons, then each check
        that applied but lacked data."""
        return self.incomplete_because + [f"{r.spec.code}: {r.reason}" for r in self.results
                                          if r.status == INCOMPLETE]

    @property
    def findings(self) -> list[Finding]:
        found = [f for r in self.results if r.status != IGNORED for f in r.findings]
        order = {"error": 0, "warning": 1, "info": 2}
        return sorted(found, key=lambda f: (order[f.severity.value], f.code))

    @property
    def gating_findings(self) -> list[Finding]:
        return gating(self.findings, self.fail_on)

    @property
    def status(self) -> str:
        if self.interrupted_by or self.tool_error or any(r.status == CRASHED for r in self.results):
            return "error"
        if self.gating_findings:
            return "fail"
        return "incomplete" if self.missing else "pass"

    @property
    def exit_code(self) -> int:
        if self.forced_exit is not None:
            return self.forced_exit
        if self.interrupted_by:
            return 128 + self.interrupted_by  # the shell's convention: 130 for Ctrl-C
        # Findings at or above --fail-on win over a partial tool failure: a hang that also cost
        # us a stack dump is still a hang the user must fix.
        if self.gating_findings:
            return EXIT_FINDINGS
        if self.status == "error":
            return EXIT_TOOL
        if self.status == "incomplete":
            return EXIT_INCOMPLETE
        return EXIT_OK

    def to_dict(self) -> dict[str, Any]:
        if self.relayed is not None:
            return self.relayed
        return {
            "tool": "ddpdoctor",
            "version": __version__,
            "command": self.command,
            "status": self.status,
            "findings": [f.to_dict() for f in self.findings],
            "metrics": self.metrics,
            "run_dir": self.run_dir,
            "checks": [r.to_dict() for r in self.results],
            "tables": [t.to_dict() for t in self.tables],
            "notes": self.notes,
            "fail_on": self.fail_on.value,
            "error": self.tool_error,
            "interrupted_by": self.interrupted_by,
            "incomplete": self.missing,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], fail_on: Optional[Severity] = None) -> "Report":
        """A report rebuilt from its JSON form (relayed from node 0, or a preflight master).
        Checks this ddpdoctor does not know are kept out of the results; their findings stay."""
        from ddpdoctor.core.errors import UsageError
        from ddpdoctor.core.registry import get_check

        findings: dict[str, list[Finding]] = {}
        for item in data.get("findings") or []:
            findings.setdefault(item["code"], []).append(Finding.from_dict(item))
        results = []
        for check in data.get("checks") or []:
            try:
                spec = get_check(check["code"])
            except UsageError:
                continue
            results.append(CheckResult(spec, check["status"], findings.get(check["code"], []),
                                       check.get("reason", "")))
        return cls(command=data.get("command", "probe"), results=results,
                   fail_on=fail_on or Severity.parse(data.get("fail_on") or "error"),
                   header=data.get("header", ""), metrics=dict(data.get("metrics") or {}),
                   notes=list(data.get("notes") or []), run_dir=data.get("run_dir"),
                   tool_error=data.get("error"), interrupted_by=data.get("interrupted_by"))
