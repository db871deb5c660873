"""Line up every rank's collectives per process group and find where the ranks part ways.

Each rank numbers its collectives per group in call order; position i on every rank is meant
to be the same collective. Walking the positions, the first one where the ranks disagree is
classified:

- "skipped": one side's call at i is an extra one; deleting it lines that side up with the
  others again (A[i+1:] continues as B[i:]). The other side skipped a collective. Also when
  some ranks' sequences simply stop at i while they ended or were stuck elsewhere: they never
  entered the collective the others wait in.
- "mismatch": the ranks called different collectives (op, shapes or dtypes) at i and no single
  deletion explains it better than a substitution.

Which explanation wins: one that makes the rest of both sequences equal, lengths included
(exact); else the one that keeps the longest stretch equal after it; with nothing after the
divergence to go by (both sides stuck in it), a user collective facing a DDP gradient
all-reduce that both sides made before is the extra one; otherwise it is a mismatch.
Only the first divergence of a group is reported; later ones are counted after applying the
chosen explanation (deleting the extra call, or stepping past the mismatch).
"""

from __future__ import annotations

import functools

from dataclasses import dataclass, field
from typing import Callable, Optional

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.run_model.loaded_run import RunModel

from ddpdoctor.probe.analysis.rank_state import crash_events, describe_collective, ending_key, has_ended
from ddpdoctor.probe.analysis.skipped_backward import skip_explains
from ddpdoctor.probe.analysis.stack_groups import blocking_workers

SKIPPED = "skipped"
MISMATCH = "mismatch"
_MAX_DIVERGENCES = 200  # counting later divergences stops here (a wholly misaligned group)
LOOK_AHEAD = 2000  # calls compared past a divergence to tell an extra call from a mismatch


@dataclass(frozen=True)
class Call:
    """One collective one rank entered."""

    rank: int
    record: tm.Collective
    returned: bool

    @functools.cached_property
    def signature(self) -> tuple:
        shapes = tuple(tuple(s) for s in (self.record.shapes or []))
        return (self.record.op, shapes, tuple(self.record.dtypes or []))

    def describe(self) -> str:
        return describe_collective(self.record)

    def evidence(self) -> dict:
        """The call as a finding's evidence names it (DDP501's sides, DDP502's collective)."""
        record = self.record
        return {"op": record.op, "shapes": record.shapes, "dtypes": record.dtypes,
                "bucket": record.bucket, "step": record.step,
                "site": str(record.site) if record.site else None}


@dataclass
class Side:
    """Ranks that did the same thing at the divergence: called `call` (or nothing)."""

    ranks: list[int]
    call: Optional[Call]


@dataclass
class Divergence:
    group: str
    kind: str  # SKIPPED | MISMATCH
    position: int  # index in the lined-up sequences (after removing earlier extra calls)
    sides: list[Side]  # MISMATCH: one per distinct call; SKIPPED: [entered side]
    skipped: list[int] = field(default_factory=list)  # SKIPPED: the ranks that did not enter
    instead: dict[int, Optional[Call]] = field(default_factory=dict)  # their call there, if any
    tail: bool = False  # SKIPPED because the skipping ranks' sequences stop here
    ended_early: list[int] = field(default_factory=list)  # ranks whose sequence stopped before
    later: int = 0  # further divergences in this group after this one
    consequence: Optional["Divergence"] = None  # a wait on another group this one caused
    # The same ranks waiting on another group the other way round: the ranks call the two
    # groups' collectives in opposite orders (one finding for both).
    crossed: Optional["Divergence"] = None

    @property
    def entered(self) -> Side:
        return self.sides[0]

    @property
    def seq(self) -> int:
        side = next((s for s in self.sides if s.call is not None), None)
        return side.call.record.seq if side else self.position


def sequences(run: RunModel) -> dict[str, dict[int, list[Call]]]:
    """group -> rank -> that rank's collectives on it in call order. Every member rank of a
    group has an entry, an empty list when it never entered one."""
    groups: dict[str, dict[int, list[Call]]] = {}
    members: dict[str, set[int]] = {}
    for rank, rank_run in run.ranks.items():
        done = {(d.group, d.seq) for d in rank_run.of(tm.CollectiveDone)}
        seen: set[tuple[str, int]] = set()
        for record in rank_run.of(tm.Collective):
            key = (record.group, record.seq)
            if key in seen:
                continue
            seen.add(key)
            calls = groups.setdefault(record.group, {}).setdefault(rank, [])
            calls.append(Call(rank, record, key in done))
            members.setdefault(record.group, set()).add(rank)
            if record.group_ranks:
                members[record.group].update(int(r) for r in record.group_ranks)
    formed = {r for r, rr in run.ranks.items() if rr.formed}
    for group, calls_by_rank in groups.items():
        if group == "WORLD":
            members[group] |= formed
        for rank in members[group]:
            if rank not in run.ranks:
                continue  # a member that left no telemetry at all: nothing to line up
            calls_by_rank[rank] = sorted(calls_by_rank.get(rank, []), key=lambda c: c.record.seq)
    return groups


def divergences(run: RunModel) -> list[Divergence]:
    """The first divergence of every group whose ranks disagree, by group name. Computed once
    per model (DDP501, DDP502 and DDP503 each ask; at 1,024 ranks each time cost a second):
    what it depends on is the records, how the job ended and the clocks of its nodes."""
    return run.derived_once("divergences", (run.records_key(), ending_key(run)), lambda: _divergences(run))


def _divergences(run: RunModel) -> list[Divergence]:
    events = crash_events(run)
    crashed = {r for r, e in events.items() if not e.after_end}  # not the teardown's
    # A rank that entered a collective with an error in flight (its cleanup barrier) had
    # crashed there: that collective and what followed are the error's consequence (DDP504),
    # never a collective it called "instead" of its peers'.
    cut = {r: e.waited_in for r, e in events.items() if e.waited_in is not None and r in crashed}
    status = run.outcome.status if run.outcome is not None else None

    stuck_on_worker = blocking_workers(run)

    def stopped_by_itself(rank: int) -> bool:
        # A rank whose sequence stops early skipped the next collective only if it ended or
        # was stuck elsewhere. One torn down mid-way (a crashed or killed run) may just not
        # have got there yet; one waiting for a DataLoader worker that blocks is stuck on it
        # (DDP503 shows the worker's frame), not skipping.
        if rank in crashed or rank in stuck_on_worker or _stopped_by_the_probe(run, rank):
            # Stopped at --max-steps, a rank may leave a collective its peers entered just
            # after their own last step (a framework's end-of-step broadcast): the probe's
            # doing, not the script's.
            return False
        return has_ended(run, rank) or status in ("stalled", "timeout")

    found = []
    for group, calls in sorted(sequences(run).items()):
        if cut:
            calls = {r: [c for c in seq if r not in cut or c.record.t < cut[r].t] for r, seq in calls.items()}
        if len(calls) < 2:
            continue
        divergence = align(group, calls, stopped_by_itself)
        if divergence is not None:
            found.append(divergence)
    return [d for d in _drop_consequences(found) if not _after_a_skip(run, d)]


def _after_a_skip(run: RunModel, divergence: Divergence) -> bool:
    """A divergence among a rank that skipped a backward its peers ran (and after the skip) is
    the skip's consequence: DDP502 names the skip, not where the shifted pairs finally met."""
    ranks = {r for side in divergence.sides for r in side.ranks} | set(divergence.skipped)
    times = [side.call.record.t for side in divergence.sides if side.call is not None]
    return skip_explains(run, ranks, min(times) if times else None) is not None


def _stopped_by_the_probe(run: RunModel, rank: int) -> bool:
    rank_run = run.ranks.get(rank)
    end = rank_run.last(tm.End) if rank_run is not None else None
    return end is not None and end.reason == "max_steps"


def _drop_consequences(found: list[Divergence]) -> list[Divergence]:
    """Two groups waiting on each other: rank A sits in an extra collective on group G1 that B
    never entered, so B went on to DDP's gradient all-reduce on group G2, which A never reaches.
    The gradient all-reduce is the consequence; only the extra collective is reported. Two
    collectives of the script's own that wait on each other so (A in G1's, B in G2's) are the
    two groups called in opposite orders: one divergence, `crossed` naming the other."""
    tails = [d for d in found if d.kind == SKIPPED and d.tail]
    dropped = set()
    for effect in tails:
        if effect.entered.call.record.op != "ddp_bucket_allreduce":
            continue
        for cause in tails:
            if cause is effect or cause.entered.call.record.op == "ddp_bucket_allreduce":
                continue
            waits_on_each_other = (set(cause.entered.ranks) == set(effect.skipped)
                                   and set(effect.entered.ranks) == set(cause.skipped))
            if waits_on_each_other:
                dropped.add(id(effect))
                cause.consequence = effect
    for first in tails:
        if id(first) in dropped:
            continue
        for second in tails:
            if second is first or id(second) in dropped or first.crossed is not None:
                continue
            if "ddp_bucket_allreduce" in (first.entered.call.record.op, second.entered.call.record.op):
                continue
            if (set(first.entered.ranks) == set(second.skipped)
                    and set(second.entered.ranks) == set(first.skipped)):
                dropped.add(id(second))
                first.crossed = second
    return [d for d in found if id(d) not in dropped]


def align(group: str, calls: dict[int, list[Call]],
          stopped_by_itself: Callable[[int], bool]) -> Optional[Divergence]:
    """The first divergence of one group (with later ones counted), or None."""
    work = {rank: list(seq) for rank, seq in calls.items()}
    members = sorted(work)
    first: Optional[Divergence] = None
    later = 0
    ended_before: set[int] = set()
    i = 0
    while later < _MAX_DIVERGENCES:
        present = [r for r in members if len(work[r]) > i]
        if not present:
            break
        absent = [r for r in members if len(work[r]) <= i]
        by_signature: dict[tuple, list[int]] = {}
        for rank in present:
            by_signature.setdefault(work[rank][i].signature, []).append(rank)
        found: Optional[Divergence] = None
        step_on = True
        if len(by_signature) == 1:
            if not absent:
                i += 1
                continue
            skippers = [r for r in absent if r not in ended_before and stopped_by_itself(r)]
            entered = [work[r][i] for r in present]
            if skippers and not all(c.returned for c in entered):
                found = Divergence(group, SKIPPED, i, [Side(present, entered[0])],
                                   skipped=skippers, instead={r: None for r in skippers},
                                   tail=True)
            # Nothing more to learn past the end of some ranks' sequences. A collective that
            # returned on every rank that entered it had all ranks in it: the others' records
            # of it were lost (a torn file), not skipped.
            if found is None:
                break
            step_on = False
        else:
            # Smallest side first (the odd one out); between equal sides, the one without the
            # lowest rank, which is taken as the reference.
            sides = sorted(by_signature.values(), key=lambda ranks: (len(ranks), -ranks[0]))
            extra = _extra_side(work, i, sides) if len(sides) == 2 else None
            if extra is not None:
                entered_ranks = sides[extra]
                others = sides[1 - extra]
                found = Divergence(group, SKIPPED, i, [Side(entered_ranks, work[entered_ranks[0]][i])],
                                   skipped=list(others),
                                   instead={r: work[r][i] for r in others})
                for rank in entered_ranks:
                    del work[rank][i]
                step_on = False
            else:
                found = Divergence(group, MISMATCH, i,
                                   [Side(ranks, work[ranks[0]][i]) for ranks in sides])
        if found is not None:
            if first is None:
                found.ended_early = sorted(set(absent) - set(found.skipped))
                first = found
            else:
                later += 1
            ended_before.update(absent)
        if found is not None and found.tail:
            break
        if step_on:
            i += 1
    if first is not None:
        first.later = later
    return first


def _extra_side(work: dict[int, list[Call]], i: int, sides: list[list[int]]) -> Optional[int]:
    """Index of the side whose call at i is an extra one, or None for a plain mismatch."""
    seq_a = _longest(work, sides[0])
    seq_b = _longest(work, sides[1])
    a_extra = _agreement(seq_a, i + 1, seq_b, i)
    b_extra = _agreement(seq_b, i + 1, seq_a, i)
    swapped = _agreement(seq_a, i + 1, seq_b, i + 1)
    exact = [h for h, (ok, same_length, n) in enumerate((a_extra, b_extra, swapped))
             if ok and same_length and n > 0]
    if exact:
        return exact[0] if exact[0] < 2 else None
    overlaps = [(n if ok and n > 0 else -1) for ok, _, n in (a_extra, b_extra, swapped)]
    best = max(overlaps)
    if best <= 0 or overlaps.count(best) > 1:
        return _extra_by_history(work, i, sides)
    winner = overlaps.index(best)
    return winner if winner < 2 else None


def _place(call: Call) -> tuple:
    site = call.record.site
    return (call.signature, (site.file, site.line) if site else None)


def _extra_by_history(work: dict[int, list[Call]], i: int, sides: list[list[int]]) -> Optional[int]:
    """Both sides stuck at i, nothing after it to line up. A rank-only `barrier()` meets the
    others' next DDP gradient all-reduce: that all-reduce (same shapes, same backward() site)
    is one both sides made before, the barrier one the other side never made. That is a
    skipped collective, not two ranks disagreeing about one."""
    a, b = work[sides[0][0]], work[sides[1][0]]
    stuck_there = (len(a) == i + 1 and len(b) == i + 1 and not a[i].returned and not b[i].returned)
    if not stuck_there:
        return None
    # User code never calls something *instead of* DDP's own gradient all-reduce: a user
    # collective meeting one that both sides made before is an extra call.
    for extra, other in ((0, 1), (1, 0)):
        mine, theirs = (a, b) if extra == 0 else (b, a)
        if (theirs[i].record.op == "ddp_bucket_allreduce" and mine[i].record.op != "ddp_bucket_allreduce"
                and _place(theirs[i]) in {_place(c) for c in mine[:i]}
                and _place(mine[i]) not in {_place(c) for c in theirs[:i]}):
            return extra
    return None


def _longest(work: dict[int, list[Call]], ranks: list[int]) -> list[Call]:
    return max((work[r] for r in ranks), key=len)


def _agreement(x: list[Call], x_from: int, y: list[Call], y_from: int) -> tuple[bool, bool, int]:
    """x[x_from:] against y[y_from:]: (equal over their common length, equal lengths too, that
    common length). Compared over at most LOOK_AHEAD calls: each divergence looked at costs a
    bounded amount whatever the number of calls (100,000 forged collectives, up to 200
    divergences each comparing whole sequences, took minutes)."""
    n = max(0, min(len(x) - x_from, len(y) - y_from))
    m = min(n, LOOK_AHEAD)
    ok = all(x[x_from + k].signature == y[y_from + k].signature for k in range(m))
    return ok, ok and len(x) - x_from == len(y) - y_from, n
