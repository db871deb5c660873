"""DDP501: ranks called different collectives, shapes or dtypes at the same position."""

from __future__ import annotations

from ddpdoctor.attach.observation import Observation
from ddpdoctor.attach.flight import MISMATCH as FLIGHT_MISMATCH, Divergence as FlightDivergence, DumpSet
from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.analysis import frameworks
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.core.registry import Incomplete, Skipped, check

from ddpdoctor.probe.analysis.collective_alignment import MISMATCH, Side, divergences
from ddpdoctor.probe.analysis.rank_state import forward_only_on
from ddpdoctor.probe.run_model.busy_or_blocked import DDP_BUFFER_BROADCAST
from ddpdoctor.probe.words.wording import at, location, rank_list
from ddpdoctor.postmortem.causality import grouped, problem, when
from ddpdoctor.postmortem.evidence import Evidence


@check("DDP501", "Ranks call different collectives at the same position", Severity.ERROR,
       stages=("evidence", "attach", "flight"))
def collective_mismatch(run: RunModel) -> list[Problem] | Skipped:
    """
    What it detects:
        Every rank's collectives (torch.distributed calls and DDP's own gradient all-reduces)
        are numbered per process group in call order. At the first position where the ranks
        called a different operation, or passed tensors of different shapes or dtypes, this
        check names what each group of ranks called there and where (file:line). One finding
        per process group: the first divergence; later ones are counted in the evidence.
        When the difference is better explained by one rank making an extra call (the rest of
        the sequences line up again once it is removed), DDP502 reports it instead.
        Flight Recorder dumps are lined up the same way by their sequence numbers, whichever
        command read them (`ddpdoctor report FR_DUMP_DIR`, `ddpdoctor attach` on an NCCL job
        started with the dump pipe, a post-mortem).

    Why it hurts:
        Collectives match by position, not by name. On gloo, an all_reduce of 10 floats on one
        rank and 20 on another aborts the process, hangs until the timeout, or silently returns
        a wrong sum, depending on the sizes; all_reduce against broadcast hangs. NCCL hangs
        until its watchdog kills the job, often minutes later, with no hint of the cause.

    How to fix:
        Make every rank call the same collectives, in the same order, with the same shapes.
        Pad variable-length tensors (or all_gather their sizes first) and keep collectives out
        of rank- or data-dependent branches:

            # before: each rank reduces a tensor as long as its own batch
            dist.all_reduce(per_sample_loss)
            # after: a fixed-shape summary
            stats = torch.stack([per_sample_loss.sum(), torch.tensor(float(len(per_sample_loss)))])
            dist.all_reduce(stats)

        TORCH_DISTRIBUTED_DEBUG=DETAIL makes torch check every collective's fingerprint.
    """
    if isinstance(run, Evidence):
        return _from_evidence(run)
    if isinstance(run, DumpSet):
        return _from_dumps(run)
    if isinstance(run, Observation):  # attach: only the dumps its pipe fetched tell positions apart
        return _flight_mismatches(run.flight) if run.flight is not None else []
    calls = [r for rank_run in run.ranks.values() for r in rank_run.of(tm.Collective)]
    if not calls:
        return Skipped("no collective was recorded")
    if len(run.ranks) < 2:
        return Skipped("fewer than 2 ranks left telemetry: nothing to compare")
    problems = []
    for divergence in divergences(run):
        if divergence.kind != MISMATCH:
            continue
        sides = divergence.sides
        odd = _odd_side(sides)
        ordered = sorted(sides, key=lambda s: s.ranks[0])
        differ = _what_differs(sides)
        steps = sorted({s.call.record.step for s in sides})
        step_text = f"step {steps[0]}" if len(steps) == 1 else "steps " + "/".join(map(str, steps))
        clauses = [f"{rank_list(s.ranks)} called {s.call.describe()}{at(s.call.record.site)}"
                   for s in ordered]
        message = (f"at collective seq {divergence.seq} on group {divergence.group} ({step_text}) "
                   f"the ranks disagree ({differ} differ): " + "; ".join(clauses))
        if divergence.later:
            message += f"; {divergence.later} more divergent position(s) follow"
        involved = [r for s in sides for r in s.ranks]
        blamed = involved if sum(len(s.ranks) == len(odd.ranks) for s in sides) > 1 else odd.ranks
        problems.append(Problem(
            message=message,
            hint=_hint(differ, odd, sides),
            ranks=blamed,
            location=location(odd.call.record.site),
            evidence={
                "group": divergence.group,
                "seq": divergence.seq,
                "position": divergence.position,
                "differ": differ,
                "sides": [_side_evidence(s) for s in ordered],
                "ranks_ended_before": divergence.ended_early,
                "later_divergences": divergence.later,
            },
        ))
    return [frameworks.worded("DDP501", p, run) for p in problems]


def _odd_side(sides: list[Side]) -> Side:
    """The side to point at: the fewest ranks; between equals, a user collective rather than
    DDP's gradient all-reduce (which every step makes), then DDP's buffer broadcast (a forward
    through the DDP model, run where the others did something else), then the side without the
    lowest rank."""
    lowest = min(r for s in sides for r in s.ranks)
    return min(sides, key=lambda s: (len(s.ranks), s.call.record.op == "ddp_bucket_allreduce",
                                     s.call.record.op != DDP_BUFFER_BROADCAST, lowest in s.ranks))


def _what_differs(sides: list[Side]) -> str:
    ops = {s.call.record.op for s in sides}
    shapes = {tuple(tuple(x) for x in s.call.record.shapes or []) for s in sides}
    dtypes = {tuple(s.call.record.dtypes or []) for s in sides}
    parts = [name for name, values in (("ops", ops), ("shapes", shapes), ("dtypes", dtypes))
             if len(values) > 1]
    if len(parts) > 1:
        return ", ".join(parts[:-1]) + " and " + parts[-1]
    return parts[0] if parts else "calls"


def _hint(differ: str, odd: Side, sides: list[Side]) -> str:
    where = at(odd.call.record.site)
    if odd.call.record.op == DDP_BUFFER_BROADCAST:
        return forward_only_on(odd.ranks, odd.call.record)
    if all(s.call.record.op == "ddp_bucket_allreduce" for s in sides):
        return ("DDP's gradient buckets differ across ranks, so the ranks hold different models: "
                "build the same model on every rank (no rank-dependent layers or requires_grad) "
                "with the same bucket_cap_mb")
    if "ops" in differ:
        return ("every rank must call the same collectives in the same order: look for a rank- or "
                f"data-dependent branch around the call{where} (e.g. `if rank == 0:`) and make all "
                "ranks take it; TORCH_DISTRIBUTED_DEBUG=DETAIL checks each collective")
    return ("pass tensors of the same shape and dtype on every rank: pad variable-length data or "
            f"all_gather the sizes first, for the call{where}; TORCH_DISTRIBUTED_DEBUG=DETAIL "
            "checks each collective")


def _side_evidence(side: Side) -> dict:
    return {"ranks": side.ranks, **side.call.evidence()}


def _from_evidence(ev: Evidence) -> list[Problem] | Skipped:
    """A dead job's evidence: TORCH_DISTRIBUTED_DEBUG=DETAIL's mismatch report a rank raised,
    Flight Recorder dumps that disagree at one position, or watchdog timeouts at one SeqNum of
    one group with different OpTypes (ranks stopped in different collectives: a desync)."""
    problems = []
    reports = [e for e in ev.errors if e.kind == "mismatch"]
    if reports:  # every rank raises the same report in its own words: one finding
        group = reports
        ranks = sorted({f.rank for f in group if f.rank is not None})
        differ = group[0].message.partition("Collectives differ in the following aspects:")[2].strip()
        what = f"collectives differ in {differ}" if differ else group[0].summary()
        problems.append(problem(ev, group, f"{rank_list(ranks)} (TORCH_DISTRIBUTED_DEBUG=DETAIL): {what}{when(group)}",
                                "every rank must call the same collective with the same shapes and dtypes "
                                "at the same position: the report's fingerprints show which differ",
                                extra={"detail": group[0].message}))
    if ev.flight is not None:
        for found in _flight_mismatches(ev.flight):
            found.evidence.setdefault("role", "cause")
            problems.append(found)
    by_seq: dict[tuple, dict[str, list]] = {}
    for w in ev.timeouts:
        by_seq.setdefault((w.pg, w.seq), {}).setdefault(w.op, []).append(w)
    for (pg, seq), ops in sorted(by_seq.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        if len(ops) > 1:
            facts = [w for items in ops.values() for w in items]
            parts = "; ".join(f"{rank_list(sorted({w.rank for w in items if w.rank is not None}))} in {op}"
                              for op, items in ops.items())
            problems.append(problem(ev, facts, f"ranks stopped at SeqNum {seq} in different collectives: {parts}",
                                    "a desync: the ranks called different collectives at the same position; "
                                    "look for a collective under a rank- or data-dependent branch "
                                    "(`ddpdoctor lint` finds many)", role_="cause"))
    if not problems and ev.empty:
        return Skipped("no evidence was read")
    return problems


def _from_dumps(dumps: DumpSet) -> list[Problem] | Incomplete:
    """A folder of Flight Recorder dumps (`ddpdoctor report DUMPS`): a mismatch the dumps show is
    one whatever is missing; none found is a verdict only over every rank's dump."""
    found = _flight_mismatches(dumps)
    if found:
        return found
    if not dumps.complete:
        return Incomplete(f"the dumps are incomplete: {dumps.missing}")
    if len(dumps.dumps) < 2:
        return Incomplete("fewer than 2 ranks' dumps: nothing to line up")
    return []


def _flight_mismatches(dumps: DumpSet) -> list[Problem]:
    return [_flight_mismatch(d) for d in dumps.lineup.divergences if d.kind == FLIGHT_MISMATCH]


def _flight_mismatch(d: FlightDivergence) -> Problem:
    """Ranks that entered one position of a group with different ops, shapes or dtypes."""
    parts = [f"{rank_list(ranks)} called {d.by_rank[ranks[0]][d.seq].describe()}{d.by_rank[ranks[0]][d.seq].at()}"
             for ranks in d.shapes.values()]
    smallest = min(d.shapes.values(), key=len)
    call = d.by_rank[smallest[0]][d.seq]
    return Problem(
        message=f"position {d.seq} on group {d.group}: " + "; ".join(parts),
        hint="every rank must call the same collective with the same shapes and dtypes at the same position",
        ranks=smallest,
        location=call.view.location,
        evidence={"group": d.group, "seq": d.seq, "source": "flight recorder",
                  "calls": {str(r): d.by_rank[r][d.seq].describe() for rs in d.shapes.values() for r in rs}},
    )
