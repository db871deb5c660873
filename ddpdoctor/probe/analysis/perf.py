"""The performance numbers of a probe run, derived once for the DDP6xx checks and the report.

A check and the table beside its finding quote the same numbers because both come from here.

Steps. Each rank's Step records carry seconds per step spent in: data (waiting for the loader),
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

Buckets. An all-reduce can run only once every rank has joined it, so its time counts from the
last rank's launch to the last rank's completion (wall clocks are comparable across ranks; a rank
that launched early waits for the others, which is a straggler's cost, not the network's). Within
one backward a bucket's time starts no earlier than the end of the bucket that finished before it
(a group's all-reduces share its connections); the iteration's busy time is the union of its
buckets' intervals. The in-job baseline is lined up across ranks the same way. Bandwidths as
nccl-tests defines them: algbw = bytes / time, busbw = algbw * 2(n-1)/n, in GB/s (1e9 B/s).

Clocks. Each rank records which clock its bucket times come from (tm.DeviceClock; see
inrank/device_timing.py): "cpu" (gloo on CPU tensors: the completion callback is the truth),
"cuda-events" (bucket times and the step phases forward, backward, comm_exposed, optimizer from
CUDA events on the device timeline, tm.DevicePhases; data, other and the step's wall time stay on
the CPU clock) or "none" (device time not measured: then no number here claims it, and the
checks that need it skip with the reason). A recording without DeviceClock records is gloo/CPU.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Optional

from ddpdoctor.probe import telemetry as tm
from ddpdoctor.probe.analysis.runmodel import RankRun, RunModel

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
GB = 1e9
CPU_CLOCK, CUDA_CLOCK, NO_CLOCK = "cpu", "cuda-events", "none"  # inrank/device_timing.py
DEVICE_PHASES = ("forward", "backward", "comm_exposed", "optimizer")  # tm.DevicePhases


@dataclass
class DeviceTime:
    """Which clock the run's durations come from, over every rank and DDP model: `comm` for
    the bucket times and the exposed communication, `compute` for forward, backward and the
    optimizer step ("cpu" | "cuda-events" | "none"), and why not, where not."""

    comm: str = CPU_CLOCK
    compute: str = CPU_CLOCK
    reason: str = ""

    @property
    def comm_measured(self) -> bool:
        return self.comm != NO_CLOCK

    @property
    def compute_measured(self) -> bool:
        return self.compute != NO_CLOCK

    def words(self) -> str:
        """The clock as the tables say it."""
        if not self.comm_measured:
            return self.reason or "device time not measured"
        return "device time: CUDA events" if self.comm == CUDA_CLOCK else "CPU clock (gloo)"


def device_time(model: RunModel) -> DeviceTime:
    """The run's DeviceTime: "none" as soon as any rank's model could not be timed (a verdict over
    ranks needs every rank's numbers), CUDA events where they timed it, else the CPU clock."""
    latest: dict[tuple[int, int], tm.DeviceClock] = {}
    for rank, run in model.ranks.items():
        for record in run.of(tm.DeviceClock):
            latest[(rank, record.ddp_id)] = record  # a later record (events failed) wins
    unmeasured = [c for c in latest.values() if c.clock == NO_CLOCK]
    if unmeasured:
        # On a CPU device forward, backward and the optimizer ran on the CPU clock itself.
        on_cpu = all(c.device == "cpu" for c in unmeasured)
        return DeviceTime(NO_CLOCK, CPU_CLOCK if on_cpu else NO_CLOCK,
                          unmeasured[0].reason or "device time not measured")
    if any(c.clock == CUDA_CLOCK for c in latest.values()):
        return DeviceTime(CUDA_CLOCK, CUDA_CLOCK)
    return DeviceTime()


def median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


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
    on the run's clock (device_time); `launch`: the CPU (launch) times, as recorded."""
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
    backends = {init.backend.lower() for run in model.ranks.values() for init in run.of(tm.Init)}
    backends = backends or {model.meta.backend.lower()}
    return any("gloo" in b for b in backends) and not any("nccl" in b for b in backends)


def throughput(perfs: dict[int, RankPerf]) -> Optional[float]:
    """Samples per second of the whole job: every rank's own rate, added up."""
    rates = [p.samples_per_s for p in perfs.values()]
    if not rates or any(r is None for r in rates):
        return None
    return sum(rates)


# -- buckets ---------------------------------------------------------------------------------

def bus_factor(world: int) -> float:
    """busbw / algbw for an all-reduce over `world` ranks (nccl-tests)."""
    return 2 * (world - 1) / world if world > 1 else 0.0


# -- what one all-reduce costs on this job's group -------------------------------------------

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


def call_cost(model: RunModel, ddp_id: int, buckets: list["BucketPerf"]) -> Optional[CallCost]:
    """The CallCost of one DDP model's group (see CallCost); None without any all-reduce timed."""
    times = _baseline_times(model, ddp_id)
    if any(size <= LATENCY_MAX_BYTES for size in times):
        return _fit({size: quantile(t, 0.25) for size, t in times.items()}, True)
    return _fit({b.nbytes: b.seconds for b in buckets if b.seconds > 0}, False)


@dataclass
class BucketPerf:
    """One gradient bucket of one DDP model, over the judged iterations."""

    ddp_id: int
    index: int
    nbytes: int
    params: list[str]
    count: int  # judged all-reduces
    seconds: float  # median all-reduce time (see the module doc)
    world: int
    baseline: Optional[float] = None  # median raw all-reduce time of the same size, same group

    @property
    def algbw(self) -> float:
        return self.nbytes / self.seconds / GB if self.seconds > 0 else 0.0

    @property
    def busbw(self) -> float:
        return self.algbw * bus_factor(self.world)

    @property
    def baseline_busbw(self) -> Optional[float]:
        if not self.baseline:
            return None
        return self.nbytes / self.baseline / GB * bus_factor(self.world)

    @property
    def efficiency(self) -> Optional[float]:
        """Bucket busbw / baseline busbw (1.0: as fast as a raw all-reduce of its size)."""
        return self.baseline / self.seconds if self.baseline and self.seconds > 0 else None


@dataclass
class ModelComm:
    """The gradient all-reduces of one DDP model, per judged backward iteration."""

    ddp_id: int
    world: int
    buckets: list[BucketPerf]
    iterations: int  # judged backward iterations
    buckets_per_iteration: float  # median
    bytes_per_iteration: int  # median
    busy_s: float  # median time per iteration with an all-reduce running
    bucket_cap_mb: Optional[float] = None  # as the script passed it (None: DDP's default)
    hooks: list[str] = field(default_factory=list)
    site: Optional[tm.Site] = None  # where the script built the DDP model
    cost: Optional[CallCost] = None  # what one all-reduce costs on its group (CallCost)
    busy_spread: float = 0.0  # robust standard deviation of the busy time per iteration
    static_graph: bool = False
    find_unused_parameters: bool = False
    gradient_as_bucket_view: bool = False
    shares_cores: bool = False  # communication competes with compute for the cores (gloo)
    clock: str = CPU_CLOCK  # DeviceTime.comm: "none" leaves every time here at 0, unmeasured
    clock_reason: str = ""

    @property
    def measured(self) -> bool:
        return self.clock != NO_CLOCK

    @property
    def slowdown(self) -> float:
        """How much longer the iteration's all-reduces take in training than raw ones of the
        same sizes in this job (contention with compute, waiting on peers): at least 1."""
        if self.cost is None or not self.buckets:
            return 1.0
        raw = sum(self.cost.seconds(b.nbytes) for b in self.buckets)
        return max(1.0, self.busy_s / raw) if raw > 0 else 1.0

    @property
    def calls(self) -> int:
        """All-reduces per backward."""
        return round(self.buckets_per_iteration)

    @property
    def last(self) -> BucketPerf:
        """The bucket all-reduced last in a backward (DDP launches them in index order)."""
        return max(self.buckets, key=lambda b: b.index)

    @property
    def typical_bytes(self) -> float:
        return median([b.nbytes for b in self.buckets])

    @property
    def baseline_s(self) -> Optional[float]:
        """What the iteration's all-reduces take at baseline speed, one after the other."""
        if not self.buckets or any(b.baseline is None for b in self.buckets):
            return None
        return sum(b.baseline for b in self.buckets)

    @property
    def largest(self) -> BucketPerf:
        return max(self.buckets, key=lambda b: b.nbytes)


def joined(starts: list[float], ends: list[float], durations: list[float]) -> tuple[float, float]:
    """(start, end) of one all-reduce over its ranks: from the last launch to the last completion,
    never shorter than the shortest rank's own interval (a guard against clock skew across nodes)."""
    start, end = max(starts), max(ends)
    return min(start, end - min(durations)), end


def _service_times(spans: dict[int, tuple[float, float]]) -> tuple[dict[int, float], float]:
    """Per bucket index: its all-reduce time within one iteration; and the iteration's busy time."""
    service: dict[int, float] = {}
    previous_end = float("-inf")
    for index, (start, end) in sorted(spans.items(), key=lambda kv: kv[1][1]):
        service[index] = max(0.0, end - max(start, previous_end))
        previous_end = end
    busy = 0.0
    span_start = span_end = None
    for start, end in sorted(spans.values()):
        if span_end is None or start > span_end:
            if span_end is not None:
                busy += span_end - span_start
            span_start, span_end = start, end
        else:
            span_end = max(span_end, end)
    if span_end is not None:
        busy += span_end - span_start
    return service, busy


def _baseline_times(model: RunModel, ddp_id: int) -> dict[int, list[float]]:
    """Raw all-reduce seconds per size, each timed all-reduce lined up across ranks."""
    per_size: dict[int, dict[int, tm.BaselineTiming]] = {}
    for rank, run in model.ranks.items():
        for record in run.of(tm.BaselineTiming):
            if record.ddp_id == ddp_id and record.times:
                per_size.setdefault(record.nbytes, {})[rank] = record
    found = {}
    for size, by_rank in per_size.items():
        records = list(by_rank.values())
        count = min(len(r.times) for r in records)
        if all(len(r.starts) >= count for r in records):
            times = []
            for i in range(count):
                start, end = joined([r.starts[i] for r in records],
                                     [r.starts[i] + r.times[i] for r in records],
                                     [r.times[i] for r in records])
                times.append(end - start)
        else:  # no start times recorded: the fastest rank's
            times = min((list(r.times) for r in records), key=median)
        found[size] = times
    return found


def _baselines(model: RunModel, ddp_id: int) -> dict[int, float]:
    """Median raw all-reduce seconds per size, each timed all-reduce lined up across ranks."""
    return {size: median(times) for size, times in _baseline_times(model, ddp_id).items()}


def quantile(values: list[float], q: float) -> float:
    """The q-quantile (nearest rank) of values; 0.0 for none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def model_comm(model: RunModel) -> list[ModelComm]:
    """Bucket numbers of every DDP model whose all-reduces were timed."""
    world = model.world_size
    infos: dict[int, tm.DDPInfo] = {}
    layouts: dict[tuple[int, int, int], list[str]] = {}
    # (ddp_id, iteration) -> bucket index -> every rank's timing of it
    iterations: dict[tuple[int, int], dict[int, list[tm.BucketTiming]]] = {}
    hooks: dict[int, set[str]] = {}
    for run in model.ranks.values():
        for info in run.of(tm.DDPInfo):
            infos.setdefault(info.ddp_id, info)
        for layout in run.of(tm.BucketLayout):
            layouts.setdefault((layout.ddp_id, layout.index, layout.nbytes), layout.params)
        for b in run.of(tm.BucketTiming):
            hooks.setdefault(b.ddp_id, set()).add(b.hook)
            if b.step < WARMUP_STEPS:
                continue
            iterations.setdefault((b.ddp_id, b.iteration), {}).setdefault(b.index, []).append(b)
    found = []
    shares_cores = comm_shares_cores(model)
    clock = device_time(model)
    for ddp_id in sorted({key[0] for key in iterations}):
        per_bucket: dict[tuple[int, int], list[float]] = {}
        busy, counts, totals = [], [], []  # per judged iteration
        for (did, _iteration), by_index in sorted(iterations.items()):
            if did != ddp_id:
                continue
            spans = {index: joined([b.start for b in timings], [b.end for b in timings],
                                    [b.end - b.start for b in timings])
                     for index, timings in by_index.items()}
            service, iteration_busy = _service_times(spans)
            for index, seconds in service.items():
                per_bucket.setdefault((index, by_index[index][0].nbytes), []).append(seconds)
            busy.append(iteration_busy)
            counts.append(len(by_index))
            totals.append(sum(timings[0].nbytes for timings in by_index.values()))
        baselines = _baselines(model, ddp_id)
        # One size per bucket index: the one most iterations had (the layout after the rebuild).
        chosen: dict[int, tuple[int, list[float]]] = {}
        for (index, nbytes), values in per_bucket.items():
            if index not in chosen or len(values) > len(chosen[index][1]):
                chosen[index] = (nbytes, values)
        measured = clock.comm_measured  # else: launch times, never passed on as all-reduce times
        buckets = [BucketPerf(ddp_id, index, nbytes, layouts.get((ddp_id, index, nbytes), []),
                              len(values), median(values) if measured else 0.0, world,
                              baselines.get(nbytes) if measured else None)
                   for index, (nbytes, values) in sorted(chosen.items())]
        info = infos.get(ddp_id)
        found.append(ModelComm(ddp_id, world, buckets, len(busy), median(counts),
                               int(median(totals)), median(busy) if measured else 0.0,
                               info.bucket_cap_mb if info else None, sorted(hooks.get(ddp_id, ())),
                               info.site if info else None,
                               call_cost(model, ddp_id, buckets) if measured else None,
                               spread(busy) if measured else 0.0, bool(info and info.static_graph),
                               bool(info and info.find_unused_parameters),
                               bool(info and info.gradient_as_bucket_view), shares_cores,
                               clock.comm, clock.reason))
    return found


# -- noise, and what a fix would buy ----------------------------------------------------------

def spread(values: list[float]) -> float:
    """A robust standard deviation: the interquartile range / 1.349 (one slow step, a garbage
    collection, another job's burst, moves it little; every other step slow counts in full)."""
    if len(values) < 4:
        return 0.0
    return (quantile(values, 0.75) - quantile(values, 0.25)) / 1.349


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


def matters(gain: float, step: float, share: float, noise: float) -> bool:
    """Whether a fix that saves `gain` seconds of a `step`-second step is worth a finding: at
    least `share` of the step, and more than the noise of a step (step_spread)."""
    return step > 0 and gain >= share * step and gain > noise


def estimate(seconds: float) -> str:
    """An estimated duration, with no more digits than it deserves: ~6 ms, ~41 ms, ~1.2 s."""
    value = seconds * 1e3
    if value >= 1000:
        return f"~{seconds:.2g} s" if seconds < 10 else f"~{seconds:.0f} s"
    if value >= 10:
        return f"~{value:.0f} ms"
    return f"~{value:.1f} ms".replace(".0 ms", " ms")


@dataclass
class WhatIf:
    """The step time a fix is expected to give, from the measured phases; and, after
    `probe --verify-fix`, the step time measured with the fix applied."""

    step_s: float  # measured, median
    after_s: float  # estimated
    change: str  # the fix, in words
    ddp_kwargs: dict = field(default_factory=dict)  # the DDP arguments --verify-fix can change
    measured_s: Optional[float] = None  # with --verify-fix
    verify_note: str = ""  # why it could not be verified

    def words(self) -> str:
        text = f"step {ms(self.step_s)} \u2192 {estimate(self.after_s)} (est.) {self.change}"
        if self.measured_s is not None:
            error = (self.measured_s - self.after_s) / self.measured_s if self.measured_s > 0 else 0.0
            text += f"; measured with the fix (--verify-fix): {ms(self.measured_s)} ({error:+.0%} against the estimate)"
        elif self.verify_note:
            text += f"; --verify-fix: {self.verify_note}"
        return text

    def evidence(self) -> dict:
        found = {"step_ms": round(self.step_s * 1e3, 3),
                 "estimated_step_ms": round(self.after_s * 1e3, 3), "fix": self.change}
        if self.ddp_kwargs:
            found["ddp_kwargs"] = dict(self.ddp_kwargs)
        if self.measured_s is not None:
            found["verified_step_ms"] = round(self.measured_s * 1e3, 3)
        return found


def what_if(model: RunModel, code: str, step_s: float, after_s: float, change: str,
            ddp_kwargs: Optional[dict] = None) -> WhatIf:
    """A WhatIf for finding `code`, with the step time --verify-fix measured for the same DDP
    arguments, when it ran (model.verified: run_model/verify.py)."""
    found = WhatIf(step_s, max(0.0, min(after_s, step_s)), change, dict(ddp_kwargs or {}))
    for result in model.verified or []:
        if result.code == code and result.ddp_kwargs == found.ddp_kwargs:
            if result.step_s is not None:
                found.measured_s = result.step_s
            else:
                found.verify_note = result.note
    return found


def megabytes(nbytes: float) -> str:
    """Bytes as a person reads them: 23 KB, 1.5 MB, 51 MB (decimal units, as nccl-tests)."""
    if nbytes < 1e6:
        return f"{nbytes / 1e3:.0f} KB" if nbytes >= 1e3 else f"{nbytes:.0f} B"
    return f"{nbytes / 1e6:.1f} MB" if nbytes < 1e7 else f"{nbytes / 1e6:.0f} MB"


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 0.1 else f"{seconds * 1e3:.0f} ms"
