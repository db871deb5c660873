"""One streamed pass over a text log: every rank's facts, with their file:line.

A log can be gigabytes, most of it progress lines. It is read in blocks, and only lines holding a
trigger word (a traceback's start, the watchdog's words, `NCCL WARN`, the OOM killer's...) are
decoded and read line by line, plus the lines that follow an open traceback or summary block (its
frames and exception). A line longer than MAX_LINE is cut; memory stays one block and the facts.
"""

from __future__ import annotations

import re
from typing import BinaryIO, Optional

from ddpdoctor.postmortem import c10d, elastic, nccl, oom, prefixes
from ddpdoctor.postmortem.evidence import Evidence, Line, RankError
from ddpdoctor.postmortem.tracebacks import START, Tracebacks
from ddpdoctor.postmortem.kinds import error_kind

BLOCK = 8 * 1024 * 1024
MAX_LINE = 64 * 1024
FOLLOW = 400  # lines read one by one after a traceback or summary line, whatever their words
_TRIGGER = re.compile("|".join(re.escape(w) for w in (
    START, *c10d.TRIGGERS, *nccl.TRIGGERS, *oom.TRIGGERS, *elastic.TRIGGERS)).encode())


class LogReader:
    """Reads one input; `rank` is the file's own rank when its name or folder gives one."""

    def __init__(self, ev: Evidence, name: str, rank: Optional[int], order_base: int) -> None:
        self.ev = ev
        self.name = name
        self.file_rank = rank
        self.order_base = order_base
        self.tracebacks = Tracebacks()
        self.summaries = elastic.Summaries()
        self.srun: Optional[bool] = None
        self.follow = 0
        self.lineno = 0

    def read(self, stream: BinaryIO) -> None:
        rest = b""
        while True:
            block = stream.read(BLOCK)
            if not block:
                break
            self.ev.bytes_read += len(block)
            data = rest + block
            cut = data.rfind(b"\n")
            if cut < 0:
                if len(data) > MAX_LINE:  # a line without end: keep its head only
                    data = data[:MAX_LINE]
                rest = data
                continue
            rest = data[cut + 1:]
            if len(rest) > MAX_LINE:
                rest = rest[:MAX_LINE]
            self._block(data[:cut + 1])
        if rest:
            self._block(rest + b"\n")
        self._finish()

    def _block(self, data: bytes) -> None:
        pos = 0  # start of the next line not yet counted
        size = len(data)
        while pos < size:
            if self.follow > 0:
                end = data.find(b"\n", pos)
                self.lineno += 1
                self._line(data[pos:min(end, pos + MAX_LINE)])
                pos = end + 1
                continue
            match = _TRIGGER.search(data, pos)
            if match is None:
                self.lineno += data.count(b"\n", pos)
                return
            start = data.rfind(b"\n", 0, match.start()) + 1
            self.lineno += data.count(b"\n", pos, start)
            end = data.find(b"\n", match.start())
            self.lineno += 1
            self._line(data[start:min(end, start + MAX_LINE)])
            pos = end + 1

    def _line(self, raw: bytes) -> None:
        text = raw.decode("utf-8", "replace").rstrip("\r")
        if self.srun is None and text.strip():
            self.srun = prefixes.looks_srun(text)
        rank, rest = prefixes.split_rank(text, bool(self.srun))
        if rank is None:
            rank = self.file_rank
        where = Line(self.name, self.lineno, text[:1000])
        order = self.order_base + self.lineno
        used = self.tracebacks.feed(rank, rest, where)
        if not used:
            t = prefixes.timestamp(rest)
            inner = prefixes.rank_in_text(rest)
            who = rank if rank is not None else inner
            if rank is not None:
                self.ev.ranks.add(rank)
            used = (c10d.read(rest, who, where, t, order, self.ev)
                    or nccl.read(rest, who, where, t, order, self.ev)
                    or oom.read(rest, who, where, t, order, self.ev)
                    or (rank is None and self.summaries.feed(rest, where, order, self.ev)))
        elif rank is not None:
            self.ev.ranks.add(rank)
        self.follow = FOLLOW if (self.tracebacks.busy or self.summaries.active) else max(0, self.follow - 1)

    def _collect(self) -> None:
        for rank, done in self.tracebacks.take():
            if rank is None and "ChildFailedError" in done.exc_type:
                continue  # torchrun's own traceback: its summary block follows and is read
            message = done.message
            first = f"{done.first_type}: {done.first_message}" if done.first_type else ""
            kind = error_kind(done.exc_type, message + "\n" + first + "\n" + done.text)
            self.ev.errors.append(RankError(
                rank, done.where, None, self.order_base + done.where.line, exc_type=done.exc_type,
                message=message, traceback=done.text, site=done.site,
                collateral=kind == "collateral", kind="own" if kind == "collateral" else kind))

    def _finish(self) -> None:
        self.tracebacks.flush()
        self._collect()
        self.ev.lines_read += self.lineno
