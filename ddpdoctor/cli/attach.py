"""`ddpdoctor attach [PID ...]`: diagnose a job that is already running, without changing it."""

from __future__ import annotations

from typing import List, Optional

import typer

from ddpdoctor.cli.options import (FailOnOpt, ForceOpt, GithubOpt, IgnoreOpt, JsonOpt, JunitOpt,
                                   QuietOpt, VerboseOpt, finish, gate, report_outputs)
from ddpdoctor.core.errors import UsageError


def attach_command(
    pids: Optional[List[int]] = typer.Argument(None, help="A PID of the job: torchrun's agent, any rank, or an mp.spawn parent. Without one: the only job on this machine."),
    duration: float = typer.Option(5.0, "--duration", metavar="SECONDS", help="How long to sample every rank (whole seconds, at least 1)."),
    rate: int = typer.Option(50, "--rate", metavar="HZ", help="Stack samples per second per rank."),
    master_port: Optional[int] = typer.Option(None, "--master-port", min=1, max=65535, help="Choose the job by its MASTER_PORT (where several run here, and on every node)."),
    nodes: Optional[str] = typer.Option(None, "--nodes", metavar="HOSTS_FILE", help="Every node of the job, in node-rank order: each observes its own ranks over ssh, this one judges them all."),
    slurm_job: Optional[str] = typer.Option(None, "--slurm-job", metavar="ID", help="Under SLURM: one `srun --jobid ID --overlap` task per node observes its ranks."),
    ssh_user: Optional[str] = typer.Option(None, "--ssh-user", help="--nodes: log in as this user (ssh -l)."),
    ssh_port: Optional[int] = typer.Option(None, "--ssh-port", min=1, max=65535, help="--nodes: ssh port (ssh -p)."),
    ssh_option: List[str] = typer.Option([], "--ssh-option", metavar="KEY=VALUE", help="--nodes: passed to ssh as -o KEY=VALUE (repeatable)."),
    remote_python: str = typer.Option("python3", "--remote-python", metavar="PYTHON", help="--nodes/--slurm-job: the Python with ddpdoctor on the nodes."),
    end: bool = typer.Option(False, "--end", help="After the report, end the job (SIGTERM to torchrun's agent, else to each rank). Off by default: attach never touches the job."),
    json_path: Optional[str] = JsonOpt,
    junit_path: Optional[str] = JunitOpt,
    github: bool = GithubOpt,
    fail_on: str = FailOnOpt,
    ignore: List[str] = IgnoreOpt,
    verbose: bool = VerboseOpt,
    quiet: bool = QuietOpt,
    force: bool = ForceOpt,
) -> int:
    """Diagnose a running DDP job (hung, straggler, healthy) from its ranks' stacks, without stopping it."""
    from ddpdoctor.attach.driver import AttachOptions, attach

    if not 0.5 <= duration <= 600:
        raise UsageError(f"--duration must be between 0.5 and 600 seconds (got {duration:g})")
    if not 1 <= rate <= 1000:
        raise UsageError(f"--rate must be between 1 and 1000 samples per second (got {rate})")
    from ddpdoctor.preflight.transport.ssh import SshOptions

    if nodes and slurm_job:
        raise UsageError("--nodes and --slurm-job are two ways to reach the nodes: give one")
    if (nodes or slurm_job) and (pids or end):
        raise UsageError("--nodes/--slurm-job find the job on every node themselves: give no PID "
                         "and no --end (end a multi-node job with scancel or on its torchrun)")
    severity, codes = gate(fail_on, ignore)
    ssh = SshOptions(ssh_user, ssh_port, list(ssh_option), remote_python).validate()
    outputs = report_outputs(json_path, junit_path, github, verbose, quiet, force=force,
                             inputs=[nodes] if nodes else ())
    options = AttachOptions(list(pids or []), master_port, duration, rate, severity, codes, end,
                            nodes, slurm_job, ssh)
    return finish(attach(options), outputs)


def env_command(
    shell: bool = typer.Option(False, "--export", help="Print `export NAME=value` lines to paste or eval."),
) -> int:
    """Print the environment to add to a launch so that Flight Recorder can be read later."""
    import sys

    from ddpdoctor.attach.flight_env import render

    sys.stdout.write(render(export=shell))
    return 0
