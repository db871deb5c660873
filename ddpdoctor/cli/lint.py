"""The `lint` command: read a training script (and its local imports) without running it."""

from __future__ import annotations

from typing import List, Optional

import typer

from ddpdoctor.cli.options import (FailOnOpt, ForceOpt, GithubOpt, IgnoreOpt, JsonOpt, JunitOpt,
                                   QuietOpt, VerboseOpt, finish, gate, report_outputs)


def lint_command(
    script: str = typer.Argument(..., help="The training script (its local imports are read too)."),
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
    called, accumulation without no_sync, torch.save on every rank."""
    from ddpdoctor.lint.run import lint

    severity, codes = gate(fail_on, ignore)
    outputs = report_outputs(json_path, junit_path, github, verbose, quiet, inputs=[script], force=force)
    return finish(lint(script, severity, codes), outputs)
