"""Everything one probe run left in its run dir, loaded into typed objects for the checks (the
types the launcher writes, Outcome and ProbeMeta, live in probe/run_model/).

A run dir holds:
  probe.json        ProbeMeta: what was launched and with which limits (written before launch)
  rank-<R>.jsonl    each rank's telemetry (telemetry.py)
  rank-<R>.stack    faulthandler text a rank wrote on a fatal signal, SIGTERM or SIGUSR1
  outcome.json      Outcome: how the job ended, exit codes, the watchdog's stacks (written last)
  job.log           the launcher's and the ranks' stdout/stderr, secret values replaced (joblog.py)
  report.json       the report (written by `probe` and `report`)
  torchrun/         torchrun's own per-rank log dirs and error files (its --log-dir)

`RunModel.load` works on any run dir, finished or killed at any moment: a missing outcome.json
means the probe itself was killed, and the checks still judge what the ranks recorded.
"""

from __future__ import annotations

import gc
import json
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional, TypeVar

from ddpdoctor.core.paths import note_own_dir
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.records import read_ahead

T = TypeVar("T")

from ddpdoctor.probe.records.rundir import MAIN_TELEMETRY, META_FILE, OUTCOME_FILE, RANK_TELEMETRY_GLOB, rank_of
from ddpdoctor.probe.run_model.outcome import Outcome, ProbeMeta, stack_file
from ddpdoctor.probe.run_model.verify import VerifyResult

if TYPE_CHECKING:
    from ddpdoctor.probe.run_model.baseline import Baseline


# The types a rank's index answers for: the record types no other type derives from (an
# instance of a subclass would be indexed under the subclass). Known once, not asked of the
# class on each of the checks' questions (half a million at 4,096 ranks).
_LEAF_RECORD_TYPES = frozenset(cls for cls in tm.RECORD_TYPES.values() if not cls.__subclasses__())


def records_by_type(records: list[Any]) -> dict[type, list[Any]]:
    """A rank's index: record type -> that type's records in order (one pass)."""
    by_type: dict = {}
    for record in records:
        kind = type(record)
        found = by_type.get(kind)
        if found is None:
            by_type[kind] = [record]
        else:
            found.append(record)
    return by_type


@dataclass
class RankRun:
    """One rank's records, with typed accessors.

    The records are indexed by type once, on the first question (a check asks a rank for one
    kind of record; at 1,024 ranks the checks ask about 120,000 times, and a scan of every
    record each time was most of the analysis). Replacing `records` drops the index; a list
    changed in place is not seen: assign a new list instead."""

    rank: int
    records: list[Any]
    signal_dump: str = ""  # rank-<R>.stack contents
    # type -> that type's records in order; (the records list it was built from, its length).
    _by_type: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    _indexed: tuple = field(default=(None, -1), init=False, repr=False, compare=False)

    def _index(self) -> dict:
        records = self.records
        if self._indexed[0] is not records or self._indexed[1] != len(records):
            self._by_type, self._indexed = records_by_type(records), (records, len(records))
        return self._by_type

    def _matching(self, cls: Any) -> Optional[list]:
        """The records of cls (a record type) in order; None when cls is not one (a base class,
        a tuple of types): the caller scans."""
        if cls not in _LEAF_RECORD_TYPES:
            return None
        return self._index().get(cls, [])

    def of(self, cls: type[T]) -> list[T]:
        found = self._matching(cls)
        if found is None:
            return [r for r in self.records if isinstance(r, cls)]
        return list(found)

    def first(self, cls: type[T]) -> Optional[T]:
        found = self._matching(cls)
        if found is None:
            return next((r for r in self.records if isinstance(r, cls)), None)
        return found[0] if found else None

    def last(self, cls: type[T]) -> Optional[T]:
        found = self._matching(cls)
        if found is None:
            return next((r for r in reversed(self.records) if isinstance(r, cls)), None)
        return found[-1] if found else None

    @property
    def steps(self) -> int:
        last = self.last(tm.Step)
        return last.step if last else 0

    @property
    def crash(self) -> Optional[tm.Crash]:
        """The exception that ended this rank; None when none did, or when the rank's own records
        go on after the one said to have (a Crash followed by steps or collectives cannot be true:
        an injected record, a relay's forgery; `contradicted_crash` says so)."""
        found = self.last(tm.Crash)
        return None if found is None or self.contradicted_crash is not None else found

    @property
    def contradicted_crash(self) -> Optional[tm.Crash]:
        """A Crash record after which the rank still stepped or joined a collective."""
        found = self.last(tm.Crash)
        if found is None:
            return None
        later = (tm.Step, tm.Collective, tm.CollectiveDone, tm.Batch)
        for record in reversed(self.records):  # from the end back to the crash: one pass
            if record is found:
                return None
            if isinstance(record, later):
                return found
        return None

    @property
    def formed(self) -> bool:
        return self.first(tm.Init) is not None

    def sites(self) -> Iterator[tm.Site]:
        """Every place in the user's code its records name (the record types of tm.SITED), by
        record type (not in record order): through the type index, not a scan of every record."""
        for kind, records in self._index().items():
            if issubclass(kind, tm.SITED):
                for record in records:
                    if record.site is not None:
                        yield record.site


@dataclass
class RunModel:
    run_dir: str
    meta: ProbeMeta
    ranks: dict[int, RankRun]
    outcome: Optional[Outcome]  # None: the probe was killed before it could write one
    # The script's own process under --launcher none, when it never became a rank itself.
    main: Optional[RankRun] = None
    # One point per world size of `probe --scaling` (analysis/scaling.py attaches them); empty without it.
    scaling: list = field(default_factory=list)
    # What `probe --verify-fix` measured (run_model/verify.py) and the --baseline report's numbers
    # (analysis/regression.py, DDP607), attached by probe/driver.analyse: empty / None without them.
    verified: list[VerifyResult] = field(default_factory=list)
    regression_baseline: Optional[Baseline] = None
    # The watchdog's looks at the ranks in quiet spells (watch.jsonl, analysis/outside_steps.py).
    watch: list = field(default_factory=list)
    # What the analysis derives from the records and that several checks ask for (the lined-up
    # collectives: DDP501-503; the DataLoader epochs: DDP301-304; every rank's stack): name ->
    # (what it was derived from, the value), through `derived_once`. Not data of the run: never
    # stored or compared.
    derived: dict[str, tuple[Any, Any]] = field(default_factory=dict, repr=False, compare=False)

    @property
    def world_size(self) -> int:
        """The group's size as it formed; what was launched when no group formed."""
        formed = [init.world_size for run in self.ranks.values() for init in run.of(tm.Init)]
        return max(formed) if formed else self.meta.world_size

    @property
    def backend(self) -> str:
        """The backend the ranks' process groups formed with ("nccl", "cpu:gloo,cuda:nccl"), as
        they recorded it; the launch's default where no group formed (the launcher cannot know
        what the script asks init_process_group for)."""
        formed = sorted({init.backend.lower() for run in self.ranks.values() for init in run.of(tm.Init)
                         if init.backend})
        return ", ".join(formed) if formed else self.meta.backend

    def rank_ids(self) -> list[int]:
        return sorted(self.ranks)

    def records_key(self) -> tuple:
        """What the ranks' records are now (each rank's list and its length): a value derived
        from them is stale when this changes (a test replacing or extending a rank's records).
        The lists themselves, not their ids: held, an id cannot be reused by another list, and
        the same list compares equal at once."""
        return tuple((rank, run.records, len(run.records)) for rank, run in self.ranks.items())

    def launch_key(self) -> tuple:
        """records_key() and what the launch was asked (meta, as it is now: a copy, so a meta
        changed in place is seen): for a value derived from both (the bucket numbers read
        --cpu, the stack paths the script's name)."""
        return self.records_key(), repr(self.meta)

    def derived_once(self, name: str, key: Any, compute: Callable[[], T]) -> T:
        """compute()'s value, computed once per model for as long as `key` (what it is derived
        from) stays equal; shared by every caller, who must not change it."""
        held = self.derived.get(name)
        if held is not None and held[0] == key:
            return held[1]
        value = compute()
        self.derived[name] = (key, value)
        return value

    @classmethod
    def load(cls, run_dir: str | os.PathLike) -> "RunModel":
        with collector_paused():
            return cls._load(Path(run_dir))

    @classmethod
    def _load(cls, root: Path) -> "RunModel":
        meta = ProbeMeta(**_known(ProbeMeta, json.loads((root / META_FILE).read_text())))
        ranks = {}
        ahead = read_ahead.take(root)  # what node 0 read while it waited out the quiet spell
        for path in sorted(root.glob(RANK_TELEMETRY_GLOB)):
            try:
                rank = rank_of(path.name)
            except ValueError:
                continue
            dump = ""
            sfile = stack_file(root, rank)
            if sfile.exists():
                dump = sfile.read_text(errors="replace")
            ranks[rank] = RankRun(rank, tm.read_records(path, ahead.get(path.name)), dump)
            start = ranks[rank].first(tm.Start)
            if start is not None:
                note_own_dir(start.ddpdoctor_dir)  # the ddpdoctor this rank ran: never its user code
        main_file = root / MAIN_TELEMETRY
        main = RankRun(-1, tm.read_records(main_file)) if main_file.exists() else None
        outcome = None
        ofile = root / OUTCOME_FILE
        if ofile.exists():
            try:
                outcome = Outcome.from_dict(json.loads(ofile.read_text()))
            except (ValueError, TypeError):
                outcome = None
        return cls(str(root), meta, ranks, outcome, main)


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off while a run is loaded and judged. Records are built by the
    hundred thousand (1,024 ranks: 190,000) and none is garbage until the report is out: the
    collector, run every 700 allocations, walked them again and again (a third of the analysis's
    CPU at 1,024 ranks). Reference counting still frees what is dropped; cycles wait for the end.

    At the end, what was built meanwhile goes to the oldest generation as it is (freeze, then
    unfreeze: two list splices): left young, the collector's first pass after it would walk every
    record once (0.4 s at 1,024 ranks; at 4,096 the passes while the report was rendered were
    2.4 s), to find no garbage. A full collection still sees them (and any cycle among them).
    Not where the host froze objects of its own (a forking server, a test session): unfreeze
    would thaw those too, and every later full collection would walk them again."""
    global _host_freezes
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            _host_freezes = _host_freezes or gc.get_freeze_count() > 0
            if not _host_freezes:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


# Whether the host froze objects of its own, remembered once seen: gc.get_freeze_count() counts
# the frozen objects one by one (a test session's 700,000: ~5 ms a load).
_host_freezes = False


def _known(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
