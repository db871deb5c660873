"""The one reader of a rank's files (rank-<R>.jsonl, rank-<R>.stack) while the job runs and
after: it follows a file from an offset, hands back whole lines only (a record being written
waits for its newline: a rank writes each with one os.write, so at most the last line is torn),
decodes each with the JSON-lines codec and gives its kind from the record's own "kind" field.

The watchdog (launch/watchdog.py, whose ProgressWatch the live view reads), the node reporter
(launch/node_reporter.py, which forwards whole lines to node 0), the stack collector
(launch/stacks.py) and the analysis (telemetry.read_records) read through it. Each poll costs a
stat per file and reads only what was appended since the last one.

Standard library only: telemetry.py, which the ranks import, reads finished files with it.
"""

import os
from pathlib import Path
from typing import Iterator, NamedTuple, Optional, Union

from ddpdoctor.probe.records import jsonl


class RankLine(NamedTuple):
    """One decoded record line: its kind (the "kind" field) and the whole object."""

    kind: str
    data: dict


class RankFileTail:
    """Follows one rank file from an offset."""

    def __init__(self, path: Union[str, os.PathLike], offset: int = 0) -> None:
        self.path = Path(path)
        self.offset = offset  # the first byte not yet handed out
        self.size = offset  # the largest size seen

    def grew(self) -> bool:
        """The file is longer than when last looked at (one stat; a partial line counts)."""
        try:
            size = self.path.stat().st_size
        except OSError:
            return False
        if size <= self.size:
            return False
        self.size = size
        return True

    def take(self, limit: Optional[int] = None, whole_lines: bool = True) -> bytes:
        """The bytes appended since the offset (at most limit), up to the last newline when
        whole_lines (a torn or unfinished last line stays for the next call); moves the offset."""
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                data = handle.read(-1 if limit is None else limit)
        except OSError:
            return b""
        if whole_lines:
            data = data[:data.rfind(b"\n") + 1]
        self.offset += len(data)
        self.size = max(self.size, self.offset)
        return data

    def text(self) -> str:
        """Everything appended since the offset (a stack dump: no lines to wait for)."""
        return self.take(whole_lines=False).decode("utf-8", "replace")

    def records(self, limit: Optional[int] = None) -> list[RankLine]:
        """The whole record lines appended since the offset, decoded (malformed ones skipped), in
        one pass over them (jsonl.objects)."""
        return list(lines(self.take(limit)))


def read_all(path: Union[str, os.PathLike], offset: int = 0) -> Iterator[RankLine]:
    """Every record of a rank file (from offset, the start of a line), in order, decoded as the
    caller goes (it may stop early). The last line counts when it is whole even without its
    newline; a torn one is skipped. The file is read and turned into text once, and its lines
    decoded in one pass (jsonl.objects): at 1,024 ranks the analysis reads 190,000 records."""
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            data = handle.read()
    except OSError:
        return
    yield from lines(data)


def lines(data: bytes) -> Iterator[RankLine]:
    """Every record line of a piece of a rank file, decoded as the caller goes: the bytes turned
    into text once (a character cut by a bad byte is replaced, as line by line), then one pass
    over the lines."""
    for record in jsonl.objects(data.decode("utf-8", "replace")):
        kind = record.get("kind")
        if isinstance(kind, str):
            yield RankLine(kind, record)
