"""DDP201: world size does not add up (nodes x processes vs --world-size / WORLD_SIZE, slots)."""

from __future__ import annotations

from ddpdoctor.preflight.cluster import ClusterFacts, describe_groups
from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check


def _sum_text(cluster: ClusterFacts) -> str:
    procs = [cluster.procs_on(n) for n in cluster.nodes]
    if len(set(procs)) == 1:
        return (f"{len(procs)} node{'s' if len(procs) != 1 else ''} x {procs[0]} "
                f"process{'es' if procs[0] != 1 else ''} = {sum(procs)}")
    return " + ".join(str(p) for p in procs) + f" = {sum(procs)}"


@check("DDP201", "World size does not add up", Severity.ERROR)
def world_size(cluster: ClusterFacts) -> list[Problem] | Skipped:
    """
    What it detects:
        The world size the job will ask for (--world-size, or WORLD_SIZE set on the nodes) is not
        the number of processes the host list gives: nodes x --nproc-per-node, or the sum of the
        list's slots. Also: slots in the list that disagree with --nproc-per-node, and different
        slots per node, which torchrun's single --nproc-per-node cannot express.

    Why it hurts:
        Rendezvous waits for exactly WORLD_SIZE ranks. Too few processes and the job hangs until
        the rendezvous timeout; too many and the extra ranks fail with "rank out of range" or join
        someone else's group.

    How to fix:
        Make the numbers agree: drop a stale WORLD_SIZE from the environment, or fix the host list
        or --nproc-per-node:

            # 2 nodes x 8 GPUs
            torchrun --nnodes 2 --nproc-per-node 8 ...   # world size 16, no WORLD_SIZE export
    """
    expected = cluster.expected_world_size
    arithmetic = _sum_text(cluster)
    problems = []
    if cluster.world_size is not None and cluster.world_size != expected:
        problems.append(Problem(
            message=f"--world-size is {cluster.world_size}, but the host list gives {arithmetic}",
            hint=(f"pass --world-size {expected}, or change the host list / --nproc-per-node so that "
                  f"nodes x processes = {cluster.world_size}"),
            hosts=[n.host for n in cluster.nodes],
            evidence={"world_size": cluster.world_size, "expected": expected, "arithmetic": arithmetic},
        ))
    env_sizes = {n.host: n.facts.env["WORLD_SIZE"] for n in cluster.reached
                 if n.facts.env.get("WORLD_SIZE") not in (None, "<redacted>")}
    wrong = {h: v for h, v in env_sizes.items() if v.strip() != str(cluster.world_size or expected)}
    if wrong:
        problems.append(Problem(
            message=(f"WORLD_SIZE in the environment ({describe_groups(wrong)}) does not match "
                     f"{cluster.world_size or expected} ({arithmetic})"),
            hint=("unset WORLD_SIZE in the nodes' shell profiles and let the launcher set it "
                  "(`unset WORLD_SIZE` in ~/.bashrc), or make it agree with the host list"),
            hosts=list(wrong),
            evidence={"world_size_env": wrong, "expected": cluster.world_size or expected},
        ))
    if cluster.nproc_per_node is not None:
        disagree = {n.host: n.entry.slots for n in cluster.nodes
                    if n.entry.slots is not None and n.entry.slots != cluster.nproc_per_node}
        if disagree:
            problems.append(Problem(
                message=(f"--nproc-per-node is {cluster.nproc_per_node}, but the host list gives "
                         f"slots {describe_groups(disagree)}"),
                hint="make the host list's slots and --nproc-per-node agree (torchrun uses --nproc-per-node)",
                hosts=list(disagree),
                evidence={"nproc_per_node": cluster.nproc_per_node, "slots": disagree},
                severity=Severity.WARNING,
            ))
    else:
        slots = {n.host: n.entry.slots for n in cluster.nodes if n.entry.slots is not None}
        if len(set(slots.values())) > 1:
            problems.append(Problem(
                message=(f"the host list gives different slots per node ({describe_groups(slots)}); "
                         "torchrun's --nproc-per-node is one number for every node"),
                hint="launch with a launcher that reads slots (DeepSpeed, mpirun), or make every node's slots equal",
                hosts=list(slots),
                evidence={"slots": slots},
                severity=Severity.WARNING,
            ))
    return problems
