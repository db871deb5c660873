"""DDP211: NCCL_IB_HCA / NCCL_IB_GID_INDEX name an HCA, port or GID a node lacks; InfiniBand
devices differ across nodes."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check
from ddpdoctor.preflight.cluster import ClusterFacts, describe_groups, name_list


def selected_ports(value: str | None, devices: dict) -> list[tuple[str, str]]:
    """The (device, port) pairs NCCL_IB_HCA selects among `devices` (NCCL's syntax: a comma list
    of `name[:port]`, prefixes unless `=` asks for exact names, `^` to exclude); unset: all."""
    ports = [(d, p) for d in sorted(devices) for p in sorted(devices[d])]
    if not value:
        return ports
    text = value.strip()
    exclude, text = text.startswith("^"), text.lstrip("^")
    exact, text = text.startswith("="), text.lstrip("=")
    wanted = [tuple(item.strip().split(":", 1)) for item in text.split(",") if item.strip()]

    def matches(device: str, port: str) -> bool:
        for item in wanted:
            name_ok = device == item[0] if exact else device.startswith(item[0])
            if name_ok and (len(item) == 1 or item[1] == port):
                return True
        return False

    return [(d, p) for d, p in ports if matches(d, p) != exclude]


@check("DDP211", "InfiniBand HCA or GID index missing or differs", Severity.ERROR)
def ib_hca(cluster: ClusterFacts) -> list[Problem] | Skipped:
    """
    What it detects:
        In an NCCL job without NCCL_IB_DISABLE=1: NCCL_IB_HCA selecting no active port of any
        HCA a node has (NCCL's syntax: `mlx5_0:1,mlx5_1`, prefixes, `=` exact, `^` exclude);
        NCCL_IB_GID_INDEX naming a GID index the selected ports do not have (/sys/class/
        infiniband/*/ports/*/gids); and, as a warning, nodes where some have HCAs and others
        none, or the selected HCA count differs.

    Why it hurts:
        NCCL then falls back to sockets on that node (a job many times slower) or fails to
        create its queue pairs: "NET/IB : No device found", "ibv_modify_qp failed", and on
        RoCE with the wrong GID index "vendor err 129" (a completion with error) in the first
        cross-node collective.

    How to fix:
        Name HCAs that exist on every node (`ibstat` or `ls /sys/class/infiniband`), and the RoCE
        v2 GID index they publish (`show_gids`):

            export NCCL_IB_HCA=mlx5_0:1,mlx5_1:1    # or a prefix that fits every node: mlx5
            export NCCL_IB_GID_INDEX=3
    """
    reached = [n for n in cluster.reached if n.facts.env.get("NCCL_IB_DISABLE") != "1"]
    if cluster.resolved_backend != "nccl":
        return Skipped("backend gloo: NCCL's IB transport is not used")
    if not any(n.facts.ib_devices or n.facts.env.get("NCCL_IB_HCA") for n in reached):
        return Skipped("no InfiniBand/RoCE device on any node and NCCL_IB_HCA not set")
    problems = []
    counts = {}
    for node in reached:
        f = node.facts
        value = f.env.get("NCCL_IB_HCA")
        chosen = [(d, p) for d, p in selected_ports(value, f.ib_devices)
                  if f.ib_devices[d][p].get("state", "ACTIVE") == "ACTIVE"]
        counts[node.host] = len(chosen)
        have = ", ".join(f"{d}:{p}" for d in sorted(f.ib_devices) for p in sorted(f.ib_devices[d])) or "none"
        if value and not chosen:
            problems.append(Problem(
                message=f"NCCL_IB_HCA={value} on {node.host} selects no active HCA port (it has: {have})",
                hint=f"set NCCL_IB_HCA to HCAs every node has (here: {have}), or a prefix such as mlx5",
                hosts=[node.host], evidence={"NCCL_IB_HCA": value, "ports": have}))
            continue
        gid = f.env.get("NCCL_IB_GID_INDEX")
        if gid and gid.lstrip("-").isdigit() and int(gid) >= 0 and chosen:
            lacking = [f"{d}:{p}" for d, p in chosen if int(gid) not in f.ib_devices[d][p].get("gids", [])]
            if lacking:
                published = {f"{d}:{p}": f.ib_devices[d][p].get("gids", []) for d, p in chosen}
                problems.append(Problem(
                    message=(f"NCCL_IB_GID_INDEX={gid} on {node.host}, but {', '.join(lacking)} has no GID at "
                             f"that index (published: {published})"),
                    hint="set NCCL_IB_GID_INDEX to the RoCE v2 GID index every node publishes (`show_gids`), "
                         "or leave it unset for NCCL to pick",
                    hosts=[node.host], evidence={"NCCL_IB_GID_INDEX": gid, "gids": published}))
    if len(set(counts.values())) > 1:
        problems.append(Problem(
            message=f"nodes differ in the HCA ports NCCL would use: {describe_groups(counts)}",
            hint="give every node the same HCAs, or a node without them runs its traffic over sockets and slows "
                 "every collective down to it",
            hosts=list(counts), severity=Severity.WARNING, evidence={"ports": counts}))
    return problems
