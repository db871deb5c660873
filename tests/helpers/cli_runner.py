"""Run the installed `ddpdoctor` console script as a user would, with a deadline."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from typing import Any, Optional


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str

    def json(self) -> dict[str, Any]:
        return json.loads(self.stdout)


def ddpdoctor_exe() -> list[str]:
    """The console script installed beside the interpreter running the tests (the install under
    test), found on PATH otherwise. Beside the interpreter first: a version manager's shim on
    PATH (pyenv's is a bash script running `pyenv exec`) costs ~0.15 CPU-s per call, paid by
    hundreds of calls, and could pick another interpreter."""
    beside = os.path.join(os.path.dirname(sys.executable), "ddpdoctor")
    if os.access(beside, os.X_OK):
        return [beside]
    exe = shutil.which("ddpdoctor")
    return [exe] if exe else [sys.executable, "-m", "ddpdoctor"]


def run_cli(*args: str, timeout: float = 120, cwd: Optional[str] = None,
            env: Optional[dict] = None) -> CliResult:
    merged = dict(os.environ)
    merged.setdefault("COLUMNS", "200")
    merged.update(env or {})
    done = subprocess.run([*ddpdoctor_exe(), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env=merged, stdin=subprocess.DEVNULL)
    return CliResult(done.returncode, done.stdout, done.stderr)
