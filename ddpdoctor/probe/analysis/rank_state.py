"""How each rank's run ended: crashes (exceptions, fatal signals, exit codes), the collective it
was waiting in, and a one-line account of where it was, for messages about the other ranks.
"""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass
from typing import Optional

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.run_model.loaded_run import RankRun, RunModel

from ddpdoctor.probe.analysis.stack_groups import rank_stacks
from ddpdoctor.probe.run_model.busy_or_blocked import collective_text
from ddpdoctor.probe.words.wording import at

# Signals a process dies of by itself. SIGTERM, SIGINT and SIGKILL are what launchers and the
# probe send to tear a job down, so they are not counted as crashes (SIGKILL only in a run
# that crashed with nothing else to blame: the kernel's OOM killer sends it).
_FATAL_SIGNALS = {signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGFPE, signal.SIGILL}

# Errors a rank gets because a peer vanished or never came: consequences, not causes.
_COLLATERAL = re.compile(
    r"connection closed by peer|connection reset by peer|broken pipe|timed out waiting"
    r"|failed to pass monitoredbarrier|received errors while waiting|socket timeout"
    r"|communicator was aborted|collective operation timeout|read error|some nccl operations"
    r"|process group watchdog|signal ?exception|got signal",
    re.IGNORECASE,
)


def is_collateral(message: str) -> bool:
    """An error a rank gets because a peer vanished or never came (the post-mortem reads logs
    with the same words)."""
    return bool(_COLLATERAL.search(message or ""))


UNFINISHED_REDUCTION = "Expected to have finished reduction in the prior iteration"
COLLECTIVE_MISMATCH = "Detected mismatch between collectives"  # TORCH_DISTRIBUTED_DEBUG=DETAIL
READY_TWICE = "Expected to mark a variable ready only once"  # DDP406 reports these crashes
# Words only the probe's TORCH_DISTRIBUTED_DEBUG=DETAIL makes torch say (its collective check and
# its monitored barrier): a plain run of the same script never prints them.
PROBE_WORDED = re.compile(r"Detected mismatch between collectives|monitoredBarrier", re.IGNORECASE)
NORMAL_ENDS = ("max_steps", "script_exit")  # End reasons of a rank that finished by itself


@dataclass
class CrashEvent:
    """One rank's abnormal end: an exception it recorded, a fatal signal or a non-zero exit."""

    rank: int
    kind: str  # "exception" | "signal" | "exit"
    name: str  # exception type or signal name
    message: str
    traceback: str = ""
    site: Optional[tm.Site] = None
    step: Optional[int] = None
    t: Optional[float] = None  # when it happened (a signal: the rank's last record)
    exit_code: Optional[int] = None
    # It happened after the probe began ending the job (Outcome.ended_at): a consequence of the
    # teardown, shown but never blamed.
    after_end: bool = False
    # An exception that was being handled when the rank entered this collective, which never
    # returned (a cleanup barrier in `finally:`): the rank's crash, though it may never have
    # left the script; the wait in the collective is its consequence.
    waited_in: Optional[tm.Collective] = None

    @property
    def collateral(self) -> bool:
        """The rank failed because a peer vanished (or never came), not by its own fault."""
        return self.after_end or (self.kind == "exception" and bool(_COLLATERAL.search(self.message or "")))

    @property
    def probe_worded(self) -> bool:
        """Raised by the probe's own DETAIL check, in words a plain run would never print."""
        return self.kind == "exception" and self.waited_in is None and bool(PROBE_WORDED.search(self.message or ""))

    @property
    def first_line(self) -> str:
        lines = (self.message or "").strip().splitlines()
        return lines[0] if lines else ""

    def summary(self) -> str:
        """"ValueError: bad batch" / "killed by SIGSEGV (signal 11)" / "exited with code 1"."""
        if self.kind == "signal":
            return f"killed by {self.name} (signal {-(self.exit_code or 0)})"
        if self.kind == "exit":
            return f"exited with code {self.exit_code}"
        line = self.first_line
        if len(line) > 200:
            line = line[:197] + "..."
        return f"{self.name}: {line}" if line else self.name

    def signature(self) -> tuple:
        """Ranks that crashed "the same way" share this: type, message without numbers, site."""
        text = re.sub(r"\d+", "N", self.first_line)
        site = (self.site.file, self.site.line) if self.site else None
        return (self.kind, self.name, text, site)


def exit_codes(run: RunModel) -> dict[int, Optional[int]]:
    return dict(run.outcome.exit_codes) if run.outcome is not None else {}


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def error_in_flight(rank_run: RankRun) -> Optional[tuple[tm.ErrorInFlight, tm.Collective]]:
    """The first exception this rank had in flight when it entered a collective that never
    returned normally (it hung there, or failed there in turn), with that collective."""
    for error in rank_run.of(tm.ErrorInFlight):
        entered = next((c for c in rank_run.of(tm.Collective)
                        if c.group == error.group and c.seq == error.seq), None)
        returned = any(d.group == error.group and d.seq == error.seq for d in rank_run.of(tm.CollectiveDone))
        if entered is not None and not returned:
            return error, entered
    return None


def crash_events(run: RunModel) -> dict[int, CrashEvent]:
    """Every rank that crashed, by rank: its Crash record, an exception in flight at a
    collective that never returned (its first cause: a later Crash record of the same rank is
    what the wait led to), or a fatal exit code."""
    events: dict[int, CrashEvent] = {}
    for rank, rank_run in run.ranks.items():
        crash = rank_run.crash
        held = error_in_flight(rank_run)
        if held is not None:
            error, entered = held
            events[rank] = CrashEvent(rank, "exception", error.exc_type, error.message,
                                      error.traceback, error.site, error.step, error.t,
                                      exit_codes(run).get(rank), waited_in=entered)
        elif crash is not None:
            events[rank] = CrashEvent(rank, "exception", crash.exc_type, crash.message,
                                      crash.traceback, crash.site, crash.step, crash.t,
                                      exit_codes(run).get(rank))
    status = run.outcome.status if run.outcome is not None else None
    for rank, code in exit_codes(run).items():
        if rank in events or code is None or code == 0:
            continue
        last = run.ranks[rank].records[-1] if rank in run.ranks and run.ranks[rank].records else None
        t = last.t if last is not None else None
        step = run.ranks[rank].steps if rank in run.ranks else None
        if code > 0:
            events[rank] = CrashEvent(rank, "exit", "exit", f"exited with code {code}",
                                      step=step, t=t, exit_code=code)
            continue
        number = -code
        fatal = number in {int(s) for s in _FATAL_SIGNALS}
        oom_like = number == int(signal.SIGKILL) and status == "crashed"
        if fatal or oom_like:
            name = _signal_name(number)
            events[rank] = CrashEvent(rank, "signal", name, f"killed by {name}",
                                      step=step, t=t, exit_code=code)
    if any(e.kind != "signal" or e.name != "SIGKILL" for e in events.values()):
        # SIGKILL is only blamed when nothing else explains the crash.
        events = {r: e for r, e in events.items() if not (e.kind == "signal" and e.name == "SIGKILL")}
    stamps, statuses = _ending_stamps(run)
    for rank, event in events.items():
        stamp = stamps.get(rank)
        stopped = _stopped_at_limit(run.ranks.get(rank))
        if event.kind == "exception" and stopped is not None:
            # The probe's step limit ended this rank first: what its exit ran into after that (a
            # framework's SIGTERM handler broadcasting to a rank already gone) is the probe's doing.
            stamp = stopped if stamp is None else min(stamp, stopped)
        if stamp is None:
            continue
        if event.kind == "exception":
            event.after_end = event.t is not None and event.t > stamp
        else:
            # An exit code has no time of its own. Under torchrun a rank that fails by itself
            # ends its node's job ("crashed"); on a node the probe ended, it was the teardown.
            event.after_end = statuses.get(rank) not in ("crashed", "completed")
    return events


def _stopped_at_limit(rank_run: Optional[RankRun]) -> Optional[float]:
    """When the probe's step limit ended this rank (its End record), or None."""
    if rank_run is None:
        return None
    end = next((e for e in rank_run.of(tm.End) if e.reason == "max_steps"), None)
    return end.t if end is not None else None


def ending_key(run: RunModel) -> tuple:
    """What crash_events and has_ended read of how the job ended (beside the records): a value
    derived from them is stale when this changes."""
    outcome = run.outcome
    if outcome is None:
        return ()
    nodes = tuple((n.get("clock_offset_s"), n.get("ended_at"), n.get("outcome"), tuple(n.get("ranks") or ()))
                  for n in outcome.nodes or [])
    return (outcome, outcome.status, outcome.ended_at, tuple(outcome.exit_codes.items()), nodes)


def _ending_stamps(run: RunModel) -> tuple[dict[int, float], dict[int, str]]:
    """For each rank: when the probe began ending the job, on the clock of the rank's node (node
    0's stamp moved by that node's clock offset, or the node's own stamp when it was told to end,
    whichever came first), and how the rank's node's own job ended."""
    outcome = run.outcome
    if outcome is None:
        return {}, {}
    here = outcome.ended_at
    stamps: dict[int, float] = {}
    statuses: dict[int, str] = {}
    elsewhere: set[int] = set()
    for node in (outcome.nodes or [])[1:]:
        offset, own = node.get("clock_offset_s"), node.get("ended_at")
        candidates = [t for t in (here + offset if here is not None and offset is not None else None, own)
                      if isinstance(t, (int, float))]
        for rank in node.get("ranks") or []:
            elsewhere.add(rank)
            statuses[rank] = str(node.get("outcome") or "")
            if candidates:
                stamps[rank] = min(candidates)
    for rank in set(run.ranks) | set(outcome.exit_codes):
        if rank not in elsewhere:
            statuses[rank] = outcome.status
            if here is not None:
                stamps[rank] = here
    return stamps, statuses


def last_collective(rank_run: RankRun) -> tuple[Optional[tm.Collective], bool]:
    """The rank's last collective and whether it returned."""
    last = rank_run.last(tm.Collective)
    if last is None:
        return None, False
    returned = any(d.group == last.group and d.seq == last.seq for d in rank_run.of(tm.CollectiveDone))
    return last, returned


def describe_collective(record: tm.Collective) -> str:
    return collective_text(record.op, record.bucket, record.shapes, record.dtypes)


def forward_only_on(ranks: list[int], record: tm.Collective) -> str:
    """The advice for DDP's buffer broadcast entered on some ranks only (DDP501 and DDP502): the
    odd call is the forward through the DDP model, not the collective the others wait in."""
    who = f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {', '.join(map(str, ranks))}"
    return (f"a forward through the DDP model is a collective (DDP broadcasts the module's buffers "
            f"from rank 0 first), and only {who} ran it{at(record.site)}: run that forward on "
            "every rank, or evaluate on one rank through model.module under torch.no_grad(), "
            "which communicates nothing")


def ending(run: RunModel, rank: int) -> str:
    """What this rank's own records say it did last, as a clause after "rank N":
    "raised ValueError: ... at train.py:42", "exited normally", "waited in all_reduce ..."."""
    rank_run = run.ranks.get(rank)
    if rank_run is None or not rank_run.records:
        return "left no telemetry"
    crash = rank_run.crash
    if crash is not None:
        event = crash_events(run).get(rank)
        text = event.summary() if event else crash.exc_type
        return f"raised {text}{at(crash.site)}"
    end = rank_run.last(tm.End)
    if end is not None and end.reason in NORMAL_ENDS:
        if end.reason == "max_steps":
            return f"stopped at the probe's step limit (step {end.step})"
        return f"exited normally at step {end.step}"
    code = exit_codes(run).get(rank)
    if code == 0:
        return "exited normally"
    last, returned = last_collective(rank_run)
    if last is not None and not returned:
        return (f"was waiting in {describe_collective(last)}{at(last.site)} "
                f"(seq {last.seq} on {last.group})")
    entered = rank_run.first(tm.InitEnter)
    if entered is not None and not rank_run.formed:
        return f"was waiting in init_process_group{at(entered.site)}"
    return f"was last seen at step {rank_run.steps}"


def has_ended(run: RunModel, rank: int) -> bool:
    """The rank finished by itself: an End record or exit code 0."""
    rank_run = run.ranks.get(rank)
    end = rank_run.last(tm.End) if rank_run is not None else None
    if end is not None and end.reason in NORMAL_ENDS:
        return True
    return exit_codes(run).get(rank) == 0


def whereabouts(run: RunModel, rank: int) -> str:
    """Where the rank was at the end, preferring its stack (a stalled run) over its records:
    "waits in barrier at train.py:60", "exited normally", "raised ValueError: ..."."""
    rank_run = run.ranks.get(rank)
    if rank_run is not None and rank_run.crash is None:
        view = rank_stacks(run).get(rank)
        if view is not None and view.frames:
            return view.place()
    return ending(run, rank)


# --- Busy or blocked: the watchdog's decision over what it saw during a quiet spell -------------
#
