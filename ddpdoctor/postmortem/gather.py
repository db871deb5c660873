"""EVIDENCE... -> the Evidence observation: each input read by the reader of its kind."""

from __future__ import annotations

from pathlib import Path

from ddpdoctor.attach import flight
from ddpdoctor.postmortem import elastic
from ddpdoctor.postmortem.evidence import Evidence, Line, RankError
from ddpdoctor.postmortem.kinds import error_kind
from ddpdoctor.postmortem.sources import Input, collect, open_input
from ddpdoctor.postmortem.textlog import LogReader
from ddpdoctor.postmortem.tracebacks import Tracebacks

MAX_ERROR_FILE = 16 * 1024 * 1024
_ORDER_STRIDE = 10 ** 12  # orders of one input stay below the next input's


def gather(paths: list[str]) -> Evidence:
    inputs, notes = collect(paths)
    ev = Evidence(sources=[i.shown for i in inputs], notes=notes)
    dump_files: dict[int, Path] = {}
    for index, item in enumerate(inputs):
        base = index * _ORDER_STRIDE
        if item.kind == "dump":
            rank = item.rank if item.rank is not None else len(dump_files)
            if item.gz:
                ev.notes.append(f"{item.shown}: a compressed dump: unpack it to read it")
            elif rank in dump_files:
                ev.notes.append(f"{item.shown}: a second dump for rank {rank}: not read")
            else:
                dump_files[rank] = item.path
            continue
        try:
            if item.kind == "error_file":
                _error_file(ev, item, base)
            else:
                stream = open_input(item)
                LogReader(ev, item.shown, item.rank, base).read(stream)
                if stream.cut:
                    ev.notes.append(f"{item.shown}: read up to its first {stream.left} bytes only")
        except (OSError, EOFError, ValueError) as exc:
            ev.notes.append(f"{item.shown}: not read ({exc})")
    if dump_files:
        _dumps(ev, dump_files)
    _ranks_by_pid(ev)
    ev.ranks.update(r for r in (f.rank for f in _all_facts(ev)) if r is not None)
    return ev


def _ranks_by_pid(ev: Evidence) -> None:
    """An NCCL line printed before any line tied its pid to a rank (NCCL's WARN comes before the
    traceback and torchrun's summary that name the rank) gets its rank from the pid at the end."""
    for warn in ev.nccl:
        if warn.rank is None and warn.pid is not None:
            warn.rank = ev.pids.get(warn.pid)


def _all_facts(ev: Evidence):
    yield from ev.errors
    yield from ev.timeouts
    yield from ev.pg_status
    yield from ev.children
    yield from ev.nccl
    yield from ev.teardowns


def _error_file(ev: Evidence, item: Input, base: int) -> None:
    raw = open_input(item, MAX_ERROR_FILE).read(MAX_ERROR_FILE)
    try:
        data = elastic.load_json(raw)
    except (ValueError, RecursionError):
        ev.notes.append(f"{item.shown}: not JSON: read as a log")
        LogReader(ev, item.shown, item.rank, base).read(open_input(item))
        return
    read = elastic.read_error_file(data)
    if read is None:
        ev.notes.append(f"{item.shown}: JSON, but not a torchelastic error file: skipped")
        return
    message, callstack, t = read
    tracebacks = Tracebacks()
    for number, text in enumerate(callstack.splitlines()[:5000], 1):
        tracebacks.feed(item.rank, text, Line(item.shown, number, text[:1000]))
    tracebacks.flush()
    done = tracebacks.take()
    where = done[-1][1].where if done else Line(item.shown, 1, message[:1000])
    site = done[-1][1].site if done else None
    exc_type, _, text = message.partition(": ")
    kind = error_kind(exc_type, message + "\n" + callstack)
    ev.errors.append(RankError(item.rank, where, t, base + 1, exc_type=exc_type or "error",
                               message=text or message, traceback=callstack[:4000], site=site,
                               collateral=kind == "collateral", kind="own" if kind == "collateral" else kind))


def _dumps(ev: Evidence, files: dict[int, Path]) -> None:
    dumps, notes = flight.load_files(files)
    ev.notes.extend(notes)
    if not dumps:
        return
    job = flight.one_job(dumps)
    ev.notes.extend(job.notes)
    ev.flight = job  # lined up and judged by the collective checks, as `report DUMPS` does
