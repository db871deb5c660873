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


def test_a_part_of_the_step_is_not_judged_finer_than_the_step():
    # Two runs of the same job (measured on 2 CPU cores): exposed communication 0.5 ms, then
    # 1.4 ms, each run's own spread small; the steps' noise covers the 0.9 ms, so it is no
    # regression. The same growth in a step that the runs measured as steady is one.
    from ddpdoctor.probe.analysis import regression

    def metrics(step, step_spread, exposed):
        return {"step_ms_median": step, "step_ms_spread": step_spread, "judged_steps": 17,
                "exposed_comm_ms": exposed, "exposed_comm_spread_ms": 0.13}

    noisy = {c.metric: c for c in regression.compare(metrics(3.6, 2.2, 0.5), metrics(4.0, 2.4, 1.4))}
    assert not noisy["exposed_comm_ms"].regressed
    assert noisy["exposed_comm_ms"].tolerance == noisy["step_ms_median"].tolerance > 0.9
    steady_steps = {c.metric: c for c in regression.compare(metrics(3.6, 0.05, 0.5), metrics(4.5, 0.05, 1.4))}
    assert steady_steps["exposed_comm_ms"].regressed and steady_steps["step_ms_median"].regressed


def test_a_baseline_with_an_impossible_step_count_or_spread_is_judged_without_them():
    # a hand-edited report (`judged_steps: -5`, a negative spread) sizes no standard error
    from ddpdoctor.probe.analysis import regression

    bad = {"step_ms_median": 4.0, "step_ms_spread": -1.0, "judged_steps": -5}
    now = {"step_ms_median": 4.1, "step_ms_spread": 0.5, "judged_steps": 17}
    [step] = regression.compare(bad, now)
    assert step.tolerance == 1.0 and not step.regressed  # twice the one usable spread
