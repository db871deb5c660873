"""Process-group identity, and the unchecked twins that let DDP live under DETAIL on gloo.

torch 2.13 segfaults in DDP's logger when DDP is built on a gloo group wrapped by
TORCH_DISTRIBUTED_DEBUG=DETAIL (notes §0, §4). The verified way around: build DDP on an
unwrapped gloo group with the same ranks, and send its bucket all-reduces through the wrapped
group from a comm hook, so they are still fingerprint-checked. A twin must be created while every
rank is inside a group-creating call, so one is made right after init_process_group (WORLD) and
beside every new_group the script makes.
"""

from __future__ import annotations

import weakref
from typing import Any, Optional

import torch.distributed as dist

_twins: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()
_names: "weakref.WeakKeyDictionary[Any, tuple[str, Optional[list[int]]]]" = weakref.WeakKeyDictionary()


def detail_on_gloo(group: Any = None) -> bool:
    try:
        return (dist.get_debug_level() == dist.DebugLevel.DETAIL
                and dist.get_backend(group) == "gloo")
    except (RuntimeError, ValueError, AttributeError):
        return False


def make_twin(group: Any, ranks: Optional[list[int]]) -> None:
    """Create an unwrapped gloo group with the same ranks (every rank must be calling this)."""
    level = dist.get_debug_level()
    dist.set_debug_level(dist.DebugLevel.INFO)
    try:
        twin = dist.new_group(ranks=ranks, backend="gloo")
    finally:
        dist.set_debug_level(level)
    if group is None or group is dist.GroupMember.WORLD:
        group = dist.distributed_c10d._get_default_group()
    if twin is not None and twin is not dist.GroupMember.NON_GROUP_MEMBER:
        _twins[group] = twin


def twin_of(group: Any) -> Optional[Any]:
    if group is None or group is dist.GroupMember.WORLD:
        group = dist.distributed_c10d._get_default_group()
    return _twins.get(group)


def describe(group: Any) -> tuple[str, Optional[list[int]]]:
    """(name, ranks) of a group, stable across ranks: 'WORLD' or torch's group name."""
    if group is None or group is dist.GroupMember.WORLD:
        return "WORLD", None
    cached = _names.get(group)
    if cached is None:
        try:
            if group is dist.distributed_c10d._get_default_group():
                cached = ("WORLD", None)
            else:
                name = dist.distributed_c10d._get_process_group_name(group)
                cached = (name, dist.get_process_group_ranks(group))
        except (RuntimeError, ValueError, AttributeError, KeyError):
            cached = (f"group@{id(group):x}", None)
        _names[group] = cached
    return cached


def unchecked_backend(group: Any, device: Any) -> Optional[Any]:
    """Under DETAIL, the backend torch's checking wrapper forwards to for `device` tensors on
    `group` (ProcessGroupNCCL behind its ProcessGroupWrapper); None where the group's backend is
    not wrapped (DETAIL off, or a twin). The wrapper checks every collective with a round trip
    over its own gloo group before launching it: on an H200 that put ~0.2 ms of CPU before each
    bucket's NCCL launch, which the device clock then counted as all-reduce time."""
    try:
        if dist.get_debug_level() != dist.DebugLevel.DETAIL:
            return None
        if group is None or group is dist.GroupMember.WORLD:
            group = dist.distributed_c10d._get_default_group()
        return getattr(group._get_backend(device), "wrapped_pg", None)
    except Exception:  # noqa: BLE001 - a Python process group, an older torch: keep the checks
        return None
