"""The performance checks (DDP601-DDP606), the numbers behind them, the tables and the trace,
fed telemetry built the way ranks write it."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Optional

import pytest

from ddpdoctor.core.errors import UsageError
from ddpdoctor.core.findings import Severity
from ddpdoctor.probe.analysis import perf
from ddpdoctor.probe.analysis import perf_tables
from ddpdoctor.probe.analysis import scaling
from ddpdoctor.probe.launch import scaling as scaling_runs
from ddpdoctor.probe import telemetry as tm
from ddpdoctor.probe.analysis.runmodel import RunModel
from ddpdoctor.core.registry import Skipped
from ddpdoctor.probe import trace
from telemetry_builders import SITE_DDP, RunBuilder, judge, site

KB, MB = 1000, 1_000_000


@dataclass
class Rank:
    """How one rank spends each step (seconds), for `perf_run`."""

    data: float = 0.001
    forward: float = 0.002
    backward: float = 0.003
    optimizer: float = 0.001
    other: float = 0.0
    wait: float = 0.0  # waiting for a slower rank inside the gradient all-reduce
    hidden: float = 0.0  # bucket time overlapped with backward
    jitter: float = 0.0  # +- this share, at random, on every duration
    slow_steps: dict[int, float] = field(default_factory=dict)  # step -> extra forward seconds


def perf_run(ranks: list[Rank], steps: int = 20, buckets: tuple = ((0, 64 * KB),),
             bucket_s: float = 0.001, baseline_s: Optional[float] = None,
             bucket_cap_mb: Optional[float] = None, params_per_bucket: int = 2,
             loader_workers: int = 0, seed: int = 0) -> RunModel:
    """A completed probe run: every rank trains `steps` steps; each backward all-reduces
    `buckets` ((index, bytes), ...) one after another at the end of backward, each taking
    `bucket_s`; `baseline_s` adds the in-job baseline (raw all-reduce seconds per bucket)."""
    rng = random.Random(seed)
    run = RunBuilder(world_size=len(ranks))
    names = {index: [f"layer{index}.p{k}" for k in range(params_per_bucket)] for index, _ in buckets}
    for rank, spec in enumerate(ranks):
        builder = run[rank]
        builder.add(tm.DDPInfo(builder.t, 0, False, False, False, bucket_cap_mb, None,
                               [n for ns in names.values() for n in ns], 4096, SITE_DDP))
        builder.loader()
        builder.records[-1].num_workers = loader_workers
        for index, nbytes in buckets:
            builder.add(tm.BucketLayout(builder.t, 0, index, names[index], nbytes))

        def d(value: float) -> float:
            return value * (1 + rng.uniform(-spec.jitter, spec.jitter)) if spec.jitter else value

        t = builder.t + 1.0
        for i in range(steps):
            step_start = t
            phases = {"data": d(spec.data), "forward": d(spec.forward + spec.slow_steps.get(i + 1, 0.0)),
                      "backward": d(spec.backward)}
            t += phases["data"]
            builder.add(tm.Batch(t, 0, 0, i, i, [f"{rank}-{i}"], "f"))
            t += phases["forward"] + phases["backward"]
            grads_done = t
            launch = grads_done - spec.hidden
            end = launch
            for index, nbytes in buckets:
                start, end = end, end + d(bucket_s)
                if index == buckets[-1][0]:
                    end += spec.wait
                builder.add(tm.BucketTiming(end, 0, index, nbytes, start, end, i, i,
                                            index == buckets[-1][0], "default"))
            exposed = max(0.0, end - grads_done)
            if exposed:
                phases["comm_exposed"] = exposed
            t = max(t, end)
            phases["optimizer"] = d(spec.optimizer)
            t += phases["optimizer"] + d(spec.other)
            if i:
                phases["step"] = t - step_start
            phases["samples"] = 32
            builder.add(tm.Step(t, i + 1, 1, 1, phases))
        if baseline_s is not None:
            for _index, nbytes in buckets:
                starts = [1000.0 + k for k in range(5)]  # lined up across ranks, as after a MAX agreement
                builder.add(tm.BaselineTiming(t + 0.1, 0, nbytes, "float32", 2, [baseline_s] * 5, starts))
        builder.end()
    run.outcome("completed")
    return run.model()


def codes(model: RunModel, code: str):
    return judge(code, model)


# DDP601 straggler -----------------------------------------------------------------------------

def test_straggler_is_named_with_its_slow_phase_and_what_the_others_lose():
    model = perf_run([Rank(wait=0.080), Rank(forward=0.082)])
    [finding] = judge("DDP601", model)
    assert finding.ranks == [1]
    assert finding.severity is Severity.WARNING
    assert finding.evidence["phase"] == "forward"
    assert "rank 1 works" in finding.message and "the difference is forward" in finding.message
    assert "rank 0 waits" in finding.message
    assert "rank 1 is the straggler" in finding.hint and "if rank ==" in finding.hint


def test_straggler_in_its_own_code_between_phases_is_named_as_such():
    model = perf_run([Rank(wait=0.060), Rank(other=0.060)])
    [finding] = judge("DDP601", model)
    assert finding.ranks == [1]
    assert finding.evidence["phase"] == "other"
    assert "its own code between the phases" in finding.message
    assert "logging" in finding.hint


def test_one_rank_slow_on_data_is_a_straggler_not_an_input_bound_job():
    model = perf_run([Rank(wait=0.050), Rank(data=0.051)])
    [finding] = judge("DDP601", model)
    assert finding.evidence["phase"] == "data" and finding.ranks == [1]
    assert judge("DDP605", model) == []


@pytest.mark.parametrize("seed", range(5))
def test_noisy_but_healthy_ranks_are_not_stragglers(seed):
    # Millisecond steps with +-60% noise on every duration: one rank is often 2x the other,
    # by a millisecond or two, which is noise and not a straggler.
    model = perf_run([Rank(jitter=0.6), Rank(jitter=0.6)], bucket_s=0.003, seed=seed)
    for code in ("DDP601", "DDP602", "DDP603", "DDP604", "DDP605"):
        assert judge(code, model) in ([], Skipped("no in-job baseline: it is measured only when "
                                                  "the probe stops the job at --max-steps")), code


def test_healthy_run_with_baseline_and_latency_bound_buckets_is_clean():
    # A tiny model: the one 23 KB bucket is all latency, most of a 6 ms step, yet a few ms only.
    model = perf_run([Rank(), Rank()], buckets=((0, 23 * KB),), bucket_s=0.004, baseline_s=0.002)
    for code in ("DDP601", "DDP602", "DDP603", "DDP604", "DDP605"):
        assert judge(code, model) == [], code


def test_slowness_in_the_warmup_steps_is_not_judged():
    model = perf_run([Rank(), Rank(slow_steps={1: 0.5, 2: 0.5, 3: 0.5})])
    assert judge("DDP601", model) == []


def test_a_rank_slowed_inside_a_communication_bound_job_is_left_to_ddp604():
    # Rank 1's backward is slower, but even rank 1 sees more exposed communication than that.
    model = perf_run([Rank(backward=0.010, wait=0.020), Rank(backward=0.030)],
                     bucket_s=0.050, buckets=((0, 8 * MB),))
    assert judge("DDP601", model) == []
    assert [f.code for f in judge("DDP604", model)] == ["DDP604"]


def test_straggler_needs_two_ranks():
    assert isinstance(judge("DDP601", perf_run([Rank()])), Skipped)


# DDP604 exposed communication -------------------------------------------------------------------

def test_communication_bound_job_is_reported_with_its_share_and_traffic():
    model = perf_run([Rank(), Rank()], buckets=((0, 51 * MB),), bucket_s=0.070)
    [finding] = judge("DDP604", model)
    assert finding.ranks == [0, 1]
    assert finding.evidence["share"] > 0.8
    assert "51 MB of gradients in 1 bucket" in finding.message
    assert "communication bound" in finding.message
    assert "no_sync" in finding.hint and "bf16_compress_hook" in finding.hint


def test_waiting_for_a_straggler_is_not_exposed_communication():
    model = perf_run([Rank(wait=0.080), Rank(forward=0.082)])
    assert judge("DDP604", model) == []


def test_communication_mostly_hidden_behind_backward_is_fine():
    model = perf_run([Rank(backward=0.080, hidden=0.045), Rank(backward=0.080, hidden=0.045)],
                     buckets=((0, 8 * MB),), bucket_s=0.050)
    assert judge("DDP604", model) == []


# DDP605 input bound ------------------------------------------------------------------------------

def test_every_rank_waiting_on_data_is_input_bound_and_names_num_workers():
    model = perf_run([Rank(data=0.160), Rank(data=0.158)])
    [finding] = judge("DDP605", model)
    assert finding.ranks == [0, 1]
    assert "num_workers=0" in finding.message
    assert finding.location.file == "train.py"
    assert "num_workers=4" in finding.hint
    assert judge("DDP601", model) == []


def test_input_bound_with_workers_suggests_more_of_them():
    model = perf_run([Rank(data=0.160), Rank(data=0.160)], loader_workers=2)
    [finding] = judge("DDP605", model)
    assert "num_workers=2" in finding.message and "more DataLoader workers than 2" in finding.hint


# DDP603 bucket sizes ----------------------------------------------------------------------------

TINY = tuple((i, 37 * KB) for i in range(48))


def test_many_tiny_buckets_get_a_bucket_cap_suggestion():
    model = perf_run([Rank(), Rank()], buckets=TINY, bucket_s=0.0015, baseline_s=0.0004,
                     bucket_cap_mb=0.01)
    [finding] = judge("DDP603", model)
    assert finding.evidence["suggested_bucket_cap_mb"] == 1
    assert "48 buckets per backward" in finding.message and "bucket_cap_mb=0.01" in finding.message
    assert "bucket_cap_mb=1" in finding.hint
    assert finding.location.file == "train.py" and finding.location.line == SITE_DDP.line
    # Their slowness is per call: not reported again as low bandwidth, and DDP604 points here.
    assert judge("DDP602", model) == []
    assert "DDP603" in judge("DDP604", model)[0].hint


def test_one_huge_bucket_from_a_raised_cap_is_reported():
    model = perf_run([Rank(), Rank()], buckets=((0, 2 * MB), (1, 60 * MB)), bucket_s=0.040,
                     bucket_cap_mb=200, params_per_bucket=6)
    [finding] = judge("DDP603", model)
    assert "bucket_cap_mb=200" in finding.message and "end of backward" in finding.message
    assert finding.evidence["suggested_bucket_cap_mb"] == 15


def test_default_cap_with_large_buckets_is_not_a_bucket_problem():
    model = perf_run([Rank(), Rank()], buckets=((0, 16 * MB), (1, 33 * MB)), bucket_s=0.040)
    assert judge("DDP603", model) == []


def test_suggested_cap_is_about_four_buckets_between_1_and_25():
    from ddpdoctor.checks.probe.bucket_sizes import suggested_cap_mb

    assert suggested_cap_mb(1_800_000) == 1
    assert suggested_cap_mb(64 * 1024 * 1024) == 16
    assert suggested_cap_mb(4_000_000_000) == 25


# DDP602 bucket bandwidth --------------------------------------------------------------------------

def test_buckets_far_below_the_in_job_baseline_are_reported():
    model = perf_run([Rank(), Rank()], buckets=((0, 4 * MB), (1, 4 * MB)), bucket_s=0.020,
                     baseline_s=0.005)
    [finding] = judge("DDP602", model)
    assert finding.evidence["efficiency"] == pytest.approx(0.25, abs=0.01)
    assert "25% efficiency" in finding.message
    assert "bucket 0 (4.0 MB): 0.20 GB/s against 0.80" in finding.message


def test_buckets_as_fast_as_the_baseline_are_fine():
    model = perf_run([Rank(), Rank()], buckets=((0, 4 * MB),), bucket_s=0.005, baseline_s=0.0049)
    assert judge("DDP602", model) == []


def test_no_baseline_means_bandwidth_is_not_judged():
    verdict = judge("DDP602", perf_run([Rank(), Rank()]))
    assert isinstance(verdict, Skipped) and "--max-steps" in verdict.reason


# numbers, tables -----------------------------------------------------------------------------------

def test_bus_bandwidth_follows_nccl_tests():
    bucket = perf.BucketPerf(0, 0, 100 * MB, [], 10, 0.1, world=4, baseline=0.05)
    assert bucket.algbw == pytest.approx(1.0)
    assert bucket.busbw == pytest.approx(1.5)  # 2(n-1)/n = 1.5 at n=4
    assert bucket.baseline_busbw == pytest.approx(3.0)
    assert bucket.efficiency == pytest.approx(0.5)
    assert perf.bus_factor(2) == 1.0 and perf.bus_factor(8) == pytest.approx(1.75)


def test_bucket_time_counts_from_when_the_previous_bucket_finished():
    service, busy = perf._service_times({0: (0.0, 0.010), 1: (0.001, 0.015)})
    assert service == {0: pytest.approx(0.010), 1: pytest.approx(0.005)}
    assert busy == pytest.approx(0.015)


def test_an_all_reduce_counts_from_the_last_rank_to_join_it():
    # Rank 0 launched at 0.0 and waited for rank 1, which joined at 0.050; both done at 0.060.
    assert perf.joined([0.0, 0.050], [0.060, 0.0601], [0.060, 0.0101]) == (0.050, 0.0601)
    # Clocks skewed across nodes never make it shorter than the shortest rank's own interval.
    start, end = perf.joined([0.0, 0.080], [0.060, 0.0601], [0.060, 0.010])
    assert end - start == pytest.approx(0.010)


def test_report_tables_show_phases_per_rank_and_buckets_against_the_baseline():
    model = perf_run([Rank(), Rank()], buckets=((0, 4 * MB),), bucket_s=0.010, baseline_s=0.005)
    phases, buckets = perf_tables.tables(model)
    assert phases.columns[:2] == ["rank", "data"] and phases.columns[-1] == "samples/s"
    assert [row[0] for row in phases.rows] == [0, 1]
    assert buckets.columns == ["bucket", "MB", "params", "ms", "algbw", "busbw", "baseline", "eff"]
    assert buckets.rows == [[0, "4.000", 2, "10.0", "0.400", "0.400", "0.800", "0.50"]]
    numbers = perf_tables.metrics(model)
    assert numbers["buckets_per_backward"] == 1 and numbers["samples_per_s"] > 0


# DDP606 scaling -------------------------------------------------------------------------------------

def point(world: int, rate: float, step_s: float = 0.1, exposed: float = 0.0) -> scaling.ScalingPoint:
    return scaling.ScalingPoint(world, f"/runs/ws-{world}", "completed", 17, step_s, rate,
                                {"comm_exposed": exposed, "data": 0.001, "forward": 0.01})


def test_poor_scaling_is_an_info_finding_naming_the_phase_that_grew():
    model = perf_run([Rank(), Rank()])
    model.scaling = [point(1, 100.0, 0.05), point(2, 120.0, 0.16, exposed=0.1), point(4, 130.0, 0.3, exposed=0.24)]
    [finding] = judge("DDP606", model)
    assert finding.severity is Severity.INFO
    assert "scaling efficiency of 32%" in finding.message
    assert "communication not hidden behind backward" in finding.message
    assert finding.evidence["efficiency"] == {"1": 1.0, "2": 0.6, "4": 0.325}


def test_good_scaling_is_fine_and_no_scaling_is_skipped():
    model = perf_run([Rank(), Rank()])
    assert isinstance(judge("DDP606", model), Skipped)
    model.scaling = [point(1, 100.0), point(2, 190.0)]
    assert judge("DDP606", model) == []


def test_scaling_sizes_are_parsed_or_refused_in_one_line():
    assert scaling_runs.parse_sizes("4,1, 2") == [1, 2, 4]
    for bad in ("1", "0,2", "a,b", "1,,1", "1,9999"):
        with pytest.raises(UsageError):
            scaling_runs.parse_sizes(bad)


# --trace ----------------------------------------------------------------------------------------------

def test_trace_has_a_process_per_rank_with_step_phases_and_bucket_slices(tmp_path):
    model = perf_run([Rank(), Rank(forward=0.050)], buckets=((0, 4 * MB), (1, 1 * MB)), bucket_s=0.010)
    path = trace.write(model, tmp_path / "trace.json")
    data = json.loads(path.read_text())
    events = data["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert names == {0: "rank 0 (node0)", 1: "rank 1 (node0)"}
    buckets = [e for e in events if e.get("cat") == "allreduce"]
    assert len(buckets) == 2 * 2 * 20
    assert all(e["ph"] == "X" and e["dur"] > 0 for e in buckets)
    assert buckets[0]["args"]["bytes"] == 4 * MB and buckets[0]["args"]["busbw_GBps"] == pytest.approx(0.4)
    phases = {e["name"] for e in events if e.get("cat") == "phase"}
    assert phases == {"data", "forward", "backward", "comm exposed", "optimizer"}
    steps = [e for e in events if e.get("cat") == "step" and e["pid"] == 1]
    assert len(steps) == 20
    # Every phase slice nests inside its step's slice.
    for phase in (e for e in events if e.get("cat") == "phase" and e["pid"] == 1):
        parent = [s for s in steps if s["ts"] <= phase["ts"] and phase["ts"] + phase["dur"] <= s["ts"] + s["dur"] + 0.2]
        assert parent, phase


def test_trace_is_scrubbed_of_secrets(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_API_KEY", "sk-very-secret-value")
    model = perf_run([Rank(), Rank()])
    model.meta.script = "train.py --key sk-very-secret-value"
    text = trace.write(model, tmp_path / "t.json").read_text()
    assert "sk-very-secret-value" not in text and "<redacted>" in text
