"""One attach on this machine: find the job, observe its ranks for a few seconds, judge.

Nothing here signals, pauses or changes a rank: py-spy reads the ranks' memory with
--nonblocking, /proc is read-only. Only `end_job` (the user's --end, after the report) signals.
"""

from __future__ import annotations

import os
import signal
import socket
import time
from dataclasses import dataclass, field
from typing import Optional

import psutil

from ddpdoctor.attach import procstate
from ddpdoctor.attach.discover import Job, jobs_for, scan
from ddpdoctor.attach.observation import Observation, RankObservation, rank_cwd
from ddpdoctor.attach.judge import judge
from ddpdoctor.attach.sample import PTRACE_FIX, Recorders
from ddpdoctor.core.errors import UsageError
from ddpdoctor.core.findings import Severity
from ddpdoctor.probe.run_model.stack_text import relative_to
from ddpdoctor.report.model import Report


@dataclass
class AttachOptions:
    pids: list[int] = field(default_factory=list)
    master_port: Optional[int] = None
    duration_s: float = 5.0
    rate: int = 50
    fail_on: Severity = Severity.ERROR
    ignore: set[str] = field(default_factory=set)
    end: bool = False
    nodes_file: Optional[str] = None
    slurm_job: Optional[str] = None
    ssh: Optional[object] = None  # preflight.transport.ssh.SshOptions


def choose_job(pids: list[int], master_port: Optional[int] = None,
               node_rank: Optional[int] = None) -> Job:
    """The job to diagnose: the one the PIDs belong to, or the only one on this machine (with
    this MASTER_PORT, when given). Several jobs (or none) without PIDs is bad input, listing
    them. `node_rank` keeps the ranks of that torchrun node (GROUP_RANK) only."""
    if pids:
        return _node_ranks(jobs_for(pids), node_rank)
    jobs, refused = scan()
    if master_port is not None:
        jobs = [j for j in jobs if j.master_port == master_port]
    if len(jobs) == 1:
        return _node_ranks(jobs[0], node_rank)
    where = f" with MASTER_PORT {master_port}" if master_port is not None else ""
    if not jobs:
        extra = (f" ({len(refused)} processes of other users could not be read: run as root to "
                 "see their jobs)" if refused and os.geteuid() != 0 else "")
        raise UsageError(f"no torchrun, elastic or mp.spawn job{where} is running on this machine"
                         f"{extra}; give a PID: ddpdoctor attach PID")
    listing = "; ".join(f"[{i + 1}] {j.describe()}" for i, j in enumerate(jobs))
    raise UsageError(f"{len(jobs)} jobs{where} are running here, choose one with a PID (the "
                     f"torchrun agent's or any rank's) or --master-port: ddpdoctor attach PID. {listing}")


def _node_ranks(job: Job, node_rank: Optional[int]) -> Job:
    if node_rank is None or not any(r.node_rank is not None for r in job.ranks):
        return job
    job.ranks = [r for r in job.ranks if r.node_rank == node_rank]
    return job


def observe(job: Job, duration_s: float, rate: int, host: Optional[str] = None) -> Observation:
    """Sample every rank of the job on this machine for `duration_s`: py-spy stacks and /proc
    before and after. Ranks that exit meanwhile are reported as such."""
    host = host or socket.gethostname()
    duration_s = float(max(1, int(round(duration_s))))  # py-spy's --duration is whole seconds
    pids = job.pids
    cwds = {pid: rank_cwd(pid) for pid in pids}
    starts = {pid: procstate.read(pid) for pid in pids}
    recorders = Recorders(pids, duration_s, rate)
    watch = procstate.IoWatch(pids)
    try:
        watch.tick()
        recorders.start()
        samples = recorders.collect(watch.tick)
    finally:
        recorders.stop()
    ends = {pid: procstate.read(pid) for pid in pids}
    # The window judged is the one sampled: every rank gone after 3 s is a 3 s window, not 6.
    sampled_s = time.monotonic() - watch.started
    if pids and all(pid in watch.gone_at for pid in pids):
        sampled_s = max(watch.gone_at.values())
    observation = Observation(job.key, job.world_size, round(min(duration_s, sampled_s), 2))
    for proc in job.ranks:
        got = samples[proc.pid]
        delta = procstate.delta(starts[proc.pid], ends[proc.pid])
        facts = delta.to_dict()
        quiet = watch.quiet_s(proc.pid)
        facts["io_quiet_s"] = None if quiet is None else round(min(quiet, delta.seconds), 2)
        busy = watch.quiet_cpu_share(proc.pid)
        facts["quiet_cpu_share"] = None if busy is None else round(busy, 3)
        facts["gpu"] = procstate.uses_gpu(proc.pid)
        exited = got.exited or not delta.alive_at_end
        error = got.error
        if exited and not error:
            error = "the process exited while it was sampled"
        if exited:
            gone = watch.gone_at.get(proc.pid)
            facts["exited_after_s"] = round(min(gone, duration_s), 2) if gone is not None else None
            facts["exit_status"] = watch.exit_status.get(proc.pid) or None
        observation.ranks.append(RankObservation(
            proc.rank, proc.pid, host, [tuple(relative_to(s, cwds[proc.pid])) for s in got.stacks],
            error, got.refused, exited, facts, proc.rank_known, proc.local_rank))
    refused = [r for r in observation.ranks if r.refused]
    if refused:
        observation.notes.append(
            f"ptrace was refused for rank(s) {', '.join(str(r.rank) for r in refused)}: no stacks, "
            f"only /proc was read. Fix: {PTRACE_FIX}")
    elif recorders.missing:
        observation.notes.append(recorders.missing)
    if job.unreadable:
        observation.notes.append("the job's environment could not be read (another user's "
                                 "processes): ranks are numbered by start order")
    elif any(not r.rank_known for r in observation.ranks):
        observation.notes.append("mp.spawn job: ranks are numbered by start order (their RANK is "
                                 "set inside the process, not in its environment)")
    if job.world_size and len(job.ranks) < job.world_size:
        observation.notes.append(f"{len(job.ranks)} of {job.world_size} ranks run on this machine: "
                                 "the others are on other nodes (attach to all with --nodes)")
    return observation


def fetch_dumps(job: Job, observation: Observation) -> None:
    """An NCCL job started with the dump pipe: ask each rank for its Flight Recorder dump, for
    the collective checks to line the ranks up (with sequence numbers); else say what cannot be
    seen."""
    from ddpdoctor.attach import flight, flight_pipe

    nccl = any(flight_pipe.uses_nccl(pid) for pid in job.pids)
    note = flight_pipe.job_without_pipe_note(job, nccl)
    if note:
        observation.notes.append(note)
    files, note = flight_pipe.request_dumps(job)
    if note:
        observation.notes.append(note)
    if not files:
        return
    dumps, problems = flight.load_files(files)
    observation.notes.extend(problems)
    if len(dumps) > 1:
        observation.flight = flight.DumpSet(dumps)


def report_for(observation: Observation, options: AttachOptions, header: str) -> Report:
    verdict = judge(observation, options.ignore)
    return Report(command="attach", results=verdict.results, fail_on=options.fail_on,
                  header=header, tables=[verdict.table], notes=verdict.notes,
                  metrics={"state": verdict.state, "window_s": observation.duration_s,
                           "ranks": len(observation.ranks), "nodes": observation.nodes})


def attach_nodes(options: AttachOptions) -> Report:
    """--nodes / --slurm-job: each node observes its own ranks, this ddpdoctor judges them all.
    --end is refused here: ending a job across nodes is the scheduler's (scancel) or torchrun's."""
    from ddpdoctor.attach import nodes
    from ddpdoctor.preflight.hosts import parse_host_file

    started = time.monotonic()
    if options.slurm_job:
        python = options.ssh.remote_python if options.ssh is not None else "python3"
        observation = nodes.gather_slurm(options.slurm_job, python, options.duration_s,
                                         options.rate, options.master_port)
        where = f"SLURM job {options.slurm_job}"
    else:
        hosts = [h.name for h in parse_host_file(options.nodes_file)]
        observation = nodes.gather_ssh(hosts, options.ssh, options.duration_s, options.rate,
                                       options.master_port)
        where = f"{len(hosts)} node(s) of {options.nodes_file}"
    header = (f"{observation.job or 'job'} on {where}, world size "
              f"{observation.world_size or '?'}: {len(observation.ranks)} rank(s) observed; "
              f"sampled {options.duration_s:g} s")
    report = report_for(observation, options, header)
    report.metrics["seconds_to_verdict"] = round(time.monotonic() - started, 2)
    return report


def attach(options: AttachOptions) -> Report:
    if options.nodes_file or options.slurm_job:
        return attach_nodes(options)
    started = time.monotonic()
    job = choose_job(options.pids, options.master_port)
    observation = observe(job, options.duration_s, options.rate)
    fetch_dumps(job, observation)
    report = report_for(observation, options, f"{job.describe()}; sampled {options.duration_s:g} s")
    report.metrics["seconds_to_verdict"] = round(time.monotonic() - started, 2)
    if options.end:
        report.notes.append(end_job(job))
    return report


def end_job(job: Job) -> str:
    """--end: SIGTERM to torchrun's agent (which ends its ranks in order), else to each rank."""
    targets = [job.agent_pid] if job.agent_pid else job.pids
    sent = []
    for pid in targets:
        try:
            psutil.Process(pid).send_signal(signal.SIGTERM)
            sent.append(pid)
        except psutil.Error:
            continue
    return f"--end: sent SIGTERM to pid(s) {', '.join(map(str, sent)) or 'none (already gone)'}"
