"""torchelastic's record of a failed job: the ChildFailedError summary torchrun prints, the
agent's lines about its workers, and the error files (`error.json`) the ranks wrote.

The summary (torch/distributed/elastic/multiprocessing/errors/__init__.py) is a block:

    <script> FAILED
    ------------------
    Failures:
    [1]:
      time      : 2024-05-01_12:00:00
      host      : node3
      rank      : 5 (local_rank: 1)
      exitcode  : -9 (pid: 4242)
      error_file: <N/A>
      traceback : Signal 9 (SIGKILL) received by PID 4242
    ------------------
    Root Cause (first observed failure):
    [0]:
      ...

"Root Cause" is the failure with the smallest timestamp, which is the time the agent observed
it or the error file's: a rank the watchdog aborted can come first. The agent also logs `failed
(exitcode: E) local_rank: L (pid: P) of binary: ...` and `Sending process P closing signal SIG`.
An error file is JSON: `{"message": {"message": "Type: text", "extraInfo": {"py_callstack":
"<traceback>", "timestamp": "<epoch>"}}}` (or `{"message": "...", "timestamp": N}`).
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from typing import Any, Optional

from ddpdoctor.postmortem.evidence import MAX_TEXT, ChildFailure, Evidence, Line

_FIELD = re.compile(r"^\s*(time|host|rank|exitcode|error_file|traceback)\s*: ?(.*)$")
_RANK = re.compile(r"(-?\d+) \(local_rank: (-?\d+)\)")
_EXIT = re.compile(r"(-?\d+) \(pid: (\d+)\)")
_AGENT_FAILED = re.compile(r"failed \(exitcode: (-?\d+)\) local_rank: (\d+) \(pid: (\d+)\)")
_CLOSING = re.compile(r"Sending process (\d+) closing signal (\w+)")
_ENTRY = re.compile(r"^\s*\[(\d+)\]:\s*$")
# Its block follows torchrun's traceback (read with it); "Root Cause" finds one printed alone.
ANCHORS = (b"Root Cause",)


class Summaries:
    """Reads the summary blocks of one input, line by line (launcher lines: no rank prefix)."""

    def __init__(self) -> None:
        self._in_root = False
        self._current: Optional[ChildFailure] = None
        self._active = False

    @property
    def active(self) -> bool:
        return self._active

    def feed(self, text: str, where: Line, order: int, ev: Evidence) -> bool:
        stripped = text.strip()
        if stripped.startswith("Failures:"):
            self._active, self._in_root = True, False
            return True
        if stripped.startswith("Root Cause (first observed failure)"):
            self._active, self._in_root = True, True
            return True
        match = _AGENT_FAILED.search(text)
        if match:
            exitcode, local, pid = (int(x) for x in match.groups())
            _agent_pid(ev, local, pid)
            return True
        match = _CLOSING.search(text)
        if match:
            return True
        if not self._active:
            return False
        if _ENTRY.match(stripped):
            self._current = None
            return True
        field = _FIELD.match(text)
        if not field:
            if stripped.startswith(("=", "-")) or not stripped:
                if stripped.startswith("="):
                    self._active = False
                return True
            if self._current is not None and self._current.message:
                return True  # a traceback that goes on over lines: its first line is enough
            return False
        key, value = field.group(1), field.group(2).strip()
        if key == "time":
            self._current = ChildFailure(None, where, _elastic_time(value), order, root=self._in_root)
            ev.children.append(self._current)
            return True
        current = self._current
        if current is None:
            current = self._current = ChildFailure(None, where, None, order, root=self._in_root)
            ev.children.append(current)
        if key == "host":
            current.host = value[:200]
        elif key == "rank":
            match = _RANK.match(value)
            if match:
                current.rank, current.local_rank = int(match.group(1)), int(match.group(2))
                current.where = where
        elif key == "exitcode":
            match = _EXIT.match(value)
            if match:
                current.exitcode, current.pid = int(match.group(1)), int(match.group(2))
                if current.rank is not None:
                    ev.pids.setdefault(current.pid, current.rank)
        elif key == "error_file":
            current.error_file = value[:500]
        elif key == "traceback":
            current.message = value[:MAX_TEXT]
        return True


def _agent_pid(ev: Evidence, local_rank: int, pid: int) -> None:
    # The agent names local ranks; on one node (the only case a single log shows) they are ranks.
    ev.pids.setdefault(pid, local_rank)


def _elastic_time(value: str) -> Optional[float]:
    try:
        return datetime.strptime(value.strip(), "%Y-%m-%d_%H:%M:%S").replace(tzinfo=timezone.utc).timestamp()
    except ValueError:
        return None


def read_error_file(data: Any) -> Optional[tuple[str, str, Optional[float]]]:
    """(message, traceback, timestamp) of an error file's JSON, or None when it is not one."""
    if not isinstance(data, dict) or "message" not in data:
        return None
    message = data["message"]
    stamp: Any = data.get("timestamp")
    callstack = ""
    if isinstance(message, dict):
        extra = message.get("extraInfo") if isinstance(message.get("extraInfo"), dict) else {}
        callstack = str(extra.get("py_callstack") or "")
        stamp = extra.get("timestamp", stamp)
        message = message.get("message", "")
    try:
        t = float(stamp) if stamp not in (None, "") else None
    except (TypeError, ValueError):
        t = None
    return str(message)[:MAX_TEXT], callstack[:MAX_TEXT * 4], t


def looks_error_file(head: bytes) -> bool:
    return head.lstrip().startswith(b"{") and b'"message"' in head and b'"entries"' not in head


def load_json(raw: bytes) -> Any:
    return json.loads(raw)
