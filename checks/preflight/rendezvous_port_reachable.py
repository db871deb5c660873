"""DDP103: the rendezvous port is unreachable from a node (refused / filtered / timed out)."""

from __future__ import annotations

from ddpdoctor.preflight.cluster import ClusterFacts
from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check

_WHY = {
    "refused": ("the connection was refused: nothing listens there as seen from this node (a "
                "different machine answers to that name, or a host firewall rejects it)"),
    "timeout": "no answer: a firewall drops the packets, or the route to the master is wrong",
    "unresolvable": "the node cannot resolve the master's name",
    "error": "the connection failed",
}
_FIX = {
    "refused": ("make sure MASTER_ADDR names the master as the nodes see it, and open the port: "
                "`sudo firewall-cmd --add-port={port}/tcp` or `sudo ufw allow {port}/tcp` on the master"),
    "timeout": ("open the port between the nodes (security group / firewall rule for TCP {port} "
                "from the job's nodes), or use an address on the cluster network for MASTER_ADDR"),
    "unresolvable": "add {master} to DNS or /etc/hosts on {hosts}, or use the master's IP address",
    "error": "check the route from {hosts} to {master} (`ip route get <master ip>` on the node)",
}


@check("DDP103", "Rendezvous port unreachable from a node", Severity.ERROR)
def rendezvous_port_reachable(cluster: ClusterFacts) -> list[Problem] | Skipped:
    """
    What it detects:
        A node that cannot open a TCP connection to MASTER_ADDR:MASTER_PORT while ddpdoctor holds
        the port open on the master: refused, timed out (filtered), unresolvable, or another error.

    Why it hurts:
        Every rank connects to the TCPStore on MASTER_ADDR:MASTER_PORT before anything else. A node
        that cannot reach it waits out the full rendezvous timeout (30 minutes by default for
        init_process_group) and then fails with "connect() timed out" or "Connection refused", while
        the other nodes sit idle holding GPUs.

    How to fix:
        Open the port on the master to the other nodes, and use an address for MASTER_ADDR that the
        nodes can route to:

            sudo ufw allow 29500/tcp        # or your cloud's security group rule
            torchrun --nnodes 2 --master-addr 10.0.0.11 --master-port 29500 train.py
    """
    bind = cluster.port_bind
    if bind.status not in ("listening", "in-use"):
        return Skipped(f"nothing held the port on the master ({bind.detail or bind.status})")
    tested = [n for n in cluster.reached if n.connect is not None]
    if not tested:
        return Skipped("no node ran a connect test")
    by_status: dict[str, list] = {}
    for node in tested:
        if node.connect.status != "ok":
            by_status.setdefault(node.connect.status, []).append(node)
    problems = []
    for status, nodes in by_status.items():
        hosts = [n.host for n in nodes]
        first = nodes[0].connect
        problems.append(Problem(
            message=(f"{', '.join(hosts)} cannot connect to {first.target}: {_WHY.get(status, status)}"
                     + (f" [{first.detail}]" if first.detail else "")),
            hint=_FIX.get(status, _FIX["error"]).format(port=cluster.master_port, master=cluster.master_addr,
                                                        hosts=", ".join(hosts)),
            hosts=hosts,
            evidence={"target": first.target, "status": status,
                      "per_node": {n.host: {"status": n.connect.status, "address": n.connect.address,
                                            "detail": n.connect.detail, "seconds": n.connect.seconds}
                                   for n in nodes}},
        ))
    return problems
