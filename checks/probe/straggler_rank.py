"""DDP601: a straggler rank, whose own work per step is far above the other ranks'."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.probe.analysis import margins, perf
from ddpdoctor.probe.analysis.perf.steps import PHASE_WORDS
from ddpdoctor.probe.analysis.perf.units import ms
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.core.registry import Skipped, check

from ddpdoctor.probe.words.wording import rank_list, verb

RATIO = 1.5  # the rank's compute per step against the median of the other ranks'
MIN_EXCESS_S = 0.010  # ... and at least this much more per step,
MIN_EXCESS_SHARE = 0.20  # ... and at least this share of the job's median step time

HINTS = {
    "data": "its input is slower than the other ranks': give its DataLoader workers "
            "(num_workers > 0), and check its shard (larger files, a slower disk, heavier samples)",
    "forward": "it computes more in forward than the others: look for work guarded by its rank "
               "(`if rank == ...`: extra forwards, metrics), longer inputs in its shard, or a "
               "slower or shared device",
    "backward": "its backward is slower: longer inputs in its shard, or a slower or shared device",
    "optimizer": "its optimizer step is slower: rank-dependent work around optimizer.step() "
                 "(clipping, EMA, logging of weights) or a slower device",
    "other": "it runs code of its own between the phases: logging, metrics or checkpointing "
             "guarded by its rank; do it every N steps, asynchronously, or spread it over ranks",
}


@check("DDP601", "Straggler rank", Severity.WARNING)
def straggler_rank(run: RunModel) -> list[Problem] | Skipped:
    """
    What it detects:
        A rank whose own work per optimizer step (the step's wall time minus every wait on other
        ranks: exposed gradient communication and the script's own collectives) is at least
        1.5x the median of the other ranks' and longer by at least 10 ms and by 20% of the
        job's median step time (medians over the steps after the first 3; within the noise of
        those medians it is reported as borderline, at info severity), and by more than
        the communication still exposed on that rank itself (where more than that shows even on
        the slowest rank, the job is communication bound, DDP604, and contention with that
        communication is what slows the rank's compute). The finding names
        the rank, the phase that makes the difference (waiting for data, forward, backward,
        optimizer, or the script's own code between them) and what the others lose waiting.
        `ddpdoctor attach` reports it for a job already running, from sampled stacks: the rank
        that waits in far fewer of its samples than the others, with the user frame where its
        own time goes (docs/attach.md).

    Why it hurts:
        DDP synchronizes every step: each gradient all-reduce completes only when the last rank
        joins it. One slow rank sets the pace of all of them; the others sit idle in the
        all-reduce for the difference, every step, and that idle time is multiplied by the
        number of ranks.

    How to fix:
        Make every rank do the same work per step. The usual culprits are work guarded by a
        rank (`if rank == 1: expensive_metric(...)`), a data shard that is heavier or slower to
        read on one rank, or one rank on a slower or shared device. Move per-rank extras off the
        training step or do them every N steps:

            if step % 100 == 0 and rank == 0:     # not every step on one rank
                log_metrics(model)
    """
    perfs = perf.step_perf(run)
    if len(perfs) < 2:
        return Skipped(f"needs at least 2 ranks with {perf.MIN_STEPS} steps after the first "
                       f"{perf.WARMUP_STEPS}")
    clock = perf.device_time(run)
    if not (clock.comm_measured and clock.compute_measured):
        # A rank's own work is its step minus its waiting on the others: unknown without both.
        return Skipped(f"{clock.reason}: a rank's waiting on the others cannot be told from its work")
    step_time = perf.median([p.median("step") for p in perfs.values()])
    compute = {rank: p.median("compute") for rank, p in perfs.items()}
    noise = {rank: margins.median_noise([s.compute for s in p.steps]) for rank, p in perfs.items()}
    slow, near, judged = [], {}, {}
    for rank, own in compute.items():
        others = perf.median([c for r, c in compute.items() if r != rank])
        excess = own - others
        # A straggler's all-reduces finish soon after it joins them (the others are already
        # there), so little of its own communication shows. Where more does than its excess,
        # the job is communication bound (DDP604) and the rank's compute is slowed by it.
        # One threshold for the excess: the ratio, the floors, and that exposure.
        threshold = max((RATIO - 1) * others, MIN_EXCESS_S, MIN_EXCESS_SHARE * step_time,
                        perfs[rank].median("comm_exposed"))
        margin = margins.Margin(f"rank {rank}'s extra work per step", excess, threshold,
                                margins.combined(noise[rank], perf.median(
                                    [n for r, n in noise.items() if r != rank])))
        judged[rank] = margin
        if margin.verdict == margins.FIRES:
            slow.append(rank)
        elif margin.verdict == margins.BORDERLINE:
            near[rank] = margin
    if not slow and near and len(near) * 2 <= len(perfs):
        rank, margin = max(near.items(), key=lambda item: item[1].units)
        return [margins.borderline(
            f"rank {rank} works {ms(compute[rank])} per step against a median of "
            f"{ms(perf.median([c for r, c in compute.items() if r != rank]))} on the others, near "
            "the straggler threshold", margin, f"rerun to settle whether rank {rank} is a straggler",
            [rank], evidence={"compute_ms": {str(r): round(c * 1e3, 2)
                                             for r, c in sorted(compute.items())}})]
    if not slow or len(slow) * 2 > len(perfs):
        return []  # most ranks "slow" means the rest are the odd ones: no single straggler
    problems = []
    for rank in slow:
        others = [r for r in perfs if r not in slow]
        gaps = {phase: perfs[rank].median(phase) - perf.median([perfs[r].median(phase) for r in others])
                for phase in perf.COMPUTE_PHASES}
        phase = max(gaps, key=gaps.get)
        own_phase = perfs[rank].median(phase)
        their_phase = perf.median([perfs[r].median(phase) for r in others])
        their_compute = perf.median([compute[r] for r in others])
        waits = {r: perfs[r].median("comm_exposed") + perfs[r].median("collectives") for r in others}
        wait = perf.median(list(waits.values()))
        problems.append(Problem(
            message=(f"rank {rank} works {ms(compute[rank])} per step against {ms(their_compute)} "
                     f"on {rank_list(others)} ({compute[rank] / max(their_compute, 1e-9):.1f}x, "
                     f"median of {len(perfs[rank].steps)} steps); the difference is "
                     f"{PHASE_WORDS[phase]}: {ms(own_phase)} per step against {ms(their_phase)}. "
                     f"Meanwhile {rank_list(others)} {verb(others, 'waits', 'wait')} {ms(wait)} "
                     f"per step for it in communication, of a {ms(step_time)} step "
                     f"(margin: {judged[rank].words()})"),
            hint=f"rank {rank} is the straggler: {HINTS[phase]}",
            ranks=[rank],
            evidence={
                "phase": phase,
                "compute_ms": {str(r): round(c * 1e3, 2) for r, c in sorted(compute.items())},
                "phase_ms": {str(r): round(perfs[r].median(phase) * 1e3, 2) for r in sorted(perfs)},
                "wait_ms": {str(r): round(w * 1e3, 2) for r, w in sorted(waits.items())},
                "step_ms": round(step_time * 1e3, 2),
                "steps": len(perfs[rank].steps),
                "borderline": False,
                **judged[rank].evidence(),
            },
        ))
    return problems
