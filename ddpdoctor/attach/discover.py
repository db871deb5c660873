"""Which processes on this machine are ranks of a torchrun / elastic / mp.spawn job.

A rank is found by the environment torchrun gives it (RANK, LOCAL_RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RUN_ID in /proc/PID/environ) and by the process tree:
DataLoader workers inherit that environment, so a process whose parent is a rank of the same
job is a worker, not a rank. mp.spawn children learn their rank only from
init_process_group, so their rank is their order among the parent's children.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Optional

import psutil

from ddpdoctor.core.errors import UsageError

# A rank's Flight Recorder settings: where it dumps, and the pipe that asks it to (NCCL).
FLIGHT_KEYS = ("TORCH_NCCL_DEBUG_INFO_PIPE_FILE", "TORCH_FR_DEBUG_INFO_PIPE_FILE",
               "TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "TORCH_FR_DUMP_TEMP_FILE",
               "TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE")


@dataclass
class RankProc:
    """One rank's main process."""

    rank: int
    pid: int
    local_rank: Optional[int] = None
    cmdline: str = ""
    rank_known: bool = True  # False for mp.spawn children (rank = order among siblings)
    node_rank: Optional[int] = None  # torchrun's GROUP_RANK
    flight_env: dict = field(default_factory=dict)  # its Flight Recorder settings (FLIGHT_KEYS)


@dataclass
class Job:
    """One distributed job's ranks on this machine."""

    key: str  # how it is told apart: "run id X" / "MASTER_ADDR:PORT" / "mp.spawn parent PID"
    world_size: Optional[int]
    ranks: list[RankProc] = field(default_factory=list)
    agent_pid: Optional[int] = None  # torchrun's elastic agent or the mp.spawn parent
    master: str = ""
    run_id: str = ""
    unreadable: list[int] = field(default_factory=list)  # processes whose environ was refused

    @property
    def pids(self) -> list[int]:
        return [r.pid for r in self.ranks]

    def describe(self) -> str:
        """"torchrun job (agent 1234), world size 2, ranks 0-1 here: pids 1240, 1241"."""
        who = f"agent {self.agent_pid}" if self.agent_pid else self.key
        ranks = ", ".join(f"rank {r.rank} pid {r.pid}" for r in sorted(self.ranks, key=lambda r: r.rank))
        world = f"world size {self.world_size}" if self.world_size else "world size unknown"
        return f"{self.key} ({who}), {world}: {ranks}"


def _environ(proc: psutil.Process) -> Optional[dict]:
    try:
        return proc.environ()
    except (psutil.AccessDenied, psutil.ZombieProcess):
        return None
    except psutil.Error:
        return {}


def _int(text: Optional[str]) -> Optional[int]:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _job_key(env: dict) -> str:
    if env.get("TORCHELASTIC_RUN_ID"):
        return f"torchrun run {env['TORCHELASTIC_RUN_ID']} at {env.get('MASTER_ADDR', '?')}:{env.get('MASTER_PORT', '?')}"
    return f"job at {env.get('MASTER_ADDR', '?')}:{env.get('MASTER_PORT', '?')}"


def _is_rank_env(env: Optional[dict]) -> bool:
    return bool(env) and "RANK" in env and "WORLD_SIZE" in env


def _cmdline(proc: psutil.Process) -> str:
    try:
        return " ".join(proc.cmdline())
    except psutil.Error:
        return ""


def _is_spawn_child(proc: psutil.Process) -> bool:
    text = _cmdline(proc)
    return "multiprocessing" in text and ("spawn_main" in text or "forkserver" in text)


def scan(own_pid: Optional[int] = None) -> tuple[list[Job], list[int]]:
    """Every torchrun/elastic job on this machine, and the pids whose environment could not
    be read (another user's processes, without root)."""
    own = own_pid or os.getpid()
    envs: dict[int, dict] = {}
    refused: list[int] = []
    for proc in psutil.process_iter(["pid", "ppid", "name"]):
        if proc.pid in (own, 1):
            continue
        env = _environ(proc)
        if env is None:
            refused.append(proc.pid)
        elif _is_rank_env(env):
            envs[proc.pid] = env
    jobs: dict[str, Job] = {}
    for pid, env in sorted(envs.items()):
        try:
            parent = psutil.Process(pid).ppid()
        except psutil.Error:
            continue
        parent_env = envs.get(parent)
        if parent_env is not None and parent_env.get("RANK") == env.get("RANK") \
                and _job_key(parent_env) == _job_key(env):
            continue  # a DataLoader worker (or any child) of a rank
        key = _job_key(env)
        job = jobs.setdefault(key, Job(key, _int(env.get("WORLD_SIZE")),
                                       master=f"{env.get('MASTER_ADDR', '')}:{env.get('MASTER_PORT', '')}",
                                       run_id=env.get("TORCHELASTIC_RUN_ID", "")))
        rank = _int(env.get("RANK"))
        if rank is None:
            continue
        job.master_port = _int(env.get("MASTER_PORT"))
        job.ranks.append(RankProc(rank, pid, _int(env.get("LOCAL_RANK")), _cmdline(psutil.Process(pid)),
                                  node_rank=_int(env.get("GROUP_RANK")),
                                  flight_env={k: env[k] for k in FLIGHT_KEYS if k in env}))
        if job.agent_pid is None and parent not in envs:
            job.agent_pid = parent
    for job in jobs.values():
        job.ranks.sort(key=lambda r: r.rank)
    return sorted(jobs.values(), key=lambda j: min(j.pids, default=0)), refused


def job_of(pid: int) -> Job:
    """The job a PID belongs to: the PID may be a rank, torchrun's agent, an mp.spawn parent, or
    any process above the job (the shell, `srun`, a wrapper script) with one job below it."""
    try:
        proc = psutil.Process(pid)
        proc.status()
    except psutil.NoSuchProcess:
        raise UsageError(f"no process {pid} on this machine") from None
    except psutil.Error as exc:
        raise UsageError(f"process {pid} cannot be read: {exc}") from None
    jobs, _ = scan()
    for job in jobs:
        if pid in job.pids or pid == job.agent_pid:
            return job
    # A DataLoader worker of a rank, or a child of the agent we missed: walk up the tree.
    try:
        ancestors = [p.pid for p in proc.parents()]
    except psutil.Error:
        ancestors = []
    for job in jobs:
        if any(a in job.pids for a in ancestors):
            return job
    spawned = _spawned_ranks(proc)
    if spawned:
        return spawned
    env = _environ(proc)
    if env is None:
        return _unreadable(proc)
    below = _job_below(proc, jobs)
    if below is not None:
        return below
    raise UsageError(f"process {pid} is no rank of a torchrun, elastic or mp.spawn job "
                     "(no RANK/WORLD_SIZE in its environment, and no such job among the processes "
                     "it started)")


def _job_below(proc: psutil.Process, jobs: list[Job]) -> Optional[Job]:
    """The one job started somewhere below `proc`: the PID a user has at hand is often the
    shell, the `srun` step or the wrapper script that started torchrun, not torchrun itself.
    Two jobs below it are bad input (which one is meant cannot be guessed)."""
    try:
        descendants = proc.children(recursive=True)
    except psutil.Error:
        return None
    below = {p.pid for p in descendants}
    found = [job for job in jobs if job.agent_pid in below or any(p in below for p in job.pids)]
    if not found:
        # An mp.spawn parent below it (its ranks carry no RANK until init_process_group).
        for child in sorted(descendants, key=lambda c: c.pid):
            spawned = _spawned_ranks(child)
            if spawned:
                found.append(spawned)
                break
    if len(found) > 1:
        raise UsageError(f"process {proc.pid} started {len(found)} jobs ("
                         + "; ".join(job.describe() for job in found)
                         + "): give the PID of one of them (its torchrun agent or a rank)")
    return found[0] if found else None


def _spawned_ranks(parent: psutil.Process) -> Optional[Job]:
    """An mp.spawn parent: its multiprocessing children are the ranks, in start order."""
    try:
        children = [c for c in parent.children() if _is_spawn_child(c)]
    except psutil.Error:
        return None
    if not children:
        return None
    children.sort(key=lambda c: (c.create_time(), c.pid))
    env = _environ(children[0]) or {}
    job = Job(f"mp.spawn job (parent {parent.pid})", len(children), agent_pid=parent.pid,
              master=f"{env.get('MASTER_ADDR', '')}:{env.get('MASTER_PORT', '')}")
    for index, child in enumerate(children):
        job.ranks.append(RankProc(index, child.pid, index, _cmdline(child), rank_known=False))
    return job


def jobs_for(pids: list[int]) -> Job:
    """The one job the given PIDs belong to; PIDs of different jobs are bad input."""
    jobs = []
    for pid in pids:
        job = job_of(pid)
        if all(j.key != job.key for j in jobs):
            jobs.append(job)
    if len(jobs) > 1:
        raise UsageError("the PIDs belong to different jobs: " + "; ".join(j.key for j in jobs))
    return jobs[0]


def _unreadable(proc: psutil.Process) -> Job:
    """A process whose environment we may not read (another user's, no CAP_SYS_PTRACE): from
    its command line alone, torchrun's agent (its children are the ranks, in start order) or
    a rank itself. What can still be read is; the report says ranks are numbered by order."""
    text = _cmdline(proc)
    if "torch.distributed.run" in text or "torchrun" in text or "torch.distributed.launch" in text:
        try:
            children = sorted(proc.children(), key=lambda c: (c.create_time(), c.pid))
        except psutil.Error:
            children = []
        job = Job(f"torchrun job (agent {proc.pid}, environment unreadable)", len(children) or None,
                  agent_pid=proc.pid, unreadable=[proc.pid])
        for index, child in enumerate(children):
            job.ranks.append(RankProc(index, child.pid, index, _cmdline(child), rank_known=False))
        if job.ranks:
            return job
    if "python" not in text.lower() and "torch" not in text.lower():
        # PID 1, a shell, a daemon: nothing says it is a rank at all, and calling it rank 0
        # would judge a process that is none
        raise UsageError(f"process {proc.pid} ({text[:60] or '?'}) is not a Python process and its environment "
                         "cannot be read (another user's, or no permission): no rank to attach to; give "
                         "a rank's PID, as the user who runs the job")
    return Job(f"process {proc.pid} (environment unreadable)", None, unreadable=[proc.pid],
               ranks=[RankProc(0, proc.pid, None, text, rank_known=False)])
