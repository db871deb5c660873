"""The rank's telemetry writer, its step counter, and the finder of the user's call site."""

from __future__ import annotations

import os
import sys
import sysconfig
import threading
import time
from typing import Any, Optional

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
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.step = 0  # optimizer steps completed by this rank
        self.lock = threading.Lock()
        self._noted: set[str] = set()

    def write(self, record: Any) -> None:
        try:
            os.write(self.fd, tm.encode(record))
        except OSError:
            pass  # a full disk must not kill the user's job

    def note_once(self, key: str, text: str) -> None:
        """Say once per rank that an instrument could not do its job."""
        if key not in self._noted:
            self._noted.add(key)
            self.write(tm.Note(time.time(), text))


_recorder: Optional[Recorder] = None


def get() -> Recorder:
    assert _recorder is not None, "ddpdoctor instruments used before the bootstrap set them up"
    return _recorder


def set_recorder(recorder: Recorder) -> None:
    global _recorder
    _recorder = recorder
