"""Sampling every rank's Python stacks for a few seconds: one `py-spy record` per rank.

One long-running recorder per rank, not a loop of `py-spy dump`: spawning a dump every 0.1 s
slowed a job by 19-25 %, a recorder with --nonblocking costs nothing measurable. --idle keeps
the samples of a thread waiting in C++ (a rank blocked in a collective), which py-spy drops
otherwise. The recorders write speedscope JSON into a private temporary folder that is removed
before this returns, whatever happens; every recorder is reaped.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Optional

from ddpdoctor.probe.run_model.outcome import Frame
from ddpdoctor.probe.run_model.stack_text import parse_speedscope, pyspy_failure

GRACE_S = 5.0  # a recorder past its --duration by this much is ended
# The narrowest right first: root (sudo) for this one command. Lowering Yama's ptrace_scope is
# machine-wide (every process may then trace every other of its user), so it is offered only
# as an administrator's temporary step, with the way back.
PTRACE_FIX = ("run it as root for this one command (`sudo ddpdoctor attach ...`: root may trace "
              "any process while kernel.yama.ptrace_scope is 0, 1 or 2); only where sudo is not "
              "available, an administrator may set kernel.yama.ptrace_scope to 0 for the attach "
              "and back after (`sudo sysctl kernel.yama.ptrace_scope=0`, then its old value): "
              "it lets every process trace every other process of its user, machine-wide; 3 "
              "forbids tracing until a reboot; in a container: add the SYS_PTRACE capability "
              "(docker run --cap-add SYS_PTRACE; in a Kubernetes pod "
              "`securityContext: {capabilities: {add: [SYS_PTRACE]}}`, docs/kubernetes.md)")


@dataclass
class RankSamples:
    """One rank's sampled main-thread stacks, innermost frame first, in time order."""

    pid: int
    stacks: list[tuple[Frame, ...]] = field(default_factory=list)
    error: str = ""  # why there are none
    refused: bool = False  # ptrace was not allowed
    exited: bool = False  # the process ended while it was sampled

    @property
    def count(self) -> int:
        return len(self.stacks)

    def most_common(self) -> list[tuple[tuple[Frame, ...], int]]:
        """Distinct stacks with their sample counts, most sampled first."""
        counts = Counter(stack_key(s) for s in self.stacks)
        first = {}
        for stack in self.stacks:
            first.setdefault(stack_key(stack), stack)
        return [(first[key], n) for key, n in counts.most_common()]


def stack_key(stack: tuple[Frame, ...]) -> tuple:
    """Frame is a mutable dataclass (unhashable): a stack's hashable identity."""
    return tuple((f.func, f.file, f.line) for f in stack)


def pyspy_exe() -> Optional[str]:
    """py-spy on PATH, else beside this Python (a node reached over ssh often has a bare PATH,
    while `pip install py-spy` put it next to the interpreter)."""
    found = shutil.which("py-spy")
    if found:
        return found
    for folder in (os.path.dirname(sys.executable), os.path.dirname(os.path.realpath(sys.executable))):
        candidate = os.path.join(folder, "py-spy")
        if os.access(candidate, os.X_OK):
            return candidate
    return None


class Recorders:
    """The py-spy recorders of one attach: start them, then `collect()` (always, in a finally)."""

    def __init__(self, pids: list[int], duration_s: float, rate: int):
        self.pids = pids
        self.duration_s = duration_s
        self.rate = rate
        self.folder = tempfile.mkdtemp(prefix="ddpdoctor-attach-")
        self.procs: dict[int, subprocess.Popen] = {}
        self.missing = ""
        self.started_at = time.monotonic()

    def start(self) -> None:
        exe = pyspy_exe()
        if exe is None:
            self.missing = "py-spy is not installed (pip install py-spy): no stacks were sampled"
            return
        env = {**os.environ, "RUST_BACKTRACE": "0", "RUST_LIB_BACKTRACE": "0"}
        seconds = max(1, int(round(self.duration_s)))
        for pid in self.pids:
            out = os.path.join(self.folder, f"{pid}.json")
            with open(os.path.join(self.folder, f"{pid}.err"), "wb") as err:
                try:
                    self.procs[pid] = subprocess.Popen(
                        [exe, "record", "--pid", str(pid), "--idle", "--nonblocking",
                         "--format", "speedscope", "--output", out, "--duration", str(seconds),
                         "--rate", str(self.rate)],
                        stdin=subprocess.DEVNULL, stdout=err, stderr=err, env=env,
                        start_new_session=True)  # a Ctrl-C at the terminal is ours, not py-spy's
                except OSError as exc:
                    self.missing = f"py-spy could not run: {exc.strerror}"
                    break
        self.started_at = time.monotonic()

    def collect(self, tick: Optional[Callable[[], None]] = None, every_s: float = 0.25) -> dict[int, RankSamples]:
        """Wait for every recorder (each stops itself after --duration), calling `tick` every
        `every_s` meanwhile; end any that overrun, read their files and remove the folder."""
        try:
            deadline = self.started_at + self.duration_s + GRACE_S
            while time.monotonic() < deadline and any(p.poll() is None for p in self.procs.values()):
                if tick is not None:
                    tick()
                time.sleep(every_s)
            if tick is not None:
                tick()
            return {pid: self._read(pid) for pid in self.pids}
        finally:
            self.stop()
            shutil.rmtree(self.folder, ignore_errors=True)

    def stop(self) -> None:
        """End and reap every recorder still running (an interrupted attach, an overrun):
        SIGINT first, which makes py-spy detach cleanly, then SIGKILL."""
        for proc in self.procs.values():
            if proc.poll() is None:
                try:
                    proc.send_signal(signal.SIGINT)
                    proc.wait(timeout=2)
                except (subprocess.TimeoutExpired, OSError):
                    proc.kill()
                    proc.wait(timeout=5)

    def _read(self, pid: int) -> RankSamples:
        if pid not in self.procs:
            return RankSamples(pid, error=self.missing or "py-spy was not started")
        try:
            with open(os.path.join(self.folder, f"{pid}.err"), encoding="utf-8", errors="replace") as handle:
                err = handle.read()
        except OSError:
            err = ""
        result = RankSamples(pid)
        try:
            with open(os.path.join(self.folder, f"{pid}.json"), encoding="utf-8") as handle:
                result.stacks = parse_speedscope(json.load(handle), pid)
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            result.stacks = []
        lowered = err.lower()
        if "permission denied" in lowered or "operation not permitted" in lowered or (
                not result.stacks and ptrace_refused(pid)):
            result.refused = True
            result.error = f"ptrace refused for pid {pid}: py-spy was not allowed to attach"
        elif not os.path.exists(f"/proc/{pid}") or "no such process" in lowered or "exited" in lowered:
            result.exited = True
            result.error = "the process exited while it was sampled"
        elif not result.stacks:
            code = self.procs[pid].returncode
            result.error = pyspy_failure(err, code if code is not None else -1)
        return result


def ptrace_refused(pid: int) -> bool:
    """The kernel refuses us ptrace access to the process (reading its /proc/PID/exe takes the
    same permission): Yama's ptrace_scope, no CAP_SYS_PTRACE, another user's process. py-spy
    then fails with whatever it tried first, not always "permission denied"."""
    try:
        os.readlink(f"/proc/{pid}/exe")
    except PermissionError:
        return True
    except OSError:
        return False
    return False
