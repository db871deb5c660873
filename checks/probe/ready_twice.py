"""DDP406: a parameter marked ready twice in one backward (reentrant checkpointing, a shared parameter)."""

from __future__ import annotations

import re
from typing import Optional

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.analysis.rank_state import READY_TWICE
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.probe.words.wording import at, counted, location, name_list, natural_sorted, rank_list

# "Parameter at index 5 with name blocks.2.fc.bias has been marked as ready twice" (torch 2.x);
# without "with name ..." where torch did not know the names.
_PARAM = re.compile(r"Parameter at index (\d+)(?: with name (\S+))? has been marked as ready twice")


@check("DDP406", "A parameter is marked ready twice in one backward", Severity.ERROR)
def ready_twice(run: RunModel) -> list[Problem] | Skipped:
    """
    What it detects:
        A parameter of a DistributedDataParallel model whose gradient arrives twice in one
        backward pass, so that DDP marks it "ready" twice. Two ways to see it:

        - DDP raised "Expected to mark a variable ready only once" (with
          find_unused_parameters=True this happens at the first backward). The finding names
          the parameter(s) (from torch's message, or the DDP model's parameter list when torch
          gave only an index), the ranks, the backward's line, and the cause the probe saw.
        - With find_unused_parameters=False and static_graph=False, DDP checks for this only
          under TORCH_DISTRIBUTED_DEBUG=DETAIL, which the probe sets: the probe's run raises,
          while a plain run trains on: DDP counts the parameter ready twice, all-reduces its
          bucket before the iteration's last gradient arrived and never says so (measured on
          torch 2.13: the averaged gradients differ from single-process training by as much as
          the gradients themselves). The finding says so. Where the check is off, the probe's
          own gradient hooks still see a gradient accumulated twice in one backward and report
          it without a crash.

        The usual cause is activation checkpointing with the reentrant variant
        (`torch.utils.checkpoint.checkpoint(..., use_reentrant=True)`, which was torch's
        default, and Hugging Face's `gradient_checkpointing_enable()` without kwargs): each
        checkpointed segment replays its forward and runs a backward of its own inside the
        outer one, so a parameter that takes part in two segments (a shared or tied module)
        or in a segment and outside it gets one gradient per segment; with
        find_unused_parameters=True even a parameter used once trips DDP's bookkeeping. The
        probe records every checkpoint call site and says which variant ran there. The same
        error comes from a parameter used outside the DDP forward (`model.module.w` in the
        loss) or a second backward through the same forward.

        The crash is reported here and not again as DDP504.

    Why it hurts:
        With find_unused_parameters=True the job dies at its first backward. Without it, the
        job trains on gradients that were not averaged correctly across ranks, with no error
        and no warning: a run that "works" but converges worse or diverges.

    How to fix:
        Use the non-reentrant checkpoint: it runs inside the one backward, so every parameter
        gets one gradient hook per iteration:

            x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})  # HF

        or, when the model runs the same graph every iteration, tell DDP so:

            model = DDP(model, static_graph=True)

        and drop find_unused_parameters=True unless some parameters really go unused.
        Parameters used outside the forward belong inside the module's forward.
    """
    infos = {i.ddp_id: i for rank_run in run.ranks.values() for i in rank_run.of(tm.DDPInfo)}
    crashes = {rank: rank_run.crash for rank, rank_run in run.ranks.items()
               if rank_run.crash is not None and READY_TWICE in (rank_run.crash.message or "")}
    if not infos and not crashes:
        return Skipped("no DistributedDataParallel model was seen")
    checkpoints = [c for rank_run in run.ranks.values() for c in rank_run.of(tm.ActivationCheckpoint)]
    problems = []
    if crashes:
        # The crash is the same double marking the gradient hooks saw: one finding.
        return [_crashed(run, crashes, infos, checkpoints)]
    for ddp_id, info in sorted(infos.items()):
        if info.find_unused_parameters or info.static_graph:
            continue  # static_graph handles double marking; find_unused_parameters raises (above)
        problem = _silent(run, ddp_id, info, checkpoints, set(crashes))
        if problem is not None:
            problems.append(problem)
    return problems


def _names_from(message: str, info: Optional[tm.DDPInfo]) -> list[tuple[int, str]]:
    found = []
    for index, name in _PARAM.findall(message or ""):
        number = int(index)
        if not name and info is not None and 0 <= number < len(info.param_names):
            name = info.param_names[number]
        found.append((number, name))
    return found


def _cause(checkpoints: list[tm.ActivationCheckpoint]) -> tuple[str, Optional[tm.Site]]:
    """What the probe saw that explains the double marking, and where to fix it."""
    reentrant: dict[tuple, tm.ActivationCheckpoint] = {}
    for record in checkpoints:
        if record.reentrant:
            key = (record.site.file, record.site.line) if record.site else (None, record.function)
            reentrant.setdefault(key, record)
    if not reentrant:
        return ("no reentrant activation checkpoint was seen, so a parameter took part in two "
                "backward passes of one iteration: used outside the DDP forward, or a second "
                "backward through the same forward", None)
    first = next(iter(reentrant.values()))
    default = " (torch's default: use_reentrant not passed)" if not first.explicit else ""
    more = f" and {counted(len(reentrant) - 1, 'other site')}" if len(reentrant) > 1 else ""
    return (f"the model runs reentrant activation checkpointing: torch.utils.checkpoint with "
            f"use_reentrant=True{default} over {first.function}{at(first.site)}{more}; each "
            "checkpointed segment runs a backward of its own, one gradient hook per segment",
            first.site)


def _crashed(run: RunModel, crashes: dict[int, tm.Crash], infos: dict[int, tm.DDPInfo],
             checkpoints: list[tm.ActivationCheckpoint]) -> Problem:
    ranks = sorted(crashes)
    first = crashes[ranks[0]]
    info = next((i for i in infos.values() if i.find_unused_parameters), None) or \
        (next(iter(infos.values())) if infos else None)
    params: dict[str, Optional[int]] = {}
    for crash in crashes.values():
        for index, name in _names_from(crash.message, info):
            params.setdefault(name or f"index {index}", index)
    for rank in ranks:  # torch names the first; the gradient hooks may have seen more
        for record in run.ranks[rank].of(tm.Grads):
            for name in record.twice or ():
                params.setdefault(name, None)
    names = natural_sorted(params)
    steps = sorted({c.step for c in crashes.values()})
    cause, fix_site = _cause(checkpoints)
    model = "the DDP model" + (f" built at {info.site}" if info and info.site else "")
    flags = ""
    if info is not None:
        flags = (f" with find_unused_parameters={info.find_unused_parameters}, "
                 f"static_graph={info.static_graph}")
    what = (f"{counted(len(names), 'parameter')} ({name_list(names)})" if names
            else "a parameter (torch did not name it)")
    message = (f"{rank_list(ranks)} raised \"Expected to mark a variable ready only once\" in the "
               f"backward{at(first.site)} (step {steps[0] if len(steps) == 1 else steps}): DDP saw "
               f"{what} of {model}{flags} marked ready twice in one backward; {cause}")
    if info is not None and not info.find_unused_parameters and not info.static_graph:
        # DDP checks this only under TORCH_DISTRIBUTED_DEBUG=DETAIL, which the probe sets.
        message += ("; without the probe (TORCH_DISTRIBUTED_DEBUG unset) DDP raises nothing here: "
                    "it all-reduces the parameter's bucket early and trains on wrongly averaged "
                    "gradients")
    evidence = {
        "parameters": names,
        "indices": {n: i for n, i in params.items() if i is not None},
        "crashed_ranks": ranks,
        "step": first.step,
        "find_unused_parameters": info.find_unused_parameters if info else None,
        "static_graph": info.static_graph if info else None,
        "reentrant_checkpoints": _sites(checkpoints, True),
        "non_reentrant_checkpoints": _sites(checkpoints, False),
        "message": first.message[:2000],
    }
    return Problem(message=message, hint=_hint(info, bool(_sites(checkpoints, True))), ranks=ranks,
                   location=location(fix_site or first.site), evidence=evidence)


def _silent(run: RunModel, ddp_id: int, info: tm.DDPInfo, checkpoints: list[tm.ActivationCheckpoint],
            crashed: set[int]) -> Optional[Problem]:
    twice: dict[int, dict[str, int]] = {}
    iterations: dict[int, set] = {}
    for rank, rank_run in sorted(run.ranks.items()):
        for record in rank_run.of(tm.Grads):
            if record.ddp_id != ddp_id:
                continue
            iterations.setdefault(rank, set()).add(record.iteration)
            for name in set(record.twice or ()):
                twice.setdefault(rank, {})[name] = twice.setdefault(rank, {}).get(name, 0) + 1
    if not twice:
        return None
    names = natural_sorted({n for by_name in twice.values() for n in by_name})
    ranks = sorted(twice)
    counts = {r: f"{max(v.values())}/{len(iterations.get(r, ()))}" for r, v in twice.items()}
    seen = (f"in {next(iter(counts.values()))} backward passes" if len(set(counts.values())) == 1
            else "backward passes " + ", ".join(f"rank {r}: {c}" for r, c in counts.items()))
    cause, fix_site = _cause(checkpoints)
    model = "the DDP model" + (f" built at {info.site}" if info.site else "")
    message = (f"{counted(len(names), 'parameter')} of {model} received two gradients in one "
               f"backward ({name_list(names)}; on {rank_list(ranks)}, {seen}) while "
               "find_unused_parameters=False and static_graph=False: DDP marks them ready twice "
               "without an error and all-reduces their bucket before the iteration's last gradient "
               f"arrives, so the averaged gradients are wrong; {cause}")
    evidence = {
        "parameters": names,
        "twice_per_rank": {str(r): natural_sorted(v) for r, v in twice.items()},
        "backward_passes": {str(r): c for r, c in counts.items()},
        "find_unused_parameters": False,
        "static_graph": False,
        "reentrant_checkpoints": _sites(checkpoints, True),
        "non_reentrant_checkpoints": _sites(checkpoints, False),
    }
    return Problem(message=message, hint=_hint(info, bool(_sites(checkpoints, True))), ranks=ranks,
                   location=location(fix_site or info.site), evidence=evidence)


def _sites(checkpoints: list[tm.ActivationCheckpoint], reentrant: bool) -> list[str]:
    return sorted({f"{c.site}" if c.site else c.function for c in checkpoints if c.reentrant == reentrant})


def _hint(info: Optional[tm.DDPInfo], reentrant_seen: bool) -> str:
    parts = []
    if reentrant_seen:
        parts.append("pass use_reentrant=False to torch.utils.checkpoint.checkpoint (Hugging Face: "
                     "gradient_checkpointing_enable(gradient_checkpointing_kwargs={\"use_reentrant\": "
                     "False})): the non-reentrant variant fires one gradient hook per parameter and "
                     "iteration")
    else:
        parts.append("use every parameter inside the DDP model's forward, once per backward")
    parts.append("or, if the model runs the same graph every iteration, build DDP(model, "
                 "static_graph=True)")
    if info is not None and info.find_unused_parameters:
        parts.append("and drop find_unused_parameters=True unless some parameters really go unused")
    return "; ".join(parts)
