"""DDP508: NCCL or the network failed under a rank (an NCCL WARN, an NCCL error raised)."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check
from ddpdoctor.postmortem.causality import none_found, who, grouped, problem, when
from ddpdoctor.postmortem.evidence import Evidence, NcclWarn, RankError
from ddpdoctor.postmortem.nccl import kind_of

_HINTS = {
    "ib": ("an InfiniBand completion failed (the vendor code says which: 12 is a transport retry "
           "timeout, a peer or link that stopped answering): check the link and switch logs of the "
           "hosts named, `ibstat`, and set NCCL_IB_TIMEOUT / NCCL_IB_RETRY_CNT only after the link is sound"),
    "system": ("a system call NCCL made failed (a socket, a connect, a file): rerun with NCCL_DEBUG=INFO "
               "NCCL_DEBUG_SUBSYS=INIT,NET to see which; check NCCL_SOCKET_IFNAME names an interface every "
               "node has and that the ranks can reach each other on it"),
    "cuda": ("a CUDA call inside NCCL failed: an earlier CUDA error on that rank (an illegal memory access, "
             "a device lost: see the Xid lines in dmesg) usually comes first; rerun with CUDA_LAUNCH_BLOCKING=1"),
    "internal": ("NCCL's 'internal error - please report this issue' is, most of the time, a configuration it "
                 "cannot work with, not an NCCL bug: /dev/shm too small in a container, NCCL_* variables that "
                 "differ across nodes, a network interface or IB device that does not exist, mismatched NCCL "
                 "versions. Rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,ENV and read the WARN before it"),
    "other": "rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET to see what NCCL was doing",
}


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
        Follow the hint for the kind of error. "internal error - please report this issue" is
        usually configuration, not a bug to report:

            NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,ENV torchrun ... train.py
            docker run --shm-size=8g ...          # NCCL's shared memory in containers
    """
    facts = [w for w in ev.nccl if w.kind != "remote"]
    facts += [e for e in ev.errors if e.kind == "nccl"]
    if not facts:
        return none_found(ev)
    problems = []
    for group in grouped(facts):
        first = group[0]
        kind = first.kind if isinstance(first, NcclWarn) else kind_of(first.message)
        if kind == "shm":
            continue  # DDP509's
        who_ = who(group, "a process (its rank not in the log)")
        text = first.text if isinstance(first, NcclWarn) else first.summary()
        vendor = [f.vendor_err for f in group if isinstance(f, NcclWarn) and f.vendor_err is not None]
        hosts = sorted({f.host for f in group if isinstance(f, NcclWarn) and f.host})
        extra = {"kind": kind, "hosts": hosts}
        if vendor:
            extra["vendor_err"] = vendor[0]
        found = problem(ev, group, f"{who_}: NCCL {kind} error{when(group)}: {text}",
                        _HINTS.get(kind, _HINTS["other"]), extra=extra)
        found.hosts = hosts
        problems.append(found)
    return problems
