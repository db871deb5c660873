"""DDP102 (checks/preflight/loopback_address.py), fed ClusterFacts built from recorded fact files: no
processes, no network."""

from __future__ import annotations

from ddpdoctor.preflight.cluster import NodeResult
from ddpdoctor.preflight.hosts import HostEntry
from ddpdoctor.preflight.recorded import load_facts_file
from ddpdoctor.core.registry import Skipped
from ddpdoctor.preflight.transport import TransportFailure
from tests.helpers.preflight_facts import DATA, cluster, facts, node
from tests.unit.checks.preflight.facts_for_checks import run


def test_debian_127_0_1_1_hostname_trap_is_reported_in_a_multi_node_job():
    problems = run("DDP102", cluster(node(facts("gpu-a1")), node(facts("debian-1"), resolved=["10.0.2.7"])))
    assert len(problems) == 1
    assert problems[0].hosts == ["debian-1"] and "127.0.1.1" in problems[0].message
    assert "/etc/hosts" in problems[0].hint


def test_localhost_as_master_addr_in_a_multi_node_job_is_reported():
    problems = run("DDP102", cluster(node(facts("gpu-a1")), node(facts("gpu-a2")), master="localhost"))
    assert any("MASTER_ADDR localhost" in p.message for p in problems)


def test_loopback_is_fine_when_every_node_shares_one_network_namespace():
    shared = facts("gpu-a1").netns
    c = cluster(node(facts("gpu-a1"), host="localhost", resolved=["127.0.0.1"]),
                node(facts("gpu-a2", netns=shared), host="127.0.0.2", resolved=["127.0.0.2"]))
    assert isinstance(run("DDP102", c), Skipped)


def test_nodes_that_did_not_answer_do_not_make_a_job_multi_node():
    shared = facts("gpu-a1").netns
    dead = NodeResult(HostEntry("no-such-host.invalid", None, "h:3"), "ssh", None,
                      failure=TransportFailure("unresolvable", "x"), resolve_error="Name or service not known")
    c = cluster(node(facts("gpu-a1"), host="localhost", resolved=["127.0.0.1"]),
                node(facts("gpu-a2", netns=shared), host="127.0.0.2", resolved=["127.0.0.2"]), dead,
                master="localhost")
    result = run("DDP102", c)
    assert isinstance(result, Skipped) and "no-such-host.invalid not reached" in result.reason


def test_recorded_node_without_a_namespace_counts_as_another_machine():
    minimal = load_facts_file(str(DATA / "minimal.json"))
    c = cluster(node(facts("gpu-a1"), host="localhost", resolved=["127.0.0.1"]), node(minimal, transport="file"),
                master="localhost")
    assert [p.hosts for p in run("DDP102", c)][0] == ["localhost"]
