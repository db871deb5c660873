"""How checks are declared, discovered and run.

A check is one function in one module under `checks/` (installed as `ddpdoctor.checks`):

    @check("DDP101", "Every host resolves", Severity.ERROR)
    def hosts_resolve(cluster: ClusterFacts) -> list[Problem] | Skipped:
        '''What it detects ... Why it hurts ... How to fix ...'''

Its stage (preflight or probe) is the sub-package it lives in; `stages=` adds others it also
judges (the post-mortem's "evidence", attach's sampled window "attach", a set of Flight Recorder
dumps "flight"), so a code keeps one judge whichever command gathered the facts: the function
tells the observations apart by their type. Its docstring is the user
documentation that `ddpdoctor explain CODE` prints. A check reads the facts it is handed and
returns problems; it never prints, launches processes or reads files.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Union

from ddpdoctor.core.errors import UsageError
from ddpdoctor.core.findings import Finding, Problem, Severity

CODE_PATTERN = re.compile(r"^DDP\d{3}$")
STAGES = ("preflight", "probe", "lint", "evidence", "attach", "flight")
# Stages whose checks all live in these sub-packages: discovering them imports only those
# (attach and Flight Recorder dumps are judged by the probe's own checks).
_HOMES = {"preflight": ("preflight",), "probe": ("probe",), "lint": ("lint",),
          "attach": ("probe",), "flight": ("probe",)}


@dataclass(frozen=True)
class Skipped:
    """Returned by a check that could not judge, with the reason shown to the user."""

    reason: str


@dataclass(frozen=True)
class Incomplete:
    """Returned by a check that applies to this job but could not judge because data that should
    exist is missing (a node never reported, a rank recorded nothing). Unlike Skipped, this keeps
    the report from passing: "none found" would be a claim the data cannot back."""

    reason: str


CheckResultValue = Union[list, Skipped, Incomplete]


@dataclass(frozen=True)
class CheckSpec:
    code: str
    title: str
    severity: Severity
    stage: str
    func: Callable[[Any], CheckResultValue]
    also: tuple = ()  # further stages this check judges (check(..., stages=...))

    @property
    def stages(self) -> tuple:
        return (self.stage,) + tuple(s for s in self.also if s != self.stage)

    @property
    def doc(self) -> str:
        return inspect.cleandoc(self.func.__doc__ or "")

    @property
    def module(self) -> str:
        return self.func.__module__

    def finding(self, problem: Problem) -> Finding:
        return Finding(
            code=self.code,
            severity=problem.severity or self.severity,
            title=self.title,
            message=problem.message,
            hint=problem.hint,
            ranks=sorted(set(problem.ranks)),
            hosts=list(dict.fromkeys(problem.hosts)),
            location=problem.location,
            evidence=dict(problem.evidence),
        )


# Outcome of one check in one run, in the order the terminal report shows them.
PASSED, FAILED, WARNED, NOTED, SKIPPED, IGNORED, CRASHED, INCOMPLETE = (
    "passed", "failed", "warned", "noted", "skipped", "ignored", "crashed", "incomplete")


@dataclass
class CheckResult:
    spec: CheckSpec
    status: str
    findings: list[Finding] = field(default_factory=list)
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.spec.code, "title": self.spec.title, "status": self.status,
                "reason": self.reason}


_REGISTRY: dict[str, CheckSpec] = {}


def check(code: str, title: str, severity: Severity, stages: tuple = ()) -> Callable:
    """Declare a check. The stage is taken from the module's package (checks/preflight, checks/probe);
    `stages` names further stages the same function judges (it is handed their observation)."""
    unknown = [s for s in stages if s not in STAGES]
    if unknown:
        raise ValueError(f"{code}: unknown stage(s) {unknown}")
    if not CODE_PATTERN.match(code):
        raise ValueError(f"check code {code!r} is not of the form DDPnnn")

    def register(func: Callable) -> Callable:
        parts = func.__module__.split(".")
        stage = next((p for p in parts if p in STAGES), None)
        if stage is None:
            raise ValueError(f"{func.__module__} is not under checks/preflight, checks/probe, checks/lint "
                             "or checks/evidence")
        existing = _REGISTRY.get(code)
        if existing is not None and existing.func.__qualname__ != func.__qualname__:
            raise ValueError(f"{code} declared twice: {existing.module} and {func.__module__}")
        _REGISTRY[code] = CheckSpec(code, title, severity, stage, func, tuple(stages))
        return func

    return register


_DISCOVERED: set[str] = set()  # stages whose check modules are imported ("*": all of them)


def _discover(stage: Optional[str] = None) -> None:
    """Import the check modules, of one stage only when asked: a preflight need not import the
    probe's checks (and the probe modules they import), which costs every preflight ~0.1 s."""
    if stage is not None and stage not in _HOMES:
        stage = None  # its checks may be declared in any sub-package (stages=...)
    wanted = stage or "*"
    if wanted in _DISCOVERED or "*" in _DISCOVERED:
        return
    import ddpdoctor.checks as root

    packages = [root] if stage is None else [importlib.import_module(f"{root.__name__}.{home}")
                                              for home in _HOMES[stage]]
    for package in packages:
        for info in pkgutil.walk_packages(package.__path__, prefix=package.__name__ + "."):
            importlib.import_module(info.name)
    _DISCOVERED.add(wanted)


def all_checks(stage: Optional[str] = None) -> list[CheckSpec]:
    """Every declared check (of one stage), sorted by code."""
    _discover(stage)
    specs = sorted(_REGISTRY.values(), key=lambda s: s.code)
    return [s for s in specs if stage is None or stage in s.stages]


def get_check(code: str) -> CheckSpec:
    code = code.strip().upper()
    for spec in all_checks():
        if spec.code == code:
            return spec
    raise UsageError(f"unknown check code {code!r}; `ddpdoctor checks` lists them")


def validate_codes(codes: set[str]) -> None:
    if not codes:
        return
    known = {s.code for s in all_checks()}
    unknown = sorted(codes - known)
    if unknown:
        raise UsageError(f"unknown check code(s) in --ignore: {', '.join(unknown)}")


MAX_FINDINGS_PER_CHECK = 50  # a report lists at most this many findings of one code


def capped(problems: list[Problem], code: str) -> list[Problem]:
    """At most MAX_FINDINGS_PER_CHECK of one check's problems, the rest summarised in one: a
    report's size is bounded whatever the data (100,000 forged collectives made 100,000 DDP502s,
    a 124 MB report), and a person reads the first few anyway."""
    if len(problems) <= MAX_FINDINGS_PER_CHECK:
        return problems
    kept, rest = problems[:MAX_FINDINGS_PER_CHECK - 1], problems[MAX_FINDINGS_PER_CHECK - 1:]
    ranks = sorted({r for p in rest for r in p.ranks})
    graded = [p.severity for p in rest if p.severity is not None]
    return kept + [Problem(
        f"{len(rest):,} more {code} findings, not listed (a report lists {MAX_FINDINGS_PER_CHECK} per "
        f"check)" + (f"; they involve rank(s) {', '.join(map(str, ranks[:20]))}{', …' if len(ranks) > 20 else ''}"
                     if ranks else ""),
        "fix the ones listed first: the same cause often explains the rest; run again to see what remains",
        ranks=ranks[:1000], severity=max(graded, key=lambda s: s.rank) if graded else None,
        evidence={"summarised": len(rest)})]


def run_checks(stage: str, facts: Any, ignore: set[str] = frozenset(),
               only: Optional[set[str]] = None) -> list[CheckResult]:
    """Run every check of a stage (or `only` these codes) over the facts. A check that raises is
    a ddpdoctor bug: it is recorded as crashed (with its traceback's last line) so the rest of
    the report survives."""
    results = []
    for spec in all_checks(stage):
        if only is not None and spec.code not in only:
            continue
        if spec.code in ignore:
            results.append(CheckResult(spec, IGNORED, reason="--ignore"))
            continue
        try:
            value = spec.func(facts)
        except Exception as exc:  # noqa: BLE001 - one broken check must not lose the report
            last = traceback.format_exception_only(type(exc), exc)[-1].strip()
            results.append(CheckResult(spec, CRASHED, reason=f"ddpdoctor bug: {last}"))
            continue
        if isinstance(value, Incomplete):
            results.append(CheckResult(spec, INCOMPLETE, reason=value.reason))
            continue
        if isinstance(value, Skipped):
            results.append(CheckResult(spec, SKIPPED, reason=value.reason))
            continue
        findings = [spec.finding(p) for p in capped(list(value), spec.code)]
        if not findings:
            results.append(CheckResult(spec, PASSED))
            continue
        worst = max(f.severity.rank for f in findings)
        status = {2: FAILED, 1: WARNED, 0: NOTED}[worst]
        results.append(CheckResult(spec, status, findings))
    return results
