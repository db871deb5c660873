"""DDP401: parameters of a DDP model received no gradient."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.analysis.rank_state import READY_TWICE
from ddpdoctor.probe.analysis import frameworks
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.core.registry import Skipped, check

from ddpdoctor.probe.words.wording import counted, location, name_list, natural_sorted, rank_list
from ddpdoctor.postmortem.causality import none_found, who, grouped, problem, when
from ddpdoctor.postmortem.evidence import Evidence

MIN_ITERATIONS_DEAD = 2  # backward passes seen before calling a parameter dead under FUP=True


@check("DDP401", "Parameters receive no gradient", Severity.ERROR, stages=("evidence",))
def unused_parameters(run: RunModel) -> list[Problem] | Skipped:
    """
    What it detects:
        After every backward pass through a DistributedDataParallel model, the probe lists the
        trainable parameters that got no gradient on that rank. The finding names them (the
        message shows the first few, the evidence all), on which ranks and in how many
        iterations, and whether the set differs across ranks (parameters used on some ranks
        only). It is reported from the recorded backward passes even when the run crashed
        right after, which is what find_unused_parameters=False does.

        - find_unused_parameters=False and any parameter without a gradient: error.
        - find_unused_parameters=True and a parameter without a gradient on every rank in every
          iteration (at least 2 iterations seen): warning, it is dead weight.
        - find_unused_parameters=True and parameters only sometimes unused: fine, that is what
          the flag is for. Not reported.

    Why it hurts:
        With find_unused_parameters=False DDP waits for a gradient from every parameter before
        it all-reduces a bucket. Iteration 1 "succeeds" without ever all-reducing, so each rank
        applies its own unsynchronized gradients; the next forward raises "Expected to have
        finished reduction in the prior iteration before starting a new one". If only some ranks
        skip a parameter, the others hang in the bucket all-reduce instead. With the flag on, a
        parameter no rank ever uses still costs memory, optimizer state and a graph traversal
        every iteration.

    How to fix:
        Make every parameter take part in the loss, or freeze it, or tell DDP:

            for p in model.aux_head.parameters():   # not used in training
                p.requires_grad_(False)
            model = DDP(model)
            # or, if the forward genuinely skips parts on some steps:
            model = DDP(model, find_unused_parameters=True)
    """
    if isinstance(run, Evidence):
        return _from_evidence(run)
    infos = [r for rank_run in run.ranks.values() for r in rank_run.of(tm.DDPInfo)]
    grads = [r for rank_run in run.ranks.values() for r in rank_run.of(tm.Grads)]
    if not infos and not grads:
        return Skipped("no DistributedDataParallel model was seen")
    if not grads:
        return Skipped("no backward pass through a DDP model was recorded")
    problems = []
    for ddp_id in sorted({g.ddp_id for g in grads}):
        usage = _usage(run, ddp_id)
        problem = _judge(usage)
        if problem is not None:
            problems.append(problem)
    return [frameworks.worded("DDP401", p, run) for p in problems]


@dataclass
class Usage:
    """Which parameters of one DDP model went without gradient, where and how often."""

    ddp_id: int
    info: Optional[tm.DDPInfo]
    iterations: dict[int, int] = field(default_factory=dict)  # rank -> backward passes seen
    unused: dict[int, dict[str, int]] = field(default_factory=dict)  # rank -> name -> times unused
    first_step: dict[str, int] = field(default_factory=dict)  # name -> first step it was unused

    @property
    def names(self) -> list[str]:
        return natural_sorted({n for by_name in self.unused.values() for n in by_name})

    def ranks_of(self, name: str) -> list[int]:
        return sorted(r for r, by_name in self.unused.items() if name in by_name)

    def never_used(self) -> list[str]:
        """Unused on every rank seen, in every iteration of each."""
        return [n for n in self.names
                if all(self.unused.get(r, {}).get(n, 0) == it for r, it in self.iterations.items())]


def _usage(run: RunModel, ddp_id: int) -> Usage:
    infos = [i for rr in run.ranks.values() for i in rr.of(tm.DDPInfo) if i.ddp_id == ddp_id]
    # One rank without the flag is enough for its unused parameters to break synchronisation.
    info = next((i for i in infos if not i.find_unused_parameters), infos[0] if infos else None)
    usage = Usage(ddp_id, info)
    for rank, rank_run in sorted(run.ranks.items()):
        seen_iterations = set()
        crash = rank_run.crash
        for record in rank_run.of(tm.Grads):
            if record.ddp_id != ddp_id or record.iteration in seen_iterations:
                continue
            if crash is not None and record.t >= crash.t and READY_TWICE in (crash.message or ""):
                continue  # a backward cut short by DDP's "marked ready twice" error (DDP406)
            seen_iterations.add(record.iteration)
            by_name = usage.unused.setdefault(rank, {})
            for name in record.unused:
                by_name[name] = by_name.get(name, 0) + 1
                usage.first_step.setdefault(name, record.step)
        if seen_iterations:
            usage.iterations[rank] = len(seen_iterations)
    usage.unused = {r: v for r, v in usage.unused.items() if v}
    return usage


def _judge(usage: Usage) -> Optional[Problem]:
    names = usage.names
    if not names:
        return None
    fup = usage.info.find_unused_parameters if usage.info else None
    ranks_seen = sorted(usage.iterations)
    per_rank = {r: natural_sorted(v) for r, v in usage.unused.items()}
    differs = len({tuple(v) for v in per_rank.values()}) > 1 or set(per_rank) != set(ranks_seen)
    model = "the DDP model" + (f" built at {usage.info.site}" if usage.info and usage.info.site else "")
    evidence = {
        "ddp_id": usage.ddp_id,
        "find_unused_parameters": fup,
        "unused": names,
        "unused_per_rank": {str(r): v for r, v in per_rank.items()},
        "iterations_per_rank": {str(r): n for r, n in usage.iterations.items()},
        "times_unused": {n: {str(r): usage.unused[r][n] for r in usage.ranks_of(n)} for n in names},
        "differs_across_ranks": differs,
    }
    if fup is True:
        dead = usage.never_used()
        if not dead or min(usage.iterations.values()) < MIN_ITERATIONS_DEAD:
            return None
        evidence["never_used"] = dead
        return Problem(
            message=(f"{counted(len(dead), 'parameter')} of {model} never received a gradient on "
                     f"any rank ({rank_list(ranks_seen)}, {_iterations(usage, ranks_seen)}): "
                     f"{name_list(dead)}; find_unused_parameters=True keeps the job running, but "
                     "they cost memory, optimizer state and an extra graph traversal every iteration"),
            hint=("if these parameters are meant to be frozen, set requires_grad=False on them "
                  "before wrapping in DDP (then find_unused_parameters=False may suffice); else "
                  "make them take part in the loss"),
            ranks=ranks_seen,
            location=location(usage.info.site if usage.info else None),
            evidence=evidence,
            severity=Severity.WARNING,
        )
    # find_unused_parameters=False (or unknown): any unused parameter breaks synchronisation.
    involved = sorted(per_rank)
    message = (f"{counted(len(names), 'parameter')} of {model} received no gradient: "
               f"{name_list(names)} (on {rank_list(involved)}, {_iterations(usage, involved)})")
    if differs:
        groups: dict[tuple, list[int]] = {}
        for rank in ranks_seen:
            groups.setdefault(tuple(per_rank.get(rank, [])), []).append(rank)
        listing = "; ".join(f"{rank_list(ranks)}: {name_list(list(key), 3) if key else 'none'}"
                            for key, ranks in groups.items())
        message += f"; the set differs across ranks ({listing})"
    if fup is False:
        message += (" while find_unused_parameters=False: the first iteration applies gradients "
                    "that were never all-reduced, the next raises \"Expected to have finished "
                    "reduction in the prior iteration\"")
        if differs:
            message += ", or the ranks that did use them hang in the gradient all-reduce"
    else:
        message += " (find_unused_parameters unknown: no DDP construction was recorded)"
    hint = ("make every parameter contribute to the loss on every rank, set requires_grad=False on "
            "the ones you do not train (before DDP(...)), or pass find_unused_parameters=True if "
            "the forward skips them on some steps")
    return Problem(message=message, hint=hint, ranks=involved,
                   location=location(usage.info.site if usage.info else None), evidence=evidence)


def _iterations(usage: Usage, ranks: list[int]) -> str:
    """"in 3/3 iterations" when every rank agrees, else per rank: "rank 0: 1/3, rank 1: 3/3"."""
    ratios = {}
    for rank in ranks:
        unused = max(usage.unused.get(rank, {}).values(), default=0)
        ratios[rank] = f"{unused}/{usage.iterations.get(rank, 0)}"
    if len(set(ratios.values())) == 1:
        return f"in {next(iter(ratios.values()))} iterations"
    return "iterations " + ", ".join(f"rank {r}: {v}" for r, v in ratios.items())


def _from_evidence(ev: Evidence) -> list[Problem] | Skipped:
    """A dead job's logs: DDP's reducer error "Expected to have finished reduction in the prior
    iteration", with the parameter names or indices it lists."""
    import re

    facts = [e for e in ev.errors if e.kind == "unused_parameters"]
    if not facts:
        return none_found(ev)
    problems = []
    for group in grouped(facts):
        text = group[0].message + "\n" + group[0].traceback
        names = re.search(r"Parameters? which did not receive grad for rank \d+: ([^\n]+)", text)
        indices = re.search(r"Parameter indices which did not receive grad for rank \d+: ([^\n]+)", text)
        found = names or indices
        listed = found.group(1).strip() if found else "(not listed: set TORCH_DISTRIBUTED_DEBUG=INFO)"
        ranks = sorted({f.rank for f in group if f.rank is not None})
        problems.append(problem(ev, group, f"{rank_list(ranks)}: DDP found parameters that received no gradient"
                                f"{when(group)}: {listed}",
                                "use every parameter in forward's output, or construct DDP with "
                                "find_unused_parameters=True (costs a graph walk per step)",
                                extra={"parameters": listed}))
    return problems
