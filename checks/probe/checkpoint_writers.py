"""DDP701: several ranks wrote the same checkpoint path."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.analysis import frameworks
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.core.registry import Skipped, check

from ddpdoctor.probe.words.wording import location, rank_list, steps_text


@check("DDP701", "Several ranks write the same checkpoint", Severity.ERROR)
def checkpoint_writers(run: RunModel) -> list[Problem] | Skipped:
    """
    What it detects:
        torch.save calls from more than one rank to the same path on the same host (one
        finding per call site, naming the first path and counting the others).

    Why it hurts:
        The ranks write the same file at the same time: the checkpoint can end up torn or
        truncated (a mix of writers), a reader can load it half-written, and every rank
        spends the I/O time for one useful copy. On a shared filesystem the ranks of every
        node collide, not just the local ones.

    How to fix:
        Save from one rank, and make the others wait until the file is complete:

            if dist.get_rank() == 0:
                torch.save(model.module.state_dict(), path)
            dist.barrier()   # nobody reads or overwrites it before it is written
    """
    if not any(rank_run.records for rank_run in run.ranks.values()):
        return Skipped("no rank recorded telemetry")
    writers: dict[tuple[str, str], dict[int, list[tm.Save]]] = {}
    for rank, rank_run in sorted(run.ranks.items()):
        for save in rank_run.of(tm.Save):
            writers.setdefault((save.host, save.path), {}).setdefault(rank, []).append(save)
    by_site: dict[object, list[tuple[tuple[str, str], dict[int, list[tm.Save]]]]] = {}
    for key, by_rank in writers.items():
        if len(by_rank) < 2:
            continue
        first = next(iter(by_rank.values()))[0]
        site_key = (first.site.file, first.site.line) if first.site else None
        by_site.setdefault(site_key, []).append((key, by_rank))
    problems = []
    for collisions in by_site.values():
        (host, path), by_rank = collisions[0]
        site = next(iter(by_rank.values()))[0].site
        ranks = sorted({r for _, br in collisions for r in br})
        steps = sorted({s.step for _, br in collisions for saves in br.values() for s in saves})
        saves = sum(len(v) for _, br in collisions for v in br.values())
        message = (f"{rank_list(sorted(by_rank))} all wrote {path} on {host} "
                   f"({saves} torch.save calls at {steps_text(steps)})")
        if len(collisions) > 1:
            message += f", and {len(collisions) - 1} more path(s) were written by several ranks the same way"
        problems.append(Problem(
            message=message,
            hint=("save on one rank only: `if dist.get_rank() == 0: torch.save(...)`, then "
                  "`dist.barrier()` before anyone reads it"),
            ranks=ranks,
            hosts=sorted({h for (h, _), _ in collisions}),
            location=location(site),
            evidence={"paths": [p for (_, p), _ in collisions], "host": host,
                      "writers": {p: sorted(br) for (_, p), br in collisions}, "saves": saves},
        ))
    return [frameworks.worded("DDP701", p, run) for p in problems]
