"""DDP207: /dev/shm too small for NCCL's shared-memory transport and DataLoader workers."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check
from ddpdoctor.preflight.cluster import ClusterFacts
from ddpdoctor.preflight.machine import mib, not_measured

TOO_SMALL = 256 << 20  # below this NCCL's SHM transport and DataLoader workers fail outright
ADVISED = 1 << 30  # what NCCL's documentation asks containers for (--shm-size=1g)


@check("DDP207", "/dev/shm too small", Severity.ERROR)
def shm_size(cluster: ClusterFacts) -> list[Problem] | Skipped:
    """
    What it detects:
        A node whose /dev/shm (its size, or what is left free on it) is below 256 MiB, or below
        1 GiB when the node runs several NCCL processes. Docker gives a container 64 MiB and a
        Kubernetes pod gets the container runtime's 64 MiB unless a memory-backed emptyDir is
        mounted there.

    Why it hurts:
        NCCL's shared-memory transport (ranks of one node that cannot use P2P over NVLink/PCIe)
        and its proxy buffers live in /dev/shm; when it is full NCCL stops with "failed to extend
        /dev/shm ... No space left on device" or "Error while creating shared memory segment",
        or the job dies with a bus error in its first collective. DataLoader workers hand every
        batch to the rank through /dev/shm too ("DataLoader worker killed by bus error").

    How to fix:
        Give the container a larger /dev/shm, or share the host's:

            docker run --shm-size=16g ...        # or --ipc=host
            # Kubernetes: a memory-backed emptyDir mounted on /dev/shm
            volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 16Gi}}]
            volumeMounts: [{name: dshm, mountPath: /dev/shm}]
    """
    reached = cluster.reached
    if not reached:
        return Skipped("no node answered")
    nccl = cluster.resolved_backend == "nccl"
    problems = not_measured(reached, "shm", "/dev/shm")
    for node in reached:
        f = node.facts
        if f.shm_bytes is None:
            continue
        available = min(f.shm_bytes, f.shm_free_bytes if f.shm_free_bytes is not None else f.shm_bytes)
        procs = cluster.procs_on(node)
        several = nccl and procs > 1
        if available >= (ADVISED if several else TOO_SMALL):
            continue
        free = (f", {mib(f.shm_free_bytes)} free" if f.shm_free_bytes is not None
                and f.shm_free_bytes < f.shm_bytes else "")
        where = f"pod {f.kubernetes['pod']} on " if f.kubernetes.get("pod") else ""
        need = ("NCCL's shared-memory transport between its "
                f"{procs} processes needs about 1 GiB" if several else
                "NCCL's shared-memory transport and DataLoader workers need at least 256 MiB")
        fix = ("mount a memory-backed emptyDir on /dev/shm in the pod spec: "
               "`volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 16Gi}}]` and "
               "`volumeMounts: [{name: dshm, mountPath: /dev/shm}]`" if f.kubernetes else
               "start the container with `--shm-size=16g` (or `--ipc=host`), or remount: "
               "`mount -o remount,size=16G /dev/shm`")
        severity = Severity.ERROR if available < TOO_SMALL and (nccl or procs > 1) else Severity.WARNING
        problems.append(Problem(
            message=f"/dev/shm on {where}{node.host} is {mib(f.shm_bytes)}{free}: {need}",
            hint=fix, hosts=[node.host], severity=severity,
            evidence={"shm_bytes": f.shm_bytes, "shm_free_bytes": f.shm_free_bytes, "processes": procs,
                      "backend": cluster.resolved_backend, "kubernetes": dict(f.kubernetes)}))
    return problems
