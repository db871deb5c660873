"""DDP104 (checks/preflight/rendezvous_port_free.py), fed ClusterFacts built from recorded fact files: no
processes, no network."""

from __future__ import annotations

from ddpdoctor.preflight.cluster import PortBind
from tests.helpers.preflight_facts import cluster, facts, node
from tests.unit.checks.preflight.facts_for_checks import run


def test_port_in_use_names_the_process_holding_it():
    bind = PortBind("gpu-a1", 29500, "in-use", "Address already in use", 4242, "python3")
    problems = run("DDP104", cluster(node(facts("gpu-a1")), port_bind=bind))
    assert problems[0].hosts == ["gpu-a1"]
    assert "python3 (pid 4242)" in problems[0].message and "kill 4242" in problems[0].hint


def test_port_in_use_by_an_invisible_process_suggests_ss():
    bind = PortBind("gpu-a1", 29500, "in-use", "Address already in use")
    problems = run("DDP104", cluster(node(facts("gpu-a1")), port_bind=bind))
    assert "ss -ltnp" in problems[0].hint
