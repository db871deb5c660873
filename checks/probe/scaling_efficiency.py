"""DDP606: adding ranks adds little throughput (probe --scaling)."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.probe.analysis import perf
from ddpdoctor.probe.analysis import scaling
from ddpdoctor.probe.analysis.perf.steps import PHASE_WORDS
from ddpdoctor.probe.analysis.perf.units import ms
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.core.registry import Skipped, check

MIN_EFFICIENCY = 0.5  # throughput per rank at the largest size, against the smallest size's


@check("DDP606", "Poor scaling efficiency", Severity.INFO)
def scaling_efficiency(run: RunModel) -> list[Problem] | Skipped:
    """
    What it detects:
        With `probe --scaling 1,2,4`, the script ran at each world size; scaling efficiency is
        throughput(N) / throughput(N0) / (N / N0) against the smallest size N0, from the steps
        after the first 3 (throughput: samples per second of all ranks together). Reported when
        the efficiency at the largest size is below 0.5: each rank delivers less than half of
        what it did alone. The finding names the phase of the step that grew the most.

    Why it hurts:
        Below 0.5, half of every added GPU-hour is lost to coordination: exposed communication,
        waiting for the slowest rank, or a shared input pipeline. Adding ranks buys little and
        can cost more than it saves.

    How to fix:
        Follow the phase that grows with the world size. Exposed communication (DDP604): more
        compute per all-reduce (larger batch per rank, gradient accumulation under no_sync) or
        gradient compression. Waiting for data (DDP605): more DataLoader workers or faster
        storage. Compute growing per rank: ranks share CPU cores or a GPU (oversubscription), so
        run no more ranks per node than it has devices:

            torchrun --nproc-per-node $(nvidia-smi -L | wc -l) train.py
    """
    points = [p for p in run.scaling if p.rate]
    if len(points) < 2:
        return Skipped("no --scaling run (`ddpdoctor probe --scaling 1,2,4 train.py`)")
    rows = [(p, s, e) for p, s, e in scaling.efficiencies(points) if e is not None]
    ref = rows[0][0]
    point, speedup, efficiency = rows[-1]
    if efficiency >= MIN_EFFICIENCY:
        return []
    grown = ""
    if point.phases and ref.phases:
        deltas = {phase: point.phases.get(phase, 0.0) - ref.phases.get(phase, 0.0)
                  for phase in (*perf.PHASES, "collectives", "other")}
        phase = max(deltas, key=deltas.get)
        if deltas[phase] > 0 and point.step_s and ref.step_s:
            grown = (f"; a step takes {ms(point.step_s)} at {point.world_size} ranks against "
                     f"{ms(ref.step_s)} at {ref.world_size}, most of the growth in "
                     f"{PHASE_WORDS[phase]} (+{ms(deltas[phase])})")
    unit = "samples/s" if point.samples_per_s else "rank-steps/s"
    return [Problem(
        message=(f"at {point.world_size} ranks the job delivers {point.rate:.1f} {unit} against "
                 f"{ref.rate:.1f} at {ref.world_size}: {speedup:.2f}x for {point.world_size / ref.world_size:g}x "
                 f"the ranks, a scaling efficiency of {efficiency:.0%}{grown}"),
        hint=("follow the phase that grows with the world size: exposed communication (DDP604), "
              "waiting for data (DDP605), or ranks sharing cores or a device"),
        ranks=[],
        evidence={"efficiency": {str(p.world_size): round(e, 3) for p, _s, e in rows},
                  "rate": {str(p.world_size): round(p.rate, 3) for p, _s, _e in rows},
                  "unit": unit},
    )]
