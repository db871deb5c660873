"""DDP204: torch / CUDA / NCCL / driver / Python versions differ across nodes."""

from __future__ import annotations

from ddpdoctor.preflight.cluster import ClusterFacts, describe_groups
from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check

# field, label, how bad a difference is, fix
_FIELDS = (
    ("torch", "torch", Severity.ERROR,
     "install the same torch on every node, e.g. `pip install torch=={v}`"),
    ("torch_cuda", "torch's CUDA", Severity.ERROR,
     "install torch built for the same CUDA everywhere (the +cuXXX suffix)"),
    ("nccl", "NCCL", Severity.ERROR,
     "install the same NCCL everywhere (same torch wheel, or `pip install nvidia-nccl-cu12=={v}`)"),
    ("driver", "NVIDIA driver", Severity.WARNING,
     "update the NVIDIA driver to one version on every node ({v})"),
)


# Each compared version, read from the node's declared facts.
_VERSION = {"torch": lambda facts: facts.torch, "torch_cuda": lambda facts: facts.torch_cuda,
            "nccl": lambda facts: facts.nccl, "driver": lambda facts: facts.driver}
_UNSET = {"torch": "not installed", "torch_cuda": "none (CPU build)", "nccl": "-", "driver": "-"}


def reference(values: dict) -> object:
    """The value the others should match: the most common one; on a tie, the one found first in
    host-list order (the first host is usually where the job is launched from)."""
    order = list(values.values())
    return max(dict.fromkeys(order), key=lambda v: (order.count(v), -order.index(v)))


def _compared(facts, field: str) -> bool:
    """Which nodes take part: torch everywhere (missing is a difference); CUDA where torch is
    installed (None = a CPU build); NCCL and driver only where they were found ("not checked"
    is not a version)."""
    if field == "torch":
        return True
    if field == "torch_cuda":
        return facts.torch is not None
    return _VERSION[field](facts) is not None


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


@check("DDP204", "Versions differ across nodes", Severity.ERROR)
def versions_match(cluster: ClusterFacts) -> list[Problem] | Skipped:
    """
    What it detects:
        Nodes that differ in torch version, the CUDA torch was built for, NCCL version, NVIDIA
        driver version or Python version, naming which nodes have which. A node without torch
        counts as a difference. Severity: torch, CUDA, NCCL and Python major.minor differences are
        errors; driver differences and Python patch-level differences (3.11.7 vs 3.11.9) are
        warnings - they usually work, but are the first suspect when one node misbehaves.

    Why it hurts:
        torch.distributed's wire formats are not guaranteed between versions: mismatched torch or
        NCCL versions hang in the first collective, corrupt results, or fail with "NCCL error:
        unhandled system error" / "invalid usage". Pickled objects (broadcast_object_list, the
        store) may not load across Python or torch versions.

    How to fix:
        Use one environment image everywhere (a container, a shared venv or conda env), and pin it:

            pip install torch==2.5.1 --index-url https://download.pytorch.org/whl/cu124
    """
    reached = cluster.reached
    if len(reached) < 2:
        return Skipped("fewer than two nodes answered: nothing to compare")
    problems = []
    for field, label, severity, fix in _FIELDS:
        values = {n.host: _VERSION[field](n.facts) for n in reached if _compared(n.facts, field)}
        if len(set(values.values())) < 2:
            continue
        common = reference(values)
        problems.append(Problem(
            message=f"{label} differs across nodes: {describe_groups(values, unset=_UNSET[field])}",
            hint=fix.format(v=common),
            hosts=[h for h, v in values.items() if v != common] or list(values),
            evidence={field: values},
            severity=severity,
        ))
    pythons = {n.host: n.facts.python for n in reached if n.facts.python}
    if len(set(pythons.values())) > 1:
        minors = {_minor(v) for v in pythons.values()}
        common = reference(pythons)
        problems.append(Problem(
            message=(f"Python differs across nodes: {describe_groups(pythons)}"
                     + ("" if len(minors) > 1 else " (patch level only)")),
            hint=f"use one Python {common} everywhere (the same venv/conda env or container image)",
            hosts=[h for h, v in pythons.items() if v != common],
            evidence={"python": pythons},
            severity=Severity.ERROR if len(minors) > 1 else Severity.WARNING,
        ))
    return problems
