"""DDP212: a GPU or NIC trained to a narrower or slower PCIe link than it supports."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check
from ddpdoctor.preflight.cluster import ClusterFacts


@check("DDP212", "PCIe link trained down", Severity.WARNING)
def pcie_link(cluster: ClusterFacts) -> list[Problem] | Skipped:
    """
    What it detects:
        A GPU or NIC whose PCIe link runs narrower than it supports (current_link_width below
        max_link_width in /sys/bus/pci/devices), or a NIC running slower (current_link_speed
        below max_link_speed). A GPU's link speed is not judged: idle GPUs lower it to save
        power and raise it under load.

    Why it hurts:
        An x8 link halves the bandwidth between that GPU and the host or NIC; NCCL's rings run
        at the speed of their slowest link, so one badly seated card or riser makes every rank
        of the job slow ("one node makes the whole job slow"), without any error.

    How to fix:
        Reseat the card or riser, check the slot's BIOS setting, and compare with `lspci -vv`:

            lspci -vv -s 03:00.0 | grep -E 'LnkCap|LnkSta'   # LnkSta: Width x8 (downgraded)
    """
    reached = cluster.reached
    links = [(n, link) for n in reached for link in n.facts.pci_links]
    if not links:
        return Skipped("no GPU or NIC with a readable PCIe link on any node")
    problems = []
    for node, link in links:
        narrow = link["current_width"] is not None and link["current_width"] < link["max_width"]
        slow = (link["kind"] == "nic" and link.get("current_speed") and link.get("max_speed")
                and link["current_speed"] < link["max_speed"])
        if not (narrow or slow):
            continue
        what = []
        if narrow:
            what.append(f"x{link['current_width']} of x{link['max_width']}")
        if slow:
            what.append(f"{link['current_speed']:g} of {link['max_speed']:g} GT/s")
        problems.append(Problem(
            message=f"the {link['kind'].upper()} at {link['address']} on {node.host} runs at {' and '.join(what)}",
            hint=(f"reseat the card (or its riser) on {node.host} and check the slot in the BIOS; "
                  f"`lspci -vv -s {link['address']}` shows LnkCap against LnkSta"),
            hosts=[node.host], evidence=dict(link)))
    return problems
