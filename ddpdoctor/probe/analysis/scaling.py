"""`probe --scaling 1,2,4`, the analysis side: one point per world size, and their efficiencies
(launch/scaling.py runs the probes).

Each world size is a probe of its own, in RUN_DIR/scaling/ws-<N> (a complete run dir: `ddpdoctor
report` opens it), except the size the main probe already ran, which is reused. RUN_DIR/scaling.json
lists them. The numbers come from each run's judged steps (perf/steps.py): throughput is every rank's
samples per second added up; where the script feeds no DataLoader, ranks / step time stands in.
Scaling efficiency is throughput(N) / throughput(N0) / (N / N0) against the smallest size N0
(normally 1 process): 1.0 is perfect weak scaling, each rank as fast as one alone.
"""

from __future__ import annotations

import json
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from ddpdoctor.probe.analysis import perf
from ddpdoctor.probe.run_model.loaded_run import RunModel

from ddpdoctor.probe.records.rundir import SCALING_FILE


@dataclass
class ScalingPoint:
    """One world size of a --scaling run."""

    world_size: int
    run_dir: str
    status: Optional[str]  # the probe's outcome ("completed", ...); None: unknown
    steps: int  # judged steps (the fewest of any rank)
    step_s: Optional[float]  # median step wall time over ranks
    samples_per_s: Optional[float]  # the whole job's
    phases: dict[str, float] = field(default_factory=dict)  # median seconds per step, over ranks

    @property
    def rate(self) -> Optional[float]:
        """Throughput: samples/s, or rank-steps/s where no samples were counted."""
        if self.samples_per_s:
            return self.samples_per_s
        return self.world_size / self.step_s if self.step_s else None


def point_of(model: RunModel, world_size: int) -> ScalingPoint:
    perfs = perf.step_perf(model)
    steps = min((len(p.steps) for p in perfs.values()), default=0)
    step_s = perf.median([p.median("step") for p in perfs.values()]) if perfs else None
    phases = {}
    if perfs:
        for phase in (*perf.PHASES, "collectives", "other", "compute"):
            phases[phase] = perf.median([p.median(phase) for p in perfs.values()])
    return ScalingPoint(world_size, model.run_dir, model.outcome.status if model.outcome else None,
                        steps, step_s or None, perf.throughput(perfs), phases)


def efficiencies(points: list[ScalingPoint]) -> list[tuple[ScalingPoint, Optional[float], Optional[float]]]:
    """(point, speed-up, efficiency) per world size, against the smallest size with a rate."""
    usable = [p for p in points if p.rate]
    # Compare like with like: samples/s everywhere, or rank-steps/s everywhere.
    if usable and not all(p.samples_per_s for p in usable):
        usable = [dataclasses.replace(p, samples_per_s=None) for p in usable]
    by_size = {p.world_size: p for p in usable}
    ref = min(usable, key=lambda p: p.world_size) if usable else None
    result = []
    for point in sorted(points, key=lambda p: p.world_size):
        use = by_size.get(point.world_size)
        if ref is None or use is None:
            result.append((point, None, None))
            continue
        speedup = use.rate / ref.rate
        result.append((point, speedup, speedup / (point.world_size / ref.world_size)))
    return result


def load_points(root: Path, this: RunModel) -> list[ScalingPoint]:
    """The points of RUN_DIR/scaling.json; `this` is the main run ("." in the file)."""
    try:
        listing = json.loads((root / SCALING_FILE).read_text())
    except (OSError, ValueError):
        return []
    points = []
    for size, rel in sorted((listing.get("runs") or {}).items(), key=lambda kv: int(kv[0])):
        if rel == ".":
            model: Any = this
        else:
            try:
                model = RunModel.load(root / rel)
            except (OSError, ValueError, TypeError, KeyError):
                points.append(ScalingPoint(int(size), str(root / rel), None, 0, None, None))
                continue
        points.append(point_of(model, int(size)))
    return points
