"""Record every torch.distributed collective a rank enters: op, shapes, dtypes, call site.

Compared across ranks afterwards, these records name the collective on which ranks diverged
(DDP501/DDP502), also after a hang or a crash: the record is written before the call blocks.
"""

from __future__ import annotations

import functools
import inspect
import sys
import threading
import time
from typing import Any, Callable

import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d

from ddpdoctor.probe import telemetry as tm
from ddpdoctor.probe.inrank import groups, recorder

COLLECTIVES = (
    "all_reduce", "all_gather", "all_gather_into_tensor", "all_gather_object", "broadcast",
    "broadcast_object_list", "reduce", "reduce_scatter", "reduce_scatter_tensor", "all_to_all",
    "all_to_all_single", "barrier", "monitored_barrier", "gather", "gather_object", "scatter",
    "scatter_object_list",
    # torch 2.13's single-tensor forms (all_gather_into_tensor and reduce_scatter_tensor call
    # them; FSDP and FSDP2 call them directly).
    "all_gather_single", "reduce_scatter_single",
)

_inside = threading.local()  # object collectives call tensor ones: record only the outer call
_seq: dict[str, int] = {}
_seq_lock = threading.Lock()


def next_seq(group_name: str) -> int:
    with _seq_lock:
        seq = _seq.get(group_name, 0)
        _seq[group_name] = seq + 1
        return seq


# The torch libraries whose own collectives are told apart from the script's (tm.Collective.via),
# by the module of the function that called the collective.
_VIA = (("torch.distributed.fsdp", "fsdp"), ("torch.distributed.optim", "zero"),
        ("torch.distributed.algorithms.ddp_comm_hooks", "comm_hook"),
        ("torch.distributed.tensor", "dtensor"))


def _via(frame: Any) -> str:
    module = frame.f_globals.get("__name__", "") if frame is not None else ""
    if module.startswith("torch.distributed."):
        for prefix, name in _VIA:
            if module.startswith(prefix):
                return name
    return ""


def _tensors(args: tuple, kwargs: dict) -> list[torch.Tensor]:
    found = []
    for value in list(args) + list(kwargs.values()):
        if isinstance(value, torch.Tensor):
            found.append(value)
        elif isinstance(value, (list, tuple)):
            found.extend(v for v in value[:64] if isinstance(v, torch.Tensor))
    return found


def _wrap(name: str, original: Callable) -> Callable:
    params = list(inspect.signature(original).parameters)
    group_index = params.index("group") if "group" in params else None
    async_index = params.index("async_op") if "async_op" in params else None

    @functools.wraps(original)
    def collective(*args: Any, **kwargs: Any) -> Any:
        if getattr(_inside, "depth", 0):
            return original(*args, **kwargs)
        rec = recorder.get()
        group = kwargs.get("group")
        if group is None and group_index is not None and len(args) > group_index:
            group = args[group_index]
        group_name, group_ranks = groups.describe(group)
        tensors = _tensors(args, kwargs)
        seq = next_seq(group_name)
        rec.write(tm.Collective(
            time.time(), group_name, group_ranks, seq, name,
            [list(t.shape) for t in tensors], [str(t.dtype).replace("torch.", "") for t in tensors],
            rec.step, recorder.user_site(2), via=_via(sys._getframe(1))))
        _inside.depth = 1
        try:
            result = original(*args, **kwargs)
        finally:
            _inside.depth = 0
        is_async = kwargs.get("async_op")
        if is_async is None and async_index is not None and len(args) > async_index:
            is_async = args[async_index]
        if not is_async:
            rec.write(tm.CollectiveDone(time.time(), group_name, seq))
        return result

    collective.__ddpdoctor_original__ = original
    return collective


def install() -> None:
    for name in COLLECTIVES:
        original = getattr(c10d, name, None)
        if original is None:
            continue
        wrapped = _wrap(name, original)
        setattr(c10d, name, wrapped)
        if getattr(dist, name, None) is original:
            setattr(dist, name, wrapped)


def original(name: str) -> Callable:
    """The unwrapped function, for the probe's own calls (they are recorded separately)."""
    fn = getattr(c10d, name)
    return getattr(fn, "__ddpdoctor_original__", fn)
