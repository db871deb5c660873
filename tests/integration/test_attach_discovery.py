"""Finding a job's ranks from real processes (no torch needed: discovery reads environments and
the process tree): torchrun-style ranks with a DataLoader-like child, an mp.spawn parent."""

from __future__ import annotations

import os
import subprocess
import sys

import psutil
import pytest

from ddpdoctor.attach.discover import job_of, scan
from ddpdoctor.core.errors import UsageError
from tests.helpers.attach_jobs import TorchrunJob

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


# A wrapper script as users write them: bash runs torchrun and waits for it (a command after it
# keeps bash from exec'ing torchrun in its place), so bash stays torchrun's parent.
BASH_WRAPPER = ["bash", "-c", '"$@"; status=$?; exit $status', "train-wrapper"]


@pytest.mark.multiprocess
def test_the_pid_of_a_bash_wrapper_that_started_torchrun_finds_the_job_below_it(tmp_path):
    job = TorchrunJob("healthy", tmp_path, wrapper=BASH_WRAPPER)
    try:
        job.wait_until(lambda steps: len(steps) == 2)
        wrapper = psutil.Process(job.proc.pid)
        assert wrapper.name() == "bash"
        (agent,) = [c for c in wrapper.children() if "torch.distributed.run" in " ".join(c.cmdline())]
        found = job_of(wrapper.pid)  # the wrapper is no direct parent of the ranks
        assert found.agent_pid == agent.pid
        ranks = sorted(p for p in job.rank_pids() if p != agent.pid)  # its command line names the script too
        assert sorted(found.pids) == ranks and [r.rank for r in found.ranks] == [0, 1]
    finally:
        job.end()


def test_a_process_with_no_job_below_it_is_still_refused_with_the_reason():
    proc = subprocess.Popen(["bash", "-c", 'sleep 60; exit 0'])
    try:
        with pytest.raises(UsageError, match="no such job among the processes it started"):
            job_of(proc.pid)
    finally:
        proc.kill()
        proc.wait(timeout=10)
