"""DDP506: latent desync - a collective whose size follows the data at one call site."""

from __future__ import annotations

from collections import defaultdict
from typing import Optional

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check
from ddpdoctor.core import torch_names as names
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.analysis import frameworks, size_exchange
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.probe.words.wording import location, rank_list

# Sizes that may vary by design: torch's object collectives exchange the sizes themselves (their
# internal tensor collectives are not recorded), barriers carry no data, DDP's buckets are fixed.
SAFE_OPS = frozenset(names.OBJECT_COLLECTIVES + names.BARRIERS + ("ddp_bucket_allreduce",))


@check("DDP506", "A collective's size changes with the data", Severity.WARNING)
def latent_desync(run: RunModel) -> list[Problem] | Skipped:
    """
    What it detects:
        A collective whose tensor size changes from call to call at one call site while the
        ranks, so far, happened to agree: `dist.all_reduce(torch.bincount(labels))` where the
        largest label in the batch sets the size, a list of variable length turned into a
        tensor and all-reduced. The finding names the call site, the sizes seen at which steps
        on which ranks, and says that no exchange of the size was found.
        A changing size is safe only when the size itself was exchanged first: the probe
        records the reduce op of every collective and the values of small ones after they
        complete, and accepts, between two calls of the site, an all_reduce with MAX whose
        result is the new size (the max length, then padding), an all_gather of lengths or a
        broadcast whose values hold it. A small collective of other values (a loss total)
        just before is no proof. Not reported: torch's object collectives (all_gather_object,
        broadcast_object_list, ...: they exchange sizes themselves), an uneven all_gather into
        output lists whose sizes match every rank's input, collectives of FSDP, ZeRO or a comm
        hook (sized by the model), and sizes that already differ between ranks (DDP501
        reports those as a mismatch).

    Why it hurts:
        Every rank must pass the same size to a collective. Today the batches agreed; the
        first batch where one rank's size differs (a class missing from its batch, a shorter
        list) hangs the job or, on gloo, aborts it or returns a wrong sum - minutes or hours
        into a real run, long after a short test passed.

    How to fix:
        Make the size independent of the data, or agree on it first:

            counts = torch.bincount(labels, minlength=num_classes)   # fixed size
            dist.all_reduce(counts)

            # variable length: agree on the max, pad, then reduce / gather
            n = torch.tensor([len(x)]); dist.all_reduce(n, op=dist.ReduceOp.MAX)
            padded = torch.nn.functional.pad(x, (0, n.item() - len(x)))

        or `dist.all_gather_object(out, python_list)` for variable-size Python objects.
    """
    by_rank = {rank: r.of(tm.Collective) for rank, r in run.ranks.items()}
    if not any(by_rank.values()):
        return Skipped("no collective was recorded")
    if len(by_rank) < 2:
        return Skipped("fewer than 2 ranks left telemetry: nothing to compare")
    exchanges = {rank: size_exchange.RankExchanges(run.ranks[rank]) for rank in by_rank}
    sites: dict[tuple, dict[int, list[tm.Collective]]] = defaultdict(lambda: defaultdict(list))
    for rank, calls in by_rank.items():
        for record in calls:
            if record.op in SAFE_OPS or record.site is None or record.via:
                continue  # record.via: FSDP's, ZeRO's or a comm hook's own, sized by the model
            sites[(record.group, record.site.file, record.site.line, record.op)][rank].append(record)
    problems = []
    for (group, _, _, op), per_rank in sites.items():
        problem = _judge(group, op, per_rank, exchanges)
        if problem is not None:
            problems.append(frameworks.worded("DDP506", problem, run))
    return problems


def _signature(record: tm.Collective) -> tuple:
    return tuple(tuple(shape) for shape in record.shapes)


def _judge(group: str, op: str, per_rank: dict[int, list[tm.Collective]],
           exchanges: dict[int, size_exchange.RankExchanges]) -> Problem | None:
    if len(per_rank) < 2:
        return None
    seen = {_signature(r) for calls in per_rank.values() for r in calls}
    if len(seen) < 2:
        return None
    common = min(len(calls) for calls in per_rank.values())
    if op == "all_gather" and all(_matching_gather([calls[k] for calls in per_rank.values()])
                                  for k in range(common)):
        return None
    for k in range(common):
        if len({_signature(calls[k]) for calls in per_rank.values()}) > 1:
            return None  # already a mismatch: DDP501's
    # Every call whose size differs from this site's previous call on its rank must follow an
    # exchange of that size since that previous call; a small collective of other values does
    # not count, however close it ran.
    unproven: list[tuple[int, tm.Collective, Optional[tm.Collective]]] = []
    for rank, calls in per_rank.items():
        for i, record in enumerate(calls):
            if (i and _signature(record) != _signature(calls[i - 1])
                    and not size_exchange.is_size_exchange(record)):
                found, nearest = exchanges[rank].before(record, calls[i - 1])
                if found is None:
                    unproven.append((rank, record, nearest))
    if not unproven:
        return None
    first = next(iter(per_rank.values()))[0]
    sizes: dict[tuple, dict[str, set]] = {}
    for rank, calls in per_rank.items():
        for record in calls:
            entry = sizes.setdefault(_signature(record), {"steps": set(), "ranks": set()})
            entry["steps"].add(record.step)
            entry["ranks"].add(rank)
    shown = "; ".join(f"{_shape_text(sig)} at step(s) {_steps(v['steps'])}"
                      for sig, v in list(sizes.items())[:6])
    ranks = sorted(per_rank)
    rank, record, nearest = unproven[0]
    before = ""
    if nearest is not None:
        before = (f"; the {nearest.op}{_op_words(nearest)} at {nearest.site} before it carries "
                  f"{_result_words(exchanges[rank].result(nearest))}, not this size")
    return Problem(
        message=(f"{op} at {first.site} changed size from call to call ({shown}) on {rank_list(ranks)}, "
                 f"and no earlier collective exchanged the size (an all_reduce with MAX whose result "
                 f"is the size, an all_gather of the lengths, or a broadcast from one rank){before}: "
                 f"its size follows the data. The ranks agreed in all {common} call(s) so far by "
                 "luck; the first batch where they differ hangs the job (or gloo aborts or returns a "
                 "wrong sum)"),
        hint=("make the size the same on every rank: torch.bincount(x, minlength=num_classes), pad to a "
              "length agreed first (all_reduce(MAX) of the length), or all_gather_object for "
              "variable-size Python objects"),
        ranks=ranks,
        location=location(first.site),
        evidence={"op": op, "group": group, "site": str(first.site), "calls": common,
                  "exchange": None,
                  "unproven_step": record.step,
                  "nearest_before": (None if nearest is None else
                                     {"op": nearest.op, "site": str(nearest.site),
                                      "reduce_op": nearest.reduce_op,
                                      "result": exchanges[rank].result(nearest)}),
                  "sizes": [{"shapes": [list(s) for s in sig], "steps": sorted(v["steps"]),
                             "ranks": sorted(v["ranks"])} for sig, v in sizes.items()]},
    )


def _op_words(record: tm.Collective) -> str:
    return f"({record.reduce_op})" if record.reduce_op else ""


def _result_words(values: Optional[list]) -> str:
    if values is None:
        return "values that were not recorded"
    flat = [v for part in values for v in part]
    return "the value(s) " + ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in flat[:6])


def _matching_gather(calls: list[tm.Collective]) -> bool:
    """all_gather(out_list, x) with uneven x: fine when every rank's out_list holds each rank's
    size (the sizes were agreed beforehand)."""
    inputs = [c.shapes[-1] for c in calls if c.shapes]
    for call in calls:
        outputs = call.shapes[:-1]
        if len(outputs) != len(inputs) or outputs != inputs:
            return False
    return True


def _shape_text(sig: tuple) -> str:
    return ", ".join("x".join(map(str, s)) or "scalar" for s in sig) or "no tensor"


def _steps(steps: set) -> str:
    ordered = sorted(steps)
    return ", ".join(map(str, ordered[:5])) + (", …" if len(ordered) > 5 else "")
