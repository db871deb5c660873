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
) -> int:
    """Read SCRIPT without running it and report DDP bugs visible in the source (DDP8xx):
    collectives under a rank test, DataLoaders without a DistributedSampler, set_epoch never
    called, accumulation without no_sync, torch.save on every rank (or one rank per node)."""
    from ddpdoctor.core.errors import UsageError
    from ddpdoctor.lint.run import changed_files, expand_paths, lint, lint_files

    severity, codes = gate(fail_on, ignore)
    scripts = list(scripts or [])
    if diff:
        import os

        rev = "HEAD"
        if scripts and not os.path.exists(scripts[0]):
            rev = scripts.pop(0)
        paths = changed_files(rev) + scripts
        outputs = report_outputs(json_path, junit_path, github, verbose, quiet, inputs=paths, force=force)
        return finish(lint_files(paths, severity, codes, f"changed against {rev}"), outputs)
    if not scripts:
        raise UsageError("lint needs a script (or --files FILE..., or --diff [REV])")
    outputs = report_outputs(json_path, junit_path, github, verbose, quiet, inputs=scripts, force=force)
    if files or len(scripts) > 1:
        return finish(lint_files(expand_paths(scripts), severity, codes, "given"), outputs)
    return finish(lint(scripts[0], severity, codes), outputs)
