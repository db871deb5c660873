"""DDP101 (checks/preflight/host_resolves.py), fed ClusterFacts built from recorded fact files: no
processes, no network."""

from __future__ import annotations

from ddpdoctor.preflight.cluster import NodeResult
from ddpdoctor.core.findings import Severity
from ddpdoctor.preflight.hosts import HostEntry
from ddpdoctor.preflight.transport import TransportFailure
from tests.helpers.preflight_facts import cluster, facts, node
from tests.unit.checks.preflight.facts_for_checks import run


def test_unresolvable_host_is_reported_with_its_line_and_a_fix():
    bad = NodeResult(HostEntry("no-such-host.invalid", None, "hosts.txt:2"), "ssh", None,
                     failure=TransportFailure("unresolvable", "ssh cannot resolve no-such-host.invalid"),
                     resolve_error="[Errno -2] Name or service not known")
    problems = run("DDP101", cluster(node(facts("gpu-a1")), bad))
    assert len(problems) == 1
    assert problems[0].hosts == ["no-such-host.invalid"]
    assert "hosts.txt:2" in problems[0].hint and "/etc/hosts" in problems[0].hint


def test_node_that_cannot_resolve_its_own_hostname_is_reported():
    f = facts("gpu-a2", resolve_errors={"gpu-a2": "[Errno -2] Name or service not known"}, hostname_addresses=[])
    problems = run("DDP101", cluster(node(facts("gpu-a1")), node(f, resolved=["10.0.0.12"])))
    assert problems[0].hosts == ["gpu-a2"] and "own hostname" in problems[0].message


def test_ssh_alias_that_dns_cannot_resolve_is_only_a_warning():
    aliased = node(facts("gpu-a2"), host="a2-alias", resolved=[], resolve_error="Name or service not known")
    problems = run("DDP101", cluster(node(facts("gpu-a1")), aliased))
    assert problems[0].severity == Severity.WARNING and problems[0].hosts == ["a2-alias"]


def test_unresolvable_master_addr_outside_the_list_is_ddp101():
    c = cluster(node(facts("gpu-a1")), node(facts("gpu-a2")), master="rdzv.typo.invalid", bind="not-checked",
                master_resolve_error="[Errno -2] Name or service not known")
    problems = run("DDP101", c)
    assert problems[0].hosts == ["rdzv.typo.invalid"] and "MASTER_ADDR" in problems[0].message
