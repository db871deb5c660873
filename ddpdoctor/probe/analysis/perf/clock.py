"""Which clock a run's durations come from (CPU, CUDA events, or not measured), over every rank.

Each rank records which clock its bucket times come from (tm.DeviceClock; see
inrank/device_timing.py): "cpu" (gloo on CPU tensors: the completion callback is the truth),
"cuda-events" (bucket times and the step phases forward, backward, comm_exposed, optimizer from
CUDA events on the device timeline, tm.DevicePhases; data, other and the step's wall time stay on
the CPU clock) or "none" (device time not measured: then no number claims it, and the checks that
need it skip with the reason). A recording without DeviceClock records is gloo/CPU.
"""

from __future__ import annotations

from dataclasses import dataclass

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.run_model.loaded_run import RunModel

CPU_CLOCK, CUDA_CLOCK, NO_CLOCK = "cpu", "cuda-events", "none"  # inrank/device_timing.py


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


def comm_unjudged(model: RunModel) -> str:
    """Why the run's all-reduce times cannot be judged, "" when they can: the DDP6xx checks of
    communication skip with it. One rank communicates with nobody; launch times are not
    all-reduce times, so where the device's clock was not read, nothing is judged on them."""
    if model.world_size < 2:
        return "a single rank communicates with nobody"
    clock = device_time(model)
    return "" if clock.comm_measured else clock.reason
