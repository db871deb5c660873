"""Every verdict path is total: runs with no ranks, empty groups or peer-sized numbers end in a
finding or an incomplete check, never a crashed check (exit 3) or an unearned pass."""

from __future__ import annotations

import pytest

from ddpdoctor.core.findings import Severity
from ddpdoctor.core.registry import CRASHED, PASSED
from ddpdoctor.probe.report import build_report
from tests.helpers.telemetry_builders import RunBuilder


def test_a_two_node_probe_whose_ranks_hung_before_their_first_line_is_a_stall_not_a_crash():
    run = RunBuilder(world_size=4, ranks=[], nnodes=2, nproc_per_node=2)
    run.outcome("stalled", exit_codes={}, stall_s=12.0, stall_timeout_s=10.0)
    report = build_report(run.model(), Severity.ERROR, set())
    by_code = {r.spec.code: r for r in report.results}
    assert not [r.spec.code for r in report.results if r.status == CRASHED], report.to_dict()["checks"]
    stall = by_code["DDP503"]
    assert stall.findings and stall.findings[0].ranks == [0, 1, 2, 3]
    assert "left no telemetry" in stall.findings[0].message
    assert report.exit_code == 1


def test_a_stalled_run_with_no_rank_and_no_world_size_is_incomplete_not_a_pass():
    run = RunBuilder(world_size=0, ranks=[], nnodes=2, nproc_per_node=0)
    run.outcome("stalled", exit_codes={}, stall_s=12.0, stall_timeout_s=10.0)
    report = build_report(run.model(), Severity.ERROR, set())
    assert not [r.spec.code for r in report.results if r.status == CRASHED]
    assert {r.status for r in report.results if r.spec.code == "DDP503"} != {PASSED}
    assert report.exit_code != 0


def test_findings_of_one_kind_beyond_the_cap_are_summarised_in_one():
    from ddpdoctor.core.findings import Problem
    from ddpdoctor.core.registry import MAX_FINDINGS_PER_CHECK, capped

    many = [Problem(f"collective {i} skipped", "fix", ranks=[i % 7]) for i in range(10_000)]
    kept = capped(many, "DDP502")
    assert len(kept) == MAX_FINDINGS_PER_CHECK
    assert kept[-1].message.startswith(f"{10_000 - MAX_FINDINGS_PER_CHECK + 1:,} more DDP502 findings")
    assert kept[-1].evidence["summarised"] == 10_000 - MAX_FINDINGS_PER_CHECK + 1
    assert capped(many[:3], "DDP502") == many[:3]


def test_a_node_refused_for_its_token_is_named_so_not_as_a_machine_that_may_be_down():
    from tests.helpers.telemetry_builders import judge

    run = RunBuilder(world_size=2, nnodes=2, nproc_per_node=1, ranks=[0])
    run.outcome("node_lost", exit_codes={0: 0})
    model = run.model()
    model.outcome.nodes = [
        {"node_rank": 0, "host": "n0", "status": "connected", "ranks": [0],
         "refusals": ["refused a connection from 10.0.0.2: not signed with this job's gather token"]},
        {"node_rank": 1, "host": "?", "status": "never_connected", "ranks": [],
         "reason": "its ddpdoctor never connected to node 0"}]
    [finding] = judge("DDP507", model)
    assert "not signed with this job's gather token" in finding.message
    assert "--gather-token" in finding.hint and "machine up" not in finding.hint


@pytest.mark.parametrize("status", ["completed", "stalled", "crashed", "node_lost", "timeout"])
@pytest.mark.parametrize("ranks", [[0], []], ids=["node0-rank", "no-rank"])
def test_a_node_that_sent_final_with_no_ranks_never_crashes_a_check(status, ranks):
    run = RunBuilder(world_size=2, ranks=ranks, nnodes=2, nproc_per_node=1)
    if ranks:
        run.all("train_steps", 2)
    run.outcome(status, exit_codes={}, stall_s=12.0, stall_timeout_s=10.0)
    model = run.model()
    model.outcome.nodes = [
        {"node_rank": 0, "host": "n0", "status": "connected", "ranks": ranks, "refusals": []},
        {"node_rank": 1, "host": "n1", "status": "finished", "ranks": [], "outcome": "completed",
         "exit_codes": {}, "log_tail": "", "ended_at": None}]
    report = build_report(model, Severity.ERROR, set())
    assert not [r.spec.code for r in report.results if r.status == CRASHED]
    assert report.exit_code != 0  # node 1's ranks left nothing: never a pass


@pytest.mark.serial
def test_twenty_thousand_misaligned_collectives_are_judged_in_bounded_time_and_size():
    import time

    from ddpdoctor.report import json as json_report
    from tests.helpers.telemetry_builders import site

    run = RunBuilder(world_size=2)
    run.all("train_steps", 2)
    for i in range(20_000):  # every call differs between the ranks: 200 divergences looked at
        run[0].collective(site=site(100 + i % 50), shapes=((i % 97 + 1,),))
        run[1].collective(site=site(100 + i % 50), shapes=((i % 89 + 1,),))
    run.outcome("stalled", exit_codes={}, stall_s=12.0, stall_timeout_s=10.0)
    model = run.model()
    started = time.process_time()
    report = build_report(model, Severity.ERROR, set())
    assert time.process_time() - started < 30  # was 26 s for 10,000 (whole sequences per divergence)
    assert len(json_report.render(report, set())) < 1_000_000
    assert report.exit_code == 1
