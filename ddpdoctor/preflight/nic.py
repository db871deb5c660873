"""Which network interface NCCL and Gloo would use on each node, which interfaces can carry
traffic between the nodes, and a NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME value that works on
every node: the model behind DDP106. Pure functions of NodeFacts, no sockets, no processes.

How the libraries choose (what is modelled here):

- NCCL bootstraps over the *first* interface, in the kernel's order, that NCCL_SOCKET_IFNAME
  selects: comma-separated prefixes (`ens` matches ens5), `=` for exact names, `^` to exclude.
  Unset: interfaces starting with `ib`, else anything but `docker*` and `lo`, else docker, else
  lo. Interfaces that are down or have no address (IPv6 link-local does not count) are skipped.
- Gloo uses every interface GLOO_SOCKET_IFNAME names (exact names). Unset: the address the
  node's hostname resolves to, on whichever interface holds it (127.0.1.1 means loopback: that
  is DDP102's trap, not repeated here).

An interface can carry traffic to other nodes ("routable") when another node has a different
address in one of its subnets. It cannot ("local") when it is loopback, a node-local bridge or
veth by its name (docker0, virbr0, veth*, cni0, ...), or has the very address another node has
too (every node's docker0 is 172.17.0.1). With no other node on its subnets it is "isolated":
suspicious, but some clouds hand out /32 addresses and route everything, so that is never an
error on its own. Recorded facts without subnets (`networks`) leave an interface "unknown",
judged by its name only.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Optional, Union

from ddpdoctor.preflight.node.facts import NodeFacts

NCCL_VAR = "NCCL_SOCKET_IFNAME"
GLOO_VAR = "GLOO_SOCKET_IFNAME"
# Interface name prefixes that are node-local by construction (container and VM plumbing).
NODE_LOCAL_PREFIXES = ("docker", "veth", "virbr", "br-", "cni", "cali", "lxcbr", "podman", "vnet")
# What NCCL tries, in order, when NCCL_SOCKET_IFNAME is unset.
_NCCL_DEFAULT_ORDER = ("ib", "^docker,lo", "docker", "lo")

IPNet = Union[ipaddress.IPv4Interface, ipaddress.IPv6Interface]


@dataclass(frozen=True)
class Reach:
    """Whether one interface of one node can carry traffic to the other nodes."""

    verdict: str  # routable | local | isolated | unknown
    why: str = ""  # for people: "loopback", "the same address 172.17.0.1 on a, b: node-local"


def _usable_addresses(addresses: list[str]) -> list[str]:
    return [a for a in addresses if not _link_local(a)]


def _link_local(address: str) -> bool:
    try:
        return ipaddress.ip_address(address.split("%", 1)[0]).is_link_local
    except ValueError:
        return False


def _is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def _networks(facts: NodeFacts, name: str) -> list[IPNet]:
    out = []
    for text in facts.networks.get(name, []):
        try:
            net = ipaddress.ip_interface(text.split("%", 1)[0])
        except ValueError:
            continue
        if not net.ip.is_link_local:
            out.append(net)
    return out


def usable(facts: NodeFacts) -> list[str]:
    """Interfaces that are up and have an address other than IPv6 link-local, in kernel order."""
    return [name for name, addrs in facts.interfaces.items()
            if name not in facts.interfaces_down and _usable_addresses(addrs)]


def node_local_name(name: str) -> bool:
    return name == "lo" or name.startswith(NODE_LOCAL_PREFIXES)


def nccl_selects(value: str, names: list[str]) -> list[str]:
    """The interfaces of `names` that a NCCL_SOCKET_IFNAME value selects, in their order."""
    text = value.strip()
    exclude, exact = text.startswith("^"), False
    text = text.lstrip("^")
    if text.startswith("="):
        exact, text = True, text[1:]
    specs = [p.strip() for p in text.split(",") if p.strip()]

    def hit(name: str) -> bool:
        return any(name == s if exact else name.startswith(s) for s in specs)

    return [n for n in names if hit(n) != exclude]


def nccl_choice(facts: NodeFacts, value: Optional[str] = None) -> list[str]:
    """Interfaces NCCL would use on this node, in order; the first is the bootstrap interface.
    `value` None: the node's own NCCL_SOCKET_IFNAME."""
    names = usable(facts)
    if value is None:
        value = facts.env.get(NCCL_VAR)
    if value and len(value.strip()) > 1:  # NCCL ignores a one-character value
        return nccl_selects(value, names)
    for spec in _NCCL_DEFAULT_ORDER:
        found = nccl_selects(spec, names)
        if found:
            return found
    return []


def gloo_choice(facts: NodeFacts, value: Optional[str] = None) -> list[str]:
    """Interfaces Gloo would use on this node. `value` None: the node's own GLOO_SOCKET_IFNAME;
    unset, the interface holding the address the hostname resolves to ([] when that is loopback
    or unknown: DDP101/DDP102 speak to those)."""
    if value is None:
        value = facts.env.get(GLOO_VAR)
    if value and len(value.strip()) > 1:
        return [n for n in (p.strip() for p in value.split(",")) if n in facts.interfaces]
    for address in facts.hostname_addresses:
        if _is_loopback(address):
            return []
        holder = next((n for n, addrs in facts.interfaces.items() if address in addrs), None)
        if holder:
            return [holder]
    return []


def reach(nodes: dict[str, NodeFacts]) -> dict[str, dict[str, Reach]]:
    """{host: {interface: Reach}} for every usable interface of every node."""
    addresses_of = {h: {a for n in usable(f) for a in _usable_addresses(f.interfaces[n])}
                    for h, f in nodes.items()}
    out: dict[str, dict[str, Reach]] = {}
    for host, facts in nodes.items():
        others = {h: addrs for h, addrs in addresses_of.items() if h != host}
        verdicts = {}
        for name in usable(facts):
            verdicts[name] = _judge(host, facts, name, others)
        out[host] = verdicts
    return out


def _judge(host: str, facts: NodeFacts, name: str, others: dict[str, set[str]]) -> Reach:
    addresses = _usable_addresses(facts.interfaces[name])
    if name == "lo" or all(_is_loopback(a) for a in addresses):
        return Reach("local", "loopback")
    shared = [a for a in addresses if any(a in addrs for addrs in others.values())]
    if shared and others:
        holders = [h for h, addrs in others.items() if shared[0] in addrs]
        return Reach("local", f"the same address {shared[0]} is on {', '.join([host, *holders][:4])}: "
                              "a node-local network")
    if name.startswith(NODE_LOCAL_PREFIXES):
        return Reach("local", "a container or VM bridge/veth: it exists on this node only")
    networks = _networks(facts, name)
    if not networks or not others:
        return Reach("unknown")
    for net in networks:
        for h, addrs in others.items():
            for a in addrs:
                try:
                    if ipaddress.ip_address(a) in net.network:
                        return Reach("routable", f"{net.network} is shared with {h}")
                except ValueError:
                    continue
    return Reach("isolated", f"no other node has an address in {', '.join(str(n.network) for n in networks)}")


def address_of(facts: NodeFacts, name: str) -> str:
    """The interface's first address, IPv4 first, for messages."""
    addrs = _usable_addresses(facts.interfaces.get(name, []))
    v4 = [a for a in addrs if ":" not in a]
    return (v4 or addrs or ["no address"])[0]


@dataclass
class Advice:
    """Values of the two variables that pick a good interface on every node, or why there is none."""

    good: dict[str, list[str]]  # host -> interfaces that can carry the job's traffic, best first
    nccl: Optional[str] = None  # a NCCL_SOCKET_IFNAME value that works on every node
    gloo: Optional[str] = None  # a GLOO_SOCKET_IFNAME value that works on every node
    lacking: list[str] = field(default_factory=list)  # hosts with no good interface at all

    def text(self) -> str:
        """One line of advice for a hint."""
        if self.lacking:
            return (f"{', '.join(self.lacking)} {'has' if len(self.lacking) == 1 else 'have'} no interface that "
                    "reaches the other nodes: give it an address on the cluster network")
        parts = []
        if self.nccl:
            parts.append(f"NCCL_SOCKET_IFNAME={self.nccl}")
        if self.gloo:
            parts.append(f"GLOO_SOCKET_IFNAME={self.gloo}")
        works = " and ".join(parts) + " work on every node" if parts else ""
        if self.gloo:
            return works
        per_node = "; ".join(f"{ifs[0]} on {h}" for h, ifs in self.good.items() if ifs)
        gloo = ("no interface name is up on every node; set GLOO_SOCKET_IFNAME per node to the interface it has "
                f"({per_node})")
        return f"{works}; {gloo}" if works else gloo


def advise(nodes: dict[str, NodeFacts], verdicts: Optional[dict[str, dict[str, Reach]]] = None) -> Advice:
    """Find values that select a good interface on every node; verified by running the same
    selection model the check uses, not by string matching alone."""
    verdicts = verdicts if verdicts is not None else reach(nodes)
    good: dict[str, list[str]] = {}
    for host, per_iface in verdicts.items():
        ranked = [n for n, r in per_iface.items() if r.verdict == "routable"]
        if not ranked:
            ranked = [n for n, r in per_iface.items() if r.verdict in ("unknown", "isolated")]
        good[host] = ranked
    lacking = [h for h, ifs in good.items() if not ifs]
    advice = Advice(good=good, lacking=lacking)
    if lacking or not nodes:
        return advice
    first = next(iter(good.values()))
    common = [n for n in first if all(n in ifs for ifs in good.values())]
    candidates: list[str] = []
    for name in common:
        candidates += [name, f"={name}"]
    firsts = list(dict.fromkeys(ifs[0] for ifs in good.values()))
    candidates.append(",".join(firsts))
    bad = sorted({_prefix(n) for per in verdicts.values() for n, r in per.items() if r.verdict == "local"})
    if bad:
        candidates.append("^" + ",".join(bad))
    for value in candidates:
        if all((nccl_choice(f, value) or [None])[0] in good[h] for h, f in nodes.items()):
            advice.nccl = value
            break
    for name in common:
        advice.gloo = name
        break
    return advice


def _prefix(name: str) -> str:
    """docker0 -> docker, veth1a2b -> veth: the stem an exclusion list needs."""
    for stem in ("lo", *NODE_LOCAL_PREFIXES):
        if name.startswith(stem):
            return stem
    return name
