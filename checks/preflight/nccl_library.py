"""DDP210: the libnccl torch would load is not the one it was built with, is missing, or differs
across nodes."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check
from ddpdoctor.preflight.cluster import ClusterFacts, describe_groups, name_list

OVERRIDES = ("LD_PRELOAD", "LD_LIBRARY_PATH")


def _label(lib: dict) -> str:
    if lib.get("how") == "bundled":
        return "linked into torch"
    return f"{lib.get('path', '?')} ({lib.get('version') or 'version unknown'}, via {lib.get('how')})"


@check("DDP210", "NCCL library torch loads is unexpected or differs", Severity.WARNING)
def nccl_library(cluster: ClusterFacts) -> list[Problem] | Skipped:
    """
    What it detects:
        Which libnccl a CUDA build of torch would load on each node, resolved with the dynamic
        loader's rules (LD_PRELOAD, the DT_RPATH of libtorch_cuda.so, LD_LIBRARY_PATH, its
        DT_RUNPATH, /etc/ld.so.cache, the default directories): an error where none is found; a
        warning where LD_PRELOAD or LD_LIBRARY_PATH puts another NCCL in front of the
        nvidia-nccl wheel torch was installed with, or where nodes would load different NCCL
        libraries or versions.

    Why it hurts:
        A system libnccl (a CUDA toolkit's, an old module) picked up through LD_LIBRARY_PATH is
        not the NCCL torch was tested with: "undefined symbol: ncclCommRegister", hangs fixed
        in later NCCL releases, or protocol mismatches when nodes run different NCCL versions
        against each other. Users believe they run the version pip installed.

    How to fix:
        Let torch load its own NCCL: drop the NCCL directory from LD_LIBRARY_PATH / LD_PRELOAD
        on every node, or use the same NCCL everywhere on purpose:

            export LD_LIBRARY_PATH=${LD_LIBRARY_PATH//\\/usr\\/local\\/nccl\\/lib:/}
            pip install nvidia-nccl-cu12==2.21.5   # the version torch depends on, on every node
    """
    cuda = [n for n in cluster.reached if n.facts.torch_cuda]
    if not cuda:
        return Skipped("no node has a CUDA build of torch: NCCL is not loaded")
    problems = []
    missing = [n.host for n in cuda if n.facts.nccl_library.get("how") == "not found"]
    if missing:
        soname = cuda[0].facts.nccl_library.get("soname", "libnccl.so.2")
        problems.append(Problem(
            message=f"torch on {name_list(missing)} needs {soname}, which the dynamic loader does not find there",
            hint="install the wheel torch depends on (`pip install nvidia-nccl-cu12`) or put NCCL's lib "
                 "directory on LD_LIBRARY_PATH",
            hosts=missing, severity=Severity.ERROR, evidence={"libraries": {h: {} for h in missing}}))
    for node in cuda:
        lib, f = node.facts.nccl_library, node.facts
        if lib.get("how") in OVERRIDES and f.nccl_source == "nvidia-nccl wheel" and lib.get("version") != f.nccl:
            problems.append(Problem(
                message=(f"torch on {node.host} would load {_label(lib)}, not the nvidia-nccl wheel "
                         f"{f.nccl} it was installed with"),
                hint=f"remove that directory from {lib['how']} on {node.host}, or install the same version "
                     "as the wheel torch depends on",
                hosts=[node.host], evidence={"library": dict(lib), "wheel": f.nccl}))
    known = {n.host: (n.facts.nccl_library.get("version") or n.facts.nccl_library.get("how"))
             for n in cuda if n.facts.nccl_library and n.facts.nccl_library.get("how") != "not found"}
    if len(set(known.values())) > 1:
        problems.append(Problem(
            message=f"nodes would load different NCCL libraries: {describe_groups(known)}",
            hint="give every node the same NCCL (the same torch install and environment); NCCL versions "
                 "talking to each other across nodes is not supported",
            hosts=list(known), evidence={"libraries": {n.host: dict(n.facts.nccl_library) for n in cuda}}))
    unread = [n.host for n in cuda if not n.facts.nccl_library]
    if unread:
        problems.append(Problem(
            message=f"the NCCL library torch loads was not measured on {name_list(unread)}: no libtorch_cuda.so "
                    "found to resolve it from",
            hint="check the torch install on those nodes", hosts=unread, severity=Severity.INFO,
            evidence={"hosts": unread}))
    return problems
