"""What the tables and the DDP60x checks make of each clock a duration comes from (cpu /
cuda-events / none), fed telemetry built the way ranks write it. How the ranks decide the clock and
read CUDA events (probe/inrank/device_timing.py imports torch): tests/integration/
test_inrank_with_torch.py."""

from __future__ import annotations

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.analysis import perf, perf_tables
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
