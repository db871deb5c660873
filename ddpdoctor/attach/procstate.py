"""What /proc says about a rank, read at the start and the end of sampling.

The stack alone cannot tell a rank stuck in a collective from one that returns to the same line
every step. /proc can: the CPU time the main thread spent, and the read/write system calls the
process made (on gloo every collective is socket reads and writes; a hung rank makes none).
Every field is optional: a process of another user hides /proc/PID/io, a process may exit.

On a GPU neither says much: a rank waiting for its device (a collective that NCCL launched and
that never completes, a long kernel) spins a core inside `.item()` or a synchronize, and the
process still makes read/write calls about once a second (seen on an H200 with torch 2.11: 5-6 in
a 5 s window while the rank stood in one kernel; by all appearances ProcessGroupNCCL's own
threads). `uses_gpu` says whether the rank holds a CUDA context.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Optional

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass
class ProcSnapshot:
    """One reading of a rank's /proc files."""

    pid: int
    at: float  # time.monotonic()
    alive: bool
    state: str = ""  # R, S, D, T (stopped), Z ...
    threads: Optional[int] = None
    cpu_s: Optional[float] = None  # the whole process, user + system
    main_cpu_s: Optional[float] = None  # its main thread only (where Python runs)
    io_calls: Optional[int] = None  # syscr + syscw; None when /proc/PID/io is refused


def _stat_fields(path: str) -> Optional[list[str]]:
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ")".
    head, _, rest = text.rpartition(")")
    return rest.split() if head else None


def _cpu_s(fields: Optional[list[str]]) -> Optional[float]:
    """User + system CPU seconds from a split /proc stat line (a process's or a thread's)."""
    try:
        return (int(fields[11]) + int(fields[12])) / _TICKS if fields else None
    except (IndexError, ValueError):
        return None


def _io_calls(pid: int) -> Optional[int]:
    """Read and write system calls the process made so far; None when /proc/PID/io is refused."""
    try:
        with open(f"/proc/{pid}/io", encoding="ascii") as handle:
            counters = dict(line.split(":", 1) for line in handle if ":" in line)
        return int(counters["syscr"]) + int(counters["syscw"])
    except (OSError, KeyError, ValueError):
        return None


def exit_status(fields: Optional[list[str]]) -> str:
    """How a zombie ended ("exit code 1", "killed by SIGKILL"), from its stat line's exit_code
    field (Linux 3.5+; readable while its parent has not reaped it); "" when unknown: a rank
    of torchrun is reaped at once, so most often it is."""
    import signal

    try:
        code = int(fields[49]) if fields and fields[0] == "Z" else None
    except (IndexError, ValueError):
        code = None
    if code is None:
        return ""
    if code & 0x7F:
        try:
            name = signal.Signals(code & 0x7F).name
        except ValueError:
            name = f"signal {code & 0x7F}"
        return f"killed by {name}"
    return f"exit code {(code >> 8) & 0xFF}"


def read(pid: int) -> ProcSnapshot:
    """The rank's state now; `alive` False when it has exited."""
    now = time.monotonic()
    fields = _stat_fields(f"/proc/{pid}/stat")
    if fields is None or fields[0] == "Z":
        return ProcSnapshot(pid, now, False, state=fields[0] if fields else "")
    snap = ProcSnapshot(pid, now, True, state=fields[0])
    try:
        snap.threads = int(fields[17])
    except (IndexError, ValueError):
        pass
    snap.cpu_s = _cpu_s(fields)
    snap.main_cpu_s = _cpu_s(_stat_fields(f"/proc/{pid}/task/{pid}/stat"))
    snap.io_calls = _io_calls(pid)
    return snap


@dataclass
class ProcDelta:
    """What a rank did between two readings."""

    pid: int
    seconds: float
    alive_at_end: bool
    state_start: str
    state_end: str
    threads_start: Optional[int]
    threads_end: Optional[int]
    cpu_share: Optional[float]  # of one core, whole process
    main_cpu_share: Optional[float]  # of one core, main thread
    io_calls: Optional[int]  # read/write system calls made meanwhile

    @property
    def stopped(self) -> bool:
        """Stopped by a signal or a debugger (SIGSTOP, ptrace): it cannot progress."""
        return self.state_end in ("T", "t")

    def to_dict(self) -> dict:
        return {"pid": self.pid, "seconds": round(self.seconds, 2), "alive": self.alive_at_end,
                "state": f"{self.state_start}->{self.state_end}",
                "threads": self.threads_end if self.threads_end is not None else self.threads_start,
                "cpu_share": _round(self.cpu_share), "main_cpu_share": _round(self.main_cpu_share),
                "io_calls": self.io_calls}


def _round(value: Optional[float]) -> Optional[float]:
    return None if value is None else round(value, 3)


def delta(start: ProcSnapshot, end: ProcSnapshot) -> ProcDelta:
    seconds = max(end.at - start.at, 1e-6)

    def share(a: Optional[float], b: Optional[float]) -> Optional[float]:
        return None if a is None or b is None or not end.alive else max(b - a, 0.0) / seconds

    calls = (end.io_calls - start.io_calls
             if end.io_calls is not None and start.io_calls is not None and end.alive else None)
    return ProcDelta(start.pid, seconds, end.alive, start.state, end.state, start.threads,
                     end.threads, share(start.cpu_s, end.cpu_s),
                     share(start.main_cpu_s, end.main_cpu_s), calls)


class IoWatch:
    """Each rank's read/write call count and CPU time, read every quarter second while it is
    sampled, to tell how long before the end of the window it last made a read or write call
    ("quiet for 3.2 s": a job that hangs during the window is hung from that moment, not from the
    window's start) and how much CPU it used since (a rank that neither talks nor computes waits;
    one that computes with nothing to send, in a backward longer than the window, works)."""

    def __init__(self, pids: list[int]):
        self.last: dict[int, Optional[int]] = {pid: None for pid in pids}
        self.changed_at: dict[int, float] = {}
        self.cpu_now: dict[int, tuple[float, float]] = {}  # (time, CPU s) at the last tick
        self.cpu_at_change: dict[int, tuple[float, float]] = {}  # (time, CPU s) at the last call
        self.started = time.monotonic()
        self.gone_at: dict[int, float] = {}  # seconds into the window a rank was first seen gone
        self.exit_status: dict[int, str] = {}  # how it ended, where a zombie still told

    def tick(self) -> None:
        now = time.monotonic()
        for pid in self.last:
            if pid not in self.gone_at:
                self._check_gone(pid, now)
            calls = _io_calls(pid)
            if calls is None:
                continue
            cpu = _cpu_s(_stat_fields(f"/proc/{pid}/stat"))
            if cpu is not None:
                self.cpu_now[pid] = (now, cpu)
            if self.last[pid] is None or calls != self.last[pid]:
                if self.last[pid] is not None:
                    self.changed_at[pid] = now
                if cpu is not None:
                    self.cpu_at_change[pid] = (now, cpu)
            self.last[pid] = calls

    def _check_gone(self, pid: int, now: float) -> None:
        fields = _stat_fields(f"/proc/{pid}/stat")
        if fields is not None and fields[0] != "Z":
            return
        self.gone_at[pid] = now - self.started
        status = exit_status(fields)
        if status:
            self.exit_status[pid] = status

    def quiet_s(self, pid: int) -> Optional[float]:
        """Seconds since the rank's last read or write call (the whole window if none)."""
        if self.last.get(pid) is None:
            return None
        return time.monotonic() - self.changed_at.get(pid, self.started)

    def quiet_cpu_share(self, pid: int) -> Optional[float]:
        """The process's CPU (every thread, in cores) from its last read or write call (as
        seen by a tick) to the last tick; None when unreadable or too short to tell."""
        since, now = self.cpu_at_change.get(pid), self.cpu_now.get(pid)
        if since is None or now is None:
            return None
        seconds = now[0] - since[0]
        return None if seconds < 0.5 else max(now[1] - since[1], 0.0) / seconds


def maps_mention(pid: int, word: str) -> Optional[bool]:
    """A mapping of the process names `word` (needs the permission py-spy needs). None: unreadable."""
    try:
        with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as handle:
            return any(word in line for line in handle)
    except OSError:
        return None


def uses_gpu(pid: int) -> Optional[bool]:
    """The rank holds a CUDA context: NVIDIA's device files are mapped into it (a CPU job on a
    CUDA build of torch maps libcudart and libnccl, never /dev/nvidia*). None: unreadable."""
    return maps_mention(pid, "/dev/nvidia")
