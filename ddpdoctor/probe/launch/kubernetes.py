"""`ddpdoctor probe train.py` as a PyTorchJob's or Kubeflow Trainer's container command: what the
flags leave unsaid comes from the pod's environment, as torchrun would take it.

- torchrun's own fallbacks: every flag of torchrun reads `PET_<FLAG>` when not given
  (torch/distributed/argparse_util.py), and Kubeflow Trainer sets PET_NNODES,
  PET_NPROC_PER_NODE, PET_NODE_RANK (the Job's completion index), PET_MASTER_ADDR and
  PET_MASTER_PORT; PyTorchJob sets PET_NNODES / PET_NPROC_PER_NODE in its newer releases.
- the training operator's node-level variables (PyTorchJob, pkg/controller.v1/pytorch/envvar.go):
  MASTER_ADDR / MASTER_PORT (the master replica's service), WORLD_SIZE = the number of pods
  (replicas of every type) and RANK = this pod's index (master 0, worker i -> i + 1): nodes,
  not processes. They count only where no PET_ variable says the same.

PET_NPROC_PER_NODE "auto", "gpu" or "cpu" leaves --nproc-per-node to its default; an elastic
PET_NNODES range ("1:4") needs --nnodes. A flag given on the command line always wins.
"""

from __future__ import annotations

from typing import Mapping, Optional

from ddpdoctor.core.errors import UsageError
from ddpdoctor.preflight.node.machine import pod_identity as _pod_from_env


def in_pod(env: Mapping[str, str]) -> bool:
    """Kubernetes sets KUBERNETES_SERVICE_HOST in every container."""
    return bool(env.get("KUBERNETES_SERVICE_HOST"))


def in_job(env: Mapping[str, str]) -> bool:
    """A PyTorchJob / Trainer pod: torchrun's PET_ variables, or the operator's node-level ones."""
    return any(k.startswith("PET_") for k in env) or (
        in_pod(env) and bool(env.get("MASTER_ADDR")) and bool(env.get("WORLD_SIZE")))


def _int(env: Mapping[str, str], name: str) -> Optional[int]:
    text = env.get(name, "").strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"${name} is not a number: {text[:40]!r}") from None
    if value < 0:
        raise UsageError(f"${name} is negative: {value}")
    return value


def _nnodes(env: Mapping[str, str]) -> Optional[int]:
    text = env.get("PET_NNODES", "").strip()
    if ":" in text:
        low, _, high = text.partition(":")
        if low.strip() != high.strip():
            raise UsageError(f"$PET_NNODES is an elastic range ({text}); ddpdoctor probe needs a fixed "
                             "node count: pass --nnodes")
        text = low
    if text:
        return _int({"PET_NNODES": text}, "PET_NNODES")
    return _int(env, "WORLD_SIZE")


def job_settings(env: Mapping[str, str]) -> dict[str, object]:
    """What the pod's environment says this node's probe should be; {} outside such a pod."""
    if not in_job(env):
        return {}
    settings: dict[str, object] = {}
    nnodes = _nnodes(env)
    if nnodes:
        settings["nnodes"] = nnodes
    rank = _int(env, "PET_NODE_RANK")
    rank = rank if rank is not None else _int(env, "RANK")
    if rank is not None:
        settings["node_rank"] = rank
    master = env.get("PET_MASTER_ADDR") or env.get("MASTER_ADDR")
    port = _int(env, "PET_MASTER_PORT")
    port = port if port is not None else _int(env, "MASTER_PORT")
    endpoint = env.get("PET_RDZV_ENDPOINT", "").strip()
    if master:
        settings["master_addr"] = master
        if port is not None:
            settings["master_port"] = port
    elif endpoint:
        settings["rdzv_endpoint"] = endpoint
    nproc = env.get("PET_NPROC_PER_NODE", "").strip()
    if nproc.isdigit() and int(nproc) > 0:
        settings["nproc_per_node"] = int(nproc)
    if settings.get("nnodes") and rank is not None and rank >= settings["nnodes"]:
        raise UsageError(f"the pod's node rank {rank} is not below its node count {settings['nnodes']} "
                         "($PET_NODE_RANK / $RANK against $PET_NNODES / $WORLD_SIZE)")
    return settings


def pod_identity(env: Mapping[str, str]) -> dict[str, str]:
    """{"pod", "node", "namespace"} of the pod this runs in; {} outside a pod."""
    return _pod_from_env(dict(env)) if in_pod(env) else {}


def describe(pod: dict[str, str]) -> str:
    """"pod bert-worker-1 on node gpu-a1 (namespace training)"."""
    text = f"pod {pod.get('pod', '?')}"
    text += f" on node {pod['node']}" if pod.get("node") else " (node unknown: pass spec.nodeName down as NODE_NAME)"
    return text + (f" (namespace {pod['namespace']})" if pod.get("namespace") else "")
