"""DDP605 (checks/probe/input_bound.py), fed probe runs built the way ranks write their telemetry
(tests/unit/checks/probe/perf_runs.py): no processes."""

from __future__ import annotations

import pytest

from tests.helpers.telemetry_builders import judge
from tests.unit.checks.probe.perf_runs import Rank, perf_run, verdict


def test_input_bound_with_workers_suggests_more_of_them():
    model = perf_run([Rank(data=0.160), Rank(data=0.160)], loader_workers=2)
    [finding] = judge("DDP605", model)
    assert "num_workers=2" in finding.message and "more DataLoader workers than 2" in finding.hint


@pytest.mark.parametrize("data, expected", [(0.030, "warning"), (0.0106, "borderline")])
def test_input_bound_near_its_threshold_is_borderline_and_clear_is_judged(data, expected):
    model = perf_run([Rank(data=data, jitter=0.3), Rank(data=data, jitter=0.3)])
    [finding] = judge("DDP605", model)
    assert verdict(finding) == expected
