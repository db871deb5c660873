"""DDP604: gradient communication that backward does not hide takes a large share of the step."""

from __future__ import annotations

from typing import Optional

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.probe.analysis import margins, perf
from ddpdoctor.probe.analysis.perf import ModelComm, megabytes, ms
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.core.registry import Skipped, check

from ddpdoctor.probe.words.wording import counted
from .bucket_sizes import Merge, latency_bound_buckets, merge

MIN_SHARE = 0.20  # avoidable exposed communication per step, as a share of the median step


def unavoidable(comm: ModelComm) -> float:
    """Exposed seconds no overlap can remove: the last bucket is all-reduced after the last
    gradient, always, and costs at least its fixed cost; all of its time in training when it is
    below the latency/bandwidth knee (then its bytes are not what takes the time).

    Its time in training is what a bucket of its size takes in training: the median of the
    buckets' times, each scaled to the last one's size by the in-job baseline's CallCost. The
    last bucket's own interval is no measure of it: gloo runs the buckets one after another, and
    which of them gets the time the queue left over moves from run to run (the last of
    examples/small_buckets.py's four 17 KB buckets took 1.5-1.7 ms in 3 of 14 runs and
    0.19-0.40 ms in the other 11, and the verdict followed it)."""
    cost = comm.cost
    if cost is None or not comm.buckets:
        return 0.0
    last = comm.last
    if not cost.latency_bound(last.nbytes):
        return min(cost.latency, last.seconds)
    size = cost.seconds(last.nbytes)
    return perf.median([b.seconds * size / cost.seconds(b.nbytes) if cost.seconds(b.nbytes) > 0
                        else b.seconds for b in comm.buckets])


@check("DDP604", "Communication not hidden behind backward", Severity.WARNING)
def exposed_comm(run: RunModel) -> list[Problem] | Skipped:
    """
    What it detects:
        Gradient all-reduces still running after the last gradient of the backward pass was
        computed, beyond what no overlap can remove (the fixed cost of the last bucket, which
        always follows the last gradient; all of what a bucket of its size takes in training
        when it is below the latency/bandwidth knee measured in this job), for at least 20% of
        the median step and more than the
        uncertainty of the median step (two standard errors, from the spread of the step
        times). Medians over the steps after the first 3, so a small model on a CPU runner and
        a large one on a cluster are judged alike.
        Within the noise of that threshold (the uncertainty of the medians compared, see
        "Margins" in docs/verdicts.md) it is reported as borderline, at info severity.
        It is measured on the rank that arrives last at each step, so time the other ranks spend
        waiting for a straggler (DDP601) does not count here. Where the buckets are many and
        latency-bound (DDP603), the exposure merging them would remove is DDP603's finding, not
        this one's: this check judges what would still be exposed after that fix, and says how
        much it left to DDP603 (one cause, one finding). The finding estimates the step
        time with that communication hidden: "step 80 ms -> ~42 ms (est.)".

    Why it hurts:
        DDP hides communication by all-reducing each bucket while backward is still computing
        the gradients of earlier layers. What is left after the last gradient is pure waiting:
        no rank computes anything until it completes. When it is a large share of the step, the
        job is communication bound: more or faster GPUs will not make it faster, and adding
        ranks makes it slower per sample.

    How to fix:
        Send fewer bytes per unit of compute, or start sending earlier:

            # more compute per all-reduce: a larger batch per rank, or accumulate gradients
            with model.no_sync():                  # k-1 micro-batches without all-reduce
                loss(model(x1)).backward()
            loss(model(xk)).backward()             # the k-th all-reduces the sum

            # fewer bytes: compress gradients to bf16 on the wire
            from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
            model.register_comm_hook(None, default_hooks.bf16_compress_hook)

        Sparse gradients for large embedding tables (`nn.Embedding(..., sparse=True)`) send only
        the rows a batch touched. If a single bucket holds most of the gradient (DDP603), a
        smaller bucket_cap_mb lets the first buckets start during backward.
    """
    perfs = perf.step_perf(run)
    if not perfs:
        return Skipped(f"no rank recorded {perf.MIN_STEPS} steps after the first {perf.WARMUP_STEPS}")
    unjudged = perf.comm_unjudged(run)
    if unjudged:
        return Skipped(unjudged)
    exposed, step_time, steps = perf.pure_exposed(perfs)
    if steps < perf.MIN_STEPS or step_time <= 0:
        return Skipped("too few steps recorded by every rank")
    comms = [c for c in perf.model_comm(run) if c.buckets]
    floor = min(exposed, max((unavoidable(c) for c in comms), default=0.0))
    # One cause, one finding: exposure that merging latency-bound buckets removes is DDP603's
    # (its fix, its estimate); this check judges what would still be exposed after that fix.
    # Counted here too, the same milliseconds made two findings, and DDP604's verdict on
    # examples/small_buckets.py sat within the noise of its threshold (borderline 4, reported 1
    # of 5 identical runs) while DDP603's fix removed all of it.
    fix = _merge_that_leaves_most(comms, exposed)
    explained = exposed - fix.exposed_after if fix is not None else 0.0
    if fix is not None:  # what no overlap removes is then the last merged bucket, not today's last
        floor = min(fix.exposed_after, max(floor, fix.last_after))
    avoidable = max(0.0, exposed - explained - floor)
    noise = perf.step_noise(perfs)
    # Per step: the avoidable exposure beyond a fifth of that step; their spread is the noise of
    # the comparison. Clear of it and of the step time's own noise, the verdict stands.
    excess = [min(s.phases.get("comm_exposed", 0.0) for s in samples) - explained - floor
              - MIN_SHARE * perf.median([s.wall for s in samples])
              for samples in margins.common_steps(perfs)]
    margin = margins.Margin("avoidable exposed communication per step", avoidable,
                            MIN_SHARE * step_time, margins.median_noise(excess))
    verdict = margins.judge(margin, perf.matters(avoidable, step_time, MIN_SHARE, noise))
    if verdict == margins.CLEAN:
        return []
    share = exposed / step_time
    traffic = ""
    if comms:
        total = sum(c.bytes_per_iteration for c in comms)
        buckets = sum(c.calls for c in comms)
        busy = sum(c.busy_s for c in comms)
        busbw = total / busy / perf.GB * perf.bus_factor(run.world_size) if busy > 0 else 0.0
        traffic = (f"; each step all-reduces {megabytes(total)} of gradients in "
                   f"{counted(buckets, 'bucket')}, {ms(busy)} at {busbw:.2f} GB/s bus bandwidth")
    hint = ("do more compute per all-reduce (a larger batch per rank, or accumulate gradients "
            "under model.no_sync()) or send fewer bytes (bf16_compress_hook, sparse embedding "
            "gradients)")
    if any(latency_bound_buckets(c) for c in comms):
        hint = ("first merge the many small buckets (DDP603: a larger bucket_cap_mb); then, if "
                "communication still shows, " + hint)
    whatif = perf.what_if(run, "DDP604", step_time, step_time - avoidable,
                          "with that communication hidden behind backward")
    floor_words = (f"; {ms(floor)} of it is the last bucket's own cost, which no overlap removes"
                   if floor >= 0.05 * exposed else "")
    if explained > 0:
        floor_words = (f"; merging the latency-bound buckets (DDP603) would take {ms(explained)} "
                       f"of it, and of the rest {ms(floor)} is the last merged bucket's own cost, "
                       "which no overlap removes")
    evidence = {"exposed_ms": round(exposed * 1e3, 2), "step_ms": round(step_time * 1e3, 2),
                "share": round(share, 3), "steps": steps,
                "unavoidable_ms": round(floor * 1e3, 3),
                "avoidable_share": round(avoidable / step_time, 3),
                "step_noise_ms": round(noise * 1e3, 3)}
    if explained > 0:
        evidence["explained_by_ddp603_ms"] = round(explained * 1e3, 3)
    if verdict == margins.BORDERLINE:
        return [margins.borderline(
            f"{ms(exposed)} of every {ms(step_time)} step ({share:.0%}) is gradient communication "
            f"exposed after backward (median of {steps} steps), near the communication-bound "
            f"threshold of {MIN_SHARE:.0%} of the step", margin, hint, sorted(perfs),
            evidence={**evidence, **whatif.evidence()})]
    return [Problem(
        message=(f"{ms(exposed)} of every {ms(step_time)} step ({share:.0%}) is gradient "
                 f"communication still running after backward finished, even on the rank that "
                 f"arrives last (median of {steps} steps{floor_words}){traffic}: the job is "
                 f"communication bound; {whatif.words()} (margin: {margin.words()})"),
        hint=hint,
        ranks=sorted(perfs),
        evidence={**evidence, "borderline": False, **margin.evidence(), **whatif.evidence()},
    )]


def _merge_that_leaves_most(comms: list[ModelComm], exposed: float) -> Optional[Merge]:
    """DDP603's fix for the model whose merged buckets would leave the most communication
    exposed (the step waits for every model's), or None when no model has buckets to merge."""
    fixes = [fix for fix in (merge(c, exposed) for c in comms) if fix is not None]
    return max(fixes, key=lambda fix: fix.exposed_after, default=None)
