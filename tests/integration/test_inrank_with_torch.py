"""In-rank code over real torch objects, in this process: how a rank decides its clock and reads
CUDA events (probe/inrank/device_timing.py), its 64-bit torch seed on the wire, its random states,
when it measures the baseline and whether a bucket lies near the knee (probe/inrank/baseline.py).
No job is launched, but importing torch costs ~3 s of CPU, more than most unit test files, so the
quick tier (tests/unit) never imports it: its conftest fails a unit test that does."""

from __future__ import annotations

import collections
import json
import threading

import pytest
import torch

from ddpdoctor.probe.analysis import perf
from ddpdoctor.probe.inrank import baseline, device_timing
from ddpdoctor.probe.launch import node_wire as wire
from ddpdoctor.probe.records import telemetry as tm
from tests.unit.checks.probe.perf_runs import BANDWIDTH_POINT, KB, LATENCY, MB


def test_the_clock_is_decided_from_the_backend_and_the_device():
    cpu, cuda = torch.device("cpu"), torch.device("cuda", 0)
    assert device_timing.decide("gloo", cpu) == ("cpu", "")
    assert device_timing.decide("nccl", cuda) == ("cuda-events", "")
    assert device_timing.decide("gloo", cuda) == ("cuda-events", "")
    clock, reason = device_timing.decide("enqueue_complete", cpu)
    assert clock == "none" and "'enqueue_complete'" in reason and "enqueued" in reason
    assert device_timing.decide("ucc", cuda)[0] == "none"
    assert device_timing.decide("gloo", torch.device("meta"))[0] == "none"


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


def test_a_worker_seed_record_with_torchs_64_bit_seed_crosses_the_wire():
    """torch.initial_seed() is 64 bits, beyond a relayed int: a real worker's record must still
    reach node 0 (it was dropped, and node 1 with it, in every two-node probe with a DataLoader)."""
    from ddpdoctor.probe.inrank.worker_seeds import _initial_seed

    saved = torch.get_rng_state()
    try:
        torch.manual_seed(2 ** 63 + 12345)
        record = tm.WorkerSeed(1.0, 0, 0, 1, 2, _initial_seed(), {"torch": "ab" * 8}, {"torch": "cd" * 8},
                               "seed_fn")
    finally:
        torch.set_rng_state(saved)
    lines, _ = wire.check_records(tm.encode(record).decode(), 3, 4)
    assert json.loads(lines)["torch_seed"] == f"{2 ** 63 + 12345:x}"


def test_the_recorded_state_is_the_same_for_the_same_seeds_and_moves_with_a_draw():
    import random

    import numpy as np

    from ddpdoctor.probe.inrank.worker_seeds import rng_states

    saved = (random.getstate(), np.random.get_state(), torch.get_rng_state())
    try:
        def seeded() -> dict:
            random.seed(7)
            np.random.seed(7)
            torch.manual_seed(7)
            return rng_states()

        first = seeded()
        assert set(first) == {"torch", "numpy", "random"} and seeded() == first
        random.random()
        np.random.rand()
        torch.rand(1)
        moved = rng_states()
        assert all(moved[name] != first[name] for name in first)
    finally:
        random.setstate(saved[0])
        np.random.set_state(saved[1])
        torch.set_rng_state(saved[2])


def test_the_in_job_baseline_is_measured_after_the_first_judged_step():
    assert baseline.AT_STEP == perf.BASELINE_STEP == perf.WARMUP_STEPS + 1


def test_buckets_near_the_knee_get_the_baseline_measured_again_and_the_rest_do_not():
    # This machine's gloo (LATENCY, BANDWIDTH_POINT): the knee is about 420 KB, as cost_fit fits it.
    measured = {4: [LATENCY] * 8, BANDWIDTH_POINT[0]: [BANDWIDTH_POINT[1]] * 8}
    fitted = perf.CallCost(LATENCY, BANDWIDTH_POINT[0] / (BANDWIDTH_POINT[1] - LATENCY))
    assert baseline.knee(measured) == pytest.approx(fitted.knee_bytes)
    assert baseline.near_knee(measured, [300 * KB, 300 * KB])  # DDP603/604 decide by luck there
    assert not baseline.near_knee(measured, [17 * KB] * 4)  # small_buckets.py: far below it
    assert not baseline.near_knee(measured, [25 * MB])  # far above it
    # Only sizes below 1 MiB measured: no bandwidth point, no knee to be near.
    assert not baseline.near_knee({4: [LATENCY] * 8, 300 * KB: [0.001] * 8}, [300 * KB])


def test_the_overrides_file_name_is_the_one_the_ranks_read():
    import inspect as inspect_module

    from ddpdoctor.probe import driver
    from ddpdoctor.probe.records import rundir
    from ddpdoctor.probe.inrank import ddp

    assert ddp.OVERRIDES_FILE == rundir.DDP_OVERRIDES_FILE
    assert "DDP_OVERRIDES_FILE" in inspect_module.getsource(driver._store_perf_inputs)
