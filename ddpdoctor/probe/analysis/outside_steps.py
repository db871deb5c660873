"""Where the time outside training steps went: the start-up before the first step and the
pauses between steps (evaluation, checkpoint uploads), each with the user's line the watchdog
saw the ranks at (its looks in watch.jsonl, launch/watchdog.py).

Users want to know it, and it is what a quiet spell that is not a hang looks like afterwards.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.probe.words.wording import ranges
from ddpdoctor.probe.records.rundir import WATCH_FILE

# A gap between two steps is a pause when it is this many times the median step and at least
# PAUSE_MIN_S long; a start-up is said in the terminal report from STARTUP_SHOWN_S on.
PAUSE_FACTOR = 5.0
PAUSE_MIN_S = 3.0
STARTUP_SHOWN_S = 10.0
PAUSES_SHOWN = 3
MAX_LOOKS = 10000


@dataclass
class Spell:
    """Time outside steps: the start-up (after_step None) or a pause after a step."""

    after_step: Optional[int]
    seconds: float
    where: Optional[str]  # "ranks 0-1 in build_dataset() at train.py:41", from the looks

    def to_dict(self) -> dict:
        return {"after_step": self.after_step, "s": round(self.seconds, 2), "where": self.where}

    def text(self) -> str:
        when = "before the first step" if self.after_step is None else f"after step {self.after_step}"
        return f"{self.seconds:.1f} s {when}" + (f" ({self.where})" if self.where else "")


def load_looks(run_dir: str | Path) -> list[dict]:
    """The watchdog's looks, in order; a torn last line (ddpdoctor killed) is skipped."""
    looks = []
    try:
        with open(Path(run_dir) / WATCH_FILE, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                try:
                    look = json.loads(line)
                except ValueError:
                    continue
                if isinstance(look, dict) and isinstance(look.get("t"), (int, float)):
                    looks.append(look)
                if len(looks) >= MAX_LOOKS:
                    break
    except OSError:
        return []
    return looks


def looks_of(run: RunModel) -> list[dict]:
    return list(run.watch)


def where_between(looks: list[dict], start: float, end: float) -> Optional[str]:
    """The place the looks in [start, end] saw the ranks at for the longest time, as
    "ranks 0-1 in build_dataset() at train.py:41" (several groups joined by "; ")."""
    seen: dict[str, float] = {}
    before: Optional[float] = None
    for look in looks:
        t = look["t"]
        if t < start or t > end:
            continue
        places = look.get("places") or []
        # A look stands for the time since the one before it, at most the quiet time it saw.
        quiet = float(look.get("quiet_s") or 0.0)
        held = quiet if before is None else min(t - before, quiet)
        if places:
            key = "; ".join(f"{_ranks(p.get('ranks') or [])} {p.get('where')}" for p in places)
            seen[key] = seen.get(key, 0.0) + max(held, 0.01)
        before = t
    if not seen:
        return None
    return max(seen.items(), key=lambda item: item[1])[0]


def _ranks(ranks: list) -> str:
    values = sorted(int(r) for r in ranks)
    return f"{'rank' if len(values) == 1 else 'ranks'} {ranges(values).replace(', ', ',')}"


def step_times(run: RunModel) -> list[tuple[int, float]]:
    """(step, wall time) of the job's steps: a step is done when the last rank has done it.
    Derived once per run (the report's metrics and notes ask for it): shared, never changed."""
    return list(run.derived_once("step_times", run.records_key(), lambda: _step_times(run)))


def _step_times(run: RunModel) -> list[tuple[int, float]]:
    done: dict[int, float] = {}
    for rank_run in run.ranks.values():
        for record in rank_run.of(tm.Step):
            done[record.step] = max(done.get(record.step, 0.0), record.t)
    return sorted(done.items())


def startup(run: RunModel) -> Optional[Spell]:
    """From the launch to the job's first step (None: no step, or no launch time)."""
    steps = step_times(run)
    begun = run.meta.started or min((r.first(tm.Start).t for r in run.ranks.values()
                                     if r.first(tm.Start) is not None), default=0.0)
    if not steps or not begun:
        return None
    first = min(r.first(tm.Step).t for r in run.ranks.values() if r.first(tm.Step) is not None)
    return Spell(None, max(first - begun, 0.0), where_between(looks_of(run), begun, first))


def pauses(run: RunModel) -> list[Spell]:
    """Gaps between consecutive steps far longer than a step."""
    steps = step_times(run)
    gaps = [(steps[i - 1][0], steps[i][1] - steps[i - 1][1], steps[i - 1][1], steps[i][1])
            for i in range(1, len(steps))]
    if len(gaps) < 2:
        return []
    typical = statistics.median(g[1] for g in gaps)
    looks = looks_of(run)
    return [Spell(after, gap, where_between(looks, begin, end))
            for after, gap, begin, end in gaps if gap >= max(PAUSE_MIN_S, PAUSE_FACTOR * typical)]


def metrics(run: RunModel) -> dict:
    """Additive report metrics: startup_s, startup_where, pauses, outside_steps_s."""
    first = startup(run)
    found = pauses(run)
    return {
        "startup_s": round(first.seconds, 2) if first else None,
        "startup_where": first.where if first else None,
        "pauses": [p.to_dict() for p in found],
        "outside_steps_s": round((first.seconds if first else 0.0) + sum(p.seconds for p in found), 2),
    }


def notes(run: RunModel) -> list[str]:
    """Terminal lines: a long start-up, the longest pauses."""
    lines = []
    first = startup(run)
    if first is not None and first.seconds >= STARTUP_SHOWN_S:
        lines.append(f"start-up: {first.text()}")
    found = pauses(run)
    for spell in sorted(found, key=lambda s: -s.seconds)[:PAUSES_SHOWN]:
        lines.append(f"pause: {spell.text()}")
    if len(found) > PAUSES_SHOWN:
        rest = sorted(found, key=lambda s: -s.seconds)[PAUSES_SHOWN:]
        lines.append(f"pause: {len(rest)} more, {sum(s.seconds for s in rest):.1f} s in all")
    return lines


def final_spell(run: RunModel) -> str:
    """Where the ranks spent the quiet spell that --timeout ended: "ranks 0-1 spent 290 s in
    build_dataset() at train.py:41 before their first step"."""
    outcome = run.outcome
    looks = looks_of(run)
    quiet = outcome.stall_s if outcome is not None and outcome.stall_s is not None else None
    last = looks[-1] if looks else None
    places = (last or {}).get("places") or []
    steps = max((r.steps for r in run.ranks.values()), default=0)
    when = "before their first step" if steps == 0 else f"after step {steps}"
    spent = f"spent {quiet:.0f} s" if quiet is not None else "were"
    if not run.ranks and last is not None and not places:
        # No rank wrote its first record. The look measured the job's CPU: torchrun's agent and
        # the ranks importing torch and the script, or the script's own code before it starts
        # its ranks (--launcher none).
        cpu = last.get("job_cpu")
        using = f" (using {cpu:.1f} CPUs at the last look)" if isinstance(cpu, (int, float)) else ""
        took = f" for {quiet:.0f} s" if quiet is not None else ""
        if run.meta.launcher == "none":
            return f"no rank had started: the script was in its own code before starting its ranks{took}{using}"
        return (f"no rank had started: the launcher and its processes were starting up{took}{using}; "
                "a loaded machine or slow imports")
    if not places:
        return f"the ranks {spent} in their own code {when}, no collective pending (no stack was taken)"
    # A rank waiting for a peer still on its way to the same call (run_model/busy_or_blocked.py) is a place too.
    waited = any(str(p.get("where", "")).startswith("waits in ") for p in places)
    return "; ".join(f"{_ranks(p.get('ranks') or [])} {spent} {_spent_where(str(p.get('where', '')))}"
                     for p in places) + f" {when}" + ("" if waited else ", no collective pending")


def _spent_where(where: str) -> str:
    """A look's place after "spent 30 s": "in load() at ..." as it is, "waits in ..." as
    "waiting in ..."."""
    return "waiting in " + where[len("waits in "):] if where.startswith("waits in ") else where
