"""DDP405: parameters differ across ranks after training steps."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.core.registry import Skipped, check

from ddpdoctor.probe.words.wording import counted, location, name_list, natural_sorted, rank_list, verb


@check("DDP405", "Parameters differ across ranks", Severity.ERROR)
def parameter_sync(run: RunModel) -> list[Problem] | Skipped:
    """
    What it detects:
        At the end of the probe every rank fingerprints each trainable parameter of each DDP
        model. At the latest step that at least 2 ranks recorded, the parameters whose
        fingerprints differ are named, and the ranks are grouped by their fingerprints: the
        ranks that disagree with rank 0 (or the lowest rank that recorded) are named.

    Why it hurts:
        DDP keeps replicas identical only if every rank applies the same all-reduced gradient
        to the same starting weights. Once they drift, each rank trains a different model:
        the loss curves lie, the checkpoint from rank 0 is not what the others trained, and
        gradient averaging mixes gradients of different models. It happens when gradients
        are not synchronized (unused parameters with find_unused_parameters=False, the
        forward called on model.module, no_sync on every micro-step), or when parameters
        are changed outside autograd on some ranks.

    How to fix:
        Train only through the DDP wrapper, and keep per-rank code away from the weights:

            out = ddp_model(x)          # not ddp_model.module(x): that skips gradient sync
            loss.backward()
            optimizer.step()            # an optimizer built over ddp_model.parameters()

        Then fix what DDP401 or DDP403 report, if they do. When the ranks' steps did no
        gradient all-reduce at all, the finding says so ("in 6 steps the ranks did 0 gradient
        all-reduces") and whether the forwards went through DDP: none did (the model trained
        unwrapped), or they did and the model was cast or moved after wrapping (cast first,
        then wrap).
    """
    records: dict[int, dict[int, dict[int, tm.Params]]] = {}  # ddp_id -> step -> rank -> Params
    for rank, rank_run in run.ranks.items():
        for params in rank_run.of(tm.Params):
            records.setdefault(params.ddp_id, {}).setdefault(params.step, {})[rank] = params
    problems = []
    judged = False
    for ddp_id, by_step in sorted(records.items()):
        steps = [s for s, by_rank in by_step.items() if len(by_rank) >= 2]
        if not steps:
            continue
        judged = True
        step = max(steps)
        problem = _compare(run, ddp_id, step, by_step[step])
        if problem is not None:
            problems.append(problem)
    if not judged:
        return Skipped("fewer than 2 ranks recorded parameter fingerprints at the same step")
    return problems


def _compare(run: RunModel, ddp_id: int, step: int, by_rank: dict[int, tm.Params]) -> Problem | None:
    names = natural_sorted({n for p in by_rank.values() for n in p.fingerprints})
    differing = [n for n in names if len({p.fingerprints.get(n) for p in by_rank.values()}) > 1]
    if not differing:
        return None
    groups: dict[tuple, list[int]] = {}
    for rank in sorted(by_rank):
        key = tuple(by_rank[rank].fingerprints.get(n) for n in differing)
        groups.setdefault(key, []).append(rank)
    reference = min(by_rank)
    reference_group = next(ranks for ranks in groups.values() if reference in ranks)
    disagree = sorted(r for r in by_rank if r not in reference_group)
    missing = {str(r): [n for n in names if n not in p.fingerprints] for r, p in by_rank.items()
               if any(n not in p.fingerprints for n in names)}
    info = next((i for rr in run.ranks.values() for i in rr.of(tm.DDPInfo) if i.ddp_id == ddp_id), None)
    model = "the DDP model" + (f" built at {info.site}" if info and info.site else "")
    listing = "; ".join(rank_list(ranks) for ranks in groups.values())
    message = (f"after {counted(step, 'step')}, {len(differing)} of {len(names)} parameters of {model} "
               f"differ across ranks: {name_list(differing)}; {rank_list(disagree)} "
               f"{verb(disagree, 'disagrees', 'disagree')} with rank {reference}")
    if len(groups) > 2:
        message += f" (fingerprint groups: {listing})"
    counts = _step_counts(run)
    hint = ("train only through the DDP wrapper (ddp_model(x), never ddp_model.module(x)) with an "
            "optimizer over its parameters; fix unused parameters (DDP401) and do not change "
            "weights on some ranks only")
    if counts is not None and counts["steps"] and not counts["allreduces"]:
        # The evidence where it is: DDP never all-reduced a gradient, and whether the forwards
        # went through it says why.
        message += (f"; in {counted(counts['steps'], 'step')} the ranks did 0 gradient all-reduces "
                    f"({counted(counts['forwards'], 'forward')} and "
                    f"{counted(counts['backwards'], 'backward')} through the DDP model)")
        hint = _no_allreduce_hint(counts)
    return Problem(
        message=message,
        hint=hint,
        ranks=disagree,
        location=location(info.site if info else None),
        evidence={"ddp_id": ddp_id, "step": step, "differing": differing,
                  "groups": [ranks for ranks in groups.values()], "reference_rank": reference,
                  "missing": missing, "compared_ranks": sorted(by_rank), "step_counts": counts},
    )


def _step_counts(run: RunModel) -> dict | None:
    """What the ranks' training steps did, summed over the ranks' Step records: optimizer steps
    (the most any rank did), DDP training forwards, DDP backwards and gradient all-reduce rounds
    (every rank's). None without Step records."""
    steps = [s for rank_run in run.ranks.values() for s in rank_run.of(tm.Step)]
    if not steps:
        return None
    return {"steps": max(rank_run.steps for rank_run in run.ranks.values()),
            "forwards": sum(s.forwards for s in steps),
            "backwards": sum(s.backward_iterations for s in steps),
            "allreduces": sum(s.allreduce_rounds for s in steps)}


def _no_allreduce_hint(counts: dict) -> str:
    if not counts["forwards"]:
        return ("no forward went through the DDP wrapper, so DDP never synchronized a gradient: "
                "call ddp_model(x), not ddp_model.module(x) or the model it wraps, and build the "
                "optimizer over ddp_model.parameters()")
    return ("the forwards went through DDP but no gradient reached its all-reduce: the parameters "
            "DDP registered are not the ones trained, typically after a cast or move of the model "
            "once wrapped (model.double(), .half(), .to(dtype or device) after "
            "DistributedDataParallel(...)). Cast and move the model first, then wrap it, then build "
            "the optimizer")
