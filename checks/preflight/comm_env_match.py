"""DDP206: NCCL_* / TORCH_* / GLOO_* settings differ across nodes."""

from __future__ import annotations

from ddpdoctor.preflight.cluster import ClusterFacts, describe_groups
from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check

PREFIXES = ("NCCL_", "TORCH_", "GLOO_")
REDACTED = "<redacted>"
# Differences that cannot change how nodes talk: logging and build/cache locations.
HARMLESS = {"NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE", "TORCH_HOME", "TORCH_EXTENSIONS_DIR",
            "TORCH_CUDA_ARCH_LIST", "TORCH_LOGS", "TORCH_SHOW_CPP_STACKTRACES", "TORCH_CPP_LOG_LEVEL"}


@check("DDP206", "NCCL/TORCH/GLOO settings differ across nodes", Severity.WARNING)
def comm_env_match(cluster: ClusterFacts) -> list[Problem] | Skipped:
    """
    What it detects:
        An NCCL_*, TORCH_* or GLOO_* environment variable set differently on different nodes, or
        set on some nodes and not on others (as a non-interactive ssh login sees the environment,
        which is what pdsh/mpirun-launched jobs get). Values redacted as secrets are not compared,
        nor are logging and cache settings (NCCL_DEBUG, NCCL_DEBUG_SUBSYS, TORCH_HOME, ...).

    Why it hurts:
        NCCL negotiates its protocol and transport per node from these variables: NCCL_IB_DISABLE=1
        on one node and not the other, or different NCCL_PROTO / NCCL_ALGO, gives hangs or "NCCL
        error: invalid usage" in the first collective. Different TORCH_NCCL_* timeouts make one
        node give up while another waits.

    How to fix:
        Set these once, for the whole job (the launcher's environment or the job script), not in
        per-node shell profiles:

            # job.sh, sourced on every node
            export NCCL_IB_DISABLE=0
            export NCCL_SOCKET_IFNAME=ens
    """
    reached = cluster.reached
    if len(reached) < 2:
        return Skipped("fewer than two nodes answered: nothing to compare")
    names = sorted({k for n in reached for k in n.facts.env if k.startswith(PREFIXES) and k not in HARMLESS})
    problems = []
    for name in names:
        values = {n.host: n.facts.env.get(name) for n in reached}
        if REDACTED in values.values():
            continue
        if len(set(values.values())) < 2:
            continue
        problems.append(Problem(
            message=f"{name} differs across nodes: {describe_groups(values)}",
            hint=f"set {name} to one value for the whole job (in the job script), not per node",
            hosts=[h for h, v in values.items()],
            evidence={name: values},
        ))
    return problems
