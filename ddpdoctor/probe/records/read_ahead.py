"""The rank files read while node 0 waits out a quiet spell, so that the analysis after a stall
verdict reads only what came after.

The stall timeout is time node 0 spends waiting: at 1,024 ranks reading and decoding every rank
file (RunModel.load) took half of the time from the verdict to the report. While the job is quiet
the launcher hands this reader a slice of each poll (step()); it follows each rank-<R>.jsonl
from where it stopped (a spell that ends, not stalled, keeps what was read) and decodes its
records as the analysis would. At the end the launcher hands what it holds over (hand_over());
RunModel.load takes it for that run dir only, once (take()), and reads each file from the
offset reached. Bounded: it holds at most MAX_BYTES of files, and stops there (the analysis
reads the rest itself, as without it).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Optional

from ddpdoctor.probe.records import rank_files
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.records.rundir import is_rank_telemetry

MAX_BYTES = 128 << 20  # of rank files held decoded (about 8x that in memory)


class ReadAhead:
    """Each rank file's records decoded so far, and the offset they end at."""

    def __init__(self, run_dir: str | os.PathLike) -> None:
        self.run_dir = Path(run_dir)
        self.tails: dict[str, rank_files.RankFileTail] = {}
        self.records: dict[str, list[Any]] = {}
        self.held = 0  # bytes read
        self.full = False  # MAX_BYTES held: nothing more is read

    def step(self, budget_s: float) -> None:
        """Read what the rank files gained since, for about budget_s of this thread's time."""
        if self.full:
            return
        until = time.monotonic() + budget_s
        try:
            with os.scandir(self.run_dir) as entries:
                names = [e.name for e in entries if is_rank_telemetry(e.name)]
        except OSError:
            return
        for name in names:
            tail = self.tails.get(name)
            if tail is None:
                tail = self.tails[name] = rank_files.RankFileTail(self.run_dir / name)
                self.records[name] = []
            if not tail.grew():
                continue
            if self.held + tail.size - tail.offset > MAX_BYTES:
                self.full = True  # what is held stays good: the analysis reads on from each offset
                return
            data = tail.take(MAX_BYTES - self.held)
            self.held += len(data)
            found = self.records[name]
            for line in rank_files.lines(data):
                record = tm.from_dict(line.data)
                if record is not None:
                    found.append(record)
            if time.monotonic() >= until:
                return


_handed: Optional[ReadAhead] = None


def hand_over(ahead: Optional[ReadAhead]) -> None:
    """What the launcher read ahead, for the analysis of its run dir that follows."""
    global _handed
    _handed = ahead


def take(run_dir: Path) -> dict[str, tuple[list[Any], int]]:
    """File name -> (records read ahead, the offset they end at) for this run dir, once; {}
    when nothing was read ahead for it."""
    global _handed
    ahead, _handed = _handed, None
    if ahead is None or Path(ahead.run_dir).resolve() != Path(run_dir).resolve():
        return {}
    return {name: (ahead.records[name], tail.offset) for name, tail in ahead.tails.items()}
