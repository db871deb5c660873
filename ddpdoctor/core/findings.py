"""Findings, their severities and the exit-code policy shared by every command."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_TOOL = 3
# The verdict could not be reached: a check that applies lacked data (a node or rank never
# reported, the job never trained). Never 0, and not 1: nothing was found wrong, nothing proven right.
EXIT_INCOMPLETE = 4


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"info": 0, "warning": 1, "error": 2}[self.value]

    @classmethod
    def parse(cls, text: str) -> "Severity":
        try:
            return cls(text.strip().lower())
        except ValueError:
            from ddpdoctor.core.errors import UsageError

            raise UsageError(f"severity must be one of error, warning, info (got {text!r})") from None


@dataclass(frozen=True)
class Location:
    file: str
    line: Optional[int] = None
    # The user's own calls that led here through library code, innermost first, each
    # (file, line, callee): ("train.py", 70, "Trainer.fit") reads "called from Trainer.fit at
    # train.py:70". Context for a person; `file:line` alone is the place to fix.
    called_from: tuple = field(default=(), compare=False)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file

    @property
    def context(self) -> str:
        """"called from Trainer.fit at train.py:70, from main at train.py:76" or ""."""
        parts = [f"{callee} at {file}:{line}" for file, line, callee in self.called_from]
        return ("called from " + ", from ".join(parts)) if parts else ""


@dataclass
class Finding:
    """One thing wrong, exactly the JSON schema of DESIGN.md."""

    code: str
    severity: Severity
    title: str
    message: str
    hint: str
    ranks: list[int] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)
    location: Optional[Location] = None
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity.value,
            "title": self.title,
            "message": self.message,
            "hint": self.hint,
            "ranks": list(self.ranks),
            "hosts": list(self.hosts),
            "location": _location_dict(self.location),
            "evidence": self.evidence,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Finding":
        loc = data.get("location")
        return cls(
            code=data["code"],
            severity=Severity(data["severity"]),
            title=data["title"],
            message=data["message"],
            hint=data.get("hint", ""),
            ranks=list(data.get("ranks") or []),
            hosts=list(data.get("hosts") or []),
            location=(Location(loc["file"], loc.get("line"),
                               tuple((c.get("file", ""), c.get("line"), c.get("call", ""))
                                     for c in loc.get("called_from") or ()))
                      if loc else None),
            evidence=dict(data.get("evidence") or {}),
        )


def _location_dict(location: Optional[Location]) -> Optional[dict[str, Any]]:
    if location is None:
        return None
    data: dict[str, Any] = {"file": location.file, "line": location.line}
    if location.called_from:  # only where there is context: the two-key form stays as it was
        data["called_from"] = [{"file": f, "line": n, "call": c} for f, n, c in location.called_from]
    return data


@dataclass
class Problem:
    """What a check returns: a finding without its code, title and default severity.

    The registry stamps those from the check's declaration, so a check never repeats them.
    `severity` overrides the declared default where one check has graded outcomes.
    """

    message: str
    hint: str
    ranks: Iterable[int] = ()
    hosts: Iterable[str] = ()
    location: Optional[Location] = None
    evidence: dict[str, Any] = field(default_factory=dict)
    severity: Optional[Severity] = None


def parse_codes(values: Iterable[str]) -> set[str]:
    """`--ignore DDP602,DDP603 --ignore DDP101` -> {"DDP602", "DDP603", "DDP101"}."""
    codes: set[str] = set()
    for value in values:
        for part in value.split(","):
            part = part.strip().upper()
            if part:
                codes.add(part)
    return codes


def gating(findings: Iterable[Finding], fail_on: Severity) -> list[Finding]:
    """The findings at or above `fail_on`: the ones that make a CI gate fail. A static finding
    the run did not confirm (evidence "confirmed": false, set by lint/merge.py inside a probe's
    report) is shown but never fails the gate by itself."""
    return [f for f in findings if f.severity.rank >= fail_on.rank
            and not (f.evidence.get("static") is True and f.evidence.get("confirmed") is False)]
