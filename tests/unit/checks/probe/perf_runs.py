"""What the performance check tests share: a probe run built from how each rank spends its
steps (`perf_run`), the gloo group's cost model, and the bucket layouts they are fed."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Optional

from ddpdoctor.probe.analysis import perf_tables
from ddpdoctor.probe.analysis import scaling
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.run_model.loaded_run import RunModel
from tests.helpers.telemetry_builders import SITE_DDP, RunBuilder, judge


KB, MB = 1000, 1_000_000


@dataclass
class Rank:
    """How one rank spends each step (seconds), for `perf_run`."""

    data: float = 0.001
    forward: float = 0.002
    backward: float = 0.003
    optimizer: float = 0.001
    other: float = 0.0
    wait: float = 0.0  # waiting for a slower rank inside the gradient all-reduce
    hidden: float = 0.0  # bucket time overlapped with backward
    jitter: float = 0.0  # +- this share, at random, on every duration
    slow_steps: dict[int, float] = field(default_factory=dict)  # step -> extra forward seconds


def perf_run(ranks: list[Rank], steps: int = 20, buckets: tuple = ((0, 64 * KB),),
             bucket_s: float = 0.001, baseline_s: Optional[float] = None,
             bucket_cap_mb: Optional[float] = None, params_per_bucket: int = 2,
             loader_workers: int = 0, seed: int = 0, latency_s: Optional[float] = None,
             bandwidth_point: Optional[tuple] = None, backend: str = "gloo") -> RunModel:
    """A completed probe run: every rank trains `steps` steps; each backward all-reduces
    `buckets` ((index, bytes), ...) one after another at the end of backward, each taking
    `bucket_s`; `baseline_s` adds the in-job baseline (raw all-reduce seconds per bucket),
    `latency_s` its latency point (a one-float all-reduce), `bandwidth_point` (bytes, seconds)
    its bandwidth point."""
    rng = random.Random(seed)
    run = RunBuilder(world_size=len(ranks))
    names = {index: [f"layer{index}.p{k}" for k in range(params_per_bucket)] for index, _ in buckets}
    for rank, spec in enumerate(ranks):
        builder = run[rank]
        builder.add(tm.DDPInfo(builder.t, 0, False, False, False, bucket_cap_mb, None,
                               [n for ns in names.values() for n in ns], 4096, SITE_DDP))
        builder.loader()
        builder.records[-1].num_workers = loader_workers
        for index, nbytes in buckets:
            builder.add(tm.BucketLayout(builder.t, 0, index, names[index], nbytes))

        def d(value: float) -> float:
            return value * (1 + rng.uniform(-spec.jitter, spec.jitter)) if spec.jitter else value

        t = builder.t + 1.0
        for i in range(steps):
            step_start = t
            phases = {"data": d(spec.data), "forward": d(spec.forward + spec.slow_steps.get(i + 1, 0.0)),
                      "backward": d(spec.backward)}
            t += phases["data"]
            builder.add(tm.Batch(t, 0, 0, i, i, [f"{rank}-{i}"], "f"))
            t += phases["forward"] + phases["backward"]
            grads_done = t
            launch = grads_done - spec.hidden
            end = launch
            for index, nbytes in buckets:
                start, end = end, end + d(bucket_s)
                if index == buckets[-1][0]:
                    end += spec.wait
                builder.add(tm.BucketTiming(end, 0, index, nbytes, start, end, i, i,
                                            index == buckets[-1][0], "default"))
            exposed = max(0.0, end - grads_done)
            if exposed:
                phases["comm_exposed"] = exposed
            t = max(t, end)
            phases["optimizer"] = d(spec.optimizer)
            t += phases["optimizer"] + d(spec.other)
            if i:
                phases["step"] = t - step_start
            phases["samples"] = 32
            builder.add(tm.Step(t, i + 1, 1, 1, phases))
        points = {nbytes: baseline_s for _index, nbytes in buckets} if baseline_s is not None else {}
        if latency_s is not None:
            points[4] = latency_s
        if bandwidth_point is not None:
            points[bandwidth_point[0]] = bandwidth_point[1]
        for nbytes, seconds in sorted(points.items()):
            starts = [1000.0 + k for k in range(5)]  # lined up across ranks, as after a MAX agreement
            builder.add(tm.BaselineTiming(t + 0.1, 0, nbytes, "float32", 2, [seconds] * 5, starts))
        builder.end()
        for record in builder.records:
            if isinstance(record, tm.Init):
                record.backend = backend
    run.outcome("completed")
    run.meta.backend = backend
    return run.model()


# A group like this machine's gloo: 0.25 ms fixed cost per all-reduce, ~1.7 GB/s beyond it
# (measured: 4 B 0.25 ms, 4 MB 2.6 ms): the knee is about 420 KB.
LATENCY = 0.00025
BANDWIDTH_POINT = (4 * MB, 0.00260)


TINY = tuple((i, 37 * KB) for i in range(48))


# The script: five buckets of ~17 KB per backward, ~11 ms steps, half of it exposed.
SMALL = tuple((i, 17 * KB) for i in range(5))
SMALL_RANK = dict(data=0.0005, forward=0.0015, backward=0.002, optimizer=0.0005)


def point(world: int, rate: float, step_s: float = 0.1, exposed: float = 0.0) -> scaling.ScalingPoint:
    return scaling.ScalingPoint(world, f"/runs/ws-{world}", "completed", 17, step_s, rate,
                                {"comm_exposed": exposed, "data": 0.001, "forward": 0.01})


def report_of(model: RunModel, **extra) -> dict:
    """The JSON report an earlier probe of `model` would have written (its metrics)."""
    metrics = {"world_size": model.world_size, **perf_tables.metrics(model), **extra}
    return {"tool": "ddpdoctor", "command": "probe", "status": "pass", "metrics": metrics}


def gated(before: RunModel, now: RunModel, **extra):
    from ddpdoctor.probe.analysis import regression

    now.regression_baseline = regression.parse(report_of(before, **extra), "previous.json")
    return judge("DDP607", now)


def steady(**rank) -> list[Rank]:
    return [Rank(jitter=0.15, **rank), Rank(jitter=0.15, **rank)]


def verdict(finding) -> str:
    return "borderline" if finding.evidence["borderline"] else finding.severity.value
