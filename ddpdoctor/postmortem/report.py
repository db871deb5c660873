"""The post-mortem's report: the evidence stage's checks over what a dead job left, the first
cause first, each rank's last collective, and what was read."""

from __future__ import annotations

from ddpdoctor.core.findings import Severity
from ddpdoctor.core.registry import run_checks
from ddpdoctor.postmortem.causality import verdict
from ddpdoctor.postmortem.evidence import MAX_FACTS, Evidence
from ddpdoctor.postmortem import stopped
from ddpdoctor.postmortem.gather import gather
from ddpdoctor.probe.words.wording import rank_list
from ddpdoctor.report.model import Report, Table

MAX_ROWS = 64


def postmortem(paths: list[str], fail_on: Severity, ignore: set[str]) -> Report:
    ev = gather(paths)
    results = run_checks("evidence", ev, ignore=ignore)
    cause = verdict(ev)
    if cause.known:
        first = cause.cause[0]
        header = f"Post-mortem of {len(ev.sources)} file(s): first cause on {rank_list(cause.ranks) if cause.ranks else 'the host'} at {first.where}"
    else:
        header = f"Post-mortem of {len(ev.sources)} file(s): no first cause in the evidence"
    report = Report(command="report", results=results, fail_on=fail_on, header=header,
                    tables=[_last_collectives(ev)] if (ev.timeouts or ev.pg_status or ev.errors) else [],
                    notes=ev.notes + ["logs are read as text; Flight Recorder pickles only through an "
                                      "unpickler that builds plain data"],
                    metrics={"files": len(ev.sources), "lines_read": ev.lines_read,
                             "bytes_read": ev.bytes_read, "ranks_seen": len(ev.ranks),
                             "first_cause_ranks": cause.ranks,
                             "first_cause_lines": [f.where.shown() for f in cause.cause[:10]]})
    ended = stopped.describe(ev)
    if ended:
        report.notes.insert(0, ended)
        report.metrics["ended_from_outside"] = ended
    if ev.dropped:
        report.notes.append(f"{ev.dropped} facts beyond {MAX_FACTS:,} of one kind were counted, not kept")
    if ev.flight is not None and not ev.flight.complete:
        report.notes.append(f"Flight Recorder dumps incomplete: {ev.flight.missing}")
    return report


def _last_collectives(ev: Evidence) -> Table:
    """Per rank: the collective its watchdog caught, its last enqueued / completed work, its error."""
    rows: dict[int, list] = {}
    for rank in sorted(r for r in ev.ranks if r is not None)[:MAX_ROWS * 16]:
        rows[rank] = [rank, "-", "-", "-"]
    for w in ev.timeouts:
        if w.rank in rows:
            rows[w.rank][1] = f"{w.op} SeqNum {w.seq}" + (f" ({w.pg})" if w.pg else "")
    for status in ev.pg_status:
        if status.rank in rows:
            rows[status.rank][2] = f"{status.last_enqueued} / {status.last_completed}"
    for error in ev.errors:
        if error.rank in rows and rows[error.rank][3] == "-":
            rows[error.rank][3] = error.summary()[:120] + (" (a consequence)" if error.collateral else "")
    shown = list(rows.values())[:MAX_ROWS]
    return Table("Each rank's last collective", ["rank", "timed out in", "last enqueued / completed", "error"], shown)
