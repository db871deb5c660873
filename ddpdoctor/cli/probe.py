"""The `probe` and `report` commands: flags in torchrun's spelling, the script's args after `--`."""

from __future__ import annotations

import os
from typing import List, Optional

import typer

from ddpdoctor.cli.options import (FailOnOpt, ForceOpt, TraceOpt, GithubOpt, IgnoreOpt, JsonOpt, JunitOpt,
                                   QuietOpt, VerboseOpt, finish, gate, report_outputs)
from ddpdoctor.core import defaults
from ddpdoctor.core.errors import UsageError
from ddpdoctor.probe.options import ProbeOptions


def probe_command(
    script: str = typer.Argument(..., help="The training script (or a module name with -m)."),
    args: Optional[List[str]] = typer.Argument(None, help="The script's own arguments, after `--`."),
    module: bool = typer.Option(False, "-m", help="SCRIPT is a module name, run like `python -m`."),
    nproc_per_node: Optional[int] = typer.Option(None, "--nproc-per-node", "--nproc_per_node", help=f"Processes per node (default {defaults.NPROC_PER_NODE}, or $SLURM_GPUS_ON_NODE)."),
    nnodes: Optional[int] = typer.Option(None, "--nnodes", help=f"Number of nodes (default {defaults.NNODES}, or SLURM's, or a PyTorchJob pod's $PET_NNODES / $WORLD_SIZE)."),
    node_rank: Optional[int] = typer.Option(None, "--node-rank", "--node_rank", help="This node's rank (default 0, or $SLURM_NODEID, or a pod's $PET_NODE_RANK / $RANK)."),
    rdzv_endpoint: Optional[str] = typer.Option(None, "--rdzv-endpoint", "--rdzv_endpoint", help="HOST:PORT of the c10d rendezvous."),
    master_addr: Optional[str] = typer.Option(None, "--master-addr", "--master_addr"),
    master_port: Optional[int] = typer.Option(None, "--master-port", "--master_port"),
    log_limit: float = typer.Option(defaults.LOG_LIMIT_MB, "--log-limit", metavar="MB", help="Keep at most this much of each rank's output in job.log: the first 3/4 and the last 1/4, with a line saying what was dropped."),
    gather_port: Optional[int] = typer.Option(None, "--gather-port", help="Multi-node: the port on node 0 where its ddpdoctor gathers every node's telemetry (default: the rendezvous port + 1)."),
    gather_token: Optional[str] = typer.Option(None, "--gather-token", envvar="DDPDOCTOR_GATHER_TOKEN", show_envvar=False, metavar="SECRET", help="Multi-node: a secret every node of the job shares (or $DDPDOCTOR_GATHER_TOKEN); every message on the gather port is authenticated with it, both ways. Without one the report says the verdict relied on an unauthenticated port."),
    max_steps: int = typer.Option(defaults.MAX_STEPS, "--max-steps", help="Stop every rank after this many optimizer steps (0: no limit)."),
    steps_per_epoch: int = typer.Option(defaults.STEPS_PER_EPOCH, "--steps-per-epoch", help="End each DataLoader epoch after this many batches (0: no limit)."),
    stall_timeout: Optional[float] = typer.Option(None, "--stall-timeout", help=f"Seconds without progress before the job counts as hung (default: adaptive, at least {defaults.STALL_FLOOR_S:g})."),
    timeout: float = typer.Option(defaults.TIMEOUT_S, "--timeout", help="Seconds before the whole probe is ended."),
    launcher: str = typer.Option("auto", "--launcher", metavar="auto|torchrun|none", help="How ranks start: torchrun, or none for scripts that start their own (mp.spawn). auto decides from the source."),
    run_dir: Optional[str] = typer.Option(None, "--run-dir", help="Where telemetry and the report go (default ./ddpdoctor-runs/...)."),
    cpu: bool = typer.Option(False, "--cpu/--no-cpu", help="Run a script written for CUDA and NCCL on the CPU with gloo, unchanged (CI runners without a GPU); the report lists what was remapped."),
    scaling: Optional[str] = typer.Option(None, "--scaling", metavar="N,N,...", help="Also probe the script at each of these world sizes, one after another (e.g. 1,2,4), and report throughput and scaling efficiency."),
    trace: Optional[str] = TraceOpt,
    quiet_script: bool = typer.Option(False, "--quiet-script", help="Do not show the script's own output while it runs (RUN_DIR/job.log keeps it)."),
    verify_fix: bool = typer.Option(False, "--verify-fix", help="Rerun the script with each DDP setting the performance findings suggest (bucket_cap_mb, find_unused_parameters, ...; set by the probe, the script unchanged) and show the measured step time beside the estimate."),
    baseline: Optional[str] = typer.Option(None, "--baseline", metavar="REPORT.json", help="An earlier JSON report of this probe: fail (DDP607) if step time, exposed communication, all-reduce calls or bytes per step, or bus bandwidth got worse beyond the runs' own noise."),
    json_path: Optional[str] = JsonOpt,
    junit_path: Optional[str] = JunitOpt,
    github: bool = GithubOpt,
    fail_on: str = FailOnOpt,
    ignore: List[str] = IgnoreOpt,
    verbose: bool = VerboseOpt,
    quiet: bool = QuietOpt,
    force: bool = ForceOpt,
    fix: bool = typer.Option(False, "--fix", help="Write the fixes of the static findings (DDP8xx) the run "
                             "confirmed, where the fix is mechanical and safe (as `lint --fix`)."),
    patch: bool = typer.Option(False, "--patch", help="Print those fixes as a unified diff and change nothing."),
) -> int:
    """Run SCRIPT as a short instrumented DDP job and report what is wrong with it."""
    from ddpdoctor.probe.driver import probe
    from ddpdoctor.probe.launch.scaling import parse_sizes
    from ddpdoctor.probe.launch import kubernetes
    from ddpdoctor.probe.launch.slurm import job_settings

    severity, codes = gate(fail_on, ignore)
    if fix and patch:
        raise UsageError("--fix writes the fixes and --patch only shows them: give one of the two")
    if patch and json_path == "-":
        raise UsageError("--patch prints the diff on stdout: write the JSON report to a file (--json FILE)")
    # Inside a SLURM allocation, or a PyTorchJob / Trainer pod, what the flags leave unsaid comes
    # from the allocation or the pod (launch/slurm.py, launch/kubernetes.py).
    slurm = ((job_settings(os.environ) or kubernetes.job_settings(os.environ))
             if nnodes is None and rdzv_endpoint is None else {})
    pick = lambda flag, name, default: flag if flag is not None else slurm.get(name, default)  # noqa: E731
    options = ProbeOptions(
        script=script, args=list(args or []), module=module,
        nproc_per_node=pick(nproc_per_node, "nproc_per_node", defaults.NPROC_PER_NODE),
        nnodes=pick(nnodes, "nnodes", defaults.NNODES),
        node_rank=pick(node_rank, "node_rank", defaults.NODE_RANK), rdzv_endpoint=pick(rdzv_endpoint, "rdzv_endpoint", None),
        master_addr=pick(master_addr, "master_addr", None), master_port=pick(master_port, "master_port", None),
        gather_port=gather_port, gather_token=gather_token, log_limit_mb=log_limit, max_steps=max_steps, steps_per_epoch=steps_per_epoch,
        stall_timeout_s=stall_timeout, timeout_s=timeout, run_dir=run_dir, launcher=launcher,
        cpu=cpu, scaling=parse_sizes(scaling) if scaling is not None else [],
        verify_fix=verify_fix, baseline=baseline)
    # While it runs: a live table on a terminal, plain lines in a log; none with -q, and no
    # table when stdout carries the JSON report (launch/live_feed.py).
    options.live = "off" if quiet else "plain" if json_path == "-" else "auto"
    options.quiet_script = quiet_script
    options.validate()
    outputs = report_outputs(json_path, junit_path, github, verbose, quiet, trace=trace,
                             inputs=[script_file(options)] + ([baseline] if baseline else []),
                             script_args=options.args,
                             run_dir=options.run_dir, force=force)
    report = probe(options, severity, codes, trace=trace)
    pod = kubernetes.pod_identity(os.environ)
    if pod:  # the report names where it ran: a pod's logs are found by pod and node
        report.notes.append(f"ran in {kubernetes.describe(pod)}")
        report.metrics["kubernetes"] = pod
    if report.metrics.get("node_role") == "node":
        return other_node_output(report, outputs)
    if fix or patch or outputs.github or outputs.json_path:
        import sys

        from ddpdoctor.lint.fix.apply import offer_for_probe

        # --json / --github alone: the confirmed findings carry their fix, nothing is printed
        offer_for_probe(report.findings, script_file(options), codes, fix, patch,
                        (sys.stderr if outputs.stdout_is_json or patch else sys.stdout) if fix or patch else None)
    return finish(report, outputs)


def other_node_output(report, outputs) -> int:
    """A node other than node 0 prints one line: where the one report is, and its verdict; it
    exits with node 0's code. --json is the report it was given: node 0's, as node 0 sent it; with
    no verdict from node 0, this node's own (incomplete or error: never a silent missing file)."""
    import sys

    from ddpdoctor.core import redact
    from ddpdoctor.core.files import write_atomic
    from ddpdoctor.report import json as json_report

    line = report.metrics.get("node_line", "")
    if not outputs.quiet and line:
        print(f"ddpdoctor probe: {line}", file=sys.stderr)
    if outputs.json_path:
        text = json_report.render(report, redact.secret_values())
        if outputs.stdout_is_json:
            sys.stdout.write(text)
        else:
            write_atomic(outputs.json_path, text)
    return report.exit_code


def report_command(
    paths: List[str] = typer.Argument(..., metavar="EVIDENCE...", help="A probe's run dir, finished or killed; a folder of Flight Recorder dumps (TORCH_FR_DUMP_TEMP_FILE); or what a dead job left, in any mix: its logs (.gz too), torchrun's --log-dir, error files, dumps, dmesg."),
    trace: Optional[str] = TraceOpt,
    json_path: Optional[str] = JsonOpt,
    junit_path: Optional[str] = JunitOpt,
    github: bool = GithubOpt,
    fail_on: str = FailOnOpt,
    ignore: List[str] = IgnoreOpt,
    verbose: bool = VerboseOpt,
    quiet: bool = QuietOpt,
    force: bool = ForceOpt,
) -> int:
    """Re-analyse a probe's run dir or a folder of Flight Recorder dumps; or read what a dead job
    left and name its first cause and the consequences."""
    from ddpdoctor.attach import flight
    from ddpdoctor.probe.driver import analyse

    severity, codes = gate(fail_on, ignore)
    run_dir = paths[0]
    if len(paths) > 1 or not (flight.is_dump_dir(run_dir) or _is_run_dir(run_dir)):
        from ddpdoctor.postmortem.report import postmortem

        outputs = report_outputs(json_path, junit_path, github, verbose, quiet, inputs=list(paths), force=force)
        return finish(postmortem(list(paths), severity, codes), outputs)
    if flight.is_dump_dir(run_dir):
        outputs = report_outputs(json_path, junit_path, github, verbose, quiet, force=force)
        return finish(flight.report(run_dir, severity, codes), outputs)
    outputs = report_outputs(json_path, junit_path, github, verbose, quiet, trace=trace,
                             run_dir=run_dir, force=force)
    return finish(analyse(run_dir, severity, codes, trace), outputs)


def _is_run_dir(path: str) -> bool:
    """A probe's (or attach's) run dir: its meta file or a rank's telemetry is there."""
    from pathlib import Path

    from ddpdoctor.probe.records.rundir import META_FILE, RANK_TELEMETRY_GLOB

    folder = Path(path)
    return folder.is_dir() and ((folder / META_FILE).exists() or any(folder.glob(RANK_TELEMETRY_GLOB)))


def script_file(options: ProbeOptions) -> str:
    """The file the job runs: the script, or the source of the module run with -m."""
    if options.module:
        from ddpdoctor.probe.launch.choice import module_source_path

        return module_source_path(options.script)
    return options.script
