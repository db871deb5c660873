"""`ddpdoctor lint`: parse, gather facts, run the DDP8xx checks, build the Report."""

from __future__ import annotations

import ast
import gc
import os
import time
from pathlib import Path

from ddpdoctor.core.errors import UsageError
from ddpdoctor.core.findings import Severity
from ddpdoctor.core.registry import (CRASHED, FAILED, IGNORED, NOTED, PASSED, SKIPPED, WARNED, CheckResult,
                                     run_checks)
from ddpdoctor.lint.facts import LintFacts, build
from ddpdoctor.lint.program import AnalysisBudget, Program, budget_s, top_level_runs
from ddpdoctor.lint.sources import load_program, read_source
from ddpdoctor.report.model import Report


def gather(script: str) -> LintFacts:
    """The facts of a script and the local modules it imports, from the cache when none of its
    files changed since the last lint. Bad input raises UsageError."""
    from ddpdoctor.lint import cache

    started = time.perf_counter()
    budget_s()  # (a bad DDPDOCTOR_LINT_BUDGET_S is bad input whether or not the cache answers)
    notes: list[str] = []
    facts = cache.load(script, notes)
    if facts is not None:
        facts.cached = True
        facts.elapsed_s = time.perf_counter() - started
        return facts
    # The analysis builds millions of small objects (syntax trees) and frees none of them until it
    # ends: the cyclic collector, run every 700 allocations, walked them over and over (on a
    # 200-file package: 1.8 s of its 4 s; parsing alone took 4x longer). Off while it runs.
    collecting = gc.isenabled()
    gc.disable()
    try:
        try:
            sources = load_program(script, notes)
            program = Program(sources)
            facts = build(program, script)
        except AnalysisBudget as stop:
            # no verdict on half a reading, and nothing cached: the next lint tries again
            facts = LintFacts(script=script, files=[f.display for f in sources], statements=0, distributed=None,
                              distributed_how="", framework=None, ddp_model=False, no_sync=False, stopped=str(stop))
            facts.notes.extend(notes)
            facts.elapsed_s = time.perf_counter() - started
            return facts
        except RecursionError:
            # an expression or nesting deeper than Python's own limits (200,000 terms in one
            # line): nothing a person wrote to be read; one line, exit 2, not a traceback
            raise UsageError(f"{script}: nested too deeply to analyse (an expression or block deeper "
                             f"than the interpreter's recursion limit)") from None
        paths = [str(f.path) for f in program.sources]  # every module found, read or not
        notes.extend(f"{f.display}: line(s) {', '.join(map(str, f.tree.skipped_lines))} use Python 3.12's "
                     f"f-string quoting, which this interpreter cannot parse: read as `pass`"
                     for f in program.sources if getattr(f.tree, "skipped_lines", None))
        paths += program.sources[0].hydra_configs if program.sources else []  # (a changed config is a miss)
        paths += program.__dict__.get("_pin_files", [])  # (and so is a changed version pin)
        program.release()
    finally:
        if collecting:
            gc.enable()
    facts.notes.extend(notes)
    facts.elapsed_s = time.perf_counter() - started
    cache.store(script, facts, paths)
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
    notes, unjudged = unreached(facts)
    if not unjudged and facts.distributed is None and facts.framework is None:
        notes.append("the script sets up no process group (init_process_group, DDP, a framework): "
                     "the data and checkpoint rules do not apply")
    notes.extend(facts.notes)
    metrics = {"files": facts.files, "statements": facts.statements,
               "functions": facts.functions, "unreachable_functions": facts.unreachable,
               "elapsed_ms": round(facts.elapsed_s * 1000, 1), "cached": facts.cached,
               "framework": facts.framework,
               "distributed": str(facts.distributed) if facts.distributed else None}
    return Report(command="lint", results=results, fail_on=fail_on, header=header,
                  metrics=metrics, notes=notes, incomplete_because=unjudged)


def unreached(facts: LintFacts) -> tuple[list[str], list[str]]:
    """(notes, why the verdict is incomplete) when the script's distributed code was not reached:
    the process group is set up only in a function no call from the script leads to."""
    if getattr(facts, "stopped", ""):
        return ([f"{facts.stopped}: the rules did not judge the script; lint a smaller entry point, or "
                 "raise the budget"], [f"{facts.script}: not judged: {facts.stopped}"])
    where = facts.unreached_setup
    if where is None and facts.config_named is not None:
        named = facts.config_named
        return ([f"the training code is a class or module the config names, made at {named} (a `_target_`, "
                 "an import_module of a configured name): the lint reads the source, not the config, so the "
                 "rules did not judge it; lint the module that class lives in, or `ddpdoctor probe` the script"],
                [f"{facts.script}: the training code was not reached: the script sets up the process group, "
                 f"then runs what its config names at {named}"])
    if where is None and getattr(facts, "undefined_call", None) is not None:
        name, at = facts.undefined_name, facts.undefined_call
        return ([f"the script calls `{name}` at {at}, a name it neither defines nor imports: as written it "
                 f"stops there with a NameError, and what `{name}` was meant to run (the training) was not "
                 "judged; add its import and lint again"],
                [f"{facts.script}: the training code was not reached: `{name}` at {at} is defined nowhere the "
                 "script can see"])
    if where is None:
        return [], []
    return ([f"the process group is set up at {where}, in code the lint could not reach from the script "
             "(called through a registry, a callback or a name chosen at run time): the rules did not "
             "judge that code; `ddpdoctor probe` judges it as it runs"],
            [f"{facts.script}: the distributed code was not reached: the process group is set up at "
             f"{where}, in a function no call from the script leads to"])


def changed_files(rev: str) -> list[str]:
    """The Python files that differ from git revision `rev` in the working tree (added, copied,
    modified, renamed), and the untracked ones git does not ignore."""
    import subprocess

    def git(*args: str) -> list[str]:
        try:
            done = subprocess.run(["git", *args], capture_output=True, text=True, timeout=60,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise UsageError(f"--diff: git could not run: {exc}") from None
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["git failed"])[-1]
            raise UsageError(f"--diff {rev}: {last}")
        return [line for line in done.stdout.splitlines() if line]

    top = git("rev-parse", "--show-toplevel")[0]
    changed = git("diff", "--name-only", "--diff-filter=ACMR", rev, "--", "*.py")
    untracked = git("ls-files", "--others", "--exclude-standard", "--", "*.py")
    paths = [os.path.relpath(os.path.join(top, p)) for p in changed] + untracked
    return list(dict.fromkeys(p for p in paths if os.path.isfile(p)))


def runs_code(path: str) -> bool:
    """The file does something when run (program.top_level_runs); one that cannot be parsed is
    taken as a script, so the lint itself says what is wrong with it."""
    try:
        tree = ast.parse(read_source(Path(path)))
    except (UsageError, SyntaxError, ValueError, RecursionError, MemoryError):
        return True
    return top_level_runs(tree)


MAX_WALKED = 5000  # .py files taken from the directories given to --files


def expand_paths(paths: list[str]) -> list[str]:
    """The files given to `--files`, each directory replaced by the .py files beneath it (hidden
    folders and __pycache__ skipped). Nothing to lint is refused: zero files must never read as
    a PASS."""
    out: list[str] = []
    for path in paths:
        if not os.path.isdir(path):
            out.append(path)
            continue
        found = []
        for root, dirs, names in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
            found.extend(os.path.join(root, n) for n in sorted(names) if n.endswith(".py"))
            if len(found) > MAX_WALKED:
                raise UsageError(f"--files {path}: more than {MAX_WALKED} .py files beneath it; "
                                 "give the scripts (or a smaller folder)")
        if not found:
            raise UsageError(f"--files {path}: a directory with no .py files beneath it: nothing to lint")
        out.extend(found)
    if not any(p.endswith(".py") for p in out):
        raise UsageError(f"--files {' '.join(paths[:3])}: no .py file among them: nothing to lint")
    return out


def lint_files(paths: list[str], fail_on: Severity, ignore: set[str], how: str) -> Report:
    """Lint several files in one report, as pre-commit and `--diff` hand them over: each file that
    runs code at its top level is linted as a script (with its local imports); a module that only
    defines things is judged when a script importing it is linted. A finding reached from two
    scripts is reported once."""
    paths = [p for p in dict.fromkeys(paths) if p.endswith(".py")]
    scripts = [p for p in paths if runs_code(p)]
    merged: dict[str, CheckResult] = {}
    seen: set[tuple] = set()
    notes: list[str] = []
    unjudged: list[str] = []
    files: set[str] = set()
    statements = 0
    elapsed = 0.0
    for script in scripts:
        facts = gather(script)
        files.update(facts.files)
        statements += facts.statements
        elapsed += facts.elapsed_s
        notes.extend(f"{script}: {n}" for n in facts.notes)
        more, why = unreached(facts)
        notes.extend(f"{script}: {n}" for n in more)
        unjudged.extend(why)
        for result in lint_results(facts, ignore):
            mine = merged.setdefault(result.spec.code, CheckResult(result.spec, result.status, [], result.reason))
            for finding in result.findings:
                key = (finding.code, str(finding.location), finding.message)
                if key not in seen:
                    seen.add(key)
                    mine.findings.append(finding)
            if _worse(result.status, mine.status):
                mine.status, mine.reason = result.status, result.reason
    modules = [p for p in paths if p not in scripts]
    if modules:
        notes.append(f"{len(modules)} file(s) only define things ({', '.join(modules[:4])}"
                     f"{', …' if len(modules) > 4 else ''}): judged when a script that imports them is linted")
    header = (f"{len(paths)} file(s) {how}, {len(scripts)} linted as script(s); {len(files)} file(s), "
              f"{statements} statements read; {elapsed * 1000:.0f} ms")
    metrics = {"files": sorted(files), "scripts": scripts, "statements": statements,
               "elapsed_ms": round(elapsed * 1000, 1)}
    return Report(command="lint", results=list(merged.values()), fail_on=fail_on, header=header,
                  metrics=metrics, notes=notes, incomplete_because=unjudged)


ORDER = {PASSED: 0, SKIPPED: 0, IGNORED: 0, NOTED: 1, WARNED: 2, FAILED: 3, CRASHED: 4}


def _worse(status: str, than: str) -> bool:
    return ORDER.get(status, 0) > ORDER.get(than, 0)
