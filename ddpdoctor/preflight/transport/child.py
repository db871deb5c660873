"""Child processes with a deadline: every one is killed and reaped, whatever happens.

ssh (and what it starts, e.g. a ProxyCommand) runs in its own process group, so a kill reaches
all of it. Live children are tracked so that an interrupted preflight can end them all.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Optional, Sequence

_live: set[subprocess.Popen] = set()
_live_lock = threading.Lock()


@dataclass
class Completed:
    returncode: Optional[int]  # None: killed at the deadline
    stdout: bytes
    stderr: bytes
    seconds: float

    @property
    def timed_out(self) -> bool:
        return self.returncode is None


def start(argv: Sequence[str], stdin: int | None = subprocess.PIPE) -> subprocess.Popen:
    """Start a tracked child in its own process group, stdout and stderr piped."""
    proc = subprocess.Popen(list(argv), stdin=stdin, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    with _live_lock:
        _live.add(proc)
    return proc


def kill(proc: subprocess.Popen, grace: float = 2.0) -> None:
    """Kill the child's whole process group and reap it; waits at most `grace` seconds."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass  # unkillable (D state); nothing more a user-space tool can do
    forget(proc)


def forget(proc: subprocess.Popen) -> None:
    with _live_lock:
        _live.discard(proc)


def run(argv: Sequence[str], input_bytes: bytes, timeout: float) -> Completed:
    """Run a child, feed it `input_bytes`, collect its output; kill it at `timeout` seconds."""
    began = time.monotonic()
    proc = start(argv)
    try:
        out, err = proc.communicate(input_bytes, timeout=timeout)
        code: Optional[int] = proc.returncode
    except subprocess.TimeoutExpired:
        kill(proc)
        out, err = _drain(proc)
        code = None
    finally:
        if proc.poll() is None:  # interrupted (KeyboardInterrupt) mid-wait
            kill(proc)
        forget(proc)
    return Completed(code, out or b"", err or b"", round(time.monotonic() - began, 3))


def _drain(proc: subprocess.Popen) -> tuple[bytes, bytes]:
    # After a kill the pipes hold whatever the child wrote before it; read it without waiting
    # on grandchildren that might still hold the pipes open.
    try:
        return proc.communicate(timeout=1.0)
    except (subprocess.TimeoutExpired, ValueError, OSError):
        return b"", b""


def kill_all() -> None:
    """End every child still running (called when a preflight is interrupted or finishes)."""
    with _live_lock:
        procs = list(_live)
    for proc in procs:
        kill(proc, grace=1.0)
    # This machine's own facts import torch in a child of their own (node/facts.py), started by
    # the same stdlib-only code that runs on remote nodes: end it too.
    from ddpdoctor.preflight.node import facts

    for proc in list(facts.TORCH_PROBES):
        if proc.poll() is None:
            proc.kill()
