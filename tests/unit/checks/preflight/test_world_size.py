"""DDP201 (checks/preflight/world_size.py), fed ClusterFacts built from recorded fact files: no
processes, no network."""

from __future__ import annotations

from ddpdoctor.core.findings import Severity
from tests.helpers.preflight_facts import cluster, facts, node
from tests.unit.checks.preflight.facts_for_checks import run


def test_wrong_world_size_shows_the_arithmetic():
    c = cluster(node(facts("gpu-a1")), node(facts("gpu-a2")), nproc_per_node=8, world_size=8)
    problems = run("DDP201", c)
    assert "2 nodes x 8 processes = 16" in problems[0].message and "--world-size 16" in problems[0].hint


def test_stale_world_size_in_the_environment_is_reported():
    stale = facts("gpu-a2", env={"WORLD_SIZE": "8"})
    problems = run("DDP201", cluster(node(facts("gpu-a1"), slots=8), node(stale, slots=8)))
    assert problems[0].hosts == ["gpu-a2"] and "WORLD_SIZE" in problems[0].message


def test_slots_that_disagree_with_nproc_per_node_are_a_warning():
    c = cluster(node(facts("gpu-a1"), slots=8), node(facts("gpu-a2"), slots=4), nproc_per_node=8)
    problems = run("DDP201", c)
    assert problems[0].severity == Severity.WARNING and problems[0].hosts == ["gpu-a2"]
