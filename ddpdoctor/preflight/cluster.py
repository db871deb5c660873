"""The model every preflight check reads: the host list, what each node said (or why it could
not be asked), the rendezvous endpoint and what the port tests found.

Checks are pure functions of a ClusterFacts; tests build one from recorded fact files.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any, Optional

from ddpdoctor.preflight.collective_result import CollectiveOutcome
from ddpdoctor.preflight.node.facts import ConnectResult, NodeFacts
from ddpdoctor.preflight.hosts import HostEntry
from ddpdoctor.preflight.transport import TransportFailure


@dataclass
class NodeResult:
    """One host of the list and what came of asking it."""

    entry: HostEntry
    transport: str  # local | ssh | store | file
    facts: Optional[NodeFacts] = None
    failure: Optional[TransportFailure] = None
    resolved: list[str] = field(default_factory=list)  # what this machine resolves the name to
    resolve_error: Optional[str] = None  # None: resolved, or not tried (recorded facts)
    facts_file: Optional[str] = None  # the --facts file standing in for this node

    @property
    def host(self) -> str:
        return self.entry.name

    @property
    def reached(self) -> bool:
        return self.facts is not None

    @property
    def connect(self) -> Optional[ConnectResult]:
        return self.facts.connect if self.facts else None


@dataclass
class PortBind:
    """Whether the rendezvous port could be bound on the master, and who holds it if not."""

    host: str
    port: int
    status: str  # listening | in-use | error | not-checked
    detail: str = ""
    holder_pid: Optional[int] = None
    holder_name: Optional[str] = None
    where: str = "local"  # local | ssh

    @classmethod
    def from_info(cls, host: str, info: dict[str, Any], where: str) -> "PortBind":
        return cls(host, int(info.get("port", 0)), str(info.get("status", "error")),
                   str(info.get("detail", "")), info.get("holder_pid"), info.get("holder_name"), where)


@dataclass
class ClusterFacts:
    nodes: list[NodeResult]
    master_addr: str
    master_port: int
    backend: str  # auto | nccl | gloo, as asked
    port_bind: PortBind
    this_machine: Optional[NodeFacts] = None
    nproc_per_node: Optional[int] = None  # --nproc-per-node; None: slots from the list, else 1
    world_size: Optional[int] = None  # --world-size
    master_resolved: list[str] = field(default_factory=list)  # MASTER_ADDR as this machine resolves it
    master_resolve_error: Optional[str] = None
    collective: Optional[CollectiveOutcome] = None  # the smoke test (--collective); None: not asked
    via: str = "auto"  # how facts were gathered: auto (local + ssh) | local | ssh | store

    @property
    def reached(self) -> list[NodeResult]:
        return [n for n in self.nodes if n.facts is not None]

    def procs_on(self, node: NodeResult) -> int:
        """Processes this node will run: --nproc-per-node, else the list's slots, else 1 (torchrun's default)."""
        if self.nproc_per_node is not None:
            return self.nproc_per_node
        return node.entry.slots or 1

    @property
    def expected_world_size(self) -> int:
        return sum(self.procs_on(n) for n in self.nodes)

    @property
    def resolved_backend(self) -> str:
        """auto: nccl when every node that answered has a GPU, else gloo."""
        if self.backend != "auto":
            return self.backend
        reached = self.reached
        if reached and all((n.facts.gpu_count or 0) > 0 for n in reached):
            return "nccl"
        return "gloo"

    @property
    def network_namespaces(self) -> int:
        """How many distinct network stacks the nodes live in, as far as can be told. A node that
        did not answer but resolves (from here) only to loopback is this machine; a recorded node
        without a namespace is a machine of its own; other nodes that did not answer are left out
        (DDP101/DDP105 report them; guessing would only add noise)."""
        here = self.this_machine.netns if self.this_machine else None
        seen: set[str] = set()
        for i, node in enumerate(self.nodes):
            if node.facts is not None:
                seen.add(node.facts.netns or f"unknown-{i}")
            elif node.resolved and all(map(is_loopback, node.resolved)):
                seen.add(here or "this-machine")
        return len(seen)

    @property
    def unjudged(self) -> list[str]:
        """Nodes whose machine is unknown: not reached, and not resolving to loopback here."""
        return [n.host for n in self.nodes if n.facts is None
                and not (n.resolved and all(map(is_loopback, n.resolved)))]

    @property
    def multi_node(self) -> bool:
        """More than one machine (network stack): loopback addresses stop working between them."""
        return self.network_namespaces > 1

    def node_named(self, name: str) -> Optional[NodeResult]:
        lowered = name.lower()
        return next((n for n in self.nodes if n.host.lower() == lowered), None)


def is_loopback(address: str) -> bool:
    """127.0.0.0/8 (127.0.1.1 included), ::1 and IPv4-mapped loopback."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def group_hosts(values: dict[str, Any]) -> list[tuple[Any, list[str]]]:
    """{"a": "1", "b": "2", "c": "1"} -> [("1", ["a", "c"]), ("2", ["b"])], largest group first."""
    groups: dict[Any, list[str]] = {}
    for host, value in values.items():
        groups.setdefault(value, []).append(host)
    return sorted(groups.items(), key=lambda kv: (-len(kv[1]), str(kv[0])))


def describe_groups(values: dict[str, Any], unset: str = "not set") -> str:
    """"2.5.1 on a, c; 2.4.0 on b": which hosts have which value."""
    return "; ".join(f"{unset if v is None else v} on {', '.join(hosts)}"
                     for v, hosts in group_hosts(values))


def name_list(items: list[str], shown: int = 6) -> str:
    """"a, b, c" or, for long lists, "a, b, c, d, e, f and 58 more"."""
    text = ", ".join(items[:shown])
    return text + (f" and {len(items) - shown} more" if len(items) > shown else "")
