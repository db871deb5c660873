"""DDP603: gradient buckets too small (many per step) or too large (one that cannot overlap)."""

from __future__ import annotations

import math

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.probe.analysis import perf
from ddpdoctor.probe.analysis.perf import ModelComm, megabytes, ms
from ddpdoctor.probe.analysis.runmodel import RunModel
from ddpdoctor.core.registry import Skipped, check

from ddpdoctor.probe.analysis.wording import at, counted, location

MIB = 1024 * 1024
DEFAULT_CAP_MB = 25  # DDP's default bucket_cap_mb
TINY_COUNT = 8  # buckets per backward ...
TINY_BYTES = 1 * MIB  # ... with a median size below this ...
TINY_MIN_BUSY_S = 0.010  # ... whose all-reduces take at least this long per backward
TINY_MIN_BUSY_SHARE = 0.10  # ... and this share of the median step
HUGE_SHARE = 0.5  # one bucket with at least this share of the gradient bytes ...
HUGE_MIN_EXPOSED_S = 0.010  # ... while this much communication per step is exposed
HUGE_MIN_EXPOSED_SHARE = 0.10  # ... and this share of the step


def suggested_cap_mb(total_bytes: int) -> int:
    """About four buckets per backward, between 1 MB and DDP's default 25 MB."""
    return int(min(DEFAULT_CAP_MB, max(1, round(total_bytes / MIB / 4))))


def _buckets_after(total_bytes: int, cap_mb: int) -> int:
    return max(1, math.ceil(total_bytes / (cap_mb * MIB)))


@check("DDP603", "Bucket sizes hurt overlap or add per-call cost", Severity.WARNING)
def bucket_sizes(run: RunModel) -> list[Problem] | Skipped:
    """
    What it detects:
        DDP's gradient buckets, as they are after DDP rebuilt them (the steps after the first 3):
        - too many tiny buckets: 8 or more per backward pass with a median size under 1 MiB,
          whose all-reduces take at least 10 ms and 10% of the median step; or
        - one huge bucket: bucket_cap_mb raised above the default 25, so that one bucket of
          several parameters holds at least half of all gradient bytes, while at least 10 ms
          and 10% of each step is communication that backward did not hide.
        The finding suggests a bucket_cap_mb: about four buckets per backward, between 1 and
        25 MB, and says why.

    Why it hurts:
        Every all-reduce pays a fixed cost (a launch, a handshake between ranks, a few network
        round trips) whatever its size; below about a megabyte that fixed cost is most of the
        time, so a hundred tiny buckets cost close to a hundred times one. A bucket can only be
        all-reduced once every gradient in it is ready, so a bucket holding most of the model
        starts at the very end of backward and nothing hides it.

    How to fix:
        Set bucket_cap_mb (MiB) to the suggested value, or drop it to get DDP's default of 25:

            model = DDP(model, bucket_cap_mb=25)

        A few buckets per backward give both: little fixed cost, and the first buckets
        all-reduce while backward still computes the gradients of the earlier layers.
    """
    if run.world_size < 2:
        return Skipped("a single rank communicates with nobody")
    comms = [c for c in perf.model_comm(run) if c.buckets]
    if not comms:
        return Skipped("no timed bucket all-reduces after the first steps")
    perfs = perf.step_perf(run)
    step_time = perf.median([p.median("step") for p in perfs.values()]) if perfs else 0.0
    exposed = perf.pure_exposed(perfs)[0] if len(perfs) >= 2 else 0.0
    problems = []
    for comm in comms:
        problem = _tiny(comm, step_time) or _huge(comm, step_time, exposed)
        if problem is not None:
            problem.ranks = sorted(run.ranks)
            problem.location = location(comm.site)
            problems.append(problem)
    return problems


def _cap_words(comm: ModelComm) -> str:
    return ("DDP's default bucket_cap_mb" if comm.bucket_cap_mb is None
            else f"bucket_cap_mb={comm.bucket_cap_mb:g}")


def many_tiny_buckets(comm: ModelComm, step_time: float) -> bool:
    """The "too many tiny buckets" condition of this check (DDP602 and DDP604 defer to it)."""
    typical = perf.median([b.nbytes for b in comm.buckets])
    return (round(comm.buckets_per_iteration) >= TINY_COUNT and typical < TINY_BYTES
            and comm.busy_s >= max(TINY_MIN_BUSY_S, TINY_MIN_BUSY_SHARE * step_time))


def _tiny(comm: ModelComm, step_time: float) -> Problem | None:
    if not many_tiny_buckets(comm, step_time):
        return None
    count = round(comm.buckets_per_iteration)
    typical = perf.median([b.nbytes for b in comm.buckets])
    baselines = [b.baseline for b in comm.buckets if b.baseline]
    if baselines:
        per_call = (f"a raw all-reduce of that size takes {ms(perf.median(baselines))} in this job, "
                    "nearly all of it fixed cost")
    else:
        per_call = f"each takes {ms(perf.median([b.seconds for b in comm.buckets]))}, nearly all of it fixed cost"
    cap = suggested_cap_mb(comm.bytes_per_iteration)
    after = _buckets_after(comm.bytes_per_iteration, cap)
    share = f" ({comm.busy_s / step_time:.0%} of the step)" if step_time > 0 else ""
    return Problem(
        message=(f"the DDP model{at(comm.site)} all-reduces its {megabytes(comm.bytes_per_iteration)} "
                 f"of gradients in {count} buckets per backward (median {megabytes(typical)}, "
                 f"with {_cap_words(comm)}): {per_call}, and together they keep communication "
                 f"busy {ms(comm.busy_s)} per backward{share}. bucket_cap_mb={cap} would make "
                 f"about {counted(after, 'bucket')}: far fewer fixed costs, and still more than "
                 "one, so that the first ones overlap backward"),
        hint=f"pass bucket_cap_mb={cap} to DistributedDataParallel (or leave it at the default 25)",
        ranks=[],
        evidence={"ddp_id": comm.ddp_id, "buckets_per_iteration": count,
                  "median_bucket_bytes": int(typical), "busy_ms": round(comm.busy_s * 1e3, 2),
                  "bucket_cap_mb": comm.bucket_cap_mb, "suggested_bucket_cap_mb": cap},
    )


def _huge(comm: ModelComm, step_time: float, exposed: float) -> Problem | None:
    if comm.bucket_cap_mb is None or comm.bucket_cap_mb <= DEFAULT_CAP_MB:
        return None
    largest = comm.largest
    if (largest.nbytes <= DEFAULT_CAP_MB * MIB or len(largest.params) < 2
            or largest.nbytes < HUGE_SHARE * comm.bytes_per_iteration):
        return None
    if exposed < max(HUGE_MIN_EXPOSED_S, HUGE_MIN_EXPOSED_SHARE * step_time):
        return None
    cap = suggested_cap_mb(comm.bytes_per_iteration)
    after = _buckets_after(comm.bytes_per_iteration, cap)
    return Problem(
        message=(f"with bucket_cap_mb={comm.bucket_cap_mb:g}, bucket {largest.index} of the DDP model"
                 f"{at(comm.site)} holds {megabytes(largest.nbytes)} of its "
                 f"{megabytes(comm.bytes_per_iteration)} of gradients "
                 f"({counted(len(largest.params), 'parameter')}): it can start only when the "
                 f"last of them is ready, at the end of backward, and {ms(exposed)} of each "
                 f"{ms(step_time)} step is communication nothing hides. bucket_cap_mb={cap} "
                 f"would make about {counted(after, 'bucket')}, the first of them all-reduced "
                 "while backward still runs"),
        hint=f"pass bucket_cap_mb={cap} to DistributedDataParallel (or drop it: the default is 25)",
        ranks=[],
        evidence={"ddp_id": comm.ddp_id, "bucket": largest.index, "bucket_bytes": largest.nbytes,
                  "bytes_per_iteration": comm.bytes_per_iteration,
                  "exposed_ms": round(exposed * 1e3, 2), "bucket_cap_mb": comm.bucket_cap_mb,
                  "suggested_bucket_cap_mb": cap},
    )
