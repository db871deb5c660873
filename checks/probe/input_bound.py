"""DDP605: the input pipeline is the bottleneck: every rank waits on its DataLoader."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.probe.analysis import margins, perf
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.analysis.perf.units import ms
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.core.registry import Skipped, check

from ddpdoctor.probe.words.wording import at, location, rank_list

MIN_SHARE = 0.30  # waiting for data, as a share of the rank's median step
MIN_WAIT_S = 0.010  # ... and at least this long per step, on every rank


@check("DDP605", "Input pipeline bound", Severity.WARNING)
def input_bound(run: RunModel) -> list[Problem] | Skipped:
    """
    What it detects:
        Every rank spends at least 30% of its median step, and at least 10 ms per step, waiting
        for the next batch from its DataLoader (medians over the steps after the first 3; within
        the noise of those medians it is reported as borderline, at info severity). When
        only some ranks wait on data, the others wait on them instead: that is a straggler
        (DDP601, which names the phase).

    Why it hurts:
        While a rank waits for its batch, its device and the network sit idle; a faster GPU or
        more ranks change nothing. Common causes: decoding, augmentation or file reads in
        `__getitem__` done in the training process itself (num_workers=0), too few workers, or
        workers restarted every epoch.

    How to fix:
        Load in parallel with the training step, and keep the workers between epochs:

            loader = DataLoader(dataset, batch_size=64, sampler=sampler,
                                num_workers=4, pin_memory=True,
                                persistent_workers=True, prefetch_factor=4)

        Move expensive per-sample work out of `__getitem__` (pre-process once and cache), or
        onto the device in batches.
    """
    perfs = perf.step_perf(run)
    if not perfs:
        return Skipped(f"no rank recorded {perf.MIN_STEPS} steps after the first {perf.WARMUP_STEPS}")
    if not any(run.ranks[r].first(tm.Loader) for r in perfs):
        return Skipped("no DataLoader was used")
    waits = {r: p.median("data") for r, p in perfs.items()}
    steps = {r: p.median("step") for r, p in perfs.items()}
    # Every rank must wait: the rank nearest its threshold decides. Per step, the wait beyond
    # 30% of that step; the spread of those is the noise of the comparison.
    margin = margins.binding(
        margins.Margin(f"rank {r}'s wait for data per step", waits[r],
                       max(MIN_WAIT_S, MIN_SHARE * steps[r]),
                       margins.median_noise([s.phases.get("data", 0.0) - MIN_SHARE * s.wall
                                             for s in p.steps]))
        for r, p in perfs.items())
    if margin.verdict == margins.CLEAN:
        return []
    ranks = sorted(perfs)
    loader = next((run.ranks[r].first(tm.Loader) for r in ranks if run.ranks[r].first(tm.Loader)), None)
    wait = perf.median(list(waits.values()))
    step = perf.median(list(steps.values()))
    workers = ""
    if loader is not None:
        workers = (f"; the DataLoader{at(loader.site)} loads in the training process itself "
                   "(num_workers=0)" if loader.num_workers == 0 else
                   f"; its DataLoader{at(loader.site)} has num_workers={loader.num_workers}")
    hint = ("load batches in parallel with training: DataLoader(num_workers=4, "
            "persistent_workers=True, pin_memory=True), and move heavy per-sample work out of "
            "__getitem__")
    if loader is not None and loader.num_workers > 0:
        hint = (f"more DataLoader workers than {loader.num_workers}, a larger prefetch_factor, "
                "persistent_workers=True, or cheaper per-sample work in __getitem__ (cache "
                "decoded data)")
    throughput = perf.throughput(perfs)
    rate = f"; the job reads {throughput:.0f} samples/s" if throughput else ""
    evidence = {"data_ms": {str(r): round(w * 1e3, 2) for r, w in sorted(waits.items())},
                "step_ms": {str(r): round(s * 1e3, 2) for r, s in sorted(steps.items())},
                "num_workers": loader.num_workers if loader else None}
    if margin.verdict == margins.BORDERLINE:
        return [margins.borderline(
            f"{rank_list(ranks)} wait {ms(wait)} of every {ms(step)} step ({wait / step:.0%}) for "
            f"their next batch{workers}, near the input-bound threshold of {MIN_SHARE:.0%}",
            margin, hint, ranks, location(loader.site) if loader else None, evidence)]
    return [Problem(
        message=(f"{rank_list(ranks)} wait {ms(wait)} of every {ms(step)} step "
                 f"({wait / step:.0%}) for their next batch (median of "
                 f"{min(len(p.steps) for p in perfs.values())} steps){workers}{rate}: the "
                 "input pipeline, not compute or communication, sets the pace "
                 f"(margin: {margin.words()})"),
        hint=hint,
        ranks=ranks,
        location=location(loader.site) if loader else None,
        evidence={**evidence, "borderline": False, **margin.evidence()},
    )]
