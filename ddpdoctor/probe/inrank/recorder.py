"""The rank's telemetry writer, its step counter, and the finder of the user's call site."""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, Optional

from ddpdoctor.core import redact
from ddpdoctor.core.paths import display_path, is_user_file
from ddpdoctor.probe.records import jsonl
from ddpdoctor.probe.records import telemetry as tm

# How many outer user frames a site keeps as context ("called from Trainer.fit at train.py:70").
MAX_CALLERS = 3
# code object -> its display path, or None when it is not the user's: decided once per code
# object, so walking a deep framework stack costs a dict lookup per frame.
_USER_CODE: dict[Any, Optional[str]] = {}


def _user_path(code: Any) -> Optional[str]:
    """The display path of a code object of the user's, None for torch, packages, stdlib."""
    try:
        return _USER_CODE[code]
    except KeyError:
        pass
    filename = code.co_filename
    path = display_path(filename) if is_user_file(filename) else None
    if len(_USER_CODE) < 50000:
        _USER_CODE[code] = path
    return path


def _qualname(code: Any) -> str:
    return getattr(code, "co_qualname", code.co_name)


def _callers(frame: Any, callee: Any) -> list[list]:
    """The user frames outside `frame` (innermost first, at most MAX_CALLERS), each as
    [file, line, func, what it called]: the call that led, through library code, to the site."""
    found: list[list] = []
    while frame is not None and len(found) < MAX_CALLERS:
        path = _user_path(frame.f_code)
        if path is not None:
            found.append([path, frame.f_lineno, frame.f_code.co_name, _qualname(callee)])
        callee = frame.f_code
        frame = frame.f_back
    return found


def user_site(depth: int = 1) -> Optional[tm.Site]:
    """The innermost frame of the user's own code (outside torch, ddpdoctor, installed packages
    and the standard library), with the outer user frames that led to it as context."""
    frame = sys._getframe(depth)
    inner = None
    while frame is not None:
        code = frame.f_code
        path = _user_path(code)
        if path is not None:
            return tm.Site(path, frame.f_lineno, code.co_name, _callers(frame.f_back, code),
                           _qualname(inner) if inner is not None else "")
        inner = code
        frame = frame.f_back
    return None


def site_of_traceback(tb) -> Optional[tm.Site]:
    """The innermost user frame of a traceback, with the outer user frames as context."""
    frames = []  # (code, line), outermost first
    while tb is not None:
        frames.append((tb.tb_frame.f_code, tb.tb_lineno))
        tb = tb.tb_next
    for index in range(len(frames) - 1, -1, -1):
        code, line = frames[index]
        path = _user_path(code)
        if path is None:
            continue
        callers = []
        for outer in range(index - 1, -1, -1):
            outer_code, outer_line = frames[outer]
            outer_path = _user_path(outer_code)
            if outer_path is not None and len(callers) < MAX_CALLERS:
                callers.append([outer_path, outer_line, outer_code.co_name,
                                _qualname(frames[outer + 1][0])])
        call = _qualname(frames[index + 1][0]) if index + 1 < len(frames) else ""
        return tm.Site(path, line, code.co_name, callers, call)
    return None


def _user_frames(tb):
    """The traceback from the first frame outside ddpdoctor's bootstrap and runpy on: the user
    should read their own traceback, as `python train.py` would have printed it."""
    from ddpdoctor.core.paths import is_own_file

    while tb is not None and tb.tb_next is not None:
        name = tb.tb_frame.f_code.co_filename
        if not (is_own_file(name) or name.startswith("<frozen runpy>") or name.endswith("runpy.py")):
            break
        tb = tb.tb_next
    return tb


def describe_exception(exc: BaseException, message_chars: int = 4000,
                       traceback_chars: int = 20000) -> tuple[str, str, Optional[tm.Site]]:
    """(message, traceback, where it was raised) of an exception, scrubbed of secrets and
    bounded: what a Crash (and an error in flight at a collective) records."""
    import traceback

    text = redact.scrub("".join(traceback.format_exception(type(exc), exc, _user_frames(exc.__traceback__))))
    return (redact.scrub(str(exc))[:message_chars], text[-traceback_chars:],
            site_of_traceback(exc.__traceback__))


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
        self._escaped = [jsonl.body(v)[1:-1] for v in self._secrets]  # as encode() writes them

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

    data = jsonl.decode(line)
    if data is not None:
        return jsonl.encode(clean(data))
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
