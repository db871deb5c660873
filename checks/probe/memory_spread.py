"""DDP608: per-rank memory far apart (one rank holds a full copy; FSDP saving less than expected)."""

from __future__ import annotations

import statistics
from typing import Optional

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.analysis.memory import MB, RankMemory, rank_memory
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.probe.words.wording import location, rank_list

RATIO = 1.5  # a rank's figure against the median of the other ranks'
MIN_HELD_EXCESS = 8 * 2**20  # parameters + gradients + optimizer state: exact byte counts
MIN_PEAK_EXCESS = 64 * 2**20  # peaks: resident sets move by a few MB from rank to rank
SHARD_RATIO = 1.5  # FSDP: parameters held against the model / world size
MIN_SHARD_EXCESS = 1 * 2**20


def _mb(value: float) -> str:
    return f"{value / MB:.1f} MB"


def _outliers(values: dict[int, int], floor: int) -> list[tuple[int, int, float]]:
    """(rank, value, the other ranks' median) for each rank far above the others."""
    found = []
    for rank, value in values.items():
        others = statistics.median([v for r, v in values.items() if r != rank])
        if value >= RATIO * others and value - others >= floor:
            found.append((rank, value, others))
    return found if len(found) * 2 <= len(values) else []  # most ranks "high": no odd one out


def _loads_only_on(run: RunModel, ranks: list[int]) -> Optional[tm.Boundary]:
    """A torch.load call site that ran on these ranks and on no other: the likely copy."""
    sites: dict[tuple, set[int]] = {}
    first: dict[tuple, tm.Boundary] = {}
    for rank, rank_run in run.ranks.items():
        for record in rank_run.of(tm.Boundary):
            if record.what == "load" and record.site is not None:
                key = (record.site.file, record.site.line)
                sites.setdefault(key, set()).add(rank)
                first.setdefault(key, record)
    for key, where in sites.items():
        if where == set(ranks):
            return first[key]
    return None


def _spread(run: RunModel, memories: dict[int, RankMemory]) -> list[Problem]:
    problems = []
    zero = any(m.sharding == "zero" for m in memories.values())
    # ZeroRedundancyOptimizer partitions the state by whole parameters: uneven by design.
    held = {r: (m.params or 0) + (m.grads or 0) + (0 if zero else (m.optimizer or 0))
            for r, m in memories.items() if m.params is not None}
    what = "parameters and gradients" if zero else "parameters, gradients and optimizer state"
    flagged: set[int] = set()
    if len(held) >= 2:
        for rank, value, others in _outliers(held, MIN_HELD_EXCESS):
            flagged.add(rank)
            problems.append(Problem(
                message=(f"rank {rank} holds {_mb(value)} of {what}, {value / others:.1f}x the other "
                         f"ranks' {_mb(others)}: it keeps a copy of the model (or of its optimizer) "
                         "that the others do not"),
                hint=("build the model and the optimizer alike on every rank, and wrap (DDP / FSDP) "
                      "the same modules everywhere; a second model on one rank (an EMA, a teacher, "
                      "a reference copy) belongs on every rank or on none"),
                ranks=[rank],
                evidence={"kind": "held", "bytes": value, "others_median_bytes": int(others)}))
    peaks = {r: m.job_peak for r, m in memories.items() if m.job_peak is not None}
    currents = {r: m.job_current for r, m in memories.items() if m.job_current is not None}
    kept = {rank for rank, _, _ in _outliers(currents, MIN_PEAK_EXCESS)} if len(currents) >= 2 else set()
    if len(peaks) >= 2:
        for rank, value, others in _outliers(peaks, MIN_PEAK_EXCESS):
            if rank in flagged:
                continue
            device = memories[rank].device
            load = _loads_only_on(run, [rank])
            where = (f"; torch.load at {load.site} ran on rank {rank} only" if load is not None else "")
            if rank in kept:
                when = f", and still held it at step {memories[rank].step}"
            else:
                when = (f" for a while (by step {memories[rank].step} it was back near the others': "
                        "a transient copy, such as a checkpoint read whole and then dropped)")
            gpu = ("" if device == "cpu" else
                   "; on a GPU, torch.load without map_location puts the tensors back on the "
                   "device they were saved from (cuda:0), so every rank's copy lands on rank 0's GPU")
            problems.append(Problem(
                message=(f"rank {rank}'s peak memory ({'resident set' if device == 'cpu' else device}) "
                         f"is {_mb(value)} above its start, {value / others:.1f}x the other ranks' "
                         f"{_mb(others)}: it held {_mb(value - others)} the others did not{when} "
                         f"(a checkpoint or dataset loaded on it alone){where}{gpu}"),
                hint=("load on every rank with map_location=f\"cuda:{local_rank}\" (or \"cpu\" and "
                      "then move what you keep), take from the checkpoint what you need and `del` "
                      "it after load_state_dict, or torch.load(..., mmap=True) so the file is not "
                      "copied into memory"),
                ranks=[rank],
                location=location(load.site) if load is not None else None,
                evidence={"kind": "peak", "bytes": value, "others_median_bytes": int(others),
                          "device": device, "still_held": rank in kept}))
    return problems


def _sharding(run: RunModel, memories: dict[int, RankMemory]) -> list[Problem]:
    sharded = {r: m for r, m in memories.items()
               if m.sharding in ("fsdp", "fsdp2") and m.params is not None and m.params_full}
    if not sharded:
        return []
    world = run.world_size
    if world < 2:
        return []
    heavy = []
    for rank, m in sharded.items():
        expected = m.params_full / world
        if m.params >= SHARD_RATIO * expected and m.params - expected >= MIN_SHARD_EXCESS:
            heavy.append(rank)
    if not heavy:
        return []
    m = sharded[heavy[0]]
    expected = m.params_full / world
    use = None
    for rank_run in run.ranks.values():
        use = next((u for u in rank_run.of(tm.FrameworkUse) if u.name == m.sharding), None)
        if use is not None:
            break
    if m.sharding == "fsdp2":
        hint = ("call fully_shard on each block (layer) and then on the root model: the "
                "parameters of modules outside every fully_shard call (embeddings, heads left "
                "to a root that is never sharded) stay whole on every rank")
    else:
        hint = ("use sharding_strategy=ShardingStrategy.FULL_SHARD (or SHARD_GRAD_OP), not "
                "NO_SHARD, and an auto_wrap_policy that wraps each block, so that every "
                "parameter lives in a sharded unit")
    return [Problem(
        message=(f"FSDP saves less than expected: rank {heavy[0]} holds {_mb(m.params)} of the "
                 f"model's {_mb(m.params_full)} of parameters ({m.params / m.params_full:.0%}), "
                 f"where sharding over {world} ranks would leave about {_mb(expected)} "
                 f"({1 / world:.0%}); {rank_list(heavy)} keep{'s' if len(heavy) == 1 else ''} "
                 f"{_mb(m.params - expected)} more, and their gradients and optimizer state with them"),
        hint=hint,
        ranks=heavy,
        location=location(use.site) if use is not None and use.site is not None else None,
        evidence={"kind": "sharding", "params_bytes": m.params, "params_full_bytes": m.params_full,
                  "world_size": world, "sharding": m.sharding})]


@check("DDP608", "Per-rank memory far apart", Severity.WARNING)
def memory_spread(run: RunModel) -> list[Problem] | Skipped:
    """
    What it detects:
        Ranks whose memory differs by far, from the figures every rank records (the Memory
        table): a rank whose parameters + gradients + optimizer state are at least 1.5x the
        median of the other ranks' and 8 MB more; or whose peak (beyond the interpreter and
        torch: the process's resident high-water mark on CPU, the allocator's peak on a GPU)
        is at least 1.5x the others' and 64 MB more. A torch.load that ran on that rank alone
        is named. And under FSDP / FSDP2, a rank that holds at least 1.5x its share of the
        parameters (model size / world size) and 1 MB more: sharding saves less than expected.
        ZeroRedundancyOptimizer's uneven optimizer state (it partitions whole parameters) is
        not counted.

    Why it hurts:
        Every rank runs the same model, so the one holding more sets the largest model and
        batch the job can run: it goes out of memory first. The usual cause is a rank that
        keeps a full copy of something: rank 0 loading a checkpoint and keeping the dict (on
        a GPU, `torch.load` without map_location sends every rank's copy to cuda:0), an EMA
        or a reference model on one rank. Under FSDP, parameters left outside every sharded
        unit (NO_SHARD, a root never sharded, a module not covered by the wrap policy) are
        replicated on every rank with their gradients and optimizer state.

    How to fix:
        Load on every rank onto its own device, take what you need and drop the rest:

            ckpt = torch.load(path, map_location=f"cuda:{local_rank}", mmap=True)
            model.load_state_dict(ckpt["model"])
            del ckpt

        Under FSDP2 shard every block and then the root (`for b in model.layers:
        fully_shard(b)`, then `fully_shard(model)`); under FSDP use FULL_SHARD with an
        auto_wrap_policy that wraps each block.
    """
    memories = rank_memory(run)
    if not memories:
        return Skipped("no memory figures were recorded")
    if len(memories) < 2 and not any(m.sharding in ("fsdp", "fsdp2") for m in memories.values()):
        return Skipped("fewer than 2 ranks recorded memory figures: nothing to compare")
    return _spread(run, memories) + _sharding(run, memories)
