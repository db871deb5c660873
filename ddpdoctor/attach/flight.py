"""`ddpdoctor report FR_DUMP_DIR`: a folder of Flight Recorder dumps, one per rank.

Flight Recorder keeps each rank's last collectives (process group, sequence number, op, sizes,
dtypes, whether it completed, the Python frames that called it). Lining the ranks up by
sequence number per process group gives the first collective that not every rank entered
or that ranks entered with different ops, shapes or dtypes, as torch's own analyzer
(torch.distributed.flight_recorder) does. The dumps of one job (DumpSet) are an observation:
the checks that own DDP501 and DDP502 judge its line-up (stage "flight"), whichever command read
the dumps (`report DUMPS` here, attach's dump pipe, the post-mortem's gather). Unlike it, the process groups are taken from
the entries, not from `pg_config`, which gloo leaves keyed by '' (torch's analyzer fails there
with a KeyError).

Dumps are pickles (or JSON, TORCH_NCCL_DEBUG_INFO / TORCH_FR_DUMP_TEMP_FILE's `.json` form). Only
files in the folder the user named are read (a link to a file elsewhere is not followed), and
pickles through an unpickler that builds nothing but plain containers, strings and numbers: a file
that asks for any other object is refused, never run. What it built is then walked once, bounded
in nodes and depth, before anything else touches it: a few hundred bytes of pickle can share one
list through its memo until the data, walked, has 10^25 elements, or nest 200,000 deep.

A set of dumps is judged only when it is complete: every rank the dumps' own `pg_config` lists
has a dump with entries. Dumps of another job (a different world in `pg_config`, a different
version) left in the same folder are set apart with a note, never lined up with this job's.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from ddpdoctor.core.errors import UsageError
from ddpdoctor.core.findings import Severity
from ddpdoctor.core.registry import run_checks
from ddpdoctor.probe.run_model.stack_view import StackView
from ddpdoctor.probe.words.wording import rank_list
from ddpdoctor.probe.run_model.stack_text import json_frames
from ddpdoctor.probe.records.rundir import META_FILE, RANK_TELEMETRY_GLOB
from ddpdoctor.report.model import Report, Table

MAX_DUMP_BYTES = 512 * 1024 * 1024
MAX_DUMPS = 8192
# Fields are read through bounded accessors (_text, _sizes, frames_of), never walked whole or
# turned into text: a few hundred bytes of pickle can share one list through the memo until it is
# 10^25 elements long as text, or nest 200,000 deep.
MAX_SIZES = 4096
MAX_FRAMES = 64
_RANK_IN_NAME = re.compile(r"(\d+)(?:\.\w+)?$")


class _PlainUnpickler(pickle.Unpickler):
    """Builds dicts, lists, tuples, sets, strings, bytes and numbers only."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refused to build {module}.{name}")


def _text(value: Any, limit: int = 300) -> str:
    """A field read as text, bounded: a string cut, a number written, anything else "?" (a
    container is never turned into text: shared through the memo, it can be 10^25 long)."""
    if isinstance(value, str):
        return value[:limit]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)[:limit]
    return "?"


def _sizes(value: Any) -> str:
    """input_sizes (a list of shapes, each a list of ints) as canonical text, or "?" when it is
    not that shape or holds more than MAX_SIZES numbers: the walk is bounded, never recursive."""
    # The common shape, checked with C loops: a short list of short lists of ints (its repr bounded).
    if type(value) is list and len(value) == 1 and type(value[0]) is list and len(value[0]) <= 64:
        if set(map(type, value[0])) <= _INT:
            return repr(value)
    if type(value) is list and len(value) <= 64 and set(map(type, value)) <= _LIST:
        if sum(map(len, value)) <= MAX_SIZES and set(map(type, _chain(value))) <= _INT:
            return repr(value)
        return "?"
    if not isinstance(value, (list, tuple)) or len(value) > MAX_SIZES:
        return "?"
    shapes = []
    count = 0
    for shape in value:
        if not isinstance(shape, (list, tuple)):
            return "?"
        count += len(shape)
        if count > MAX_SIZES or not all(isinstance(n, int) and not isinstance(n, bool) for n in shape):
            return "?"
        shapes.append("[" + ", ".join(map(str, shape)) + "]")
    return "[" + ", ".join(shapes) + "]"


_LIST, _INT = {list}, {int}
_chain = __import__("itertools").chain.from_iterable


def _dtypes(value: Any) -> list[str]:
    if not isinstance(value, (list, tuple)):
        return []
    return [_text(d, 40) for d in value[:MAX_SIZES]]


def frames_of(entry: dict) -> list[dict]:
    """The entry's frames as plain {name, filename, line}, at most MAX_FRAMES of them."""
    frames = entry.get("frames")
    if not isinstance(frames, (list, tuple)):
        return []
    out = []
    for frame in frames[:MAX_FRAMES]:
        if isinstance(frame, dict):
            line = frame.get("line")
            out.append({"name": _text(frame.get("name"), 200), "filename": _text(frame.get("filename"), 500),
                        "line": line if isinstance(line, int) and not isinstance(line, bool) else 0})
    return out


def parse_dump(raw: bytes) -> dict:
    """A dump's bytes (pickle or JSON) as plain data, checked and bounded; ValueError otherwise."""
    try:
        if raw[:1] == b"\x80":
            data = _PlainUnpickler(io.BytesIO(raw)).load()
        else:
            data = json.loads(raw)
    except RecursionError:
        raise ValueError("nested deeper than Python can read: refused") from None
    except (pickle.UnpicklingError, EOFError, IndexError, TypeError, AttributeError, KeyError,
            UnicodeDecodeError, json.JSONDecodeError, MemoryError) as exc:
        raise ValueError(str(exc) or type(exc).__name__) from None
    if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
        raise ValueError("no 'entries' list: not a Flight Recorder dump")
    slim = []
    for index, entry in enumerate(data["entries"]):
        if not isinstance(entry, dict):
            continue
        kept = _slim(entry)
        if kept["_sizes"] == "?" and entry.get("input_sizes") is not None:
            raise ValueError(f"entry {index}'s input_sizes is not a list of shapes of at most "
                             f"{MAX_SIZES} numbers: refused")
        slim.append(kept)
    data["entries"] = slim
    return data


def _slim(entry: dict) -> dict:
    """The entry with its sizes and dtypes made text once (they are compared at every position,
    a thousand ranks each), and the fields the lining-up never reads dropped: a thousand ranks'
    dumps stay small."""
    for unread in _UNREAD:
        entry.pop(unread, None)
    entry["_sizes"] = _sizes(entry.get("input_sizes"))
    dtypes = entry.get("input_dtypes")
    entry["_dtypes"] = (tuple(dtypes) if type(dtypes) is list and len(dtypes) <= 64 and set(map(type, dtypes)) <= _STR
                        else tuple(_dtypes(dtypes)))
    if type(entry.get("frames")) is not list:
        entry["frames"] = []  # read through frames_of when shown
    return entry


_UNREAD = ("output_sizes", "output_dtypes", "record_id", "op_id", "p2p_seq_id", "duration_ms",
           "time_discovered_started_ns", "time_discovered_completed_ns", "timeout_ms", "thread_id",
           "thread_name")
_STR = {str}


def looks_dump(head: bytes) -> bool:
    """A pickle (protocol 2 and later), or a JSON object with Flight Recorder's keys."""
    return head[:1] == b"\x80" or (head.lstrip()[:1] == b"{" and b'"entries"' in head
                                     and (b'"version"' in head or b'"pg_config"' in head))


def inside(path: Path, folder: Path) -> bool:
    """The file a path names lies in the folder (a link pointing elsewhere does not)."""
    try:
        path.resolve().relative_to(folder.resolve())
    except (ValueError, OSError):
        return False
    return True


def is_dump_dir(path: str) -> bool:
    """A folder of Flight Recorder pickles, not a probe's run dir."""
    folder = Path(path)
    if not folder.is_dir() or (folder / META_FILE).exists() or any(folder.glob(RANK_TELEMETRY_GLOB)):
        return False
    return bool(_dump_files(folder))


def _dump_files(folder: Path) -> list[Path]:
    found = []
    for entry in sorted(folder.iterdir()):
        if not entry.is_file() or entry.name.endswith(".tmp") or not inside(entry, folder):
            continue
        try:
            with open(entry, "rb") as handle:
                if looks_dump(handle.read(4096)):
                    found.append(entry)
        except OSError:
            continue
        if len(found) >= MAX_DUMPS:
            break
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
                dumps[rank] = parse_dump(handle.read(MAX_DUMP_BYTES + 1))
        except (OSError, ValueError) as exc:
            notes.append(f"{path.name}: not read ({exc})")
    return dumps, notes


class Call:
    """One rank's entry at one position of one process group."""

    __slots__ = ("rank", "entry", "seq", "shape")

    def __init__(self, rank: int, entry: dict, seq: Optional[int] = None) -> None:
        self.rank = rank
        self.entry = entry
        self.seq = seq_of(entry) if seq is None else seq
        self.shape = self._shape()  # compared at its position against every other rank's

    @property
    def op(self) -> str:
        return _text(self.entry.get("profiling_name", "?")).split(":", 1)[-1]

    def _shape(self) -> tuple:
        entry = self.entry
        if "_sizes" in entry:
            return (self.op, entry["_sizes"], entry["_dtypes"])
        return (self.op, _sizes(entry.get("input_sizes")), tuple(_dtypes(entry.get("input_dtypes"))))

    def describe(self) -> str:
        sizes = _sizes(self.entry.get("input_sizes"))
        dtypes = _dtypes(self.entry.get("input_dtypes"))
        seq = self.seq if self.seq >= 0 else "?"  # seq_of's -1: missing or not a number
        return f"{self.op} #{seq} ({sizes} {', '.join(map(str, dtypes or []))})".replace(" )", ")")

    @property
    def view(self) -> StackView:
        return StackView(self.rank, json_frames(frames_of(self.entry)), "flight recorder")

    def at(self) -> str:
        location = self.view.location
        return f" at {location}" if location else ""


def completed(entry: dict) -> bool:
    """The collective finished on this rank. `state` is read from the work's CUDA events when the
    dump is written; `retired` only once the watchdog has swept the work up, which lags: a dump
    taken on demand right after a synchronize (torch 2.11, NCCL 2.28.9 on an H200) had six entries
    `state: completed` and none retired. Older dumps without `state` have `retired` alone."""
    return entry.get("state") == "completed" or entry.get("retired") is True


def seq_of(entry: dict) -> int:
    """An entry's collective sequence number; -1 when it is missing or not a number."""
    value = entry.get("collective_seq_id")
    if isinstance(value, bool):
        return -1
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit() and len(value) < 20:
        return int(value)
    return -1


def _groups(dumps: dict[int, dict]) -> dict[str, dict[int, dict[int, Call]]]:
    """process group -> rank -> seq -> its call (collectives only; p2p have their own ids)."""
    groups: dict[str, dict[int, dict[int, Call]]] = {}
    names: dict[Any, str] = {}  # a process group's tuple -> its name, made once
    for rank, dump in dumps.items():
        mine: dict[str, dict[int, Call]] = {}
        for entry in dump.get("entries") or []:
            if not isinstance(entry, dict) or entry.get("is_p2p"):
                continue
            seq = seq_of(entry)
            if seq < 0:
                continue  # no usable sequence number: it cannot be lined up
            pg = entry.get("process_group")
            name = names.get(pg) if type(pg) is tuple and len(pg) <= 4 else None
            if name is None:
                name = (":".join(_text(p, 100) for p in pg[:4]) if isinstance(pg, (list, tuple))
                        else _text(entry.get("pg_id")))
                if type(pg) is tuple and len(pg) <= 4 and len(names) < 10000:
                    try:
                        names[pg] = name
                    except TypeError:
                        pass  # a tuple holding a list: not a key, named each time
            calls = mine.get(name)
            if calls is None:
                calls = mine[name] = groups.setdefault(name, {}).setdefault(rank, {})
            calls[seq] = Call(rank, entry, seq)
    return groups


SKIPPED, MISMATCH = "skipped", "mismatch"


@dataclass
class Divergence:
    """The first position of one process group where the ranks part: some never entered the
    collective others did (SKIPPED), or they entered it with different ops, shapes or dtypes
    (MISMATCH)."""

    kind: str
    group: str
    seq: int
    by_rank: dict[int, dict[int, Call]]  # rank -> seq -> its call, on this group
    entered: list[int] = field(default_factory=list)  # SKIPPED: the ranks that entered it
    lacking: list[int] = field(default_factory=list)  # SKIPPED: the ranks that never did
    shapes: dict[tuple, list[int]] = field(default_factory=dict)  # MISMATCH: call shape -> ranks


@dataclass
class LineUp:
    divergences: list[Divergence]
    compared: int  # positions compared


def line_up(dumps: dict[int, dict]) -> LineUp:
    """The first divergence of each process group, and the positions compared."""
    found = []
    compared = 0
    for group, by_rank in sorted(_groups(dumps).items()):
        ranks = sorted(dumps)
        start = max(min(calls) for calls in by_rank.values()) if len(by_rank) == len(ranks) else 1
        # The positions some rank recorded, not a range: a gap (or a huge number) costs nothing.
        positions = sorted({s for calls in by_rank.values() for s in calls if s >= start})
        calls_of = [(r, by_rank.get(r, {})) for r in ranks]
        for seq in positions:
            here = [(r, calls[seq]) for r, calls in calls_of if seq in calls]
            compared += 1
            if len(here) < len(ranks):
                have = [r for r, _ in here]
                present = set(have)
                lacking = [r for r in ranks if r not in present]
                found.append(Divergence(SKIPPED, group, seq, by_rank, entered=have, lacking=lacking))
                break
            shapes = {}
            for r, call in here:
                shapes.setdefault(call.shape, []).append(r)
            if len(shapes) > 1:
                found.append(Divergence(MISMATCH, group, seq, by_rank, shapes=shapes))
                break
    return LineUp(found, compared)


def world_of(dump: dict) -> tuple:
    """The ranks the dump's own pg_config lists for its widest group (the default group), or ()
    where it lists none (gloo leaves pg_config keyed by '' with no ranks). Ranks are read as
    numbers from their text (pg_config writes them as "[0, 1, 2]"), never evaluated."""
    config = dump.get("pg_config")
    widest: tuple = ()
    if not isinstance(config, dict):
        return widest
    for group in list(config.values())[:4096]:
        ranks = group.get("ranks") if isinstance(group, dict) else None
        if isinstance(ranks, (list, tuple)):
            numbers = tuple(r for r in ranks if isinstance(r, int) and not isinstance(r, bool))
        elif isinstance(ranks, str) and len(ranks) < 10_000_000:
            numbers = tuple(int(x) for x in re.findall(r"\d+", ranks))
        else:
            continue
        if len(numbers) > len(widest):
            widest = numbers
    return widest


def _newest(dump: dict) -> int:
    times = [e.get("time_created_ns") for e in dump.get("entries") or [] if isinstance(e, dict)]
    return max((t for t in times if isinstance(t, int) and not isinstance(t, bool)), default=0)


@dataclass
class DumpSet:
    """The dumps of one job, and why the set is not complete ('' when it is): the observation
    the collective checks judge."""

    dumps: dict[int, dict]
    missing: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.missing

    @property
    def lineup(self) -> LineUp:
        """The dumps lined up (once: both collective checks read it)."""
        cached = self.__dict__.get("_lineup")
        if cached is None:
            cached = self.__dict__["_lineup"] = line_up(self.dumps)
        return cached


def one_job(dumps: dict[int, dict]) -> DumpSet:
    """The dumps of the newest job among them, set apart from any other job's (a different world
    in pg_config, a different dump version), and what its set lacks."""
    jobs: dict[tuple, dict[int, dict]] = {}
    for rank, dump in dumps.items():
        jobs.setdefault((str(dump.get("version", "")), world_of(dump)), {})[rank] = dump
    notes = []
    if len(jobs) > 1:
        keys = sorted(jobs, key=lambda k: (max(_newest(d) for d in jobs[k].values()), len(jobs[k]), k[1]))
        chosen = keys[-1]
        # Dumps that list no world (gloo) go with the job whose world holds them.
        for key in keys[:-1]:
            if not key[1] and chosen[1] and key[0] == chosen[0] and set(jobs[key]) <= set(chosen[1]):
                jobs[chosen].update(jobs.pop(key))
        for key in keys[:-1]:
            if key in jobs:
                world = f"a world of {len(key[1])} ranks" if key[1] else "no world in pg_config"
                notes.append(f"dumps of {rank_list(sorted(jobs[key]))} are from another job ({world}, "
                             f"version {key[0] or '?'}): set apart, not judged with the others")
        picked = jobs[chosen]
    else:
        chosen, picked = next(iter(jobs.items()))
    world = set(chosen[1]) or set(picked)
    lacking = sorted(world - set(picked))
    empty = sorted(r for r, d in picked.items() if not d.get("entries"))
    missing = []
    if lacking:
        missing.append(f"no dump of {rank_list(lacking)} (pg_config lists {len(world)} ranks, "
                       f"{len(set(picked) & world)} dumped)")
    if empty:
        missing.append(f"the dump of {rank_list(empty)} has no entries")
    if not chosen[1]:
        notes.append("the dumps' pg_config lists no ranks: completeness judged from the dumps present")
    return DumpSet(picked, "; ".join(missing), notes)


def report(folder: str, fail_on: Severity, ignore: set[str]) -> Report:
    """The report of a folder of dumps: the checks of stage "flight" over the dumps of one job."""
    dumps, notes = load(folder)
    if not dumps:
        raise UsageError(f"{folder}: no Flight Recorder dump could be read ({'; '.join(notes)})")
    job = one_job(dumps)
    notes.extend(job.notes)
    dumps = job.dumps
    results = run_checks("flight", job, ignore)
    rows = []
    for rank, dump in sorted(dumps.items()):
        entries = [e for e in dump.get("entries") or [] if isinstance(e, dict)]
        open_ = [e for e in entries if not completed(e)]
        last = Call(rank, entries[-1]) if entries else None
        rows.append([rank, len(entries), len(open_), last.describe() if last else "-",
                     (last.view.location and str(last.view.location)) or "-" if last else "-"])
    notes.append("dumps are pickles: only the files in the folder you named were read, with an "
                 "unpickler that builds plain data only")
    return Report(command="report", results=results, fail_on=fail_on,
                  header=f"Flight Recorder dumps in {folder}: {len(dumps)} rank(s)",
                  tables=[Table("Ranks' last collectives", ["rank", "entries", "not completed",
                                                             "last collective", "at"], rows)],
                  notes=notes, metrics={"ranks": len(dumps), "positions_compared": job.lineup.compared},
                  run_dir=os.path.abspath(folder))
