"""The performance examples through the CLI: each slow job named by the right code and rank, the
healthy one clean, --scaling and --trace end to end. Not timing tests: each example makes its
effect 10x or more, so the verdicts hold on a loaded machine."""

import json

import pytest

from tests.helpers.probe_runner import probe, run_example

# Timing verdicts: run alone (`-m serial`, the README's second pytest), never beside other tests.
pytestmark = [pytest.mark.multiprocess, pytest.mark.serial]

PERF_CODES = {"DDP601", "DDP602", "DDP603", "DDP604", "DDP605", "DDP606"}


def judged(result) -> set[str]:
    """The performance codes reported as verdicts. A measurement within the noise of its
    threshold is an info finding marked borderline (docs/verdicts.md), never a verdict: it is
    checked to be exactly that, and left out."""
    borderline = [f for f in result.report["findings"]
                  if f["code"] in PERF_CODES and (f["evidence"] or {}).get("borderline")]
    for finding in borderline:
        assert finding["severity"] == "info" and finding["message"].startswith("borderline")
        assert {"margin", "margin_ms", "threshold_ms", "noise_ms"} <= set(finding["evidence"])
    return {f["code"] for f in result.report["findings"]
            if f["code"] in PERF_CODES and f not in borderline}


def table(result, prefix):
    return next(t for t in result.report["tables"] if t["title"].startswith(prefix))


def test_straggler_rank_is_named_with_its_slow_phase(tmp_path):
    result = run_example("straggler", tmp_path)
    finding = result.one("DDP601")
    assert finding["ranks"] == [1]
    assert finding["evidence"]["phase"] == "forward"
    assert "rank 1 works" in finding["message"] and "rank 0 waits" in finding["message"]
    assert judged(result) == {"DDP601"}
    assert result.code == 0  # a warning: passes the default --fail-on error


def test_tiny_buckets_get_a_bucket_cap_suggestion(tmp_path):
    result = run_example("tiny_buckets", tmp_path)
    finding = result.one("DDP603")
    assert finding["ranks"] == [0, 1]
    assert finding["evidence"]["bucket_cap_mb"] == 0.01
    assert finding["evidence"]["suggested_bucket_cap_mb"] == 1
    assert "bucket_cap_mb=1" in finding["hint"]
    assert finding["location"]["file"] == "examples/tiny_buckets.py"
    assert finding["evidence"]["buckets_per_iteration"] >= 40
    assert not result.findings("DDP601") and not result.findings("DDP602")
    # The estimate of the step with the suggested cap, from the measured phases.
    assert finding["evidence"]["estimated_step_ms"] < finding["evidence"]["step_ms"]
    assert "(est.) with bucket_cap_mb=1" in finding["message"]
    assert finding["evidence"]["knee_bytes"] > finding["evidence"]["median_bucket_bytes"]


def test_communication_bound_job_is_reported_with_bucket_table_and_trace(tmp_path):
    trace_path = tmp_path / "trace.json"
    result = run_example("comm_bound", tmp_path, "--trace", str(trace_path))
    finding = result.one("DDP604")
    assert finding["ranks"] == [0, 1]
    assert finding["evidence"]["share"] >= 0.2
    # no other performance verdict; DDP604 itself may come back borderline (info) where a busy
    # machine widens the noise of the timings past the margin (seen with a lint benchmark
    # running beside the suite): the finding is there either way, its verdict is the noise's call
    assert judged(result) <= {"DDP604"}
    buckets = table(result, "Gradient buckets")
    assert buckets["columns"] == ["bucket", "MB", "params", "ms", "algbw", "busbw", "baseline", "eff"]
    [row] = buckets["rows"]
    assert row[1] == "51.201"
    # the baseline was measured in the job, or (a loaded machine's all-reduces past its budget)
    # the report says why its cell is empty
    assert row[6] != "" or any("budget ran out" in n for n in result.report["notes"]), \
        result.report["notes"]
    phases = table(result, "Step phases")
    assert [r[0] for r in phases["rows"]] == [0, 1]
    events = json.loads(trace_path.read_text())["traceEvents"]
    processes = {e["pid"]: e["args"]["name"].split(" (")[0] for e in events if e["name"] == "process_name"}
    assert processes == {0: "rank 0", 1: "rank 1"}
    slices = [e for e in events if e.get("cat") == "allreduce"]
    assert len(slices) >= 2 * 20 and all(s["args"]["bytes"] == 51200780 for s in slices)


def test_input_bound_job_is_reported_on_every_rank(tmp_path):
    result = run_example("input_bound", tmp_path)
    finding = result.one("DDP605")
    assert finding["ranks"] == [0, 1]
    assert "num_workers=0" in finding["message"]
    assert finding["location"]["file"] == "examples/input_bound.py"
    assert judged(result) == {"DDP605"}


@pytest.fixture(scope="module")
def healthy_scaled(tmp_path_factory):
    """healthy.py probed with --scaling 1,2: the main run is the plain 2-rank probe (scaling
    reuses it as ws-2) plus a 1-rank one. Two tests read it: one probe pair, not three runs."""
    return run_example("healthy", tmp_path_factory.mktemp("healthy"), "--scaling", "1,2")


def test_healthy_example_has_no_perf_findings_and_scales_in_a_table(healthy_scaled):
    result = healthy_scaled
    assert result.code == 0
    # Healthy stays clean: not even a borderline note (a band only above the threshold).
    assert not result.codes & (PERF_CODES - {"DDP606"})
    assert all(f["severity"] == "info" for f in result.findings("DDP606"))
    scaled = table(result, "Scaling")
    assert [row[0] for row in scaled["rows"]] == [1, 2]
    assert [p["world_size"] for p in result.report["metrics"]["scaling"]] == [1, 2]
    assert (result.run_dir / "scaling" / "ws-1" / "report.json").exists()


@pytest.fixture(scope="module")
def small_buckets_verified(tmp_path_factory):
    """small_buckets.py probed with --verify-fix: its main run is the plain probe (the rerun with
    the fix has a run dir of its own, verify/0). Two tests read it."""
    return run_example("small_buckets", tmp_path_factory.mktemp("small_buckets"), "--verify-fix")


def test_a_few_latency_bound_buckets_of_a_small_model_are_reported(small_buckets_verified):
    # Four ~17 KB buckets: a few milliseconds, but a large share of a small model's step.
    result = small_buckets_verified
    finding = result.one("DDP603")
    assert finding["evidence"]["buckets_per_iteration"] == 4
    assert finding["evidence"]["buckets_after"] == 1
    assert finding["evidence"]["ddp_kwargs"] == {"bucket_cap_mb": 1}
    assert finding["location"]["file"] == "examples/small_buckets.py"
    assert not result.findings("DDP602")


def test_a_script_that_ends_by_itself_still_gets_the_in_job_baseline(healthy_scaled):
    # healthy.py returns after 15 steps, below --max-steps: the baseline comes from step 4.
    result = healthy_scaled  # its main run: the plain 2-rank probe
    assert result.report["metrics"]["steps"] < 20
    bandwidth = next(c for c in result.report["checks"] if c["code"] == "DDP602")
    assert bandwidth["status"] == "passed", bandwidth
    assert result.report["metrics"]["allreduce_latency_ms"] > 0
    sizes = {json.loads(line)["nbytes"] for line in (result.run_dir / "rank-0.jsonl").open()
             if '"kind":"baseline"' in line}
    assert 4 in sizes and 23056 in sizes  # the latency point and the one bucket
    # DDP606 (scaling) is judged only because this run has --scaling: the test above checks it.
    assert not result.codes & (PERF_CODES - {"DDP606"})


def test_verify_fix_reruns_with_the_suggested_bucket_cap_and_measures_it(small_buckets_verified):
    result = small_buckets_verified
    finding = result.one("DDP603")
    verified = {v["code"]: v for v in result.report["metrics"]["verify_fix"]}
    rerun = verified["DDP603"]
    assert rerun["ddp_kwargs"] == {"bucket_cap_mb": 1} and rerun["run_dir"] == "verify/0"
    assert finding["evidence"]["verified_step_ms"] == rerun["step_ms"]
    assert "measured with the fix (--verify-fix)" in finding["message"]
    # The rerun ran the unchanged script with one bucket, and says so.
    sub = json.loads((result.run_dir / "verify" / "0" / "report.json").read_text())
    assert sub["metrics"]["buckets_per_backward"] == 1
    assert any("--verify-fix: DDP built with bucket_cap_mb=1 (the script: 0.01)" in n for n in sub["notes"])
    # (both steps measured; which is faster by a few milliseconds is the machine's load as much
    # as the fix's: as a timed assertion it failed once on a 2-core machine, 22.2 ms against
    # 19.4 ms. The run reports the two numbers, the Fix verification table shows them; a test
    # does not pin which wins)
    assert rerun["step_ms"] > 0 and finding["evidence"]["step_ms"] > 0
    table = table_of(result, "Fix verification")
    assert table["rows"][0][:2] == ["DDP603", "bucket_cap_mb=1"]


def table_of(result, prefix):
    return next(t for t in result.report["tables"] if t["title"].startswith(prefix))


def test_regression_gate_fails_a_slowed_run_and_judges_a_rerun(tmp_path):
    # The baseline: the small model with one bucket (bucket_cap_mb=1, as the fix suggests).
    good = probe("examples/small_buckets.py", run_dir=tmp_path / "good", args=["1"])
    baseline = tmp_path / "good.json"
    assert good.code == 0 and good.report["metrics"]["allreduce_calls_per_step"] == 1
    again = probe("examples/small_buckets.py", "--baseline", str(baseline), run_dir=tmp_path / "again",
                  args=["1"])
    # A rerun of the same job: the counts and bytes are the same, so the gate judged it and
    # found nothing there. Whether its times stay within the two runs' noise is statistics on a
    # shared machine: the unit tests (tests/unit/checks/probe/test_regression.py) pin it on
    # fixed runs, benchmarks/verdict_stability.py measures it.
    gate = next(c for c in again.report["checks"] if c["code"] == "DDP607")
    assert gate["status"] in ("passed", "failed"), gate
    assert not {f["evidence"]["metric"] for f in again.findings("DDP607")} & {
        "allreduce_calls_per_step", "allreduce_bytes_per_step"}
    assert again.code == (1 if again.findings("DDP607") else 0)
    assert table_of(again, "Against the baseline")["rows"]
    # Slowed: back to bucket_cap_mb=0.01, four all-reduces per backward.
    slowed = probe("examples/small_buckets.py", "--baseline", str(baseline), run_dir=tmp_path / "slowed")
    assert slowed.code == 1
    metrics = {f["evidence"]["metric"] for f in slowed.findings("DDP607")}
    assert "allreduce_calls_per_step" in metrics
    assert all(f["severity"] == "error" for f in slowed.findings("DDP607"))
