"""DDP102: a hostname or MASTER_ADDR resolves to loopback in a multi-node job."""

from __future__ import annotations

from ddpdoctor.preflight.cluster import ClusterFacts, is_loopback, name_list
from ddpdoctor.preflight.nic import node_local_name
from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check


@check("DDP102", "A node resolves to loopback in a multi-node job", Severity.ERROR)
def loopback_address(cluster: ClusterFacts) -> list[Problem] | Skipped:
    """
    What it detects:
        In a job spanning more than one machine: MASTER_ADDR, a host of the list, or a node's own
        hostname resolving to a loopback address (127.0.0.1, Debian's 127.0.1.1, ::1).

    Why it hurts:
        A loopback address means "this machine" on every machine. If MASTER_ADDR resolves to one,
        every node dials itself and the rendezvous times out. If a node's hostname does (the
        /etc/hosts line `127.0.1.1 gpu01` that Debian and Ubuntu install), everything that turns
        the hostname into an address gets loopback: Gloo's default device (no GLOO_SOCKET_IFNAME),
        `hostname -i` and `socket.gethostbyname(socket.gethostname())` in job scripts that set
        MASTER_ADDR, MPI-style launchers. Gloo then advertises 127.0.1.1, and because each pair
        of Gloo processes connects from the higher address to the lower, it breaks exactly when
        the peers' addresses sort above 127.0.1.1 (192.168.x, 172.16-31.x): they dial
        themselves and the job hangs in init_process_group or the first all-reduce. On a 10.x
        network the trap node dials out and the job seems fine - until it is the other way round.
        `preflight --collective` shows which of the two your cluster is (DDP107).

    How to fix:
        Use a routable address or name for MASTER_ADDR, and map each node's hostname to its
        cluster address in /etc/hosts (or DNS), not to 127.0.1.1:

            # /etc/hosts on gpu01: replace `127.0.1.1 gpu01` with
            10.0.0.11  gpu01

        Nodes that share one network stack (all on this machine) are a single-node job: loopback
        works there, and the check is skipped.
    """
    if not cluster.multi_node:
        unjudged = cluster.unjudged
        return Skipped("all nodes share one machine's network: loopback works between them"
                       + (f" ({name_list(unjudged)} not reached: not judged)" if unjudged else ""))
    problems = []
    master_addrs = []
    master_node = cluster.node_named(cluster.master_addr)
    if master_node is not None and master_node.resolved:
        master_addrs = list(master_node.resolved)
    elif cluster.master_resolved:
        master_addrs = list(cluster.master_resolved)
    elif is_loopback(cluster.master_addr):
        master_addrs = [cluster.master_addr]
    for node in cluster.reached:  # what each node resolved MASTER_ADDR to when it connected
        if node.connect and node.connect.address and is_loopback(node.connect.address):
            master_addrs.append(node.connect.address)
    loop = sorted({a for a in master_addrs if is_loopback(a)})
    if loop or cluster.master_addr.lower() == "localhost":
        problems.append(Problem(
            message=(f"MASTER_ADDR {cluster.master_addr} resolves to loopback ({', '.join(loop) or 'localhost'}) "
                     f"in a job over {len(cluster.nodes)} nodes: every node would dial itself"),
            hint="set --master-addr / MASTER_ADDR to the master's routable name or address, e.g. 10.0.0.11",
            hosts=[cluster.master_addr],
            evidence={"master_addr": cluster.master_addr, "addresses": loop},
        ))
    listed = {n.host: [a for a in n.resolved if is_loopback(a)] for n in cluster.nodes
              if n.host != cluster.master_addr and n.transport != "file"}
    listed = {h: loop for h, loop in listed.items() if loop}
    if listed:
        problems.append(Problem(
            message=(f"{name_list(list(listed))} resolve{'s' if len(listed) == 1 else ''} to loopback on this "
                     f"machine ({name_list(sorted({a for loop in listed.values() for a in loop}))})"),
            hint="list the nodes by routable names or addresses, or fix their /etc/hosts entries here",
            hosts=list(listed),
            evidence={"loopback": listed},
        ))
    own = {n.host: (n.facts.hostname, [a for a in n.facts.hostname_addresses if is_loopback(a)])
           for n in cluster.reached}
    own = {h: v for h, v in own.items() if v[1]}
    if own:
        example_host, (example_name, example_loop) = next(iter(own.items()))
        address = _cluster_address(cluster.node_named(example_host)) or "10.0.0.11"
        problems.append(Problem(
            message=("a node's own hostname resolves to loopback on that node, so Gloo (without "
                     "GLOO_SOCKET_IFNAME) and scripts using `hostname -i` hand its peers a loopback address: "
                     + name_list([f"{h} ({name} -> {', '.join(loop)})" for h, (name, loop) in own.items()])),
            hint=(f"in /etc/hosts on each of them, map the hostname to its cluster address instead of "
                  f"{example_loop[0]} (on {example_host}: `{address}  {example_name}`)"),
            hosts=list(own),
            evidence={"own_hostname": {h: {"hostname": name, "loopback": loop} for h, (name, loop) in own.items()}},
        ))
    return problems


def _cluster_address(node) -> str | None:
    """The node's address as the others know it: what its name resolves to here, else the
    first non-loopback IPv4 address on its interfaces."""
    if node is None:
        return None
    for address in node.resolved:
        if not is_loopback(address):
            return address
    facts = node.facts
    for name, addresses in (facts.interfaces.items() if facts else ()):
        if name in facts.interfaces_down:
            continue
        for address in addresses:
            if ":" not in address and not is_loopback(address) and not node_local_name(name):
                return address
    return None
