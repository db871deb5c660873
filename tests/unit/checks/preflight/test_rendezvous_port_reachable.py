"""DDP103 (checks/preflight/rendezvous_port_reachable.py), fed ClusterFacts built from recorded fact files: no
processes, no network."""

from __future__ import annotations

from ddpdoctor.preflight.node.facts import ConnectResult
from ddpdoctor.core.registry import Skipped
from tests.helpers.preflight_facts import cluster, facts, node
from tests.unit.checks.preflight.facts_for_checks import run


def test_refused_and_timed_out_connects_are_told_apart():
    refused = facts("gpu-a2", connect=ConnectResult("gpu-a1:29500", "refused", "10.0.0.11", "Connection refused"))
    filtered = facts("gpu-b1", connect=ConnectResult("gpu-a1:29500", "timeout", "10.0.0.11", "no answer within 3.0 s"))
    problems = run("DDP103", cluster(node(facts("gpu-a1")), node(refused), node(filtered)))
    by_host = {p.hosts[0]: p for p in problems}
    assert set(by_host) == {"gpu-a2", "gpu-b1"}
    assert "refused" in by_host["gpu-a2"].message and "firewall" in by_host["gpu-b1"].message
    assert "29500" in by_host["gpu-b1"].hint


def test_unresolvable_master_on_a_node_is_reported():
    lost = facts("gpu-a2", connect=ConnectResult("gpu-a1:29500", "unresolvable", None, "Name or service not known"))
    problems = run("DDP103", cluster(node(facts("gpu-a1")), node(lost)))
    assert problems[0].hosts == ["gpu-a2"] and "gpu-a1" in problems[0].hint


def test_connect_check_is_skipped_when_nothing_held_the_port():
    c = cluster(node(facts("gpu-a1")), node(facts("gpu-a2")), bind="not-checked")
    assert isinstance(run("DDP103", c), Skipped)
