"""Every benchmark still starts: nothing else runs them, so a moved module or helper would break
one unnoticed. `--help` runs each file's imports and argument parser, not its measurement."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_every_benchmark_starts_and_prints_its_usage():
    files = sorted(p for p in (REPO / "benchmarks").glob("*.py") if p.name != "__init__.py")
    assert files
    # The drivers run as modules from the repo root (they import benchmarks.* and tests.helpers.*);
    # ddp_mlp.py is the training script torchrun starts by path.
    argv = {p.name: [sys.executable, str(p.relative_to(REPO))] if p.name == "ddp_mlp.py"
            else [sys.executable, "-m", f"benchmarks.{p.stem}"] for p in files}
    started = {name: subprocess.Popen([*cmd, "--help"], cwd=REPO, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)
               for name, cmd in argv.items()}  # all at once: the test costs one start-up, not five
    failed = {}
    for name, proc in started.items():
        out, _ = proc.communicate(timeout=120)
        if proc.returncode != 0 or "usage:" not in out:
            failed[name] = out[-2000:]
    assert not failed, failed
