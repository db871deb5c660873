"""DDP603: gradient buckets too small (many latency-bound calls) or too large (one that cannot overlap)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.probe.analysis import margins, perf
from ddpdoctor.probe.analysis.perf import ModelComm, megabytes, ms
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.core.registry import Skipped, check

from ddpdoctor.probe.words.wording import at, counted, location

MIB = 1024 * 1024
DEFAULT_CAP_MB = 25  # DDP's default bucket_cap_mb
MIN_GAIN_SHARE = 0.10  # the fix must save at least this share of the median step (and the noise)
HUGE_SHARE = 0.5  # one bucket with at least this share of the gradient bytes


def suggested_cap_mb(total_bytes: int) -> int:
    """About four buckets per backward, between 1 MB and DDP's default 25 MB."""
    return int(min(DEFAULT_CAP_MB, max(1, round(total_bytes / MIB / 4))))


def _buckets_after(total_bytes: int, cap_mb: int) -> int:
    return max(1, math.ceil(total_bytes / (cap_mb * MIB)))


@dataclass
class Merge:
    """Merging a model's latency-bound buckets under a larger bucket_cap_mb, and what it buys."""

    cap_mb: int
    after: int  # buckets per backward after the fix
    saved_busy: float  # seconds of communication per backward the fewer fixed costs save
    gain: float  # seconds off the step: the exposed communication that goes away
    exposed: float
    exposed_after: float  # the communication still exposed after backward with the fix
    last_after: float  # of it, the last merged bucket, which always follows the last gradient


def merge(comm: ModelComm, exposed: float) -> Optional[Merge]:
    """The merge that would help `comm`, or None when its buckets are not many latency-bound
    ones: at least two all-reduces per backward, more than the suggested cap would make, with the
    median bucket below the latency/bandwidth knee measured in this job (perf.CallCost).

    Estimate: the iteration's communication shrinks from its measured busy time to `after`
    all-reduces of the merged size, at the measured cost of such an all-reduce times the
    slowdown the buckets show in training against raw ones (ModelComm.slowdown). With gloo,
    communication and compute share the CPU cores, so all the communication saved comes off the
    step; otherwise what is saved comes off the exposed communication only, down to the last
    merged bucket, which can never be hidden."""
    cost = comm.cost
    if cost is None or not comm.buckets:
        return None
    total = comm.bytes_per_iteration
    cap = suggested_cap_mb(total)
    after = _buckets_after(total, cap)
    if comm.calls < 2 or comm.calls <= after or not cost.latency_bound(comm.typical_bytes):
        return None
    merged = cost.seconds(total / after) * comm.slowdown
    saved = max(0.0, comm.busy_s - after * merged)
    # Whatever the cores: fewer fixed costs shorten what runs after backward, down to the last
    # merged bucket, which always follows the last gradient.
    exposed_after = min(exposed, max(merged, exposed - saved))
    gain = saved if comm.shares_cores else exposed - exposed_after
    return Merge(cap, after, saved, gain, exposed, exposed_after, min(merged, exposed_after))


def latency_bound_buckets(comm: ModelComm) -> bool:
    """Whether `comm` has many latency-bound buckets (DDP602 and DDP604 defer to this check)."""
    return merge(comm, 0.0) is not None


@check("DDP603", "Bucket sizes hurt overlap or add per-call cost", Severity.WARNING)
def bucket_sizes(run: RunModel) -> list[Problem] | Skipped:
    """
    What it detects:
        DDP's gradient buckets, as they are after DDP rebuilt them (the steps after the first 3),
        judged against what an all-reduce costs in this very job (the in-job baseline: a
        one-float all-reduce gives the fixed cost per call, a large one the bandwidth; their
        product is the knee, the size below which an all-reduce is mostly fixed cost):
        - too many small buckets: two or more all-reduces per backward, more than the suggested
          bucket_cap_mb would make, with the median bucket below the knee; or
        - one huge bucket: bucket_cap_mb raised above the default 25, so that one bucket of
          several parameters holds at least half of all gradient bytes and starts only at the
          end of backward.
        It is reported when the fix is estimated to save at least 10% of the median step, and
        more than the uncertainty of the median step (two standard errors, from the spread of
        the step times), so a small model on a CPU runner and a large one on a cluster are
        judged alike; within the noise of that threshold it is reported as borderline, at info
        severity (docs/verdicts.md). The finding
        suggests a bucket_cap_mb (about four buckets per backward, between 1 and 25 MB) and
        estimates the step time with it: "step 11.0 ms -> ~6 ms (est.)".
        `ddpdoctor probe --verify-fix` reruns the script with that bucket_cap_mb (set by the
        probe, the script unchanged) and shows the measured step time beside the estimate.

    Why it hurts:
        Every all-reduce pays a fixed cost (a launch, a handshake between ranks, a few network
        round trips) whatever its size; below the knee that fixed cost is most of the time, so
        fifty small buckets cost close to fifty times one. A bucket can only be all-reduced once
        every gradient in it is ready, so a bucket holding most of the model starts at the very
        end of backward and nothing hides it.

    How to fix:
        Set bucket_cap_mb (MiB) to the suggested value, or drop it to get DDP's default of 25:

            model = DDP(model, bucket_cap_mb=25)

        A few buckets per backward give both: little fixed cost, and the first buckets
        all-reduce while backward still computes the gradients of the earlier layers.
    """
    comms, unjudged = perf.bucket_comms(run)
    if unjudged:
        return Skipped(unjudged)
    perfs = perf.step_perf(run)
    if len(perfs) < 2:
        return Skipped(f"fewer than two ranks recorded {perf.MIN_STEPS} steps after the first "
                       f"{perf.WARMUP_STEPS}")
    exposed, step, _ = perf.pure_exposed(perfs)
    noise = perf.step_noise(perfs)
    problems = []
    for comm in comms:
        noises = _Noises(perfs, comm)
        problem = (_tiny(run, comm, step, exposed, noise, noises)
                   or _huge(run, comm, step, exposed, noise, noises))
        if problem is not None:
            problem.ranks = sorted(run.ranks)
            problem.location = location(comm.site)
            problems.append(problem)
    return problems


class _Noises:
    """The run-to-run noise of what a fix's gain is estimated from (margins.median_noise)."""

    busy: float  # the communication busy time per backward
    exposed: float  # the exposed communication per step, on the last rank
    threshold: float  # MIN_GAIN_SHARE of the step time

    def __init__(self, perfs: dict, comm: ModelComm):
        common = margins.common_steps(perfs)
        self.busy = 2 * 1.2533 * comm.busy_spread / math.sqrt(max(1, comm.iterations))
        self.exposed = margins.median_noise([min(s.phases.get("comm_exposed", 0.0) for s in samples)
                                             for samples in common])
        self.threshold = MIN_GAIN_SHARE * margins.median_noise(
            [perf.median([s.wall for s in samples]) for samples in common])


def _cap_words(comm: ModelComm) -> str:
    return ("DDP's default bucket_cap_mb" if comm.bucket_cap_mb is None
            else f"bucket_cap_mb={comm.bucket_cap_mb:g}")


def _cost_words(cost: perf.CallCost) -> str:
    where = "in this job" if cost.measured else "judged from the training's own bucket times"
    if cost.bandwidth:
        return (f"a one-float all-reduce takes {ms(cost.latency)} {where} and the bytes cost as "
                f"much as that only from {megabytes(cost.knee_bytes)} on (the knee)")
    return (f"a one-float all-reduce takes {ms(cost.latency)} {where}, and even "
            f"{megabytes(cost.largest)} costs little more")


def _tiny(run: RunModel, comm: ModelComm, step: float, exposed: float,
          noise: float, noises: _Noises) -> Optional[Problem]:
    fix = merge(comm, exposed)
    if fix is None:
        return None
    # With gloo the gain is communication time saved; otherwise exposed time saved.
    gain_noise = noises.busy if comm.shares_cores else noises.exposed
    margin = margins.Margin("estimated gain of merging the buckets", fix.gain,
                            MIN_GAIN_SHARE * step, margins.combined(gain_noise, noises.threshold))
    verdict = margins.judge(margin, perf.matters(fix.gain, step, MIN_GAIN_SHARE, noise))
    if verdict == margins.CLEAN:
        return None
    cost = comm.cost
    typical = comm.typical_bytes
    evidence = {"ddp_id": comm.ddp_id, "buckets_per_iteration": comm.calls,
                "buckets_after": fix.after, "median_bucket_bytes": int(typical),
                "busy_ms": round(comm.busy_s * 1e3, 2), "exposed_ms": round(exposed * 1e3, 2),
                "latency_ms": round(cost.latency * 1e3, 4),
                "knee_bytes": int(cost.knee_bytes), "cost_measured": cost.measured,
                "step_noise_ms": round(noise * 1e3, 3), "bucket_cap_mb": comm.bucket_cap_mb,
                "suggested_bucket_cap_mb": fix.cap_mb}
    # Borderline too: its ddp_kwargs let --verify-fix measure the fix instead of guessing.
    whatif = perf.what_if(run, "DDP603", step, step - fix.gain,
                          f"with bucket_cap_mb={fix.cap_mb}", {"bucket_cap_mb": fix.cap_mb})
    if verdict == margins.BORDERLINE:
        return margins.borderline(
            f"the DDP model{at(comm.site)} all-reduces its gradients in {comm.calls} latency-bound "
            f"buckets per backward; bucket_cap_mb={fix.cap_mb} is estimated to save about "
            f"{ms(fix.gain)} of a {ms(step)} step, near the {MIN_GAIN_SHARE:.0%} that makes it "
            f"worth a finding ({whatif.words()})", margin,
            f"try bucket_cap_mb={fix.cap_mb} (--verify-fix measures it)",
            evidence={**evidence, "gain_ms": round(fix.gain * 1e3, 3), **whatif.evidence()})
    return Problem(
        message=(f"the DDP model{at(comm.site)} all-reduces its {megabytes(comm.bytes_per_iteration)} "
                 f"of gradients in {comm.calls} buckets per backward (median {megabytes(typical)}, "
                 f"with {_cap_words(comm)}): {_cost_words(cost)}, so each is mostly fixed cost. "
                 f"Together they keep communication busy {ms(comm.busy_s)} per backward "
                 f"({comm.busy_s / step:.0%} of the step), {ms(exposed)} of it after backward "
                 f"finished. bucket_cap_mb={fix.cap_mb} would make about "
                 f"{counted(fix.after, 'bucket')}: {whatif.words()} (margin: {margin.words()})"),
        hint=f"pass bucket_cap_mb={fix.cap_mb} to DistributedDataParallel (or leave it at the default 25)",
        ranks=[],
        evidence={**evidence, "borderline": False, **margin.evidence(), **whatif.evidence()},
    )


def _huge(run: RunModel, comm: ModelComm, step: float, exposed: float,
          noise: float, noises: _Noises) -> Optional[Problem]:
    if comm.bucket_cap_mb is None or comm.bucket_cap_mb <= DEFAULT_CAP_MB or comm.cost is None:
        return None
    largest = comm.largest
    if (largest.nbytes <= DEFAULT_CAP_MB * MIB or len(largest.params) < 2
            or largest.nbytes < HUGE_SHARE * comm.bytes_per_iteration):
        return None
    cap = suggested_cap_mb(comm.bytes_per_iteration)
    after = _buckets_after(comm.bytes_per_iteration, cap)
    # With smaller buckets all but the last overlap backward: the last one stays exposed.
    exposed_after = min(exposed, comm.cost.seconds(comm.bytes_per_iteration / after))
    gain = exposed - exposed_after
    margin = margins.Margin("estimated gain of smaller buckets", gain, MIN_GAIN_SHARE * step,
                            margins.combined(noises.exposed, noises.threshold))
    verdict = margins.judge(margin, perf.matters(gain, step, MIN_GAIN_SHARE, noise))
    if verdict == margins.CLEAN:
        return None
    whatif = perf.what_if(run, "DDP603", step, step - gain, f"with bucket_cap_mb={cap}",
                          {"bucket_cap_mb": cap})
    if verdict == margins.BORDERLINE:
        return margins.borderline(
            f"bucket {largest.index} of the DDP model{at(comm.site)} holds "
            f"{megabytes(largest.nbytes)} of {megabytes(comm.bytes_per_iteration)} of gradients "
            f"(bucket_cap_mb={comm.bucket_cap_mb:g}); bucket_cap_mb={cap} is estimated to save "
            f"about {ms(gain)} of a {ms(step)} step, near the {MIN_GAIN_SHARE:.0%} that makes it "
            f"worth a finding ({whatif.words()})", margin,
            f"try bucket_cap_mb={cap} (--verify-fix measures it)",
            evidence={"ddp_id": comm.ddp_id, "bucket": largest.index, "bucket_cap_mb": comm.bucket_cap_mb,
                      "suggested_bucket_cap_mb": cap, "gain_ms": round(gain * 1e3, 3),
                      **whatif.evidence()})
    return Problem(
        message=(f"with bucket_cap_mb={comm.bucket_cap_mb:g}, bucket {largest.index} of the DDP model"
                 f"{at(comm.site)} holds {megabytes(largest.nbytes)} of its "
                 f"{megabytes(comm.bytes_per_iteration)} of gradients "
                 f"({counted(len(largest.params), 'parameter')}): it can start only when the "
                 f"last of them is ready, at the end of backward, and {ms(exposed)} of each "
                 f"{ms(step)} step is communication nothing hides. bucket_cap_mb={cap} "
                 f"would make about {counted(after, 'bucket')}, the first of them all-reduced "
                 f"while backward still runs: {whatif.words()} (margin: {margin.words()})"),
        hint=f"pass bucket_cap_mb={cap} to DistributedDataParallel (or drop it: the default is 25)",
        ranks=[],
        evidence={"ddp_id": comm.ddp_id, "bucket": largest.index, "bucket_bytes": largest.nbytes,
                  "bytes_per_iteration": comm.bytes_per_iteration,
                  "exposed_ms": round(exposed * 1e3, 2), "bucket_cap_mb": comm.bucket_cap_mb,
                  "step_noise_ms": round(noise * 1e3, 3), "suggested_bucket_cap_mb": cap,
                  "borderline": False, **margin.evidence(), **whatif.evidence()},
    )
