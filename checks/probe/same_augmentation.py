"""DDP305: every rank draws the same random augmentation for different samples."""

from __future__ import annotations

from typing import Optional

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.analysis.loaders import LoaderEpoch, LoaderViews, loader_epochs, loader_name, loader_site
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.probe.words.wording import location, rank_list, ranges

GENERATORS = ("torch", "numpy", "random")  # as inrank/worker_seeds.py names them


@check("DDP305", "Ranks draw the same random augmentation", Severity.WARNING)
def same_augmentation(run: RunModel) -> list[Problem] | Skipped:
    """
    What it detects:
        Ranks that read different samples but draw the same random numbers for them. Each
        DataLoader worker's random state (torch's, numpy's and `random`'s generators) is hashed
        when the worker starts, after torch seeded it and the script's worker_init_fn ran, and
        again after its first batch; with num_workers=0, the rank's own generators before and
        after the first batch of each epoch. A generator the fetch moved is one the dataset's
        augmentation draws from; when it was in the same state on two ranks before and after
        that batch (the same worker id, the same epoch) while their samples differ, those ranks
        drew the same crops, flips and noise. Ranks that read the same samples are DDP301's.

    Why it hurts:
        Nothing fails and the loss goes down, but the k-th sample of every rank gets the same
        augmentation: with 8 ranks the model sees 1/8 of the augmentation variety it was meant
        to, which quietly costs accuracy. It comes from seeding every rank alike: worker seeds
        derive from the rank's torch generator (or the loader's `generator`), and a
        worker_init_fn that seeds numpy / `random` from one global seed and the worker id alone
        repeats them on every rank.

    How to fix:
        Put the rank into every seed: the rank's own generator, and any seed a worker_init_fn
        sets (or derive those from torch's per-worker seed, which then differs by rank):

            torch.manual_seed(seed + rank)            # the workers' base seed differs by rank

            def seed_worker(worker_id):
                worker_seed = torch.initial_seed() % 2**32   # differs by rank and worker
                numpy.random.seed(worker_seed)
                random.seed(worker_seed)

        or, with a fixed global seed, `np.random.seed(seed + rank * num_workers + worker_id)`.
    """
    if run.world_size < 2:
        return Skipped("a single rank: nothing to compare")
    seeds = {rank: r.of(tm.WorkerSeed) for rank, r in run.ranks.items()}
    if not any(seeds.values()):
        return Skipped("no DataLoader fetched a batch with its random state recorded")
    views = loader_epochs(run)
    hits: dict[int, list[tuple[int, int, tuple[int, ...], frozenset]]] = {}
    for (shared, number, worker), by_rank in sorted(_slots(views, seeds).items()):
        for ranks, generators in _same_draws(by_rank):
            ranks = _reading_different_samples(views[shared], number, ranks)
            if len(ranks) >= 2:
                hits.setdefault(shared, []).append((number, worker, ranks, generators))
    return [_problem(shared, views[shared], found, seeds) for shared, found in sorted(hits.items())]


def _slots(views: LoaderViews, seeds: dict[int, list[tm.WorkerSeed]]) -> dict[tuple, dict[int, tm.WorkerSeed]]:
    """(loader as the ranks share it, its epoch, worker id) -> rank -> its record. A rank numbers
    its loaders and epochs itself; loaders.py lines them up across ranks."""
    shared_of: dict[tuple[int, int, int], tuple[int, int]] = {}
    for shared, by_rank in views.items():
        for rank, epochs in by_rank.items():
            for number, epoch in epochs.items():
                if epoch.loader is not None:
                    shared_of[(rank, epoch.loader.loader_id, epoch.loader.epoch)] = (shared, number)
    slots: dict[tuple, dict[int, tm.WorkerSeed]] = {}
    for rank, records in seeds.items():
        for record in records:
            key = shared_of.get((rank, record.loader_id, record.epoch))
            if key is not None:
                slots.setdefault((*key, record.worker), {}).setdefault(rank, record)
    return slots


def _same_draws(by_rank: dict[int, tm.WorkerSeed]) -> list[tuple[tuple[int, ...], frozenset]]:
    """Groups of ranks whose generators the first batch moved from the same state to the same
    state, with those generators. Equal before and after: the same draws, not a generator that
    each sample reseeds from its own index."""
    same: dict[tuple[int, ...], set[str]] = {}
    for name in GENERATORS:
        states: dict[tuple[str, str], list[int]] = {}
        for rank, record in sorted(by_rank.items()):
            before, after = record.before.get(name), record.after.get(name)
            if isinstance(before, str) and isinstance(after, str) and before != after:
                states.setdefault((before, after), []).append(rank)
        for ranks in states.values():
            if len(ranks) >= 2:
                same.setdefault(tuple(ranks), set()).add(name)
    return [(ranks, frozenset(names)) for ranks, names in same.items()]


def _first_batch_key(epoch: Optional[LoaderEpoch]) -> Optional[tuple]:
    if epoch is None or not epoch.batches:
        return None
    batch = epoch.batches[0]
    return ("indices", tuple(batch.indices)) if batch.indices else ("samples", tuple(batch.samples))


def _reading_different_samples(by_rank: dict[int, dict[int, LoaderEpoch]], number: int,
                               ranks: tuple[int, ...]) -> tuple[int, ...]:
    """The ranks of the group whose samples differ from the others': their first batches of
    the epoch differ, or (no batch fingerprinted) a DistributedSampler deals them. Ranks that
    read the same samples are DDP301's finding, not this one."""
    keys = {rank: _first_batch_key(by_rank.get(rank, {}).get(number)) for rank in ranks}
    kept = []
    for rank in ranks:
        key = keys[rank]
        if key is not None:
            if sum(1 for other in keys.values() if other == key) == 1:
                kept.append(rank)
            continue
        epoch = by_rank.get(rank, {}).get(number)
        if epoch is not None and epoch.loader is not None and epoch.loader.distributed_sampler:
            kept.append(rank)
    return tuple(kept)


def _problem(shared: int, by_rank: dict[int, dict[int, LoaderEpoch]],
             found: list[tuple[int, int, tuple[int, ...], frozenset]],
             seeds: dict[int, list[tm.WorkerSeed]]) -> Problem:
    ranks = sorted({r for _, _, group, _ in found for r in group})
    generators = [g for g in GENERATORS if any(g in names for *_, names in found)]
    workers = sorted({w for _, w, _, _ in found})
    epochs = sorted({n for n, _, _, _ in found})
    records = [r for rank in ranks for r in seeds[rank]]
    init_fn = next((r.init_fn for r in records if r.init_fn), "")
    in_workers = any(w >= 0 for w in workers)
    which = ", ".join(generators[:-1]) + " and " + generators[-1] if len(generators) > 1 else generators[0]
    plural = "s" if len(generators) > 1 else ""
    init_name = init_fn.rsplit(".", 1)[-1]
    name = loader_name(shared, by_rank)
    if in_workers:
        where = (f"its worker{'s' if len([w for w in workers if w >= 0]) > 1 else ''} "
                 f"{ranges(w for w in workers if w >= 0)} start with the {which} generator{plural} in "
                 f"the same state on {rank_list(ranks)}")
        if init_fn and set(generators) - {"torch"}:
            where += f" (worker_init_fn {init_name} seeds them without the rank)"
        elif "torch" in generators:
            where += " (their seed comes from the rank's torch generator, seeded alike on every rank)"
    else:
        where = (f"it loads in the rank's own process (num_workers=0), and the {which} "
                 f"generator{plural} {'are' if plural else 'is'} in the same state on {rank_list(ranks)} when the epoch's first batch is drawn (every "
                 f"rank seeded alike)")
    message = (f"{name} draws the same random numbers on every rank for different samples: {where}, "
               f"in epoch{'s' if len(epochs) > 1 else ''} {ranges(epochs)}. The k-th sample of each "
               f"rank gets the same random augmentation (crop, flip, noise), so the ranks together "
               f"see 1/{len(ranks)} of the variety meant")
    if in_workers and init_fn and set(generators) - {"torch"}:
        hint = (f"put the rank into {init_name}'s seed (np.random.seed(seed + rank * num_workers + "
                f"worker_id)), or seed it from torch.initial_seed() % 2**32 with torch seeded "
                f"per rank (torch.manual_seed(seed + rank))")
    else:
        hint = ("seed each rank differently: torch.manual_seed(seed + rank) (and numpy / random "
                "alike), or give the DataLoader a generator seeded with seed + rank")
    evidence = {
        "loader": shared,
        "ranks": ranks,
        "generators": generators,
        "workers": workers,  # -1: the rank's own process (num_workers=0)
        "epochs": epochs,
        "worker_init_fn": init_fn,
        "num_workers": max((r.num_workers for r in records), default=0),
    }
    return Problem(message=message, hint=hint, ranks=ranks, location=location(loader_site(by_rank)),
                   evidence=evidence)
