"""`srun --nodes=N --ntasks-per-node=1 ddpdoctor probe train.py` with no flags: the node count,
this node's rank, node 0's address and a port come from SLURM's environment.

- nnodes      SLURM_JOB_NUM_NODES (SLURM_NNODES)
- node rank   SLURM_NODEID
- master      the first host of SLURM_JOB_NODELIST, expanded as `scontrol show hostnames` does
- port        20000 + SLURM_JOB_ID % 20000: every node of the job derives the same one, and two
              jobs sharing a node almost never collide (MASTER_PORT in the environment wins)
- processes   SLURM_GPUS_ON_NODE when set (one rank per GPU), else --nproc-per-node's default

A flag given on the command line always wins over SLURM's value.
"""

from __future__ import annotations

from typing import Mapping, Optional

from ddpdoctor.core.errors import UsageError

PORT_BASE = 20000
PORT_SPAN = 20000


def in_allocation(env: Mapping[str, str]) -> bool:
    return bool(env.get("SLURM_JOB_ID") and env.get("SLURM_JOB_NODELIST") and env.get("SLURM_NODEID"))


def _int(env: Mapping[str, str], *names: str) -> Optional[int]:
    for name in names:
        text = env.get(name, "").strip()
        if text:
            try:
                return int(text.split("(")[0])
            except ValueError:
                raise UsageError(f"${name} is not a number: {text[:40]!r}") from None
    return None


def first_host(nodelist: str) -> str:
    from ddpdoctor.preflight.hosts import parse_line

    try:
        pairs = parse_line(nodelist.replace(" ", ""))
    except ValueError as exc:
        raise UsageError(f"$SLURM_JOB_NODELIST: {exc}") from None
    if not pairs:
        raise UsageError("$SLURM_JOB_NODELIST names no host")
    return pairs[0][0]


def job_settings(env: Mapping[str, str]) -> dict[str, object]:
    """What SLURM says this node's probe should be; {} outside an allocation."""
    if not in_allocation(env):
        return {}
    tasks_per_node = _int(env, "SLURM_NTASKS_PER_NODE")
    if tasks_per_node is not None and tasks_per_node > 1:
        raise UsageError("ddpdoctor probe starts every rank of its node itself (as torchrun does): "
                         "run one task per node, srun --ntasks-per-node=1")
    settings: dict[str, object] = {
        "nnodes": _int(env, "SLURM_JOB_NUM_NODES", "SLURM_NNODES") or 1,
        "node_rank": _int(env, "SLURM_NODEID") or 0,
        "master_addr": env.get("MASTER_ADDR") or first_host(env["SLURM_JOB_NODELIST"]),
        "master_port": _int(env, "MASTER_PORT") or PORT_BASE + (_int(env, "SLURM_JOB_ID") or 0) % PORT_SPAN,
    }
    gpus = _int(env, "SLURM_GPUS_ON_NODE")
    if gpus:
        settings["nproc_per_node"] = gpus
    return settings
