"""DDP510: the host's OOM killer ended a rank (it leaves no traceback)."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check
from ddpdoctor.postmortem.causality import none_found, killed_by_oom, problem, when
from ddpdoctor.postmortem.evidence import Evidence


@check("DDP510", "The host's OOM killer ended a rank", Severity.ERROR, stages=("evidence",))
def host_oom(ev: Evidence) -> list[Problem] | Skipped:
    """
    What it detects:
        The kernel's OOM killer lines in `dmesg` or the journal saved with the logs (`Out of
        memory: Killed process PID (python) ...`, `oom-kill:...,pid=PID`), matched to a rank by
        the pid the launcher (`exitcode: -9 (pid: PID)`) or NCCL's lines (`host:PID:tid`) give.

    Why it hurts:
        A rank killed with SIGKILL prints nothing: no traceback, no error. The log shows only
        the other ranks timing out and torchrun's "Signal 9 (SIGKILL)", which reads like a
        crash of ddpdoctor's or the scheduler's. It was host memory (not GPU memory).

    How to fix:
        Use less host memory per rank, or give the job more:

            DataLoader(..., num_workers=2, persistent_workers=False)   # each worker copies the dataset
            torch.load(path, map_location="cpu", mmap=True)            # not one copy per rank
            # SLURM: --mem / --mem-per-gpu; Kubernetes: the pod's memory limit
    """
    if not ev.ooms:
        return none_found(ev)
    by_rank = killed_by_oom(ev)
    problems = []
    for kill in ev.ooms:
        rank = kill.rank
        who_ = f"rank {rank}" if rank is not None else f"process {kill.pid} ({kill.process})"
        unmatched = "" if rank is not None else "; no log line names this pid's rank"
        problems.append(problem(ev, [kill], f"{who_} was killed by the host's OOM killer{when([kill])}: "
                                f"pid {kill.pid} ({kill.process}), no traceback left{unmatched}",
                                "cut host memory per rank (DataLoader workers, datasets loaded in "
                                "every rank) or ask the scheduler for more (--mem)",
                                extra={"pid": kill.pid, "matched_ranks": sorted(by_rank)}))
    return problems
