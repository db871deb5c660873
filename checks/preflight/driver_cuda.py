"""DDP214: an NVIDIA driver older than the CUDA runtime torch was built for."""

from __future__ import annotations

import re

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check
from ddpdoctor.preflight.cluster import ClusterFacts

# The oldest Linux driver of each CUDA toolkit's GA release (NVIDIA's CUDA release notes, "CUDA
# Toolkit and Corresponding Driver Versions"); used where nvidia-smi did not say the CUDA version.
DRIVER_FOR_CUDA = [((13, 0), (580, 65, 6)), ((12, 9), (575, 51, 3)), ((12, 8), (570, 26)),
                   ((12, 6), (560, 28, 3)), ((12, 5), (555, 42, 2)), ((12, 4), (550, 54, 14)),
                   ((12, 3), (545, 23, 6)), ((12, 2), (535, 54, 3)), ((12, 1), (530, 30, 2)),
                   ((12, 0), (525, 60, 13)), ((11, 8), (520, 61, 5)), ((11, 7), (515, 43, 4)),
                   ((11, 6), (510, 39, 1)), ((11, 0), (450, 36, 6))]


def _version(text: str | None) -> tuple[int, ...] | None:
    numbers = re.findall(r"\d+", text or "")
    return tuple(int(n) for n in numbers) if numbers else None


def driver_cuda(facts) -> tuple[tuple[int, ...] | None, str]:
    """The newest CUDA the node's driver runs, and where that came from."""
    if facts.driver_cuda:
        return _version(facts.driver_cuda)[:2], "nvidia-smi"
    driver = _version(facts.driver)
    if driver is None:
        return None, ""
    return next((cuda for cuda, needed in DRIVER_FOR_CUDA if driver >= needed), None), "driver table"


@check("DDP214", "NVIDIA driver older than torch's CUDA", Severity.ERROR)
def driver_cuda_check(cluster: ClusterFacts) -> list[Problem] | Skipped:
    """
    What it detects:
        A node whose NVIDIA driver supports an older CUDA than the one torch was built with:
        an older major version is an error; an older minor version of the same major is a
        warning (CUDA's minor version compatibility runs most of it, but not PTX compiled at
        run time or newer driver features). The driver's CUDA version comes from nvidia-smi,
        else from the driver version and NVIDIA's table of toolkit releases.

    Why it hurts:
        torch then sees no GPU ("The NVIDIA driver on your system is too old", "CUDA driver
        version is insufficient for CUDA runtime version") on that node only, or a kernel fails
        to load mid-run ("the provided PTX was compiled with an unsupported toolchain").

    How to fix:
        Update the driver on that node, or install a torch built for the CUDA the driver runs:

            nvidia-smi | head -4                  # "CUDA Version: 12.2"
            pip install torch --index-url https://download.pytorch.org/whl/cu121
    """
    nodes = [n for n in cluster.reached if n.facts.torch_cuda and n.facts.gpu_count]
    if not nodes:
        return Skipped("no node has both a CUDA build of torch and a GPU")
    problems = []
    for node in nodes:
        f = node.facts
        runtime = _version(f.torch_cuda)[:2]
        supported, source = driver_cuda(f)
        if supported is None:
            problems.append(Problem(
                message=f"the driver's CUDA version was not measured on {node.host}: no nvidia-smi and no "
                        "driver version",
                hint="run `nvidia-smi` there", hosts=[node.host], severity=Severity.INFO,
                evidence={"driver": f.driver}))
            continue
        if supported >= runtime:
            continue
        severity = Severity.ERROR if supported[0] < runtime[0] else Severity.WARNING
        said = "" if source == "nvidia-smi" else " (from NVIDIA's driver table)"
        problems.append(Problem(
            message=(f"the driver {f.driver or '?'} on {node.host} runs CUDA up to "
                     f"{'.'.join(map(str, supported))}{said}, but torch {f.torch} was built for CUDA {f.torch_cuda}"),
            hint=(f"update the NVIDIA driver on {node.host}, or install a torch built for CUDA "
                  f"{'.'.join(map(str, supported))} or older (https://download.pytorch.org/whl/cu"
                  f"{supported[0]}{supported[1]})"),
            hosts=[node.host], severity=severity,
            evidence={"driver": f.driver, "driver_cuda": ".".join(map(str, supported)), "torch_cuda": f.torch_cuda}))
    return problems
