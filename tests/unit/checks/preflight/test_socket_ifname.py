"""DDP106 (checks/preflight/socket_ifname.py), fed ClusterFacts built from recorded fact files: no
processes, no network."""

from __future__ import annotations

from ddpdoctor.core.findings import Severity
from tests.helpers.preflight_facts import cluster, facts, node
from tests.unit.checks.preflight.facts_for_checks import run, nic_facts


def test_socket_ifname_naming_a_missing_interface_suggests_a_common_one():
    problems = run("DDP106", cluster(node(facts("gpu-a1")), node(facts("gpu-c1"))))
    assert {p.hosts[0] for p in problems} == {"gpu-c1"}
    messages = " ".join(p.message for p in problems)
    assert "GLOO_SOCKET_IFNAME=ens5" in messages and "NCCL_SOCKET_IFNAME==ens5" in messages
    assert "no interface name is up on every node" in problems[0].hint


def test_nccl_prefix_and_exclude_syntax_is_understood():
    a1 = facts("gpu-a1", env={"NCCL_SOCKET_IFNAME": "^docker,lo"})
    assert run("DDP106", cluster(node(a1), node(facts("gpu-a2")))) == []
    down = facts("gpu-a2", env={"NCCL_SOCKET_IFNAME": "docker"})
    problems = run("DDP106", cluster(node(facts("gpu-a1")), node(down)))
    assert problems[0].hosts == ["gpu-a2"] and "ens5" in problems[0].hint


def test_socket_ifname_selecting_docker0_with_the_same_address_everywhere_is_reported():
    env = {"GLOO_SOCKET_IFNAME": "docker0"}
    a = nic_facts("a", {"docker0": "172.17.0.1/16", "eth0": "10.1.0.11/24"}, env)
    b = nic_facts("b", {"docker0": "172.17.0.1/16", "eth0": "10.1.0.12/24"}, env)
    problems = run("DDP106", cluster(node(a), node(b)))
    assert len(problems) == 1 and problems[0].hosts == ["a", "b"]
    assert "same address 172.17.0.1" in problems[0].message
    assert "GLOO_SOCKET_IFNAME=eth0 work on every node" in problems[0].hint


def test_socket_ifname_loopback_cannot_reach_other_nodes():
    env = {"GLOO_SOCKET_IFNAME": "lo"}
    a = nic_facts("a", {"eth0": "10.1.0.11/24"}, env)
    b = nic_facts("b", {"eth0": "10.1.0.12/24"}, env)
    problems = run("DDP106", cluster(node(a), node(b)))
    assert problems[0].hosts == ["a", "b"] and "loopback" in problems[0].message


def test_nccl_default_pick_of_a_veth_before_the_nic_is_reported_for_an_nccl_job():
    # NCCL excludes only docker* and lo by default: a veth that comes first in kernel order wins.
    a = nic_facts("a", {"veth1a2b": "10.99.0.1/24", "ens5": "10.1.0.11/24"}, gpu_count=8)
    b = nic_facts("b", {"ens5": "10.1.0.12/24"}, gpu_count=8)
    problems = run("DDP106", cluster(node(a), node(b), backend="nccl"))
    assert len(problems) == 1 and problems[0].hosts == ["a"]
    assert "NCCL would bootstrap over veth1a2b" in problems[0].message
    assert problems[0].evidence["suggested"]["NCCL_SOCKET_IFNAME"] == "ens5"


def test_node_sharing_no_subnet_with_the_others_is_a_warning():
    a = nic_facts("a", {"eth0": "10.1.0.11/24"})
    b = nic_facts("b", {"eth0": "10.1.0.12/24"})
    c = nic_facts("c", {"eth0": "10.9.0.13/24"})
    problems = run("DDP106", cluster(node(a), node(b), node(c)))
    assert [(p.hosts, p.severity) for p in problems] == [(["c"], Severity.WARNING)]
    assert "shares no subnet" in problems[0].message


def test_cloud_slash_32_addresses_everywhere_are_not_judged_isolated():
    a = nic_facts("a", {"eth0": "10.128.0.5/32"})
    b = nic_facts("b", {"eth0": "10.128.0.6/32"})
    assert run("DDP106", cluster(node(a), node(b))) == []
