"""How each rank's run ended: crashes (exceptions, fatal signals, exit codes), the collective it
was waiting in, and a one-line account of where it was, for messages about the other ranks.
"""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass
from typing import Optional

from ddpdoctor.probe import telemetry as tm
from ddpdoctor.probe.analysis.runmodel import RankRun, RunModel

from ddpdoctor.probe.analysis.stack_groups import StackView, bare_callee, bare_name, rank_stacks
from ddpdoctor.probe.analysis.wording import at, ranges

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
UNFINISHED_REDUCTION = "Expected to have finished reduction in the prior iteration"
COLLECTIVE_MISMATCH = "Detected mismatch between collectives"  # TORCH_DISTRIBUTED_DEBUG=DETAIL
READY_TWICE = "Expected to mark a variable ready only once"  # DDP406 reports these crashes
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

    @property
    def collateral(self) -> bool:
        """The rank failed because a peer vanished (or never came), not by its own fault."""
        return self.after_end or (self.kind == "exception" and bool(_COLLATERAL.search(self.message or "")))

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


def crash_events(run: RunModel) -> dict[int, CrashEvent]:
    """Every rank that crashed, by rank: its Crash record, or a fatal exit code."""
    events: dict[int, CrashEvent] = {}
    for rank, rank_run in run.ranks.items():
        crash = rank_run.crash
        if crash is not None:
            events[rank] = CrashEvent(rank, "exception", crash.exc_type, crash.message,
                                      crash.traceback, crash.site, crash.step, crash.t,
                                      exit_codes(run).get(rank))
    status = run.outcome.status if run.outcome is not None else None
    for rank, code in exit_codes(run).items():
        if rank in events or code is None or code == 0:
            continue
        last = run.ranks[rank].records[-1] if rank in run.ranks and run.ranks[rank].records else None
        t = getattr(last, "t", None)
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
        if stamp is None:
            continue
        if event.kind == "exception":
            event.after_end = event.t is not None and event.t > stamp
        else:
            # An exit code has no time of its own. Under torchrun a rank that fails by itself
            # ends its node's job ("crashed"); on a node the probe ended, it was the teardown.
            event.after_end = statuses.get(rank) not in ("crashed", "completed")
    return events


def _ending_stamps(run: RunModel) -> tuple[dict[int, float], dict[int, str]]:
    """For each rank: when the probe began ending the job, on the clock of the rank's node (node
    0's stamp moved by that node's clock offset, or the node's own stamp when it was told to end,
    whichever came first), and how the rank's node's own job ended."""
    outcome = run.outcome
    if outcome is None:
        return {}, {}
    here = getattr(outcome, "ended_at", None)
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


def shapes_text(shapes: list, dtypes: list) -> str:
    """"[10, 20] float32" / "[3], [4] float32, int64"."""
    shape = ", ".join(("[" + ", ".join(str(d) for d in s) + "]") if s else "scalar" for s in (shapes or []))
    types = ", ".join(dict.fromkeys(str(d).replace("torch.", "") for d in (dtypes or [])))
    return " ".join(p for p in (shape, types) if p)


def collective_text(op: str, bucket: Optional[int] = None, shapes: Optional[list] = None,
                    dtypes: Optional[list] = None) -> str:
    """"all_reduce of [3] float32" / "DDP gradient all-reduce (bucket 0) of [306] float32"."""
    name = f"DDP gradient all-reduce (bucket {bucket})" if op == "ddp_bucket_allreduce" else op
    if op == "ddp_bucket_allreduce" and bucket is None:
        name = "DDP gradient all-reduce"
    tail = shapes_text(shapes or [], dtypes or [])
    return f"{name} of {tail}" if tail else name


def describe_collective(record: tm.Collective) -> str:
    return collective_text(record.op, record.bucket, record.shapes, record.dtypes)


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
# A quiet spell (no rank wrote a record) is a hang only with evidence of blocking: a rank waiting
# in a collective, a barrier or a store wait that its peers have not reached, or every rank in
# such a wait. Ranks running the user's code (CPU advancing, the stack moving, or all of them
# sleeping at one line with nothing pending) are busy: start-up, evaluation, a checkpoint upload.

# What a user frame calls when it waits for other ranks (py-spy names the Python function).
WAIT_CALLS = {
    "all_reduce", "broadcast", "barrier", "monitored_barrier", "all_gather", "all_gather_into_tensor",
    "all_gather_object", "broadcast_object_list", "gather", "gather_object", "scatter",
    "scatter_object_list", "reduce", "reduce_scatter", "reduce_scatter_tensor", "all_to_all",
    "all_to_all_single", "send", "recv", "init_process_group", "new_group", "rendezvous",
    "_store_based_barrier",
}
# A main thread using at least this share of a CPU between two looks is working, not waiting.
RUNNING_CPU_SHARE = 0.2


@dataclass
class Pending:
    """A wait the rank's telemetry says it entered and has not left: a synchronous collective
    with no CollectiveDone yet, or init_process_group with no Init yet."""

    what: str  # "all_reduce", "init_process_group", "DDP gradient all-reduce (bucket 0)"
    site: Optional[tm.Site] = None
    since: Optional[float] = None  # wall time it was entered


@dataclass
class RankLook:
    """One rank at one moment of a quiet spell: its telemetry, its stack, its CPU."""

    rank: int
    done: bool = False  # ended or crashed: neither waits nor works
    pending: Optional[Pending] = None
    stack: Optional[StackView] = None
    moved: Optional[bool] = None  # its stack differs from the previous look of this spell
    cpu_share: Optional[float] = None  # main thread's CPU seconds per second since the previous look

    @property
    def running(self) -> bool:
        """Evidence of work: CPU spent, the stack moving, or py-spy seeing Python run."""
        return bool((self.cpu_share is not None and self.cpu_share >= RUNNING_CPU_SHARE)
                    or self.moved or (self.stack is not None and self.stack.idle is False))

    @property
    def waiting(self) -> bool:
        """Blocked on the other ranks: a pending collective its stack does not contradict, or
        (no record of it, e.g. a store wait) idle inside torch.distributed."""
        if self.done:
            return False
        stack = self.stack if self.stack is not None and self.stack.frames else None
        if stack is not None and any(f.file.startswith("<frozen importlib") for f in stack.frames):
            return False  # importing (torch.distributed's modules too): start-up, not a wait
        if self.pending is not None:
            if stack is None:
                return True
            # A rank whose stack is elsewhere in its own code left an async collective open
            # (async_op=True never writes CollectiveDone): it is not waiting there. A host
            # thread spinning on a GPU wait is still waiting: CPU does not count here.
            return stack.in_torch_distributed or _calls_wait(stack) or _at_site(stack, self.pending.site)
        return stack is not None and (_inner_torch_distributed(stack) or _calls_wait(stack)) and not self.running

    def where(self) -> str:
        """"load_dataset() at train.py:41" / "all_reduce at train.py:57" / "an unknown place"."""
        stack = self.stack
        if stack is not None and stack.frames:
            user = stack.user_frame
            if user is None:
                return f"{stack.frames[0].func}() in {stack.frames[0].file}"
            func = "the script's top level" if user.func == "<module>" else f"{user.func}()"
            if stack.in_library and (self.waiting or stack.in_torch_distributed):
                func = bare_callee(stack.call)
            return f"{func} at {user.file}:{user.line}"
        if self.pending is not None:
            return f"{self.pending.what}{at(self.pending.site)}"
        return "an unknown place (no stack)"


def _inner_torch_distributed(stack: StackView) -> bool:
    """A frame inside the user's innermost call is torch.distributed's (a store wait, a
    store-based barrier): not a user frame further out that merely runs under it."""
    user = stack.user_frame
    inner = stack.frames[:stack.frames.index(user)] if user is not None else stack.frames
    return StackView(stack.rank, inner, stack.method).in_torch_distributed


def _calls_wait(stack: StackView) -> bool:
    return stack.in_library and bare_name(stack.call) in WAIT_CALLS


def _at_site(stack: StackView, site: Optional[tm.Site]) -> bool:
    user = stack.user_frame
    if user is None or site is None or not site.file:
        return False
    name = site.file.replace("\\", "/").lstrip("./")
    return user.line == site.line and (user.file == site.file or user.file.endswith("/" + name))


@dataclass
class Judgement:
    """The watchdog's reading of a quiet spell."""

    blocked: bool
    waiting: list[int]  # ranks blocked on others
    working: list[int]  # ranks in their own code (not waiting, not done)
    places: list[tuple[list[int], str]]  # where the unfinished ranks stand, grouped
    reason: str  # one line, for the live view and the report

    def to_dict(self) -> dict:
        return {"blocked": self.blocked, "waiting": self.waiting, "working": self.working,
                "places": [{"ranks": r, "where": w} for r, w in self.places], "reason": self.reason}


def judge(looks: list[RankLook]) -> Judgement:
    """Busy or blocked, from one look at every rank (a pure function of what was seen).

    Blocked: some rank waits for peers that have not arrived (they work elsewhere, or ended),
    or every unfinished rank waits. Busy: no rank waits. Ranks alive but not observed (no stack,
    no CPU time, no record of a wait: py-spy timing out on a loaded machine) are no evidence of
    blocking either: not blocked, so --timeout bounds them (incomplete, never a pass). No rank
    left at all while nothing progresses: blocked."""
    active = [look for look in looks if not look.done]
    places: dict[str, list[int]] = {}
    for look in active:
        places.setdefault(("waits in " if look.waiting else "in ") + look.where(), []).append(look.rank)
    grouped = sorted(((sorted(r), w) for w, r in places.items()), key=lambda p: p[0][0])
    waiting = sorted(look.rank for look in active if look.waiting)
    working = sorted(look.rank for look in active if not look.waiting)
    said = "; ".join(f"{_ranks_short(r)} {w}" for r, w in grouped)
    if not active:
        # Nothing left to look at, and still no progress: stuck (torchrun's rendezvous, ranks
        # that never wrote a record, a job that does not exit after its ranks ended).
        return Judgement(True, [], [], [], "every rank has ended, and the job has not" if looks
                         else "no rank could be observed")
    if waiting and working:
        return Judgement(True, waiting, working, grouped,
                         f"{said}: {_ranks_short(working)} never arrived")
    if waiting:
        done = [look.rank for look in looks if look.done]
        tail = f" ({_ranks_short(done)} ended)" if done else ""
        return Judgement(True, waiting, [], grouped, f"{said}{tail}")
    observed = any(look.stack is not None and look.stack.frames or look.cpu_share is not None
                   for look in active)
    if not observed:
        return Judgement(False, [], working, grouped,
                         "no rank could be observed (no stack, no CPU time) and none records a wait")
    return Judgement(False, [], working, grouped, f"{said}, no collective pending")


def _ranks_short(ranks: list[int]) -> str:
    """[0, 1, 2] -> "ranks 0-2"; [3] -> "rank 3" (the live view's short form)."""
    return f"{'rank' if len(ranks) == 1 else 'ranks'} {ranges(ranks).replace(', ', ',')}"
