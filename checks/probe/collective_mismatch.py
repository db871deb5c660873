"""DDP501: ranks called different collectives, shapes or dtypes at the same position."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.probe import telemetry as tm
from ddpdoctor.probe.analysis import frameworks
from ddpdoctor.probe.analysis.runmodel import RunModel
from ddpdoctor.core.registry import Skipped, check

from ddpdoctor.probe.analysis.collective_alignment import MISMATCH, Side, divergences
from ddpdoctor.probe.analysis.rank_state import forward_only_on
from ddpdoctor.probe.run_model.looks import DDP_BUFFER_BROADCAST
from ddpdoctor.probe.wording import at, location, rank_list


@check("DDP501", "Ranks call different collectives at the same position", Severity.ERROR)
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
