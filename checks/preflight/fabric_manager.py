"""DDP215: an NVSwitch system without a running fabric manager of the driver's version."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check
from ddpdoctor.preflight.cluster import ClusterFacts


@check("DDP215", "NVSwitch without a working fabric manager", Severity.ERROR)
def fabric_manager(cluster: ClusterFacts) -> list[Problem] | Skipped:
    """
    What it detects:
        A node with NVSwitches (NVIDIA PCI bridges of class 0x0680) where the fabric manager
        (nv-fabricmanager) is not running, runs a version other than the driver's, or where
        the GPUs report their fabric state as not completed (nvidia-smi -q, "Fabric").

    Why it hurts:
        Without the fabric manager the NVSwitch fabric is never set up: CUDA reports "system
        not yet initialized" (error 802), or torch sees the GPUs but NCCL's NVLink transport
        hangs. The daemon must match the driver's version exactly; after a driver update it
        often does not start.

    How to fix:
        Install the fabric manager of the driver's version and start it:

            apt install nvidia-fabricmanager-550=550.54.15-1
            systemctl enable --now nvidia-fabricmanager
    """
    switched = [n for n in cluster.reached if n.facts.nvswitch_count]
    if not switched:
        return Skipped("no NVSwitch on any node")
    problems = []
    for node in switched:
        fm, f = node.facts.fabric_manager, node.facts
        fix = (f"install nvidia-fabricmanager {f.driver or 'of the driver version'} on {node.host} and "
               "`systemctl enable --now nvidia-fabricmanager`")
        evidence = {"nvswitches": f.nvswitch_count, "fabric_manager": dict(fm), "driver": f.driver}
        if "running" not in fm:
            problems.append(Problem(
                message=f"the fabric manager was not measured on {node.host} ({f.nvswitch_count} NVSwitches)",
                hint="run `systemctl status nvidia-fabricmanager` there", hosts=[node.host],
                severity=Severity.INFO, evidence=evidence))
        elif not fm["running"]:
            problems.append(Problem(
                message=f"{node.host} has {f.nvswitch_count} NVSwitches but no nv-fabricmanager process",
                hint=fix, hosts=[node.host], evidence=evidence))
        elif fm.get("version") and f.driver and fm["version"] != f.driver:
            problems.append(Problem(
                message=f"the fabric manager on {node.host} is {fm['version']}, the driver {f.driver}: they must match",
                hint=fix, hosts=[node.host], evidence=evidence))
        state = fm.get("fabric_state")
        if state and state != "Completed":
            problems.append(Problem(
                message=f"the GPUs on {node.host} report their NVSwitch fabric state as {state!r}, not 'Completed'",
                hint=fix, hosts=[node.host], evidence=evidence,
                severity=Severity.WARNING if state == "In Progress" else None))
    return problems
