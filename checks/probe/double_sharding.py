"""DDP304: double sharding - each rank reads about dataset / world² samples."""

from __future__ import annotations

import math
from collections import Counter
from typing import Optional

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.analysis.loaders import LoaderEpoch, loader_epochs, loader_name, loader_site
from ddpdoctor.probe.analysis.frameworks import worded
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.probe.words.wording import location, rank_list

_FRAMEWORK_NAMES = {"accelerate": "Accelerate's prepare()", "lightning": "Lightning's Trainer",
                    "transformers": "the Hugging Face Trainer", "deepspeed": "DeepSpeed"}


@check("DDP304", "Data sharded twice: each rank sees dataset / world²", Severity.WARNING)
def double_sharding(run: RunModel) -> list[Problem] | Skipped:
    """
    What it detects:
        Data split across ranks twice, so that each rank reads about 1/world² of the dataset
        per epoch instead of 1/world, with the numbers:

        - a DataLoader whose batches per epoch times its batch size come to dataset / world²
          (a DistributedSampler inside a loader that Accelerate's prepare(), Lightning or a
          Trainer shards again; a DistributedSampler wrapped in a second distributed sampler);
        - a DistributedSampler built over a Subset that is a different 1/world share of its
          dataset on each rank (`Subset(ds, range(rank, len(ds), world))`, `random_split(...)[rank]`,
          a rank-seeded split): the sampler splits the rank's share once more. A split that every
          rank makes alike (a train/validation split with a shared seed) is not reported.

        The static lint (DDP803) finds the same patterns in the source; when both fire they are
        one finding.

    Why it hurts:
        Nothing fails. Every epoch the ranks together see 1/world of the data (half of it on 2
        ranks, 1/8 on 8), so a run "converges" on a fraction of its dataset and each epoch is
        world times shorter than it should be; metrics look fine on a short test.

    How to fix:
        Shard once. Either the DistributedSampler alone, over the whole dataset:

            sampler = DistributedSampler(full_dataset, shuffle=True)   # no per-rank Subset
            loader = DataLoader(full_dataset, batch_size=32, sampler=sampler)

        or let the framework shard and give it a plain loader:

            loader = DataLoader(dataset, batch_size=32, shuffle=True)
            model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    """
    world = run.world_size
    views = loader_epochs(run)
    shards = {rank: r.of(tm.SamplerShard) for rank, r in run.ranks.items()}
    if not views and not any(shards.values()):
        return Skipped("no DataLoader or DistributedSampler was seen")
    if world < 2:
        return Skipped("a single rank: nothing is sharded")
    frameworks = sorted({f.name for r in run.ranks.values() for f in r.of(tm.FrameworkUse)})
    problems = [worded("DDP304", p, run) for p in (_split_subset(run, shards, world),) if p is not None]
    for loader_id, by_rank in views.items():
        # Said in the framework's words already: it names the framework that shards again.
        problem = _by_numbers(loader_id, by_rank, world, shards, frameworks)
        if problem is not None:
            problems.append(problem)
    return problems


def _batch_size(loader: tm.Loader, epoch: LoaderEpoch) -> Optional[int]:
    if loader.batch_size:
        return loader.batch_size
    sizes = Counter(len(b.samples) for b in epoch.batches if b.samples)
    return sizes.most_common(1)[0][0] if sizes else None


def _holds(count: int, batches: int, size: int, drop_last: bool) -> bool:
    """`count` samples make `batches` batches of `size`."""
    return (count // size if drop_last else math.ceil(count / size)) == batches


def _by_numbers(loader_id: int, by_rank: dict[int, dict[int, LoaderEpoch]], world: int,
                shards: dict[int, list[tm.SamplerShard]], frameworks: list[str]) -> Optional[Problem]:
    seen: dict[int, tuple[tm.Loader, int]] = {}
    for rank, epochs in sorted(by_rank.items()):
        for epoch in epochs.values():
            loader = epoch.loader
            if loader is None or loader.iterable or not loader.batches or not loader.dataset_len:
                continue
            size = _batch_size(loader, epoch)
            if size:
                seen[rank] = (loader, size)
                break
    flagged = {}
    for rank, (loader, size) in seen.items():
        total = loader.dataset_len
        once = math.ceil(total / world)
        twice = {math.ceil(once / world), total // (world * world)}
        if _holds(once, loader.batches, size, loader.drop_last) or _holds(total, loader.batches, size, loader.drop_last):
            continue
        if any(_holds(n, loader.batches, size, loader.drop_last) for n in twice if n > 0):
            flagged[rank] = (loader, size)
    if not flagged:
        return None
    ranks = sorted(flagged)
    loader, size = flagged[ranks[0]]
    total, batches = loader.dataset_len, loader.batches
    once, twice = math.ceil(total / world), math.ceil(math.ceil(total / world) / world)
    samplers = [s for rank in ranks for s in shards.get(rank, [])]
    by = [_FRAMEWORK_NAMES.get(name, name) for name in frameworks]
    if samplers and by:
        cause = (f"a DistributedSampler (built at {samplers[0].site}) inside a loader that "
                 f"{' and '.join(by)} shards again")
    elif by:
        cause = f"a loader sharded by its own sampler and again by {' and '.join(by)}"
    else:
        cause = f"two distributed samplers in a row (the loader's sampler is {loader.sampler})"
    name = loader_name(loader_id, by_rank)
    message = (f"{name} gives each rank {batches} batches of {size} per epoch (about {twice} "
               f"samples) of its {total}-sample dataset: {total} / {world}² ≈ {twice}, where one "
               f"split over {world} ranks gives {total} / {world} = {once}: the data is sharded "
               f"twice, {cause}; together the ranks read about {min(total, twice * world)} of the "
               f"{total} samples per epoch ({min(1.0, twice * world / total):.0%}) "
               f"on {rank_list(ranks)}")
    evidence = {
        "loader": loader_id,
        "dataset_len": total,
        "world_size": world,
        "batches_per_rank": {str(r): flagged[r][0].batches for r in ranks},
        "batch_size": size,
        "samples_per_rank": twice,
        "expected_samples_per_rank": once,
        "sampler": loader.sampler,
        "frameworks": frameworks,
    }
    hint = ("shard once: drop the DistributedSampler and give the framework a plain "
            "DataLoader(dataset, shuffle=True) to shard" if by else
            "shard once: keep one DistributedSampler over the whole dataset and remove the other split")
    return Problem(message=message, hint=hint, ranks=ranks,
                   location=location(samplers[0].site if samplers and samplers[0].site else loader_site(by_rank)),
                   evidence=evidence)


def _split_subset(run: RunModel, shards: dict[int, list[tm.SamplerShard]], world: int) -> Optional[Problem]:
    """A DistributedSampler over a Subset that is a different 1/world share on each rank."""
    found: dict[int, tm.SamplerShard] = {}
    for rank, records in sorted(shards.items()):
        for record in records:
            replicas = record.num_replicas
            if (replicas >= 2 and record.subset and record.dataset_len and record.root_len
                    and abs(record.dataset_len * replicas - record.root_len) <= replicas):
                found[rank] = record
                break
    if len(found) < 2 or len({r.subset for r in found.values()}) < 2:
        return None  # every rank took the same share: a train split, not a split by rank
    ranks = sorted(found)
    first = found[ranks[0]]
    n = first.num_replicas
    per_rank = math.ceil(first.dataset_len / n)
    message = (f"the DistributedSampler built at {first.site or 'an unknown site'} splits a "
               f"{first.dataset} of {first.dataset_len} samples that is already a different 1/{n} "
               f"share of the {first.root_len}-sample {first.root} on each rank: each rank reads "
               f"about {per_rank} samples per epoch = {first.root_len} / {n}², and together the "
               f"ranks read about {min(first.root_len, per_rank * n)} of the {first.root_len} "
               f"({min(1.0, per_rank * n / first.root_len):.0%}) on {rank_list(ranks)}")
    evidence = {
        "dataset": first.dataset,
        "dataset_len": first.dataset_len,
        "root": first.root,
        "root_len": first.root_len,
        "num_replicas": n,
        "samples_per_rank": per_rank,
        "expected_samples_per_rank": math.ceil(first.root_len / n),
        "subset_differs_across_ranks": True,
    }
    return Problem(message=message,
                   hint=("shard once: build the DistributedSampler over the whole dataset and drop "
                         "the per-rank Subset (or keep the per-rank split and use a plain sampler)"),
                   ranks=ranks, location=location(first.site), evidence=evidence)
