"""DDP606 (checks/probe/scaling_efficiency.py), fed probe runs built the way ranks write their telemetry
(tests/unit/checks/probe/perf_runs.py): no processes."""

from __future__ import annotations

from ddpdoctor.core.findings import Severity
from ddpdoctor.core.registry import Skipped
from tests.helpers.telemetry_builders import judge
from tests.unit.checks.probe.perf_runs import Rank, perf_run, point


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
