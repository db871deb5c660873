"""Offering a plan's fixes: writing them (atomically, only into the files the lint read as the
user's sources, and only when a file is still what was read), and attaching each proven fix to
its finding as a review suggestion (evidence["fix"])."""

from __future__ import annotations

import os

from ddpdoctor.core.errors import ToolFailure, UsageError
from ddpdoctor.core.files import write_atomic
from ddpdoctor.core.findings import Finding
from ddpdoctor.lint.fix.plan import FixPlan


def write(plan: FixPlan) -> list[str]:
    """Write every changed file; the display names written. A file edited since it was read is
    left alone (bad input: run again), checked for all before any is written."""
    changed = plan.changed
    for path in changed:
        if path not in plan.display:  # never a file the lint did not read
            raise UsageError(f"{path}: not one of the linted sources; not written")
        try:
            now = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"{plan.display[path]}: cannot be read again ({exc}); nothing written") from None
        if now != plan.old[path]:
            raise UsageError(f"{plan.display[path]} changed while it was being fixed; nothing written: run again")
    for path in changed:
        write_atomic(path, plan.new[path], mode=os.stat(path).st_mode & 0o7777)
    return [plan.display[p] for p in changed]


def key(finding: Finding) -> tuple:
    return (finding.code, str(finding.location), finding.message)


def attach(findings: list[Finding], plan: FixPlan) -> int:
    """Give each finding the plan proved a fix for its evidence["fix"] (file, start_line,
    end_line, replacement, description; `hunks` when the fix touches several places); the
    number given."""
    fixes = {key(f.finding): f for f in plan.fixes}
    given = 0
    for finding in findings:
        fix = fixes.get(key(finding))
        if fix is not None:
            finding.evidence["fix"] = fix.suggestion()
            given += 1
    return given


def scripts_of(paths: list[str]) -> list[str]:
    """Of the files handed to `lint --files`, those linted as scripts (as lint_files decides)."""
    from ddpdoctor.lint.driver import runs_code

    return [p for p in dict.fromkeys(paths) if p.endswith(".py") and runs_code(p)]


def confirmed_by_probe(findings: list[Finding]) -> set[tuple[str, str]]:
    """(lint code, file:line) of the static findings a probe confirmed: those merged into a run-time
    twin (evidence["static"] on the probe's finding, lint/merge.py)."""
    out = set()
    for finding in findings:
        static = finding.evidence.get("static")
        if isinstance(static, dict) and static.get("code") and static.get("location"):
            out.add((str(static["code"]), str(static["location"])))
    return out


def offer_for_probe(findings: list[Finding], script: str, codes: set[str], write_files: bool,
                    show_patch: bool, notes=None) -> None:
    """`probe --fix` / `--patch`: the fixes of the static findings the run confirmed (written, or
    printed as a diff), each also attached to the probe's finding that confirmed it (without
    `notes`, only attached: for the JSON and GitHub outputs). A static finding the run did not
    confirm gets no edit here: `lint --fix` offers it. The run's report never fails for a fix:
    a script that cannot be read or written now costs a line."""
    import sys

    from ddpdoctor.lint.fix.plan import plan

    confirmed = confirmed_by_probe(findings)
    if not confirmed and notes is None:
        return
    try:
        made = plan([script], codes, only=lambda f: (f.code, str(f.location)) in confirmed)
    except UsageError as exc:
        if notes is not None:
            notes.write(f"no fixes: {exc}\n")
        return
    by_place = {(f.finding.code, str(f.finding.location)): f for f in made.fixes}
    for finding in findings:
        static = finding.evidence.get("static")
        if isinstance(static, dict):
            fix = by_place.get((str(static.get("code")), str(static.get("location"))))
            if fix is not None:
                finding.evidence["fix"] = fix.suggestion()
    unconfirmed = [f for f in findings if f.code.startswith("DDP8") and f.evidence.get("confirmed") is False]
    lines = made.lines() + [f"not offered {f.code} {f.location}: the run did not confirm it "
                            "(`ddpdoctor lint --fix` offers the static fixes)" for f in unconfirmed]
    if notes is None:
        return
    if write_files:
        try:
            written = write(made)
        except (UsageError, ToolFailure) as exc:
            written, lines = [], lines + [f"nothing written: {exc}"]
        lines.append(f"fixed {len(made.fixes) if written else 0} confirmed finding(s) in {len(written)} file(s)"
                     + (f": {', '.join(written)}" if written else "")
                     + ("; probe again to see the run without them" if written else ""))
    elif show_patch:
        sys.stdout.write(made.diff())
        sys.stdout.flush()
    for line in lines:
        notes.write(line + "\n")
    notes.flush()
