"""Finding and ending every process of a probe job, whatever state it is in.

A job's processes are the launcher's descendants plus anything carrying the run's id in its
environment (a DataLoader worker orphaned by a rank's exit, a process the script started with
setsid). ddpdoctor makes itself a child subreaper so that orphans stay its children and are
reaped, not left as zombies.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Iterable

import psutil

from ddpdoctor.probe.inrank.config import ENV_RUN_ID
from ddpdoctor.probe.inrank.parent_death import PR_SET_CHILD_SUBREAPER, die_with_parent, prctl

__all__ = ["die_with_parent", "subreaper", "job_processes"]


# How long ranks still ending get, after the script's own process returned, before the SIGTERM.
RANKS_FINISH_S = 10.0

_OURS_BEFORE: set[int] = set()  # this process's children when the job began: never the job's


def subreaper(on: bool) -> None:
    """While a job runs, its orphans (a DataLoader worker whose rank exited) are re-parented to
    ddpdoctor instead of init, so they stay findable and are reaped here. Off again afterwards:
    through the Python API this process is the user's own (a pytest run)."""
    global _OURS_BEFORE
    if on:
        _OURS_BEFORE = children_now()
    prctl(PR_SET_CHILD_SUBREAPER, 1 if on else 0)


def _adopted() -> list[psutil.Process]:
    """Orphans of the job re-parented to us (we are its subreaper): a daemon that called setsid,
    forked twice and exec'd with an empty environment carries neither the launcher as ancestor
    nor the run id, but its parent is this process. Our children from before the job are not."""
    try:
        mine = psutil.Process().children()
    except psutil.Error:
        return []
    out = []
    for child in mine:
        if child.pid in _OURS_BEFORE:
            continue
        out.append(child)
        try:
            out.extend(child.children(recursive=True))
        except psutil.Error:
            pass
    return out


def job_processes(root_pid: int | None, run_id: str) -> list[psutil.Process]:
    found: dict[int, psutil.Process] = {}
    if root_pid is not None:
        try:
            root = psutil.Process(root_pid)
            found[root.pid] = root
            for child in root.children(recursive=True):
                found[child.pid] = child
        except psutil.Error:
            pass
    if root_pid is not None:  # a job of ours is running: its orphans are ours to end
        for proc in _adopted():
            found.setdefault(proc.pid, proc)
    me = os.getpid()
    for proc in psutil.process_iter():
        if proc.pid in found or proc.pid == me:
            continue
        try:
            if proc.environ().get(ENV_RUN_ID) == run_id:
                found[proc.pid] = proc
        except psutil.Error:
            continue
    return list(found.values())


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _signal_all(procs: Iterable[psutil.Process], sig: int) -> None:
    for proc in procs:
        try:
            proc.send_signal(sig)
        except psutil.Error:
            pass


def reap(pids: Iterable[int]) -> None:
    """Collect the job's exited processes that became our children. Only these pids: waiting
    for any child would steal the exit status of a process the caller started itself."""
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            continue


def let_ranks_finish(ranks: Iterable[psutil.Process], within_s: float = RANKS_FINISH_S) -> None:
    """The script's own process returned, but ranks it started itself (Lightning's launcher,
    mp.spawn without join) may still be running their exit handlers: wait for them, bounded, so
    that the teardown's SIGTERM never lands in a rank that was ending cleanly (Lightning's SIGTERM
    handler broadcasts to rank 0, long gone, and fails)."""
    alive = [p for p in ranks if _running(p)]
    if alive:
        psutil.wait_procs(alive, timeout=within_s)


def end_job(root_pid: int | None, run_id: str, grace_s: float = 3.0) -> list[int]:
    """SIGTERM every process of the job (ranks dump their stacks on it), SIGKILL what is left
    after `grace_s`, reap everything. Returns the pids that were still running."""
    procs = job_processes(root_pid, run_id)
    alive = [p for p in procs if _running(p)]
    pids = [p.pid for p in alive]
    if alive:
        _signal_all(alive, signal.SIGTERM)
        _, alive = psutil.wait_procs(alive, timeout=grace_s)
        if alive:
            _signal_all(alive, signal.SIGKILL)
            psutil.wait_procs(alive, timeout=5)
    # Late arrivals: a worker forked while we were signalling.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        rest = [p for p in job_processes(root_pid, run_id) if _running(p)]
        if not rest:
            break
        _signal_all(rest, signal.SIGKILL)
        psutil.wait_procs(rest, timeout=2)
    reap(pids)
    return pids


def children_now() -> set[int]:
    try:
        return {p.pid for p in psutil.Process().children()}
    except psutil.Error:
        return set()


def reap_new_children(before: set[int]) -> None:
    """Reap exited children that appeared during the job (the launcher, orphans re-parented to
    us), never the ones the caller had before it started."""
    reap(children_now() - before)
