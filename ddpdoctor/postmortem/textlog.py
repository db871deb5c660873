"""One streamed pass over a text log: every rank's facts, with their file:line.

A log can be gigabytes, most of it progress lines. It is read in blocks, and only lines holding an
anchor word are decoded and read (a traceback's start, the watchdog's, `NCCL WARN`, the teardown's,
the OOM killer's, torchrun's summary), plus the lines that follow one: an open traceback's frames
and exception, torchrun's summary block after its traceback, the PG status and desync report after
a watchdog line. Anchors are found with bytes.find, one pass each (several times faster than one
regular expression of alternatives). A line longer than MAX_LINE is cut; memory stays one block
and the facts.
"""

from __future__ import annotations

from typing import BinaryIO, Optional

from ddpdoctor.postmortem import c10d, elastic, nccl, oom, prefixes, stopped
from ddpdoctor.postmortem.evidence import Evidence, Line, RankError
from ddpdoctor.postmortem.tracebacks import START, Tracebacks
from ddpdoctor.postmortem.kinds import error_kind

BLOCK = 8 * 1024 * 1024
MAX_LINE = 64 * 1024
FOLLOW = 400  # lines read one by one after a traceback or summary line, whatever their words
AFTER_WATCHDOG = 40  # ... after a watchdog line: its PG status, its desync report
ANCHORS = (b"Traceback", *c10d.ANCHORS, *nccl.ANCHORS, *oom.ANCHORS, *elastic.ANCHORS, *stopped.ANCHORS)


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
        hits = sorted(_anchors(data))
        pos = 0  # start of the next line not yet counted
        size = len(data)
        next_hit = 0
        while pos < size:
            if self.follow > 0:
                end = data.find(b"\n", pos)
                self.lineno += 1
                self._line(data[pos:min(end, pos + MAX_LINE)])
                pos = end + 1
                continue
            while next_hit < len(hits) and hits[next_hit] < pos:
                next_hit += 1
            if next_hit == len(hits):
                self.lineno += data.count(b"\n", pos)
                return
            at = hits[next_hit]
            start = data.rfind(b"\n", 0, at) + 1
            self.lineno += data.count(b"\n", pos, start)
            end = data.find(b"\n", at)
            self.lineno += 1
            self._line(data[start:min(end, start + MAX_LINE)])
            pos = end + 1

    def _line(self, raw: bytes) -> None:
        text = raw.decode("utf-8", "replace").rstrip("\r")
        if self.srun is None and text.strip():
            self.srun = prefixes.looks_srun(prefixes.split_collector(text)[1])
        lead_t, body = prefixes.split_collector(text)
        rank, rest = prefixes.split_rank(body, bool(self.srun))
        pid = None
        if rank is None:
            pid, rest = prefixes.split_pid(rest)
            rank = self.ev.pids.get(pid) if pid is not None else self.file_rank
        where = Line(self.name, self.lineno, text[:1000])
        order = self.order_base + self.lineno
        # A traceback is assembled per process: per rank, or per pid where only a pid is known (Ray).
        used = self.tracebacks.feed(rank if rank is not None or pid is None else ("pid", pid), rest, where)
        if not used:
            t = prefixes.timestamp(rest) or lead_t
            inner = prefixes.rank_in_text(rest)
            who = rank if rank is not None else inner
            if rank is not None:
                self.ev.ranks.add(rank)
            used = (c10d.read(rest, who, where, t, order, self.ev)
                    or nccl.read(rest, who, where, t, order, self.ev)
                    or oom.read(rest, who, where, t, order, self.ev)
                    or stopped.read(rest, where, t, order, self.ev)
                    or (rank is None and self.summaries.feed(rest, where, order, self.ev)))
        elif rank is not None:
            self.ev.ranks.add(rank)
        if self.tracebacks.busy or self.summaries.active:
            self.follow = FOLLOW
        elif used and ("Watchdog caught" in rest or c10d.STACK in rest):
            self.follow = max(self.follow - 1, AFTER_WATCHDOG)
        else:
            self.follow = max(0, self.follow - 1)

    def _collect(self) -> None:
        for source, done in self.tracebacks.take():
            rank = self.ev.pids.get(source[1]) if isinstance(source, tuple) else source
            if source is None and "ChildFailedError" in done.exc_type:
                continue  # torchrun's own traceback: its summary block follows and is read
            message = done.message
            if stopped.from_traceback(done.exc_type, message, done.where, self.order_base + done.where.line,
                                      self.ev):
                continue  # the launcher's own (never a rank's): how the job ended, not an error
            first = f"{done.first_type}: {done.first_message}" if done.first_type else ""
            kind = error_kind(done.exc_type, message + "\n" + first + "\n" + done.text)
            if not self.ev.room(self.ev.errors):
                continue
            self.ev.errors.append(RankError(
                rank, done.where, None, self.order_base + done.where.line, exc_type=done.exc_type,
                message=message, traceback=done.text, site=done.site,
                collateral=kind == "collateral", kind="own" if kind == "collateral" else kind))

    def _finish(self) -> None:
        self.tracebacks.flush()
        self._collect()
        self.ev.lines_read += self.lineno


def _anchors(data: bytes) -> list[int]:
    """Where an anchor word starts in the block (each found by bytes.find, one pass per word)."""
    out = []
    for word in ANCHORS:
        at = data.find(word)
        while at >= 0:
            out.append(at)
            if len(out) > 1_000_000:
                return out  # a block of nothing but anchors: read line by line from the first
            at = data.find(word, at + 1)
    return out
