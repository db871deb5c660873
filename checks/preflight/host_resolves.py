"""DDP101: a host does not resolve."""

from __future__ import annotations

from ddpdoctor.preflight.cluster import ClusterFacts, name_list
from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check


def _routable_address(cluster: ClusterFacts, host: str) -> str:
    """The address the node's line in /etc/hosts should give: its first non-loopback interface
    address, as recorded; said in words where none was recorded."""
    found = next((n for n in cluster.reached if n.host == host), None)
    for addresses in (found.facts.interfaces.values() if found and found.facts else []):
        for address in addresses:
            if not address.startswith(("127.", "::1", "fe80")):
                return address.split("/")[0]
    return f"the address of {host} the other nodes reach"


@check("DDP101", "A host does not resolve", Severity.ERROR)
def host_resolves(cluster: ClusterFacts) -> list[Problem] | Skipped:
    """
    What it detects:
        A host of the list or MASTER_ADDR that this machine cannot resolve to an address, or a node
        that cannot resolve its own hostname.

    Why it hurts:
        torchrun, Gloo and NCCL all turn names into addresses: MASTER_ADDR on every node, and each
        node's own hostname when it tells its peers where to reach it. A name that does not resolve
        ends the job at rendezvous ("Name or service not known", "gethostbyname failed"), usually
        after the scheduler has already handed you the nodes.

    How to fix:
        Fix the name (a typo in the host list, a missing domain), add the nodes to DNS, or list
        them in /etc/hosts on every node:

            # /etc/hosts on every node
            10.0.0.11  gpu01
            10.0.0.12  gpu02
    """
    unresolved = [n for n in cluster.nodes if n.transport != "file" and n.resolve_error is not None]
    # ssh may still reach a name through its own configuration (a Host alias); torch cannot.
    aliased = [n for n in unresolved if n.facts is not None and n.transport == "ssh"]
    missing = [n for n in unresolved if n not in aliased]
    problems = []
    if missing:
        first = missing[0]
        problems.append(Problem(
            message=(f"{name_list([n.host for n in missing])} "
                     f"{'does' if len(missing) == 1 else 'do'} not resolve from this machine ({first.resolve_error})"),
            hint=(f"check the spelling in {first.entry.source_line}"
                  + (" and the other lines" if len(missing) > 1 else "")
                  + ", or add the name to DNS or to /etc/hosts on every node (e.g. `10.0.0.11  gpu01`)"),
            hosts=[n.host for n in missing],
            evidence={"unresolved": {n.host: {"error": n.resolve_error, "source": n.entry.source_line}
                                     for n in missing}},
        ))
    if aliased:
        problems.append(Problem(
            message=(f"{name_list([n.host for n in aliased])} resolve only through ssh's configuration "
                     "(a Host alias?): torch, Gloo and NCCL do not read it"),
            hint="list the nodes by names that DNS or /etc/hosts resolve, or by their addresses",
            hosts=[n.host for n in aliased],
            evidence={"unresolved": {n.host: n.resolve_error for n in aliased}},
            severity=Severity.WARNING,
        ))
    if cluster.master_resolve_error and cluster.node_named(cluster.master_addr) is None:
        problems.append(Problem(
            message=f"MASTER_ADDR {cluster.master_addr} does not resolve from this machine ({cluster.master_resolve_error})",
            hint="check --master-addr / MASTER_ADDR; use the master's IP address or a name every node resolves",
            hosts=[cluster.master_addr],
            evidence={"master_addr": cluster.master_addr, "error": cluster.master_resolve_error},
        ))
    own = {n.host: (n.facts.hostname, n.facts.resolve_errors[n.facts.hostname]) for n in cluster.reached
           if n.facts.hostname in n.facts.resolve_errors}
    if own:
        host, (name, error) = next(iter(own.items()))
        problems.append(Problem(
            message=("a node cannot resolve its own hostname, which Gloo and torch look up when the group "
                     "forms: " + name_list([f"{h} ({hn}: {err})" for h, (hn, err) in own.items()])),
            hint=f"add `{_routable_address(cluster, host)}  {name}` to /etc/hosts on {host} (and likewise on the "
                 f"others), or register it in DNS",
            hosts=list(own),
            evidence={"own_hostname": {h: {"hostname": hn, "error": err} for h, (hn, err) in own.items()}},
        ))
    return problems
