"""DDP512: ranks timed out waiting in a collective: the consequences of the first cause, grouped."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check
from ddpdoctor.postmortem.causality import none_found, CONSEQUENCE, problem, verdict
from ddpdoctor.postmortem.evidence import Evidence
from ddpdoctor.probe.words.wording import rank_list


@check("DDP512", "Ranks timed out waiting for a peer (consequences)", Severity.WARNING, stages=("evidence",))
def watchdog_timeouts(ev: Evidence) -> list[Problem] | Skipped:
    """
    What it detects:
        The ranks that waited: ProcessGroupNCCL's "Watchdog caught collective operation
        timeout: WorkNCCL(SeqNum=N, OpType=OP, ...) ran for M milliseconds", their "last
        enqueued / last completed work", and the errors ranks got because a peer vanished
        ("Connection reset by peer", "ncclRemoteError"). Grouped by the collective they waited
        in, each group says whom it waited for. Also: when torchrun's "Root Cause (first
        observed failure)" names one of these ranks, the finding says so: torchelastic picks
        the failure it saw first, often a rank the watchdog aborted, not the rank that failed.

    Why it hurts:
        They are most of a dead job's log and none of its cause: a timeout is printed by
        every rank that waited, not by the one that stopped.

    How to fix:
        Fix the first cause (its own finding). When there is none, capture more next time:
        Flight Recorder dumps (`ddpdoctor env` prints the settings), TORCH_NCCL_DESYNC_DEBUG=1,
        NCCL_DEBUG=WARN, or `ddpdoctor attach` while the job hangs.
    """
    collateral = [e for e in ev.errors if e.collateral]
    if not (ev.timeouts or collateral):
        return none_found(ev)
    cause = verdict(ev)
    waiting_for = f" — waiting for {rank_list(cause.ranks)}" if cause.ranks else ""
    problems = []
    groups = _groups(ev.timeouts)
    for (pg, seq, op), items in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        ranks = sorted({w.rank for w in items if w.rank is not None})
        timeout = next((w.timeout_ms for w in items if w.timeout_ms), None)
        after = f" after {timeout / 1000:g} s" if timeout else ""
        sites = sorted({str(w.site) for w in items if w.site})
        called = f" (called at {', '.join(sites[:3])})" if sites else ""
        group = f" on group {pg}" if pg else ""
        who_ = rank_list(ranks) if ranks else "a rank"
        problems.append(problem(ev, items,
                                f"{who_}: watchdog timeout in {op} SeqNum {seq}{group}{called}{after}{waiting_for}",
                                "a consequence: fix the first cause; "
                                + _capture(cause.known, ev.flight is not None and bool(ev.flight.dumps)),
                                role_=CONSEQUENCE, extra={"seq": seq, "op": op, "pg": pg,
                                                          "status": _status(ev, ranks)}))
    if collateral:
        ranks = sorted({e.rank for e in collateral if e.rank is not None})
        summary = collateral[0].summary()
        problems.append(problem(ev, collateral, f"{rank_list(ranks) if ranks else 'a process'} failed "
                                f"because a peer went away ({summary}){waiting_for}",
                                "a consequence: fix the first cause", role_=CONSEQUENCE))
    root = [c for c in ev.children if c.root and c.rank is not None]
    if root and cause.ranks and root[0].rank not in cause.ranks and problems:
        problems[0].message += (f"; torchrun's 'Root Cause (first observed failure)' names rank "
                                f"{root[0].rank}, which failed waiting: the first failure was {rank_list(cause.ranks)}'s")
        problems[0].evidence["torchrun_root_cause"] = root[0].where.shown()
    return problems


def _status(ev: Evidence, ranks: list[int]) -> dict:
    out = {}
    for status in ev.pg_status:
        if status.rank in ranks:
            out[str(status.rank)] = {"last_enqueued": status.last_enqueued,
                                     "last_completed": status.last_completed}
    return out


def _capture(known: bool, dumps: bool = False) -> str:
    if known:
        return "the first cause's finding says how"
    return ("to see why next time: "
            + ("" if dumps else "Flight Recorder dumps (TORCH_FR_BUFFER_SIZE / "
               "TORCH_NCCL_TRACE_BUFFER_SIZE=2000 and TORCH_FR_DUMP_TEMP_FILE / TORCH_NCCL_DEBUG_INFO_TEMP_FILE; "
               "`ddpdoctor env` prints them), ")
            + "TORCH_NCCL_DESYNC_DEBUG=1, NCCL_DEBUG=WARN, or `ddpdoctor attach` while it hangs")


def _groups(timeouts: list) -> dict[tuple, list]:
    """The timeouts by (group, SeqNum, OpType). A line that does not name its group joins the one
    group of the same SeqNum and OpType that is named: torch prints one timeout twice, as the
    watchdog caught it and again in the exception its thread ends with (that one after
    `[PG ID 0 PG GUID 0(default_pg) Rank 0]`), which is one timeout, not two (seen on an H200
    with torch 2.11)."""
    groups: dict[tuple, list] = {}
    for w in timeouts:
        groups.setdefault((w.pg, w.seq, w.op), []).append(w)
    for pg, seq, op in [key for key in groups if not key[0]]:
        named = [key for key in groups if key[0] and key[1:] == (seq, op)]
        if len(named) == 1:
            groups[named[0]] = sorted(groups.pop((pg, seq, op)) + groups[named[0]], key=lambda w: w.order)
    return groups
