"""DDP302: the batch order is the same every epoch (sampler.set_epoch not called)."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.core.registry import Skipped, check

from ddpdoctor.probe.analysis.loaders import (LoaderEpoch, full_passes, loader_epochs, loader_name,
                                              loader_records, loader_site, shuffles)
from ddpdoctor.probe.words.wording import location, rank_list

MIN_BATCHES = 2  # batches compared between two epochs, at the least, for the fingerprint signal


@check("DDP302", "Batch order repeats every epoch", Severity.WARNING)
def epoch_order(run: RunModel) -> list[Problem] | Skipped:
    """
    What it detects:
        A shuffling sampler that hands out the same order every epoch. It judges whole passes
        over a DataLoader, not iterators: a pass is an iterator that reached the loader's end
        (or the probe's --steps-per-epoch cut), or during which optimizer steps ran. A peek
        (`next(iter(loader))` to print the batch size, check a shape) is an iterator but not
        a pass, so it neither fires nor hides the bug. Two signals, per DataLoader and rank:

        - a DistributedSampler with shuffle=True whose `epoch` attribute was the same when two
          consecutive passes began: sampler.set_epoch(epoch) is never called, called with a
          constant, or called only after the epoch's loop (then the first two passes share an
          order);
        - backup, for any shuffling sampler (shuffle=True, or a RandomSampler): the sequence of
          batch fingerprints of pass p equals that of pass p-1 over the batches seen (at
          least 2, holding at least 2 different batches, so a dataset of identical samples
          proves nothing).

        A DataLoader built anew every epoch (in the epoch loop, or inside a train_one_epoch
        function) is one DataLoader here: each new one iterated where the one before was, over
        the same kind of dataset, after that one's last use, is its next pass. Each has a new
        sampler, so only the fingerprints judge it (a sampler seeded with the epoch number
        starts at epoch 0 every time, and shuffles anew).

        A sampler that does not shuffle (shuffle=False, SequentialSampler) repeats its order by
        design: not reported. The check needs two passes over one DataLoader; the probe cuts
        epochs short with --steps-per-epoch so that it sees several.

    Why it hurts:
        DistributedSampler seeds its shuffle with seed + epoch. Without set_epoch every epoch
        replays epoch 0's permutation: the model sees the same batches in the same order each
        epoch, which hurts convergence and generalisation, and the shuffle=True in the code is a
        silent no-op.

    How to fix:
        Call set_epoch on the sampler at the start of every epoch, on every rank:

            sampler = DistributedSampler(dataset, shuffle=True)
            loader = DataLoader(dataset, batch_size=64, sampler=sampler)
            for epoch in range(epochs):
                sampler.set_epoch(epoch)
                for x, y in loader:
                    ...
    """
    views = loader_epochs(run)
    if not views:
        return Skipped("no DataLoader was iterated")
    if not any(len(epochs) >= 2 for by_rank in views.values() for epochs in by_rank.values()):
        return Skipped("the probe saw one epoch; raise --max-steps or lower --steps-per-epoch")
    if not any(len(full_passes(epochs)) >= 2 for by_rank in views.values() for epochs in by_rank.values()):
        return Skipped("the probe saw one full pass over each DataLoader (the other iterators were "
                       "peeks); raise --max-steps or lower --steps-per-epoch")
    problems = []
    for loader_id, by_rank in sorted(views.items()):
        stuck: dict[int, list[tuple[int, int]]] = {}  # rank -> (pass, sampler epoch) repeated
        replayed: dict[int, list[tuple[int, int]]] = {}  # rank -> (pass, batches compared)
        passes: dict[int, list[LoaderEpoch]] = {}
        for rank, epochs in sorted(by_rank.items()):
            passes[rank] = full_passes(epochs)
            for number, (before, after) in enumerate(zip(passes[rank], passes[rank][1:]), start=1):
                # The sampler's epoch is evidence only for one sampler: a DataLoader built anew
                # each epoch has a new one (seeded with the epoch, it may start at 0 each time).
                if before.loader_id == after.loader_id and _sampler_epoch_repeated(before, after):
                    stuck.setdefault(rank, []).append((number, after.loader.sampler_epoch))
                    continue
                compared = _replayed(before, after)
                if compared:
                    replayed.setdefault(rank, []).append((number, compared))
        if stuck or replayed:
            problems.append(_problem(loader_id, by_rank, stuck, replayed, passes))
    return problems


def _sampler_epoch_repeated(before: LoaderEpoch, after: LoaderEpoch) -> bool:
    loaders = (before.loader, after.loader)
    if any(l is None or not l.distributed_sampler or l.shuffle is not True for l in loaders):
        return False
    if before.loader.sampler_epoch is None or after.loader.sampler_epoch is None:
        return False
    return before.loader.sampler_epoch == after.loader.sampler_epoch


def _replayed(before: LoaderEpoch, after: LoaderEpoch) -> int:
    """Batches compared when epoch `after` replays `before` batch for batch, else 0."""
    loader = after.loader or before.loader
    if loader is None or not shuffles(loader):
        return 0
    first = [b.fingerprint for b in before.batches]
    second = [b.fingerprint for b in after.batches]
    n = min(len(first), len(second))
    if n < MIN_BATCHES or first[:n] != second[:n] or len(set(first[:n])) < 2:
        return 0
    # Positions must line up too: a replay of the first n batches, not a lucky coincidence.
    if [b.index for b in before.batches[:n]] != [b.index for b in after.batches[:n]]:
        return 0
    return n


def _how_set_epoch_failed(stuck: dict, passes: dict) -> tuple[str, str]:
    """("never" | "constant" | "late", the words for it) from the sampler epochs of every pass."""
    values = {r: [p.loader.sampler_epoch for p in passes[r] if p.loader is not None] for r in stuck}
    calls = [p.loader.set_epoch_calls for r in stuck for p in passes[r]
             if p.loader is not None and p.loader.set_epoch_calls is not None]
    changes = any(len(set(v)) > 1 for v in values.values())
    if changes:
        return "late", ("sampler.set_epoch(epoch) runs too late (after the epoch's loop?), so two "
                        "passes share one order")
    value = next(iter(stuck.values()))[0][1]
    if calls and max(calls) > 0:
        return "constant", (f"sampler.set_epoch() is called, but always with {value}, so every "
                            "epoch replays the same order")
    return "never", "sampler.set_epoch() is never called, so every epoch replays the same order"


def _problem(loader_id: int, by_rank: dict, stuck: dict, replayed: dict, passes: dict) -> Problem:
    name = loader_name(loader_id, by_rank)
    loader = loader_records(by_rank)[0] if loader_records(by_rank) else None
    sampler = loader.sampler if loader else "its sampler"
    ranks = sorted(set(stuck) | set(replayed))
    parts = []
    how = None
    if stuck:
        stuck_ranks = sorted(stuck)
        epochs = sorted({e for items in stuck.values() for e, _ in items})
        value = next(iter(stuck.values()))[0][1]
        how, words = _how_set_epoch_failed(stuck, passes)
        parts.append(f"{name} uses a shuffling {sampler} whose epoch stayed {value} at the start of "
                     f"epoch{'s' if len(epochs) > 1 else ''} {', '.join(map(str, epochs))} (full passes over "
                     f"it, from 0; peeks not counted) on {rank_list(stuck_ranks)}: {words}")
    if replayed:
        only = {r: v for r, v in replayed.items() if r not in stuck}
        if only:
            epochs = sorted({e for items in only.values() for e, _ in items})
            fewest = min(n for items in only.values() for _, n in items)
            parts.append(f"{name} gave {rank_list(sorted(only))} the same batches in the same order "
                         f"in epoch{'s' if len(epochs) > 1 else ''} {', '.join(map(str, epochs))} as "
                         f"in the epoch before ({fewest} batches compared), although its {sampler} "
                         "is meant to shuffle")
    if how == "constant":
        hint = ("pass the epoch number: sampler.set_epoch(epoch) at the start of every epoch, on "
                "every rank, before iterating the DataLoader")
    elif how == "late":
        hint = ("move sampler.set_epoch(epoch) before the epoch's loop over the DataLoader, on "
                "every rank")
    elif stuck or (loader is not None and loader.distributed_sampler):
        hint = ("call sampler.set_epoch(epoch) at the start of every epoch, on every rank, before "
                "iterating the DataLoader")
    else:
        hint = ("do not re-seed the sampler's generator (or rebuild the DataLoader with a fixed "
                "seed) every epoch: create it once, or seed it with the epoch number")
    return Problem(
        message="; ".join(parts),
        hint=hint,
        ranks=ranks,
        location=location(loader_site(by_rank)),
        evidence={
            "loader_id": loader_id,
            "sampler": sampler,
            "set_epoch": how,
            "passes": {str(r): len(v) for r, v in passes.items()},
            "sampler_epoch_repeated": {str(r): [e for e, _ in v] for r, v in stuck.items()},
            "order_replayed": {str(r): [{"epoch": e, "batches": n} for e, n in v]
                               for r, v in replayed.items()},
        },
    )
