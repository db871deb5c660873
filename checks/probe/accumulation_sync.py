"""DDP403: gradient accumulation all-reduces on every micro-step (no `no_sync`)."""

from __future__ import annotations

from collections import Counter

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.analysis import frameworks
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.core.registry import Skipped, check

from ddpdoctor.probe.words.wording import location, rank_list


@check("DDP403", "Gradient accumulation all-reduces every micro-step", Severity.WARNING)
def accumulation_sync(run: RunModel) -> list[Problem] | Skipped:
    """
    What it detects:
        Optimizer steps that ran more than one backward pass through a DDP model (gradient
        accumulation) and completed more than one full gradient all-reduce (every bucket,
        up to the last) in doing so. With `no_sync()` around all micro-batches but the last,
        an accumulated step all-reduces exactly once; that is not reported.

    Why it hurts:
        The all-reduces of the early micro-batches are wasted: the gradients keep
        accumulating locally and only the final sum matters. With k micro-batches per step
        the job moves k times the gradient bytes it needs, and on a slow network that is most
        of the step time.

    How to fix:
        Skip DDP's synchronisation on every micro-batch but the last:

            for i, (x, y) in enumerate(loader):
                last = (i + 1) % accum_steps == 0
                ctx = contextlib.nullcontext() if last else model.no_sync()
                with ctx:
                    loss = criterion(model(x), y) / accum_steps
                    loss.backward()
                if last:
                    optimizer.step()
                    optimizer.zero_grad()
    """
    steps = {rank: rank_run.of(tm.Step) for rank, rank_run in run.ranks.items()}
    if not any(steps.values()):
        return Skipped("no optimizer step was recorded")
    wasteful = {rank: [s for s in records if s.backward_iterations > 1 and s.allreduce_rounds > 1]
                for rank, records in steps.items()}
    wasteful = {rank: records for rank, records in wasteful.items() if records}
    if not wasteful:
        return []
    ranks = sorted(wasteful)
    offending = [s for records in wasteful.values() for s in records]
    accumulated = [s for records in steps.values() for s in records if s.backward_iterations > 1]
    backwards = sum(s.backward_iterations for s in offending)
    rounds = sum(s.allreduce_rounds for s in offending)
    micro = round(backwards / len(offending), 1)
    per_step = round(rounds / len(offending), 1)
    counts = {r: (len(wasteful[r]), sum(1 for s in steps[r] if s.backward_iterations > 1)) for r in ranks}
    if len(set(counts.values())) == 1:
        bad, total = next(iter(counts.values()))
        which = f"{bad}/{total} accumulated optimizer steps on {'each of ' if len(ranks) > 1 else ''}"
        which += rank_list(ranks)
    else:
        which = "accumulated optimizer steps on " + ", ".join(
            f"rank {r} ({bad}/{total})" for r, (bad, total) in counts.items())
    message = (f"{which} ran {_num(micro)} backward passes each and all-reduced the gradients "
               f"{_num(per_step)} times per step where once is needed "
               f"({per_step:.1f}x the gradient traffic)")
    site = _backward_site(run, wasteful)
    return [frameworks.worded("DDP403", Problem(
        message=message,
        hint=("wrap every micro-batch but the last in `with model.no_sync():` so DDP all-reduces "
              "once per optimizer step"),
        ranks=ranks,
        location=location(site),
        evidence={"steps": len(offending), "accumulated_steps": len(accumulated),
                  "backward_per_step": micro, "allreduce_rounds_per_step": per_step,
                  "wasted_allreduce_rounds": rounds - len(offending),
                  "backward_site": str(site) if site else None},
    ), run)]


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _backward_site(run: RunModel, wasteful: dict[int, list[tm.Step]]):
    """Where backward() was called in the offending steps: the most common site of their DDP
    gradient all-reduces; else where the DDP model was built."""
    sites: Counter = Counter()
    for rank, records in wasteful.items():
        done_before = {s.step - 1 for s in records}  # `step` counts steps completed
        for record in run.ranks[rank].of(tm.Collective):
            if record.op == "ddp_bucket_allreduce" and record.step in done_before and record.site:
                sites[(record.site.file, record.site.line, record.site.func)] += 1
    if sites:
        file, line, func = sites.most_common(1)[0][0]
        return tm.Site(file, line, func)
    info = next((i for rr in run.ranks.values() for i in rr.of(tm.DDPInfo) if i.site), None)
    return info.site if info else None
