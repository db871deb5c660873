"""Per-rank memory of a probe run (inrank/memory.py's Memory records): peak and its breakdown,
for the report's Memory table, the JSON metrics and DDP608.

Breakdown of a rank's peak:
  runtime      CPU only: the process's resident set before the script ran (interpreter, torch);
  params       the trained parameters this rank holds (its shard under FSDP / FSDP2);
  grads        their gradients (sharded likewise);
  optimizer    the optimizer's state tensors (its partition under ZeroRedundancyOptimizer);
  activations  the tensors autograd saved for backward in one training step;
  rest         what the peak holds beyond those: libraries imported by the script, buffers,
               temporaries, data, and anything one rank keeps that the others do not.
On CPU the peak is the process's resident high-water mark (VmHWM), so `rest` also holds the
memory the allocator kept after freeing it. On a GPU it is the caching allocator's
max_memory_allocated on the parameters' device (no runtime share).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, Optional

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.report.model import Table

MB = 1e6


@dataclass
class RankMemory:
    rank: int
    device: str = "cpu"
    runtime: Optional[int] = None  # CPU: resident set when the instruments installed
    peak: Optional[int] = None  # the highest high-water mark recorded (whole process on CPU)
    current: Optional[int] = None  # the last figure recorded (resident set / allocated)
    params: Optional[int] = None
    params_full: Optional[int] = None
    grads: Optional[int] = None
    optimizer: Optional[int] = None
    activations: Optional[int] = None
    sharding: str = ""
    step: int = 0  # the last step a figure was recorded at

    @property
    def held(self) -> Optional[int]:
        """Parameters + gradients + optimizer state (None: no optimizer step was measured)."""
        if self.params is None:
            return None
        return self.params + (self.grads or 0) + (self.optimizer or 0)

    @property
    def job_peak(self) -> Optional[int]:
        """The peak beyond the runtime: what the job itself added."""
        if self.peak is None:
            return None
        return max(0, self.peak - (self.runtime or 0))

    @property
    def job_current(self) -> Optional[int]:
        """The last figure beyond the runtime: what the job still held at its last record."""
        if self.current is None:
            return None
        return max(0, self.current - (self.runtime or 0))

    @property
    def rest(self) -> Optional[int]:
        if self.job_peak is None or self.held is None:
            return None
        return max(0, self.job_peak - self.held - (self.activations or 0))


def rank_memory(run: RunModel) -> dict[int, RankMemory]:
    """Each rank's memory figures, from its Memory records (ranks without any are left out)."""
    found: dict[int, RankMemory] = {}
    for rank, rank_run in sorted(run.ranks.items()):
        records = rank_run.of(tm.Memory)
        if not records:
            continue
        memory = RankMemory(rank)
        for record in records:
            if record.moment == "start":
                memory.runtime = record.current if record.device == "cpu" else 0
            else:
                memory.device = record.device
                if record.current is not None:
                    memory.current = record.current
            if record.peak is not None:
                memory.peak = max(memory.peak or 0, record.peak)
            # A figure the record leaves out (None) keeps the one measured before.
            memory.params = _latest(record.params, memory.params)
            memory.params_full = _latest(record.params_full, memory.params_full)
            memory.grads = _latest(record.grads, memory.grads)
            memory.optimizer = _latest(record.optimizer, memory.optimizer)
            memory.activations = _latest(record.activations, memory.activations)
            if record.moment == "step" and record.params is not None:
                memory.sharding = record.sharding
            memory.step = max(memory.step, record.step)
        if memory.device != "cpu":
            memory.runtime = 0  # the allocator's figures hold no interpreter
        found[rank] = memory
    return found


def _latest(value: Optional[int], before: Optional[int]) -> Optional[int]:
    return before if value is None else value


def _mb(value: Optional[int]) -> str:
    if value is None:
        return ""
    return f"{value / MB:.1f}" if value >= MB else f"{value / MB:.3f}"


def memory_table(memories: dict[int, RankMemory]) -> Table:
    rows = []
    sharded = any(m.sharding for m in memories.values())
    for rank, m in sorted(memories.items()):
        share = ""
        if m.params is not None and m.params_full:
            share = f"{m.params / m.params_full:.0%}"
        rows.append([rank, m.device, _mb(m.peak), _mb(m.runtime) if m.device == "cpu" else "",
                     _mb(m.params), _mb(m.grads), _mb(m.optimizer), _mb(m.activations),
                     _mb(m.rest), *([m.sharding or "replicated", share] if sharded else [])])
    device = next(iter(memories.values())).device if memories else "cpu"
    peak = ("resident high-water mark of the process (VmHWM)" if device == "cpu"
            else "the allocator's max_memory_allocated")
    columns = ["rank", "device", "peak", "runtime", "params", "grads", "optim", "activ", "rest"]
    return Table(f"Memory per rank (MB): peak = {peak}; runtime = the interpreter and torch "
                 "before the script; params, grads, optim = what the rank holds (its shard "
                 "under FSDP, its partition under ZeRO); activ = saved for backward in one "
                 "training step; rest = the remainder of the peak",
                 columns + (["sharding", "params held"] if sharded else []), rows)


def metrics(memories: dict[int, RankMemory]) -> Optional[dict[str, Any]]:
    """The JSON report's `memory`: bytes per rank (None where not measured)."""
    if not memories:
        return None
    ranks = []
    for rank, m in sorted(memories.items()):
        ranks.append({"rank": rank, "device": m.device, "peak_bytes": m.peak,
                      "runtime_bytes": m.runtime, "params_bytes": m.params,
                      "params_full_bytes": m.params_full, "grads_bytes": m.grads,
                      "optimizer_bytes": m.optimizer, "activations_bytes": m.activations,
                      "rest_bytes": m.rest, "sharding": m.sharding})
    peaks = [m.job_peak for m in memories.values() if m.job_peak is not None]
    return {"ranks": ranks,
            "max_peak_bytes": max((m.peak for m in memories.values() if m.peak is not None), default=None),
            "job_peak_spread": round(max(peaks) / statistics.median(peaks), 3)
            if len(peaks) > 1 and statistics.median(peaks) > 0 else None}


def add_to_report(model: RunModel, metrics_out: dict, tables: list[Table]) -> None:
    """The Memory table and `metrics.memory` (null without figures). Never fails a report."""
    try:
        memories = rank_memory(model)
        metrics_out["memory"] = metrics(memories)
        if memories:
            tables.append(memory_table(memories))
    except Exception as exc:  # noqa: BLE001 - a report without memory figures beats none
        metrics_out["memory"] = None
        metrics_out.setdefault("memory_error", repr(exc))
