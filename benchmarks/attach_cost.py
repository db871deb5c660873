"""`ddpdoctor attach`: time to verdict on a hung job, and what sampling costs a running job.

Both on 2-rank gloo jobs started with plain torchrun (tests/scripts/attach_job.py), outside
ddpdoctor, as a user's job would be:

- time to verdict: `ddpdoctor attach AGENT --duration D` on a job whose rank 1 is stuck in its
  own code while rank 0 waits in the gradient all-reduce, from start to exit (rounds).
- slowdown: a healthy job's step rate (rank 0's logged steps) in a window while every rank is
  sampled, against the mean of the windows just before and after without attach (rounds). On a
  busy machine the unsampled rate itself moves; the median over rounds is the figure.

    python -m benchmarks.attach_cost                     # 3 + 5 rounds, --duration 2 / 4
    python -m benchmarks.attach_cost --rounds 8 --verdict-rounds 5
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from tests.helpers.attach_jobs import end_job

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "tests" / "scripts" / "attach_job.py"


def ddpdoctor() -> list[str]:
    return [sys.executable, "-m", "ddpdoctor"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(mode: str, folder: Path) -> tuple[subprocess.Popen, Path]:
    steps = folder / f"steps-{mode}.txt"
    proc = subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                             "--master-addr", "127.0.0.1", "--master-port", str(free_port()),
                             str(SCRIPT), mode, str(steps)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    return proc, steps


def last_step(steps: Path, rank: int = 0) -> int:
    last = -1
    try:
        for line in steps.read_text().splitlines():
            r, s = line.split()
            if int(r) == rank:
                last = int(s)
    except (OSError, ValueError):
        pass
    return last


def wait_step(steps: Path, at_least: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while last_step(steps) < at_least:
        if time.monotonic() > deadline:
            raise SystemExit(f"the job never reached step {at_least}")
        time.sleep(0.2)


def time_to_verdict(folder: Path, rounds: int, duration: int) -> list[float]:
    proc, steps = start("stuck", folder)
    try:
        wait_step(steps, 4)
        walls = []
        for _ in range(rounds):
            began = time.monotonic()
            done = subprocess.run([*ddpdoctor(), "attach", str(proc.pid), "--duration", str(duration),
                                   "--json", "-"], capture_output=True, text=True, timeout=120)
            walls.append(time.monotonic() - began)
            state = json.loads(done.stdout)["metrics"]["state"]
            if state != "hung":
                raise SystemExit(f"expected a hung verdict, got {state}")
        return walls
    finally:
        end_job(proc)


def rate(steps: Path, seconds: float) -> float:
    a, t = last_step(steps), time.monotonic()
    time.sleep(seconds)
    return (last_step(steps) - a) / (time.monotonic() - t)


def slowdown(folder: Path, rounds: int, duration: int) -> list[float]:
    proc, steps = start("healthy", folder)
    try:
        wait_step(steps, 200)
        ratios = []
        for _ in range(rounds):
            before = rate(steps, 2.5)
            attach = subprocess.Popen([*ddpdoctor(), "attach", str(proc.pid), "--duration",
                                       str(duration), "-q"])
            # The window starts once the recorders run (a py-spy child of attach).
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not any(
                    "py-spy" in " ".join(c.cmdline()[:2]) for c in psutil.Process(attach.pid).children()):
                time.sleep(0.05)
            during = rate(steps, min(2.5, duration - 1))
            attach.wait(timeout=120)
            after = rate(steps, 2.5)
            ratios.append(during / max((before + after) / 2, 1e-9))
        return ratios
    finally:
        end_job(proc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verdict-rounds", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if shutil.which("py-spy") is None:
        raise SystemExit("py-spy is not installed")
    # The jobs run in sessions of their own (so attach sees a job it did not start): a SIGTERM
    # (`timeout`, a CI cancel) must still reach the `finally:` that ends them, not leave them running.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    folder = Path(tempfile.mkdtemp(prefix="ddpdoctor-bench-attach-"))
    try:
        walls = time_to_verdict(folder, args.verdict_rounds, 2)
        print(f"time to verdict (hung 2-rank job, --duration 2): median {statistics.median(walls):.1f} s "
              f"({', '.join(f'{w:.1f}' for w in walls)})")
        ratios = slowdown(folder, args.rounds, 4)
        print(f"step rate while sampled / without: median {statistics.median(ratios):.2f}x "
              f"({', '.join(f'{r:.2f}' for r in sorted(ratios))})")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
