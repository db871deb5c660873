"""The `lint` command: read a training script (and its local imports) without running it."""

from __future__ import annotations

from typing import List, Optional

import typer

from ddpdoctor.cli.options import (FailOnOpt, ForceOpt, GithubOpt, IgnoreOpt, JsonOpt, JunitOpt,
                                   QuietOpt, VerboseOpt, finish, gate, report_outputs)


def lint_command(
    scripts: Optional[List[str]] = typer.Argument(
        None, help="The training script (its local imports are read too); with --files, the files to "
                   "lint; with --diff, an optional git revision first (default HEAD)."),
    files: bool = typer.Option(False, "--files", help="Lint the given files (as pre-commit passes them): "
                               "each one that runs code at its top level is linted as a script."),
    diff: bool = typer.Option(False, "--diff", help="Lint the Python files changed against a git "
                              "revision (`--diff` = against HEAD, `--diff main`), untracked ones included."),
    json_path: Optional[str] = JsonOpt,
    junit_path: Optional[str] = JunitOpt,
    github: bool = GithubOpt,
    fail_on: str = FailOnOpt,
    ignore: List[str] = IgnoreOpt,
    verbose: bool = VerboseOpt,
    quiet: bool = QuietOpt,
    force: bool = ForceOpt,
    fix: bool = typer.Option(False, "--fix", help="Write the fixes of the findings whose fix is mechanical "
                             "and safe (each proven by linting the result again), then report what remains."),
    patch: bool = typer.Option(False, "--patch", help="Print those fixes as a unified diff (for git apply "
                               "or patch -p1) and change nothing."),
) -> int:
    """Read SCRIPT without running it and report DDP bugs visible in the source (DDP8xx):
    collectives under a rank test, DataLoaders without a DistributedSampler, set_epoch never
    called, accumulation without no_sync, torch.save on every rank (or one rank per node)."""
    from ddpdoctor.core.errors import UsageError
    from ddpdoctor.lint.driver import changed_files, expand_paths, lint, lint_files

    severity, codes = gate(fail_on, ignore)
    if fix and patch:
        raise UsageError("--fix writes the fixes and --patch only shows them: give one of the two")
    if patch and json_path == "-":
        raise UsageError("--patch prints the diff on stdout: write the JSON report to a file (--json FILE)")
    scripts = list(scripts or [])
    if diff:
        import os

        rev = "HEAD"
        if scripts and not os.path.exists(scripts[0]):
            rev = scripts.pop(0)
        paths = changed_files(rev) + scripts
        outputs = report_outputs(json_path, junit_path, github, verbose, quiet, inputs=paths, force=force)
        return _report(lambda: lint_files(paths, severity, codes, f"changed against {rev}"), paths, True,
                       codes, outputs, fix, patch)
    if not scripts:
        raise UsageError("lint needs a script (or --files FILE..., or --diff [REV])")
    outputs = report_outputs(json_path, junit_path, github, verbose, quiet, inputs=scripts, force=force)
    if files or len(scripts) > 1:
        paths = expand_paths(scripts)
        return _report(lambda: lint_files(paths, severity, codes, "given"), paths, True, codes, outputs,
                       fix, patch)
    return _report(lambda: lint(scripts[0], severity, codes), scripts, False, codes, outputs, fix, patch)


FIX_BUDGET_S = 20.0


def _report(build, paths: list[str], several: bool, codes: set[str], outputs, fix: bool, patch: bool) -> int:
    """The lint report, with the fixes: written first (--fix, the report then says what remains),
    printed as a diff (--patch), or attached to their findings for JSON and GitHub consumers."""
    import sys

    from ddpdoctor.lint.fix.apply import attach, scripts_of, write
    from ddpdoctor.lint.fix.plan import FIXERS, plan

    scripts = scripts_of(paths) if several else paths
    notes = sys.stderr if outputs.stdout_is_json or patch else sys.stdout
    if fix:
        made = plan(scripts, codes)
        written = write(made)
        for line in made.lines():
            notes.write(line + "\n")
        notes.write(f"fixed {len(made.fixes)} finding(s) in {len(written)} file(s)"
                    + (f": {', '.join(written)}" if written else "") + "\n")
        notes.flush()
        report = build()
        report.metrics["fixes"] = {"written": written, "lines": made.lines()}  # for the JSON consumer
        return finish(report, outputs)
    report = build()
    fixable = sorted({f.code for f in report.findings if f.code in FIXERS})
    if fixable and not patch:  # said without planning: a plain lint stays one lint
        report.notes.append(f"`--patch` shows the edits for {', '.join(fixable)} where the fix is mechanical "
                            "(each proven by linting the result again), `--fix` writes them")
    if patch or outputs.github or outputs.json_path:
        # for the JSON / GitHub consumers the fixes are a bonus: bounded, so a large package's
        # report is not held up by a re-lint per finding (--patch plans them all)
        made = plan(scripts, codes, budget_s=None if patch else FIX_BUDGET_S)
        attach(report.findings, made)
        if patch:
            sys.stdout.write(made.diff())
            sys.stdout.flush()
            for line in made.lines():
                notes.write(line + "\n")
            notes.flush()
    return finish(report, outputs)
