"""DDP303: ranks get different numbers of batches per epoch (a hang at epoch end)."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.probe.analysis import frameworks
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.core.registry import Skipped, check

from ddpdoctor.probe.analysis.loaders import batch_sampler_fix, loader_epochs, loader_name, loader_site
from ddpdoctor.probe.words.wording import counted, location, rank_list, verb


@check("DDP303", "Ranks get different numbers of batches", Severity.ERROR)
def batch_counts(run: RunModel) -> list[Problem] | Skipped:
    """
    What it detects:
        For each DataLoader and epoch, the number of batches each rank will get: len(loader)
        when the loader has a length, else (IterableDataset) the batches a rank actually saw
        when its epoch ended by itself (not cut short by the probe). Any difference across
        ranks is reported, once per DataLoader, at the first epoch where it shows.
        Different dataset lengths alone are not reported: a DistributedSampler with
        drop_last=False pads every rank to the same count.

    Why it hurts:
        Every training step ends in DDP's gradient all-reduce, which needs every rank. The rank
        with fewer batches leaves the loop early; the others enter the next all-reduce and
        wait for it forever (until the process-group timeout: 30 minutes on gloo, 10 on NCCL),
        or the early rank hangs in whatever collective comes after the loop.

    How to fix:
        Give every rank the same number of batches: a DistributedSampler (it pads), or
        drop_last=True on both sampler and loader when sharding by hand. With a custom
        batch_sampler the fix is in it (the finding names it): make it yield the same number of
        batches on every rank. For inputs that are
        uneven by nature, let DDP shadow the missing steps:

            sampler = DistributedSampler(dataset, drop_last=True)
            loader = DataLoader(dataset, batch_size=64, sampler=sampler, drop_last=True)
            # or, for uneven inputs:
            with model.join():
                for x, y in loader:
                    ...
    """
    views = loader_epochs(run)
    counts_known = False
    problems = []
    for loader_id, by_rank in sorted(views.items()):
        epochs = sorted({e for epochs in by_rank.values() for e in epochs})
        for epoch in epochs:
            counts, how = _counts(by_rank, epoch)
            if counts:
                counts_known = True
            if len(counts) < 2 or len(set(counts.values())) < 2:
                continue
            problems.append(_problem(loader_id, by_rank, epoch, counts, how))
            break
    if not counts_known:
        return Skipped("no DataLoader with a known length was iterated")
    if len(run.ranks) < 2:
        return Skipped("a single rank left telemetry: nothing to compare")
    return [frameworks.worded("DDP303", p, run) for p in problems]


def _counts(by_rank: dict, epoch: int) -> tuple[dict[int, int], str]:
    """rank -> batches this epoch, and how they were known ("len(loader)" or "batches seen")."""
    lengths = {}
    for rank, epochs in by_rank.items():
        entry = epochs.get(epoch)
        if entry is not None and entry.loader is not None and entry.loader.batches is not None:
            lengths[rank] = entry.loader.batches
    if lengths:
        return lengths, "len(loader)"
    seen = {}
    for rank, epochs in by_rank.items():
        entry = epochs.get(epoch)
        if entry is not None and entry.end is not None and not entry.end.truncated:
            seen[rank] = entry.end.batches_seen
    return seen, "batches seen to the end of the epoch"


def _problem(loader_id: int, by_rank: dict, epoch: int, counts: dict[int, int], how: str) -> Problem:
    name = loader_name(loader_id, by_rank)
    most = max(counts.values())
    short = sorted(r for r, n in counts.items() if n < most)
    by_count: dict[int, list[int]] = {}
    for rank, n in sorted(counts.items()):
        by_count.setdefault(n, []).append(rank)
    listing = ", ".join(f"{rank_list(ranks)} → {n}" for n, ranks in sorted(by_count.items(), reverse=True))
    fewest = min(counts.values())
    gap = most - fewest
    full = sorted(r for r, n in counts.items() if n == most)
    message = (f"{name} gives the ranks different numbers of batches in epoch {epoch} "
               f"({how}): {listing}; {rank_list(short)} will run out "
               f"{counted(gap, 'batch', 'batches')} early and {rank_list(full)} "
               f"{verb(full, 'hangs', 'hang')} in the next all-reduce at epoch end")
    datasets = {}
    for rank, epochs in by_rank.items():
        entry = epochs.get(epoch)
        if entry is not None and entry.loader is not None:
            datasets[str(rank)] = entry.loader.dataset_len
    custom = next((entry.loader.batch_sampler for epochs in by_rank.values()
                   for entry in [epochs.get(epoch)] if entry is not None and entry.loader is not None
                   and entry.loader.batch_sampler), "")
    return Problem(
        message=message,
        hint=(batch_sampler_fix(custom, short) if custom else
              "give every rank the same number of batches: use a DistributedSampler (it pads), or "
              "drop_last=True when sharding by hand; for uneven inputs wrap the loop in "
              "`with model.join():`"),
        ranks=short,
        location=location(loader_site(by_rank)),
        evidence={"loader_id": loader_id, "epoch": epoch, "batches": {str(r): n for r, n in counts.items()},
                  "counted_by": how, "dataset_len": datasets},
    )
