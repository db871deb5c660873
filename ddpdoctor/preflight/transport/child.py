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
    truncated: bool = False  # more output than run()'s max_output: the rest was dropped

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


# What a node may print before the rest is dropped: a node's facts are a few KB, an attach
# observation of 1000 Hz x 600 s of stacks a few hundred MB at the very most (a node that prints
# more is broken or hostile, and must not exhaust this machine's memory).
MAX_OUTPUT = 256 * 1024 * 1024
_READ = 64 * 1024


def run(argv: Sequence[str], input_bytes: bytes, timeout: float,
        max_output: int = MAX_OUTPUT) -> Completed:
    """Run a child, feed it `input_bytes`, collect its output (at most `max_output` bytes of
    each stream: the rest is read and dropped, so the child never blocks on a full pipe, and
    `truncated` says so); kill it at `timeout` seconds."""
    began = time.monotonic()
    proc = start(argv)
    streams = [_Collector(proc.stdout, max_output), _Collector(proc.stderr, max_output)]
    feeder = threading.Thread(target=_feed, args=(proc, input_bytes), daemon=True)
    for thread in [feeder, *streams]:
        thread.start()
    code: Optional[int] = None
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill(proc)
    finally:
        if proc.poll() is None:  # interrupted (KeyboardInterrupt) mid-wait
            kill(proc)
        forget(proc)
    # After the child exits (or is killed) the pipes hold what it wrote before; a grandchild
    # that still holds them open is not waited for beyond a second.
    for thread in streams:
        thread.join(timeout=1.0 if code is None else max(1.0, timeout - (time.monotonic() - began)))
    out, err = (stream.data() for stream in streams)
    return Completed(code, out, err, round(time.monotonic() - began, 3),
                     any(stream.dropped for stream in streams))


def _feed(proc: subprocess.Popen, data: bytes) -> None:
    try:
        if data:
            proc.stdin.write(data)
        proc.stdin.close()
    except (BrokenPipeError, OSError, ValueError):
        pass  # the child did not read it all: its output says why


class _Collector(threading.Thread):
    """Reads one of a child's pipes to its end, keeping the first `limit` bytes."""

    def __init__(self, pipe, limit: int):
        super().__init__(daemon=True)
        self.pipe, self.limit = pipe, limit
        self.chunks: list[bytes] = []
        self.kept = 0
        self.dropped = 0

    def run(self) -> None:
        try:
            while True:
                chunk = self.pipe.read1(_READ) if hasattr(self.pipe, "read1") else self.pipe.read(_READ)
                if not chunk:
                    return
                room = self.limit - self.kept
                if room > 0:
                    self.chunks.append(chunk[:room])
                    self.kept += min(len(chunk), room)
                self.dropped += max(0, len(chunk) - max(room, 0))
        except (OSError, ValueError):
            return

    def data(self) -> bytes:
        return b"".join(self.chunks)


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
