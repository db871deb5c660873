"""Python tracebacks in a rank's output, assembled per rank while the ranks' lines interleave.

A traceback starts at `Traceback (most recent call last):`, lists `File "...", line N, in f`
frames (each followed by its source line), and ends with the exception line (`RuntimeError: ...`,
`torch.distributed.DistBackendError: ...`), whose message may go on over further lines. Chained
exceptions ("During handling of the above exception..." / "The above exception was the direct
cause...") belong to one failure: the first exception is what went wrong, the last what was
raised; both are kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from ddpdoctor.core.findings import Location
from ddpdoctor.core.paths import display_path
from ddpdoctor.postmortem.evidence import MAX_TEXT, Line

START = "Traceback (most recent call last):"
_FRAME = re.compile(r'^\s+File "([^"]+)", line (\d+)(?:, in (.+))?$')
_EXCEPTION = re.compile(r"^((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Failure|Timeout|Warning|Exited))(?::\s?(.*))?$")
_RECORD = re.compile(r"^\[[IWEF]\d{4} |NCCL (?:WARN|INFO)|^\S+:\d+:\d+ \[")
_CHAIN = ("During handling of the above exception", "The above exception was the direct cause")
_LIBRARY = ("/site-packages/", "/dist-packages/", "/lib/python3", "<frozen", "<string>")
MAX_FRAMES = 200
MAX_MESSAGE_LINES = 30
MAX_TRACEBACKS = 10000  # per input: a log that prints one per step still ends


@dataclass
class Assembled:
    """One finished traceback."""

    exc_type: str
    message: str
    text: str
    where: Line  # the exception line
    site: Optional[Location]
    first_type: str = ""  # the first exception of a chain
    first_message: str = ""


@dataclass
class _Open:
    start: Line
    lines: list[str] = field(default_factory=list)
    frames: list[tuple[str, int, str]] = field(default_factory=list)
    exc: Optional[tuple[str, str, Line]] = None
    message_lines: int = 0
    chained_from: Optional[Assembled] = None
    chain_pending: bool = False


class Tracebacks:
    """Feed every line of one rank (or of the launcher, rank None); take finished tracebacks."""

    def __init__(self) -> None:
        self._open: dict[Optional[int], _Open] = {}
        self._last_done: dict[Optional[int], Assembled] = {}
        self.done: list[tuple[Optional[int], Assembled]] = []
        self._chain_marked: dict[Optional[int], bool] = {}

    @property
    def busy(self) -> bool:
        return bool(self._open)

    def feed(self, rank: Optional[int], text: str, where: Line) -> bool:
        """Take one line; True when it belonged to a traceback."""
        state = self._open.get(rank)
        stripped = text.rstrip()
        if stripped.endswith(START) and stripped.strip() == START:
            chained = None
            if state is not None:
                self._finish(rank, state)
            last = self._last_done.get(rank)
            if last is not None and self._chain_marked.get(rank):
                chained = last
            self._chain_marked[rank] = False
            self._open[rank] = _Open(where, [stripped.strip()], chained_from=chained)
            return True
        if any(marker in stripped for marker in _CHAIN):
            self._chain_marked[rank] = True
            if state is not None:
                self._finish(rank, state)
            return True
        if state is None:
            return False
        frame = _FRAME.match(stripped)
        if frame and state.exc is None:
            if len(state.frames) < MAX_FRAMES:
                state.frames.append((frame.group(1), int(frame.group(2)), frame.group(3) or ""))
            self._keep(state, stripped)
            return True
        if state.exc is None:
            match = _EXCEPTION.match(stripped.strip()) if not stripped.startswith((" ", "\t")) else None
            if match:
                state.exc = (match.group(1), match.group(2) or "", where)
                self._keep(state, stripped)
                if "ChildFailedError" in match.group(1):
                    self._finish(rank, state)  # torchrun's summary block follows: not a message
                return True
            if stripped.startswith((" ", "\t", "^", "~")) or not stripped:
                self._keep(state, stripped)  # a frame's source line, or its ^^^ marker
                return True
            return False  # another rank's or the launcher's plain line: not ours
        # After the exception line: its message's further lines, up to a blank line or a line
        # that is a log record of its own (the C++ logger's, NCCL's).
        if not stripped or state.message_lines >= MAX_MESSAGE_LINES or _RECORD.search(stripped):
            self._finish(rank, state)
            return bool(not stripped)
        name, message, at = state.exc
        state.exc = (name, message + "\n" + stripped, at)
        state.message_lines += 1
        self._keep(state, stripped)
        return True

    def flush(self) -> None:
        for rank, state in list(self._open.items()):
            self._finish(rank, state)

    def _keep(self, state: _Open, text: str) -> None:
        if sum(len(x) for x in state.lines) < MAX_TEXT:
            state.lines.append(text)

    def _finish(self, rank: Optional[int], state: _Open) -> None:
        self._open.pop(rank, None)
        if state.exc is None:
            return
        name, message, at = state.exc
        done = Assembled(name, message.strip(), "\n".join(state.lines)[:MAX_TEXT], at,
                         user_site(state.frames))
        first = state.chained_from
        if first is not None:
            done.first_type, done.first_message = first.first_type or first.exc_type, first.first_message or first.message
            done.site = done.site or first.site
            done.text = (first.text + "\n\n" + done.text)[:MAX_TEXT]
            self.done = [(r, d) for r, d in self.done if d is not first]
        self._last_done[rank] = done
        if len(self.done) < MAX_TRACEBACKS:
            self.done.append((rank, done))

    def take(self) -> list[tuple[Optional[int], Assembled]]:
        out, self.done = self.done, []
        return out


def is_library(path: str) -> bool:
    """An installed library's file or Python's own, not the user's code."""
    return any(marker in path for marker in _LIBRARY)


def user_site(frames: list[tuple[str, int, str]]) -> Optional[Location]:
    """The innermost frame in the user's own code (not an installed library's, not Python's)."""
    for path, line, _ in reversed(frames):
        if not is_library(path):
            return Location(display_path(path), line)
    return None
