"""DDP301's statistics: how many samples two ranks share by chance, and whether each rank iterates
the whole dataset. The check (checks/probe/sampler_overlap.py) words what this finds.

Datasets can hold duplicate samples of their own (tiny or synthetic data), so the comparison
calibrates on each rank's own data: p = duplicate pairs among a rank's samples of one epoch / all
pairs. Under correct sharding two ranks that saw s_a and s_b samples share about p * s_a * s_b
matches by chance. A pair is flagged only when the observed matches exceed that by at least
MIN_EXCESS (4), by SIGMAS (3) Poisson standard deviations (sqrt of the expected) and by REL_EXCESS
(half) of the expected. A DistributedSampler with drop_last=False pads each epoch with up to
world_size - 1 repeated samples: those matches are tolerated. The share of the epoch read by more
than one rank is estimated as excess * n / (s_a * s_b), n being a rank's epoch size
(len(loader) * batch_size, or len(dataset)), capped at 100%.

Independently of the fingerprints, a map-style DataLoader whose sampler is not a
DistributedSampler, with the same len(dataset) on every rank and len(loader) = len(dataset) /
batch_size, makes each rank iterate the whole dataset (WholeDataset). The check reports it even
when the batches seen did not collide yet, unless enough were seen to rule it out
(REFUTE_MIN_EXPECTED, 8, matches expected had the ranks read the same data), or the ranks'
dataset lengths differ, or len(loader) is what a 1/world_size shard gives (sharded by hand).
docs/verdicts.md explains the same for users.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Callable, Optional

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.analysis.loaders import LoaderEpoch, loader_records
from ddpdoctor.probe.analysis.rank_pairs import PairBlock, blocks_of

MIN_EXCESS = 4  # cross-rank matches beyond the expected, at the least, to report anything
SIGMAS = 3.0  # ... and at least this many Poisson standard deviations of the expected
REL_EXCESS = 0.5  # ... and at least this share of the expected
MAJORITY = 0.5  # share of compared batches that must be identical (or moved) to say so
REFUTE_MIN_EXPECTED = 8.0  # matches expected if two ranks read the whole dataset, to trust their absence

IDENTICAL, REORDERED, SAMPLES = "identical batches", "same batches reordered", "shared samples"


@dataclass
class PairStats:
    a: int
    b: int
    seen_a: int = 0
    seen_b: int = 0
    matches: int = 0  # pairs (sample of a, sample of b) with the same fingerprint, same epoch
    expected: float = 0.0  # the same, expected from the data's own duplicate rate
    padding: int = 0  # matches a DistributedSampler's padding can explain
    product: int = 0  # sum over epochs of s_a * s_b
    b_in_a: int = 0  # b's samples whose fingerprint a also saw (same epoch)
    batches_a: int = 0
    batches_b: int = 0
    common_batches: int = 0  # positions (epoch, index) both saw
    identical_batches: int = 0
    identical_steps: list[int] = field(default_factory=list)
    moved_batches: int = 0  # b's batches that a saw at another position of the same epoch
    epoch_size: Optional[int] = None
    expected_if_whole: Optional[float] = None  # matches expected if both read the whole dataset

    @property
    def excess(self) -> float:
        return self.matches - self.expected - self.padding

    @property
    def threshold(self) -> float:
        return max(MIN_EXCESS, SIGMAS * math.sqrt(self.expected), REL_EXCESS * self.expected)

    @property
    def flagged(self) -> bool:
        return self.excess >= self.threshold

    @property
    def share(self) -> Optional[float]:
        if not self.epoch_size or not self.product:
            return None
        return min(1.0, max(0.0, self.excess) * self.epoch_size / self.product)

    @property
    def kind(self) -> str:
        if self.identical_batches >= 2 and self.identical_batches >= MAJORITY * self.common_batches:
            return IDENTICAL
        same = self.identical_batches + self.moved_batches
        if same >= 2 and same >= MAJORITY * min(self.batches_a, self.batches_b):
            return REORDERED
        return SAMPLES

    def to_evidence(self) -> dict:
        return {
            "ranks": [self.a, self.b], "samples": [self.seen_a, self.seen_b],
            "matches": self.matches, "expected": round(self.expected, 2),
            "padding_tolerated": self.padding, "excess": round(self.excess, 2),
            "identical_batches": self.identical_batches, "common_batches": self.common_batches,
            "moved_batches": self.moved_batches,
            "shared_share": None if self.share is None else round(self.share, 3),
        }


def duplicate_rate(by_rank: dict[int, dict[int, LoaderEpoch]]) -> float:
    """Duplicate pairs among a rank's own samples of one epoch / all such pairs, pooled."""
    duplicates = pairs = 0
    for epochs in by_rank.values():
        for entry in epochs.values():
            units = entry.samples()
            counts = Counter(units)
            duplicates += sum(k * (k - 1) // 2 for k in counts.values())
            pairs += len(units) * (len(units) - 1) // 2
    return duplicates / pairs if pairs else 0.0


def _duplicate_rate(held: dict[tuple[int, int], "_Held"], classes: list[list[int]]) -> float:
    """duplicate_rate from the samples already counted, once per class of ranks alike."""
    size = {ranks[0]: len(ranks) for ranks in classes}
    duplicates = pairs = 0
    for (rank, _epoch), entry in held.items():
        n = len(entry.units)
        if n != len(entry.counts):  # some sample twice: else no duplicate pair to count
            duplicates += size[rank] * sum(k * (k - 1) // 2 for k in entry.counts.values())
        pairs += size[rank] * (n * (n - 1) // 2)
    return duplicates / pairs if pairs else 0.0


def _padding(entry: LoaderEpoch, world: int) -> int:
    loader = entry.loader
    if loader is None or not loader.distributed_sampler or loader.drop_last:
        return 0
    if loader.dataset_len:
        return (-loader.dataset_len) % world
    return world - 1


def epoch_size(by_rank: dict[int, dict[int, LoaderEpoch]]) -> Optional[int]:
    """Samples one rank gets per epoch: len(loader) * batch_size (at most len(dataset))."""
    for loader in loader_records(by_rank):
        if loader.batches and loader.batch_size:
            size = loader.batches * loader.batch_size
            return min(size, loader.dataset_len) if loader.dataset_len else size
        if loader.dataset_len:
            return loader.dataset_len
    return None


class _Held:
    """One rank's epoch of one loader, indexed once for comparing with every other rank."""

    def __init__(self, entry: LoaderEpoch) -> None:
        self.units = entry.samples()
        self.counts = Counter(self.units)
        self.entry = entry
        self.at = {batch.index: batch for batch in entry.batches}
        self.indices = set(self.at)
        self.unique_indices = len(self.indices) == len(entry.batches)  # then places = a set's size
        self.prints = {batch.fingerprint for batch in entry.batches}
        self._padding: Optional[int] = None

    def padding(self, world: int) -> int:
        if self._padding is None:
            self._padding = _padding(self.entry, world)
        return self._padding


def alike(by_rank: dict[int, dict[Any, Any]], content: Callable[[Any], Any]) -> list[list[int]]:
    """The ranks in groups whose records are alike in everything a pair statistic reads
    (content(a rank's entry) equal), each group sorted, the groups by their first rank."""
    groups: dict[Any, list[int]] = {}
    for rank in sorted(by_rank):
        groups.setdefault(content(by_rank[rank]), []).append(rank)
    return list(groups.values())


def _content(epochs: dict[int, LoaderEpoch]) -> tuple:
    """What _pair reads of one rank's epochs: its samples, batches (place, fingerprint, step) and
    what decides its sampler's padding."""
    out = []
    for epoch in sorted(epochs):
        entry = epochs[epoch]
        loader = entry.loader
        out.append((epoch, None if loader is None else (loader.distributed_sampler, loader.drop_last,
                                                        loader.dataset_len),
                    tuple((b.index, b.fingerprint, b.step, tuple(b.samples) if b.samples else None)
                          for b in entry.batches)))
    return tuple(out)


def _sharing(held: dict[tuple[int, int], _Held], classes: list[list[int]]) -> dict[tuple[int, int], set[int]]:
    """(i, j) -> the epochs in which the ranks of classes[i] and classes[j] (i <= j; i == j: two
    ranks of one class) hold a common sample fingerprint, from one count of the samples of each
    class rather than one comparison per pair. Only the samples held by two classes or more
    (none, when every rank has its own shard) are indexed by class."""
    index = {ranks[0]: i for i, ranks in enumerate(classes)}
    by_epoch: dict[int, list[tuple[int, Counter]]] = {}
    for (rank, epoch), entry in held.items():
        by_epoch.setdefault(epoch, []).append((index[rank], entry.counts))
    shares: dict[tuple[int, int], set[int]] = {}
    for epoch, entries in by_epoch.items():
        seen: set = set()
        held_keys = 0
        for i, counts in entries:
            if counts and len(classes[i]) > 1:  # two ranks of one class hold the same samples
                shares.setdefault((i, i), set()).add(epoch)
            seen.update(counts)  # one merge of hashed keys (a set's: no value to store)
            held_keys += len(counts)
        if len(seen) == held_keys:
            continue  # no sample held by two classes (every rank its own shard)
        tally: Counter = Counter()
        for i, counts in entries:  # a class holds an epoch once: a count above 1 is 2+ classes
            tally.update(counts.keys())
        common = {key for key, n in tally.items() if n > 1}
        if not common:
            continue
        holders: dict[str, set[int]] = {}
        for i, counts in entries:
            for key in common.intersection(counts):
                holders.setdefault(key, set()).add(i)
        for found in holders.values():
            for i, j in combinations(sorted(found), 2):
                shares.setdefault((i, j), set()).add(epoch)
    return shares


@dataclass
class PairSummary:
    """Every pair of ranks of one loader, as the check reads them. Only a pair that shares a
    sample fingerprint in some epoch can have matches, hence be flagged: those pairs get full
    statistics (`shared`), in blocks of pairs alike (rank_pairs.PairBlock: 1,024 ranks reading
    the same batches are one block, not half a million pairs). The others, half a million pairs
    at 1,024 ranks with their own shards, are read only through what the check asks of all
    pairs, aggregated without one object per pair."""

    shared: list[PairBlock[PairStats]]  # pairs with a sample in common in some epoch
    compared: bool  # some pair saw samples in a common epoch (a PairStats with product > 0)
    most_seen: int  # max over pairs of min(seen_a, seen_b): samples per rank compared
    most_expected_if_whole: Optional[float]  # max over pairs of PairStats.expected_if_whole

    @property
    def flagged(self) -> list[PairBlock[PairStats]]:
        return [block for block in self.shared if block.stats.flagged]

    @property
    def refuted(self) -> bool:
        """Enough samples were compared to rule out that the ranks read the same data."""
        return self.most_expected_if_whole is not None and self.most_expected_if_whole >= REFUTE_MIN_EXPECTED


def pair_summary(by_rank: dict[int, dict[int, LoaderEpoch]], world: int) -> PairSummary:
    """The pairs of ranks of one loader (see PairSummary), in work that grows with the records
    and the pairs of distinct ranks that share samples, not with the square of the world."""
    size = epoch_size(by_rank)
    dataset_len = next((l.dataset_len for l in loader_records(by_rank) if l.dataset_len), None)
    classes = alike(by_rank, _content)
    held = {(ranks[0], epoch): _Held(entry) for ranks in classes for epoch, entry in by_rank[ranks[0]].items()}
    rate = _duplicate_rate(held, classes)
    shares = _sharing(held, classes)
    index = {ranks[0]: i for i, ranks in enumerate(classes)}
    class_of = {rank: index[ranks[0]] for ranks in classes for rank in ranks}

    def compute(a: int, b: int) -> PairStats:
        i, j = class_of[a], class_of[b]
        ra, rb = classes[i][0], classes[j][0]
        pair = _pair(ra, rb, by_rank, held, shares.get((min(i, j), max(i, j)), set()), world, size)
        pair.a, pair.b = a, b
        pair.expected = rate * pair.product
        if dataset_len:
            pair.expected_if_whole = pair.product / dataset_len * (1.0 - rate)
        return pair

    shared = blocks_of(classes, compute, shares)
    compared, most_seen, product = _all_pairs(by_rank, held, classes)
    # expected_if_whole grows with the product (floating point too): the largest is the product's
    most = product / dataset_len * (1.0 - rate) if dataset_len and compared else None
    return PairSummary(shared, compared, most_seen, most)


def _pair(a: int, b: int, by_rank: dict[int, dict[int, LoaderEpoch]], held: dict[tuple[int, int], _Held],
          shared_epochs: set[int], world: int, size: Optional[int]) -> PairStats:
    """The statistics of ranks a and b (each its class's first rank: held by it)."""
    pair = PairStats(a, b, epoch_size=size)
    for epoch in sorted(set(by_rank[a]) & set(by_rank[b])):
        eb = by_rank[b][epoch]
        ha, hb = held[(a, epoch)], held[(b, epoch)]
        units_a, units_b = ha.units, hb.units
        if not units_a or not units_b:
            continue
        counts_a, counts_b = ha.counts, hb.counts
        pair.seen_a += len(units_a)
        pair.seen_b += len(units_b)
        pair.product += len(units_a) * len(units_b)
        if epoch in shared_epochs:
            pair.matches += sum(k * counts_b[f] for f, k in counts_a.items() if f in counts_b)
            pair.b_in_a += sum(1 for f in units_b if f in counts_a)
        pair.padding += max(ha.padding(world), hb.padding(world))
        at_a, prints_a = ha.at, ha.prints
        pair.batches_a += len(ha.entry.batches)
        pair.batches_b += len(eb.batches)
        if ha.prints.isdisjoint(hb.prints):  # no batch of b is one of a's: only count places
            pair.common_batches += (len(ha.indices & hb.indices) if hb.unique_indices
                                    else sum(1 for batch in eb.batches if batch.index in at_a))
            continue
        for batch in eb.batches:
            other = at_a.get(batch.index)
            if other is not None:
                pair.common_batches += 1
                if other.fingerprint == batch.fingerprint:
                    pair.identical_batches += 1
                    pair.identical_steps.append(other.step)
                    continue
            if batch.fingerprint in prints_a:
                pair.moved_batches += 1
    return pair


def _all_pairs(by_rank: dict[int, dict[int, LoaderEpoch]], held: dict[tuple[int, int], _Held],
               classes: list[list[int]]) -> tuple[bool, int, int]:
    """(some pair compared samples, max of min(seen_a, seen_b), max product) over every pair of
    ranks. A pair's numbers depend only on the two ranks' samples per epoch, and ranks of one
    run mostly have the same: each distinct profile is paired once, with itself when two ranks
    share it. (held: each class's first rank's epochs; the others' are alike.)"""
    profiles: Counter = Counter()
    for ranks in classes:
        rank = ranks[0]
        profiles[tuple(sorted((epoch, len(held[(rank, epoch)].units)) for epoch in by_rank[rank]
                              if held[(rank, epoch)].units))] += len(ranks)
    kinds = [(dict(profile), n) for profile, n in profiles.items()]
    compared, most_seen, most_product = False, 0, 0
    for i, (pa, na) in enumerate(kinds):
        for j in range(i, len(kinds)):
            pb, _nb = kinds[j]
            if j == i and na < 2:
                continue
            seen_a = seen_b = product = 0
            for epoch, sa in pa.items():
                sb = pb.get(epoch)
                if sb:
                    seen_a += sa
                    seen_b += sb
                    product += sa * sb
            if product:
                compared = True
                most_seen = max(most_seen, min(seen_a, seen_b))
                most_product = max(most_product, product)
    return compared, most_seen, most_product


@dataclass
class WholeDataset:
    """The static fact: every rank iterates the whole dataset."""

    ranks: list[int]
    sampler: str
    dataset_len: int
    batches: int
    batch_size: int


def whole_dataset_per_rank(by_rank: dict[int, dict[int, LoaderEpoch]],
                           world: int) -> Optional[WholeDataset]:
    first: dict[int, tm.Loader] = {}
    for rank, epochs in by_rank.items():
        loader = next((epochs[e].loader for e in sorted(epochs) if epochs[e].loader), None)
        if loader is not None:
            first[rank] = loader
    if len(first) < 2:
        return None
    loaders = list(first.values())
    if any(l.iterable or l.distributed_sampler for l in loaders):
        return None
    lengths = {l.dataset_len for l in loaders}
    sizes = {l.batch_size for l in loaders}
    if len(lengths) != 1 or None in lengths or len(sizes) != 1 or None in sizes:
        return None  # lengths differ across ranks: sharded by hand
    n, size = lengths.pop(), sizes.pop()
    if not n or not size:
        return None
    whole = {n // size, -(-n // size)}
    share = -(-n // world)
    shard = {n // world // size, -(-n // world // size), -(-share // size), share // size}
    batches = {l.batches for l in loaders}
    if None in batches or not batches <= whole or batches & shard:
        return None
    return WholeDataset(sorted(first), loaders[0].sampler, n, max(batches), size)


def identical_positions(by_rank: dict[int, dict[int, LoaderEpoch]],
                         ranks: list[int]) -> tuple[int, int, list[int]]:
    """(positions where all `ranks` got the same batch, positions all of them saw, steps)."""
    common = identical = 0
    steps: list[int] = []
    epochs = set.intersection(*(set(by_rank[r]) for r in ranks))
    for epoch in sorted(epochs):
        at = [{b.index: b for b in by_rank[r][epoch].batches} for r in ranks]
        for index in sorted(set.intersection(*(set(m) for m in at))):
            common += 1
            prints = {m[index].fingerprint for m in at}
            if len(prints) == 1:
                identical += 1
                steps.append(at[0][index].step)
    return identical, common, steps
