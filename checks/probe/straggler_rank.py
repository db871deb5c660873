"""DDP601: a straggler rank, whose own work per step is far above the other ranks'."""

from __future__ import annotations

from collections import Counter
from statistics import median

from ddpdoctor.attach.observation import Observation
from ddpdoctor.attach.window import HUNG, PROGRESSING, Reading, Window, window
from ddpdoctor.core.findings import Location, Problem, Severity
from ddpdoctor.probe.analysis import margins, perf
from ddpdoctor.probe.analysis.perf.steps import PHASE_WORDS
from ddpdoctor.probe.analysis.perf.units import ms
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.core.registry import Incomplete, Skipped, check
from ddpdoctor.probe.analysis.stack_groups import on_hosts
from ddpdoctor.probe.run_model.stack_view import bare_name, func_words

from ddpdoctor.probe.words.wording import rank_list, seconds, verb

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


@check("DDP601", "Straggler rank", Severity.WARNING, stages=("attach",))
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
    if isinstance(run, Observation):
        return _from_attach(run)
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


def _from_attach(observation: Observation) -> list[Problem] | Skipped | Incomplete:
    """A running job (`ddpdoctor attach`): the one rank that waits in far fewer of its sampled
    stacks than the others, who wait for it, while every rank advances."""
    win = window(observation)
    if win.phase == HUNG:
        return Skipped("the job is not progressing: no step to compare")
    if win.phase != PROGRESSING:
        return Incomplete(win.short_reason())
    rank = win.straggler()
    if rank is not None:
        return [_attach_straggler(win, rank)]
    why = win.unjudged()
    return Incomplete(why) if why else []


def _attach_straggler(win: Window, rank: Reading) -> Problem:
    others = [r for r in win.sampled if r is not rank]
    view, share = rank.top_own()
    where = ""
    location: Location | None = None
    if view is not None:
        location = view.location
        user = view.user_frame
        func = user.func if user else view.call
        call = "" if view.call == func or not view.in_library else f" (in {view.call})"
        func = func_words(func)
        where = (f"; rank {rank.rank} spends {share:.0%} of its samples in {func}"
                 f"{f' at {location}' if location else ''}{call}")
    their = median([r.wait_share for r in others])
    waits_in = Counter(bare_name(r.views[-1].call) if r.views else "?" for r in others).most_common(1)[0][0]
    hosts = win.hosts
    return Problem(
        message=(f"rank {rank.rank}{on_hosts(hosts, [rank.rank])} waits for the others in "
                 f"{rank.wait_share:.0%} of its samples while {rank_list([r.rank for r in others])} "
                 f"{verb([r.rank for r in others], 'waits', 'wait')} in {their:.0%} of "
                 f"{verb([r.rank for r in others], 'its', 'theirs')} "
                 f"(mostly in {waits_in}), over the {seconds(win.observation.duration_s)} sampled"
                 f"{where}"),
        hint=(f"rank {rank.rank} is the straggler: make every rank do the same work per step "
              "(rank-guarded extras, a heavier data shard, a DataLoader without workers on that "
              "rank, a slower or shared device)"),
        ranks=[rank.rank],
        hosts=[hosts[rank.rank]] if rank.rank in hosts else [],
        location=location,
        evidence={"wait_share": {str(r.rank): round(r.wait_share, 3) for r in win.sampled},
                  "own_share": round(share, 3),
                  "per_rank": {str(r.rank): r.evidence() for r in win.sampled}},
    )
