"""Device timing on a real GPU: CUDA events for the buckets, the step phases and their anchor
on the wall clock. Marked `gpu`: skipped on a machine without a CUDA GPU."""

import json
import time

import pytest
import torch

from tests.helpers.probe_runner import probe

pytestmark = [pytest.mark.gpu, pytest.mark.multiprocess,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def test_device_timer_resolves_events_off_the_hot_path_onto_the_wall_clock():
    from ddpdoctor.probe.inrank import device_timing

    device = torch.device("cuda", 0)
    timer = device_timing.DeviceTimer(device)
    assert not timer.failed
    a = torch.randn(4096, 4096, device=device)
    before = time.time()
    start = timer.record()
    for _ in range(20):
        a = a @ a / 64  # device work the CPU does not wait for
    end = timer.record()
    found = []
    timer.later([start, end], found.append)
    assert timer.poll() in (0, 1)  # a query, no waiting
    timer.poll(time.time() + 30)
    [(begin, finish)] = found
    assert before - 0.01 <= begin < finish <= time.time() + 0.01
    assert finish - begin > 0.0005  # 20 matmuls of 4096^2: the device's time, not the launch's


def test_probe_on_nccl_times_buckets_and_phases_with_cuda_events(tmp_path):
    gpus = min(torch.cuda.device_count(), 2)
    result = probe("benchmarks/gpu_selfcheck.py", "--nproc-per-node", str(gpus), "--max-steps", "0",
                   "--steps-per-epoch", "0", run_dir=tmp_path / "run",
                   args=["--role", "train", "--steps", "30", "--out", str(tmp_path / "steps")])
    records = [json.loads(line) for line in (tmp_path / "run" / "rank-0.jsonl").open()]
    [clock] = [r for r in records if r["kind"] == "device_clock"]
    assert (clock["clock"], clock["backend"], clock["device"]) == ("cuda-events", "nccl", "cuda:0")
    buckets = [r for r in records if r["kind"] == "bucket"]
    assert buckets and {r["clock"] for r in buckets} == {"cuda-events"}
    assert all(r["end"] >= r["start"] for r in buckets)
    phases = [r for r in records if r["kind"] == "device_phases"]
    assert len(phases) >= 25 and all(p["phases"]["backward"] > 0 for p in phases[5:])
    titles = [t["title"] for t in result.report["tables"]]
    assert any(t.startswith("Step phases, CPU (launch) time") for t in titles)
    assert any("CUDA events" in t for t in titles if t.startswith("Gradient buckets"))
    assert result.report["metrics"]["device_time"]["comm"] == "cuda-events"


def test_gpu_selfcheck_passes_its_sanity_checks(tmp_path):
    import subprocess
    import sys

    from tests.helpers.probe_runner import REPO

    done = subprocess.run([sys.executable, "benchmarks/gpu_selfcheck.py", "--steps", "40",
                           "--json", str(tmp_path / "figures.json")], cwd=REPO,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "all sanity checks passed" in done.stdout
