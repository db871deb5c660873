"""The one builder of the cluster model, whatever reached the nodes (ssh, this machine, the store
of `--via store`, or a recorded fact file), and the timeouts every path shares.

run.py and store_mode.py each reach the nodes their own way; what they found goes through here,
so a recorded node, a resolved name or a failure means the same thing on every path.
"""

from __future__ import annotations

import dataclasses
from typing import Optional, Union

from ddpdoctor.preflight.cluster import ClusterFacts, NodeResult, PortBind
from ddpdoctor.preflight.hosts import HostEntry
from ddpdoctor.preflight.node.facts import NodeFacts, endpoint
from ddpdoctor.preflight.resolve import Resolution
from ddpdoctor.preflight.transport import TransportFailure

Outcome = Union[NodeFacts, TransportFailure]


def resolve_timeout(timeout: float) -> float:
    """How long a name lookup may take: a broken resolver must not eat the whole --timeout."""
    return min(timeout, 5.0)


def connect_timeout(timeout: float) -> float:
    """How long a node's TCP connect to MASTER_ADDR:MASTER_PORT (DDP103) may take: long enough
    for a slow network, short enough to leave the rest of --timeout to the facts themselves."""
    return max(0.5, min(5.0, timeout * 0.3))


def as_recorded(facts: NodeFacts, master: str, port: int) -> NodeFacts:
    """A recorded node's connect result counts only if it was recorded against this endpoint."""
    if facts.connect is None or facts.connect.target == endpoint(master, port):
        return facts
    return dataclasses.replace(facts, connect=None)


def build_cluster(opts, entries: list[HostEntry], recorded: dict, master: str,
                  resolved: dict[str, Resolution], routes: dict[str, str], outcomes: dict[str, Outcome],
                  port_bind: PortBind, this_machine: Optional[NodeFacts]) -> ClusterFacts:
    """The ClusterFacts every preflight check reads. `routes` names how each host was reached
    (local | ssh | store; a host in `recorded` is always "file"), `outcomes` what it said or why
    it could not be asked; `recorded` maps a host to its (fact file, facts)."""
    nodes = []
    for entry in entries:
        if entry.name in recorded:
            path, facts = recorded[entry.name]
            nodes.append(NodeResult(entry, "file", facts=as_recorded(facts, master, opts.master_port),
                                    facts_file=path))
            continue
        resolution = resolved.get(entry.name, Resolution([]))
        node = NodeResult(entry, routes[entry.name], resolved=resolution.addresses,
                          resolve_error=resolution.error)
        outcome = outcomes[entry.name]
        if isinstance(outcome, NodeFacts):
            node.facts = outcome
        else:
            node.failure = outcome
        nodes.append(node)
    master_resolution = resolved.get(master, Resolution([]))
    return ClusterFacts(nodes=nodes, master_addr=master, master_port=opts.master_port, backend=opts.backend,
                        port_bind=port_bind, this_machine=this_machine, nproc_per_node=opts.nproc_per_node,
                        world_size=opts.world_size, master_resolved=master_resolution.addresses,
                        master_resolve_error=master_resolution.error, via=opts.via)
