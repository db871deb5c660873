"""The probe report's performance tables and numbers: step phases per rank, gradient buckets
against the in-job baseline, and throughput per world size (--scaling). The numbers are the perf
package's, the same the DDP6xx checks quote."""

from __future__ import annotations

from typing import Any, Optional

from ddpdoctor.probe.analysis import fsdp_comm, perf

from ddpdoctor.probe.analysis import scaling
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.report.model import Table

PHASE_COLUMNS = ("data", "forward", "backward", "comm_exposed", "optimizer", "collectives", "other")
NOT_MEASURED = "not measured"


def _ms(seconds: Optional[float]) -> str:
    return "" if seconds is None else f"{seconds * 1e3:.1f}"


def _gbps(value: Optional[float]) -> str:
    return "" if value is None else f"{value:.3f}"


def _phase_cell(p: perf.RankPerf, column: str) -> str:
    unmeasured = p.steps[0].unmeasured if p.steps else ()
    if column in unmeasured:
        return NOT_MEASURED
    if column == "other" and unmeasured:
        return ""  # the rest of a step whose parts are not all known
    return _ms(p.median(column))


def phase_table(perfs: dict[int, perf.RankPerf], clock: Optional[perf.DeviceTime] = None,
                launch: bool = False) -> Table:
    rows = []
    for rank, p in sorted(perfs.items()):
        rate = p.samples_per_s
        rows.append([rank, *(_phase_cell(p, c) for c in PHASE_COLUMNS), _ms(p.median("step")),
                     "" if rate is None else f"{rate:.1f}"])
    steps = min(len(p.steps) for p in perfs.values())
    if launch:
        title = (f"Step phases, CPU (launch) time: median ms per step over {steps}+ steps after "
                 f"the first {perf.WARMUP_STEPS}; on a GPU the CPU launches work that runs later, "
                 "so these say how long the CPU spent, not the device (data: waiting for the "
                 "loader)")
    else:
        title = (f"Step phases: median ms per step over {steps}+ steps after the first "
                 f"{perf.WARMUP_STEPS} (exposed: communication backward did not hide; coll: the "
                 "script's own collectives)")
        if clock is not None and (clock.comm != perf.CPU_CLOCK or clock.compute != perf.CPU_CLOCK):
            title += ("; fwd, bwd, exposed, optim on the device (CUDA events), the rest on the CPU"
                      if clock.compute == perf.CUDA_CLOCK else f"; {clock.reason}")
    return Table(title, ["rank", "data", "fwd", "bwd", "exposed", "optim", "coll", "other", "step",
                         "samples/s"], rows)


def bucket_table(comms: list[perf.ModelComm]) -> Table:
    rows = []
    several = len(comms) > 1
    for comm in comms:
        for b in comm.buckets:
            efficiency = b.efficiency
            if not comm.measured:  # launch times are not all-reduce times: none shown
                rows.append([*([comm.ddp_id] if several else []), b.index, f"{b.nbytes / 1e6:.3f}",
                             len(b.params), *[NOT_MEASURED] * 5])
                continue
            rows.append([*([comm.ddp_id] if several else []), b.index, f"{b.nbytes / 1e6:.3f}",
                         len(b.params), _ms(b.seconds), _gbps(b.algbw), _gbps(b.busbw),
                         _gbps(b.baseline_busbw), "" if efficiency is None else f"{efficiency:.2f}"])
    columns = ["bucket", "MB", "params", "ms", "algbw", "busbw", "baseline", "eff"]
    title = ("Gradient buckets: median all-reduce per backward; algbw, busbw and baseline "
             "busbw in GB/s (busbw = algbw x 2(n-1)/n); baseline: a raw all-reduce of the "
             "same size in this job; eff = busbw / baseline")
    unmeasured = next((c for c in comms if not c.measured), None)
    if unmeasured is not None:
        title += f"; {unmeasured.clock_reason or 'device time not measured'}"
    elif any(c.clock == perf.CUDA_CLOCK for c in comms):
        title += "; timed with CUDA events on the device"
    return Table(title, (["model"] if several else []) + columns, rows)


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
    clock = perf.device_time(model)
    perfs = perf.step_perf(model)
    if perfs:
        found.append(phase_table(perfs, clock))
    if clock.compute != perf.CPU_CLOCK:
        launch = perf.step_perf(model, launch=True)  # what the CPU saw, labelled as such
        if launch:
            found.append(phase_table(launch, clock, launch=True))
    comms = [c for c in perf.model_comm(model) if c.buckets]
    if comms:
        found.append(bucket_table(comms))
    fsdp = fsdp_comm.fsdp_comm(model)
    if fsdp is not None and fsdp.ops:
        found.append(fsdp_comm.table(fsdp))  # FSDP / FSDP2's all-gathers and reduce-scatters
    if model.scaling:
        found.append(scaling_table(model.scaling))
    verified = model.verified
    if verified:
        found.append(verify_table(verified))
    baseline = model.regression_baseline
    if baseline is not None and perfs:
        found.extend(baseline_tables(baseline, metrics(model)))
    return found


def verify_table(results: list) -> Table:
    rows = []
    for r in results:
        change = ", ".join(f"{k}={v!r}" for k, v in r.ddp_kwargs.items()) or "(needs the script changed)"
        error = r.error
        rows.append([r.code, change, "" if r.estimated_step_ms is None else f"{r.estimated_step_ms:.1f}",
                     "" if r.step_ms is None else f"{r.step_ms:.1f}",
                     "" if error is None else f"{error:+.0%}", r.run_dir or r.note])
    return Table("Fix verification (--verify-fix): median ms per step estimated by the finding, "
                 "and measured in a rerun with the change applied by the probe",
                 ["finding", "change", "est. ms", "measured ms", "error", "rerun"], rows)


def baseline_tables(baseline: Any, now: dict[str, Any]) -> list[Table]:
    from ddpdoctor.probe.analysis import regression

    rows = []
    for c in regression.compare(baseline.metrics, now):
        rows.append([c.words, f"{c.before:g}", f"{c.now:g}", c.unit,
                     f"{c.tolerance:.3g}", "REGRESSED" if c.regressed else "ok"])
    found = [Table(f"Against the baseline ({baseline.source}): worse by more than the tolerance "
                   "regresses (times: 3 standard errors of the difference of the two medians; a part "
                   "of the step, never less than the step time's own tolerance)",
                   ["metric", "baseline", "now", "unit", "tolerance", "verdict"], rows)]
    buckets = regression.bucket_rows(baseline.metrics, now)
    if buckets:
        found.append(Table("Bus bandwidth per bucket against the baseline (GB/s)",
                           ["bucket", "MB", "baseline", "now", "change"], buckets))
    return found


def metrics(model: RunModel) -> dict[str, Any]:
    """Performance numbers for the JSON report (seconds as ms, rounded). A later probe's
    --baseline gate (DDP607) reads them back: step time and its spread, exposed communication,
    calls and bytes per step, busy time and bus bandwidth per bucket."""
    numbers: dict[str, Any] = {}
    clock = perf.device_time(model)
    if clock != perf.DeviceTime():  # gloo/CPU runs keep their metrics exactly as before
        numbers["device_time"] = {"comm": clock.comm, "compute": clock.compute,
                                  "reason": clock.reason}
    perfs = perf.step_perf(model)
    if perfs:
        numbers["step_ms_median"] = round(perf.step_time(perfs) * 1e3, 3)
        numbers["step_ms_spread"] = round(perf.step_spread(perfs) * 1e3, 3)
        numbers["judged_steps"] = min(len(p.steps) for p in perfs.values())
        rate = perf.throughput(perfs)
        numbers["samples_per_s"] = round(rate, 3) if rate else None
        if len(perfs) >= 2 and clock.comm_measured:
            exposed, step, _ = perf.pure_exposed(perfs)
            numbers["exposed_comm_ms"] = round(exposed * 1e3, 3)
            numbers["exposed_comm_share"] = round(exposed / step, 4) if step else None
            numbers["exposed_comm_spread_ms"] = round(perf.exposed_spread(perfs) * 1e3, 3)
    comms = [c for c in perf.model_comm(model) if c.buckets]
    if comms:
        numbers["buckets_per_backward"] = sum(round(c.buckets_per_iteration) for c in comms)
        numbers["gradient_bytes_per_backward"] = sum(c.bytes_per_iteration for c in comms)
        rounds = perf.rounds_per_step(model)
        numbers["allreduce_calls_per_step"] = round(numbers["buckets_per_backward"] * rounds, 3)
        numbers["allreduce_bytes_per_step"] = round(numbers["gradient_bytes_per_backward"] * rounds)
        measured = all(c.measured for c in comms)
        if measured:
            numbers["comm_busy_ms"] = round(sum(c.busy_s for c in comms) * 1e3, 3)
            numbers["comm_busy_spread_ms"] = round(max(c.busy_spread for c in comms) * 1e3, 3)
        numbers["buckets"] = [{"ddp_id": c.ddp_id, "index": b.index, "bytes": b.nbytes,
                               "ms": round(b.seconds * 1e3, 4) if measured else None,
                               "busbw": round(b.busbw, 4) if measured else None}
                              for c in comms for b in c.buckets]
        costs = [c.cost for c in comms if c.cost is not None and c.cost.measured]
        if costs:
            numbers["allreduce_latency_ms"] = round(costs[0].latency * 1e3, 4)
            numbers["allreduce_knee_bytes"] = int(costs[0].knee_bytes)
    fsdp = fsdp_comm.fsdp_comm(model)
    if fsdp is not None and fsdp.ops:
        numbers.update(fsdp_comm.metrics(fsdp))
    verified = model.verified
    if verified:
        numbers["verify_fix"] = [v.to_dict() for v in verified]
    if model.scaling:
        numbers["scaling"] = [
            {"world_size": p.world_size, "rate": round(p.rate, 3) if p.rate else None,
             "unit": "samples/s" if p.samples_per_s else "rank-steps/s",
             "step_ms": round(p.step_s * 1e3, 3) if p.step_s else None,
             "efficiency": round(e, 4) if e is not None else None, "run_dir": p.run_dir}
            for p, _s, e in scaling.efficiencies(model.scaling)]
    return numbers
