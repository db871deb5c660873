"""Each rank's judged steps and their phases, and what the steps say of the whole job.

Each rank's Step records carry seconds per step spent in: data (waiting for the loader),
forward, backward (to the last local gradient), comm_exposed (bucket all-reduces still running
after the last gradient: what backward did not hide, including any wait for a slower rank) and
optimizer; `step` is the wall time since the previous step. Derived here:
  collectives  time blocked in the script's own synchronous collectives during the step;
  other        what is left: the script's own code between the phases (logging, metrics, ...);
  compute      the step minus everything spent waiting on other ranks (comm_exposed,
               collectives): the rank's own work, the figure that tells a straggler.
The first WARMUP_STEPS steps are not judged: DDP's first backward runs one bucket holding every
parameter (before it rebuilds buckets in gradient order), allocators and caches warm up, and
under TORCH_DISTRIBUTED_DEBUG=DETAIL the first three bucket all-reduces carry an extra check.
Step noise: how much a step's time varies, and so how large a gain must be to mean anything.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.analysis.perf.clock import CUDA_CLOCK, DeviceTime, device_time
from ddpdoctor.probe.analysis.perf.stats import median, spread
from ddpdoctor.probe.run_model.loaded_run import RankRun, RunModel

WARMUP_STEPS = 3  # steps 1-3 are not judged (see above)
MIN_STEPS = 5  # judged steps a rank needs before its numbers mean anything
BASELINE_STEP = WARMUP_STEPS + 1  # the in-job baseline is measured after this step (inrank/baseline.AT_STEP)
PHASES = ("data", "forward", "backward", "comm_exposed", "optimizer")
# The rank's own work: everything but waiting on other ranks.
COMPUTE_PHASES = ("data", "forward", "backward", "optimizer", "other")
PHASE_WORDS = {
    "data": "waiting for data",
    "forward": "forward",
    "backward": "backward",
    "optimizer": "the optimizer step",
    "other": "its own code between the phases (logging, metrics, ...)",
    "comm_exposed": "communication not hidden behind backward",
    "collectives": "the script's own collectives",
}
DEVICE_PHASES = ("forward", "backward", "comm_exposed", "optimizer")  # tm.DevicePhases


@dataclass
class StepSample:
    """One judged step of one rank: seconds per phase, including the derived ones."""

    step: int
    wall: float
    phases: dict[str, float]
    samples: int
    unmeasured: tuple = ()  # phases whose time was not measured (their value here is 0)

    @property
    def compute(self) -> float:
        return sum(self.phases.get(p, 0.0) for p in COMPUTE_PHASES)


@dataclass
class RankPerf:
    rank: int
    steps: list[StepSample]

    def median(self, phase: str) -> float:
        """Median seconds per step in a phase ("step" for the wall time, "compute" for own work)."""
        if phase == "step":
            return median([s.wall for s in self.steps])
        if phase == "compute":
            return median([s.compute for s in self.steps])
        return median([s.phases.get(phase, 0.0) for s in self.steps])

    @property
    def samples_per_s(self) -> Optional[float]:
        samples = sum(s.samples for s in self.steps)
        wall = sum(s.wall for s in self.steps)
        return samples / wall if samples and wall > 0 else None


def _collective_waits(run: RankRun) -> dict[int, float]:
    """Seconds blocked in the script's own synchronous collectives, by the Step they fall in."""
    done = {(d.group, d.seq): d.t for d in run.of(tm.CollectiveDone)}
    waits: dict[int, float] = {}
    for c in run.of(tm.Collective):
        if c.op == "ddp_bucket_allreduce":
            continue
        end = done.get((c.group, c.seq))
        if end is not None and end >= c.t:
            # Made while `c.step` steps were done: it belongs to the Step record c.step + 1.
            waits[c.step + 1] = waits.get(c.step + 1, 0.0) + (end - c.t)
    return waits


def rank_steps(run: RankRun, clock: Optional[DeviceTime] = None,
               launch: bool = False) -> RankPerf:
    """The judged steps of one rank (after warm-up, with a wall time). With a CUDA `clock` the
    device phases replace the CPU ones (a step whose device times never completed is not
    judged), unless `launch`: then the CPU (launch) times of every phase, as recorded."""
    clock = clock or DeviceTime()
    device = None
    if clock.compute == CUDA_CLOCK and not launch:
        device = {d.step: d.phases for d in run.of(tm.DevicePhases)}
    unmeasured: tuple = ()
    if not launch:
        unmeasured = (() if clock.comm_measured else ("comm_exposed",)) + (
            () if clock.compute_measured else ("forward", "backward", "optimizer"))
    waits = _collective_waits(run)
    samples = []
    for record in run.of(tm.Step):
        wall = record.phases.get("step")
        if record.step <= WARMUP_STEPS or not wall or wall <= 0:
            continue
        phases = {p: float(record.phases.get(p, 0.0)) for p in PHASES}
        if device is not None:
            found = device.get(record.step)
            if found is None:
                continue
            phases.update({p: float(found.get(p, 0.0)) for p in DEVICE_PHASES})
        for p in unmeasured:
            phases[p] = 0.0
        phases["collectives"] = min(waits.get(record.step, 0.0), wall)
        phases["other"] = max(0.0, wall - sum(phases.values()))
        samples.append(StepSample(record.step, wall, phases, int(record.phases.get("samples", 0) or 0),
                                  unmeasured))
    return RankPerf(run.rank, samples)


def step_perf(model: RunModel, launch: bool = False) -> dict[int, RankPerf]:
    """Every rank's judged steps, by rank; ranks with fewer than MIN_STEPS are left out. Phases
    on the run's clock (device_time); `launch`: the CPU (launch) times, as recorded. Computed
    once per run (eight checks and the tables ask): the RankPerfs are shared, never changed."""
    return dict(model.derived_once(f"step_perf:{launch}", model.launch_key(), lambda: _step_perf(model, launch)))


def _step_perf(model: RunModel, launch: bool) -> dict[int, RankPerf]:
    found = {}
    clock = device_time(model)
    for rank in model.rank_ids():
        perf = rank_steps(model.ranks[rank], clock, launch)
        if len(perf.steps) >= MIN_STEPS:
            found[rank] = perf
    return found


def pure_exposed(perfs: dict[int, RankPerf]) -> tuple[float, float, int]:
    """(median exposed seconds on the rank that arrived last, median step wall, steps judged).

    Per step, the smallest comm_exposed over the ranks is communication no rank could hide:
    the others' extra exposure is waiting for that last rank (a straggler's cost, DDP601)."""
    by_step: dict[int, list[StepSample]] = {}
    for perf in perfs.values():
        for sample in perf.steps:
            by_step.setdefault(sample.step, []).append(sample)
    common = [samples for samples in by_step.values() if len(samples) == len(perfs)]
    exposed = [min(s.phases["comm_exposed"] for s in samples) for samples in common]
    walls = [median([s.wall for s in samples]) for samples in common]
    return median(exposed), median(walls), len(common)


def exposed_spread(perfs: dict[int, RankPerf]) -> float:
    """The spread (see spread()) of the per-step exposed communication on the last rank."""
    by_step: dict[int, list[StepSample]] = {}
    for perf in perfs.values():
        for sample in perf.steps:
            by_step.setdefault(sample.step, []).append(sample)
    return spread([min(s.phases["comm_exposed"] for s in samples)
                   for samples in by_step.values() if len(samples) == len(perfs)])


def rounds_per_step(model: RunModel) -> float:
    """Median complete gradient all-reduces per optimizer step (more than 1 when gradient
    accumulation all-reduces every micro-step, DDP403)."""
    counts = [s.allreduce_rounds for run in model.ranks.values() for s in run.of(tm.Step)
              if s.step > WARMUP_STEPS]
    return median(counts) if counts and median(counts) > 0 else 1.0


def comm_shares_cores(model: RunModel) -> bool:
    """Whether gradient communication runs on the CPU cores that compute (gloo, or --cpu): then
    hiding it behind backward does not make it free, and each all-reduce it saves comes off the
    step whole. With NCCL it runs beside compute, and only what is exposed costs the step."""
    if model.meta.cpu:
        return True
    backend = model.backend.lower()  # the backends the ranks formed (RunModel.backend)
    return "gloo" in backend and "nccl" not in backend


def throughput(perfs: dict[int, RankPerf]) -> Optional[float]:
    """Samples per second of the whole job: every rank's own rate, added up."""
    rates = [p.samples_per_s for p in perfs.values()]
    if not rates or any(r is None for r in rates):
        return None
    return sum(rates)


def step_spread(perfs: dict[int, RankPerf]) -> float:
    """How much one step's time varies: the median over ranks of the spread of their step times."""
    return median([spread([s.wall for s in p.steps]) for p in perfs.values()]) if perfs else 0.0


def step_noise(perfs: dict[int, RankPerf]) -> float:
    """The uncertainty of the median step time: two standard errors of a median (1.2533 x
    spread / sqrt(steps)). A gain smaller than this is not evidence of anything."""
    if not perfs:
        return 0.0
    steps = min(len(p.steps) for p in perfs.values())
    return 2 * 1.2533 * step_spread(perfs) / math.sqrt(max(1, steps))


def step_time(perfs: dict[int, RankPerf]) -> float:
    """The median step wall time, median over ranks."""
    return median([p.median("step") for p in perfs.values()]) if perfs else 0.0
