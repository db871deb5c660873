"""DDP602: gradient bucket all-reduces run well below the bandwidth of a raw all-reduce in the same job."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.probe.analysis import margins, perf
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.analysis.perf import megabytes, ms
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.core.registry import Skipped, check

from ddpdoctor.probe.words.wording import at, counted, location
from .bucket_sizes import latency_bound_buckets

MAX_EFFICIENCY = 0.4  # the iteration's all-reduces at less than 40% of the baseline's speed
MIN_LOST_SHARE = 0.15  # ... losing at least this share of the median step (and the noise)


@check("DDP602", "Bucket all-reduce bandwidth below the in-job baseline", Severity.WARNING)
def bucket_bandwidth(run: RunModel) -> list[Problem] | Skipped:
    """
    What it detects:
        The gradient buckets of a DDP model take more than 2.5 times as long to all-reduce during
        training (under 40% efficiency) as raw all-reduces of the same sizes over the same
        process group take in the same job (the baseline the probe measures at a step boundary
        early in the run, or after its last step), and the difference costs at least 15% of the
        median step and more than the uncertainty of the median step (two standard errors,
        from the spread of the step times); within the noise of those thresholds it is
        reported as borderline, at info severity (docs/verdicts.md). Bus bandwidth is computed
        as nccl-tests does (busbw = bytes / time * 2(n-1)/n), per bucket, over the steps after
        the first 3, on the rank that arrives last at each bucket (so waiting for a straggler
        does not count).
        Buckets below the latency/bandwidth knee measured in the job are left to DDP603: their
        cost is per call, not per byte. The finding estimates the step time with the buckets at baseline
        speed: "step 40 ms -> ~25 ms (est.)".

    Why it hurts:
        The network can move these bytes faster than training gets it to: something slows the
        all-reduces while the model trains. Common causes: a comm hook that does expensive work
        per bucket (compression in Python, extra copies), communication competing with compute
        for the same resources (CPU cores with gloo; SMs and memory bandwidth with NCCL), or
        other traffic on the same network during training (data loading over the same NIC,
        checkpoint uploads).

    How to fix:
        Look at the per-bucket table of the report for the buckets with the lowest efficiency.
        Check the comm hook (is it doing more than the all-reduce?), keep bulk traffic off the
        training network, and leave communication the resources it needs. With gloo on CPU,
        compute threads and gloo's threads share the cores:

            torch.set_num_threads(max(1, os.cpu_count() // local_world_size - 1))  # a core for gloo
    """
    comms, unjudged = perf.bucket_comms(run)
    if unjudged:
        return Skipped(unjudged)
    if not any(run.ranks[r].first(tm.BaselineTiming) for r in run.ranks):
        steps = max((r.steps for r in run.ranks.values()), default=0)
        if steps < perf.BASELINE_STEP:
            return Skipped(f"no in-job baseline: the job ended after {steps} step(s), before step "
                           f"{perf.BASELINE_STEP}, after which it is measured")
        return Skipped("no in-job baseline: it was not measured (see the notes)")
    perfs = perf.step_perf(run)
    step_time = perf.step_time(perfs)
    exposed = perf.pure_exposed(perfs)[0] if len(perfs) >= 2 else 0.0
    noise = perf.step_noise(perfs)
    share_noise = MIN_LOST_SHARE * noise  # the threshold moves with the median step
    problems = []
    for comm in comms:
        expected = comm.baseline_s
        if expected is None or comm.busy_s <= 0:
            continue
        if latency_bound_buckets(comm) or (comm.cost and comm.cost.latency_bound(comm.typical_bytes)):
            continue  # below the knee their cost is per call, not bandwidth (DDP603's)
        efficiency = expected / comm.busy_s
        lost = comm.busy_s - expected
        # Two conditions, each with its margin: the busy time beyond what 40% efficiency allows,
        # and the time lost beyond 15% of the step; the nearer one decides.
        busy_noise = 2 * 1.2533 * comm.busy_spread / max(1, comm.iterations) ** 0.5
        margin = margins.binding([
            margins.Margin("all-reduce time per backward", comm.busy_s, expected / MAX_EFFICIENCY,
                           busy_noise),
            margins.Margin("time lost per step", lost, MIN_LOST_SHARE * step_time,
                           margins.combined(busy_noise, share_noise))])
        verdict = margins.judge(margin, perf.matters(lost, step_time, MIN_LOST_SHARE, noise))
        if verdict == margins.CLEAN:
            continue
        if verdict == margins.BORDERLINE:
            problems.append(margins.borderline(
                f"the buckets of the DDP model{at(comm.site)} all-reduce at {efficiency:.0%} of the "
                f"in-job baseline's speed ({ms(comm.busy_s)} per backward against {ms(expected)}), "
                f"near the thresholds of {MAX_EFFICIENCY:.0%} efficiency and "
                f"{MIN_LOST_SHARE:.0%} of the step lost", margin,
                "rerun to settle it; see the bucket table for efficiency per bucket",
                sorted(run.ranks), location(comm.site),
                {"ddp_id": comm.ddp_id, "efficiency": round(efficiency, 3),
                 "busy_ms": round(comm.busy_s * 1e3, 3), "baseline_ms": round(expected * 1e3, 3)}))
            continue
        # At baseline speed the lost time leaves the step as far as it was exposed.
        whatif = perf.what_if(run, "DDP602", step_time, step_time - min(lost, exposed),
                              "with the buckets at the baseline's speed")
        worst = sorted((b for b in comm.buckets if b.efficiency is not None),
                       key=lambda b: b.efficiency)[:3]
        listed = "; ".join(f"bucket {b.index} ({megabytes(b.nbytes)}): {b.busbw:.2f} GB/s against "
                           f"{b.baseline_busbw:.2f}" for b in worst)
        hooks = ", ".join(comm.hooks) or "default"
        problems.append(Problem(
            message=(f"the {counted(round(comm.buckets_per_iteration), 'bucket')} "
                     f"({megabytes(comm.bytes_per_iteration)}) of the DDP model{at(comm.site)} take "
                     f"{ms(comm.busy_s)} per backward to all-reduce, where raw all-reduces of the "
                     f"same sizes on the same group took {ms(expected)} in this job "
                     f"({efficiency:.0%} efficiency, {ms(lost)} lost per step, median of "
                     f"{comm.iterations} iterations; comm hook: {hooks}). Slowest: {listed}. "
                     f"{whatif.words()[0].upper()}{whatif.words()[1:]} (margin: {margin.words()})"),
            hint=("find what slows the all-reduces during training: an expensive comm hook, "
                  "compute competing with communication for the same cores or GPU, or other "
                  "traffic on the network (see the bucket table for efficiency per bucket)"),
            ranks=sorted(run.ranks),
            location=location(comm.site),
            evidence={"ddp_id": comm.ddp_id, "busy_ms": round(comm.busy_s * 1e3, 3),
                      "baseline_ms": round(expected * 1e3, 3), "efficiency": round(efficiency, 3),
                      "step_noise_ms": round(noise * 1e3, 3), "borderline": False,
                      **margin.evidence(), **whatif.evidence(),
                      "buckets": [{"index": b.index, "bytes": b.nbytes, "busbw": round(b.busbw, 4),
                                   "baseline_busbw": round(b.baseline_busbw or 0, 4)}
                                  for b in comm.buckets]},
        ))
    return problems
