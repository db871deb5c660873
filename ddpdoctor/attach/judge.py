"""Judging a running job from its sampled stacks and /proc readings, with probe's codes.

hung: a rank waits in a collective for the whole window, its stack in place and no socket read
or write made (on gloo every collective that completes is socket traffic), while another rank
stands elsewhere: DDP503 (every rank's stack grouped, the odd group named) and, when one group
waits in a collective the others never entered, DDP502.
progressing with a straggler: every waiting rank advanced, and one rank spends far less of its
samples waiting than the others, who wait for it: DDP601, with the user frame where its own
time goes.
healthy: every rank advanced and none waits for one of the others.
unknown: nothing could be sampled; or a rank stood in loss.backward() with nothing sent but
computing (its CPU busy) for longer than the window: a step longer than the window is not a
hang, and within one step a long backward cannot be told from one; or the waiting ranks wait
for a rank that is working in its own code (CPU, read/write calls, its stack moving): a long
phase of one rank (evaluation or a checkpoint on rank 0) is not a hang either, and one window
cannot tell it from a loop that never ends. The verdict is then incomplete, never hung and
never healthy, as the probe's "slow is not stuck" (run_model/busy_or_blocked.py).

A rank waiting for its peers under DDP shows no torch.distributed frame: it sits idle inside
loss.backward() (the reducer waits in C++), so backward counts as waiting, as in probe.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from statistics import median
from typing import Optional

from ddpdoctor.attach.observation import Observation, RankObservation
from ddpdoctor.core.findings import Location, Problem
from ddpdoctor.core.registry import (FAILED, INCOMPLETE, PASSED, SKIPPED, WARNED, CheckResult,
                                     all_checks)
from ddpdoctor.probe.analysis.stack_groups import group_stacks, stall_advice
from ddpdoctor.probe.run_model.stack_view import WAITING_CALLS, StackView, bare_name
from ddpdoctor.probe.words.wording import rank_list, seconds, verb
from ddpdoctor.report.model import Table

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
CODES = ("DDP503", "DDP502", "DDP601")


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
        return sum(waiting(v) for v in self.views) / max(len(self.views), 1)

    @property
    def in_place_share(self) -> float:
        return _in_place(self.views)

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
        own = [v for v in self.views if not waiting(v)]
        if not own:
            return None, 0.0
        counts = Counter((v.user_frame.func, v.user_frame.file, v.user_frame.line, v.call)
                         if v.user_frame else (v.call,) for v in own)
        key, count = counts.most_common(1)[0]
        view = next(v for v in own if ((v.user_frame.func, v.user_frame.file, v.user_frame.line, v.call)
                                       if v.user_frame else (v.call,)) == key)
        return view, count / len(self.views)


def _in_place(views: list[StackView]) -> float:
    """The share of the samples standing where the last one stands."""
    if not views:
        return 0.0
    final = views[-1].signature
    return sum(v.signature == final for v in views) / len(views)


def waiting(view: StackView) -> bool:
    return bare_name(view.call) in WAITING_CALLS or view.in_torch_distributed


def _idle(obs: RankObservation) -> Optional[bool]:
    cpu = obs.main_cpu_share
    return None if cpu is None else cpu < IDLE_CPU


def readings(observation: Observation) -> list[Reading]:
    out = []
    for obs in sorted(observation.ranks, key=lambda r: r.rank):
        idle = _idle(obs)
        views = [StackView(obs.rank, list(stack), "py-spy", idle) for stack in obs.stacks if stack]
        out.append(Reading(obs, views))
    return out


@dataclass
class Verdict:
    """The check results, the per-rank table and the notes of one attach."""

    results: list[CheckResult]
    table: Table
    notes: list[str]
    state: str  # hung | straggler | healthy | unknown


def judge(observation: Observation, ignore: set[str] = frozenset()) -> Verdict:
    reads = readings(observation)
    sampled = [r for r in reads if len(r.views) >= MIN_SAMPLES]
    notes = list(observation.notes)
    table = _table(reads, observation.nodes > 1)
    window = seconds(observation.duration_s)
    if not sampled:
        reasons = sorted({r.obs.error for r in reads if r.obs.error}) or ["no rank was sampled"]
        reason = "no stack could be sampled: " + "; ".join(reasons)
        return Verdict(_results({c: (INCOMPLETE, [], reason) for c in CODES}, ignore), table, notes,
                       "unknown")
    unsampled = [r for r in reads if len(r.views) < MIN_SAMPLES]
    exited = [r for r in reads if r.obs.exited]
    for r in unsampled:
        if not r.obs.exited:
            notes.append(f"rank {r.rank} (pid {r.obs.pid}): {r.obs.error or 'too few samples'}")
    gone = _exited(exited, window)
    if gone:
        notes.insert(0, gone)
    waiters = [r for r in sampled if r.last is not None and waiting(r.last)]
    hung = bool(waiters) and all(r.stuck for r in waiters)
    # Computing in backward with no call in the whole window: no step was seen to end. (One
    # that made calls earlier in the window advanced there, and is judged as the others.)
    computing = [r for r in waiters if r.computing_backward and not r.obs.io_calls]
    if computing and not hung:
        reason = _long_backward(computing, observation)
        short = "no step ended in the window (a backward longer than it): no steps to compare"
        return Verdict(_results({"DDP503": (INCOMPLETE, [], reason), "DDP502": (PASSED, [], ""),
                                 "DDP601": (INCOMPLETE, [], short)}, ignore), table, notes, "unknown")
    working = [r for r in sampled if r.last is not None and not waiting(r.last) and r.working]
    if hung and working:
        reason = _own_phase(working, waiters)
        ranks = [r.rank for r in working]
        short = f"{rank_list(ranks)} still working on {'its' if len(ranks) == 1 else 'their'} own: no verdict yet"
        return Verdict(_results({"DDP503": (INCOMPLETE, [], reason), "DDP502": (INCOMPLETE, [], short),
                                 "DDP601": (INCOMPLETE, [], short)}, ignore), table, notes, "unknown")
    if hung:
        problems = _hung(reads, observation)
        return Verdict(_results({
            "DDP503": (FAILED, [problems[0]], ""),
            "DDP502": ((FAILED, [problems[1]], "") if problems[1] is not None
                       else (PASSED, [], "")),
            "DDP601": (SKIPPED, [], "the job is not progressing: no step to compare"),
        }, ignore), table, notes, "hung")
    if not waiters and all(r.obs.io_calls == 0 for r in sampled):
        reason = (f"no rank waited for another and no collective completed in the {window} "
                  "sampled: a step may be longer than the window (sample longer with --duration)")
        return Verdict(_results({"DDP503": (INCOMPLETE, [], reason), "DDP502": (PASSED, [], ""),
                                 "DDP601": (INCOMPLETE, [], reason)}, ignore), table, notes, "unknown")
    if exited:
        # A rank that ended inside the window did not advance through it: never healthy, and
        # the others' pace is not comparable either.
        return Verdict(_results({code: (INCOMPLETE, [], gone) for code in CODES}, ignore), table, notes,
                       "unknown")
    straggler = _straggler(sampled, observation)
    results = {"DDP503": (PASSED, [], ""), "DDP502": (PASSED, [], "")}
    if straggler is not None:
        results["DDP601"] = (WARNED, [straggler], "")
        state = "straggler"
    else:
        results["DDP601"] = (PASSED, [], "")
        state = "healthy"
        notes.insert(0, _healthy(sampled, window))
    if observation.nodes > 1 and (observation.lost_nodes or observation.unobserved):
        # A node that did not answer may hold the rank the others wait for: never a pass.
        why = (f"node(s) {', '.join(observation.lost_nodes)} gave no observation"
               if observation.lost_nodes else
               f"rank(s) {', '.join(map(str, observation.unobserved))} were not observed")
        for code in ("DDP503", "DDP601"):
            if results[code][0] == PASSED:
                results[code] = (INCOMPLETE, [], why)
    if unsampled:
        missing = ", ".join(str(r.rank) for r in unsampled)
        for code in ("DDP503", "DDP601"):
            if results[code][0] == PASSED:
                results[code] = (INCOMPLETE, [], f"rank(s) {missing} could not be sampled")
    if state == "healthy" and any(results[code][0] == INCOMPLETE for code in CODES):
        # what was sampled looked healthy, but not every rank was: the job is not said healthy
        state = "unknown"
        notes = [n for n in notes if not n.startswith("healthy:")]
    return Verdict(_results(results, ignore), table, notes, state)


def _exited(exited: list[Reading], window: str) -> str:
    """'rank 1 (pid 42) exited 3.0 s into the 6.0 s window (killed by SIGKILL)', or ""."""
    parts = []
    for r in exited:
        when = r.obs.proc.get("exited_after_s")
        how = r.obs.proc.get("exit_status") or "exit status unknown: not our child, already reaped"
        parts.append(f"rank {r.rank} (pid {r.obs.pid}) exited "
                     + (f"{seconds(when)} into the window" if when is not None else "during the window")
                     + f" ({how})")
    if not parts:
        return ""
    return ("; ".join(parts) + f": the job did not run through the {window} sampled, so it is not judged "
            "healthy (the job ended, or lost a rank: read its log)")


def _long_backward(computing: list[Reading], observation: Observation) -> str:
    """Why a job whose ranks compute in backward with nothing sent is neither hung nor healthy."""
    ranks = [r.rank for r in computing]
    user = computing[0].last.user_frame if computing[0].last else None
    at = f" at {user.file}:{user.line}" if user else ""
    cpu = min(r.quiet_cpu or 0.0 for r in computing)
    return (f"{rank_list(ranks)} stood in backward{at} with no collective completed in the "
            f"{seconds(observation.duration_s)} sampled, "
            f"computing ({cpu:.1f} CPUs or more meanwhile): a backward longer than the window, "
            "which cannot be told from a hang within one step; attach again with a --duration "
            "longer than one training step")


def _own_phase(working: list[Reading], waiters: list[Reading]) -> str:
    """Why ranks waiting for a rank that works in its own code are not (yet) a hang."""
    def evidence(r: Reading) -> str:
        if r.quiet_s is not None and r.quiet_s < MIN_QUIET_S:
            return "making read/write calls"
        cpu = r.quiet_cpu if r.quiet_cpu is not None else r.obs.main_cpu_share
        return f"{cpu:.2f} CPUs" if cpu is not None and cpu >= BUSY_CPU else "its stack moving"

    first, wait = working[0], waiters[0].last
    user = first.last.user_frame if first.last else None
    where = f"{user.func} at {user.file}:{user.line}" if user else "its own code"
    ranks = [r.rank for r in working]
    at = f" at {wait.user_frame.file}:{wait.user_frame.line}" if wait and wait.user_frame else ""
    return (f"{rank_list(ranks)} {verb(ranks, 'is', 'are')} running {where} ({evidence(first)}) "
            f"while {rank_list(r.rank for r in waiters)} {verb([r.rank for r in waiters], 'waits', 'wait')} in "
            f"{wait.call if wait else 'a collective'}{at}: a long phase of "
            f"{'its' if len(ranks) == 1 else 'their'} own (evaluation or a checkpoint on one rank, "
            "data preparation) or a loop that never ends, which one window cannot tell apart; "
            f"attach again in a while: if {rank_list(ranks)} still {verb(ranks, 'works', 'work')} "
            "at the same line, read that loop")


def probe_check(code: str):
    """A probe check's declaration (importing only the probe's checks: a quarter second less
    than every stage's)."""
    return next(s for s in all_checks("probe") if s.code == code)


def _results(by_code: dict, ignore: set[str]) -> list[CheckResult]:
    out = []
    for code in CODES:
        spec = probe_check(code)
        status, problems, reason = by_code[code]
        if code in ignore:
            out.append(CheckResult(spec, "ignored", reason="--ignore"))
            continue
        out.append(CheckResult(spec, status, [spec.finding(p) for p in problems], reason))
    return out


@dataclass
class _Group:
    ranks: list[int]
    where: str
    view: Optional[StackView]
    waiting: bool


def _groups(reads: list[Reading]) -> list[_Group]:
    views = {r.rank: r.last for r in reads if r.last is not None and len(r.views) >= MIN_SAMPLES}
    groups = [_Group(ranks, view.place(plural=len(ranks) > 1), view, waiting(view))
              for ranks, view in group_stacks(views).groups]
    for r in reads:
        if r.rank not in views:
            groups.append(_Group([r.rank], f"has no stack ({r.obs.error or 'too few samples'})",
                                 None, False))
    return groups


def _hosts(reads: list[Reading], observation: Observation) -> dict[int, str]:
    return {r.rank: r.obs.host for r in reads if r.obs.host} if observation.nodes > 1 else {}


def _on(hosts: dict[int, str], ranks: list[int]) -> str:
    names = sorted({hosts[r] for r in ranks if r in hosts})
    return f" on {', '.join(names)}" if names else ""


def _hung(reads: list[Reading], observation: Observation) -> tuple[Problem, Optional[Problem]]:
    groups = _groups(reads)
    everyone = sorted(r.rank for r in reads)
    hosts = _hosts(reads, observation)
    # The odd group, as probe picks it: the fewest ranks; between equals, the ranks not
    # waiting (the others wait for them), then a group in a collective of its own (not DDP's
    # gradient all-reduce in backward, which every rank runs each step), then not rank 0.
    odd = min((g for g in groups if g.view is not None) or groups,
              key=lambda g: (len(g.ranks), g.waiting,
                             g.view is not None and bare_name(g.view.call) == "backward",
                             0 in g.ranks, g.ranks[0]))
    window = seconds(observation.duration_s)
    quiet = [r.quiet_s for r in reads if r.quiet_s is not None and r.last is not None and waiting(r.last)]
    span = (f"the last {seconds(min(quiet))} of the {window} sampled"
            if quiet and min(quiet) < observation.duration_s - 0.5 else f"the {window} sampled")
    head = (f"no rank advanced in {span} (the waiting ranks' stacks stayed in place and made no "
            "read or write system call)")
    if len(groups) == 1 and len(everyone) > 1:
        clauses = [f"{rank_list(groups[0].ranks)} all {groups[0].where}"]
    else:
        clauses = [f"{rank_list(g.ranks)}{_on(hosts, g.ranks)} {g.where}"
                   for g in sorted(groups, key=lambda g: g.ranks[0])]
    message = f"{head}; " + ", ".join(clauses)
    location = odd.view.location if odd.view is not None else None
    blamed = odd.ranks if len(groups) > 1 and len(odd.ranks) < len(everyone) / 2 or (
        len(groups) == 2 and len(odd.ranks) == len(everyone) / 2) else everyone
    stall = Problem(
        message=message,
        hint=_hint(groups, odd),
        ranks=blamed,
        hosts=sorted({hosts[r] for r in odd.ranks if r in hosts}) if len(groups) > 1 else [],
        location=location,
        evidence={
            "status": "hung",
            "window_s": observation.duration_s,
            "groups": [{"ranks": g.ranks, "where": g.where} for g in groups],
            "odd_ranks": odd.ranks,
            "per_rank": {str(r.rank): _rank_evidence(r) for r in reads},
            "stack_method": "py-spy record",
            "detail": "\n".join(_detail_line(g) for g in sorted(groups, key=lambda g: g.ranks[0])),
        },
    )
    return stall, _skipped(groups, odd, everyone)


def _skipped(groups: list[_Group], odd: _Group, everyone: list[int]) -> Optional[Problem]:
    """The odd group waits in a collective of its own that the other ranks never entered (they
    went on, and wait in DDP's gradient all-reduce or another collective)."""
    if not odd.waiting or odd.view is None or bare_name(odd.view.call) == "backward":
        return None
    others = [g for g in groups if g is not odd]
    if not others or not all(g.waiting and g.view is not None
                             and g.view.signature != odd.view.signature for g in others):
        return None
    call = bare_name(odd.view.call)
    skipped = sorted(r for g in others for r in g.ranks)
    where = f" at {odd.view.location}" if odd.view.location else ""
    elsewhere = "; ".join(f"{rank_list(g.ranks)} {g.where}" for g in others)
    return Problem(
        message=(f"{rank_list(odd.ranks)} entered {call}{where} and {rank_list(skipped)} "
                 f"skipped it: {elsewhere}"),
        hint=(f"call {call} on every rank, outside any rank- or data-dependent branch "
              "(`if rank == 0:` around a collective hangs the job)"),
        ranks=odd.ranks if len(odd.ranks) <= len(skipped) else skipped,
        location=odd.view.location,
        evidence={"op": call, "entered_ranks": odd.ranks, "skipped_ranks": skipped,
                  "from": "sampled stacks (no telemetry: sequence numbers unknown)"},
    )


def _hint(groups: list[_Group], odd: _Group) -> str:
    where = f"at {odd.view.location}" if odd.view is not None and odd.view.location else ""
    # attach has no stall timeout to raise: it judged ranks that did not advance while it looked.
    return stall_advice(len(groups), any(g.waiting for g in groups), odd.ranks, odd.waiting, where,
                        "a rank outside this machine (attach to every node: --nodes)",
                        stall_timeout=False)


def _detail_line(group: _Group) -> str:
    label = ("rank " if len(group.ranks) == 1 else "ranks ") + ", ".join(map(str, group.ranks))
    return f"{label}: " + (group.view.lines() if group.view is not None else group.where)


def _straggler(sampled: list[Reading], observation: Observation) -> Optional[Problem]:
    """The rank that waits least while the others wait for it."""
    if len(sampled) < 2:
        return None
    shares = {r.rank: r.wait_share for r in sampled}
    slow = []
    for r in sampled:
        others = median([s for rank, s in shares.items() if rank != r.rank])
        if others >= STRAGGLER_GAP and others - shares[r.rank] >= STRAGGLER_GAP:
            slow.append(r)
    if len(slow) != 1 or len(sampled) < 2:
        return None  # most ranks "slow" means the rest are odd: no single straggler
    rank = slow[0]
    others = [r for r in sampled if r is not rank]
    view, share = rank.top_own()
    where = ""
    location: Optional[Location] = None
    if view is not None:
        location = view.location
        user = view.user_frame
        func = user.func if user else view.call
        call = "" if view.call == func or not view.in_library else f" (in {view.call})"
        where = (f"; rank {rank.rank} spends {share:.0%} of its samples in {func}"
                 f"{f' at {location}' if location else ''}{call}")
    their = median([r.wait_share for r in others])
    waits_in = Counter(bare_name(r.views[-1].call) if r.views else "?" for r in others).most_common(1)[0][0]
    hosts = _hosts(sampled, observation)
    return Problem(
        message=(f"rank {rank.rank}{_on(hosts, [rank.rank])} waits for the others in "
                 f"{rank.wait_share:.0%} of its samples while {rank_list([r.rank for r in others])} "
                 f"{verb([r.rank for r in others], 'waits', 'wait')} in {their:.0%} of "
                 f"{verb([r.rank for r in others], 'its', 'theirs')} "
                 f"(mostly in {waits_in}), over the {seconds(observation.duration_s)} sampled"
                 f"{where}"),
        hint=(f"rank {rank.rank} is the straggler: make every rank do the same work per step "
              "(rank-guarded extras, a heavier data shard, a DataLoader without workers on that "
              "rank, a slower or shared device)"),
        ranks=[rank.rank],
        hosts=[hosts[rank.rank]] if rank.rank in hosts else [],
        location=location,
        evidence={"wait_share": {str(r.rank): round(r.wait_share, 3) for r in sampled},
                  "own_share": round(share, 3),
                  "per_rank": {str(r.rank): _rank_evidence(r) for r in sampled}},
    )


def _healthy(sampled: list[Reading], window: str) -> str:
    calls = [r.obs.io_calls for r in sampled if r.obs.io_calls is not None]
    io = f", {min(calls)}-{max(calls)} read/write calls per rank" if calls else ""
    shares = [r.wait_share for r in sampled]
    return (f"healthy: every rank advanced in the {window} sampled{io}; each waits in "
            f"{min(shares):.0%}-{max(shares):.0%} of its samples, no rank waits for another")


def _rank_evidence(r: Reading) -> dict:
    view, share = r.top_own()
    return {"pid": r.obs.pid, "host": r.obs.host, "samples": len(r.views),
            "wait_share": round(r.wait_share, 3), "in_place_share": round(r.in_place_share, 3),
            "stack": r.last.lines() if r.last else None,
            "own_top": (f"{view.user_frame.func} at {view.location}" if view and view.user_frame
                        else None), "own_top_share": round(share, 3),
            **{k: v for k, v in r.obs.proc.items() if k != "pid"},
            "error": r.obs.error or None}


def _pct(value: Optional[float]) -> str:
    return "?" if value is None else f"{value:.0%}"


def _table(reads: list[Reading], hosts: bool) -> Table:
    columns = ["rank", "pid"] + (["host"] if hosts else []) + [
        "samples", "waiting", "last stack", "main thread CPU", "read/write calls", "state"]
    rows = []
    for r in reads:
        last = r.last
        where = (last.place() if last is not None else (r.obs.error or "no stack"))
        proc = r.obs.proc
        rows.append([r.rank, r.obs.pid] + ([r.obs.host] if hosts else []) + [
            len(r.views), _pct(r.wait_share) if r.views else "?", where,
            _pct(proc.get("main_cpu_share")),
            "?" if proc.get("io_calls") is None else proc["io_calls"], proc.get("state", "?")])
    return Table("Ranks over the sampled window", columns, rows)
