"""What the machine checks (DDP207-DDP216) share. "Not measured": a fact a node could not read
(no permission, no nvidia-smi) becomes an info finding naming the nodes and the reason, so a check
never passes silently over a node it could not see."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.preflight.cluster import NodeResult, group_hosts, name_list


def not_measured(nodes: list[NodeResult], fact: str, what: str) -> list[Problem]:
    """One info problem per distinct reason among `nodes` whose facts say `fact` was not read."""
    reasons = {n.host: n.facts.unmeasured[fact] for n in nodes if fact in n.facts.unmeasured}
    return [Problem(message=f"{what} not measured on {name_list(hosts)}: {reason}",
                    hint="run preflight as a user who can read it (root), or check those nodes by hand",
                    hosts=hosts, severity=Severity.INFO, evidence={"fact": fact, "reason": reason})
            for reason, hosts in group_hosts(reasons)]


def mib(nbytes: int) -> str:
    """67108864 -> "64 MiB", 25276063744 -> "23.5 GiB"; -1 -> "unlimited"."""
    if nbytes < 0:
        return "unlimited"
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift:
            return f"{round(nbytes / (1 << shift), 1):g} {unit}"
    return f"{nbytes} B"


def has_ib(facts) -> bool:
    """An RDMA device (InfiniBand or RoCE) NCCL's IB transport would use."""
    return bool(facts.ib_devices) and facts.env.get("NCCL_IB_DISABLE") != "1"
