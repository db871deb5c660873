"""Node facts read from a recorded machine tree in tests/data/machine/<name>/ (its /sys, /proc,
`nvidia-smi -q`, `nvidia-smi nvlink -e` and kernel log), through the same readers a node runs:
the GPU hosts, HCAs and PCIe switches this CPU machine does not have."""

from __future__ import annotations

from pathlib import Path

from ddpdoctor.preflight.node import gpuhealth, machine
from ddpdoctor.preflight.node.schema import NodeFacts

DATA = Path(__file__).resolve().parents[1] / "data" / "machine"


def tree(name: str) -> Path:
    return DATA / name


def read_tree(name: str, env: dict | None = None, hostname: str | None = None) -> NodeFacts:
    root = str(tree(name))
    facts = NodeFacts(hostname=hostname or name)
    machine.read_capabilities(facts, root)
    machine.read_kubernetes(facts, dict(env or {}), root)
    machine.read_infiniband(facts, root)
    machine.read_pci(facts, root)
    machine.read_iommu(facts, root)
    base = tree(name)
    if (base / "nvidia-smi-q.txt").exists():
        query = gpuhealth.parse_smi_query((base / "nvidia-smi-q.txt").read_text())
        gpuhealth.apply_smi(facts, query)
        facts.gpu_count = len(query["gpus"])
        facts.gpu_names = [g["name"] for g in query["gpus"]]
    if (base / "nvlink-e.txt").exists():
        facts.nvlink_errors = gpuhealth.parse_nvlink_errors((base / "nvlink-e.txt").read_text())
    if (base / "kmsg.txt").exists():
        facts.xids = gpuhealth.parse_xids((base / "kmsg.txt").read_text().splitlines())
    return facts
