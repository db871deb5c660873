"""FSDP / FSDP2 communication per step: the all-gathers that unshard parameters before forward
and backward, and the reduce-scatters that shard gradients after backward, as the probe's
collective wrappers recorded them (tm.Collective with via "fsdp", and their CollectiveDone).

Rows group the calls by operation and size: FSDP's units (one per wrapped block) of one size
share a row, with its calls per step. Per call:
  ms       the time of the last rank to enter it, from entering to returning: the transfer
           itself, without the wait for slower ranks (they entered earlier and waited);
  busbw    as nccl-tests defines it: bytes / time x (n-1)/n for all-gather and reduce-scatter
           (bytes: the unsharded buffer), x 2(n-1)/n for all-reduce (NO_SHARD), in GB/s;
  blocked  ms per step each rank spent inside these calls, waits included (median over ranks);
  share    blocked / the step's wall time. On gloo the calls block the training thread, so this
           is the communication FSDP did not hide; on NCCL the calls return once queued on the
           communication stream and the figure is not the exposed time (left blank).
Judged over the steps after the first WARMUP_STEPS, as the other performance tables.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass
from math import prod
from typing import Any, Optional

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.analysis import perf
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.report.model import Table

ELEMENT_BYTES = {"float32": 4, "float": 4, "float16": 2, "half": 2, "bfloat16": 2, "float64": 8,
                 "double": 8, "int64": 8, "long": 8, "int32": 4, "int": 4, "int16": 2,
                 "uint8": 1, "int8": 1, "bool": 1, "float8_e4m3fn": 1, "float8_e5m2": 1}
OP_NAMES = {"all_gather": "all-gather", "all_gather_single": "all-gather",
            "all_gather_into_tensor": "all-gather", "reduce_scatter": "reduce-scatter",
            "reduce_scatter_single": "reduce-scatter", "reduce_scatter_tensor": "reduce-scatter",
            "all_reduce": "all-reduce"}


def call_bytes(record: tm.Collective) -> int:
    """The unsharded buffer of one call: an all-gather's output, a reduce-scatter's input."""
    sizes = [prod(shape) * ELEMENT_BYTES.get(dtype, 4)
             for shape, dtype in zip(record.shapes, record.dtypes)]
    if not sizes:
        return 0
    if record.op == "all_gather":  # (output list, input)
        return sum(sizes[:-1]) if len(sizes) > 1 else sizes[0]
    if record.op == "reduce_scatter":  # (output, input list)
        return sum(sizes[1:]) if len(sizes) > 1 else sizes[0]
    if record.op in ("all_gather_single", "all_gather_into_tensor"):  # (output, input)
        return sizes[0]
    if record.op in ("reduce_scatter_single", "reduce_scatter_tensor"):  # (output, input)
        return sizes[-1]
    return sum(sizes)


@dataclass
class FsdpOp:
    op: str  # "all-gather" | "reduce-scatter" | "all-reduce" | another torch op name
    nbytes: int
    calls_per_step: float
    seconds: Optional[float]  # median per call, the last rank's time in it
    blocked_per_step: float  # seconds per step inside these calls (median over ranks)
    world: int

    @property
    def busbw(self) -> Optional[float]:
        if not self.seconds or self.seconds <= 0 or self.world < 2:
            return None
        factor = (2 if self.op == "all-reduce" else 1) * (self.world - 1) / self.world
        return self.nbytes / self.seconds * factor / perf.GB


@dataclass
class FsdpComm:
    ops: list[FsdpOp]
    judged_steps: int
    step_s: Optional[float]  # median step wall time
    blocking: bool  # the calls block the training thread (gloo): blocked time is exposed

    @property
    def blocked_per_step(self) -> float:
        return sum(o.blocked_per_step for o in self.ops)

    @property
    def share(self) -> Optional[float]:
        if not self.blocking or not self.step_s:
            return None
        return self.blocked_per_step / self.step_s


def fsdp_comm(model: RunModel) -> Optional[FsdpComm]:
    """FSDP's collectives per judged step, or None when FSDP issued none. Derived once per run
    (the report's metrics and tables ask for it): shared, never changed."""
    return model.derived_once("fsdp_comm", model.records_key(), lambda: _fsdp_comm(model))


def _fsdp_comm(model: RunModel) -> Optional[FsdpComm]:
    calls: dict[tuple, dict[int, tm.Collective]] = defaultdict(dict)  # (group, seq) -> rank -> call
    done: dict[int, dict[tuple, float]] = {}
    steps: dict[int, set[int]] = {}
    for rank, run in model.ranks.items():
        done[rank] = {(d.group, d.seq): d.t for d in run.of(tm.CollectiveDone)}
        steps[rank] = {s.step for s in run.of(tm.Step)}
        for c in run.of(tm.Collective):
            if c.via == "fsdp":
                calls[(c.group, c.seq)][rank] = c
    if not calls:
        return None
    # Made while `c.step` steps were done: the call belongs to step c.step + 1. The steps judged
    # are the ones recorded (past the warm-up), never a range up to the highest number: a file
    # or a peer saying "step 2^31" must not make a list of 2^31 steps.
    recorded = set().union(*steps.values()) if steps else set()
    judged_set = {s for s in recorded if s > perf.WARMUP_STEPS} or {s for s in recorded if s >= 1}
    judged = sorted(judged_set)
    world = model.world_size
    per_row: dict[tuple, list[float]] = defaultdict(list)
    counts: dict[tuple, int] = defaultdict(int)
    blocked: dict[tuple, dict[int, float]] = defaultdict(lambda: defaultdict(float))
    for key, by_rank in calls.items():
        first = next(iter(by_rank.values()))
        if first.step + 1 not in judged_set:
            continue
        row = (OP_NAMES.get(first.op, first.op), call_bytes(first))
        counts[row] += 1
        durations = []
        for rank, c in by_rank.items():
            end = done[rank].get(key)
            if end is not None and end >= c.t:
                durations.append(end - c.t)
                blocked[row][rank] += end - c.t
        if len(durations) == len(by_rank) and durations:
            per_row[row].append(min(durations))
    step_count = max(1, len(judged))
    ops = []
    for row in sorted(counts, key=lambda r: (r[0], -r[1])):
        op, nbytes = row
        rank_blocked = [blocked[row].get(rank, 0.0) / step_count for rank in model.ranks]
        ops.append(FsdpOp(op, nbytes, counts[row] / step_count,
                          statistics.median(per_row[row]) if per_row[row] else None,
                          statistics.median(rank_blocked) if rank_blocked else 0.0, world))
    perfs = perf.step_perf(model)
    step_s = perf.step_time(perfs) if perfs else None
    return FsdpComm(ops, len(judged), step_s or None, perf.comm_shares_cores(model))


def _ms(seconds: Optional[float]) -> str:
    return "" if seconds is None else f"{seconds * 1e3:.2f}"


def table(comm: FsdpComm) -> Table:
    rows = []
    for o in comm.ops:
        share = (o.blocked_per_step / comm.step_s) if comm.blocking and comm.step_s else None
        rows.append([o.op, f"{o.nbytes / 1e6:.3f}", f"{o.calls_per_step:g}", _ms(o.seconds),
                     "" if o.busbw is None else f"{o.busbw:.3f}", _ms(o.blocked_per_step),
                     "" if share is None else f"{share:.0%}"])
    total_share = comm.share
    rows.append(["total", "", f"{sum(o.calls_per_step for o in comm.ops):g}", "", "",
                 _ms(comm.blocked_per_step), "" if total_share is None else f"{total_share:.0%}"])
    exposed = ("share: of the median step, exposed (gloo blocks the training thread)"
               if comm.blocking else "share: not derivable (the calls return once queued)")
    return Table(f"FSDP collectives per step, over {comm.judged_steps} step(s) after the first "
                 f"{perf.WARMUP_STEPS}: MB of the unsharded buffer per call; ms: median per call "
                 "of the last rank to enter it; busbw in GB/s; blocked: ms per step inside the "
                 f"calls, waits included; {exposed}",
                 ["op", "MB", "calls/step", "ms", "busbw", "blocked ms", "share"], rows)


def metrics(comm: FsdpComm) -> dict[str, Any]:
    return {"fsdp_collectives": [
                {"op": o.op, "bytes": o.nbytes, "calls_per_step": round(o.calls_per_step, 3),
                 "ms": None if o.seconds is None else round(o.seconds * 1e3, 4),
                 "busbw": None if o.busbw is None else round(o.busbw, 4),
                 "blocked_ms_per_step": round(o.blocked_per_step * 1e3, 4)} for o in comm.ops],
            "fsdp_comm_ms_per_step": round(comm.blocked_per_step * 1e3, 4),
            "fsdp_comm_share": None if comm.share is None else round(comm.share, 4)}
