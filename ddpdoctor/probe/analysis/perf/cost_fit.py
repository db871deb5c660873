"""What one all-reduce of n bytes costs on this job's group: latency + n / bandwidth, fitted to
the in-job baseline (inrank/baseline.py), lined up across ranks (spans.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.analysis.perf.spans import joined
from ddpdoctor.probe.analysis.perf.stats import median, quantile
from ddpdoctor.probe.run_model.loaded_run import RunModel

LATENCY_MAX_BYTES = 64  # a baseline size this small is the latency point (inrank/baseline.py)
# Only an all-reduce at least this large tells a bandwidth: below it, a loaded machine's jitter is
# larger than what the bytes cost (a 1 KB all-reduce that once took 3 ms says nothing about bytes).
MIN_BANDWIDTH_BYTES = 1024 * 1024
FALLBACK_KNEE_BYTES = 1024 * 1024  # without a bandwidth: below 1 MiB counts as latency-bound


@dataclass
class CallCost:
    """What one all-reduce of n bytes costs on this job's group: a fixed cost (a launch, a
    handshake, a few round trips) plus the bytes at the group's bandwidth,
    seconds(n) = latency + n / bandwidth. Fitted to the in-job baseline: the latency point (a
    one-float all-reduce) and the largest size measured, each the lower quartile of its timed
    all-reduces (what the group can do; load on a shared machine only adds). Without a baseline,
    fitted the same way to the training's own bucket times (an upper bound on both).

    The knee, latency x bandwidth, is the size at which the bytes cost as much as the fixed cost:
    an all-reduce below it is latency-bound, and merging two of them saves one fixed cost."""

    latency: float
    bandwidth: Optional[float] = None  # bytes/s (algbw); None: no size large enough to tell
    largest: int = 0  # the largest size measured (below the knee when bandwidth is None)
    measured: bool = True  # from the in-job baseline (False: from the training's bucket times)

    def seconds(self, nbytes: float) -> float:
        return self.latency + (nbytes / self.bandwidth if self.bandwidth else 0.0)

    @property
    def knee_bytes(self) -> float:
        if self.bandwidth:
            return self.latency * self.bandwidth
        return float(max(self.largest, FALLBACK_KNEE_BYTES))

    def latency_bound(self, nbytes: float) -> bool:
        return nbytes < self.knee_bytes or (not self.bandwidth and nbytes <= self.largest)


def _fit(points: dict[int, float], measured: bool) -> Optional[CallCost]:
    if not points:
        return None
    smallest, largest = min(points), max(points)
    latency = points[smallest]
    if not measured and smallest >= FALLBACK_KNEE_BYTES:
        # Only large buckets timed, no baseline: their time is bytes, not a fixed cost.
        return CallCost(0.0, largest / points[largest] if points[largest] > 0 else None,
                        largest, measured)
    if largest >= MIN_BANDWIDTH_BYTES and points[largest] > 1.5 * latency:
        return CallCost(latency, largest / (points[largest] - latency), largest, measured)
    # No size large enough to show what bytes cost: all measured sizes count as below the knee.
    return CallCost(latency, None, largest if measured else 0, measured)


def call_cost(model: RunModel, ddp_id: int, bucket_times: dict[int, float]) -> Optional[CallCost]:
    """The CallCost of one DDP model's group (see CallCost); None without any all-reduce timed.
    `bucket_times`: the training's own timed bucket all-reduces (seconds > 0) by size, fitted
    when the job has no baseline."""
    times = baseline_times(model, ddp_id)
    if any(size <= LATENCY_MAX_BYTES for size in times):
        return _fit({size: quantile(t, 0.25) for size, t in times.items()}, True)
    return _fit(dict(bucket_times), False)


def baseline_times(model: RunModel, ddp_id: int) -> dict[int, list[float]]:
    """Raw all-reduce seconds per size, each timed all-reduce lined up across ranks. A baseline
    measured twice (inrank/baseline.py: buckets near the knee) gives both measurements' samples,
    each lined up with the same measurement on the other ranks."""
    per_size: dict[int, dict[int, list[tm.BaselineTiming]]] = {}
    for rank, run in model.ranks.items():
        for record in run.of(tm.BaselineTiming):
            if record.ddp_id == ddp_id and record.times:
                per_size.setdefault(record.nbytes, {}).setdefault(rank, []).append(record)
    found = {}
    for size, by_rank in per_size.items():
        times: list[float] = []
        for repetition in range(min(len(records) for records in by_rank.values())):
            times += _lined_up([records[repetition] for records in by_rank.values()])
        found[size] = times
    return found


def _lined_up(records: list[tm.BaselineTiming]) -> list[float]:
    """One measurement of one size on every rank: each timed all-reduce over its ranks."""
    count = min(len(r.times) for r in records)
    if not all(len(r.starts) >= count for r in records):
        return min((list(r.times) for r in records), key=median)  # no start times: the fastest rank's
    times = []
    for i in range(count):
        start, end = joined([r.starts[i] for r in records],
                             [r.starts[i] + r.times[i] for r in records],
                             [r.times[i] for r in records])
        times.append(end - start)
    return times


def baseline_medians(model: RunModel, ddp_id: int) -> dict[int, float]:
    """Median raw all-reduce seconds per size, each timed all-reduce lined up across ranks."""
    return {size: median(times) for size, times in baseline_times(model, ddp_id).items()}
