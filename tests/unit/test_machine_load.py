"""The machine's load beside the job: read from psutil.cpu_times and getrusage, kept in outcome.json,
said in the report when other work took a real share of the machine."""

from __future__ import annotations

from collections import namedtuple

import pytest

from ddpdoctor.core.findings import Severity
from ddpdoctor.probe.launch.machine_load import Sample, between, busy_seconds
from ddpdoctor.probe.report import build_report
from ddpdoctor.probe.run_model.outcome import MachineLoad, Outcome
from tests.helpers.telemetry_builders import RunBuilder

# psutil.cpu_times() on Linux, in seconds (the fields of /proc/stat's first line).
TIMES = namedtuple("scputimes", "user nice system idle iowait irq softirq steal guest guest_nice")(
    10.0, 0.2, 3.0, 50.0, 0.8, 0.0, 0.1, 0.05, 0.0, 0.0)
# macOS has neither iowait nor steal.
MAC_TIMES = namedtuple("scputimes", "user nice system idle")(10.0, 0.2, 3.0, 50.0)


def test_busy_time_is_everything_but_idle_and_iowait_in_seconds():
    assert busy_seconds(TIMES) == pytest.approx((1000 + 20 + 300 + 10 + 5) / 100.0)
    assert busy_seconds(MAC_TIMES) == pytest.approx(13.2)


def test_other_work_is_the_machines_busy_time_less_the_jobs():
    first = Sample(at=10.0, cpus=2, busy_s=100.0, own_s=5.0)
    last = Sample(at=20.0, cpus=2, busy_s=118.0, own_s=17.0)
    load = between(first, last)
    assert (load.cpus, load.seconds) == (2, 10.0)
    assert load.busy_cores == pytest.approx(1.8) and load.job_cores == pytest.approx(1.2)
    assert load.other_cores == pytest.approx(0.6)
    # A job that reaped children started before the first sample can count more than the
    # machine's busy time moved: other work is then nothing, never negative.
    assert between(first, Sample(20.0, 2, 101.0, 17.0)).other_cores == 0.0
    assert between(None, last) is None and between(first, Sample(10.01, 2, 100.0, 5.0)) is None


def test_the_load_survives_outcome_json_and_an_older_outcome_has_none():
    outcome = Outcome("completed", 5.0, machine_load=MachineLoad(2, 5.0, 1.9, 1.1))
    again = Outcome.from_dict(outcome.to_dict())
    assert again.machine_load == MachineLoad(2, 5.0, 1.9, 1.1)
    older = outcome.to_dict()
    del older["machine_load"]
    assert Outcome.from_dict(older).machine_load is None


def _report(load):
    run = RunBuilder(world_size=2, max_steps=5)
    for rank in (0, 1):
        run[rank].train_steps(5)
        run[rank].end("script_exit")
    run.outcome("completed")
    model = run.model()
    model.outcome.machine_load = load
    return build_report(model, Severity.ERROR, set())


def test_the_report_says_when_other_work_took_the_machine_and_is_silent_when_quiet():
    busy = _report(MachineLoad(2, 8.0, 2.0, 0.9))
    [said] = [n for n in busy.notes if n.startswith("other processes")]
    assert said.startswith("other processes kept 1.1 of this machine's 2 CPUs busy while the job "
                           "ran (the job itself 0.9): the timing checks (DDP601-605)")
    assert busy.metrics["machine_load"]["other_cores"] == pytest.approx(1.1)
    quiet = _report(MachineLoad(2, 8.0, 1.3, 1.15))
    assert not [n for n in quiet.notes if n.startswith("other processes")]
    assert quiet.metrics["machine_load"]["busy_cores"] == pytest.approx(1.3)
    assert _report(None).metrics["machine_load"] is None


def test_without_a_step_the_load_is_said_without_the_timing_checks_caveat():
    run = RunBuilder(world_size=2, ranks=[], max_steps=5)  # --timeout before any rank started
    run.outcome("timeout_busy", stall_s=1.0, wall_s=1.0)
    model = run.model()
    model.outcome.machine_load = MachineLoad(2, 1.0, 2.0, 1.0)
    [said] = [n for n in build_report(model, Severity.ERROR, set()).notes if n.startswith("other processes")]
    assert said == "other processes kept 1.0 of this machine's 2 CPUs busy while the job ran (the job itself 1.0)"
