"""Multi-node hang diagnosis latency: from the moment a 2-node x 2-rank job stops making progress
to node 0's full report (every rank's stack from both nodes, grouped), in seconds.

Two `ddpdoctor probe` processes on loopback (one per node, each with its own run dir, as on two
machines without a shared filesystem) run tests/scripts/rank0_only_allreduce.py, where rank 0
alone enters an all-reduce. The stall begins at the last telemetry record any rank wrote; the
report is done when node 0's report.json is written. The figure minus the stall timeout is
what ddpdoctor adds: asking every node for stacks (py-spy), gathering, judging, ending the job.

    python -m benchmarks.multinode_stall               # 3 rounds, --stall-timeout 5
    python -m benchmarks.multinode_stall --rounds 5 --stall-timeout 8
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = "tests/scripts/rank0_only_allreduce.py"


def free_port_pair() -> int:
    while True:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        try:
            with socket.socket() as other:
                other.bind(("", port + 1))
            return port
        except OSError:
            continue


def last_record_time(run_dir: Path) -> float:
    latest = 0.0
    for path in run_dir.glob("rank-*.jsonl"):
        for line in path.read_text(errors="replace").splitlines():
            try:
                latest = max(latest, float(json.loads(line).get("t", 0.0)))
            except ValueError:
                continue
    return latest


def one_round(stall_timeout: float) -> float:
    tmp = Path(tempfile.mkdtemp(prefix="ddpdoctor-mn-bench-"))
    port = free_port_pair()
    exe = shutil.which("ddpdoctor") or sys.executable
    base = [exe] if exe != sys.executable else [sys.executable, "-m", "ddpdoctor"]
    procs = []
    try:
        for node in (1, 0):
            cmd = [*base, "probe", SCRIPT, "--nnodes", "2", "--node-rank", str(node), "--nproc-per-node", "2",
                   "--master-addr", "127.0.0.1", "--master-port", str(port), "--stall-timeout", str(stall_timeout),
                   "--run-dir", str(tmp / f"node{node}"), "-q", "--", str(tmp)]
            procs.append(subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          env=dict(os.environ, GLOO_SOCKET_IFNAME="lo")))
        for proc in procs:
            proc.wait(timeout=300)
        node0 = tmp / "node0"
        report = node0 / "report.json"
        return report.stat().st_mtime - last_record_time(node0)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--stall-timeout", type=float, default=5.0)
    args = parser.parse_args()
    figures = [one_round(args.stall_timeout) for _ in range(args.rounds)]
    median = statistics.median(figures)
    print(f"2 nodes x 2 ranks, --stall-timeout {args.stall_timeout:g} s: stall -> full report on node 0 "
          f"{median:.1f} s median ({', '.join(f'{f:.1f}' for f in figures)}); "
          f"ddpdoctor's part {median - args.stall_timeout:.1f} s (goal: <= 10 s)")


if __name__ == "__main__":
    main()
