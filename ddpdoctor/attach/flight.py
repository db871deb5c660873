"""`ddpdoctor report FR_DUMP_DIR`: a folder of Flight Recorder dumps, one per rank.

Flight Recorder keeps each rank's last collectives (process group, sequence number, op, sizes,
dtypes, whether it completed, the Python frames that called it). Lining the ranks up by
sequence number per process group gives the first collective that not every rank entered
(DDP502) or that ranks entered with different ops, shapes or dtypes (DDP501), as torch's own
analyzer (torch.distributed.flight_recorder) does. Unlike it, the process groups are taken from
the entries, not from `pg_config`, which gloo leaves keyed by '' (torch's analyzer fails there
with a KeyError).

Dumps are pickles. Only files in the folder the user named are read, and through an unpickler
that builds nothing but plain containers, strings and numbers: a file that asks for any other
object is refused, never run.
"""

from __future__ import annotations

import io
import os
import pickle
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ddpdoctor.attach.judge import probe_check
from ddpdoctor.core.errors import UsageError
from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import FAILED, INCOMPLETE, PASSED, CheckResult
from ddpdoctor.probe.run_model.stack_view import StackView
from ddpdoctor.probe.wording import rank_list, verb
from ddpdoctor.probe.run_model.stack_text import json_frames
from ddpdoctor.probe.rundir import META_FILE, RANK_TELEMETRY_GLOB
from ddpdoctor.report.model import Report, Table

MAX_DUMP_BYTES = 512 * 1024 * 1024
_RANK_IN_NAME = re.compile(r"(\d+)(?:\.\w+)?$")


class _PlainUnpickler(pickle.Unpickler):
    """Builds dicts, lists, tuples, sets, strings, bytes and numbers only."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refused to build {module}.{name}")


def is_dump_dir(path: str) -> bool:
    """A folder of Flight Recorder pickles, not a probe's run dir."""
    folder = Path(path)
    if not folder.is_dir() or (folder / META_FILE).exists() or any(folder.glob(RANK_TELEMETRY_GLOB)):
        return False
    return bool(_dump_files(folder))


def _dump_files(folder: Path) -> list[Path]:
    found = []
    for entry in sorted(folder.iterdir()):
        if not entry.is_file() or entry.name.endswith(".tmp"):
            continue
        try:
            with open(entry, "rb") as handle:
                if handle.read(1) == b"\x80":  # pickle protocol 2 and later
                    found.append(entry)
        except OSError:
            continue
    return found


def load(folder: str) -> tuple[dict[int, dict], list[str]]:
    """rank -> its dump (the rank from the file name's last digits: TORCH_FR_DUMP_TEMP_FILE is a
    prefix the rank is appended to), and a note for each file that could not be read."""
    files = {}
    for index, path in enumerate(_dump_files(Path(folder))):
        match = _RANK_IN_NAME.search(path.name)
        files[int(match.group(1)) if match else index] = path
    return load_files(files)


def load_files(files: dict[int, Path]) -> tuple[dict[int, dict], list[str]]:
    """rank -> its dump, from these files only; a note for each that could not be read."""
    dumps: dict[int, dict] = {}
    notes = []
    for rank, path in sorted(files.items()):
        path = Path(path)
        try:
            if path.stat().st_size > MAX_DUMP_BYTES:
                raise ValueError("larger than 512 MB")
            with open(path, "rb") as handle:
                data = _PlainUnpickler(io.BytesIO(handle.read())).load()
            if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
                raise ValueError("no 'entries' list: not a Flight Recorder dump")
            dumps[rank] = data
        except (OSError, ValueError, EOFError, pickle.UnpicklingError, IndexError, TypeError,
                AttributeError) as exc:
            notes.append(f"{path.name}: not read ({exc})")
    return dumps, notes


@dataclass
class Call:
    """One rank's entry at one position of one process group."""

    rank: int
    entry: dict

    @property
    def seq(self) -> int:
        return int(self.entry.get("collective_seq_id") or 0)

    @property
    def op(self) -> str:
        return str(self.entry.get("profiling_name", "?")).split(":", 1)[-1]

    @property
    def shape(self) -> tuple:
        return (self.op, repr(self.entry.get("input_sizes")), repr(self.entry.get("input_dtypes")))

    def describe(self) -> str:
        sizes = self.entry.get("input_sizes")
        dtypes = self.entry.get("input_dtypes")
        return f"{self.op} #{self.seq} ({sizes} {', '.join(map(str, dtypes or []))})".replace(" )", ")")

    @property
    def view(self) -> StackView:
        return StackView(self.rank, json_frames(self.entry.get("frames") or []), "flight recorder")

    def at(self) -> str:
        location = self.view.location
        return f" at {location}" if location else ""


def _groups(dumps: dict[int, dict]) -> dict[str, dict[int, dict[int, Call]]]:
    """process group -> rank -> seq -> its call (collectives only; p2p have their own ids)."""
    groups: dict[str, dict[int, dict[int, Call]]] = {}
    for rank, dump in dumps.items():
        for entry in dump.get("entries") or []:
            if not isinstance(entry, dict) or entry.get("is_p2p"):
                continue
            pg = entry.get("process_group")
            name = ":".join(map(str, pg)) if isinstance(pg, (list, tuple)) else str(entry.get("pg_id"))
            call = Call(rank, entry)
            groups.setdefault(name, {}).setdefault(rank, {})[call.seq] = call
    return groups


def analyse(dumps: dict[int, dict]) -> tuple[list[tuple[str, Problem]], int]:
    """The first divergence of each process group, as (code, problem); and the positions
    compared."""
    problems = []
    compared = 0
    for group, by_rank in sorted(_groups(dumps).items()):
        ranks = sorted(dumps)
        start = max(min(calls) for calls in by_rank.values()) if len(by_rank) == len(ranks) else 1
        end = max(max(calls) for calls in by_rank.values())
        for seq in range(start, end + 1):
            have = [r for r in ranks if seq in by_rank.get(r, {})]
            lacking = [r for r in ranks if r not in have]
            compared += 1
            if lacking:
                problems.append(("DDP502", _missing(group, seq, by_rank, have, lacking)))
                break
            shapes = {}
            for r in have:
                shapes.setdefault(by_rank[r][seq].shape, []).append(r)
            if len(shapes) > 1:
                problems.append(("DDP501", _mismatch(group, seq, by_rank, shapes)))
                break
    return problems, compared


def _missing(group: str, seq: int, by_rank, have: list[int], lacking: list[int]) -> Problem:
    call = by_rank[have[0]][seq]
    instead = []
    for r in lacking:
        calls = by_rank.get(r, {})
        if calls:
            last = calls[max(calls)]
            state = "completed" if last.entry.get("retired") else "not completed"
            instead.append(f"rank {r}'s last collective was {last.describe()}{last.at()} ({state})")
        else:
            instead.append(f"rank {r} recorded no collective on this group")
    stuck = "" if call.entry.get("retired") else f"; {rank_list(have)} {verb(have, 'waits', 'wait')} in it"
    frames = {str(r): by_rank[r][max(by_rank[r])].view.lines() for r in lacking if by_rank.get(r)}
    return Problem(
        message=(f"{rank_list(have)} entered {call.describe()}{call.at()} on group {group} and "
                 f"{rank_list(lacking)} never did: " + "; ".join(instead) + stuck),
        hint=(f"call {call.op} on every rank, outside any rank- or data-dependent branch; "
              f"{rank_list(lacking)} stopped before it: {verb(lacking, 'its', 'their')} last "
              "collective's frames (in the details) show where"),
        ranks=lacking if len(lacking) <= len(have) else have,
        location=call.view.location,
        evidence={"group": group, "seq": seq, "op": call.op, "entered_ranks": have,
                  "skipped_ranks": lacking, "source": "flight recorder",
                  "detail": "\n".join([f"rank {have[0]} (entered): {call.view.lines()}"] +
                                      [f"rank {r} (last collective): {t}" for r, t in frames.items()])},
    )


def _mismatch(group: str, seq: int, by_rank, shapes: dict[tuple, list[int]]) -> Problem:
    parts = [f"{rank_list(ranks)} called {by_rank[ranks[0]][seq].describe()}{by_rank[ranks[0]][seq].at()}"
             for ranks in shapes.values()]
    smallest = min(shapes.values(), key=len)
    call = by_rank[smallest[0]][seq]
    return Problem(
        message=f"position {seq} on group {group}: " + "; ".join(parts),
        hint="every rank must call the same collective with the same shapes and dtypes at the same position",
        ranks=smallest,
        location=call.view.location,
        evidence={"group": group, "seq": seq, "source": "flight recorder",
                  "calls": {str(r): by_rank[r][seq].describe() for rs in shapes.values() for r in rs}},
    )


def report(folder: str, fail_on: Severity, ignore: set[str]) -> Report:
    """The report of a folder of dumps: DDP501 and DDP502 over the lined-up collectives."""
    dumps, notes = load(folder)
    if not dumps:
        raise UsageError(f"{folder}: no Flight Recorder dump could be read ({'; '.join(notes)})")
    found, compared = analyse(dumps)
    results = []
    for code in ("DDP501", "DDP502"):
        spec = probe_check(code)
        if code in ignore:
            results.append(CheckResult(spec, "ignored", reason="--ignore"))
            continue
        problems = [p for c, p in found if c == code]
        if len(dumps) < 2:
            results.append(CheckResult(spec, INCOMPLETE, reason="fewer than 2 ranks' dumps: nothing to line up"))
        elif problems:
            results.append(CheckResult(spec, FAILED, [spec.finding(p) for p in problems]))
        else:
            results.append(CheckResult(spec, PASSED))
    rows = []
    for rank, dump in sorted(dumps.items()):
        entries = [e for e in dump.get("entries") or [] if isinstance(e, dict)]
        open_ = [e for e in entries if not e.get("retired")]
        last = Call(rank, entries[-1]) if entries else None
        rows.append([rank, len(entries), len(open_), last.describe() if last else "-",
                     (last.view.location and str(last.view.location)) or "-" if last else "-"])
    notes.append("dumps are pickles: only the files in the folder you named were read, with an "
                 "unpickler that builds plain data only")
    return Report(command="report", results=results, fail_on=fail_on,
                  header=f"Flight Recorder dumps in {folder}: {len(dumps)} rank(s)",
                  tables=[Table("Ranks' last collectives", ["rank", "entries", "not completed",
                                                             "last collective", "at"], rows)],
                  notes=notes, metrics={"ranks": len(dumps), "positions_compared": compared},
                  run_dir=os.path.abspath(folder))
