"""The last lines each rank's script printed, kept in the rank and written when it ends.

job.log holds the whole job's output, every rank's lines interleaved and unlabelled (torchrun
prefixes only C++ log lines). A script that stops before training usually says why in its last
print ("Unable to locate sufficient 2 gpus ... Exiting."), and the report of an incomplete run
shows it per rank. So sys.stdout and sys.stderr are wrapped by a proxy that forwards every write
untouched and remembers the last few lines; an atexit handler (which runs on every way out the
bootstrap takes, os._exit after --max-steps included: steps.exit_now runs atexit first) writes
them as one OutputTail record.

Cost: one extra Python call per write, a split on newlines; prints are not the hot path.
"""

from __future__ import annotations

import atexit
import collections
import sys
import time
from typing import Any

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.inrank import recorder

KEEP_LINES = 8
MAX_LINE = 300


class _Tail:
    def __init__(self) -> None:
        self.lines: collections.deque[str] = collections.deque(maxlen=KEEP_LINES)
        self.partial = ""

    def add(self, text: str) -> None:
        if "\n" not in text:
            if len(self.partial) < 4 * MAX_LINE:
                self.partial += text
            return
        head, *middle, rest = text.split("\n")
        self._line(self.partial + head)
        for line in middle[-KEEP_LINES:]:
            self._line(line)
        self.partial = rest[:4 * MAX_LINE]

    def _line(self, line: str) -> None:
        line = line.rsplit("\r", 1)[-1].rstrip()  # a progress bar's last state
        if line:
            self.lines.append(line[:MAX_LINE])

    def snapshot(self) -> list[str]:
        lines = list(self.lines)
        last = self.partial.rsplit("\r", 1)[-1].rstrip()
        if last:
            lines = (lines + [last[:MAX_LINE]])[-KEEP_LINES:]
        return lines


_tail = _Tail()


class _Stream:
    """Forwards everything to the real stream; remembers what is written."""

    def __init__(self, stream: Any) -> None:
        self.__dict__["_stream"] = stream

    def write(self, text: Any) -> Any:
        written = self._stream.write(text)
        try:
            if isinstance(text, str):
                _tail.add(text)
        except Exception:  # noqa: BLE001 - never break the script's output
            pass
        return written

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._stream, name, value)

    def __iter__(self) -> Any:
        return iter(self._stream)


def _write_tail() -> None:
    try:
        lines = _tail.snapshot()
        if lines:
            recorder.get().write(tm.OutputTail(time.time(), lines))
    except Exception:  # noqa: BLE001
        pass


def install() -> None:
    """Wrap sys.stdout and sys.stderr; write the tail when the process ends."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, _Stream):
            setattr(sys, name, _Stream(stream))
    atexit.register(_write_tail)
