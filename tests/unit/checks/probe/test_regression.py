"""DDP607 (checks/probe/regression.py), fed probe runs built the way ranks write their telemetry
(tests/unit/checks/probe/perf_runs.py): no processes."""

from __future__ import annotations

from ddpdoctor.core.registry import Skipped
from tests.unit.checks.probe.perf_runs import Rank, perf_run, report_of, steady, verdict


def test_the_gate_is_skipped_without_a_baseline_and_incomplete_without_steps():
    from ddpdoctor.core.registry import Incomplete
    from ddpdoctor.probe.analysis import regression

    from ddpdoctor.core.registry import get_check

    gate = get_check("DDP607").func
    model = perf_run(steady())
    assert isinstance(gate(model), Skipped)
    short = perf_run(steady(), steps=3)
    short.regression_baseline = regression.parse(report_of(model), "previous.json")
    assert isinstance(gate(short), Incomplete)
    wider = perf_run([Rank(), Rank(), Rank()])
    wider.regression_baseline = regression.parse(report_of(model), "previous.json")
    verdict = gate(wider)
    assert isinstance(verdict, Incomplete) and "2 ranks" in verdict.reason
