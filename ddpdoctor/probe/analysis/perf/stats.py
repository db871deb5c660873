"""The robust statistics every performance number uses: medians, quantiles, spreads."""

from __future__ import annotations

import statistics


def median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def quantile(values: list[float], q: float) -> float:
    """The q-quantile (nearest rank) of values; 0.0 for none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def spread(values: list[float]) -> float:
    """A robust standard deviation: the interquartile range / 1.349 (one slow step, a garbage
    collection, another job's burst, moves it little; every other step slow counts in full)."""
    if len(values) < 4:
        return 0.0
    return (quantile(values, 0.75) - quantile(values, 0.25)) / 1.349
