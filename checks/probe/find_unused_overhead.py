"""DDP402: find_unused_parameters=True while every parameter gets a gradient."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.analysis import frameworks
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.core.registry import Skipped, check

from ddpdoctor.probe.words.wording import location, rank_list

MIN_ITERATIONS = 2  # backward passes on every rank before trusting "always all used"


@check("DDP402", "find_unused_parameters=True without unused parameters", Severity.WARNING)
def find_unused_overhead(run: RunModel) -> list[Problem] | Skipped:
    """
    What it detects:
        A DDP model built with find_unused_parameters=True in which every trainable parameter
        received a gradient in every recorded backward pass, on every rank that recorded any
        (at least 2 backward passes on each).

    Why it hurts:
        The flag makes DDP traverse the autograd graph after every forward to find parameters
        that will not get a gradient, and it keeps DDP from rebuilding its buckets in gradient
        order after the first iteration, so communication overlaps backward less well. When no
        parameter is ever unused, that is pure overhead on every step.

    How to fix:
        Drop the flag (it defaults to False):

            model = DDP(model)                                   # not find_unused_parameters=True

        If some steps really do skip parameters (a conditional branch), keep it; the probe
        may not have run those steps.
    """
    infos = {}
    for rank_run in run.ranks.values():
        for info in rank_run.of(tm.DDPInfo):
            infos.setdefault(info.ddp_id, info)
    if not infos:
        return Skipped("no DistributedDataParallel model was seen")
    flagged = {i: info for i, info in infos.items() if info.find_unused_parameters}
    if not flagged:
        return []
    problems = []
    judged = False
    for ddp_id, info in sorted(flagged.items()):
        per_rank: dict[int, list[tm.Grads]] = {}
        for rank, rank_run in run.ranks.items():
            records = [g for g in rank_run.of(tm.Grads) if g.ddp_id == ddp_id]
            if any(i.ddp_id == ddp_id for i in rank_run.of(tm.DDPInfo)) or records:
                per_rank[rank] = records
        if not per_rank or min(len({g.iteration for g in v}) for v in per_rank.values()) < MIN_ITERATIONS:
            continue
        judged = True
        if any(g.unused for records in per_rank.values() for g in records):
            continue
        ranks = sorted(per_rank)
        counts = sorted({len({g.iteration for g in v}) for v in per_rank.values()})
        passes = (f"all {counts[0]} recorded backward passes" if len(counts) == 1
                  else f"every recorded backward pass ({counts[0]}-{counts[-1]} per rank)")
        builder = frameworks.ddp_builder(run)  # Trainer, Lightning, prepare: the user wrote no DDP(...)
        model = "the DDP model" + (f" {builder + ' ' if builder else ''}built at {info.site}" if info.site else "")
        problems.append(Problem(
            message=(f"{model} passes find_unused_parameters=True, yet every parameter received a "
                     f"gradient in {passes} on {rank_list(ranks)}: an extra "
                     "autograd-graph traversal every iteration, and buckets never rebuilt in "
                     "gradient order, for nothing"),
            hint="pass find_unused_parameters=False (the default) to DistributedDataParallel",
            ranks=ranks,
            location=location(info.site),
            evidence={"ddp_id": ddp_id, "iterations_per_rank": {
                str(r): len({g.iteration for g in v}) for r, v in per_rank.items()}},
        ))
    if not judged:
        return Skipped(f"fewer than {MIN_ITERATIONS} backward passes through the DDP model were "
                       "recorded on some rank")
    return [frameworks.worded("DDP402", p, run) for p in problems]
