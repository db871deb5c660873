"""Which findings get a fix, each one proven before it is offered: the edited sources are
linted again (in memory, nothing written) and the fix is kept only when its finding is gone
and no finding was added. Fixes are taken one at a time on top of those already kept, so the
set offered is proven together, and a second run over the fixed files finds nothing to fix."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from ddpdoctor.core.errors import UsageError
from ddpdoctor.core.findings import Finding
from ddpdoctor.lint.fix import minlength, no_sync, sampler, save_guard, set_epoch
from ddpdoctor.lint.fix.edits import Edit, EditConflict, Hunk, SourceText, apply, hunks, unified_diff
from ddpdoctor.lint.fix.syntax import NoFix, Parsed

FIXERS = {kind.CODE: kind.propose for kind in (set_epoch, save_guard, sampler, no_sync, minlength)}
# Findings that deliberately get no fix, and why (a line in the output).
NO_FIX = {
    "DDP801": "moving a collective out of a rank test changes what every rank runs and when: a person decides",
    "DDP803": "which of the two shardings to drop (the sampler or the hand-made shard) is a choice",
}


@dataclass
class Fix:
    """A proven fix of one finding: edits of one file."""

    finding: Finding
    path: Path
    display: str
    edits: list[Edit]
    description: str
    hunks: list[Hunk] = field(default_factory=list)

    def suggestion(self) -> dict:
        """The fix as a review suggestion (the JSON finding's evidence["fix"]): the lines and
        replacement of the hunk at the finding's line (else the first), and every hunk when there
        are several (an import far above)."""
        line = self.finding.location.line if self.finding.location else None
        first = next((h for h in self.hunks if line and h.start_line <= line <= h.end_line), self.hunks[0])
        out = {"file": self.display, **first.to_dict(), "description": self.description}
        if len(self.hunks) > 1:
            out["hunks"] = [h.to_dict() for h in self.hunks]
        return out


@dataclass
class Declined:
    finding: Finding
    reason: str


@dataclass
class FixPlan:
    """The fixes proven for one or more scripts, the findings declined and why, the texts before
    and after."""

    fixes: list[Fix] = field(default_factory=list)
    declined: list[Declined] = field(default_factory=list)
    old: dict[Path, str] = field(default_factory=dict)
    new: dict[Path, str] = field(default_factory=dict)
    display: dict[Path, str] = field(default_factory=dict)

    @property
    def changed(self) -> list[Path]:
        return [p for p, text in self.new.items() if text != self.old.get(p)]

    def diff(self) -> str:
        return "".join(unified_diff(self.display[p], self.old[p], self.new[p]) for p in self.changed)

    def lines(self) -> list[str]:
        """One line per fix and per declined finding, for the terminal."""
        out = [f"fix {f.finding.code} {f.finding.location}: {f.description}" for f in self.fixes]
        out += [f"no fix {d.finding.code} {d.finding.location}: {d.reason}" for d in self.declined]
        return out


def lint_texts(script: str, texts: dict[Path, str], ignore: set[str]) -> tuple[list[Finding], dict[str, Path]]:
    """The lint findings of a script whose files read as `texts` where given, and every file it
    read (display name -> absolute path). Nothing cached, nothing written."""
    from ddpdoctor.lint.facts import build
    from ddpdoctor.lint.program import Program
    from ddpdoctor.lint.driver import lint_results
    from ddpdoctor.lint.sources import load_program

    files = load_program(script, [], texts)
    paths = {f.display: f.path for f in files}
    program = Program(files)
    facts = build(program, script)
    program.release()
    findings = [f for r in lint_results(facts, ignore) for f in r.findings]
    return findings, paths


def plan(scripts: list[str], ignore: set[str], only: Optional[Callable[[Finding], bool]] = None,
         texts: Optional[dict[Path, str]] = None, budget_s: Optional[float] = None) -> FixPlan:
    """The proven fixes of each script's findings (those `only` keeps), each script linted on top
    of the fixes kept for the ones before it. `budget_s`: stop proving after that long (each
    proof is a lint: on a large package, seconds), the findings left declined as not planned."""
    out = FixPlan()
    texts = dict(texts or {})
    deadline = time.monotonic() + budget_s if budget_s is not None else None
    for script in scripts:
        _plan_script(script, ignore, only, texts, out, deadline)
    return out


def _plan_script(script: str, ignore: set[str], only, texts: dict[Path, str], out: FixPlan,
                 deadline: Optional[float] = None) -> None:
    findings, paths = lint_texts(script, texts, ignore)
    for display, path in paths.items():
        out.display.setdefault(path, display)
    before = Counter(f.code for f in findings)
    kept: dict[Path, list[Edit]] = {}
    fixed: Counter = Counter()
    originals: dict[Path, str] = {}
    for finding in findings:
        if only is not None and not only(finding):
            continue
        if finding.code not in FIXERS:
            if finding.code in NO_FIX:
                out.declined.append(Declined(finding, NO_FIX[finding.code]))
            continue
        if deadline is not None and time.monotonic() > deadline:
            out.declined.append(Declined(finding, "not planned: the time for fixes ran out (`lint --patch` plans them all)"))
            continue
        path = paths.get(finding.location.file) if finding.location and finding.location.line else None
        if path is None:
            out.declined.append(Declined(finding, "its place is not in a file the lint read"))
            continue
        try:
            original = originals.get(path) or texts.get(path) or _read(path)
            originals[path] = original
            parsed = Parsed.of(finding.location.file, original)
            proposals = FIXERS[finding.code](finding, parsed)
        except NoFix as exc:
            out.declined.append(Declined(finding, str(exc)))
            continue
        except (UsageError, SyntaxError, ValueError) as exc:
            out.declined.append(Declined(finding, f"the file cannot be edited: {exc}"))
            continue
        except Exception as exc:  # noqa: BLE001 - a fix kind's bug costs its fix, never the lint's report
            out.declined.append(Declined(finding, f"ddpdoctor could not work out a fix (its own error: "
                                                  f"{type(exc).__name__}: {exc})"))
            continue
        reason = "no edit was proposed"
        for edits, description in proposals:
            trial = {**kept, path: kept.get(path, []) + edits}
            try:
                new_texts = {**texts, **{p: apply(originals[p], e) for p, e in trial.items()}}
            except EditConflict:
                reason = "its edit overlaps another fix's: run --fix again after this one"
                continue
            verdict = _prove(script, new_texts, ignore, before, fixed + Counter([finding.code]))
            if verdict:
                reason = f"the edit ({description}) was not proven by linting it again: {verdict}"
                continue
            kept = trial
            fixed[finding.code] += 1
            out.fixes.append(Fix(finding, path, finding.location.file, edits, description,
                                 hunks(SourceText(originals[path]), edits)))
            break
        else:
            out.declined.append(Declined(finding, reason))
    for path, edits in kept.items():
        out.old.setdefault(path, originals[path])
        texts[path] = out.new[path] = apply(originals[path], edits)


def _prove(script: str, texts: dict[Path, str], ignore: set[str], before: Counter, fixed: Counter) -> str:
    """"" when the edited sources lint with the fixed findings gone and nothing added; else what
    went wrong."""
    try:
        after = Counter(f.code for f in lint_texts(script, texts, ignore)[0])
    except UsageError as exc:
        return f"the edited file does not read ({exc})"
    for code in set(after) | set(fixed):
        allowed = before[code] - fixed[code]
        if after[code] > allowed:
            return (f"{code} still reported" if code in fixed and after[code] <= before[code]
                    else f"it would add {code}")
    return ""


def _read(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{path} is not UTF-8 text") from None
