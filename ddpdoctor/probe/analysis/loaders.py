"""Every DataLoader epoch of every rank, lined up: loader -> rank -> epoch -> what was seen.

An "epoch" here is one iterator (one `iter(loader)`); a *pass* is an iterator that went over the
loader: it reached its end (or the probe's --steps-per-epoch cut), or optimizer steps ran while
it was the loader's latest iterator. A peek (`next(iter(loader))` for a batch size, a shape) is an
iterator but not a pass: judging the order of passes (DDP302) skips it.

A rank numbers its DataLoaders (`loader_id`) in the order it first iterates them, which is not
the same on every rank when one rank iterates an extra loader first (rank 0 evaluating). So
loaders are matched across ranks by where they are iterated (the site of the `for` loop) and
their order among the loaders iterated there; by `loader_id` only when the site is unknown.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ddpdoctor.probe import telemetry as tm
from ddpdoctor.probe.analysis.runmodel import RunModel


@dataclass
class LoaderEpoch:
    """One epoch of one DataLoader on one rank."""

    rank: int
    loader_id: int
    epoch: int
    loader: Optional[tm.Loader] = None  # None: the Loader record was lost
    batches: list[tm.Batch] = field(default_factory=list)  # by index, one per index
    end: Optional[tm.EpochEnd] = None
    # The rank's step count when its next iterator of this loader began (or when the rank's
    # records end): steps ran during this iterator's turn when it is above loader.step.
    until_step: Optional[int] = None

    @property
    def full_pass(self) -> bool:
        """The iterator went over the loader (see the module's docstring), not a peek."""
        if self.end is not None:
            return True
        start = self.loader.step if self.loader is not None else (self.batches[0].step if self.batches else None)
        return start is not None and self.until_step is not None and self.until_step > start

    def samples(self) -> list[str]:
        """Per-sample fingerprints of everything seen, in order. Batches recorded without
        per-sample fingerprints count as one unit each (their batch fingerprint)."""
        units: list[str] = []
        for batch in self.batches:
            units.extend(batch.samples if batch.samples else [batch.fingerprint])
        return units


# loader_id -> rank -> epoch -> LoaderEpoch
LoaderViews = dict[int, dict[int, dict[int, LoaderEpoch]]]


def loader_epochs(run: RunModel) -> LoaderViews:
    """Keyed by a loader number shared across ranks: the smallest `loader_id` any rank gave it.
    Built once per model (DDP301, DDP302, DDP303 and DDP304 each ask): read, never changed."""
    return run.derived_once("loader_epochs", run.records_key(), lambda: _loader_epochs(run))


def _loader_epochs(run: RunModel) -> LoaderViews:
    by_key: dict[tuple, dict[int, dict[int, LoaderEpoch]]] = {}
    for rank, rank_run in sorted(run.ranks.items()):
        keys = _cross_rank_keys(rank_run.records)

        def slot(loader_id: int, epoch: int) -> LoaderEpoch:
            epochs = by_key.setdefault(keys.get(loader_id, ("id", loader_id)), {}).setdefault(rank, {})
            if epoch not in epochs:
                epochs[epoch] = LoaderEpoch(rank, loader_id, epoch)
            return epochs[epoch]

        latest: dict[int, LoaderEpoch] = {}  # loader_id -> its current iterator on this rank
        for record in rank_run.records:
            if isinstance(record, tm.Loader):
                entry = slot(record.loader_id, record.epoch)
                entry.loader = entry.loader or record
                previous = latest.get(record.loader_id)
                if previous is not None and previous is not entry and previous.until_step is None:
                    previous.until_step = record.step
                latest[record.loader_id] = entry
            elif isinstance(record, tm.Batch):
                entry = slot(record.loader_id, record.epoch)
                if all(b.index != record.index for b in entry.batches):
                    entry.batches.append(record)
            elif isinstance(record, tm.EpochEnd):
                slot(record.loader_id, record.epoch).end = record
        for entry in latest.values():
            if entry.until_step is None:
                entry.until_step = rank_run.steps
    def smallest_id(by_rank: dict[int, dict[int, LoaderEpoch]]) -> int:
        return min(e.loader_id for epochs in by_rank.values() for e in epochs.values())

    views: LoaderViews = {}
    for by_rank in sorted(by_key.values(), key=smallest_id):
        for epochs in by_rank.values():
            for entry in epochs.values():
                entry.batches.sort(key=lambda b: b.index)
        number = smallest_id(by_rank)
        while number in views:  # two loaders some ranks numbered alike: keep both
            number += 1
        views[number] = by_rank
    return views


def _cross_rank_keys(records: list) -> dict[int, tuple]:
    """loader_id -> (site file, site line, n-th loader iterated at that site) for one rank."""
    sites: dict[int, Optional[tm.Site]] = {}
    for record in records:
        if isinstance(record, tm.Loader) and record.loader_id not in sites:
            sites[record.loader_id] = record.site
    keys: dict[int, tuple] = {}
    seen: dict[tuple, int] = {}
    for loader_id in sorted(sites):
        site = sites[loader_id]
        if site is None:
            continue
        place = (site.file, site.line)
        keys[loader_id] = ("site", *place, seen.get(place, 0))
        seen[place] = seen.get(place, 0) + 1
    return keys


def full_passes(epochs: dict[int, LoaderEpoch]) -> list[LoaderEpoch]:
    """One rank's iterators of one loader that went over it, in order (peeks left out)."""
    return [epochs[e] for e in sorted(epochs) if epochs[e].full_pass]


def loader_records(by_rank: dict[int, dict[int, LoaderEpoch]]) -> list[tm.Loader]:
    return [e.loader for epochs in by_rank.values() for e in epochs.values() if e.loader]


def loader_site(by_rank: dict[int, dict[int, LoaderEpoch]]) -> Optional[tm.Site]:
    return next((loader.site for loader in loader_records(by_rank) if loader.site), None)


def loader_name(loader_id: int, by_rank: dict[int, dict[int, LoaderEpoch]]) -> str:
    """"the DataLoader at train.py:40" or "DataLoader #1" when its site is unknown."""
    where = loader_site(by_rank)
    return f"the DataLoader at {where}" if where else f"DataLoader #{loader_id}"


def shuffles(loader: tm.Loader) -> bool:
    """The sampler draws a new order each epoch (or is meant to)."""
    return loader.shuffle is True or (loader.shuffle is None and loader.sampler == "RandomSampler")
