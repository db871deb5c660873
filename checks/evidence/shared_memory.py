"""DDP509: shared memory (/dev/shm) too small for NCCL or the DataLoader's workers."""

from __future__ import annotations

import re

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check
from ddpdoctor.postmortem.causality import none_found, who, grouped, problem, when
from ddpdoctor.postmortem.evidence import Evidence

# The DataLoader's words when a worker's shared memory runs out (torch/utils/data/_utils/signal_handling
# and the shm allocator's "unable to write to file </torch_...>" / "No space left on device").
_LOADER_SHM = re.compile(r"out of shared memory|unable to write to file </torch_|/dev/shm.*No space left"
                         r"|No space left on device.*shm|Bus error.*shared memory", re.IGNORECASE)


@check("DDP509", "Shared memory (/dev/shm) too small", Severity.ERROR, stages=("evidence",))
def shared_memory(ev: Evidence) -> list[Problem] | Skipped:
    """
    What it detects:
        From what a dead job left: NCCL could not create or grow its shared-memory segment
        (`NCCL WARN Error while creating shared memory segment /dev/shm/nccl-...`, `unhandled
        system error` after it), or a DataLoader worker ran out of shared memory ("out of
        shared memory", "unable to write to file </torch_...>", a Bus error).

    Why it hurts:
        Containers give /dev/shm 64 MB by default. NCCL puts its intra-node buffers there and
        the DataLoader's workers hand every batch over through it: the first rank to run out
        dies, and the others wait for it until their watchdog ends them.

    How to fix:
        Give the container more shared memory, or take the DataLoader off it:

            docker run --shm-size=16g ...        # or --ipc=host
            # Kubernetes: an emptyDir with medium: Memory mounted at /dev/shm
            DataLoader(dataset, num_workers=2)   # fewer workers, smaller prefetch_factor
    """
    facts = [w for w in ev.nccl if w.kind == "shm"]
    facts += [e for e in ev.errors if _LOADER_SHM.search(e.message or "") or
              (e.kind == "nccl" and "/dev/shm" in (e.message or ""))]
    if not facts:
        return none_found(ev)
    problems = []
    for group in grouped(facts):
        who_ = who(group, "a process (its rank not in the log)")
        first = group[0]
        text = getattr(first, "text", "") or first.where.text
        problems.append(problem(ev, group, f"{who_} ran out of shared memory{when(group)}: {text.strip()[:300]}",
                                "give the job more /dev/shm (docker --shm-size=16g or --ipc=host; "
                                "Kubernetes: an emptyDir of medium Memory at /dev/shm), or fewer "
                                "DataLoader workers"))
    return problems
