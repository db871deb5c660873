"""The evidence observation: what a dead job left, as recorded facts (the post-mortem's stage).

Parsers (one module per kind of evidence) fill it; `causality.py` orders it (first cause,
consequences); the checks of the "evidence" stage judge it. Every fact keeps the place it was read
(`Line`: file and line number), which is what a finding shows as its evidence.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ddpdoctor.attach.flight import DumpSet
from ddpdoctor.core.findings import Location

MAX_TEXT = 4000  # a traceback or report kept per fact, at most (a log line can be megabytes)
MAX_FACTS = 200_000  # facts of one kind kept; more are counted, not kept (memory stays bounded)


@dataclass(frozen=True)
class Line:
    """Where a fact was read: a file, its line (1-based), and the line's text (bounded)."""

    file: str
    line: int
    text: str = ""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"

    def shown(self) -> str:
        """"train.log:812: [rank1]:[E...] Watchdog caught ..." (the text cut at 300 characters)."""
        text = self.text if len(self.text) <= 300 else self.text[:297] + "..."
        return f"{self}: {text}"


@dataclass
class Fact:
    """Something one rank (or the host) left. `t`: seconds since the epoch, or None when the line
    had no time; `order`: the position it was read at across every input, which orders facts that
    have no time within one file."""

    rank: Optional[int]
    where: Line
    t: Optional[float] = None
    order: int = 0


@dataclass
class RankError(Fact):
    """A Python exception that ended a rank: its last traceback line and the user's frame."""

    exc_type: str = ""
    message: str = ""
    traceback: str = ""
    site: Optional[Location] = None
    collateral: bool = False  # the rank failed because a peer vanished or its watchdog fired
    kind: str = "own"  # what it is: own | unused_parameters | mismatch | rendezvous | port_in_use | nccl | shm | device

    def summary(self) -> str:
        first = (self.message or "").strip().splitlines()
        line = first[0] if first else ""
        if len(line) > 200:
            line = line[:197] + "..."
        return f"{self.exc_type}: {line}" if line else self.exc_type


@dataclass
class WatchdogTimeout(Fact):
    """`Watchdog caught collective operation timeout: WorkNCCL(SeqNum=, OpType=, ...) ran for N
    milliseconds`: printed by a rank that waited, not by the culprit."""

    seq: int = -1
    op: str = ""
    numel_in: Optional[int] = None
    numel_out: Optional[int] = None
    timeout_ms: Optional[int] = None
    ran_ms: Optional[int] = None
    pg: str = ""
    site: Optional[Location] = None  # the user's line that called it (the failed collective's stack)


@dataclass
class PgStatus(Fact):
    """`failure detected by watchdog at work sequence id: N PG status: last enqueued work: E, last
    completed work: C` (older: `Last enqueued NCCL work: E, last completed NCCL work: C`)."""

    failed_seq: Optional[int] = None
    last_enqueued: Optional[int] = None
    last_completed: Optional[int] = None
    pg: str = ""


@dataclass
class DesyncReport(Fact):
    """TORCH_NCCL_DESYNC_DEBUG's verdict: ranks that never joined, or joined but did not finish
    collective #N, or finished #N but did not join #N+1."""

    never_joined: list[int] = field(default_factory=list)
    not_finished: list[int] = field(default_factory=list)
    not_joined_next: list[int] = field(default_factory=list)
    seq: Optional[int] = None


@dataclass
class ChildFailure(Fact):
    """One entry of torchelastic's ChildFailedError summary, or its error file."""

    local_rank: Optional[int] = None
    exitcode: Optional[int] = None
    pid: Optional[int] = None
    host: str = ""
    error_file: str = ""
    message: str = ""
    root: bool = False  # listed under "Root Cause (first observed failure)"


@dataclass
class NcclWarn(Fact):
    """An `NCCL WARN` line (host:pid:tid [dev] NCCL WARN ...) or an NCCL error raised in a rank:
    kind is shm | ib | system | cuda | internal | remote | other."""

    kind: str = "other"
    host: str = ""
    pid: Optional[int] = None
    text: str = ""
    vendor_err: Optional[int] = None


@dataclass
class Stopped(Fact):
    """The job was ended from outside: torchrun's agent got a signal (`by` "torchrun"), or SLURM
    cancelled the job or step (`by` "slurm", with the job, host and reason it gave)."""

    by: str = ""
    signal: str = ""
    job: str = ""
    host: str = ""
    reason: str = ""


@dataclass
class OomKill(Fact):
    """The kernel's OOM killer ended a process (dmesg / journal)."""

    pid: int = 0
    process: str = ""


@dataclass
class Teardown(Fact):
    """A rank's exit without destroy_process_group: the destructor warning, or the heartbeat
    monitor firing after the job's own work ended."""

    kind: str = "not_destroyed"  # not_destroyed | heartbeat


@dataclass
class Evidence:
    """Everything read from the inputs. The lists are in reading order (`Fact.order`)."""

    sources: list[str] = field(default_factory=list)
    ranks: set[int] = field(default_factory=set)  # every rank some line named
    world_size: Optional[int] = None
    errors: list[RankError] = field(default_factory=list)
    timeouts: list[WatchdogTimeout] = field(default_factory=list)
    pg_status: list[PgStatus] = field(default_factory=list)
    desync: list[DesyncReport] = field(default_factory=list)
    children: list[ChildFailure] = field(default_factory=list)
    nccl: list[NcclWarn] = field(default_factory=list)
    ooms: list[OomKill] = field(default_factory=list)
    teardowns: list[Teardown] = field(default_factory=list)
    stopped: list[Stopped] = field(default_factory=list)  # how the job was ended from outside
    pids: dict[int, int] = field(default_factory=dict)  # pid -> rank, where the logs say
    # Reading state, not a fact: the timeout whose "Stack trace of the failed collective" frames
    # the next lines give (c10d.py).
    open_stack: Optional[WatchdogTimeout] = None
    flight: Optional[DumpSet] = None  # the Flight Recorder dumps of this job, where some were read
    notes: list[str] = field(default_factory=list)
    lines_read: int = 0
    dropped: int = 0  # facts beyond MAX_FACTS of their kind
    bytes_read: int = 0

    def room(self, facts: list) -> bool:
        """Whether one more fact of this kind is kept (MAX_FACTS); the rest are only counted."""
        if len(facts) < MAX_FACTS:
            return True
        self.dropped += 1
        return False

    def rank_of_pid(self, pid: Optional[int]) -> Optional[int]:
        return self.pids.get(pid) if pid is not None else None

    @property
    def empty(self) -> bool:
        """Nothing a check could judge was found."""
        return not (self.errors or self.timeouts or self.pg_status or self.desync or self.children
                    or self.nccl or self.ooms or self.teardowns or self.stopped or (self.flight and self.flight.dumps))
