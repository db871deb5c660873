"""DDP803: data sharded twice - each rank sees about 1/N² of the dataset."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check
from ddpdoctor.lint.facts import LintFacts


@check("DDP803", "Data sharded twice across ranks", Severity.WARNING)
def double_sharding(facts: LintFacts) -> list[Problem] | Skipped:
    """
    What it detects:
        A DistributedSampler on data that is sharded a second time: a DataLoader with a
        DistributedSampler handed to `accelerator.prepare()` (Accelerate shards every
        prepared loader again; so does a prepared loader over a dataset that keeps its own
        rank's share), or a DistributedSampler over a dataset that already depends
        on the rank (`DistributedSampler(x[rank::world])`, over `random_split(...)[rank]`,
        over `ds.shard(world, rank)`); and a dataset handed to a transformers Trainer
        (`Trainer(train_dataset=ds)`) whose own code keeps this rank's items (`if i % world !=
        rank: continue` in `__iter__`): the Trainer shards what it is given through
        Accelerate (a map-style dataset by a DistributedSampler; an IterableDataset by rank 0
        reading the batches and dispatching a slice to each rank), a second time.

    Why it hurts:
        Each rank trains on about dataset / world² samples: with 8 GPUs, 1/64 of the data
        per rank and 1/8 of it overall per epoch. Nothing fails; the model just sees a
        fraction of the data and the epoch ends early.

    How to fix:
        Shard once. With Accelerate, build the loader without a sampler (shuffle=True) and
        let `accelerator.prepare()` shard it; with a hand-made shard, drop the
        DistributedSampler (or shard with the sampler only):

            loader = DataLoader(dataset, batch_size=32, shuffle=True)
            model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    """
    if facts.distributed is None and facts.framework is None:
        return Skipped("the script sets up no process group")
    problems = []
    for loader in facts.loaders:
        if loader.sampler == "distributed" and loader.prepared_by == "accelerate":
            problems.append(Problem(
                message=(f"`{loader.name}` at {loader.location} has a DistributedSampler and is handed to "
                         "accelerator.prepare(), which shards it again: each rank sees about "
                         "dataset / world² samples"),
                hint="build the loader without a DistributedSampler (shuffle=True) and let "
                     "accelerator.prepare() shard it",
                location=loader.location,
                evidence={"loader": loader.name, "sampler": loader.sampler_text, "by": "accelerate"}))
        elif loader.sampler in ("none", "plain") and loader.prepared_by == "accelerate" and \
                getattr(loader, "keeps_rank_share", False):
            # the dataset keeps this rank's share itself (`items[rank::world]`, a class that
            # filters by the process index), and Accelerate shards the prepared loader again
            # (one that merely mentions the rank, `ds.shuffle(seed=seed + process_index)`, still
            # holds every item: not this case)
            problems.append(Problem(
                message=(f"`{loader.name}` at {loader.location} reads `{loader.dataset_text}`, which keeps only "
                         "this rank's share of the items, and is handed to accelerator.prepare(), which shards "
                         "it again: each rank sees about dataset / world² samples"),
                hint="shard once: give the loader the whole dataset and let accelerator.prepare() shard it, "
                     "or keep the hand-made shard and do not prepare the loader",
                location=loader.location,
                evidence={"loader": loader.name, "dataset": loader.dataset_text, "by": "accelerate"}))
    for shard in getattr(facts, "trainer_shards", []):
        problems.append(Problem(
            message=(f"`{shard.dataset}` keeps only this rank's items itself ({shard.location}) and is handed "
                     f"to the Trainer at {shard.trainer}, which shards its training data across the processes "
                     "again: each rank trains on about dataset / world² samples (for an IterableDataset, "
                     "rank 0 reads the batches and dispatches them, so only rank 0's share is ever read)"),
            hint="shard once: let the dataset yield every item and leave the split to the Trainer",
            location=shard.location,
            evidence={"dataset": shard.dataset, "trainer": str(shard.trainer), "by": "transformers Trainer"}))
    for sampler in facts.samplers:
        if sampler.sharded_by_rank:
            problems.append(Problem(
                message=(f"DistributedSampler at {sampler.location} shards `{sampler.dataset_text}`, which "
                         "already depends on the rank: each rank sees about dataset / world² samples"),
                hint="shard once: DistributedSampler over the whole dataset, or the hand-made shard "
                     "with shuffle=True and no DistributedSampler",
                location=sampler.location,
                evidence={"sampler": sampler.name, "dataset": sampler.dataset_text, "by": "rank-dependent dataset"}))
    return problems
