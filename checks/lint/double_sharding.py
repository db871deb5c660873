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
        DistributedSampler handed to `accelerator.prepare()` (also one built in a table of
        loaders by split and handed on by key, `prepare(config["loader"]["train"])`; Accelerate shards every
        prepared loader again; so does a prepared loader over a dataset that keeps its own
        rank's share), or a DistributedSampler over a dataset that already depends
        on the rank (`DistributedSampler(x[rank::world])`, over `random_split(...)[rank]`,
        over `ds.shard(world, rank)`); and a dataset handed to a transformers Trainer
        (`Trainer(train_dataset=ds)`) whose own code keeps this rank's items (`if i % world !=
        rank: continue` in `__iter__`): the Trainer shards what it is given through
        Accelerate (a map-style dataset by a DistributedSampler; an IterableDataset by rank 0
        reading the batches and dispatching a slice to each rank), a second time. So does a
        Trainer subclass's own `_get_train_sampler` that returns a rank-sharding sampler (a
        copy of the pre-4.30 method) while the library's get_train_dataloader, which from 4.30
        hands the loader to `accelerator.prepare()`, is left to build the loader - where the
        project pins transformers at 4.30 or later (reported at that return). A loader over
        `Subset(ds, indices)` whose indices come from the rank (`range(rank * n, rank * n + n)`,
        in a builder its caller hands `accelerator.process_index`) and then prepared is sharded
        twice too; the finding names the split and the prepare() call. And a DistributedSampler
        over a dataset whose items an unseeded draw picks or orders (`torch.randperm(n)` in its
        constructor, `random_split(ds, [a, b])` with no generator, `random.shuffle(files)`, a
        Hugging Face `ds.train_test_split(test_size=...)` with no seed=, pandas' `df.sample(1)`
        / `df.sample(frac=1)` with no random_state=, also rows kept by a selection that reads a
        few bindings back what such a draw picked, `frame[~frame.name.isin(val.name)]` with `val`
        sampled by a helper, and a dataset unpacked from a builder's returned tuple) in a script that seeds
        nothing, or seeds each process with its rank (`torch.manual_seed(args.seed + rank)`
        before the split) - not a draw under a test the dataset's construction makes false,
        nor one right after the function seeds that stream itself with no rank in the seed
        (`np.random.seed(seed); np.random.shuffle(order)`: a class order every rank draws alike,
        also under the draw's own tests: `if not test_only: random.seed(seed); random.shuffle(s)`),
    also a scalar draw that decides which items a loop keeps (`ticket = randint(0, 1000)`, then
    `if ticket > share * 1000: continue`, or the item appended under such a test), in the
    constructor or in a method of its own the script calls on the dataset before the sampler
    (`pool.fill()`, and the methods it calls on `self`),
        or before every call into the drawing function (a dataset constructor that seeds numpy,
        then calls the method that shuffles; a seeding under a test does not count),
        nor a rank only in a folder a call writes in (`from_pretrained(m, cache_dir=f"c_{rank}")`)
        (`if max_samples > 0:` with the builder's `max_samples=0` left at its default): each process draws its own, so the ranks shard different
        datasets (reported once per draw, at the training loader's sampler; for a dataset
        handed to a transformers Trainer, which shards it itself, at the Trainer(...) call; a
        draw that orders only an evaluation set, where the training loader is known, is not
        reported: the ranks score overlapping items, and no training sample is lost).
        A split's part handed to the dataset class (`PairDataset(split["train"])`, or `train =
        split["train"]` first, with `split = ds.train_test_split(train_size=0.9)` and no seed=)
        is drawn by that split.
        A seed drawn where the option gives none (`if config.seed is None: config.seed =
        np.random.randint(...)`, then `set_seed(config.seed)`) is each process's own, as a rank's
        would be. A local seeding helper called with the rank left at its default
        (`random_seed(args.seed)` of `def random_seed(seed=42, rank=0)`) seeds every rank alike,
        where it is the last seeding of the stream before the draw. An array of values drawn for
        simulated items (`np.random.choice(means, size=(n, chains, modes))`) picks no items.

        A training loader a framework shards itself - Lightning's Trainer (which puts a
        DistributedSampler in, in processes that each run the script again: not with
        `strategy="ddp_spawn"` nor on one device), or Accelerate's prepare() - over a dataset
        such a draw splits (`random_split(ds, [a, b])` at the top level, or in a
        LightningDataModule's `setup`) is reported at the loader. Lightning's
        `seed_everything(seed, workers=True)` seeds the process alike: the flag puts the rank in
        the loader workers' seeds only.
        A seeding counts for the random stream it seeds: `torch.manual_seed` leaves Python's
        `random` and numpy's streams to each process, so a `random.shuffle` of the file list in
        a split helper (`train, test = split_list(files)` handed on to the dataset) still draws
        apart; a seed read off the clock (`random.seed(int(time.time()))`) seeds nothing alike;
        nor does the launcher's seeding in its `__main__` block before `mp.spawn(worker)`: each
        spawned rank starts its streams from its own entropy.
        A draw two constructors down (a composite dataset building a part that keeps
        `random.sample(items, n)`), or in a module-level helper a constructor calls (`self.files
        = pick(files, k)`, an `np.random.choice` inside), is the dataset's (not a transform's
        it builds, one applied to items with a `__call__` and holding none, that shuffles the
        order of its own steps); so is one in any of
        the classes a builder may return by a configured name (`build_dataset(cfg)` returning
        `DatasetCatalog.get(name, ...)`), judged at the call that builds it there.
        A rank a dataset's constructor reads only to place its progress bar (`tqdm(files,
        position=tqdm_rank)`, `disable=`) picks no items: the dataset is the same on every rank.
    Why it hurts:
        Each rank trains on about dataset / world² samples: with 8 GPUs, 1/64 of the data
        per rank and 1/8 of it overall per epoch. Nothing fails; the model just sees a
        fraction of the data and the epoch ends early.

    How to fix:
        Shard once. With Accelerate, build the loader without a sampler (shuffle=True) and
        let `accelerator.prepare()` shard it; with a hand-made shard, drop the
        DistributedSampler (or shard with the sampler only). A draw that splits or orders the
        items takes a generator seeded alike on every rank (`generator=torch.Generator()
        .manual_seed(seed)`), or the process is seeded before the dataset is built:

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
                         "accelerator.prepare()" + (f" at {loader.prepared_at}" if getattr(loader, "prepared_at", "")
                                                    else "") + ", which shards it again: each rank sees about "
                         "dataset / world² samples"),
                hint="build the loader without a DistributedSampler (shuffle=True) and let "
                     "accelerator.prepare() shard it",
                location=loader.location,
                evidence={"loader": loader.name, "sampler": loader.sampler_text, "by": "accelerate",
                          **({"prepared_at": loader.prepared_at} if getattr(loader, "prepared_at", "") else {})}))
        elif loader.sampler in ("none", "plain") and loader.prepared_by == "accelerate" and \
                getattr(loader, "keeps_rank_share", False):
            # the dataset keeps this rank's share itself (`items[rank::world]`, a class that
            # filters by the process index), and Accelerate shards the prepared loader again
            # (one that merely mentions the rank, `ds.shuffle(seed=seed + process_index)`, still
            # holds every item: not this case)
            split = getattr(loader, "split_at", "")
            prepared = getattr(loader, "prepared_at", "")
            problems.append(Problem(
                message=(f"`{loader.name}` at {loader.location} reads `{loader.dataset_text}`, which keeps only "
                         "this rank's share of the items" + (f" (split by the rank at {split})" if split else "")
                         + ", and is handed to accelerator.prepare()" + (f" at {prepared}" if prepared else "")
                         + ", which shards it again: each rank sees about dataset / world² samples"),
                hint="shard once: give the loader the whole dataset and let accelerator.prepare() shard it, "
                     "or keep the hand-made shard and do not prepare the loader",
                location=loader.location,
                evidence={"loader": loader.name, "dataset": loader.dataset_text, "by": "accelerate",
                          **({"split_at": split} if split else {}), **({"prepared_at": prepared} if prepared else {})}))
    for shard in getattr(facts, "trainer_shards", []):
        if getattr(shard, "sampler", ""):
            launched = getattr(facts, "one_process_launch", "")
            problems.append(Problem(
                message=((f"where the script is launched on several processes (every launch written beside it "
                          f"starts one process - {launched}): " if launched else "")
                         + f"{shard.dataset}() returns `{shard.sampler}` at {shard.location}, which keeps only "
                         "this rank's share of the samples, and the Trainer built at " f"{shard.trainer} leaves "
                         "get_train_dataloader to transformers, whose method (4.30 on"
                         + (f", as {shard.pin} pins it" if getattr(shard, "pin", "") else "") + ") hands the "
                         "loader to accelerator.prepare(), which shards it again: each rank trains on about "
                         "dataset / world² samples"),
                hint="return a non-distributed sampler (RandomSampler, LengthGroupedSampler) from "
                     "_get_train_sampler, or drop the override: from transformers 4.30 the accelerator "
                     "shards the Trainer's loader",
                location=shard.location,
                evidence={"dataset": shard.dataset, "trainer": str(shard.trainer), "by": "transformers Trainer",
                          "sampler": shard.sampler, **({"launched": launched} if launched else {})}))
            continue
        if getattr(shard, "draw", ""):
            problems.append(Problem(
                message=(f"`{shard.dataset}` is handed to the Trainer at {shard.trainer}, and its items are picked "
                         f"by an unseeded draw ({shard.draw}) that no seeding before it makes alike on every "
                         "process: each process draws its own split, and the Trainer shards N different "
                         "datasets - some items are read on several ranks and others on none (evaluation "
                         "and test items leak into training)"),
                hint="draw the same on every process: give the split a seed (`train_test_split(test_size=0.1, "
                     "seed=seed)`, `generator=torch.Generator().manual_seed(seed)`), or seed the process before "
                     "the dataset is built",
                location=shard.location,
                evidence={"dataset": shard.dataset, "trainer": str(shard.trainer), "by": "unseeded draw",
                          "draw": shard.draw}))
            continue
        problems.append(Problem(
            message=(f"`{shard.dataset}` keeps only this rank's items itself ({shard.location}) and is handed "
                     f"to the Trainer at {shard.trainer}, which shards its training data across the processes "
                     "again: each rank trains on about dataset / world² samples (for an IterableDataset, "
                     "rank 0 reads the batches and dispatches them, so only rank 0's share is ever read)"),
            hint="shard once: let the dataset yield every item and leave the split to the Trainer",
            location=shard.location,
            evidence={"dataset": shard.dataset, "trainer": str(shard.trainer), "by": "transformers Trainer"}))
    # one finding per unseeded draw (its fix is one), at the training loader's sampler where one is
    trains = {str(loader.location) for loader in facts.loaders if loader.trains}
    drawn: dict[str, list] = {}
    for sampler in facts.samplers:
        if not sampler.sharded_by_rank and getattr(sampler, "drawn_apart", "") and not getattr(sampler, "unread", False):
            drawn.setdefault(sampler.drawn_apart, []).append(sampler)
    # (a draw that only orders an evaluation set is not told where the training loader is known:
    # the ranks then score overlapping items, and no training sample is lost or read twice)
    told = {id(sorted(group, key=lambda s: str(s.loader) not in trains)[0]) for group in drawn.values()
            if not trains or any(s.loader is None or str(s.loader) in trains for s in group)}
    for sampler in facts.samplers:
        if sampler.sharded_by_rank:
            problems.append(Problem(
                message=(f"DistributedSampler at {sampler.location} shards `{sampler.dataset_text}`, which "
                         "already depends on the rank: each rank sees about dataset / world² samples"),
                hint="shard once: DistributedSampler over the whole dataset, or the hand-made shard "
                     "with shuffle=True and no DistributedSampler",
                location=sampler.location,
                evidence={"sampler": sampler.name, "dataset": sampler.dataset_text, "by": "rank-dependent dataset"}))
        elif id(sampler) in told:
            others = [s for s in drawn[sampler.drawn_apart] if s is not sampler]
            # (the dataset differs between ranks by chance, not by the rank: the sampler's index
            # ranges then pick from N different datasets - some items on several ranks, some on none)
            problems.append(Problem(
                message=(f"DistributedSampler at {sampler.location} shards `{sampler.dataset_text}`, whose items "
                         + (f"are picked or ordered by a draw ({sampler.drawn_apart}) from a stream each rank "
                            "seeds with its own rank" if getattr(sampler, "drawn_by_rank_seed", False) else
                            f"are picked or ordered by an unseeded draw ({sampler.drawn_apart}), and no seeding makes "
                            "that draw alike on every rank (its stream is not seeded, seeded from the clock, or seeded only "
                            "in the launcher before it starts the ranks)")
                         + ": each rank draws its own, so the ranks shard different datasets - some items "
                         "are read on several ranks and others on none"
                         + (" (so do the samplers at " + ", ".join(str(s.location) for s in others) + ")"
                            if others else "")),
                hint="draw the same on every rank: hand the draw a generator seeded alike (`generator="
                     "torch.Generator().manual_seed(seed)`, `random_state=seed`, `seed=seed`) or seed the process "
                     "(`torch.manual_seed(seed)`) before the dataset is built"
                     + (", and add the rank to the seed only after it" if getattr(sampler, "drawn_by_rank_seed", False)
                        else ""),
                location=sampler.location,
                evidence={"sampler": sampler.name, "dataset": sampler.dataset_text, "by": "unseeded draw",
                          "draw": sampler.drawn_apart,
                          "also": [s.location.line for s in others if s.location.file == sampler.location.file]}))
    # a loader the framework shards itself, over a dataset drawn apart on each process (each draw
    # told once, and not again where a sampler above told it)
    told_draws = set(drawn)
    for loader in facts.loaders:
        draw = getattr(loader, "framework_drawn", "")
        if not draw or draw in told_draws:
            continue
        told_draws.add(draw)
        by = "Accelerate's prepare()" if loader.prepared_by == "accelerate" else "Lightning's Trainer"
        problems.append(Problem(
            message=(f"`{loader.name or loader.dataset_text}` at {loader.location} is sharded across the processes by "
                     f"{by}, and its items (`{loader.dataset_text}`) are picked by an unseeded draw ({draw}) that "
                     "every process runs again with a stream of its own: each process draws its own split, so the "
                     "ranks shard different datasets - some items are read on several ranks and others on none "
                     "(validation items leak into training)"),
            hint="draw the same on every process: hand the draw a generator seeded alike (`generator="
                 "torch.Generator().manual_seed(seed)`) or seed every process before the dataset is built "
                 "(`seed_everything(seed)`, `set_seed(seed)`)",
            location=loader.location,
            evidence={"loader": loader.name, "dataset": loader.dataset_text, "by": "unseeded draw",
                      "draw": draw, "sharded_by": "accelerate" if loader.prepared_by == "accelerate" else "lightning"}))
    return problems
