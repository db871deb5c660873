"""DDP107 (checks/preflight/collective_smoke.py), fed ClusterFacts built from recorded fact files: no
processes, no network."""

from __future__ import annotations

from ddpdoctor.core.findings import Severity
from ddpdoctor.core.registry import Skipped
from tests.unit.checks.preflight.facts_for_checks import run, healthy, smoke, pair


def test_collective_check_is_skipped_until_asked_for_and_says_how():
    result = run("DDP107", healthy())
    assert isinstance(result, Skipped) and "--collective" in result.reason


def test_node_failing_every_pair_while_the_others_work_is_named():
    c = smoke(pairs=[pair("a", "b", 5e8), pair("a", "c", error="Connection refused", number=1),
                      pair("b", "c", error="timed out", number=2)], world="skipped",
               world_detail="pair tests failed")
    problems = run("DDP107", c)
    assert [p.hosts for p in problems] == [["c"]]
    assert "every pair test with it failed" in problems[0].message and "all ports" in problems[0].hint


def test_slow_node_is_a_warning_and_noise_is_not():
    slow = smoke(pairs=[pair("a", "b", 5e8), pair("a", "c", 4e6, number=1), pair("b", "c", 5e6, number=2)])
    problems = run("DDP107", slow)
    assert [(p.hosts, p.severity) for p in problems] == [(["c"], Severity.WARNING)]
    noisy = smoke(pairs=[pair("a", "b", 1.2e9), pair("a", "c", 2.3e8, number=1), pair("b", "c", 2.6e8, number=2)])
    assert run("DDP107", noisy) == []


def test_world_all_reduce_timeout_names_the_ranks():
    from ddpdoctor.preflight.collective_result import RankResult
    ranks = [RankResult(0, "a", 0, "size"), RankResult(1, "b", 0, "world-init", "killed at the deadline while in the first all-reduce"),
             RankResult(2, "c", 0, "size")]
    c = smoke(pairs=[pair("a", "b", 5e8)], ranks=ranks, world="failed")
    problems = run("DDP107", c)
    assert problems[0].ranks == [1] and problems[0].hosts == ["b"] and "timed out" in problems[0].message
