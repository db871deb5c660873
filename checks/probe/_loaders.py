"""Every DataLoader epoch of every rank, lined up: loader -> rank -> epoch -> what was seen.

DataLoaders are identified across ranks by creation order (`loader_id`), which is the same on
every rank of the same script.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ddpdoctor.probe import telemetry as tm
from ddpdoctor.probe.runmodel import RunModel


@dataclass
class LoaderEpoch:
    """One epoch of one DataLoader on one rank."""

    rank: int
    loader_id: int
    epoch: int
    loader: Optional[tm.Loader] = None  # None: the Loader record was lost
    batches: list[tm.Batch] = field(default_factory=list)  # by index, one per index
    end: Optional[tm.EpochEnd] = None

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
    views: LoaderViews = {}

    def slot(rank: int, loader_id: int, epoch: int) -> LoaderEpoch:
        epochs = views.setdefault(loader_id, {}).setdefault(rank, {})
        if epoch not in epochs:
            epochs[epoch] = LoaderEpoch(rank, loader_id, epoch)
        return epochs[epoch]

    for rank, rank_run in sorted(run.ranks.items()):
        for record in rank_run.records:
            if isinstance(record, tm.Loader):
                entry = slot(rank, record.loader_id, record.epoch)
                entry.loader = entry.loader or record
            elif isinstance(record, tm.Batch):
                entry = slot(rank, record.loader_id, record.epoch)
                if all(b.index != record.index for b in entry.batches):
                    entry.batches.append(record)
            elif isinstance(record, tm.EpochEnd):
                slot(rank, record.loader_id, record.epoch).end = record
    for by_rank in views.values():
        for epochs in by_rank.values():
            for entry in epochs.values():
                entry.batches.sort(key=lambda b: b.index)
    return views


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
