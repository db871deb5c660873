"""`ddpdoctor lint`: parse, gather facts, run the DDP8xx checks, build the Report."""

from __future__ import annotations

import time

from ddpdoctor.core.findings import Severity
from ddpdoctor.core.registry import CheckResult, run_checks
from ddpdoctor.lint.facts import LintFacts, build
from ddpdoctor.lint.program import Program
from ddpdoctor.lint.sources import load_program
from ddpdoctor.report.model import Report


def gather(script: str) -> LintFacts:
    """The facts of a script and the local modules it imports, from the cache when none of its
    files changed since the last lint. Bad input raises UsageError."""
    from ddpdoctor.lint import cache

    started = time.perf_counter()
    facts = cache.load(script)
    if facts is not None:
        facts.cached = True
        facts.elapsed_s = time.perf_counter() - started
        return facts
    notes: list[str] = []
    program = Program(load_program(script, notes))
    facts = build(program, script)
    facts.notes.extend(notes)
    facts.elapsed_s = time.perf_counter() - started
    cache.store(script, facts, [str(f.path) for f in program.files])
    return facts


def lint_results(facts: LintFacts, ignore: set[str]) -> list[CheckResult]:
    """The lint checks over the facts; every finding carries evidence {"static": true}."""
    results = run_checks("lint", facts, ignore)
    for result in results:
        for finding in result.findings:
            finding.evidence = {"static": True, **finding.evidence}
    return results


def lint(script: str, fail_on: Severity, ignore: set[str]) -> Report:
    facts = gather(script)
    results = lint_results(facts, ignore)
    files = len(facts.files)
    how = facts.distributed_how or "no process group set up"
    header = (f"{script}: {files} file(s), {facts.statements} statements read"
              f" ({', '.join(facts.files[1:4])}{', …' if files > 4 else ''})" * (files > 1)
              + (f"{script}: {facts.statements} statements read" if files == 1 else "")
              + (f"; {facts.unreachable} of {facts.functions} functions not reachable from the script,"
                 " not judged" if facts.unreachable else "")
              + f"; distributed: {how}"
              + (f"; framework: {facts.framework}" if facts.framework else "")
              + f"; {facts.elapsed_s * 1000:.0f} ms" + (" (unchanged since the last lint: cached)"
                                                        if facts.cached else ""))
    notes = []
    if facts.distributed is None and facts.framework is None:
        notes.append("the script sets up no process group (init_process_group, DDP, a framework): "
                     "the data and checkpoint rules do not apply")
    notes.extend(facts.notes)
    metrics = {"files": facts.files, "statements": facts.statements,
               "functions": facts.functions, "unreachable_functions": facts.unreachable,
               "elapsed_ms": round(facts.elapsed_s * 1000, 1), "cached": facts.cached,
               "framework": facts.framework,
               "distributed": str(facts.distributed) if facts.distributed else None}
    return Report(command="lint", results=results, fail_on=fail_on, header=header,
                  metrics=metrics, notes=notes)
