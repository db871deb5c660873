"""init_process_group and new_group: record what the script asked for, impose a short timeout."""

from __future__ import annotations

import datetime
import inspect
import time
from typing import Callable

import torch.distributed as dist

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.inrank import frameworks, groups, hooks, recorder


def install(pg_timeout_s: float, on_rank_known: Callable[[int, int], None]) -> None:
    original_init = hooks.original("init_process_group")
    init_signature = inspect.signature(original_init)
    limit = datetime.timedelta(seconds=pg_timeout_s)

    def init_process_group(call, *args, **kwargs):
        bound = hooks.bind(init_signature, args, kwargs)
        if bound is None:
            return call(*args, **kwargs)
        rec = recorder.get()
        arguments = bound.arguments
        world = arguments.get("world_size", -1)
        rank = arguments.get("rank", -1)
        rec.write(tm.InitEnter(
            time.time(), str(arguments.get("backend") or ""), arguments.get("init_method"),
            None if world in (None, -1) else int(world), None if rank in (None, -1) else int(rank),
            recorder.user_site(2)))
        frameworks.record_driver("init_process_group")  # which framework (if any) called it
        # A hang must surface in seconds, not after torch's 30 (gloo) or 10 (NCCL) minutes.
        given = arguments.get("timeout")
        arguments["timeout"] = limit if given is None or given > limit else given
        result = call(*bound.args, **bound.kwargs)
        on_rank_known(dist.get_rank(), dist.get_world_size())
        rec = recorder.get()
        rec.write(tm.Init(time.time(), dist.get_backend(), dist.get_world_size(),
                          dist.get_rank(), arguments["timeout"].total_seconds()))
        if groups.detail_on_gloo():
            groups.make_twin(None, None)
        return result

    def new_group(call, *args, **kwargs):
        group = call(*args, **kwargs)
        ranks = kwargs.get("ranks", args[0] if args else None)
        if (group is not None and group is not dist.GroupMember.NON_GROUP_MEMBER
                and groups.detail_on_gloo(group)):
            groups.make_twin(group, ranks)
        elif group is dist.GroupMember.NON_GROUP_MEMBER and groups.detail_on_gloo():
            # Non-members must still enter the twin's creation, like they entered this one.
            groups.make_twin(group, ranks)
        return group

    hooks.register("init_process_group", "process_group", init_process_group)
    hooks.register("new_group", "process_group", new_group)
