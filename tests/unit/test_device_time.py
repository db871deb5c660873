"""Which clock a duration comes from (cpu / cuda-events / none), and what the tables and the
DDP60x checks make of it, fed telemetry built the way ranks write it."""

from __future__ import annotations

import collections
import threading

import torch

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.analysis import perf, perf_tables
from ddpdoctor.probe.inrank import device_timing
from ddpdoctor.core.registry import Skipped
from tests.helpers.telemetry_builders import SITE_DDP, RunBuilder, judge

NOT_MEASURED = "device time not measured: the process group's backend 'custom' is not one ..."


def run_with(clock: str, device: str = "cpu", steps: int = 20, cpu_exposed: float = 0.0,
             device_phases: dict | None = None, bucket_s: float = 0.0002, downgrade: bool = False):
    """Two ranks, one 4 MB bucket per step, each step 10 ms of CPU wall; DeviceClock `clock`
    ("" writes none, as a recording from before clocks were recorded)."""
    run = RunBuilder(world_size=2)
    for rank in range(2):
        b = run[rank]
        b.add(tm.DDPInfo(b.t, 0, False, False, False, None, None, ["w", "b"], 4_000_000, SITE_DDP))
        if clock:
            b.add(tm.DeviceClock(b.t, 0, clock, "custom" if clock == "none" else "nccl", device,
                                 NOT_MEASURED if clock == "none" else ""))
        if downgrade:
            b.add(tm.DeviceClock(b.t, 0, "none", "", device,
                                 "device time not measured: reading CUDA events failed (RuntimeError)"))
        b.add(tm.BucketLayout(b.t, 0, 0, ["w", "b"], 4_000_000))
        b.loader()
        t = b.t + 1.0
        for i in range(steps):
            start = t
            t += 0.008
            b.add(tm.BucketTiming(t + bucket_s, 0, 0, 4_000_000, t, t + bucket_s, i, i, True,
                                  "default", clock or "cpu"))
            t += 0.002
            phases = {"data": 0.001, "forward": 0.002, "backward": 0.004, "optimizer": 0.001,
                      "samples": 32}
            if cpu_exposed:
                phases["comm_exposed"] = cpu_exposed
            if i:
                phases["step"] = t - start
            b.add(tm.Step(t, i + 1, 1, 1, phases))
            if device_phases is not None:
                b.add(tm.DevicePhases(t + 0.001, i + 1, dict(device_phases)))
        b.end()
    run.outcome("completed")
    return run.model()


def table(model, prefix):
    return next(t for t in perf_tables.tables(model) if t.title.startswith(prefix))


def test_the_clock_is_decided_from_the_backend_and_the_device():
    cpu, cuda = torch.device("cpu"), torch.device("cuda", 0)
    assert device_timing.decide("gloo", cpu) == ("cpu", "")
    assert device_timing.decide("nccl", cuda) == ("cuda-events", "")
    assert device_timing.decide("gloo", cuda) == ("cuda-events", "")
    clock, reason = device_timing.decide("enqueue_complete", cpu)
    assert clock == "none" and "'enqueue_complete'" in reason and "enqueued" in reason
    assert device_timing.decide("ucc", cuda)[0] == "none"
    assert device_timing.decide("gloo", torch.device("meta"))[0] == "none"


def test_unmeasured_device_time_skips_ddp601_to_604_with_the_reason():
    model = run_with("none")
    for code in ("DDP601", "DDP602", "DDP603", "DDP604"):
        result = judge(code, model)
        assert isinstance(result, Skipped) and result.reason.startswith("device time not measured"), code
    assert not isinstance(judge("DDP605", model), Skipped)  # waiting for data is a CPU fact


def test_unmeasured_buckets_and_exposed_communication_are_said_so_never_given_a_number():
    model = run_with("none")
    buckets = table(model, "Gradient buckets")
    assert NOT_MEASURED in buckets.title
    assert buckets.rows == [[0, "4.000", 2] + ["not measured"] * 5]
    phases = table(model, "Step phases")
    exposed, other = phases.columns.index("exposed"), phases.columns.index("other")
    assert all(row[exposed] == "not measured" and row[other] == "" for row in phases.rows)
    assert all(row[phases.columns.index("bwd")] == "4.0" for row in phases.rows)  # CPU tensors: CPU time
    numbers = perf_tables.metrics(model)
    assert numbers["device_time"]["comm"] == "none"
    assert "comm_busy_ms" not in numbers and "exposed_comm_ms" not in numbers
    assert all(b["ms"] is None and b["busbw"] is None for b in numbers["buckets"])
    assert numbers["allreduce_calls_per_step"] == 1  # counts are facts whatever the clock


def test_cuda_events_replace_the_launch_times_and_the_launch_times_stay_labelled():
    # The CPU saw no exposed communication (the future completed at enqueue); the device saw 6 ms.
    device = {"forward": 0.0015, "backward": 0.0025, "comm_exposed": 0.006, "optimizer": 0.0003}
    model = run_with("cuda-events", "cuda:0", device_phases=device, bucket_s=0.008)
    phases = table(model, "Step phases:")
    assert "CUDA events" in phases.title
    assert phases.rows[0][1:6] == ["1.0", "1.5", "2.5", "6.0", "0.3"]
    launch = table(model, "Step phases, CPU (launch) time")
    assert launch.rows[0][1:6] == ["1.0", "2.0", "4.0", "0.0", "1.0"]
    assert "CUDA events" in table(model, "Gradient buckets").title
    finding = judge("DDP604", model)
    assert finding and finding[0].evidence["exposed_ms"] == 6.0


def test_cuda_steps_whose_device_times_never_completed_are_not_judged():
    model = run_with("cuda-events", "cuda:0", device_phases=None)
    assert perf.step_perf(model) == {}
    assert isinstance(judge("DDP604", model), Skipped)


def test_events_failing_later_turn_the_run_to_not_measured():
    model = run_with("cuda-events", "cuda:0", device_phases={"forward": 0.001}, downgrade=True)
    clock = perf.device_time(model)
    assert clock.comm == "none" and clock.compute == "none"  # on a GPU, CPU times are launches
    assert "CUDA events failed" in clock.reason
    phases = table(model, "Step phases:")
    assert phases.rows[0][2:6] == ["not measured"] * 4
    assert isinstance(judge("DDP601", model), Skipped)


def test_a_recording_without_clocks_is_gloo_on_cpu_and_reads_as_before():
    model = run_with("", cpu_exposed=0.0001)
    assert perf.device_time(model) == perf.DeviceTime()
    numbers = perf_tables.metrics(model)
    assert "device_time" not in numbers and numbers["comm_busy_ms"] > 0
    assert not any(t.title.startswith("Step phases, CPU (launch)") for t in perf_tables.tables(model))


# The CUDA bookkeeping with stand-in events (this machine has no GPU; tests/integration/
# test_gpu_timing.py runs the real ones): an event knows when the "device" ran it.

class Event:
    def __init__(self, at: float, done: bool = True, broken: bool = False):
        self.at, self.done, self.broken = at, done, broken

    def query(self) -> bool:
        if self.broken:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        return self.done

    def elapsed_time(self, other: "Event") -> float:
        return (other.at - self.at) * 1e3


def stand_in_timer(times: list[float]) -> device_timing.DeviceTimer:
    timer = device_timing.DeviceTimer.__new__(device_timing.DeviceTimer)
    # The real constructor anchors on a GPU: set what it would have set.
    timer.device, timer.failed, timer.dropped = torch.device("cuda", 0), "", 0
    timer._pending, timer._lock = collections.deque(), threading.Lock()
    timer.anchor_event, timer.anchor_wall = Event(0.0), 1000.0
    ticks = iter(times)
    timer.record = lambda: Event(next(ticks))
    return timer


def recorded(tmp_path, action):
    from ddpdoctor.probe.inrank import recorder

    before = recorder._recorder
    recorder.set_recorder(recorder.Recorder(str(tmp_path / "rank-0.jsonl")))
    try:
        action()
    finally:
        recorder.set_recorder(before)
    return tm.read_records(tmp_path / "rank-0.jsonl")


def test_device_phases_come_from_the_events_of_the_step(tmp_path):
    # forward 0-2 ms; buckets launched at 5 and 7 ms (7: the last, every gradient ready), their
    # all-reduces ending at 9 and 12 ms; optimizer 13-14 ms. Device seconds on the anchor's clock.
    timer = stand_in_timer([0.000, 0.002, 0.005, 0.009, 0.007, 0.012, 0.013, 0.014])
    timeline = device_timing.StepTimeline()

    def step():
        timeline.attach(timer)
        timeline.forward_start()
        timeline.forward_end()
        first = timer.record(), timer.record()
        timeline.bucket(*first, is_last=False)
        last = timer.record(), timer.record()
        timeline.bucket(*last, is_last=True)
        timeline.optimizer_start()
        timeline.close(7)
        assert timer.poll() == 0

    [record] = [r for r in recorded(tmp_path, step) if isinstance(r, tm.DevicePhases)]
    assert record.step == 7
    assert {k: round(v * 1e3, 3) for k, v in record.phases.items()} == {
        "forward": 2.0, "backward": 5.0, "comm_exposed": 5.0, "optimizer": 1.0}


def test_pending_events_wait_in_order_and_a_failing_event_turns_timing_off(tmp_path):
    timer = stand_in_timer([])
    walls = []
    late = Event(0.003, done=False)
    timer.later([Event(0.001), late], walls.append)
    timer.later([Event(0.004), Event(0.005)], walls.append)
    assert timer.poll() == 2 and walls == []  # the first is not done: nothing after it either
    late.done = True
    assert timer.poll() == 0
    assert [[round(w - 1000, 3) for w in pair] for pair in walls] == [[0.001, 0.003], [0.004, 0.005]]
    timer.later([Event(0.006, broken=True)], walls.append)
    assert timer.poll() == 0 and len(walls) == 2
    assert timer.failed.startswith("reading CUDA events failed (RuntimeError")
    timer.later([Event(0.007)], walls.append)  # once failed: nothing more is queued
    assert timer.poll() == 0 and len(walls) == 2
