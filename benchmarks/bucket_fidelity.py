"""Bucket fidelity: the probe's measured bucket bus bandwidth against a raw all-reduce of the same size.

Runs `ddpdoctor probe` on benchmarks/ddp_mlp.py a few times: by default one 2896 x 2896 layer,
a single 33.6 MB bucket (--widths 1448,1448,1448,1448,1448 gives buckets of 8.4 and 25.2 MB,
which gloo may run side by side). In each run the probe times every bucket all-reduce through
its comm hook, and after the last step measures raw all-reduces of the same sizes on the same
process group (the in-job baseline). For each bucket it prints busbw as measured in training,
busbw of the raw all-reduce, and their ratio; the figure is the median over runs of each run's
ratio for all buckets together (total baseline time / total bucket time). 1.0 means the probe's
bucket timings show exactly what the network does; the target is within 10%.

The model has little compute per byte (batch 8), so the bucket all-reduces run with little
backward compute beside them: the figure is about the measurement, not about contention. Both
sides are timed alike: from the last rank's launch to the last rank's completion (perf/spans.py).

    python -m benchmarks.bucket_fidelity               # 5 runs
    python -m benchmarks.bucket_fidelity --runs 9
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
from pathlib import Path

from benchmarks.overhead import REPO, SCRIPT, ddpdoctor_cmd
from ddpdoctor.probe.analysis import perf
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.run_model.loaded_run import RunModel



def quarter(values: list[float]) -> float:
    """The fastest quarter's upper edge: interference from other load only ever adds time."""
    ordered = sorted(values)
    return ordered[len(ordered) // 4]


def raw_seconds(model: RunModel) -> tuple[dict[int, list[float]], dict[int, list[float]]]:
    """Every judged all-reduce per bucket size, lined up across ranks: in training, in the baseline."""
    ranks = list(model.ranks.values())
    training: dict[int, list[float]] = {}
    per_iteration: dict[tuple[int, int], list[tm.BucketTiming]] = {}
    for run in ranks:
        for b in run.of(tm.BucketTiming):
            if b.step >= perf.WARMUP_STEPS:
                per_iteration.setdefault((b.iteration, b.index), []).append(b)
    for timings in per_iteration.values():
        start, end = perf.joined([b.start for b in timings], [b.end for b in timings],
                                 [b.end - b.start for b in timings])
        training.setdefault(timings[0].nbytes, []).append(end - start)
    baseline: dict[int, list[float]] = {}
    records = [r for run in ranks for r in run.of(tm.BaselineTiming)]
    for size in {r.nbytes for r in records}:
        same = [r for r in records if r.nbytes == size]
        for i in range(min(len(r.times) for r in same)):
            start, end = perf.joined([r.starts[i] for r in same],
                                     [r.starts[i] + r.times[i] for r in same],
                                     [r.times[i] for r in same])
            baseline.setdefault(size, []).append(end - start)
    return training, baseline


def run_once(work: Path, index: int, args) -> tuple[list[perf.BucketPerf], float]:
    run_dir = work / f"run-{index}"
    cmd = [*ddpdoctor_cmd(), "probe", str(SCRIPT), "--max-steps", str(args.steps),
           "--steps-per-epoch", "0", "--run-dir", str(run_dir), "-q", "--",
           "--widths", args.widths, "--batch-size", "8", "--steps", str(args.steps + 10)]
    subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    model = RunModel.load(run_dir)
    buckets = [b for comm in perf.model_comm(model) for b in comm.buckets]
    if not buckets or any(b.baseline is None for b in buckets):
        raise SystemExit(f"run {index}: no bucket timings or no baseline in {run_dir}")
    training, baseline = raw_seconds(model)
    fast = (sum(quarter(baseline[b.nbytes]) for b in buckets)
            / sum(quarter(training[b.nbytes]) for b in buckets))
    return buckets, fast


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--steps", type=int, default=30, help="probe --max-steps per run")
    parser.add_argument("--widths", default="2896,2896", help="layer widths of the MLP")
    args = parser.parse_args()
    ratios, fast_ratios = [], []
    with tempfile.TemporaryDirectory(prefix="ddpdoctor-fidelity-") as tmp:
        for index in range(args.runs):
            buckets, fast = run_once(Path(tmp), index, args)
            total = sum(b.baseline for b in buckets) / sum(b.seconds for b in buckets)  # bytes-weighted
            ratios.append(total)
            fast_ratios.append(fast)
            parts = ", ".join(f"bucket {b.index} {b.nbytes / 1e6:.1f} MB: {b.busbw:.3f} vs "
                              f"{b.baseline_busbw:.3f} GB/s ({b.efficiency:.2f})" for b in buckets)
            print(f"  run {index + 1}/{args.runs}: {parts}; all buckets {total:.3f}, "
                  f"fastest quarter {fast:.3f}", flush=True)
    print(f"\nbucket fidelity: probe-measured bucket busbw / raw all-reduce busbw of the same "
          f"size in the same job, median of {args.runs} runs: {statistics.median(ratios):.3f} "
          f"(runs: {', '.join(f'{r:.2f}' for r in ratios)}; target within 10%)")
    print(f"  the same from each side's fastest quarter of all-reduces (less sensitive to other "
          f"load on the machine): {statistics.median(fast_ratios):.3f} "
          f"(runs: {', '.join(f'{r:.2f}' for r in fast_ratios)})")


if __name__ == "__main__":
    main()
