"""Bucket fidelity: the probe's measured bucket bus bandwidth against a raw all-reduce of the same size.

Runs `ddpdoctor probe` on benchmarks/ddp_mlp.py (4 x 1448-wide layers: DDP makes buckets of
about 8 MB and 25 MB) a few times. In each run the probe times every bucket all-reduce through
its comm hook, and after the last step measures raw all-reduces of the same sizes on the same
process group (the in-job baseline). For each bucket it prints busbw as measured in training,
busbw of the raw all-reduce, and their ratio; the figure is the median over runs of each run's
ratio for all buckets together (total baseline time / total bucket time). 1.0 means the probe's
bucket timings show exactly what the network does; the target is within 10%.

The model has little compute per byte (batch 8), so most bucket all-reduces run with no
backward compute beside them: the figure is about the measurement, not about contention.

    python benchmarks/bucket_fidelity.py               # 5 runs
    python benchmarks/bucket_fidelity.py --runs 9
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.overhead import SCRIPT, ddpdoctor_cmd  # noqa: E402
from ddpdoctor.probe import perf  # noqa: E402
from ddpdoctor.probe.runmodel import RunModel  # noqa: E402

WIDTHS = "1448,1448,1448,1448,1448"


def run_once(work: Path, index: int, args) -> list[perf.BucketPerf]:
    run_dir = work / f"run-{index}"
    cmd = [*ddpdoctor_cmd(), "probe", str(SCRIPT), "--max-steps", str(args.steps),
           "--steps-per-epoch", "0", "--run-dir", str(run_dir), "-q", "--",
           "--widths", WIDTHS, "--batch-size", "8", "--steps", str(args.steps + 10)]
    subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    model = RunModel.load(run_dir)
    buckets = [b for comm in perf.model_comm(model) for b in comm.buckets]
    if not buckets or any(b.baseline is None for b in buckets):
        raise SystemExit(f"run {index}: no bucket timings or no baseline in {run_dir}")
    return buckets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--steps", type=int, default=30, help="probe --max-steps per run")
    args = parser.parse_args()
    ratios = []
    with tempfile.TemporaryDirectory(prefix="ddpdoctor-fidelity-") as tmp:
        for index in range(args.runs):
            buckets = run_once(Path(tmp), index, args)
            total = sum(b.baseline for b in buckets) / sum(b.seconds for b in buckets)
            ratios.append(total)
            parts = ", ".join(f"bucket {b.index} {b.nbytes / 1e6:.1f} MB: {b.busbw:.3f} vs "
                              f"{b.baseline_busbw:.3f} GB/s ({b.efficiency:.2f})" for b in buckets)
            print(f"  run {index + 1}/{args.runs}: {parts}; all buckets {total:.3f}", flush=True)
    print(f"\nbucket fidelity: probe-measured bucket busbw / raw all-reduce busbw of the same "
          f"size in the same job, median of {args.runs} runs: {statistics.median(ratios):.3f} "
          f"(runs: {', '.join(f'{r:.2f}' for r in ratios)}; target within 10%)")


if __name__ == "__main__":
    main()
