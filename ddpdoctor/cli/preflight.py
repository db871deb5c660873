"""The `preflight` and `facts` commands: flags in torchrun's spelling where torchrun has one."""

from __future__ import annotations

import json
import sys
from typing import List, Optional

import typer
from rich.console import Console
from rich.markup import escape

from ddpdoctor.cli.options import (FailOnOpt, GithubOpt, IgnoreOpt, JsonOpt, JunitOpt, QuietOpt,
                                   VerboseOpt, finish, gate, report_outputs)
from ddpdoctor.cli.options import ForceOpt
from ddpdoctor.core import defaults


def preflight_command(
    nodes: Optional[str] = typer.Option(None, "--nodes", metavar="FILE", help="Host list: plain lines, `host slots=N`, `host:N`, SLURM hostlists. Default: $SLURM_JOB_NODELIST, else this machine."),
    nproc_per_node: Optional[int] = typer.Option(None, "--nproc-per-node", "--nproc_per_node", min=1, help="Processes per node (default: the list's slots, else 1)."),
    world_size: Optional[int] = typer.Option(None, "--world-size", "--world_size", min=1, help="The world size the job will ask for; checked against nodes x processes."),
    master_addr: Optional[str] = typer.Option(None, "--master-addr", "--master_addr", help="Rendezvous host (default: the first host of the list)."),
    master_port: int = typer.Option(defaults.MASTER_PORT, "--master-port", "--master_port", min=1, max=65535, help="Rendezvous port."),
    backend: str = typer.Option("auto", "--backend", metavar="auto|nccl|gloo", help="auto: nccl when every node has a GPU, else gloo."),
    via: str = typer.Option("auto", "--via", metavar="auto|local|ssh|store", help="auto: this machine in-process, every other host over ssh. store: run the same command on every node (srun); they meet in a TCPStore on the master."),
    node_rank: Optional[int] = typer.Option(None, "--node-rank", "--node_rank", min=0, help="With --via store: this machine is entry N (from 0) of the host list (default: found by name or address)."),
    ssh_user: Optional[str] = typer.Option(None, "--ssh-user", help="Log in as this user (ssh -l)."),
    ssh_port: Optional[int] = typer.Option(None, "--ssh-port", min=1, max=65535, help="ssh port (ssh -p)."),
    ssh_option: List[str] = typer.Option([], "--ssh-option", metavar="KEY=VALUE", help="Passed to ssh as -o KEY=VALUE (repeatable)."),
    remote_python: str = typer.Option(defaults.REMOTE_PYTHON, "--remote-python", metavar="PYTHON", help="The Python to run on remote nodes (the one your job uses, e.g. a venv's)."),
    timeout: float = typer.Option(defaults.PREFLIGHT_TIMEOUT_S, "--timeout", help="Seconds allowed for each node (ssh included)."),
    fanout: int = typer.Option(defaults.FANOUT, "--fanout", min=1, help="Nodes asked at the same time."),
    collective: bool = typer.Option(False, "--collective", help="Once the facts are sound, run a real all-reduce across every node and process (gloo; NCCL where GPUs are) and pairwise node tests (DDP107). Needs torch on every node."),
    facts: List[str] = typer.Option([], "--facts", metavar="FILE", help="A recorded `ddpdoctor facts --json` file standing in for the host of the list with its hostname (repeatable)."),
    json_path: Optional[str] = JsonOpt,
    junit_path: Optional[str] = JunitOpt,
    github: bool = GithubOpt,
    fail_on: str = FailOnOpt,
    ignore: List[str] = IgnoreOpt,
    verbose: bool = VerboseOpt,
    quiet: bool = QuietOpt,
    force: bool = ForceOpt,
) -> int:
    """Check the machines before a DDP job: hosts resolve, the rendezvous port is free and
    reachable, world size adds up, NCCL is usable, versions match across nodes."""
    from ddpdoctor.preflight.run import PreflightOptions, run_preflight
    from ddpdoctor.preflight.transport.ssh import SshOptions

    severity, codes = gate(fail_on, ignore)
    options = PreflightOptions(
        nodes_file=nodes, nproc_per_node=nproc_per_node, world_size=world_size,
        master_addr=master_addr, master_port=master_port, backend=backend.strip().lower(),
        via=via.strip().lower(),
        ssh=SshOptions(user=ssh_user, port=ssh_port, options=list(ssh_option), remote_python=remote_python),
        timeout=timeout, fanout=fanout, facts_files=list(facts), fail_on=severity, ignore=codes,
        collective=collective, node_rank=node_rank,
        report_files=[p for p in (json_path, junit_path) if p])
    outputs = report_outputs(json_path, junit_path, github, verbose, quiet,
                             inputs=[nodes or "", *facts], force=force)
    from ddpdoctor.report.live import HostProgress

    # On a terminal, when asking the hosts takes more than a second: hosts answered / total.
    options.progress = HostProgress(None if quiet or json_path == "-" else Console(file=sys.stderr))
    with options.progress:
        report = run_preflight(options)
    role = report.metrics.get("store_role")
    if role in ("node", "idle"):
        return _store_node_output(report, outputs)
    return finish(report, outputs)


def _store_node_output(report, outputs) -> int:
    """A store-mode node other than the master: the master prints (and writes) the report; this
    node says where it is - on stderr, so that `srun ... --json -` carries one JSON document - and
    writes no file (a shared filesystem would have every node overwrite the master's)."""
    from ddpdoctor.report import terminal

    console = Console(file=sys.stderr, highlight=False, soft_wrap=True)
    if outputs.quiet:
        return report.exit_code
    role, node = report.metrics.get("store_role"), report.metrics.get("this_node", "this node")
    if role == "idle":
        console.print(f"ddpdoctor preflight: {escape(report.header)}")
    elif "report_where" in report.metrics:
        findings = report.findings
        errors = sum(1 for f in findings if f.severity.value == "error")
        warnings = sum(1 for f in findings if f.severity.value == "warning")
        console.print(f"ddpdoctor preflight (store mode): {escape(node)} published its facts to "
                      f"{escape(str(report.metrics.get('master', '?')))}; the report is "
                      f"{escape(report.metrics['report_where'])}: {report.status.upper()}, {errors} error(s), "
                      f"{warnings} warning(s); exit {report.exit_code}")
        if report.metrics.get("node_note"):
            console.print(f"ddpdoctor preflight (store mode): {escape(report.metrics['node_note'])}")
    else:
        terminal.render(report, console, verbose=outputs.verbose)
    return report.exit_code


def facts_command(
    json_out: bool = typer.Option(False, "--json", help="Print the facts as JSON (what `preflight --facts` reads)."),
    timeout: float = typer.Option(defaults.PREFLIGHT_TIMEOUT_S, "--timeout", help="Seconds allowed for gathering."),
) -> int:
    """Print this machine's facts: names, addresses, interfaces, Python/torch/CUDA/NCCL/driver, GPUs."""
    from ddpdoctor.core.errors import ToolFailure, UsageError
    from ddpdoctor.preflight.node.facts import NodeFacts
    from ddpdoctor.preflight.transport import FactsRequest
    from ddpdoctor.preflight.transport.local import facts_here

    from ddpdoctor.preflight.run import MAX_TIMEOUT_S

    if not 0 < timeout <= MAX_TIMEOUT_S:
        raise UsageError(f"--timeout must be more than 0 and at most {MAX_TIMEOUT_S:.0f} seconds "
                         f"(got {timeout:g})")
    found = facts_here(FactsRequest(timeout=timeout))
    if not isinstance(found, NodeFacts):
        raise ToolFailure(found.message)
    if json_out:
        sys.stdout.write(found.to_json() + "\n")
        return 0
    console = Console(highlight=False)
    for key, value in found.to_dict().items():
        if isinstance(value, (dict, list)):
            value = json.dumps(value)
        console.print(f"[bold]{key:<20}[/] {escape(str(value))}", soft_wrap=True)
    return 0
