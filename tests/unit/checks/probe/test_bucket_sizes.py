"""DDP603 (checks/probe/bucket_sizes.py), fed probe runs built the way ranks write their telemetry
(tests/unit/checks/probe/perf_runs.py): no processes."""

from __future__ import annotations

import pytest

from ddpdoctor.core.findings import Severity
from ddpdoctor.probe.analysis import perf
from tests.helpers.telemetry_builders import judge
from tests.unit.checks.probe.perf_runs import (
    KB, MB, Rank, perf_run, LATENCY, BANDWIDTH_POINT, TINY, SMALL, SMALL_RANK, verdict,
)


@pytest.mark.parametrize("backend, estimate", [("gloo", 22.5), ("nccl", 48.3)])
def test_hidden_communication_counts_whole_with_gloo_and_not_with_nccl(backend, estimate):
    # 30 ms of the buckets run behind backward. With gloo they take the same CPU cores as the
    # backward they hide behind: merging saves all of it. With NCCL only what shows counts.
    spec = dict(backward=0.040, hidden=0.030)
    model = perf_run([Rank(**spec), Rank(**spec)], buckets=TINY, bucket_s=0.0015,
                     latency_s=LATENCY, bandwidth_point=BANDWIDTH_POINT, backend=backend)
    [finding] = judge("DDP603", model)
    assert finding.evidence["step_ms"] == pytest.approx(86.0, abs=0.2)
    assert finding.evidence["estimated_step_ms"] == pytest.approx(estimate, abs=0.3)


def test_the_same_buckets_under_a_long_step_are_not_worth_a_finding():
    # Five fixed costs are 5 ms: 50% of a 10 ms step, 2% of a 250 ms one.
    slow = dict(SMALL_RANK, backward=0.240)
    model = perf_run([Rank(**slow), Rank(**slow)], buckets=SMALL, bucket_s=0.0011,
                     latency_s=LATENCY, bandwidth_point=BANDWIDTH_POINT)
    assert judge("DDP603", model) == []


@pytest.mark.parametrize("backward, reported", [(0.030, True), (0.036, False)])
def test_a_merge_is_reported_from_a_tenth_of_the_step(backward, reported):
    # Merging five latency-bound buckets saves ~4.2 ms: 11% of a 38 ms step, 9.6% of a 44 ms one.
    spec = dict(SMALL_RANK, backward=backward)
    model = perf_run([Rank(**spec), Rank(**spec)], buckets=SMALL, bucket_s=0.0011,
                     latency_s=LATENCY, bandwidth_point=BANDWIDTH_POINT)
    assert bool(judge("DDP603", model)) is reported


def test_buckets_above_the_knee_are_not_merged():
    # Eight 4 MB buckets: well above the 420 KB knee, their time is bytes.
    model = perf_run([Rank(), Rank()], buckets=tuple((i, 4 * MB) for i in range(8)),
                     bucket_s=0.003, latency_s=LATENCY, bandwidth_point=BANDWIDTH_POINT)
    assert judge("DDP603", model) == []


def test_a_knee_measured_higher_makes_the_same_buckets_latency_bound():
    # 8 x 300 KB buckets: above a 420 KB knee? no; against a fast 10 GB/s group the knee is
    # 2.5 MB and they are latency-bound; against a 0.5 GB/s one (knee 125 KB) they are not.
    buckets = tuple((i, 300 * KB) for i in range(8))
    fast = perf_run([Rank(), Rank()], buckets=buckets, bucket_s=0.0006, latency_s=LATENCY,
                    bandwidth_point=(4 * MB, LATENCY + 0.0004))
    slow = perf_run([Rank(), Rank()], buckets=buckets, bucket_s=0.0006, latency_s=LATENCY,
                    bandwidth_point=(4 * MB, LATENCY + 0.008))
    assert [c.cost.knee_bytes for c in perf.model_comm(fast)] == [pytest.approx(2.5 * MB)]
    assert [f.code for f in judge("DDP603", fast)] == ["DDP603"]
    assert judge("DDP603", slow) == []


def test_as_many_buckets_as_the_suggestion_is_no_merge():
    model = perf_run([Rank(), Rank()], buckets=((0, 900 * KB), (1, 900 * KB)), bucket_s=0.010,
                     latency_s=LATENCY, bandwidth_point=BANDWIDTH_POINT)
    assert judge("DDP603", model) == []


def test_a_merge_gain_within_the_noise_is_borderline_not_a_warning():
    noisy = {i: 0.030 for i in range(2, 21, 2)}
    spec = dict(SMALL_RANK, slow_steps=noisy)
    model = perf_run([Rank(**spec), Rank(**spec)], buckets=SMALL, bucket_s=0.0011,
                     latency_s=LATENCY, bandwidth_point=BANDWIDTH_POINT)
    assert perf.step_spread(perf.step_perf(model)) > 0.006
    [finding] = judge("DDP603", model)
    assert finding.severity is Severity.INFO and finding.evidence["borderline"] is True
    assert finding.message.startswith("borderline, not judged: ")


def test_one_huge_bucket_from_a_raised_cap_is_reported():
    model = perf_run([Rank(), Rank()], buckets=((0, 2 * MB), (1, 60 * MB)), bucket_s=0.040,
                     bucket_cap_mb=200, params_per_bucket=6)
    [finding] = judge("DDP603", model)
    assert "bucket_cap_mb=200" in finding.message and "end of backward" in finding.message
    assert finding.evidence["suggested_bucket_cap_mb"] == 15


def test_default_cap_with_large_buckets_is_not_a_bucket_problem():
    model = perf_run([Rank(), Rank()], buckets=((0, 16 * MB), (1, 33 * MB)), bucket_s=0.040)
    assert judge("DDP603", model) == []


def test_bucket_merge_clear_of_its_noise_is_judged_with_its_margin():
    model = perf_run([Rank(**SMALL_RANK, jitter=0.1), Rank(**SMALL_RANK, jitter=0.1)], buckets=SMALL,
                     bucket_s=0.0011, latency_s=LATENCY, bandwidth_point=BANDWIDTH_POINT)
    [finding] = judge("DDP603", model)
    assert verdict(finding) == "warning" and finding.evidence["margin"] > 1
