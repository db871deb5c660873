"""How probe checks say things: rank lists, step ranges, call sites, counted nouns.

Every probe finding names ranks, steps and places the same way, so a user reading several
findings of one run can line them up.
"""

from __future__ import annotations

import re
from typing import Iterable, Optional, Union

from ddpdoctor.core.findings import Location
from ddpdoctor.probe.records.telemetry import Site


def ranges(numbers: Iterable[int]) -> str:
    """[0, 1, 2, 5, 7, 8] -> "0-2, 5, 7-8"."""
    values = sorted(set(numbers))
    parts: list[str] = []
    start = prev = None
    for value in values:
        if start is None:
            start = prev = value
        elif value == prev + 1:
            prev = value
        else:
            parts.append(f"{start}-{prev}" if prev != start else f"{start}")
            start = prev = value
    if start is not None:
        parts.append(f"{start}-{prev}" if prev != start else f"{start}")
    return ", ".join(parts)


def rank_list(ranks: Iterable[int]) -> str:
    """[1] -> "rank 1"; [0, 1] -> "ranks 0 and 1"; [0, 2, 3] -> "ranks 0, 2 and 3";
    long contiguous runs are folded: [0..7] -> "ranks 0-7"."""
    values = sorted(set(ranks))
    if not values:
        return "no rank"
    if len(values) == 1:
        return f"rank {values[0]}"
    folded = ranges(values)
    if len(values) > 4 and len(folded.split(", ")) < len(values) - 1:
        return f"ranks {folded}"
    return "ranks " + ", ".join(str(v) for v in values[:-1]) + f" and {values[-1]}"


def steps_text(steps: Iterable[int]) -> str:
    """[0..19] -> "steps 0-19"; [4] -> "step 4"."""
    values = sorted(set(steps))
    if len(values) == 1:
        return f"step {values[0]}"
    return f"steps {ranges(values)}"


def counted(count: int, noun: str, plural: Optional[str] = None) -> str:
    """counted(1, "batch", "batches") -> "1 batch"; counted(3, "sample") -> "3 samples"."""
    if count == 1:
        return f"1 {noun}"
    return f"{count} {plural or noun + 's'}"


def verb(ranks: Iterable[int], singular: str, plural: str) -> str:
    """The verb form agreeing with rank_list(ranks): "rank 1 waits", "ranks 0 and 2 wait"."""
    return singular if len(set(ranks)) == 1 else plural


def name_list(names: Iterable[str], cap: int = 5) -> str:
    """At most `cap` names, then "and N more" (the full list belongs in the evidence)."""
    values = list(names)
    if len(values) <= cap:
        return ", ".join(values)
    return ", ".join(values[:cap]) + f" and {len(values) - cap} more"


def natural_sorted(names: Iterable[str]) -> list[str]:
    """Names in the order a person expects: layer2 before layer10."""
    return sorted(names, key=lambda n: [(0, int(p), "") if p.isdigit() else (1, 0, p)
                                        for p in re.split(r"(\d+)", n)])


def location(site: Union[Site, Location, None]) -> Optional[Location]:
    """The finding location for a call site (None when the site is unknown)."""
    if site is None or not site.file:
        return None
    if isinstance(site, Location):
        return site
    return Location(site.file, site.line or None, called_from(site))


def called_from(site: Optional[Site]) -> tuple:
    """A site's outer user frames as Location.called_from: ((file, line, callee), ...)."""
    callers = (site.callers if isinstance(site, Site) else None) or ()
    return tuple((c[0], c[1], c[3] if len(c) > 3 and c[3] else (c[2] if len(c) > 2 else ""))
                 for c in callers if isinstance(c, (list, tuple)) and len(c) >= 2)


def at(site: Union[Site, Location, None]) -> str:
    """" at train.py:57" or "" when the site is unknown: appended to a description."""
    if site is None or not site.file:
        return ""
    return f" at {site}"


def seconds(value: Optional[float]) -> str:
    return "?" if value is None else f"{value:.1f} s"
