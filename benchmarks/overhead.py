"""Probe overhead: step time of DDP MLPs under `ddpdoctor probe` against plain torchrun, per size.

Each size runs the same script (benchmarks/ddp_mlp.py: an MLP on in-memory data, batch 32, a
DistributedSampler) on 2 ranks over gloo with one thread each; the script times its own steps,
so both modes are measured the same way. Runs alternate (plain, probe, probe, plain, ...) so
that the load of a shared machine hits both alike; the first --warmup steps of each run are
dropped (DDP's bucket rebuild, allocator warm-up, the probe's DETAIL-checked first iterations
and its in-job baseline after step 4).

Sizes (--sizes, comma-separated):
  latency  64-128-128-64-10       ~33 K parameters: one 130 KB bucket, all-reduce latency bound
  mid      256-512-512-256-10     ~0.5 M parameters: one 2 MB bucket
  10M      1024-2048-2048-1024-10 ~8.4 M parameters: two buckets, compute bound

The figure: per size, each mode's median step time (the median over runs of each run's median
step), and their ratio probe / plain, with the median of the per-pair ratios. On a machine
shared with other jobs one run can be 2x another, so it also prints two figures that load
disturbs less: the median over runs of each run's fastest quarter of steps (p25), and the CPU
time per step of a rank process (all its threads).

    python -m benchmarks.overhead                              # every size, 6 runs per mode, 60 steps
    python -m benchmarks.overhead --sizes 10M --runs 9 --python-hook

--python-hook adds a third mode: plain torchrun with a plain Python comm hook (no ddpdoctor),
which shows what any Python hook costs here: the probe's bucket timer is one.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "benchmarks" / "ddp_mlp.py"
SIZES = {"latency": "64,128,128,64,10", "mid": "256,512,512,256,10", "10M": "1024,2048,2048,1024,10"}


def ddpdoctor_cmd() -> list[str]:
    exe = shutil.which("ddpdoctor")
    return [exe] if exe else [sys.executable, "-m", "ddpdoctor"]


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run_once(mode: str, work: Path, index: int, args, size: str) -> dict[str, float]:
    out = work / f"{size}-{mode}-{index}.json"
    script_args = ["--steps", str(args.steps), "--out", str(out), "--widths", SIZES[size]]
    if mode == "python-hook":
        script_args.append("--python-hook")
    if mode == "probe":
        cmd = [*ddpdoctor_cmd(), "probe", str(SCRIPT), "--max-steps", "0", "--steps-per-epoch", "0",
               "--run-dir", str(work / f"run-{size}-{index}"), "-q", "--", *script_args]
    else:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
               str(SCRIPT), *script_args]
    env = dict(os.environ, OMP_NUM_THREADS="1")  # what the probe sets when it is unset
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    if not out.exists():
        raise SystemExit(f"{mode} run {index} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    data = json.loads(out.read_text())
    wall, cpu = data["step_s"][args.warmup:], data["cpu_s"][args.warmup:]
    return {"median": statistics.median(wall), "p25": quantile(wall, 0.25),
            "cpu": statistics.median(cpu), "params": data["params"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(SIZES), help=f"any of {', '.join(SIZES)}")
    parser.add_argument("--runs", type=int, default=6, help="runs per mode and size")
    parser.add_argument("--steps", type=int, default=60, help="steps per run")
    parser.add_argument("--warmup", type=int, default=10, help="steps dropped at the start of each run")
    parser.add_argument("--python-hook", action="store_true", help="also time plain torchrun with a Python comm hook")
    args = parser.parse_args()
    sizes = [s for s in args.sizes.split(",") if s]
    unknown = [s for s in sizes if s not in SIZES]
    if unknown:
        raise SystemExit(f"unknown size(s) {unknown}: choose from {', '.join(SIZES)}")
    modes = ["plain", "probe"] + (["python-hook"] if args.python_hook else [])
    summary = []
    with tempfile.TemporaryDirectory(prefix="ddpdoctor-overhead-") as tmp:
        work = Path(tmp)
        for size in sizes:
            runs: dict[str, list[dict[str, float]]] = {m: [] for m in modes}
            params = 0
            for index in range(args.runs):
                for mode in (modes if index % 2 == 0 else modes[::-1]):
                    result = run_once(mode, work, index, args, size)
                    params = int(result["params"])
                    runs[mode].append(result)
                    print(f"  {size:<7} run {index + 1}/{args.runs} {mode:<12} median step "
                          f"{result['median'] * 1e3:7.1f} ms  p25 {result['p25'] * 1e3:7.1f} ms  "
                          f"cpu {result['cpu'] * 1e3:7.1f} ms", flush=True)
            summary.append((size, params, runs))

    print(f"\noverhead: 2 ranks, gloo, 1 thread each, batch 32, {args.steps - args.warmup} timed "
          f"steps per run, {args.runs} alternating runs per mode (medians over runs)")
    for size, params, runs in summary:
        def figure(mode: str, key: str) -> float:
            return statistics.median(r[key] for r in runs[mode])

        print(f"\n{size} ({SIZES[size].replace(',', '-')}, {params / 1e6:.2f}M parameters)")
        print(f"  {'mode':<12} {'median step':>12} {'p25 step':>10} {'cpu/step':>10}")
        for mode in modes:
            print(f"  {mode:<12} {figure(mode, 'median') * 1e3:9.2f} ms {figure(mode, 'p25') * 1e3:7.2f} ms "
                  f"{figure(mode, 'cpu') * 1e3:7.2f} ms")
        for mode in modes[1:]:
            ratios = {key: figure(mode, key) / figure("plain", key) for key in ("median", "p25", "cpu")}
            pairs = statistics.median(a["median"] / b["median"] for a, b in zip(runs[mode], runs["plain"]))
            print(f"  ratio {mode}/plain: median step {ratios['median']:.3f} (per-pair {pairs:.3f}), "
                  f"p25 step {ratios['p25']:.3f}, cpu per step {ratios['cpu']:.3f}"
                  + ("  (target <= 1.03)" if mode == "probe" else ""))


if __name__ == "__main__":
    main()
