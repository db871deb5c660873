"""DDP202 (checks/preflight/unique_hosts.py), fed ClusterFacts built from recorded fact files: no
processes, no network."""

from __future__ import annotations

from tests.helpers.preflight_facts import cluster, facts, node
from tests.unit.checks.preflight.facts_for_checks import run


def test_duplicate_host_is_reported_with_both_lines():
    problems = run("DDP202", cluster(node(facts("gpu-a1"), line=1), node(facts("gpu-a1"), line=3)))
    assert problems[0].hosts == ["gpu-a1"] and "hosts.txt lines 1, 3" in problems[0].message


def test_two_names_for_one_address_are_reported():
    problems = run("DDP202", cluster(node(facts("gpu-a1")), node(facts("gpu-a1"), host="10.0.0.11")))
    assert problems[0].hosts == ["gpu-a1", "10.0.0.11"]


def test_master_port_differing_between_nodes_is_reported():
    a = facts("gpu-a1", env={"MASTER_PORT": "29500"})
    b = facts("gpu-a2", env={"MASTER_PORT": "29501"})
    problems = run("DDP202", cluster(node(a), node(b)))
    assert "MASTER_PORT differs" in problems[0].message and "29501 on gpu-a2" in problems[0].message
