"""The probe report's performance tables and numbers: step phases per rank, gradient buckets
against the in-job baseline, and throughput per world size (--scaling). The numbers are perf.py's,
the same the DDP6xx checks quote."""

from __future__ import annotations

from typing import Any, Optional

from ddpdoctor.probe.analysis import perf

from ddpdoctor.probe.analysis import scaling
from ddpdoctor.probe.analysis.runmodel import RunModel
from ddpdoctor.report.model import Table

PHASE_COLUMNS = ("data", "forward", "backward", "comm_exposed", "optimizer", "collectives", "other")


def _ms(seconds: Optional[float]) -> str:
    return "" if seconds is None else f"{seconds * 1e3:.1f}"


def _gbps(value: Optional[float]) -> str:
    return "" if value is None else f"{value:.3f}"


def phase_table(perfs: dict[int, perf.RankPerf]) -> Table:
    rows = []
    for rank, p in sorted(perfs.items()):
        rate = p.samples_per_s
        rows.append([rank, *(_ms(p.median(c)) for c in PHASE_COLUMNS), _ms(p.median("step")),
                     "" if rate is None else f"{rate:.1f}"])
    steps = min(len(p.steps) for p in perfs.values())
    return Table(f"Step phases: median ms per step over {steps}+ steps after the first "
                 f"{perf.WARMUP_STEPS} (exposed: communication backward did not hide; coll: the "
                 "script's own collectives)",
                 ["rank", "data", "fwd", "bwd", "exposed", "optim", "coll", "other", "step",
                  "samples/s"], rows)


def bucket_table(comms: list[perf.ModelComm]) -> Table:
    rows = []
    several = len(comms) > 1
    for comm in comms:
        for b in comm.buckets:
            efficiency = b.efficiency
            rows.append([*([comm.ddp_id] if several else []), b.index, f"{b.nbytes / 1e6:.3f}",
                         len(b.params), _ms(b.seconds), _gbps(b.algbw), _gbps(b.busbw),
                         _gbps(b.baseline_busbw), "" if efficiency is None else f"{efficiency:.2f}"])
    columns = ["bucket", "MB", "params", "ms", "algbw", "busbw", "baseline", "eff"]
    return Table("Gradient buckets: median all-reduce per backward; algbw, busbw and baseline "
                 "busbw in GB/s (busbw = algbw x 2(n-1)/n); baseline: a raw all-reduce of the "
                 "same size in this job; eff = busbw / baseline",
                 (["model"] if several else []) + columns, rows)


def scaling_table(points: list[scaling.ScalingPoint]) -> Table:
    rows = []
    for point, speedup, efficiency in scaling.efficiencies(points):
        rate = point.rate
        rows.append([point.world_size, point.status or "?", point.steps, _ms(point.step_s),
                     "" if rate is None else f"{rate:.1f}",
                     "" if speedup is None else f"{speedup:.2f}x",
                     "" if efficiency is None else f"{efficiency:.0%}"])
    unit = "samples/s" if all(p.samples_per_s for p in points if p.rate) else "rank-steps/s"
    return Table("Scaling (one probe per world size)",
                 ["ranks", "outcome", "steps", "median step ms", unit, "speed-up", "efficiency"], rows)


def tables(model: RunModel) -> list[Table]:
    """The performance tables that have data in this run (none for a run that never stepped)."""
    found = []
    perfs = perf.step_perf(model)
    if perfs:
        found.append(phase_table(perfs))
    comms = [c for c in perf.model_comm(model) if c.buckets]
    if comms:
        found.append(bucket_table(comms))
    if model.scaling:
        found.append(scaling_table(model.scaling))
    return found


def metrics(model: RunModel) -> dict[str, Any]:
    """Performance numbers for the JSON report (seconds as ms, rounded)."""
    numbers: dict[str, Any] = {}
    perfs = perf.step_perf(model)
    if perfs:
        numbers["step_ms_median"] = round(perf.median([p.median("step") for p in perfs.values()]) * 1e3, 3)
        rate = perf.throughput(perfs)
        numbers["samples_per_s"] = round(rate, 3) if rate else None
        if len(perfs) >= 2:
            exposed, step, _ = perf.pure_exposed(perfs)
            numbers["exposed_comm_ms"] = round(exposed * 1e3, 3)
            numbers["exposed_comm_share"] = round(exposed / step, 4) if step else None
    comms = [c for c in perf.model_comm(model) if c.buckets]
    if comms:
        numbers["buckets_per_backward"] = sum(round(c.buckets_per_iteration) for c in comms)
        numbers["gradient_bytes_per_backward"] = sum(c.bytes_per_iteration for c in comms)
    if model.scaling:
        numbers["scaling"] = [
            {"world_size": p.world_size, "rate": round(p.rate, 3) if p.rate else None,
             "unit": "samples/s" if p.samples_per_s else "rank-steps/s",
             "step_ms": round(p.step_s * 1e3, 3) if p.step_s else None,
             "efficiency": round(e, 4) if e is not None else None, "run_dir": p.run_dir}
            for p, _s, e in scaling.efficiencies(model.scaling)]
    return numbers
