"""PyTorch's ProcessGroupNCCL messages: watchdog timeouts, the PG status after a failure, the
desync-debug report and the teardown warnings.

Formats (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp and TraceUtils.h):
- `[Rank R] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=S, OpType=OP,
  NumelIn=I, NumelOut=O, Timeout(ms)=T) ran for M milliseconds before timing out.` (NumelIn/Out
  appeared in 2.1; older prints no sizes)
- `[PG ID P PG GUID G(desc) Rank R]  failure detected by watchdog at work sequence id: S PG
  status: last enqueued work: E, last completed work: C`; before 2.3: `Last enqueued NCCL work:
  E, last completed NCCL work: C.`
- desync debug (TORCH_NCCL_DESYNC_DEBUG=1): `ranks [a, b] are the lagging ranks that caused this
  timeout`, `[a, b] joined but didn't finish collective #S`, `[a, b] finished collective #S, but
  didn't join collective #S+1`
- `Stack trace of the failed collective:` (2.5 and later), then one line per frame, innermost
  first: `#0 all_reduce from .../distributed_c10d.py:3068`, ..., `#2 <module> from train.py:41`
  (seen on an H200 with torch 2.11; only the first line carries the `[rankN]:` prefix)
- `process group has NOT been destroyed before we destruct ProcessGroupNCCL` (2.4 and later) and
  the heartbeat monitor's `Heartbeat monitor timed out!` / `watchdog got stuck for N seconds`.
"""

from __future__ import annotations

import re
from typing import Optional

from ddpdoctor.core.findings import Location
from ddpdoctor.core.paths import display_path
from ddpdoctor.postmortem.evidence import DesyncReport, Evidence, Line, PgStatus, Teardown, WatchdogTimeout
from ddpdoctor.postmortem.tracebacks import is_library

_WATCHDOG = re.compile(
    r"Watchdog caught collective operation timeout: Work\w*\(SeqNum=(\d+), OpType=(\w+)"
    r"(?:, NumelIn=(-?\d+), NumelOut=(-?\d+))?(?:, Timeout\(ms\)=(\d+))?\)(?: ran for (\d+) milliseconds)?")
_PG = re.compile(r"\[PG ID (\d+) PG GUID ([^\s\]]+?)(?:\(([^)]*)\))? Rank \d+\]")
_STATUS = re.compile(r"failure detected by watchdog at work sequence id: (\d+) PG status: "
                     r"last enqueued work: (-?\d+), last completed work: (-?\d+)")
_STATUS_OLD = re.compile(r"[Ll]ast enqueued NCCL work: (-?\d+), last completed NCCL work: (-?\d+)")
_MISSING = re.compile(r"ranks \[([\d, ]*)\] are the lagging ranks that caused this timeout")
_NOT_FINISHED = re.compile(r"\[([\d, ]*)\] joined but didn't finish collective #(\d+)")
_NOT_JOINED = re.compile(r"\[([\d, ]*)\] finished collective #(\d+), but didn't join collective #(\d+)")
# Words that start a line worth reading (textlog.py); the desync report's lines come right after
# the watchdog's and are read with it.
STACK = "Stack trace of the failed collective"
_FRAME = re.compile(r"^#(\d{1,4}) (.{1,300}?) from (.{1,1000}):(\d{1,9})\s*$")
# (the old PG status follows a watchdog line)
ANCHORS = (b"Watchdog", b"PG status", b"NOT been destroyed", b"Heartbeat", STACK.encode())


def _frame(text: str, ev: Evidence) -> bool:
    """One frame of the failed collective's stack: the innermost in the user's own code is where
    the collective that timed out was called."""
    match = _FRAME.match(text)
    if not match:
        return False
    timeout = ev.open_stack
    path, line = match.group(3), int(match.group(4))
    if timeout is not None and timeout.site is None and not is_library(path):
        timeout.site = Location(display_path(path), line)
    return True


def _ranks(text: str) -> list[int]:
    return [int(x) for x in re.findall(r"\d+", text)][:100000]


def _pg(text: str) -> str:
    match = _PG.search(text)
    if not match:
        return ""
    return match.group(3) or match.group(1)


def read(text: str, rank: Optional[int], where: Line, t: Optional[float], order: int, ev: Evidence) -> bool:
    """Record the fact on this line, if it is one of PyTorch's; True when it was."""
    if STACK in text:
        # the frames that follow belong to this rank's latest timeout
        ev.open_stack = next((w for w in reversed(ev.timeouts[-64:]) if w.rank == rank), None)
        return True
    if ev.open_stack is not None:
        if text[:1] == "#":
            return _frame(text.strip(), ev)
        ev.open_stack = None  # the stack ended (a blank line, or another rank's line cut it)
    if "Watchdog caught" in text:
        match = _WATCHDOG.search(text)
        if not match:
            return False
        seq, op, nin, nout, timeout, ran = match.groups()
        pg = _pg(text)
        if any(w.rank == rank and w.seq == int(seq) and w.pg == pg for w in ev.timeouts[-64:]):
            return True  # the same timeout again, inside the exception that carries it
        if ev.room(ev.timeouts):
            ev.timeouts.append(WatchdogTimeout(rank, where, t, order, seq=int(seq), op=op,
                                               numel_in=_int(nin), numel_out=_int(nout),
                                               timeout_ms=_int(timeout), ran_ms=_int(ran), pg=pg))
        return True
    match = _STATUS.search(text)
    if match:
        if ev.room(ev.pg_status):
            ev.pg_status.append(PgStatus(rank, where, t, order, failed_seq=int(match.group(1)),
                                         last_enqueued=int(match.group(2)),
                                         last_completed=int(match.group(3)), pg=_pg(text)))
        return True
    match = _STATUS_OLD.search(text)
    if match:
        if ev.room(ev.pg_status):
            ev.pg_status.append(PgStatus(rank, where, t, order, last_enqueued=int(match.group(1)),
                                         last_completed=int(match.group(2)), pg=_pg(text)))
        return True
    for pattern, slot in ((_MISSING, "never_joined"), (_NOT_FINISHED, "not_finished"),
                          (_NOT_JOINED, "not_joined_next")):
        match = pattern.search(text)
        if match:
            report = _desync_for(ev, rank, where, t, order)
            getattr(report, slot).extend(_ranks(match.group(1)))
            if slot != "never_joined":
                report.seq = int(match.group(2))
            return True
    if "NOT been destroyed" in text:
        if ev.room(ev.teardowns):
            ev.teardowns.append(Teardown(rank, where, t, order, kind="not_destroyed"))
        return True
    if "Heartbeat monitor timed out" in text or "watchdog got stuck" in text:
        if ev.room(ev.teardowns):
            ev.teardowns.append(Teardown(rank, where, t, order, kind="heartbeat"))
        return True
    return False


def _desync_for(ev: Evidence, rank, where, t, order) -> DesyncReport:
    # One report spans several lines of one rank: continue the last one if it is that rank's.
    if ev.desync and ev.desync[-1].rank == rank and order - ev.desync[-1].order < 64:
        return ev.desync[-1]
    report = DesyncReport(rank, where, t, order)
    if ev.room(ev.desync):
        ev.desync.append(report)
    return report


def _int(text: Optional[str]) -> Optional[int]:
    return int(text) if text is not None else None
