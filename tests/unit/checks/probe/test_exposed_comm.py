"""DDP604 (checks/probe/exposed_comm.py), fed probe runs built the way ranks write their telemetry
(tests/unit/checks/probe/perf_runs.py): no processes."""

from __future__ import annotations

import pytest

from ddpdoctor.core.findings import Severity
from ddpdoctor.probe.analysis import perf
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.checks.probe.exposed_comm import unavoidable
from tests.helpers.telemetry_builders import judge
from tests.unit.checks.probe.perf_runs import (
    KB, MB, Rank, perf_run, LATENCY, BANDWIDTH_POINT, SMALL, SMALL_RANK, verdict,
)


def test_communication_bound_job_is_reported_with_its_share_traffic_and_estimate():
    model = perf_run([Rank(), Rank()], buckets=((0, 51 * MB),), bucket_s=0.070,
                     latency_s=LATENCY, bandwidth_point=BANDWIDTH_POINT)
    [finding] = judge("DDP604", model)
    assert finding.ranks == [0, 1]
    assert finding.evidence["share"] > 0.8
    assert "51 MB of gradients in 1 bucket" in finding.message
    assert "communication bound" in finding.message
    assert "no_sync" in finding.hint and "bf16_compress_hook" in finding.hint
    # Hidden, all but the bucket's fixed cost would leave the step: 77 ms -> ~7 ms.
    assert finding.evidence["unavoidable_ms"] == pytest.approx(LATENCY * 1e3, abs=0.01)
    assert finding.evidence["estimated_step_ms"] == pytest.approx(7.25, abs=0.3)
    assert "step 77.0 ms \u2192 ~7.2 ms (est.) with that communication hidden" in finding.message


def test_communication_bound_without_baseline_is_still_reported():
    model = perf_run([Rank(), Rank()], buckets=((0, 51 * MB),), bucket_s=0.070)
    [finding] = judge("DDP604", model)
    assert finding.evidence["unavoidable_ms"] == 0.0


def test_one_latency_bound_bucket_after_backward_is_not_communication_bound():
    # healthy.py's shape: a tiny model, one 23 KB bucket (below the 420 KB knee) all-reduced
    # after the last gradient, 36% of a 11 ms step: nothing can hide it, nothing to report.
    model = perf_run([Rank(), Rank()], buckets=((0, 23 * KB),), bucket_s=0.004,
                     latency_s=LATENCY, bandwidth_point=BANDWIDTH_POINT)
    assert perf.pure_exposed(perf.step_perf(model))[0] / perf.step_time(perf.step_perf(model)) > 0.3
    assert judge("DDP604", model) == []


def test_the_same_exposure_from_a_bucket_above_the_knee_is_reported():
    # Same time, same share, but 2 MB: bytes, not a fixed cost, that overlap could hide.
    model = perf_run([Rank(), Rank()], buckets=((0, 2 * MB),), bucket_s=0.004,
                     latency_s=LATENCY, bandwidth_point=BANDWIDTH_POINT)
    [finding] = judge("DDP604", model)
    assert finding.evidence["unavoidable_ms"] == pytest.approx(0.25, abs=0.01)


@pytest.mark.parametrize("bucket_s, reported", [(0.0018, False), (0.0023, True)])
def test_avoidable_exposure_is_judged_at_a_fifth_of_the_step(bucket_s, reported):
    # 7 ms of compute; exposure beyond the 0.25 ms fixed cost of 18% vs 22% of the step.
    model = perf_run([Rank(), Rank()], buckets=((0, 2 * MB),), bucket_s=bucket_s,
                     latency_s=LATENCY, bandwidth_point=BANDWIDTH_POINT)
    found = judge("DDP604", model)
    assert bool(found) is reported
    if found:
        assert 0.2 <= found[0].evidence["avoidable_share"] < 0.25


def test_exposure_within_the_noise_of_the_steps_is_not_reported():
    # 30% exposure, but every other step is 40 ms slower: a 3 ms difference is not evidence.
    noisy = {i: 0.040 for i in range(2, 21, 2)}
    model = perf_run([Rank(slow_steps=noisy), Rank(slow_steps=noisy)], buckets=((0, 2 * MB),),
                     bucket_s=0.003, latency_s=LATENCY, bandwidth_point=BANDWIDTH_POINT)
    perfs = perf.step_perf(model)
    assert perf.step_spread(perfs) > 0.003
    assert judge("DDP604", model) == []


def test_the_last_buckets_unavoidable_time_is_its_share_however_the_queue_split_the_time():
    # Four latency-bound buckets run one after another after backward. On a loaded machine gloo
    # may finish the third late and the last right after it: the last one's own interval is
    # 0.05 ms instead of 1.1 ms, the communication the same. What no overlap removes is what a
    # bucket of that size takes in training (the median bucket), whichever way the queue split it.
    def run(squeezed: bool) -> RunModel:
        model = perf_run([Rank(**SMALL_RANK), Rank(**SMALL_RANK)], buckets=SMALL[:4],
                         bucket_s=0.0011, latency_s=LATENCY, bandwidth_point=BANDWIDTH_POINT)
        if squeezed:
            for rank_run in model.ranks.values():
                timings = rank_run.of(tm.BucketTiming)
                last = {b.iteration: b for b in timings if b.index == 3}
                for b in timings:
                    if b.index == 2:
                        b.end = last[b.iteration].end - 0.00005
        return model

    floors = [[unavoidable(c) for c in perf.model_comm(run(squeezed))] for squeezed in (False, True)]
    assert floors[0] == [pytest.approx(0.0011, abs=0.00005)]
    assert floors[1] == [pytest.approx(floors[0][0], abs=0.00001)]
    # Merging the four buckets (DDP603) removes the rest of what shows: no DDP604 either way.
    assert judge("DDP604", run(False)) == [] and judge("DDP604", run(True)) == []


def test_waiting_for_a_straggler_is_not_exposed_communication():
    model = perf_run([Rank(wait=0.080), Rank(forward=0.082)])
    assert judge("DDP604", model) == []


def test_communication_mostly_hidden_behind_backward_is_fine():
    model = perf_run([Rank(backward=0.080, hidden=0.045), Rank(backward=0.080, hidden=0.045)],
                     buckets=((0, 8 * MB),), bucket_s=0.050)
    assert judge("DDP604", model) == []


def test_a_slow_small_baseline_point_does_not_make_a_tiny_bucket_bandwidth_bound():
    # The spawn example on a loaded machine: its one 1 KB bucket took 3.7 ms raw once. Only an
    # all-reduce of a megabyte or more tells what bytes cost: 1 KB stays below the knee, and the
    # bucket's own time after backward is no communication-bound job.
    model = perf_run([Rank(), Rank()], buckets=((0, 1 * KB),), bucket_s=0.0021, baseline_s=0.0037,
                     latency_s=0.0002)
    [comm] = perf.model_comm(model)
    assert comm.cost.bandwidth is None and comm.cost.latency_bound(1 * KB)
    assert comm.cost.knee_bytes >= 1024 * 1024
    assert judge("DDP604", model) == []


@pytest.mark.parametrize("bucket_s, expected", [(0.0060, "warning"), (0.0024, "borderline")])
def test_exposed_comm_near_its_threshold_is_borderline_and_clear_is_judged(bucket_s, expected):
    model = perf_run([Rank(jitter=0.2), Rank(jitter=0.2)], buckets=((0, 2 * MB),), bucket_s=bucket_s,
                     latency_s=LATENCY, bandwidth_point=BANDWIDTH_POINT)
    [finding] = judge("DDP604", model)
    assert verdict(finding) == expected
    margin = finding.evidence["margin"]
    assert margin > 1 if expected == "warning" else 0 < margin <= 1
    assert finding.evidence["noise_ms"] > 0
    if expected == "borderline":
        assert finding.severity is Severity.INFO and "threshold of" in finding.message
    else:
        assert "(margin: avoidable exposed communication per step" in finding.message
