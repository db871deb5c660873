"""The rank's telemetry writer, its step counter, and the finder of the user's call site."""

from __future__ import annotations

import json
import os
import sys
import sysconfig
import threading
import time
from typing import Any, Optional

from ddpdoctor.core import redact
from ddpdoctor.probe import telemetry as tm

_SKIP_DIRS: tuple[str, ...] = ()


def _skip_dirs() -> tuple[str, ...]:
    """Directories whose frames are never 'the user's code': torch, ddpdoctor, the stdlib."""
    global _SKIP_DIRS
    if not _SKIP_DIRS:
        import torch

        import ddpdoctor

        dirs = {os.path.dirname(torch.__file__), os.path.dirname(ddpdoctor.__file__)}
        for key in ("stdlib", "platstdlib"):
            path = sysconfig.get_paths().get(key)
            if path:
                dirs.add(path)
        _SKIP_DIRS = tuple(d.rstrip(os.sep) + os.sep for d in dirs)
    return _SKIP_DIRS


def display_path(path: str) -> str:
    """A path as a user reads it: relative to the working directory when it lies beneath it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def user_site(depth: int = 1) -> Optional[tm.Site]:
    """The innermost frame outside torch, ddpdoctor and the standard library."""
    skip = _skip_dirs()
    frame = sys._getframe(depth)
    fallback = None
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith("<") and not filename.startswith(skip):
            return tm.Site(display_path(filename), frame.f_lineno, frame.f_code.co_name)
        if fallback is None and not filename.startswith("<"):
            fallback = frame
        frame = frame.f_back
    return None


def site_of_traceback(tb) -> Optional[tm.Site]:
    """The innermost user frame of a traceback."""
    skip = _skip_dirs()
    found = None
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if not filename.startswith("<") and not filename.startswith(skip):
            found = tm.Site(display_path(filename), tb.tb_lineno, tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
    return found


class Recorder:
    """Appends telemetry records to rank-<R>.jsonl, one os.write per record.

    O_APPEND and one write per line keep lines whole across threads (gloo's callback thread
    writes bucket timings) and across a SIGKILL at any moment.

    A recorder made without a path is pending: a process started by the script itself (mp.spawn)
    learns its rank only from init_process_group, so it keeps its records in memory until
    `bind` names its file.
    """

    def __init__(self, path: Optional[str]) -> None:
        self.path = path
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600) if path else -1
        self.buffer: list[bytes] = []
        self.step = 0  # optimizer steps completed by this rank
        # Seconds spent per phase since the previous optimizer step (steps.py writes and resets).
        self.phases: dict[str, float] = {}
        self.samples = 0  # samples the loaders yielded since the previous step
        self.lock = threading.Lock()
        self._noted: set[str] = set()
        # Values of secret-looking variables never reach the file, whichever record carries
        # them (the script's argv in Start, a message in Note or Crash): read once per process.
        self._secrets = redact.secret_values()
        self._escaped = [json.dumps(v)[1:-1].encode() for v in self._secrets]  # as encode() writes them

    @property
    def pending(self) -> bool:
        return self.fd < 0

    def bind(self, path: str) -> None:
        """Give a pending recorder its file and write what it kept so far."""
        if not self.pending:
            return
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.path = path
        buffered, self.buffer = self.buffer, []
        for line in buffered:
            self._emit(line)

    def _emit(self, line: bytes) -> None:
        if any(secret in line for secret in self._escaped):  # rare: only then the slow way
            line = _scrubbed(line, self._secrets, self._escaped)
        try:
            os.write(self.fd, line)
        except OSError:
            pass  # a full disk must not kill the user's job

    def write(self, record: Any) -> None:
        line = tm.encode(record)
        if self.fd < 0:
            if len(self.buffer) < 10000:
                self.buffer.append(line)
            return
        self._emit(line)

    def add_phase(self, name: str, seconds: float) -> None:
        self.phases[name] = self.phases.get(name, 0.0) + seconds

    def note_once(self, key: str, text: str) -> None:
        """Say once per rank that an instrument could not do its job."""
        if key not in self._noted:
            self._noted.add(key)
            self.write(tm.Note(time.time(), text))


def _scrubbed(line: bytes, secrets: list[str], escaped: list[bytes]) -> bytes:
    """The record with the secrets replaced in its string values only: a secret that happens to
    spell a field name must not cost the record."""
    def clean(value: Any) -> Any:
        if isinstance(value, str):
            return redact.scrub(value, secrets)
        if isinstance(value, list):
            return [clean(v) for v in value]
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        return value

    try:
        return (json.dumps(clean(json.loads(line)), separators=(",", ":")) + "\n").encode()
    except ValueError:
        for secret in escaped:
            line = line.replace(secret, redact.REDACTED.encode())
        return line


_recorder: Optional[Recorder] = None


def get() -> Recorder:
    assert _recorder is not None, "ddpdoctor instruments used before the bootstrap set them up"
    return _recorder


def set_recorder(recorder: Recorder) -> None:
    global _recorder
    _recorder = recorder


def _fresh_after_fork() -> None:
    # A forked child (a DataLoader worker, or a rank started with fork) is not the process its
    # parent was: it starts pending, and becomes a rank only if it calls init_process_group.
    global _recorder
    if _recorder is not None:
        _recorder = Recorder(None)


os.register_at_fork(after_in_child=_fresh_after_fork)
