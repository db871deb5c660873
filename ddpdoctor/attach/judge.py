"""attach's verdict: the checks of stage "attach" over the observation (core/registry.run_checks:
the checks that own DDP503, DDP502 and DDP601 judge the sampled stacks and /proc, and DDP501 /
DDP502 the Flight Recorder dumps attach's pipe fetched), the ranks' table, the notes, and the
job's state (hung, straggler, healthy, unknown) from the window read once (attach/window.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from ddpdoctor.attach.observation import Observation
from ddpdoctor.attach.window import PROGRESSING, Reading, Window, window
from ddpdoctor.core.registry import CheckResult, all_checks, run_checks
from ddpdoctor.report.model import Table

# The order attach has always listed its checks in: the stall first. The dumps' own check
# (DDP501) is listed only when attach's pipe fetched dumps to line up: the stacks never show it.
SHOWN = ("DDP503", "DDP502", "DDP601", "DDP501")
FROM_DUMPS_ONLY = ("DDP501",)


@dataclass
class Verdict:
    """The check results, the per-rank table and the notes of one attach."""

    results: list[CheckResult]
    table: Table
    notes: list[str]
    state: str  # hung | straggler | healthy | unknown


def judge(observation: Observation, ignore: set[str] = frozenset()) -> Verdict:
    win = window(observation)
    codes = {s.code for s in all_checks("attach")}
    if observation.flight is None:
        codes -= set(FROM_DUMPS_ONLY)
    results = run_checks("attach", observation, ignore, only=codes)
    results.sort(key=lambda r: SHOWN.index(r.spec.code) if r.spec.code in SHOWN else len(SHOWN))
    return Verdict(results, _table(win.reads, observation.nodes > 1), _notes(win), win.state())


def _notes(win: Window) -> list[str]:
    notes = list(win.observation.notes)
    if not win.sampled:
        return notes
    notes += [f"rank {r.rank} (pid {r.obs.pid}): {r.obs.error or 'too few samples'}"
              for r in win.unsampled if not r.obs.exited]
    gone = win.gone()
    if gone:
        notes.insert(0, gone)
    if win.phase == PROGRESSING and win.straggler() is None:
        if win.state() == "healthy":
            notes.insert(0, _healthy(win))
        else:
            notes = [n for n in notes if not n.startswith("healthy:")]
    return notes


def _healthy(win: Window) -> str:
    sampled = win.sampled
    calls = [r.obs.io_calls for r in sampled if r.obs.io_calls is not None]
    io = f", {min(calls)}-{max(calls)} read/write calls per rank" if calls else ""
    shares = [r.wait_share for r in sampled]
    return (f"healthy: every rank advanced in the {win.span} sampled{io}; each waits in "
            f"{min(shares):.0%}-{max(shares):.0%} of its samples, no rank waits for another")


def _pct(value) -> str:
    return "?" if value is None else f"{value:.0%}"


def _table(reads: list[Reading], hosts: bool) -> Table:
    columns = ["rank", "pid"] + (["host"] if hosts else []) + [
        "samples", "waiting", "last stack", "main thread CPU", "read/write calls", "state"]
    rows = []
    for r in reads:
        last = r.last
        where = (last.place() if last is not None else (r.obs.error or "no stack"))
        proc = r.obs.proc
        rows.append([r.rank, r.obs.pid] + ([r.obs.host] if hosts else []) + [
            len(r.views), _pct(r.wait_share) if r.views else "?", where,
            _pct(proc.get("main_cpu_share")),
            "?" if proc.get("io_calls") is None else proc["io_calls"], proc.get("state", "?")])
    return Table("Ranks over the sampled window", columns, rows)
