"""DDP508: NCCL or the network failed under a rank (an NCCL WARN, an NCCL error raised)."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check
from ddpdoctor.postmortem.causality import none_found, who, grouped, problem, when
from ddpdoctor.postmortem.evidence import Evidence, NcclWarn, RankError
from ddpdoctor.postmortem.nccl import hint, kind_of, label



@check("DDP508", "NCCL or the network failed under a rank", Severity.ERROR, stages=("evidence",))
def nccl_error(ev: Evidence) -> list[Problem] | Skipped:
    """
    What it detects:
        From what a dead job left: an `NCCL WARN` line (NCCL_DEBUG output: `host:pid:tid [dev]
        NCCL WARN ...`) or an NCCL error a rank raised (`DistBackendError: NCCL error in: ...,
        unhandled system error / unhandled cuda error / internal error`), with its rank (from
        the log's prefix or its pid), its vendor code for InfiniBand completion errors, and
        whether it came first (the cause) or after another rank's failure (a consequence:
        "remote process exited" is always one).

    Why it hurts:
        The rank fails inside a collective, and every other rank waits until its watchdog
        times out (10 minutes by default): the log fills with their timeouts while the one
        NCCL line that says why sits among thousands.

    How to fix:
        Follow the hint for the kind of error. Two ranks on one GPU (NCCL's "Duplicate GPU
        detected", an invalid usage): set each rank's device before its first collective,
        `torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))`. "internal error - please report
        this issue" is usually configuration, not a bug to report:

            NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,ENV torchrun ... train.py
            docker run --shm-size=8g ...          # NCCL's shared memory in containers
    """
    facts = [w for w in ev.nccl if w.kind != "remote"]
    facts += [e for e in ev.errors if e.kind == "nccl"]
    if not facts:
        return none_found(ev)
    problems = []
    for group in _by_kind(facts):
        first = group[0]
        kind = _kind(first)
        if kind == "shm":
            continue  # DDP509's
        who_ = who(group, "a process (its rank not in the log)")
        text = first.text if isinstance(first, NcclWarn) else first.summary()
        vendor = [f.vendor_err for f in group if isinstance(f, NcclWarn) and f.vendor_err is not None]
        hosts = sorted({f.host for f in group if isinstance(f, NcclWarn) and f.host})
        extra = {"kind": kind, "hosts": hosts}
        if vendor:
            extra["vendor_err"] = vendor[0]
        found = problem(ev, group, f"{who_}: NCCL {label(kind)}{when(group)}: {text}",
                        hint(kind), extra=extra)
        found.hosts = hosts
        problems.append(found)
    return problems


def _kind(fact) -> str:
    return fact.kind if isinstance(fact, NcclWarn) else kind_of(fact.message)


def _by_kind(facts: list) -> list[list]:
    """One group per kind of NCCL error, in the order each happened first: a rank's `NCCL WARN`
    line and the DistBackendError NCCL then raised in it are one error (the WARN, timed and
    worded by NCCL itself, first), not two findings."""
    groups: dict[str, list] = {}
    for group in grouped(facts):
        groups.setdefault(_kind(group[0]), []).extend(group)
    return list(groups.values())
