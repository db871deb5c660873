"""DDP202: duplicate hosts / node ranks; MASTER_ADDR or MASTER_PORT differ between nodes."""

from __future__ import annotations

from ddpdoctor.preflight.cluster import ClusterFacts, describe_groups, group_hosts
from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check

# Each of these must be one value for the whole job.
_SAME_EVERYWHERE = ("MASTER_ADDR", "MASTER_PORT")


@check("DDP202", "Duplicate hosts, or MASTER_ADDR/PORT differ", Severity.ERROR)
def unique_hosts(cluster: ClusterFacts) -> list[Problem] | Skipped:
    """
    What it detects:
        The same host listed twice, two names of the list resolving to the same address, two nodes
        with the same NODE_RANK in their environment, or MASTER_ADDR / MASTER_PORT set to different
        values on different nodes.

    Why it hurts:
        A host listed twice gets twice the processes: ranks collide on GPUs ("CUDA error: out of
        memory", NCCL "Duplicate GPU detected") and the world size is off by a node. Disagreeing
        MASTER_ADDR / MASTER_PORT split the job into groups that wait for each other forever.

    How to fix:
        List each machine once (by one name), and let the launcher set the rendezvous variables
        instead of shell profiles:

            # hosts.txt
            gpu01 slots=8
            gpu02 slots=8
            # and drop `export MASTER_PORT=...` from ~/.bashrc on the nodes
    """
    problems = []
    seen: dict[str, list[str]] = {}
    for node in cluster.nodes:
        seen.setdefault(node.host.lower(), []).append(node.entry.source_line)
    for host, lines in seen.items():
        if len(lines) > 1:
            problems.append(Problem(
                message=f"{host} is listed {len(lines)} times ({_where(lines)})",
                hint=f"list {host} once; give it more processes with slots=N instead",
                hosts=[host],
                evidence={"host": host, "lines": lines},
            ))
    by_address: dict[str, list[str]] = {}
    for node in cluster.nodes:
        for address in dict.fromkeys(node.resolved):
            names = by_address.setdefault(address, [])
            if node.host.lower() not in (n.lower() for n in names):
                names.append(node.host)
    for address, names in by_address.items():
        if len(names) > 1:
            problems.append(Problem(
                message=f"{' and '.join(names)} resolve to the same address {address}: one machine listed twice",
                hint=f"keep one of {', '.join(names)} in the host list",
                hosts=names,
                evidence={"address": address, "hosts": names},
            ))
    node_ranks = {n.host: n.facts.env["NODE_RANK"] for n in cluster.reached if "NODE_RANK" in n.facts.env}
    for value, hosts in group_hosts(node_ranks):
        if len(hosts) > 1:
            problems.append(Problem(
                message=f"NODE_RANK={value} is set on {', '.join(hosts)}: two nodes would claim the same rank",
                hint="unset NODE_RANK in the nodes' environment and let the launcher assign it (torchrun --node-rank)",
                hosts=hosts,
                evidence={"node_rank": node_ranks},
            ))
    for variable in _SAME_EVERYWHERE:
        values = {n.host: n.facts.env.get(variable) for n in cluster.reached}
        if len({v for v in values.values() if v is not None}) > 1:
            problems.append(Problem(
                message=f"{variable} differs between nodes: {describe_groups(values)}",
                hint=(f"set {variable} once, by the launcher (torchrun --{variable.lower().replace('_', '-')}), "
                      "not in per-node shell profiles"),
                hosts=[h for h, v in values.items() if v is not None],
                evidence={variable: values},
            ))
    return problems


def _where(lines: list[str]) -> str:
    """["h.txt:2", "h.txt:5"] -> "h.txt lines 2, 5"; mixed sources are listed as they are."""
    files = {line.rpartition(":")[0] for line in lines}
    if len(files) == 1 and all(line.rpartition(":")[2].isdigit() for line in lines):
        return f"{files.pop()} lines {', '.join(line.rpartition(':')[2] for line in lines)}"
    return ", ".join(lines)
