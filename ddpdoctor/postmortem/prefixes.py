"""Whose line is it, and when: the rank prefixes launchers put before a rank's output, and the
timestamps log lines carry.

Rank prefixes: torchrun's `[rank3]:` (its default since 2.2; `[default3]:` is `--tee`'s older
`[{role}{local_rank}]:` form, a local rank), srun `-l`'s `3: `, and `[Rank 3]` inside PyTorch's own
C++ messages. Timestamps: the C++ logger's `[E1218 20:27:21.426415540 File.cpp:629]` (no year),
ISO `2024-05-01 12:00:00,123` / `2024-05-01T12:00:00.123Z`, syslog / journal `Nov 28 00:12:01`.
"""

from __future__ import annotations

import re
import time
from datetime import datetime, timezone
from typing import Optional

_TORCHRUN = re.compile(r"^\[(?:rank|default|trainer|worker)(\d{1,7})\]:\s?")
# A log collector's time before the launcher's prefix: ISO (`2024-05-01T12:00:00.123Z `), with
# the container runtime's stream and tag after it (`stdout F `, Kubernetes' CRI log format).
_COLLECTOR = re.compile(r"^(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?)"
                        r"\s+(?:(?:stdout|stderr)\s+[FP]\s+)?")
# Ray's worker prefix names a process, not a rank: `(RayTrainWorker pid=1234, ip=10.0.0.5) text`.
_RAY = re.compile(r"^\((?:[\w.:-]+ )?pid=(\d{1,9})(?:, ip=[\w.:-]+)?\) ")
_SRUN = re.compile(r"^\s{0,6}(\d{1,7}): ")
_RANK_IN_TEXT = re.compile(r"\[(?:PG ID \d+ PG GUID \S+ )?Rank (\d{1,7})\]")
_GLOG = re.compile(r"\[?[IWEF](\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?\s")
_ISO = re.compile(r"(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?")
_SYSLOG = re.compile(r"^([A-Z][a-z]{2}) {1,2}(\d{1,2}) (\d{2}):(\d{2}):(\d{2})\s")
_MONTHS = {m: i for i, m in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1)}


def split_rank(text: str, srun: bool) -> tuple[Optional[int], str]:
    """(rank, the line without its prefix); rank None when the line has none. srun's `3: ` form
    is only read in a file where it was seen first (a bare number and a colon is common text)."""
    match = _TORCHRUN.match(text)
    if match:
        return int(match.group(1)), text[match.end():]
    if srun:
        match = _SRUN.match(text)
        if match:
            return int(match.group(1)), text[match.end():]
    return None, text


def split_collector(text: str) -> tuple[Optional[float], str]:
    """(the collector's time, the line without it), or (None, the line)."""
    match = _COLLECTOR.match(text)
    if not match:
        return None, text
    return timestamp(match.group(1)), text[match.end():]


def split_pid(text: str) -> tuple[Optional[int], str]:
    """(pid, the line without Ray's prefix), or (None, the line) when it has none."""
    match = _RAY.match(text)
    if match:
        return int(match.group(1)), text[match.end():]
    return None, text


def looks_srun(text: str) -> bool:
    return bool(_SRUN.match(text))


def rank_in_text(text: str) -> Optional[int]:
    """`[Rank 3]` / `[PG ID 0 PG GUID 0(default_pg) Rank 3]` in PyTorch's C++ messages."""
    match = _RANK_IN_TEXT.search(text)
    return int(match.group(1)) if match else None


def timestamp(text: str, year: Optional[int] = None) -> Optional[float]:
    """Seconds since the epoch (UTC as written) of the first time on the line, or None. The C++
    logger and syslog leave the year out: this year is assumed (order within a job is what
    matters, not the date)."""
    year = year or time.gmtime().tm_year
    match = _GLOG.search(text, 0, 80)
    if match:
        month, day, hh, mm, ss, frac = match.groups()
        return _epoch(year, int(month), int(day), int(hh), int(mm), int(ss), frac)
    match = _ISO.search(text, 0, 60)
    if match:
        y, month, day, hh, mm, ss, frac = match.groups()
        return _epoch(int(y), int(month), int(day), int(hh), int(mm), int(ss), frac)
    match = _SYSLOG.match(text)
    if match and match.group(1) in _MONTHS:
        _, day, hh, mm, ss = match.groups()
        return _epoch(year, _MONTHS[match.group(1)], int(day), int(hh), int(mm), int(ss), None)
    return None


def _epoch(year: int, month: int, day: int, hh: int, mm: int, ss: int, frac: Optional[str]) -> Optional[float]:
    try:
        moment = datetime(year, month, day, hh, mm, ss, tzinfo=timezone.utc)
    except ValueError:
        return None
    return moment.timestamp() + (float("0." + frac) if frac else 0.0)
