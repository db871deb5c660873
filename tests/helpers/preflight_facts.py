"""ClusterFacts built from the recorded node fact files in tests/data/facts: what the preflight
checks judge, without processes or network."""

from __future__ import annotations

import copy
from pathlib import Path

from ddpdoctor.preflight.cluster import ClusterFacts, NodeResult, PortBind
from ddpdoctor.preflight.hosts import HostEntry
from ddpdoctor.preflight.node.facts import NodeFacts
from ddpdoctor.preflight.recorded import load_facts_file

DATA = Path(__file__).resolve().parents[1] / "data" / "facts"


def facts(name: str, **changes) -> NodeFacts:
    loaded = load_facts_file(str(DATA / f"{name}.json"))
    loaded = copy.deepcopy(loaded)
    for key, value in changes.items():
        setattr(loaded, key, value)
    return loaded


def node(f: NodeFacts | None, host: str | None = None, slots=None, transport="ssh", **kw) -> NodeResult:
    host = host or f.hostname
    resolved = kw.pop("resolved", list(f.hostname_addresses) if f else [])
    return NodeResult(HostEntry(host, slots, f"hosts.txt:{kw.pop('line', 1)}"), transport, f,
                      resolved=resolved, **kw)


def cluster(*nodes: NodeResult, master=None, port=29500, bind="listening", backend="auto", **kw) -> ClusterFacts:
    master = master or nodes[0].host
    return ClusterFacts(nodes=list(nodes), master_addr=master, master_port=port, backend=backend,
                        port_bind=kw.pop("port_bind", PortBind(master, port, bind)),
                        this_machine=nodes[0].facts, **kw)
