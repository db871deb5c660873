"""Finding a job's ranks from real processes (no torch needed: discovery reads environments and
the process tree): torchrun-style ranks with a DataLoader-like child, an mp.spawn parent."""

from __future__ import annotations

import os
import subprocess
import sys

import psutil

from ddpdoctor.attach.discover import job_of, scan

RANK_WITH_WORKER = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # inherits RANK
print(child.pid, flush=True)
time.sleep(60)
"""

SPAWN_PARENT = """
import multiprocessing as mp, time
if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=time.sleep, args=(60,)) for _ in range(2)]
    for p in procs:
        p.start()
    print(" ".join(str(p.pid) for p in procs), flush=True)
    time.sleep(60)
"""


def _start(code: str, env: dict | None = None) -> tuple[subprocess.Popen, list[int]]:
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})
    return proc, [int(p) for p in proc.stdout.readline().split()]


def _end(proc: subprocess.Popen) -> None:
    children = psutil.Process(proc.pid).children(recursive=True)
    for p in [*children, proc]:
        try:
            p.kill()
        except (psutil.Error, OSError):
            pass
    proc.wait(timeout=10)
    psutil.wait_procs(children, timeout=10)


def test_a_child_of_a_rank_with_its_environment_is_a_worker_not_a_rank():
    env = {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1",
           "MASTER_PORT": "1", "TORCHELASTIC_RUN_ID": f"attach-test-{os.getpid()}"}
    rank, (worker,) = _start(RANK_WITH_WORKER, env)
    try:
        jobs = [j for j in scan()[0] if j.run_id == env["TORCHELASTIC_RUN_ID"]]
        assert len(jobs) == 1 and jobs[0].pids == [rank.pid]
        assert job_of(worker).pids == [rank.pid]  # a worker's PID finds its job
    finally:
        _end(rank)


def test_an_mp_spawn_parent_pid_gives_its_children_as_ranks_in_start_order():
    parent, children = _start(SPAWN_PARENT)
    try:
        job = job_of(parent.pid)
        assert job.pids == children and job.agent_pid == parent.pid
        assert [r.rank for r in job.ranks] == [0, 1] and not job.ranks[0].rank_known
    finally:
        _end(parent)
