"""Device time through the CLI: a backend whose all-reduce futures complete at enqueue (as
NCCL's do) is never reported at its enqueue time, and the checks built on bucket times skip."""

import json

import pytest

from tests.helpers.probe_runner import probe

pytestmark = pytest.mark.multiprocess

DELAY_MS = 20  # tests/scripts/enqueue_complete_backend.py: DELAY_S


def test_enqueue_time_is_not_reported_as_all_reduce_time(tmp_path):
    result = probe("tests/scripts/enqueue_complete_backend.py", run_dir=tmp_path / "run")
    assert result.code == 0, result.stderr
    records = [json.loads(line) for line in (tmp_path / "run" / "rank-0.jsonl").open()]
    [clock] = [r for r in records if r["kind"] == "device_clock"]
    assert (clock["clock"], clock["backend"], clock["device"]) == ("none", "enqueue_complete", "cpu")
    # What a CPU clock would have taken for the all-reduce: launch to callback, a fraction of the
    # DELAY_MS every one of them really took.
    buckets = [r for r in records if r["kind"] == "bucket"]
    callbacks = sorted((r["end"] - r["start"]) * 1e3 for r in buckets)
    assert len(buckets) >= 20 and callbacks[len(callbacks) // 2] < DELAY_MS / 2
    assert {r["clock"] for r in buckets} == {"none"}
    # ... and the report gives no such number.
    tables = {t["title"].split(":")[0]: t for t in result.report["tables"]}
    bucket_rows = tables["Gradient buckets"]["rows"]
    assert bucket_rows and all(row[3:] == ["not measured"] * 5 for row in bucket_rows)
    phases = tables["Step phases"]
    exposed = phases["columns"].index("exposed")
    assert all(row[exposed] == "not measured" for row in phases["rows"])
    metrics = result.report["metrics"]
    assert "comm_busy_ms" not in metrics and "exposed_comm_ms" not in metrics
    assert metrics["device_time"]["comm"] == "none"
    assert not any(r["kind"] == "baseline" for r in records)  # the baseline is timed alike: not at all
    checks = {c["code"]: c for c in result.report["checks"]}
    for code in ("DDP601", "DDP602", "DDP603", "DDP604"):
        assert checks[code]["status"] == "skipped", checks[code]
        assert "device time not measured" in checks[code]["reason"]
        assert "'enqueue_complete'" in checks[code]["reason"]
    assert not result.findings("DDP405")  # the backend reduced for real: the ranks agree


def test_gpu_selfcheck_says_in_one_line_that_there_is_no_gpu():
    import subprocess
    import sys

    import torch

    from tests.helpers.probe_runner import REPO

    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is here: tests/integration/test_gpu_timing.py runs the self-check")
    done = subprocess.run([sys.executable, "benchmarks/gpu_selfcheck.py"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0
    assert done.stdout.count("\n") == 1 and "no CUDA GPU" in done.stdout
