"""The inputs of `ddpdoctor report EVIDENCE...`: which files, what each is, whose rank.

Files and folders in any mix, `.gz` read as a stream. A folder is walked without following links,
and a link to a file outside the folders and files named is not read. Limits: MAX_FILES inputs,
MAX_LOG_BYTES per log (a .gz counted as it expands). Kinds: a Flight Recorder dump (pickle, or
JSON with its keys), a torchelastic error file (JSON with "message"), or a text log; a binary file
that is neither is skipped with a note.

A file's rank: torchrun's `--log-dir` layout `<run>/attempt_<n>/<local_rank>/{stdout,stderr}.log`
and `error.json` (a local rank: the rank itself on one node), or a name that says it
(`rank3.log`, `task-3.out`, `worker_3.err`).
"""

from __future__ import annotations

import gzip
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Optional

from ddpdoctor.attach.flight import looks_dump
from ddpdoctor.core.errors import UsageError
from ddpdoctor.core.files import open_regular
from ddpdoctor.postmortem.elastic import looks_error_file

MAX_FILES = 10000
MAX_LOG_BYTES = 64 * 1024 ** 3
_ATTEMPT = re.compile(r"attempt_\d+$")
_NAMED = re.compile(r"(?:^|[^a-z])(?:rank|task|worker|proc)[-_.]?(\d{1,7})(?:\D|$)", re.IGNORECASE)


@dataclass
class Input:
    path: Path
    shown: str  # the name findings use
    kind: str  # log | dump | error_file
    rank: Optional[int]
    gz: bool


class _Capped:
    """A stream that ends after `limit` bytes (a .gz bomb stops there)."""

    def __init__(self, stream: BinaryIO, limit: int) -> None:
        self.stream, self.left = stream, limit
        self.cut = False

    def read(self, size: int = -1) -> bytes:
        if self.left <= 0:
            self.cut = True
            return b""
        data = self.stream.read(min(size if size > 0 else self.left, self.left))
        self.left -= len(data)
        return data


def open_input(item: Input, limit: int = MAX_LOG_BYTES) -> _Capped:
    raw = gzip.open(item.path, "rb") if item.gz else open(item.path, "rb")
    return _Capped(raw, limit)


def rank_from_path(path: Path) -> Optional[int]:
    parent = path.parent
    if parent.name.isdigit() and _ATTEMPT.match(parent.parent.name or ""):
        return int(parent.name)
    match = _NAMED.search(path.name)
    return int(match.group(1)) if match else None


def collect(paths: list[str]) -> tuple[list[Input], list[str]]:
    """Every input under the paths named, in the order named (a folder's files sorted); notes."""
    notes: list[str] = []
    files: list[Path] = []
    roots: list[Path] = []
    for text in paths:
        path = Path(text)
        if not path.exists():
            raise UsageError(f"{text}: no such file or folder")
        roots.append(path.resolve() if path.is_dir() else path.resolve().parent)
        if not path.is_dir():
            # a device or a FIFO named on the command line is refused like lint refuses it
            open_regular(path, text, "report reads logs, error files and Flight Recorder dumps").close()
        if path.is_dir():
            for folder, dirs, names in os.walk(path, followlinks=False):
                dirs.sort()
                files.extend(Path(folder) / n for n in sorted(names))
        else:
            files.append(path)
        if len(files) > MAX_FILES:
            raise UsageError(f"more than {MAX_FILES} files under {', '.join(paths)}: name fewer")
    inputs = []
    for path in files:
        if path.is_symlink() and not any(_under(path, root) for root in roots):
            notes.append(f"{path}: a link to a file outside the folders named: not read")
            continue
        if not path.is_file():
            continue
        item = _classify(path, notes)
        if item is not None:
            inputs.append(item)
    return inputs, notes


def _under(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root)
    except (ValueError, OSError):
        return False
    return True


def _classify(path: Path, notes: list[str]) -> Optional[Input]:
    gz = path.suffix == ".gz"
    try:
        with (gzip.open(path, "rb") if gz else open(path, "rb")) as handle:
            head = handle.read(65536)
    except (OSError, EOFError) as exc:
        notes.append(f"{path}: not read ({exc})")
        return None
    shown = str(path)
    rank = rank_from_path(path)
    if looks_dump(head):
        return Input(path, shown, "dump", rank, gz)
    if looks_error_file(head):
        return Input(path, shown, "error_file", rank, gz)
    if b"\0" in head:
        notes.append(f"{path}: binary, neither a log nor a Flight Recorder dump: skipped")
        return None
    return Input(path, shown, "log", rank, gz)
