"""The lint inside a probe's report: the probed script is also read statically, its DDP8xx
checks join the report (merged with the probe's results before the report is built,
probe/report.py), and a bug seen both ways is one finding with both evidences.

A lint finding and a probe finding are the same bug when their codes are twins (DDP801 and
DDP502: a collective under a rank test, and a rank that skipped a collective) and they point
at the same file:line. The probe's finding stays (it was seen happening); it gains
evidence["static"] with the lint's code, message and evidence, and the lint's check line says
where its finding went.

A static finding the run did not confirm is a claim, not evidence: it is shown one step lower
(an error as a warning, a warning as a note), says what the run saw instead (its twin check
found nothing, or never got the chance), and never fails the probe's gate by itself
(evidence["confirmed"] is False; core.findings.gating leaves such findings out).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Optional

from ddpdoctor.core.errors import UsageError
from ddpdoctor.core.findings import Finding, Location, Severity
from ddpdoctor.core.registry import IGNORED, NOTED, PASSED, SKIPPED, WARNED, CheckResult

# lint code -> the probe codes that see the same bug at run time
PROBE_TWINS = {
    "DDP801": ("DDP502", "DDP501", "DDP503"),
    "DDP802": ("DDP301",),
    "DDP803": ("DDP304",),
    "DDP804": ("DDP302",),
    "DDP805": ("DDP403",),
    "DDP806": ("DDP701",),
    "DDP807": ("DDP506", "DDP501"),
    "DDP808": ("DDP305",),
    "DDP809": ("DDP502", "DDP501", "DDP503"),
    "DDP810": ("DDP405",),
}


def _same_place(a: Optional[Location], b: Optional[Location]) -> bool:
    if a is None or b is None or not a.line or a.line != b.line:
        return False
    return os.path.normpath(os.path.abspath(a.file)) == os.path.normpath(os.path.abspath(b.file))


def _places(finding: Finding) -> list[Location]:
    places = [finding.location] if finding.location else []
    # (DDP810 names the DDP(...) whose module the step runs: where DDP405 points, at run time)
    for key in ("loader_location", "guard_location", "wrapper_location"):
        value = finding.evidence.get(key)
        if isinstance(value, str) and ":" in value:
            file, _, line = value.rpartition(":")
            if line.isdigit():
                places.append(Location(file, int(line)))
    return places


# Data rules: one script has one training loader, and the probe names where it is iterated
# while the lint names where it is built - one of each in the same file is the same bug.
ONE_PER_FILE = {"DDP802", "DDP803", "DDP804", "DDP805", "DDP808"}


def _same_file(a: Optional[Location], b: Optional[Location]) -> bool:
    if a is None or b is None:
        return False
    return os.path.normpath(os.path.abspath(a.file)) == os.path.normpath(os.path.abspath(b.file))


def twins_of(finding: Finding, lint_findings: list[Finding], probe_findings: list[Finding]) -> list[Finding]:
    """The probe findings that saw the same bug as a lint finding: twin codes at the same
    file:line, or for the data rules the only one of each in the same file."""
    codes = PROBE_TWINS.get(finding.code, ())
    candidates = [c for c in probe_findings if c.code in codes]
    exact = [c for c in candidates if any(_same_place(p, c.location) for p in _places(finding))]
    if exact or finding.code not in ONE_PER_FILE:
        return exact
    mine = [f for f in lint_findings if f.code == finding.code and _same_file(f.location, finding.location)]
    theirs = [c for c in candidates if _same_file(c.location, finding.location)]
    return theirs if len(mine) == 1 and len(theirs) == 1 else []


def _source_of(script: str, module: bool) -> str:
    if not module:
        return script
    sys.path.insert(0, os.getcwd())
    try:
        spec = importlib.util.find_spec(script)
        if spec is not None and spec.submodule_search_locations:
            spec = importlib.util.find_spec(f"{script}.__main__")
    except (ImportError, ValueError) as exc:
        raise UsageError(f"-m {script}: {exc}") from None
    finally:
        sys.path.pop(0)
    if spec is None or not spec.origin or not os.path.isfile(spec.origin):
        raise UsageError(f"-m {script}: no source file")
    return spec.origin


@dataclass
class StaticPart:
    """What the lint adds to a probe's report, handed to report assembly (probe/report.py):
    the DDP8xx check results, notes (a script that could not be read), and the lint's numbers
    (None when it did not run)."""

    results: list[CheckResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    metrics: Optional[dict[str, Any]] = None


def static_part(probe_results: list[CheckResult], script: str, module: bool = False,
                ignore: frozenset[str] | set[str] = frozenset()) -> StaticPart:
    """Lint the probed script and merge its DDP8xx checks with the probe's check results, before
    the report is built: a static finding with a run-time twin becomes evidence on the twin (the
    probe's finding, in `probe_results`), one without is kept one severity lower and unconfirmed.
    A script that cannot be read now (moved, edited into invalid Python) costs a note, never
    the probe's report."""
    from ddpdoctor.lint.driver import gather, lint_results

    try:
        facts = gather(_source_of(script, module))
    except UsageError as exc:
        return StaticPart(notes=[f"static lint not run: {exc}"])
    results = lint_results(facts, set(ignore))
    seen = [f for r in probe_results for f in r.findings]
    static = [f for r in results for f in r.findings]
    for result in results:
        twins_ignored = sorted(set(PROBE_TWINS.get(result.spec.code, ())) & set(ignore))
        if twins_ignored and result.findings:
            # --ignore DDP301 means "I know my loader has no sampler": its static twin is the
            # same knowledge, not a new finding.
            result.findings, result.status = [], IGNORED
            result.reason = f"--ignore {', '.join(twins_ignored)} (its run-time twin)"
            continue
        kept, merged = [], []
        for finding in result.findings:
            twins = twins_of(finding, static, seen)
            if not twins:
                kept.append(finding)
                continue
            for twin in twins:
                twin.evidence["static"] = _static_evidence(finding)
                twin.message += f" (also found in the source: {finding.code})"
                merged.append(twin.code)
        if merged and not kept:
            _merged_away(result, merged)
        for finding in kept:
            _unconfirmed(finding, probe_results)
        result.findings = kept
        if kept:
            worst = max(f.severity.rank for f in kept)
            result.status = {2: WARNED, 1: WARNED, 0: NOTED}.get(worst, PASSED)
    return StaticPart(results, [], {"files": facts.files, "statements": facts.statements,
                                    "elapsed_ms": round(facts.elapsed_s * 1000, 1)})


LOWER = {Severity.ERROR: Severity.WARNING, Severity.WARNING: Severity.INFO, Severity.INFO: Severity.INFO}


def _unconfirmed(finding: Finding, probe_results: list[CheckResult]) -> None:
    """A static finding with no run-time twin: one severity lower, marked unconfirmed (it never
    gates), with a line saying what the run saw of it."""
    twins = PROBE_TWINS.get(finding.code, ())
    looked = [r for r in probe_results if r.spec.code in twins and r.status != IGNORED]
    passed = [r.spec.code for r in looked if r.status == PASSED]
    skipped = [f"{r.spec.code} skipped: {r.reason}" for r in looked if r.status == SKIPPED and r.reason]
    if passed:
        seen = (f"the run did not confirm it ({', '.join(passed)} saw nothing of it in the steps it ran; "
                "the code may not have been reached)")
    elif skipped:
        seen = f"the run did not reach or confirm it ({skipped[0]})"
    else:
        seen = "the run did not reach or confirm it"
    finding.evidence["confirmed"] = False
    finding.evidence["severity_in_lint"] = finding.severity.value
    finding.severity = LOWER[finding.severity]
    finding.message += f". Static only: {seen}, so it does not fail the probe by itself"


def _static_evidence(finding: Finding) -> dict[str, Any]:
    evidence = {k: v for k, v in finding.evidence.items() if k != "static"}
    return {"code": finding.code, "message": finding.message,
            "location": str(finding.location) if finding.location else None, **evidence}


def _merged_away(result: CheckResult, codes: list[str]) -> None:
    result.status = SKIPPED
    result.reason = f"seen at run time too: reported with {', '.join(sorted(set(codes)))}"
