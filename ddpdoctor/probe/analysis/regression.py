"""`probe --baseline previous.json`: this run's performance numbers against an earlier report's.

The earlier report is any JSON report of `ddpdoctor probe` (--json, or RUN_DIR/report.json): its
"metrics" hold the numbers perf_tables.metrics writes. They are copied into the run dir
(BASELINE_FILE) so that `ddpdoctor report RUN_DIR` judges the same comparison again.

What counts as a regression (checks/probe/regression.py, DDP607) is decided here, per metric:
  - times (median step, exposed communication, communication busy per backward): slower by more
    than SIGMAS standard errors of the difference of the two medians, each from that run's
    spread (a robust standard deviation over its judged steps) and number of steps: a shift
    that the step-to-step noise the two runs measured does not explain. A report without its
    step count is judged against twice the larger spread.
    A time inside the step (exposed communication, communication per backward) is never judged
    finer than the step time itself: a growth the step's own tolerance covers costs nothing a
    rerun could show. Within-run spreads understate the shift between two runs of the same job
    (measured on 2 CPU cores: exposed communication 0.5 ms in one run, 1.4 ms in an identical
    rerun, while each run's own spread said 0.1-0.2 ms; the step's tolerance was 2-3 ms).
  - counts (all-reduce calls per step) and bytes (gradient bytes per step): any increase (bytes:
    beyond BYTES_SLACK); these do not vary from run to run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

# The earlier report itself, read and kept beside the run, is the run model's (the loaded run
# carries it); these names are re-exported for the callers that judge it.
from ddpdoctor.probe.run_model.baseline import Baseline, load_baseline, number as _number, parse, store, stored  # noqa: F401

SIGMAS = 3.0  # a time regresses past this many standard errors of the difference of medians
MEDIAN_SE = 1.2533  # standard error of a median = 1.2533 x standard deviation / sqrt(n)
MIN_TOLERANCE_MS = 0.05  # below what the records resolve
BYTES_SLACK = 0.005


@dataclass
class Change:
    """One metric, then and now, and whether it regressed."""

    metric: str
    words: str  # what it is, for a person
    unit: str  # "ms", "calls", "bytes", "GB/s"
    before: float
    now: float
    tolerance: float  # how much worse it may get before it counts
    regressed: bool

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "before": self.before, "now": self.now,
                "tolerance": round(self.tolerance, 4), "regressed": self.regressed}


def _standard_error(metrics: dict, spread_key: str) -> Optional[float]:
    spread, steps = _number(metrics.get(spread_key)), _number(metrics.get("judged_steps"))
    if spread is None or steps is None or steps < 1 or spread < 0:
        return None  # (a hand-edited baseline's `judged_steps: -5` is no count of steps)
    return MEDIAN_SE * spread / math.sqrt(steps)


def _time(metric: str, spread_key: str, words: str, before: dict, now: dict,
          floor: float = MIN_TOLERANCE_MS) -> Optional[Change]:
    old, new = _number(before.get(metric)), _number(now.get(metric))
    if old is None or new is None:
        return None
    errors = [_standard_error(before, spread_key), _standard_error(now, spread_key)]
    if None not in errors:
        tolerance = SIGMAS * math.sqrt(errors[0] ** 2 + errors[1] ** 2)
    else:  # an older report without its step count: the larger spread, twice
        spreads = [v for v in (_number(before.get(spread_key)), _number(now.get(spread_key)))
                   if v is not None and v >= 0]
        tolerance = 2 * max(spreads, default=0.0)
    tolerance = max(MIN_TOLERANCE_MS, floor, tolerance)
    return Change(metric, words, "ms", old, new, tolerance, new - old > tolerance)


def compare(before: dict[str, Any], now: dict[str, Any]) -> list[Change]:
    """Every metric both reports have, compared (see the module doc)."""
    step = _time("step_ms_median", "step_ms_spread", "median step time", before, now)
    floor = step.tolerance if step is not None else MIN_TOLERANCE_MS  # parts of a step: see above
    found = [
        step,
        _time("exposed_comm_ms", "exposed_comm_spread_ms",
              "communication not hidden behind backward", before, now, floor),
        _time("comm_busy_ms", "comm_busy_spread_ms", "gradient communication per backward",
              before, now, floor),
    ]
    calls = [_number(before.get("allreduce_calls_per_step")), _number(now.get("allreduce_calls_per_step"))]
    if None not in calls:
        found.append(Change("allreduce_calls_per_step", "gradient all-reduces per step", "calls",
                            calls[0], calls[1], 0.0, calls[1] > calls[0]))
    sizes = [_number(before.get("allreduce_bytes_per_step")), _number(now.get("allreduce_bytes_per_step"))]
    if None not in sizes:
        slack = BYTES_SLACK * sizes[0]
        found.append(Change("allreduce_bytes_per_step", "gradient bytes all-reduced per step",
                            "bytes", sizes[0], sizes[1], slack, sizes[1] - sizes[0] > slack))
    return [c for c in found if c is not None]


def bucket_rows(before: dict[str, Any], now: dict[str, Any]) -> list[list[Any]]:
    """Per bucket of the same model, index and size in both runs: busbw then and now (GB/s)."""
    def keyed(metrics: dict) -> dict[tuple, dict]:
        rows = metrics.get("buckets") if isinstance(metrics.get("buckets"), list) else []
        return {(b.get("ddp_id"), b.get("index"), b.get("bytes")): b for b in rows if isinstance(b, dict)}

    old, new = keyed(before), keyed(now)
    rows = []
    for key in sorted(set(old) & set(new), key=lambda k: tuple(-1 if v is None else v for v in k)):
        a, b = _number(old[key].get("busbw")), _number(new[key].get("busbw"))
        if a is None or b is None:
            continue
        rows.append([key[1], f"{(key[2] or 0) / 1e6:.3f}", f"{a:.3f}", f"{b:.3f}",
                     f"{(b - a) / a:+.0%}" if a > 0 else ""])
    return rows
