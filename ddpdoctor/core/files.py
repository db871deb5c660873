"""Writing files so that a crash at any moment leaves either the old file or the whole new one;
opening a file a user named only when it is a regular file."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO

from ddpdoctor.core.errors import ToolFailure, UsageError


def open_regular(path: str | os.PathLike, shown: str, reads: str) -> BinaryIO:
    """A file the user named, opened for reading only when it is a regular file: a device, a FIFO
    or a directory is refused (exit 2) before anything is read (/dev/zero would be read for ever, a
    FIFO would block). `reads` says what the command reads, for the refusal's words."""
    try:
        # O_NONBLOCK: opening a FIFO with no writer must not block before fstat can refuse it
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise UsageError(f"cannot read {shown}: {exc.strerror or exc}") from None
    # fstat before fdopen: fdopen itself refuses a directory with IsADirectoryError
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UsageError(f"{shown} is not a regular file (a device, a FIFO, a directory): {reads}")
    return os.fdopen(fd, "rb")


def write_atomic(path: str | os.PathLike, text: str, mode: int = 0o644) -> Path:
    """Write `text` to a temporary file beside `path`, fsync it, then rename it into place."""
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise ToolFailure(f"cannot write {target}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):  # a full disk, a quota: ddpdoctor's failure, one line
            raise ToolFailure(f"cannot write {target}: {exc.strerror or exc}") from None
        raise
    return target
