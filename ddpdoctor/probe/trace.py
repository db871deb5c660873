"""A probe run as a Chrome trace-event JSON: opens in Perfetto (ui.perfetto.dev) and chrome://tracing.

One process per rank ("rank N"), with two tracks: "steps" (each optimizer step, and inside it the
phases: data, forward, backward, comm exposed, optimizer) and "all-reduce" (every DDP bucket
all-reduce, with its bytes and bus bandwidth). All complete ("X") events; times in microseconds
from the first record of the run.

Bucket slices are exact (the comm hook's clock). Phases are recorded as durations per step, so
their slices are placed from anchors: forward ends where backward starts, backward ends at the
last gradient (the last bucket's end minus the exposed communication), the optimizer ends at
the step's end, and waiting for data ends when the batch arrived. Where an anchor is missing the
phases are laid end to end before the optimizer; the args say which ("placement").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

from ddpdoctor.core import redact
from ddpdoctor.core.files import write_atomic
from ddpdoctor.probe.analysis import perf
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.run_model.loaded_run import RankRun, RunModel

STEP_TID, COMM_TID = 1, 2
PHASE_NAMES = {"data": "data", "forward": "forward", "backward": "backward",
               "comm_exposed": "comm exposed", "optimizer": "optimizer"}


def _us(t: float, t0: float) -> float:
    return round((t - t0) * 1e6, 1)


def _slice(name: str, pid: int, tid: int, start: float, end: float, t0: float,
           args: Optional[dict[str, Any]] = None, cat: str = "") -> dict[str, Any]:
    event = {"name": name, "ph": "X", "pid": pid, "tid": tid, "ts": _us(start, t0),
             "dur": round(max(0.0, end - start) * 1e6, 1)}
    if cat:
        event["cat"] = cat
    if args:
        event["args"] = args
    return event


def _metadata(rank: int, host: str) -> list[dict[str, Any]]:
    label = f"rank {rank}" + (f" ({host})" if host else "")
    return [
        {"name": "process_name", "ph": "M", "pid": rank, "args": {"name": label}},
        {"name": "process_sort_index", "ph": "M", "pid": rank, "args": {"sort_index": rank}},
        {"name": "thread_name", "ph": "M", "pid": rank, "tid": STEP_TID, "args": {"name": "steps"}},
        {"name": "thread_name", "ph": "M", "pid": rank, "tid": COMM_TID, "args": {"name": "all-reduce"}},
    ]


def _rank_events(run: RankRun, world: int, t0: float) -> list[dict[str, Any]]:
    rank = run.rank
    events: list[dict[str, Any]] = []
    last_end: dict[int, float] = {}  # steps done at launch -> the last bucket end of that step
    for b in run.of(tm.BucketTiming):
        if b.clock == "none":
            continue  # launch and callback times, not the all-reduce's: nothing to draw
        seconds = b.end - b.start
        busbw = b.nbytes / seconds / perf.GB * perf.bus_factor(world) if seconds > 0 else 0.0
        events.append(_slice(f"bucket {b.index}", rank, COMM_TID, b.start, b.end, t0, {
            "bytes": b.nbytes, "busbw_GBps": round(busbw, 4), "iteration": b.iteration,
            "step": b.step + 1, "ddp_id": b.ddp_id, "hook": b.hook}, cat="allreduce"))
        last_end[b.step] = max(b.end, last_end.get(b.step, 0.0))
    batch_end: dict[int, float] = {}  # the first batch yielded during each step
    for batch in run.of(tm.Batch):
        batch_end.setdefault(batch.step, batch.t)
    previous = None
    for record in run.of(tm.Step):
        phases = record.phases
        wall = phases.get("step")
        start = record.t - wall if wall else previous
        inside = _phase_slices(rank, record, start, last_end.get(record.step - 1),
                               batch_end.get(record.step - 1), t0)
        if start is None and inside:  # the first step: it began with its first phase
            start = t0 + min(e["ts"] for e in inside) / 1e6
        if start is not None:
            events.append(_slice(f"step {record.step}", rank, STEP_TID, start, record.t, t0, {
                "samples": phases.get("samples", 0),
                **{f"{p}_ms": round(phases.get(p, 0.0) * 1e3, 3) for p in PHASE_NAMES}},
                cat="step"))
        events.extend(inside)
        previous = record.t
    return events


def _phase_slices(rank: int, record: tm.Step, start: Optional[float], bucket_end: Optional[float],
                  batch_end: Optional[float], t0: float) -> list[dict[str, Any]]:
    p = {name: float(record.phases.get(name, 0.0)) for name in PHASE_NAMES}
    placed: dict[str, tuple[float, float]] = {}
    optimizer_start = record.t - p["optimizer"]
    placed["optimizer"] = (optimizer_start, record.t)
    anchored = bucket_end is not None and p["comm_exposed"] > 0
    grads_done = bucket_end - p["comm_exposed"] if anchored else optimizer_start
    if anchored:
        placed["comm_exposed"] = (grads_done, bucket_end)
    placed["backward"] = (grads_done - p["backward"], grads_done)
    placed["forward"] = (grads_done - p["backward"] - p["forward"], grads_done - p["backward"])
    if p["data"] > 0:
        end = batch_end if batch_end is not None else placed["forward"][0]
        placed["data"] = (end - p["data"], end)
    events = []
    for name, (begin, end) in placed.items():
        if start is not None:
            # Inside the step's own slice, so that the viewers nest them under it.
            begin, end = max(begin, start), min(end, record.t)
        if end - begin <= 0:
            continue
        events.append(_slice(PHASE_NAMES[name], rank, STEP_TID, begin, end, t0,
                             {"placement": "anchored" if anchored else "end to end"}, cat="phase"))
    return events


def build(model: RunModel) -> dict[str, Any]:
    """The trace of a run, as the JSON object Perfetto and chrome://tracing read."""
    times = [r.t for run in model.ranks.values() for r in run.records]  # every record has its t
    starts = [b.start for run in model.ranks.values() for b in run.of(tm.BucketTiming)]
    t0 = min(times + starts, default=0.0)
    events: list[dict[str, Any]] = []
    for rank in model.rank_ids():
        run = model.ranks[rank]
        start = run.first(tm.Start)
        events.extend(_metadata(rank, start.host if start else ""))
        events.extend(_rank_events(run, model.world_size, t0))
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {"tool": "ddpdoctor", "script": model.meta.script, "run_dir": model.run_dir,
                      "world_size": model.world_size, "t0_unix_s": t0},
    }


def write(model: RunModel, path: str | Path) -> Path:
    """Write the trace atomically, secrets scrubbed; ToolFailure if it cannot be written."""
    text = json.dumps(build(model), separators=(",", ":"))
    return write_atomic(path, redact.scrub(text) + "\n")
