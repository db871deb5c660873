"""What the preflight check tests share: running one check, the facts they start from."""

from __future__ import annotations

from ddpdoctor.preflight.cluster import ClusterFacts
from ddpdoctor.preflight.node.facts import NodeFacts
from ddpdoctor.core.findings import Problem
from ddpdoctor.core.registry import Skipped, get_check
from tests.helpers.preflight_facts import cluster, facts, node


def run(code: str, c: ClusterFacts) -> list[Problem] | Skipped:
    return get_check(code).func(c)


def healthy() -> ClusterFacts:
    return cluster(node(facts("gpu-a1"), slots=8), node(facts("gpu-a2"), slots=8))


def nic_facts(name: str, interfaces: dict, env: dict | None = None, **changes) -> NodeFacts:
    """A node whose interfaces are given as {"eth0": "10.1.0.11/24", ...} (address/prefix)."""
    addrs = {"lo": ["127.0.0.1", "::1"], **{n: [cidr.split("/")[0]] for n, cidr in interfaces.items()}}
    nets = {"lo": ["127.0.0.1/8", "::1/128"], **{n: [cidr] for n, cidr in interfaces.items()}}
    return facts("gpu-a1", hostname=name, interfaces=addrs, networks=nets, interfaces_down=[],
                 env=env or {}, netns=f"boot/net:{name}", hostname_addresses=[next(iter(interfaces.values())).split("/")[0]],
                 **changes)


def smoke(**kw) -> ClusterFacts:
    from ddpdoctor.preflight.collective_result import CollectiveOutcome
    c = cluster(node(facts("gpu-a1"), host="a"), node(facts("gpu-a2"), host="b"), node(facts("gpu-b1"), host="c"))
    c.collective = CollectiveOutcome(**{"status": "ran", "hosts": ["a", "b", "c"], "world_size": 3, "world": "ok", **kw})
    return c


def pair(a, b, busbw=None, error=None, number=0):
    from ddpdoctor.preflight.collective_result import PairResult
    return PairResult([a, b], number, 1 << 20, None if error else (1 << 20) / busbw, busbw, error)
