"""DDP105 (checks/preflight/transport_reaches_node.py), fed ClusterFacts built from recorded fact files: no
processes, no network."""

from __future__ import annotations

import pytest

from ddpdoctor.preflight.cluster import NodeResult
from ddpdoctor.preflight.hosts import HostEntry
from ddpdoctor.preflight.transport import TransportFailure
from tests.helpers.preflight_facts import cluster, facts, node
from tests.unit.checks.preflight.facts_for_checks import run


@pytest.mark.parametrize("kind, fix_word", [("refused", "sshd"), ("auth", "ssh-copy-id"), ("timeout", "--timeout"),
                                            ("host-key", "known_hosts"), ("no-python", "--remote-python")])
def test_unreachable_node_gets_a_fix_for_its_kind_of_failure(kind, fix_word):
    dead = NodeResult(HostEntry("gpu-a2", None, "hosts.txt:2"), "ssh", None,
                      failure=TransportFailure(kind, f"ssh to gpu-a2 failed ({kind})", "ssh: some evidence", 255))
    problems = run("DDP105", cluster(node(facts("gpu-a1")), dead))
    assert problems[0].hosts == ["gpu-a2"] and fix_word in problems[0].hint
    assert "ssh: some evidence" in problems[0].message


def test_many_nodes_failing_the_same_way_make_one_finding():
    dead = [NodeResult(HostEntry(f"gpu{i:02d}", None, f"h:{i}"), "ssh", None,
                       failure=TransportFailure("timeout", f"ssh to gpu{i:02d} timed out")) for i in range(10)]
    problems = run("DDP105", cluster(node(facts("gpu-a1")), *dead))
    assert len(problems) == 1 and len(problems[0].hosts) == 10 and "and 4 more" in problems[0].message
