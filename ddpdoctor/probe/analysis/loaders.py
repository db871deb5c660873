"""Every DataLoader epoch of every rank, lined up: loader -> rank -> epoch -> what was seen.

An "epoch" here is one iterator (one `iter(loader)`); a *pass* is an iterator that went over the
loader: it reached its end (or the probe's --steps-per-epoch cut), or optimizer steps ran while
it was the loader's latest iterator. A peek (`next(iter(loader))` for a batch size, a shape) is an
iterator but not a pass: judging the order of passes (DDP302) skips it.

A rank numbers its DataLoaders (`loader_id`) in the order it first iterates them, which is not
the same on every rank when one rank iterates an extra loader first (rank 0 evaluating). So
loaders are matched across ranks by where they are iterated (the site of the `for` loop) and
their order among the loaders iterated there; by `loader_id` only when the site is unknown. A
DataLoader built anew every epoch continues the one before it (`_cross_rank_keys`): its
iterators are that loader's next epochs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.run_model.loaded_run import RunModel


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
    # id(an epoch) -> the indices of its batches so far: a batch recorded twice (a replayed
    # index) is kept once, by one look-up, not a scan of the epoch's batches (quadratic in them).
    indices: dict[int, set] = {}
    for rank, rank_run in sorted(run.ranks.items()):
        # The loaders' own records, in order, picked once: most of a rank's records are not
        # (at 1,024 ranks both passes below tested every record's type four times).
        records = [r for r in rank_run.records if isinstance(r, _LOADER_KINDS)]
        keys, offsets = _cross_rank_keys(records)

        def slot(loader_id: int, epoch: int) -> LoaderEpoch:
            epochs = by_key.setdefault(keys.get(loader_id, ("id", loader_id)), {}).setdefault(rank, {})
            number = offsets.get(loader_id, 0) + epoch
            if number not in epochs:
                epochs[number] = LoaderEpoch(rank, loader_id, number)
            return epochs[number]

        latest: dict[tuple, LoaderEpoch] = {}  # loader key -> its current iterator on this rank
        for record in records:
            if isinstance(record, tm.Loader):
                entry = slot(record.loader_id, record.epoch)
                entry.loader = entry.loader or record
                key = keys.get(record.loader_id, ("id", record.loader_id))
                previous = latest.get(key)
                if previous is not None and previous is not entry and previous.until_step is None:
                    previous.until_step = record.step
                latest[key] = entry
            elif isinstance(record, tm.Batch):
                entry = slot(record.loader_id, record.epoch)
                held = indices.setdefault(id(entry), set())
                if record.index not in held:
                    held.add(record.index)
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


_LOADER_KINDS = (tm.Loader, tm.Batch, tm.EpochEnd)


def _cross_rank_keys(records: list) -> tuple[dict[int, tuple], dict[int, int]]:
    """For one rank (its Loader, Batch and EpochEnd records, in order): loader_id -> (site file, site line, n-th loader iterated at that site), and
    loader_id -> the epoch its first iterator is under that key.

    A DataLoader built anew for every epoch (`for epoch ...: loader = DataLoader(...)`, or made
    inside a train_one_epoch function) is one loader to the checks: a loader iterated at the
    site of an earlier one of the same kind (dataset, its length, sampler, batch size), after
    that one's last use, continues it, and its iterators count on from the earlier one's."""
    first: dict[int, tm.Loader] = {}
    first_at: dict[int, int] = {}
    last_at: dict[int, int] = {}
    iterators: dict[int, int] = {}
    for index, record in enumerate(records):
        last_at[record.loader_id] = index
        if isinstance(record, tm.Loader):
            if record.loader_id not in first:
                first[record.loader_id], first_at[record.loader_id] = record, index
            iterators[record.loader_id] = max(iterators.get(record.loader_id, 0), record.epoch + 1)
    keys: dict[int, tuple] = {}
    offsets: dict[int, int] = {}
    seen: dict[tuple, int] = {}
    chains: dict[tuple, int] = {}  # (site, kind) -> the latest loader_id of that chain
    for loader_id in sorted(first, key=first_at.__getitem__):
        loader = first[loader_id]
        if loader.site is None:
            continue
        place = (loader.site.file, loader.site.line)
        chain = (place, _kind(loader))
        before = chains.get(chain)
        if before is not None and last_at[before] < first_at[loader_id]:
            keys[loader_id] = keys[before]
            offsets[loader_id] = offsets.get(before, 0) + iterators[before]
        else:
            keys[loader_id] = ("site", *place, seen.get(place, 0))
            seen[place] = seen.get(place, 0) + 1
        chains[chain] = loader_id
    return keys, offsets


def _kind(loader: tm.Loader) -> tuple:
    """What a DataLoader built anew each epoch keeps from one to the next."""
    return (loader.dataset, loader.dataset_len, loader.sampler, loader.batch_size, loader.iterable)


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


def custom_batch_sampler(run: RunModel, ranks: Optional[list[int]] = None) -> str:
    """The class name of a custom batch_sampler some rank's (or one of `ranks`') DataLoader
    was given, "" when none: it alone decides how many batches a rank gets, so the fix for
    uneven batches is in it, not in a DistributedSampler or drop_last."""
    for rank, rank_run in sorted(run.ranks.items()):
        if ranks is not None and rank not in ranks:
            continue
        for loader in rank_run.of(tm.Loader):
            if loader.batch_sampler:
                return loader.batch_sampler
    return ""


def batch_sampler_fix(name: str, short: list[int]) -> str:
    """DDP303's and DDP502's advice when a custom batch_sampler gave the ranks uneven batches."""
    who = f"rank {short[0]}" if len(short) == 1 else f"ranks {', '.join(map(str, short))}"
    return (f"the batch sampler {name} decides how many batches each rank gets, and {who} got "
            "fewer: make it yield the same number of batches on every rank (compute the count from "
            "the whole dataset and the world size, then pad with repeated indices or drop the "
            "remainder inside the sampler); a DistributedSampler or drop_last does not apply to a "
            "batch_sampler")
