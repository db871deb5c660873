"""Ranks linked by flagged pairs (a union-find): ranks 0-1 and 1-2 alike make one group 0, 1, 2,
named in one finding rather than three.

Pairs come in blocks (PairBlock): ranks whose records are alike in everything a pair statistic
reads have the same statistics with every other rank, so the pairs between two such groups of
ranks (or within one) are computed once and named only where a finding names them. A world of
1,024 ranks that all read the same batches is half a million pairs, and one block.
"""

from __future__ import annotations

import copy
import heapq
from bisect import bisect_right
from dataclasses import dataclass
from itertools import islice
from typing import Any, Callable, Generic, Iterable, Iterator, NamedTuple, Optional, Protocol, TypeVar


class RankPair(Protocol):
    a: int
    b: int


def linked_groups(flagged: Iterable[RankPair]) -> list[list[int]]:
    """Ranks linked by flagged pairs, as sorted groups."""
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for pair in flagged:
        parent[find(pair.a)] = find(pair.b)
    groups: dict[int, list[int]] = {}
    for rank in sorted(parent):
        groups.setdefault(find(rank), []).append(rank)
    return sorted(groups.values())


S = TypeVar("S")  # a pair's statistics: a dataclass with fields a and b


class _Edge(NamedTuple):
    a: int
    b: int


@dataclass
class PairBlock(Generic[S]):
    """The pairs (a, b), a < b, of every a in `first` with every b in `second` (within: the pairs
    of two ranks of `first`, one group of ranks alike), all with the same statistics but for the
    ranks they name. `stats` is computed once, for two representatives."""

    first: list[int]  # sorted
    second: list[int]  # sorted; the same list when within
    stats: S
    within: bool = False

    def pairs(self) -> Iterator[tuple[int, int]]:
        """Every pair of the block, in (a, b) order."""
        if self.within:
            for i, a in enumerate(self.first):
                for b in self.first[i + 1:]:
                    yield a, b
            return
        for a in self.first:
            for b in self.second[bisect_right(self.second, a):]:
                yield a, b

    def count(self) -> int:
        if self.within:
            return len(self.first) * (len(self.first) - 1) // 2
        return sum(len(self.second) - bisect_right(self.second, a) for a in self.first)

    def first_pair(self) -> Optional[tuple[int, int]]:
        return next(self.pairs(), None)

    def edges(self) -> Iterator[_Edge]:
        """Pairs of the block that link the same ranks as all of them together (a spanning
        set: every a is paired with the largest b, every b with the smallest a)."""
        if not self.first or not self.second:
            return
        low, high = self.first[0], self.second[-1]
        for a in self.first:
            if a < high:
                yield _Edge(a, high)
        for b in self.second:
            if b > low:
                yield _Edge(low, b)

    def named(self, a: int, b: int) -> S:
        """The statistics of the pair (a, b) of this block: a copy named for it."""
        stats = copy.deepcopy(self.stats)
        stats.a, stats.b = a, b  # type: ignore[attr-defined]
        return stats


def blocks_of(classes: list[list[int]], compute: Callable[[int, int], Optional[S]],
              linked: Iterable[tuple[int, int]]) -> list[PairBlock[S]]:
    """The blocks of the pairs between the groups of ranks alike `classes` (each sorted) given by
    `linked` ((i, j) indices into classes, i <= j; i == j: the pairs within a group). compute(a,
    b) gives the statistics of a pair of representatives (None: the block is left out). Both
    orders of two groups are blocks of their own: a pair's statistics read its ranks in order."""
    blocks: list[PairBlock[S]] = []
    for i, j in sorted(set(linked)):
        one = classes[i]
        if i == j:
            if len(one) >= 2:
                stats = compute(one[0], one[1])
                if stats is not None:
                    blocks.append(PairBlock(one, one, stats, within=True))
            continue
        other = classes[j]
        for first, second in ((one, other), (other, one)):
            if first[0] < second[-1]:  # some a of first below some b of second
                stats = compute(first[0], second[0])
                if stats is not None:
                    blocks.append(PairBlock(first, second, stats))
    return blocks


def linked_block_groups(blocks: Iterable[PairBlock[Any]]) -> list[list[int]]:
    """linked_groups of every pair of the blocks, from their spanning pairs."""
    return linked_groups(edge for block in blocks for edge in block.edges())


def blocks_inside(blocks: Iterable[PairBlock[S]], ranks: list[int]) -> list[PairBlock[S]]:
    """The blocks whose pairs lie among `ranks`, a group of linked_block_groups (a block's
    ranks are all linked, so one of its pairs tells)."""
    members = set(ranks)
    found = []
    for block in blocks:
        pair = block.first_pair()
        if pair is not None and pair[0] in members and pair[1] in members:
            found.append(block)
    return found


def best_pair(blocks: list[PairBlock[S]], key: Callable[[S], Any]) -> S:
    """max(every pair, key=key) with every pair listed in (a, b) order: the first best pair."""
    top = max(key(block.stats) for block in blocks)
    winner = min((block for block in blocks if key(block.stats) == top),
                 key=lambda block: block.first_pair())
    return winner.named(*winner.first_pair())


def ordered_pairs(blocks: list[PairBlock[S]], limit: int,
                  order: Callable[[S], Any] = lambda stats: 0) -> list[S]:
    """sorted(every pair, key=order)[:limit] with every pair listed in (a, b) order: ties keep
    (a, b) order, as a stable sort does."""
    out: list[S] = []
    for value in sorted({order(block.stats) for block in blocks}):
        group = [block for block in blocks if order(block.stats) == value]
        merged = heapq.merge(*(_tagged(block, n) for n, block in enumerate(group)))
        for a, b, n in islice(merged, limit - len(out)):
            out.append(group[n].named(a, b))
        if len(out) >= limit:
            break
    return out


def _tagged(block: PairBlock[Any], n: int) -> Iterator[tuple[int, int, int]]:
    for a, b in block.pairs():
        yield a, b, n


def every_pair(blocks: Iterable[PairBlock[S]]) -> list[S]:
    """Every pair of the blocks, named, in (a, b) order: one object per pair (tests, small worlds)."""
    found = [(pair, block) for block in blocks for pair in block.pairs()]
    return [block.named(*pair) for pair, block in sorted(found, key=lambda item: item[0])]


def pair_count(blocks: Iterable[PairBlock[Any]]) -> int:
    return sum(block.count() for block in blocks)
