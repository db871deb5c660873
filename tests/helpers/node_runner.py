"""Two-node probes on one machine, each node's `ddpdoctor probe` started as a user starts it on
that node (tests/integration/test_multinode_*.py)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import psutil

from ddpdoctor.probe.run_model.outcome import rank_file
from tests.helpers.cli_runner import ddpdoctor_exe
from tests.helpers.probe_runner import REPO


class Node:
    """One node's `ddpdoctor probe`, started as the user would start it on that node."""

    def __init__(self, tmp: Path, node_rank: int, script: str, *flags: str, port: int,
                 args: tuple = (), env: dict | None = None, nnodes: int = 2):
        self.run_dir = tmp / f"node{node_rank}"
        self.report = tmp / f"node{node_rank}.json"
        cmd = [*ddpdoctor_exe(), "probe", script, "--nproc-per-node", "1", "--run-dir", str(self.run_dir),
               "--json", str(self.report), *flags]
        if nnodes:
            cmd += ["--nnodes", str(nnodes), "--node-rank", str(node_rank), "--master-addr", "127.0.0.1",
                    "--master-port", str(port)]
        if args:
            cmd += ["--", *args]
        merged = dict(os.environ, COLUMNS="200", GLOO_SOCKET_IFNAME="lo", **(env or {}))
        self.proc = subprocess.Popen(cmd, cwd=str(REPO), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=merged, stdin=subprocess.DEVNULL)
        self.out = self.err = ""

    def wait(self, timeout: float = 150) -> int:
        try:
            self.out, self.err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.out, self.err = self.proc.communicate()
            raise AssertionError(f"node did not finish in {timeout} s:\n{self.err[-3000:]}")
        return self.proc.returncode

    def json(self) -> dict:
        assert self.report.exists(), f"no report:\n{self.err[-3000:]}"
        return json.loads(self.report.read_text())

    def steps(self, rank: int) -> int:
        path = rank_file(self.run_dir, rank)
        if not path.exists():
            return 0
        return path.read_text(errors="replace").count('"kind":"step"')


def job_processes(*nodes: Node) -> list[psutil.Process]:
    dirs = {str(n.run_dir.resolve()) for n in nodes}
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("DDPDOCTOR_RUN_DIR") in dirs:
                found.append(proc)
        except psutil.Error:
            continue
    return found


def assert_nothing_left(*nodes: Node, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while job_processes(*nodes) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not job_processes(*nodes), "processes of the job were left running"


def wait_until(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")
