"""DDP209: a pod without the capabilities the job and ddpdoctor need (IPC_LOCK, SYS_PTRACE)."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check
from ddpdoctor.preflight.cluster import ClusterFacts, name_list
from ddpdoctor.preflight.node.machine import CAP_IPC_LOCK, CAP_SYS_PTRACE
from ddpdoctor.preflight.machine import has_ib, not_measured


def has_capability(cap_eff: str, bit: int) -> bool:
    return bool(int(cap_eff, 16) >> bit & 1)


@check("DDP209", "Pod lacks IPC_LOCK or SYS_PTRACE", Severity.WARNING)
def container_capabilities(cluster: ClusterFacts) -> list[Problem] | Skipped:
    """
    What it detects:
        In a Kubernetes pod (the service account mount or KUBERNETES_SERVICE_HOST), the effective
        capabilities (CapEff in /proc/self/status) lack IPC_LOCK while the node has an InfiniBand
        or RoCE device (a warning), or lack SYS_PTRACE (information: only `ddpdoctor attach` and
        py-spy need it).

    Why it hurts:
        Without IPC_LOCK a container cannot lock more memory than its limit, so NCCL's IB
        registration fails or falls back to sockets. Without SYS_PTRACE, `ddpdoctor attach` and
        py-spy cannot read a hung rank's stacks: the hang is reported without them.

    How to fix:
        Add the capabilities to the training container:

            securityContext:
              capabilities:
                add: ["IPC_LOCK", "SYS_PTRACE"]
    """
    pods = [n for n in cluster.reached if n.facts.kubernetes]
    if not pods:
        return Skipped("no node runs in a Kubernetes pod: capabilities are the host's")
    problems = not_measured(pods, "capabilities", "the pod's capabilities")
    measured = [n for n in pods if n.facts.cap_eff]
    fix = "add them to the container: `securityContext: {capabilities: {add: [\"IPC_LOCK\", \"SYS_PTRACE\"]}}`"
    no_lock = [n.host for n in measured if has_ib(n.facts) and not has_capability(n.facts.cap_eff, CAP_IPC_LOCK)]
    if no_lock and cluster.resolved_backend == "nccl":
        problems.append(Problem(
            message=(f"the pod on {name_list(no_lock)} lacks IPC_LOCK while the node has InfiniBand/RoCE "
                     "devices: NCCL cannot lock its IB buffers beyond the memlock limit"),
            hint=fix, hosts=no_lock, evidence={"cap_eff": {h: n.facts.cap_eff for n in measured for h in [n.host]
                                                          if h in no_lock}}))
    no_trace = [n.host for n in measured if not has_capability(n.facts.cap_eff, CAP_SYS_PTRACE)]
    if no_trace:
        problems.append(Problem(
            message=(f"the pod on {name_list(no_trace)} lacks SYS_PTRACE: `ddpdoctor attach` and py-spy "
                     "cannot read a hung rank's stacks there"),
            hint=fix, hosts=no_trace, severity=Severity.INFO,
            evidence={"pods": {n.host: n.facts.kubernetes for n in measured if n.host in no_trace}}))
    return problems
