"""A bound on what a chatty script can put in job.log: per rank, the head and the tail.

Each line of the job's output belongs to a rank (torchrun's `[rank3]: ` prefix) or to the
launcher. Up to `head_bytes` of each source go to job.log as they arrive; after that, the source's
last `tail_bytes` are kept in memory and written when the job ends, after a line that says how
much was dropped. A script printing 50 MB per rank thus leaves about head + tail per rank on disk,
and the lines that matter most (the first ones, and the last ones before a crash) are kept.
"""

from __future__ import annotations

import collections
import re
from dataclasses import dataclass, field

RANK_PREFIX = re.compile(rb"^\[rank(\d+)\]: ")
DEFAULT_LIMIT_MB = 16.0  # per rank: 3/4 head, 1/4 tail


@dataclass
class _Source:
    written: int = 0
    full: bool = False  # the head is written: everything after goes to the tail
    dropped_bytes: int = 0
    dropped_lines: int = 0
    tail: collections.deque = field(default_factory=collections.deque)
    tail_bytes: int = 0


class LogCap:
    def __init__(self, limit_mb: float = DEFAULT_LIMIT_MB) -> None:
        total = int(limit_mb * 1024 * 1024)
        self.limit_mb = limit_mb
        self.head_bytes = total * 3 // 4
        self.tail_bytes = total - self.head_bytes
        self.sources: dict[bytes, _Source] = {}
        self.partial = b""

    def admit(self, data: bytes) -> bytes:
        """What of `data` goes to job.log now; the rest is held (tail) or dropped."""
        data = self.partial + data
        lines = data.split(b"\n")
        self.partial = lines.pop()
        if len(self.partial) > self.head_bytes:  # one endless line: judge it as it comes
            lines.append(self.partial)
            self.partial = b""
        out = []
        for line in lines:
            line += b"\n"
            match = RANK_PREFIX.match(line)
            source = self.sources.setdefault(match.group(1) if match else b"", _Source())
            if not source.full and source.written + len(line) <= self.head_bytes:
                source.written += len(line)
                out.append(line)
                continue
            source.full = True
            source.tail.append(line)
            source.tail_bytes += len(line)
            while source.tail_bytes > self.tail_bytes and source.tail:
                old = source.tail.popleft()
                source.tail_bytes -= len(old)
                source.dropped_bytes += len(old)
                source.dropped_lines += 1
        return b"".join(out)

    def finish(self) -> bytes:
        """The held tails, each after a line saying what was dropped before it."""
        out = [self.partial] if self.partial else []
        self.partial = b""
        for key, source in sorted(self.sources.items()):
            if not source.tail:
                continue
            if source.dropped_lines:
                who = f"rank {key.decode()}" if key else "the launcher"
                out.append(f"[ddpdoctor] {source.dropped_bytes} bytes ({source.dropped_lines} lines) of "
                           f"{who}'s output dropped here: job.log keeps the first and the last lines of "
                           f"each rank (--log-limit {self.limit_mb:g} MB per rank)\n".encode())
            out.extend(source.tail)
            source.tail.clear()
        return b"".join(out)

    def dropped(self) -> int:
        return sum(s.dropped_bytes for s in self.sources.values())
