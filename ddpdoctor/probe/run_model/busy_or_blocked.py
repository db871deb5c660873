"""The watchdog's looks at the ranks in a quiet spell, and the judgement busy or blocked: a pure
function of what was seen, run live by launch/watchdog.py and tested over built looks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.run_model.outcome import Frame
from ddpdoctor.probe.run_model.stack_view import COLLECTIVE_CALLS, StackView, bare_callee, bare_name, func_words
from ddpdoctor.probe.words.wording import at, ranges


def shapes_text(shapes: list, dtypes: list) -> str:
    """"[10, 20] float32" / "[3], [4] float32, int64"."""
    shape = ", ".join(("[" + ", ".join(str(d) for d in s) + "]") if s else "scalar" for s in (shapes or []))
    types = ", ".join(dict.fromkeys(str(d).replace("torch.", "") for d in (dtypes or [])))
    return " ".join(p for p in (shape, types) if p)


# DDP's own broadcast of the module's buffers (BatchNorm statistics) from rank 0, at the start
# of every forward with broadcast_buffers=True (inrank/ddp.py records it as a collective).
DDP_BUFFER_BROADCAST = "ddp_buffer_broadcast"


def collective_text(op: str, bucket: Optional[int] = None, shapes: Optional[list] = None,
                    dtypes: Optional[list] = None) -> str:
    """"all_reduce of [3] float32" / "DDP gradient all-reduce (bucket 0) of [306] float32"."""
    name = f"DDP gradient all-reduce (bucket {bucket})" if op == "ddp_bucket_allreduce" else op
    if op == "ddp_bucket_allreduce" and bucket is None:
        name = "DDP gradient all-reduce"
    if op == DDP_BUFFER_BROADCAST:
        name = "DDP's buffer broadcast in the model's forward"
    tail = shapes_text(shapes or [], dtypes or [])
    return f"{name} of {tail}" if tail else name


# A quiet spell (no rank wrote a record) is a hang only with evidence of blocking: a rank waiting
# in a collective, a barrier or a store wait that its peers have not reached, or every rank in
# such a wait. Ranks running the user's code (CPU advancing, the stack moving, or all of them
# sleeping at one line with nothing pending) are busy: start-up, evaluation, a checkpoint upload.

# A main thread using at least this share of a CPU between two looks is working, not waiting.
RUNNING_CPU_SHARE = 0.2
# The job's processes, before any rank is seen: torchrun's agent waiting in a rendezvous used
# 0.001 CPUs (measured, torch 2.13); the agent and the ranks importing torch use a whole CPU,
# and a tenth of one still on a machine ten times overloaded.
STARTING_CPU = 0.05


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
            func = func_words(user.func) if user.func == "<module>" else f"{user.func}()"
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
    return stack.in_library and bare_name(stack.call) in COLLECTIVE_CALLS


def _at_site(stack: StackView, site: Optional[tm.Site]) -> bool:
    user = stack.user_frame
    if user is None or site is None or not site.file:
        return False
    return _at_line(user, site.file, site.line)


def _at_line(frame: Frame, file: str, line: int) -> bool:
    """The frame stands at file:line, the file named as the telemetry names it (relative to the
    job's directory) or in full."""
    name = file.replace("\\", "/").lstrip("./")
    return frame.line == line and (frame.file == file or frame.file.endswith("/" + name))


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


@dataclass
class JobLook:
    """The job's processes as a whole, looked at while no rank has been seen."""

    cpu: Optional[float]  # CPUs the launcher and every process under it used since the last look
    script_is_launcher: bool = False  # --launcher none: the process is the user's script itself


def judge(looks: list[RankLook], job: Optional[JobLook] = None) -> Judgement:
    """Busy or blocked, from one look at every rank (a pure function of what was seen).

    Blocked: some rank waits for peers that have not arrived (they work elsewhere, or ended),
    or every unfinished rank waits. Busy: no rank waits. Ranks alive but not observed (no stack,
    no CPU time, no record of a wait: py-spy timing out on a loaded machine) are no evidence of
    blocking either: not blocked, so --timeout bounds them (incomplete, never a pass).

    No rank seen yet: the job's CPU tells start-up from a launch that waits. Working: torchrun's
    agent and the ranks are still importing torch and the script (seconds each, far more on a
    loaded machine), not stuck. Under --launcher none the process is the user's script in its
    own code before it starts its ranks (preparing data, downloading): busy whatever its CPU,
    as a rank sleeping in its own code is. Otherwise idle, or not measured: blocked (a
    rendezvous that never completes). Every rank ended while the job has not: blocked."""
    if not looks:
        cpu = None if job is None else job.cpu
        using = "" if cpu is None else f" (using {cpu:.1f} CPUs)"
        if job is not None and job.script_is_launcher:
            return Judgement(False, [], [], [], f"no rank has started yet; the script is in its own "
                             f"code before starting its ranks{using}")
        if cpu is not None and cpu >= STARTING_CPU:
            return Judgement(False, [], [], [], f"no rank has started yet; the job's processes are "
                             f"starting up{using}")
        idle = "" if cpu is None else f", and the job's processes are idle (using {cpu:.2f} CPUs)"
        return Judgement(True, [], [], [], f"no rank could be observed{idle}")
    active = [look for look in looks if not look.done]
    places: dict[str, list[int]] = {}
    for look in active:
        places.setdefault(("waits in " if look.waiting else "in ") + look.where(), []).append(look.rank)
    grouped = sorted(((sorted(r), w) for w, r in places.items()), key=lambda p: p[0][0])
    waiting = sorted(look.rank for look in active if look.waiting)
    working = sorted(look.rank for look in active if not look.waiting)
    said = "; ".join(f"{_ranks_short(r)} {w}" for r, w in grouped)
    if not active:
        # Nothing left to look at, and still no progress: stuck (a job that does not exit
        # after its ranks ended).
        return Judgement(True, [], [], [], "every rank has ended, and the job has not")
    if waiting and working:
        if _on_their_way(active):
            return Judgement(False, waiting, working, grouped,
                             f"{said}: {_ranks_short(working)} still running on the way there")
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


def _waits_at(look: RankLook) -> Optional[tuple[str, int]]:
    """(file, line) of the user's statement a waiting rank waits in."""
    user = look.stack.user_frame if look.stack is not None and look.stack.frames else None
    if user is not None:
        return user.file, user.line
    site = look.pending.site if look.pending is not None else None
    return (site.file, site.line) if site is not None and site.file else None


def _on_their_way(active: list[RankLook]) -> bool:
    """The ranks that do not wait are late, not elsewhere: every waiting rank waits in one user
    statement, and every other rank is running inside that same statement (a frame of its stack
    is that line): importing what the call needs (DDP's constructor loads torch._dynamo, seconds
    on a loaded machine), computing the call's arguments, a slower backward. A rank elsewhere, or
    one not observed running, is what the waiting ranks wait for: blocked."""
    places = {_waits_at(look) for look in active if look.waiting}
    if len(places) != 1 or None in places:
        return False
    [(file, line)] = places
    return all(look.waiting or (look.running and look.stack is not None
                                and any(_at_line(f, file, line) for f in look.stack.frames))
               for look in active)


def _ranks_short(ranks: list[int]) -> str:
    """[0, 1, 2] -> "ranks 0-2"; [3] -> "rank 3" (the live view's short form)."""
    return f"{'rank' if len(ranks) == 1 else 'ranks'} {ranges(ranks).replace(', ', ',')}"
