"""Writing files so that a crash at any moment leaves either the old file or the whole new one."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ddpdoctor.core.errors import ToolFailure


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
