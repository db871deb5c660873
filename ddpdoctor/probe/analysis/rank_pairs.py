"""Ranks linked by flagged pairs (a union-find): ranks 0-1 and 1-2 alike make one group 0, 1, 2,
named in one finding rather than three."""

from __future__ import annotations

from typing import Iterable, Protocol


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
