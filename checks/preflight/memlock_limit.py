"""DDP208: the locked-memory limit is too low for InfiniBand/RoCE memory registration."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check
from ddpdoctor.preflight.cluster import ClusterFacts, describe_groups, name_list
from ddpdoctor.preflight.machine import has_ib, mib, not_measured

ENOUGH = 1 << 30  # NCCL registers its buffers per channel and peer; unlimited is what it asks for


@check("DDP208", "Locked-memory limit too low for InfiniBand", Severity.ERROR)
def memlock_limit(cluster: ClusterFacts) -> list[Problem] | Skipped:
    """
    What it detects:
        On a node with an InfiniBand or RoCE device (/sys/class/infiniband) in an NCCL job, a
        locked-memory limit (`ulimit -l`, RLIMIT_MEMLOCK, as the node's processes inherit it)
        below 1 GiB. On nodes without such a device the limit does not matter and the check says
        so.

    Why it hurts:
        NCCL's IB transport registers (pins) its buffers with the HCA; beyond the limit the
        registration fails: "ibv_reg_mr failed", "NCCL WARN Call to ibv_create_cq failed", or
        NCCL quietly falls back to sockets and the job runs many times slower. Containers get
        8 MiB or 64 KiB unless told otherwise.

    How to fix:
        Raise the limit to unlimited where the job starts:

            # /etc/security/limits.conf (ssh / pdsh logins)
            *  soft  memlock  unlimited
            *  hard  memlock  unlimited
            # SLURM: PropagateResourceLimitsExcept=MEMLOCK, and LimitMEMLOCK=infinity for slurmd
            docker run --ulimit memlock=-1 ...   # Kubernetes: the runtime's default ulimits
    """
    reached = cluster.reached
    if not reached:
        return Skipped("no node answered")
    if cluster.resolved_backend != "nccl":
        return Skipped("backend gloo: NCCL's IB transport is not used")
    ib = [n for n in reached if has_ib(n.facts)]
    if not ib:
        limits = {n.host: mib(n.facts.memlock_soft) for n in reached if n.facts.memlock_soft is not None}
        return Skipped("no InfiniBand/RoCE device on any node: locked memory matters only for IB "
                       f"registration (memlock {describe_groups(limits) or 'not measured'})")
    problems = not_measured(ib, "memlock", "the locked-memory limit")
    low = {n.host: n.facts.memlock_soft for n in ib
           if n.facts.memlock_soft is not None and 0 <= n.facts.memlock_soft < ENOUGH}
    if low:
        hosts = list(low)
        pods = [n for n in ib if n.host in low and n.facts.kubernetes]
        hint = ("raise it to unlimited: `ulimit -l unlimited` in the job's start script (needs the hard "
                "limit), `*  soft  memlock  unlimited` and `*  hard  memlock  unlimited` in "
                "/etc/security/limits.conf, or `docker run --ulimit memlock=-1`")
        if pods:
            hint += ("; in Kubernetes the container runtime sets it (containerd's LimitMEMLOCK=infinity "
                     "on the node) and the pod needs the IPC_LOCK capability")
        problems.append(Problem(
            message=(f"the locked-memory limit on {name_list(hosts)}, which "
                     f"{'has' if len(hosts) == 1 else 'have'} InfiniBand/RoCE devices, is "
                     f"{describe_groups({h: mib(v) for h, v in low.items()})}: NCCL cannot pin its IB buffers"),
            hint=hint, hosts=hosts,
            evidence={"memlock_soft": low, "ib_devices": {n.host: sorted(n.facts.ib_devices) for n in ib}}))
    return problems
