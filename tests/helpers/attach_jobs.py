"""Jobs started outside ddpdoctor, with plain torchrun, for `ddpdoctor attach` to observe."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import psutil
from tests.helpers.ports import free_port

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "tests" / "scripts" / "attach_job.py"
_PORT_TAKEN = b"EADDRINUSE"


class TorchrunJob:
    """`python -m torch.distributed.run --nproc-per-node N attach_job.py MODE STEPS` in its own
    session; `end()` ends the whole session."""

    def __init__(self, mode: str, folder: Path, nproc: int = 2, env: dict | None = None,
                 wrapper: list[str] | None = None, nodes: tuple[int, int] | None = None,
                 port: int | None = None, script: Path = SCRIPT) -> None:
        """nodes=(nnodes, node_rank): one node of a multi-node job on this machine; script: a
        job script of attach_job.py's arguments (MODE STEPS_FILE) and steps file."""
        self.script = script
        self.port = port or free_port()
        self._own_port = port is None
        tag = f"{mode}-node{nodes[1]}" if nodes else mode
        self.steps_file = folder / f"steps-{mode}.txt"
        self.log_path = folder / f"job-{tag}.log"
        self.log = open(self.log_path, "wb")
        multi = ["--nnodes", str(nodes[0]), "--node-rank", str(nodes[1])] if nodes else []
        self._command = lambda: [
            *(wrapper or []), sys.executable, "-m", "torch.distributed.run", *multi,
            "--nproc-per-node", str(nproc), "--master-addr", "127.0.0.1",
            "--master-port", str(self.port), str(script), mode, str(self.steps_file)]
        self._env = {**os.environ, **(env or {})}
        self._start()

    def _start(self) -> None:
        self.proc = subprocess.Popen(self._command(), stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True,
                                     cwd=str(self.script.parent), env=self._env)

    def _lost_port_race(self) -> bool:
        """The port free_port() saw was taken by another test (xdist) before torchrun's store
        bound it: the job never ran, which says nothing about what the test checks."""
        return self._own_port and _PORT_TAKEN in self.log_path.read_bytes()

    def _log_tail(self) -> str:
        return self.log_path.read_bytes()[-3000:].decode(errors="replace")

    def steps(self) -> dict[int, int]:
        """rank -> the last step it logged."""
        last: dict[int, int] = {}
        try:
            for line in self.steps_file.read_text().splitlines():
                rank, step = line.split()
                last[int(rank)] = int(step)
        except (OSError, ValueError):
            pass
        return last

    def wait_until(self, condition: Callable[[dict[int, int]], bool], timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        restarts = 3
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.log.flush()
                if restarts and self._lost_port_race():
                    restarts -= 1
                    self.port = free_port()
                    self.log.truncate(0)
                    self.log.seek(0)
                    self._start()
                    continue
                raise AssertionError(f"the job ended early: {self.log.name}\n{self._log_tail()}")
            if condition(self.steps()):
                return
            time.sleep(0.1)
        raise AssertionError(f"the job never reached its state: steps {self.steps()}\n{self._log_tail()}")

    def rank_pids(self) -> list[int]:
        return [c.pid for c in psutil.Process(self.proc.pid).children(recursive=True)
                if self.script.name in " ".join(c.cmdline())]

    def running(self) -> bool:
        """Every rank alive and not stopped (attach must never pause or end one)."""
        pids = self.rank_pids()
        return len(pids) >= 1 and all(psutil.Process(p).status() not in (
            psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP, psutil.STATUS_ZOMBIE) for p in pids)

    def end(self) -> None:
        end_job(self.proc)
        self.log.close()


def end_job(proc: subprocess.Popen) -> None:
    """End a job started under torchrun (or a ddpdoctor that started one): torchrun starts each
    rank in a session of its own, so the ranks (and their DataLoader workers) are ended by pid,
    then the job's own session; waits for all of them."""
    try:
        procs = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        procs = []
    for child in procs:
        try:
            child.kill()
        except psutil.Error:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    proc.wait(timeout=30)
    psutil.wait_procs(procs, timeout=10)


def pyspy_on(pids: list[int]) -> list[str]:
    """py-spy processes still pointed at any of these pids (there must be none)."""
    left = []
    for proc in psutil.process_iter(["name", "cmdline"]):
        cmd = proc.info["cmdline"] or []
        if "py-spy" in " ".join(cmd[:2]) and any(str(p) in cmd for p in pids):
            left.append(" ".join(cmd))
    return left
