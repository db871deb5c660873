"""DDP506: latent desync - a collective whose size follows the data at one call site."""

from __future__ import annotations

from collections import defaultdict
from math import prod

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check
from ddpdoctor.probe import telemetry as tm
from ddpdoctor.probe.analysis.runmodel import RunModel
from ddpdoctor.probe.analysis.wording import location, rank_list

# Sizes that may vary by design: torch's object collectives exchange the sizes themselves (their
# internal tensor collectives are not recorded), barriers carry no data, DDP's buckets are fixed.
SAFE_OPS = {"all_gather_object", "broadcast_object_list", "gather_object", "scatter_object_list",
            "barrier", "monitored_barrier", "ddp_bucket_allreduce"}
SIZE_EXCHANGE_MAX_ELEMENTS = 8  # an all_reduce(MAX) of a length right before: an agreed size


@check("DDP506", "A collective's size changes with the data", Severity.WARNING)
def latent_desync(run: RunModel) -> list[Problem] | Skipped:
    """
    What it detects:
        A collective whose tensor size changes from call to call at one call site while the
        ranks, so far, happened to agree: `dist.all_reduce(torch.bincount(labels))` where the
        largest label in the batch sets the size, a list of variable length turned into a
        tensor and all-reduced. The finding names the call site, the sizes seen at which steps
        on which ranks. Not reported: torch's object collectives (all_gather_object,
        broadcast_object_list, ...: they exchange sizes themselves), a size agreed by a small
        collective right before (an all_reduce(MAX) of the length, then padding), an uneven
        all_gather into output lists whose sizes match every rank's input, and sizes that
        already differ between ranks (DDP501 reports those as a mismatch).

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
    previous: dict[tuple[int, str, int], tm.Collective] = {}
    sites: dict[tuple, dict[int, list[tm.Collective]]] = defaultdict(lambda: defaultdict(list))
    for rank, calls in by_rank.items():
        for record in calls:
            previous[(rank, record.group, record.seq)] = record
            if record.op in SAFE_OPS or record.site is None or record.via:
                continue  # record.via: FSDP's, ZeRO's or a comm hook's own, sized by the model
            sites[(record.group, record.site.file, record.site.line, record.op)][rank].append(record)
    problems = []
    for (group, _, _, op), per_rank in sites.items():
        problem = _judge(run, group, op, per_rank, previous)
        if problem is not None:
            problems.append(problem)
    return problems


def _signature(record: tm.Collective) -> tuple:
    return tuple(tuple(shape) for shape in record.shapes)


def _judge(run: RunModel, group: str, op: str, per_rank: dict[int, list[tm.Collective]],
           previous: dict) -> Problem | None:
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
    changes = [(rank, r) for rank, calls in per_rank.items() for i, r in enumerate(calls)
               if i and _signature(r) != _signature(calls[i - 1])]
    if changes and all(_agreed_before(rank, r, previous) for rank, r in changes):
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
    return Problem(
        message=(f"{op} at {first.site} changed size from call to call ({shown}) on {rank_list(ranks)}: "
                 f"its size follows the data. The ranks agreed in all {common} call(s) so far; the "
                 "first batch where they differ hangs the job (or gloo aborts or returns a wrong sum)"),
        hint=("make the size the same on every rank: torch.bincount(x, minlength=num_classes), pad to a "
              "length agreed first (all_reduce(MAX) of the length), or all_gather_object for "
              "variable-size Python objects"),
        ranks=ranks,
        location=location(first.site),
        evidence={"op": op, "group": group, "site": str(first.site), "calls": common,
                  "sizes": [{"shapes": [list(s) for s in sig], "steps": sorted(v["steps"]),
                             "ranks": sorted(v["ranks"])} for sig, v in sizes.items()]},
    )


def _matching_gather(calls: list[tm.Collective]) -> bool:
    """all_gather(out_list, x) with uneven x: fine when every rank's out_list holds each rank's
    size (the sizes were agreed beforehand)."""
    inputs = [c.shapes[-1] for c in calls if c.shapes]
    for call in calls:
        outputs = call.shapes[:-1]
        if len(outputs) != len(inputs) or outputs != inputs:
            return False
    return True


def _agreed_before(rank: int, record: tm.Collective, previous: dict) -> bool:
    before = previous.get((rank, record.group, record.seq - 1))
    if before is None or before.op not in ("all_reduce", "broadcast", "all_gather", "all_gather_into_tensor"):
        return False
    elements = sum(prod(shape) for shape in before.shapes)
    return 0 < elements <= SIZE_EXCHANGE_MAX_ELEMENTS * max(1, len(before.shapes))


def _shape_text(sig: tuple) -> str:
    return ", ".join("x".join(map(str, s)) or "scalar" for s in sig) or "no tensor"


def _steps(steps: set) -> str:
    ordered = sorted(steps)
    return ", ".join(map(str, ordered[:5])) + (", …" if len(ordered) > 5 else "")
