"""attach's sampled window read once, for every check that judges it (DDP503, DDP502, DDP601).

hung: a rank waits in a collective for the whole window, its stack in place and no socket read
or write made (on gloo every collective that completes is socket traffic), while another rank
stands elsewhere. progressing: every waiting rank advanced; a straggler is the one rank that
spends far less of its samples waiting than the others, who wait for it. The window cannot say
(the checks are then incomplete, never hung and never healthy, as the probe's "slow is not
stuck", run_model/busy_or_blocked.py) when nothing could be sampled; when a rank stood in loss.backward()
with nothing sent but computing (its CPU busy) for longer than the window (a step longer than
the window is not a hang, and within one step a long backward cannot be told from one); when
the waiting ranks wait for a rank that is working in its own code (CPU, read/write calls, its
stack moving: a long phase of one rank, evaluation or a checkpoint on rank 0, is not a hang
either, and one window cannot tell it from a loop that never ends); when no rank waited and no
collective completed; when a rank exited in the window; or when a rank on a GPU stood at one
line for the whole window (a rank waiting for its device spins a core at its next
synchronisation and the process still makes read/write calls, hung or not: there only a moving
stack shows progress, and one that stays put may be a step longer than the window).

Ranks stand in groups as the probe groups them (probe/analysis/stack_groups.py), and a stack
waits in a collective by the same test (`waits_in_collective`: backward counts, as DDP's
reducer waits inside it).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from statistics import median
from typing import Optional

from ddpdoctor.attach.observation import Observation, RankObservation
from ddpdoctor.probe.analysis.stack_groups import StandGroup, group_stacks, waits_in_collective
from ddpdoctor.probe.run_model.stack_view import StackView, bare_name, func_words
from ddpdoctor.probe.words.wording import rank_list, seconds, verb

IN_PLACE = 0.9  # share of samples on the final stack for a rank to count as not moving
IDLE_CPU = 0.2  # main thread's share of a core below which a rank is idle, not computing
# A rank's CPU (every thread, in cores) since its last read/write call, at or above which a rank
# standing in backward computes its gradients rather than waits for its peers'. A rank waiting in
# gloo uses almost none (measured: 0.006 for a rank hung in DDP's all-reduce); a backward
# computing on CPU uses a core (1.0 measured), still a tenth of one on a machine ten times
# overloaded, as the probe's start-up threshold (run_model/looks.STARTING_CPU) reasons.
BUSY_CPU = 0.05
STRAGGLER_GAP = 0.3  # the others wait this much more of their samples than the straggler
MIN_SAMPLES = 5
MIN_QUIET_S = 1.0  # a hung rank made no read/write call for at least this long,
QUIET_SHARE = 0.5  # ... and for at least this share of the window

# What the window shows (Window.phase).
NOTHING_SAMPLED, LONG_BACKWARD, OWN_PHASE, HUNG, QUIET, EXITED, DEVICE_WAIT, PROGRESSING = (
    "nothing_sampled", "long_backward", "own_phase", "hung", "quiet", "exited", "device_wait",
    "progressing")


@dataclass
class Reading:
    """One rank's samples, read as probe reads a stack."""

    obs: RankObservation
    views: list[StackView]

    @property
    def rank(self) -> int:
        return self.obs.rank

    @property
    def last(self) -> Optional[StackView]:
        return self.views[-1] if self.views else None

    @property
    def wait_share(self) -> float:
        return sum(waits_in_collective(v) for v in self.views) / max(len(self.views), 1)

    @property
    def in_place_share(self) -> float:
        return _in_place(self.views)

    @property
    def held_on_device(self) -> bool:
        """A rank on a GPU whose stack stood in place over the whole window: its CPU and its
        read/write calls cannot say it advanced (procstate.py), so nothing says it did."""
        return (self.obs.proc.get("gpu") is True and len(self.views) >= MIN_SAMPLES
                and _in_place(self.views) >= IN_PLACE)

    @property
    def quiet_s(self) -> Optional[float]:
        """How long before the end of the window the rank last made a read or write call."""
        return self.obs.proc.get("io_quiet_s")

    @property
    def tail(self) -> list[StackView]:
        """The samples of the quiet end of the window (all of them where /proc/PID/io is
        unreadable): a job that hangs while it is sampled is judged from the hang on."""
        quiet, seconds_ = self.quiet_s, self.obs.proc.get("seconds")
        if quiet is None or not seconds_:
            return self.views
        return self.views[len(self.views) - int(len(self.views) * min(quiet / seconds_, 1.0)):]

    @property
    def quiet_cpu(self) -> Optional[float]:
        """The rank's CPU, in cores, since its last read or write call."""
        return self.obs.proc.get("quiet_cpu_share")

    @property
    def waiting(self) -> bool:
        """Its last sample waits in a collective."""
        return self.last is not None and waits_in_collective(self.last)

    @property
    def stuck(self) -> bool:
        """The stack stayed in place, and no read or write call was made, over the end of the
        window: at least half of it and a second (no /proc/PID/io: the whole window, no CPU);
        and not computing its own backward meanwhile (computing_backward)."""
        return self.still and not self.computing_backward

    @property
    def computing_backward(self) -> bool:
        """Still in loss.backward() with nothing sent, but busy: computing gradients (a
        backward longer than the quiet time), not waiting for the others' (BUSY_CPU)."""
        cpu = self.quiet_cpu
        return (self.still and self.last is not None and bare_name(self.last.call) == "backward"
                and cpu is not None and cpu >= BUSY_CPU)

    @property
    def working(self) -> bool:
        """Getting somewhere in the quiet end of the window: its stack moved, or it made a
        read or write call in the last second, or it used CPU (BUSY_CPU since its last call;
        IDLE_CPU of its main thread where that was not read)."""
        tail = self.tail
        if len(tail) >= MIN_SAMPLES and _in_place(tail) < IN_PLACE:
            return True
        if self.quiet_s is not None and self.quiet_s < MIN_QUIET_S:
            return True
        if self.quiet_cpu is not None:
            return self.quiet_cpu >= BUSY_CPU
        main = self.obs.main_cpu_share
        return main is not None and main >= IDLE_CPU

    @property
    def still(self) -> bool:
        """The stack stayed in place with no read or write call over the end of the window."""
        tail = self.tail
        if len(tail) < MIN_SAMPLES or _in_place(tail) < IN_PLACE:
            return False
        quiet, seconds_ = self.quiet_s, self.obs.proc.get("seconds") or 0.0
        if quiet is not None:
            return quiet >= max(MIN_QUIET_S, QUIET_SHARE * seconds_)
        cpu = self.obs.main_cpu_share
        return cpu is None or cpu < IDLE_CPU

    def top_own(self) -> tuple[Optional[StackView], float]:
        """Where the rank spends its own time (not waiting): the most sampled user frame, and
        its share of all samples."""
        own = [v for v in self.views if not waits_in_collective(v)]
        if not own:
            return None, 0.0
        counts = Counter(_own_key(v) for v in own)
        key, count = counts.most_common(1)[0]
        view = next(v for v in own if _own_key(v) == key)
        return view, count / len(self.views)

    def evidence(self) -> dict:
        """What a finding's evidence says of this rank."""
        view, share = self.top_own()
        return {"pid": self.obs.pid, "host": self.obs.host, "samples": len(self.views),
                "wait_share": round(self.wait_share, 3), "in_place_share": round(self.in_place_share, 3),
                "stack": self.last.lines() if self.last else None,
                "own_top": (f"{view.user_frame.func} at {view.location}" if view and view.user_frame
                            else None), "own_top_share": round(share, 3),
                **{k: v for k, v in self.obs.proc.items() if k != "pid"},
                "error": self.obs.error or None}


def _own_key(view: StackView) -> tuple:
    user = view.user_frame
    return (user.func, user.file, user.line, view.call) if user else (view.call,)


def _in_place(views: list[StackView]) -> float:
    """The share of the samples standing where the last one stands."""
    if not views:
        return 0.0
    final = views[-1].signature
    return sum(v.signature == final for v in views) / len(views)


def readings(observation: Observation) -> list[Reading]:
    out = []
    for obs in sorted(observation.ranks, key=lambda r: r.rank):
        cpu = obs.main_cpu_share
        idle = None if cpu is None else cpu < IDLE_CPU
        views = [StackView(obs.rank, list(stack), "py-spy", idle) for stack in obs.stacks if stack]
        out.append(Reading(obs, views))
    return out


class Window:
    """What the sampled window shows, worked out once per observation (`window`)."""

    def __init__(self, observation: Observation) -> None:
        self.observation = observation
        self.reads = readings(observation)
        self.sampled = [r for r in self.reads if len(r.views) >= MIN_SAMPLES]
        self.unsampled = [r for r in self.reads if len(r.views) < MIN_SAMPLES]
        self.exited = [r for r in self.reads if r.obs.exited]
        self.waiters = [r for r in self.sampled if r.waiting]
        self.hung = bool(self.waiters) and all(r.stuck for r in self.waiters)
        # Computing in backward with no call in the whole window: no step was seen to end. (One
        # that made calls earlier in the window advanced there, and is judged as the others.)
        self.computing = [r for r in self.waiters if r.computing_backward and not r.obs.io_calls]
        self.working = [r for r in self.sampled if r.last is not None and not r.waiting and r.working]
        self.on_device = [r for r in self.sampled if r.held_on_device]
        self.phase = self._phase()

    def _phase(self) -> str:
        if not self.sampled:
            return NOTHING_SAMPLED
        if self.computing and not self.hung:
            return LONG_BACKWARD
        if self.hung and self.working:
            return OWN_PHASE
        if self.hung:
            return HUNG
        if self.on_device and not self.exited:
            return DEVICE_WAIT
        if not self.waiters and all(r.obs.io_calls == 0 for r in self.sampled):
            return QUIET
        if self.exited:
            return EXITED
        return PROGRESSING

    @property
    def span(self) -> str:
        """"3.0 s": the window sampled."""
        return seconds(self.observation.duration_s)

    def reason(self) -> str:
        """Why the window gives no verdict (every phase but hung and progressing), in full."""
        if self.phase == NOTHING_SAMPLED:
            reasons = sorted({r.obs.error for r in self.reads if r.obs.error}) or ["no rank was sampled"]
            return "no stack could be sampled: " + "; ".join(reasons)
        if self.phase == LONG_BACKWARD:
            return self._long_backward()
        if self.phase == OWN_PHASE:
            return self._own_phase()
        if self.phase == QUIET:
            return (f"no rank waited for another and no collective completed in the {self.span} "
                    "sampled: a step may be longer than the window (sample longer with --duration)")
        if self.phase == EXITED:
            return self.gone()
        if self.phase == DEVICE_WAIT:
            return self._device_wait()
        return ""

    def short_reason(self) -> str:
        """The same, for the checks that compare the ranks' pace (DDP601) or their collectives
        (DDP502), where the window's phase says less."""
        if self.phase == LONG_BACKWARD:
            return "no step ended in the window (a backward longer than it): no steps to compare"
        if self.phase == OWN_PHASE:
            ranks = [r.rank for r in self.working]
            return (f"{rank_list(ranks)} still working on {'its' if len(ranks) == 1 else 'their'} own: "
                    "no verdict yet")
        return self.reason()

    def unjudged(self) -> str:
        """Why ranks that progressed are still no pass: a node or a rank that was not observed
        or sampled may be the one the others wait for ("" when every rank was)."""
        observation = self.observation
        if observation.nodes > 1 and (observation.lost_nodes or observation.unobserved):
            if observation.lost_nodes:
                return f"node(s) {', '.join(observation.lost_nodes)} gave no observation"
            return f"rank(s) {', '.join(map(str, observation.unobserved))} were not observed"
        if self.unsampled:
            return f"rank(s) {', '.join(str(r.rank) for r in self.unsampled)} could not be sampled"
        return ""

    def gone(self) -> str:
        """'rank 1 (pid 42) exited 3.0 s into the 6.0 s window (killed by SIGKILL)', or ""."""
        parts = []
        for r in self.exited:
            when = r.obs.proc.get("exited_after_s")
            how = r.obs.proc.get("exit_status") or "exit status unknown: not our child, already reaped"
            parts.append(f"rank {r.rank} (pid {r.obs.pid}) exited "
                         + (f"{seconds(when)} into the window" if when is not None else "during the window")
                         + f" ({how})")
        if not parts:
            return ""
        return ("; ".join(parts) + f": the job did not run through the {self.span} sampled, so it is not "
                "judged healthy (the job ended, or lost a rank: read its log)")

    def _long_backward(self) -> str:
        """Why a job whose ranks compute in backward with nothing sent is neither hung nor healthy."""
        ranks = [r.rank for r in self.computing]
        user = self.computing[0].last.user_frame if self.computing[0].last else None
        at = f" at {user.file}:{user.line}" if user else ""
        cpu = min(r.quiet_cpu or 0.0 for r in self.computing)
        return (f"{rank_list(ranks)} stood in backward{at} with no collective completed in the "
                f"{self.span} sampled, "
                f"computing ({cpu:.1f} CPUs or more meanwhile): a backward longer than the window, "
                "which cannot be told from a hang within one step; attach again with a --duration "
                "longer than one training step")

    def _device_wait(self) -> str:
        """Why ranks on a GPU whose stacks stood still are neither hung nor healthy."""
        held = self.on_device
        ranks = [r.rank for r in held]
        place = held[0].last.place(plural=len(held) > 1) if held[0].last else "stood still"
        return (f"{rank_list(ranks)} {place} for the whole {self.span} sampled, on a GPU: a rank "
                "that waits for its device (a collective that never completes, or kernels longer "
                "than the window) spins a core where it next synchronises (`.item()`, "
                "`torch.cuda.synchronize()`, `.cpu()`), and the process still makes read/write "
                "calls, hung or not, so neither says it advanced: a step longer than the window and a hang "
                "look alike here; attach again with a --duration longer than one training step, "
                "or start the job with the Flight Recorder settings `ddpdoctor env` prints: attach "
                "then reads from each rank's dump which collective its GPU is in")

    def _own_phase(self) -> str:
        """Why ranks waiting for a rank that works in its own code are not (yet) a hang."""
        def evidence(r: Reading) -> str:
            if r.quiet_s is not None and r.quiet_s < MIN_QUIET_S:
                return "making read/write calls"
            cpu = r.quiet_cpu if r.quiet_cpu is not None else r.obs.main_cpu_share
            return f"{cpu:.2f} CPUs" if cpu is not None and cpu >= BUSY_CPU else "its stack moving"

        working, waiters = self.working, self.waiters
        first, wait = working[0], waiters[0].last
        user = first.last.user_frame if first.last else None
        where = f"{func_words(user.func)} at {user.file}:{user.line}" if user else "its own code"
        ranks = [r.rank for r in working]
        at = f" at {wait.user_frame.file}:{wait.user_frame.line}" if wait and wait.user_frame else ""
        return (f"{rank_list(ranks)} {verb(ranks, 'is', 'are')} running {where} ({evidence(first)}) "
                f"while {rank_list(r.rank for r in waiters)} {verb([r.rank for r in waiters], 'waits', 'wait')} in "
                f"{wait.call if wait else 'a collective'}{at}: a long phase of "
                f"{'its' if len(ranks) == 1 else 'their'} own (evaluation or a checkpoint on one rank, "
                "data preparation) or a loop that never ends, which one window cannot tell apart; "
                f"attach again in a while: if {rank_list(ranks)} still {verb(ranks, 'works', 'work')} "
                "at the same line, read that loop")

    @property
    def hosts(self) -> dict[int, str]:
        """rank -> its host, where several nodes were observed (on one it says nothing)."""
        if self.observation.nodes <= 1:
            return {}
        return {r.rank: r.obs.host for r in self.reads if r.obs.host}

    def groups(self) -> list[StandGroup]:
        """Every rank by where its last sample stands; a rank without enough samples alone."""
        views = {r.rank: r.last for r in self.reads if r.last is not None and len(r.views) >= MIN_SAMPLES}
        groups = [StandGroup(ranks, view.place(plural=len(ranks) > 1), view.location,
                             waits_in_collective(view), [view.lines()], view)
                  for ranks, view in group_stacks(views).groups]
        for r in self.reads:
            if r.rank not in views:
                groups.append(StandGroup([r.rank], f"has no stack ({r.obs.error or 'too few samples'})",
                                         None, False))
        return groups

    def odd(self, groups: list[StandGroup]) -> StandGroup:
        """The odd group, as probe picks it: the fewest ranks; between equals, the ranks not
        waiting (the others wait for them), then a group in a collective of its own (not DDP's
        gradient all-reduce in backward, which every rank runs each step), then not rank 0."""
        return min((g for g in groups if g.view is not None) or groups,
                   key=lambda g: (len(g.ranks), g.waiting,
                                  g.view is not None and bare_name(g.view.call) == "backward",
                                  0 in g.ranks, g.ranks[0]))

    def straggler(self) -> Optional[Reading]:
        """The one rank that waits least while the others wait for it (None: no single one)."""
        sampled = self.sampled
        if len(sampled) < 2:
            return None
        shares = {r.rank: r.wait_share for r in sampled}
        slow = []
        for r in sampled:
            others = median([s for rank, s in shares.items() if rank != r.rank])
            if others >= STRAGGLER_GAP and others - shares[r.rank] >= STRAGGLER_GAP:
                slow.append(r)
        return slow[0] if len(slow) == 1 else None  # most ranks "slow": the rest are the odd ones

    def state(self) -> str:
        """hung | straggler | healthy | unknown: what the window says of the job as a whole."""
        if self.phase == HUNG:
            return "hung"
        if self.phase != PROGRESSING:
            return "unknown"
        if self.straggler() is not None:
            return "straggler"
        # what was sampled looked healthy, but not every rank was: the job is not said healthy
        return "unknown" if self.unjudged() else "healthy"


def window(observation: Observation) -> Window:
    """The observation's window (worked out once: every check that judges it asks)."""
    key = tuple(map(id, observation.ranks))  # the same ranks: a changed observation is read again
    cached = getattr(observation, "_window", None)
    if cached is None or cached[0] != key:
        cached = (key, Window(observation))
        observation._window = cached  # type: ignore[attr-defined]
    return cached[1]
