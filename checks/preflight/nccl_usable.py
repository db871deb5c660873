"""DDP203: NCCL unusable: torch without CUDA/NCCL, no GPU, fewer GPUs than processes."""

from __future__ import annotations

from ddpdoctor.preflight.cluster import ClusterFacts
from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check


@check("DDP203", "NCCL unusable", Severity.ERROR)
def nccl_usable(cluster: ClusterFacts) -> list[Problem] | Skipped:
    """
    What it detects:
        When the job will use NCCL (--backend nccl, or auto with a GPU on every node): a node
        without torch, with a CPU-only torch build, with a torch that reports no NCCL, where CUDA
        is not available, with no GPU, or with fewer GPUs than the processes it will run.
        With backend gloo (asked for, or auto because some node has no GPU) the check is skipped
        and says why.

    Why it hurts:
        init_process_group("nccl") fails on such a node ("Distributed package doesn't have NCCL
        built in", "CUDA driver version is insufficient", "invalid device ordinal") - after every
        other node has started and is waiting for it. More processes than GPUs means two ranks on
        one GPU, which NCCL refuses ("Duplicate GPU detected").

    How to fix:
        Install a CUDA build of torch on every node and run one process per GPU:

            pip install torch --index-url https://download.pytorch.org/whl/cu124
            torchrun --nproc-per-node 8 ...   # at most the node's GPU count
    """
    backend = cluster.resolved_backend
    reached = cluster.reached
    if backend != "nccl":
        gpu_less = [n.host for n in reached if not n.facts.gpu_count]
        if cluster.backend == "gloo":
            return Skipped("backend gloo: NCCL is not used")
        if reached and len(gpu_less) == len(reached):
            return Skipped("no GPU on any node: backend auto resolves to gloo")
        return Skipped(f"backend auto resolves to gloo: no GPU on {', '.join(gpu_less) or 'any node'}")
    if not reached:
        return Skipped("no node answered")
    problems = []
    for node in reached:
        f = node.facts
        procs = cluster.procs_on(node)
        problem = None
        if f.torch is None:
            problem = (f"torch is not installed on {node.host} (for {f.python_executable or 'its python3'})",
                       "install torch with CUDA on the node, or point --remote-python at the job's interpreter")
        elif not f.torch_cuda:
            problem = (f"torch {f.torch} on {node.host} is a CPU build: no CUDA, no NCCL",
                       "install a CUDA build: pip install torch --index-url https://download.pytorch.org/whl/cu124")
        elif not f.gpu_count:
            problem = (f"{node.host} has no GPU visible (CUDA_VISIBLE_DEVICES={f.env.get('CUDA_VISIBLE_DEVICES', 'unset')})",
                       "run on GPU nodes, check `nvidia-smi` and CUDA_VISIBLE_DEVICES, or use --backend gloo")
        elif f.cuda_available is False:
            problem = (f"CUDA is not available to torch {f.torch} on {node.host} (driver {f.driver or 'unknown'})",
                       "update the NVIDIA driver to one that supports CUDA "
                       f"{f.torch_cuda}, or install a torch built for an older CUDA")
        elif f.gpu_count < procs:
            problem = (f"{node.host} will run {procs} processes but has {f.gpu_count} GPU(s)",
                       f"use --nproc-per-node {f.gpu_count} (or slots={f.gpu_count}) on {node.host}")
        if problem:
            problems.append(Problem(message=problem[0], hint=problem[1], hosts=[node.host],
                                    evidence={"torch": f.torch, "torch_cuda": f.torch_cuda, "nccl": f.nccl,
                                              "gpu_count": f.gpu_count, "cuda_available": f.cuda_available,
                                              "processes": procs}))
    unknown = [n.host for n in reached if n.facts.torch_cuda and not n.facts.nccl]
    if unknown:
        problems.append(Problem(
            message=f"NCCL version not checked on {', '.join(unknown)} (torch not imported there)",
            hint="run `python -c 'import torch; print(torch.cuda.nccl.version())'` on those nodes",
            hosts=unknown, severity=Severity.INFO,
            evidence={"hosts": unknown}))
    return problems
