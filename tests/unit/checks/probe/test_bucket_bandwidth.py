"""DDP602 (checks/probe/bucket_bandwidth.py), fed probe runs built the way ranks write their telemetry
(tests/unit/checks/probe/perf_runs.py): no processes."""

from __future__ import annotations

import pytest

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.core.registry import Skipped
from tests.helpers.telemetry_builders import judge
from tests.unit.checks.probe.perf_runs import KB, MB, Rank, perf_run, LATENCY, BANDWIDTH_POINT, verdict


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
    assert isinstance(verdict, Skipped) and "not measured" in verdict.reason


def test_a_job_that_ended_before_the_baseline_step_says_so():
    model = perf_run([Rank(), Rank()], steps=4)
    for run in model.ranks.values():  # every rank crashed in step 4, after its backward
        run.records = [r for r in run.records if not (isinstance(r, tm.Step) and r.step == 4)]
    verdict = judge("DDP602", model)
    assert isinstance(verdict, Skipped) and "before step 4" in verdict.reason


@pytest.mark.parametrize("backward, reported", [(0.060, True), (0.085, False)])
def test_bandwidth_loss_is_judged_as_a_share_of_the_step(backward, reported):
    # Two 4 MB buckets at 10 ms instead of 3 ms raw (30% efficiency): 14 ms lost, 16.7% of an
    # 84 ms step, 12.8% of a 109 ms one.
    model = perf_run([Rank(backward=backward), Rank(backward=backward)],
                     buckets=((0, 4 * MB), (1, 4 * MB)), bucket_s=0.010, baseline_s=0.003,
                     latency_s=LATENCY, bandwidth_point=BANDWIDTH_POINT)
    found = judge("DDP602", model)
    assert bool(found) is reported
    if found:
        assert "(est.) with the buckets at the baseline's speed" in found[0].message


def test_a_latency_bound_bucket_slower_than_raw_is_not_a_bandwidth_problem():
    # healthy.py: one 23 KB bucket at 1.8 ms in training against 0.45 ms raw (25% efficiency,
    # a third of a 5 ms step); below the knee its time is a fixed cost, not bytes.
    model = perf_run([Rank(), Rank()], buckets=((0, 23 * KB),), bucket_s=0.0018,
                     baseline_s=0.00045, latency_s=LATENCY, bandwidth_point=BANDWIDTH_POINT)
    assert judge("DDP602", model) == []
    bigger = perf_run([Rank(), Rank()], buckets=((0, 2 * MB),), bucket_s=0.0072,
                      baseline_s=0.0018, latency_s=LATENCY, bandwidth_point=BANDWIDTH_POINT)
    assert [f.code for f in judge("DDP602", bigger)] == ["DDP602"]


@pytest.mark.parametrize("backward, expected", [(0.020, "warning"), (0.075, "borderline")])
def test_bucket_bandwidth_near_its_threshold_is_borderline_and_clear_is_judged(backward, expected):
    model = perf_run([Rank(backward=backward, jitter=0.2), Rank(backward=backward, jitter=0.2)],
                     buckets=((0, 4 * MB), (1, 4 * MB)), bucket_s=0.010, baseline_s=0.003,
                     latency_s=LATENCY, bandwidth_point=BANDWIDTH_POINT)
    [finding] = judge("DDP602", model)
    assert verdict(finding) == expected
    assert set(finding.evidence) >= {"margin", "margin_ms", "threshold_ms", "noise_ms"}
