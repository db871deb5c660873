"""DDP213: PCIe ACS redirect on the bridges above the GPUs, or the IOMMU translating DMA."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check
from ddpdoctor.preflight.cluster import ClusterFacts, name_list
from ddpdoctor.preflight.machine import not_measured

# ACS Control bits that send peer-to-peer requests or completions up to the root complex.
REDIRECT = {1 << 2: "ReqRedir", 1 << 3: "CmpltRedir", 1 << 4: "UpstreamFwd", 1 << 5: "EgressCtrl"}
TRANSLATED = ("DMA", "DMA-FQ")


def redirect_bits(control: int) -> list[str]:
    return [name for bit, name in REDIRECT.items() if control & bit]


@check("DDP213", "PCIe ACS or IOMMU in the way of GPU peer-to-peer", Severity.WARNING)
def pcie_acs_iommu(cluster: ClusterFacts) -> list[Problem] | Skipped:
    """
    What it detects:
        On a node with NVIDIA GPUs: a PCIe bridge above a GPU with ACS request or completion
        redirect (or upstream forwarding / egress control) enabled, read from the ACS capability
        in its config space (readable by root only; otherwise "not measured"); and the IOMMU
        translating DMA (iommu groups of type DMA or DMA-FQ) rather than passing it through.

    Why it hurts:
        Peer-to-peer traffic between GPUs (and GPUDirect RDMA to the NIC) is then sent up to the
        root complex instead of across the switch: NCCL's P2P transport crawls or hangs in its
        first collective, often only between some GPU pairs. Users find it after days; the fix
        is one kernel flag or a BIOS setting.

    How to fix:
        Disable ACS on the bridges (BIOS "ACS Control: Disabled", or at boot with setpci), and
        put the IOMMU in passthrough mode on the kernel command line:

            GRUB_CMDLINE_LINUX="... iommu=pt"        # or intel_iommu=off / amd_iommu=off
            setpci -s 02:00.0 ECAP_ACS+0x6.w=0000    # per bridge, after every boot
    """
    gpus = [n for n in cluster.reached if n.facts.gpu_count]
    if not gpus:
        return Skipped("no GPU on any node: no peer-to-peer traffic to block")
    problems = not_measured(gpus, "acs", "ACS on the PCIe bridges above the GPUs")
    for node in gpus:
        acs = {b: redirect_bits(v["control"]) for b, v in node.facts.pci_acs.items()}
        on = {b: bits for b, bits in acs.items() if bits}
        if on:
            under = sorted({g for b in on for g in node.facts.pci_acs[b]["gpus"]})
            problems.append(Problem(
                message=(f"ACS redirect is on for the PCIe bridges {name_list(sorted(on))} above GPUs "
                         f"{name_list(under)} on {node.host} ({'; '.join(f'{b}: ' + ' '.join(v) for b, v in on.items())}): "
                         "GPU peer-to-peer goes through the root complex"),
                hint=("disable ACS in the BIOS, or per bridge after boot: "
                      + "; ".join(f"`setpci -s {b} ECAP_ACS+0x6.w=0000`" for b in sorted(on)[:4])),
                hosts=[node.host], evidence={"bridges": {b: node.facts.pci_acs[b] for b in on}}))
        types = node.facts.iommu.get("domain_types", {})
        if any(t in types for t in TRANSLATED):
            flags = " ".join(node.facts.iommu.get("flags", [])) or "no iommu flag"
            problems.append(Problem(
                message=(f"the IOMMU on {node.host} translates DMA (domain types {types}; kernel command "
                         f"line: {flags}): GPU peer-to-peer and GPUDirect RDMA go through it"),
                hint="add `iommu=pt` to the kernel command line (GRUB_CMDLINE_LINUX) and reboot",
                hosts=[node.host], evidence={"iommu": dict(node.facts.iommu)}))
    return problems
