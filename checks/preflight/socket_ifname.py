"""DDP106: NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME names an interface a node lacks."""

from __future__ import annotations

from ddpdoctor.cluster import ClusterFacts, is_loopback
from ddpdoctor.findings import Problem, Severity
from ddpdoctor.registry import Skipped, check

VARIABLES = ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME")
# Interfaces that are never the one to suggest for traffic between nodes.
_NOT_SUGGESTED = ("lo", "docker", "virbr", "veth", "br-", "cni", "flannel", "ifb")


def _usable(facts) -> dict[str, list[str]]:
    """Interfaces that are up and have an address."""
    return {name: addrs for name, addrs in facts.interfaces.items()
            if addrs and name not in facts.interfaces_down}


def _missing(variable: str, value: str, interfaces: dict[str, list[str]]) -> list[str]:
    """The parts of the setting this node cannot satisfy ([] = fine).

    NCCL: comma-separated prefixes, `=` for exact names, `^` to exclude; one match is enough.
    Gloo: comma-separated exact names, every one must exist."""
    names = list(interfaces)
    if variable == "GLOO_SOCKET_IFNAME":
        return [n for n in (p.strip() for p in value.split(",")) if n and n not in names]
    text = value.strip()
    exact = text.startswith("=")
    exclude = text.startswith("^")
    specs = [p.strip() for p in text.lstrip("=^").split(",") if p.strip()]
    if exclude:
        left = [n for n in names if not any(n.startswith(s) for s in specs)
                and not all(is_loopback(a) for a in interfaces[n])]
        return [] if left else [text]
    matches = [n for n in names if any((n == s) if exact else n.startswith(s) for s in specs)]
    return [] if matches else specs


def _suggestion(cluster: ClusterFacts) -> str:
    common = None
    for node in cluster.reached:
        usable = {n for n, addrs in _usable(node.facts).items()
                  if not all(is_loopback(a) for a in addrs) and not n.startswith(_NOT_SUGGESTED)}
        common = usable if common is None else common & usable
    if not common:
        return "no interface name is up on every node; set the variable per node to an interface it has"
    return f"interfaces up on every node: {', '.join(sorted(common))}; e.g. NCCL_SOCKET_IFNAME={sorted(common)[0]}"


@check("DDP106", "Socket interface setting does not fit the nodes", Severity.ERROR)
def socket_ifname(cluster: ClusterFacts) -> list[Problem] | Skipped:
    """
    What it detects:
        NCCL_SOCKET_IFNAME or GLOO_SOCKET_IFNAME set on a node to an interface that node does not
        have (or has down, or without an address). NCCL's syntax is understood: prefixes
        (`eth` matches eth0), `=eth0` for an exact name, `^docker,lo` to exclude. Gloo's value is
        a list of exact names.

    Why it hurts:
        With no matching interface NCCL stops with "Bootstrap : no socket interface found" and Gloo
        with "no device found" - or, with some versions, the job falls back to an interface the
        other nodes cannot reach and hangs. Typical cause: one node type names its NIC `ens5`,
        another `eth0`, and the variable was copied from one to the other.

    How to fix:
        Set the variable to an interface present on every node (ddpdoctor lists the common ones),
        or to a prefix that matches each node's NIC:

            export NCCL_SOCKET_IFNAME=ens,eth   # prefixes: ens5 on some nodes, eth0 on others
            export GLOO_SOCKET_IFNAME=eth0
    """
    reached = cluster.reached
    if not any(v in n.facts.env for n in reached for v in VARIABLES):
        return Skipped("NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME are not set on any node")
    backend = cluster.resolved_backend
    problems = []
    for variable in VARIABLES:
        for node in reached:
            value = node.facts.env.get(variable)
            if value is None or value == "<redacted>":
                continue
            usable = _usable(node.facts)
            missing = _missing(variable, value, usable)
            if not missing:
                continue
            # NCCL's variable does not matter to a gloo job; Gloo's matters to both (CPU groups).
            mild = variable == "NCCL_SOCKET_IFNAME" and backend != "nccl"
            problems.append(Problem(
                message=(f"{variable}={value} on {node.host}, which has no usable interface matching "
                         f"{', '.join(missing)} (it has: {', '.join(sorted(usable)) or 'none'})"),
                hint=_suggestion(cluster),
                hosts=[node.host],
                evidence={"variable": variable, "value": value, "interfaces": sorted(usable),
                          "down": node.facts.interfaces_down},
                severity=Severity.WARNING if mild else None,
            ))
    return problems
