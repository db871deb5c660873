"""The gradient buckets of every DDP model: each bucket's all-reduce time and bandwidth over the
judged iterations, against the in-job baseline. Bandwidths as nccl-tests defines them:
algbw = bytes / time, busbw = algbw * 2(n-1)/n, in GB/s (1e9 B/s)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ddpdoctor.core.torch_names import GB, bus_factor  # perf/ re-exports them as the analysis reads them
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.analysis.perf.clock import CPU_CLOCK, NO_CLOCK, comm_unjudged, device_time
from ddpdoctor.probe.analysis.perf.cost_fit import CallCost, baseline_medians, call_cost
from ddpdoctor.probe.analysis.perf.spans import joined, service_times
from ddpdoctor.probe.analysis.perf.stats import median, spread
from ddpdoctor.probe.analysis.perf.steps import WARMUP_STEPS, comm_shares_cores
from ddpdoctor.probe.run_model.loaded_run import RunModel


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


def bucket_comms(model: RunModel) -> tuple[list[ModelComm], str]:
    """The DDP models whose bucket all-reduces were timed, and why none can be judged ("" when
    some can): what DDP602 and DDP603 start from."""
    unjudged = comm_unjudged(model)
    if unjudged:
        return [], unjudged
    comms = [c for c in model_comm(model) if c.buckets]
    return comms, "" if comms else "no timed bucket all-reduces after the first steps"


def model_comm(model: RunModel) -> list[ModelComm]:
    """Bucket numbers of every DDP model whose all-reduces were timed. Computed once per run
    (four checks and the tables ask): the ModelComms are shared, never changed."""
    return list(model.derived_once("model_comm", model.launch_key(), lambda: _model_comm(model)))


def _model_comm(model: RunModel) -> list[ModelComm]:
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
            service, iteration_busy = service_times(spans)
            for index, seconds in service.items():
                per_bucket.setdefault((index, by_index[index][0].nbytes), []).append(seconds)
            busy.append(iteration_busy)
            counts.append(len(by_index))
            totals.append(sum(timings[0].nbytes for timings in by_index.values()))
        baselines = baseline_medians(model, ddp_id)
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
        timed = {b.nbytes: b.seconds for b in buckets if b.seconds > 0}  # the fit without a baseline
        found.append(ModelComm(ddp_id, world, buckets, len(busy), median(counts),
                               int(median(totals)), median(busy) if measured else 0.0,
                               info.bucket_cap_mb if info else None, sorted(hooks.get(ddp_id, ())),
                               info.site if info else None,
                               call_cost(model, ddp_id, timed) if measured else None,
                               spread(busy) if measured else 0.0, bool(info and info.static_graph),
                               bool(info and info.find_unused_parameters),
                               bool(info and info.gradient_as_bucket_view), shares_cores,
                               clock.comm, clock.reason))
    return found
