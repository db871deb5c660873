"""DDP205: GPU model or count differs across nodes."""

from __future__ import annotations

from collections import Counter

from ddpdoctor.preflight.cluster import ClusterFacts, describe_groups
from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check


def _models(facts) -> str:
    if not facts.gpu_names:
        return "none" if facts.gpu_count == 0 else "unknown"
    return ", ".join(f"{n}x {name}" for name, n in sorted(Counter(facts.gpu_names).items()))


@check("DDP205", "GPU model or count differs across nodes", Severity.WARNING)
def gpus_match(cluster: ClusterFacts) -> list[Problem] | Skipped:
    """
    What it detects:
        Nodes with different numbers of GPUs, or different GPU models (an A100 node in an H100
        job), naming which nodes have which.

    Why it hurts:
        DDP runs in lockstep: every step waits for the slowest GPU, so one older model slows the
        whole job to its pace. A node with fewer GPUs than the others either cannot run the same
        --nproc-per-node (see DDP203) or leaves GPUs idle elsewhere.

    How to fix:
        Ask the scheduler for one node type, e.g. with SLURM:

            #SBATCH --constraint=h100
            #SBATCH --gres=gpu:8
    """
    reached = [n for n in cluster.reached if n.facts.gpu_count is not None]
    if len(reached) < 2:
        return Skipped("fewer than two nodes reported their GPUs")
    problems = []
    counts = {n.host: n.facts.gpu_count for n in reached}
    if len(set(counts.values())) > 1:
        fewest = min(counts.values())
        problems.append(Problem(
            message=f"GPU count differs across nodes: {describe_groups(counts)}",
            hint=(f"request nodes with the same GPU count, or run --nproc-per-node {fewest} everywhere"
                  if fewest else "run GPU jobs on GPU nodes only: drop the nodes without GPUs from the list"),
            hosts=[h for h, c in counts.items() if c != max(counts.values())],
            evidence={"gpu_count": counts},
        ))
    models = {n.host: _models(n.facts) for n in reached if n.facts.gpu_names}
    if len(set(models.values())) > 1:
        problems.append(Problem(
            message=f"GPU models differ across nodes: {describe_groups(models)}",
            hint="request one node type from the scheduler (e.g. `#SBATCH --constraint=h100`)",
            hosts=list(models),
            evidence={"gpus": models},
        ))
    return problems
