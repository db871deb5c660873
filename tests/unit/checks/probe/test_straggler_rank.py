"""DDP601 (checks/probe/straggler_rank.py), fed probe runs built the way ranks write their telemetry
(tests/unit/checks/probe/perf_runs.py): no processes."""

from __future__ import annotations

import pytest

from ddpdoctor.core.findings import Severity
from ddpdoctor.core.registry import Skipped
from tests.helpers.telemetry_builders import judge
from tests.unit.checks.probe.perf_runs import Rank, perf_run, verdict


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


def test_slowness_in_the_warmup_steps_is_not_judged():
    model = perf_run([Rank(), Rank(slow_steps={1: 0.5, 2: 0.5, 3: 0.5})])
    assert judge("DDP601", model) == []


def test_straggler_needs_two_ranks():
    assert isinstance(judge("DDP601", perf_run([Rank()])), Skipped)


@pytest.mark.parametrize("extra, expected", [(0.030, "warning"), (0.0105, "borderline")])
def test_straggler_near_its_threshold_is_borderline_and_clear_is_judged(extra, expected):
    model = perf_run([Rank(jitter=0.2, wait=extra), Rank(forward=0.002 + extra, jitter=0.2)])
    [finding] = judge("DDP601", model)
    assert verdict(finding) == expected and finding.ranks == [1]
    assert (finding.evidence["margin"] > 1) is (expected == "warning")
