"""DDP301's pair statistics as they were before they scaled (every pair of ranks compared), kept
as the reference that tests/unit/test_ddp301_scale.py holds the sub-quadratic code to: the same
flagged pairs, the same numbers, the same aggregates over all pairs."""

from __future__ import annotations

from collections import Counter
from itertools import combinations
from typing import Optional

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.analysis.forward_overlap import InputPair
from ddpdoctor.probe.analysis.loaders import LoaderEpoch, loader_records
from ddpdoctor.probe.analysis.sample_overlap import PairStats, _padding, duplicate_rate, epoch_size


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


def _sharing(held: dict[tuple[int, int], _Held], what: str) -> set[tuple[int, int, int]]:
    """(a, b, epoch) for every pair of ranks a < b holding a common key (sample or batch
    fingerprint) in that epoch, from one pass over the keys rather than one per pair."""
    holders: dict[tuple[int, str], set[int]] = {}
    for (rank, epoch), entry in held.items():
        for key in getattr(entry, what):
            holders.setdefault((epoch, key), set()).add(rank)
    pairs = set()
    for (epoch, _key), ranks in holders.items():
        if len(ranks) > 1:
            pairs.update((a, b, epoch) for a, b in combinations(sorted(ranks), 2))
    return pairs


def pair_stats(by_rank: dict[int, dict[int, LoaderEpoch]], world: int) -> list[PairStats]:
    rate = duplicate_rate(by_rank)
    size = epoch_size(by_rank)
    dataset_len = next((l.dataset_len for l in loader_records(by_rank) if l.dataset_len), None)
    stats = []
    # What each rank's epoch holds, built once per rank rather than once per pair: the pairs
    # grow with the square of the world (1,024 ranks: half a million).
    held = {(rank, epoch): _Held(entry) for rank, epochs in by_rank.items() for epoch, entry in epochs.items()}
    share_units = _sharing(held, "counts")
    share_prints = _sharing(held, "prints")
    for a, b in combinations(sorted(by_rank), 2):
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
            if (a, b, epoch) in share_units:
                pair.matches += sum(k * counts_b[f] for f, k in counts_a.items() if f in counts_b)
                pair.b_in_a += sum(1 for f in units_b if f in counts_a)
            pair.padding += max(ha.padding(world), hb.padding(world))
            at_a, prints_a = ha.at, ha.prints
            pair.batches_a += len(ha.entry.batches)
            pair.batches_b += len(eb.batches)
            if (a, b, epoch) not in share_prints:  # no batch of b is one of a's: only count places
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
        if not pair.product:
            continue
        pair.expected = rate * pair.product
        if dataset_len:
            pair.expected_if_whole = pair.product / dataset_len * (1.0 - rate)
        stats.append(pair)
    return stats



def input_pairs(by_rank: dict[int, dict[int, tm.ForwardInputs]], varying: list[str]) -> list[InputPair]:
    signature = {rank: {i: tuple(r.tensors[k] for k in varying) for i, r in records.items()}
                 for rank, records in by_rank.items()}
    pairs = []
    for a, b in combinations(sorted(by_rank), 2):
        pair = InputPair(a, b)
        seen_a = set(signature[a].values())
        for iteration in sorted(set(signature[a]) & set(signature[b])):
            pair.compared += 1
            if signature[a][iteration] == signature[b][iteration]:
                pair.identical += 1
                pair.steps.append(by_rank[a][iteration].step)
            elif signature[b][iteration] in seen_a:
                pair.moved += 1
        pairs.append(pair)
    return pairs
