"""Is the job still making progress? Judged from the growth of the ranks' telemetry files.

The stall timeout adapts to the job: five times the longest gap between two optimizer steps
seen so far, never below the floor. A fixed --stall-timeout overrides it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Optional

from ddpdoctor.probe.rundir import RANK_TELEMETRY_GLOB

STALL_FLOOR_S = 8.0
# Before any rank has written a record, the ranks are importing torch and the script: slow on a
# loaded machine, and not yet anything a stall diagnosis could say much about.
STARTUP_FLOOR_S = 30.0
STEP_GAP_FACTOR = 5.0


class ProgressWatch:
    def __init__(self, run_dir: str, fixed_timeout_s: Optional[float]) -> None:
        self.run_dir = Path(run_dir)
        self.fixed = fixed_timeout_s
        self.offsets: dict[Path, int] = {}
        self.partial: dict[Path, str] = {}
        self.last_progress = time.monotonic()
        self.last_step_time: dict[int, float] = {}
        self.longest_step_gap = 0.0
        self.steps = 0

    @property
    def timeout_s(self) -> float:
        if self.fixed is not None:
            return self.fixed if self.offsets else max(self.fixed, STARTUP_FLOOR_S)
        if not self.offsets:
            return STARTUP_FLOOR_S
        return max(STALL_FLOOR_S, STEP_GAP_FACTOR * self.longest_step_gap)

    def poll(self) -> bool:
        """Read what the ranks appended since the last poll. True if anything was."""
        progressed = False
        for path in self.run_dir.glob(RANK_TELEMETRY_GLOB):
            try:
                size = path.stat().st_size
            except OSError:
                continue
            offset = self.offsets.get(path, 0)
            if size <= offset:
                continue
            progressed = True
            with open(path, "rb") as handle:
                handle.seek(offset)
                chunk = handle.read(size - offset).decode("utf-8", "replace")
            self.offsets[path] = size
            text = self.partial.pop(path, "") + chunk
            lines = text.split("\n")
            if lines[-1]:
                self.partial[path] = lines[-1]
            for line in lines[:-1]:
                self.saw_line(path, line)
        if progressed:
            self.last_progress = time.monotonic()
        return progressed

    def saw_line(self, path: Path, line: str) -> None:
        """One whole telemetry line of one rank (the live view extends this: live_feed.py)."""
        if '"kind":"step"' in line:
            self._saw_step(path, line)

    def _saw_step(self, path: Path, line: str) -> None:
        try:
            record = json.loads(line)
        except ValueError:
            return
        rank = int(path.stem.split("-", 1)[1])
        previous = self.last_step_time.get(rank)
        now = float(record.get("t", 0.0))
        if previous is not None:
            self.longest_step_gap = max(self.longest_step_gap, now - previous)
        self.last_step_time[rank] = now
        self.steps = max(self.steps, int(record.get("step", 0)))

    def quiet_for(self) -> float:
        return time.monotonic() - self.last_progress
