"""DDP802: a training DataLoader without a DistributedSampler in a distributed script."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check
from ddpdoctor.lint.facts import LintFacts


@check("DDP802", "DataLoader without a DistributedSampler", Severity.ERROR)
def loader_without_sampler(facts: LintFacts) -> list[Problem] | Skipped:
    """
    What it detects:
        A training DataLoader built without a DistributedSampler (no sampler, or a
        RandomSampler / SequentialSampler), in a script that sets up a process group
        (init_process_group, a DistributedDataParallel model); torch_geometric's loaders
        (`DataLoader`, `DataListLoader`, `DenseDataLoader`) are DataLoaders too. A sampler bound
        again in the function's own body before the loader, for every run (`sampler =
        SubsetRandomSampler(idx)` after `if distributed: sampler = DistributedSampler(ds)`), is
        the one the loader takes. A branch the
        source or the launch rules out builds nothing: `if False:`, or a test on an option
        whose value the launch gives (`if args.root.find("kv") >= 0:`, `"kv" in args.root`),
        also around the construction of a framework's data module whose hooks build the loader;
        options declared from a dict (`add_dict_to_argparser(parser, defaults)`) and given through
        a launch script's shell variables (`FLAGS="--set_name train"`, `python train.py $FLAGS`)
        count as any other - but not `--local_rank`, which torch.distributed.launch hands each
        process itself: its declared default (-1 for "not distributed") is no launched rank's,
        so `DistributedSampler(ds) if rank >= 0 else None` builds the sampler (a launch by
        torchrun alone hands none, and the default holds there). The project's own DataLoader
        subclass (`super().__init__(ds, shuffle=True)` in its constructor) is each instance the
        program builds, and trains where one does; its constructor's `if distributed:` handed
        False on every way in (a literal, a module's constant global) is no choice left open.
        A loader kept in a table by key that a builder returns (`table["train"] =
        DataLoader(...)`, `return table`) trains where a caller takes that key for its training
        loop; a sampler a local helper returns (`make_sampler(ds)` -> `WeightedRandomSampler(w,
        n)`) is that sampler; a loop whose step helper back-propagates under `if mode ==
        "train":` trains where it hands `mode="train"`, and a method of the project's own
        named `backward` that back-propagates nothing (a normalizer's `backward(x)`) is no
        backward. A loader whose batches a generator passes on (`while True: yield
        from loader`, then a caller's own `for b in data: yield b`) trains where the generator
        is drawn from. Where every launcher command written beside the script starts one
        process (`mpiexec -n 1`, `torchrun --nproc_per_node=1`; a plain `python train.py` too
        where the ranks come from MPI), the finding is a warning that says so; so too where the
        script pins one visible GPU itself (`os.environ["CUDA_VISIBLE_DEVICES"] = "0"` at its
        top level or in its `__main__` block) and starts a process per GPU it sees
        (`mp.spawn(..., nprocs=torch.cuda.device_count())`): one process as shipped.
        Also a warning: a training loader whose DistributedSampler picks nothing - its dataset's
        `__getitem__` ignores the index and draws its own sample from streams every rank seeds
        alike, in the rank's own process (no workers): every rank trains on the same samples.
        Not reported: the `else:` of `if <the switch> and flag == "train":` (in the distributed
        run it builds only the other flags' evaluation loaders); loaders of a
        dataset that already depends on the rank (`x[rank::world]`, `ds.shard(world, rank)`,
        `random_split(...)[rank]`: DDP301/DDP303 judge those at run time), IterableDatasets
        (datapipes too, also as what local builders return, or what `instantiate(cfg.dataset)`
        builds where the configs name only such classes for that entry: a Hydra `_target_`, a
        LazyConfig Python config's `dataset = L(ShardedStream)(...)`) and dataset classes that
        shard themselves
        - not a local IterableDataset whose `__iter__` splits its stream among the loader's workers
        (`get_worker_info()`), or reads a Hugging Face streaming dataset (`load_dataset(...,
        streaming=True)`, which datasets splits among the loader's workers itself), but never
        reads the rank or the world size (nor `split_dataset_by_node`): every rank reads the
        same items (an error; a warning where another dataset may be built instead; `--fix`
        declines it, as a DistributedSampler cannot take an IterableDataset) -, loaders built on one rank only, loaders
        named as validation / test loaders (or built in helpers that only evaluation code
        calls), loaders not proven to train that loops read only with gradients off (`with
        torch.no_grad():` a feature cache every rank builds in full), custom samplers, and
        scripts run by a framework
        that inserts the sampler itself (Lightning, Accelerate, the Hugging Face Trainer) - but
        a Trainer subclass whose `get_train_dataloader` override returns a loader without a
        DistributedSampler that it never hands to `self.accelerator.prepare()` is reported (the
        base method's prepare() is what shards the batches, and the override bypasses it; the
        base class's own `self._get_train_sampler()` in such an override is a plain sampler
        where the project pins transformers at 4.30 or later, and not known before), and a
        plain `python train.py` beside a Trainer script is one process (a warning then). A
        script that runs Accelerate on one side and sets up its own process group on another
        (`--strategy fsdp` spawning ranks whose own trainer builds its loader) has that
        trainer's loader judged, as a warning, where it is built apart from any Accelerator
        and no `accelerator.prepare()` takes it. Under Accelerate, a training loader of a
        stored dataset that no `prepare()` takes, where every `prepare()` names what it is
        handed (only the model and the optimizer, or a `deepcopy` of the loader whose result
        is thrown away), gets no sampler from Accelerate: an error like any unsharded
        training loader (not a TensorDataset of tensors the run made: rollouts a rank
        generated are its own). Nor, in any script, a loader built anew on each pass of a loop
        over a TensorDataset of tensors made there and read from no file (a PPO update over the
        episode the rank just played).

        An error when a loop that runs backward iterates the loader (it is the training
        loader); a loader no such loop is seen to iterate is not judged, whatever its name
        says (a name alone was right once in 8 times on real code labelled blind, as first scored). A loader a name is bound to and bound again before anything reads it (a
        first pass that counts the samples; one built on a dataset's side of an `if` and built
        again with the sampler after it, no read of the name reached by the first) trains nothing. A DataLoader whose
        options come from `**kwargs`, or whose dataset is handed to a framework that shards it
        (`deepspeed.initialize(training_data=...)`), is not judged, nor one built on the
        branch where the process group is never set up (`else:` of `if opt["dist"]:`, or of
        `if is_dist_avail_and_initialized():`, a helper true exactly past its `if not
        dist.is_initialized(): return False` guards, whatever its name, or
        past `if is_distributed(): raise NotImplementedError(...)`, there or in a caller), nor
        one a builder returns into a name no caller reads, nor one on the side of a builder's
        `if world_size > 0:` that only the calls leaving that parameter at its default (-1)
        take, where those calls are evaluation (the training call hands it the world size). A warning, naming the choice, for a
        loader on one side of a configuration test whose other side handles the process
        group's switch (`if 'triplet' in cfg.SAMPLER: if cfg.DIST: ...` / `else:` a plain
        loader) or builds the sharded loader itself (`if launcher == "slurm":
        build_dataloader(ds, dist=True)` / `else:` a plain loader): it meets a distributed run
        only if that configuration is chosen with it.
        A warning too for a job with a process group but no DDP model and no sharded data (an
        inference or preprocessing script): a loader every rank iterates in full, with no
        collective in the loop, nor in what the loop calls (ranks that cooperate on each
        batch, tensor parallelism, are meant to see the same data), does the whole job on every
        rank - not where the script splits its ranks into groups (`dist.new_group`,
        `init_device_mesh`, a model-parallel initializer): the ranks of a group read the same
        batches by design. A warning, too, where
        the dataset's `__getitem__` never reads the index it is handed (it draws a random
        sample of its own, there or in a method it calls): the sampler does not choose the
        samples, the ranks' random state does - not reported where DDP808 already reports the
        same loader's workers drawing alike; and where the plain sampler draws with replacement (`RandomSampler(ds,
        replacement=True, num_samples=n)`, a WeightedRandomSampler): there is no epoch to split,
        and ranks seeded apart draw their own samples; such a sampler (or one drawing a fixed
        `num_samples`) is not reported at all where nothing seeds the ranks alike. A dataset of
        a library that shards by rank itself (mosaic streaming, litdata, webdataset, torchdata)
        needs no sampler. A script that prepares its loader with Accelerate on one side of a
        switch and wraps its own DDP model on the other is judged on its DDP side, as a warning
        naming the switch. A builder's loader counts as training only on the ways in whose
        constants reach it (`make_loader(cfg, train=True)` never builds the `else:` side of
        `if train:`). Each loader a local wrapper class keeps and iterates (`Mixed(loader_a,
        loader_b)` whose `__iter__` runs `iter(self.loader_b)` too) is read by the loop that
        iterates the wrapper. A loader built only past a setting read with an off default (`if
        cfg.get("hard_mining", False): loader = rebuild(...)`, there or around every call of its
        builder) is a warning that starts with that setting: the config decides. So is a loader
        whose DistributedSampler sits on the side of `DistributedSampler(ds) if num_gpus > 1 else
        None` that the options, as launched, leave untaken (--num_gpus at its default 1 while the
        launcher starts a rank per GPU): the missing sampler rests on that option.
        The fine-tuning tutorial's loop, `for phase in ["train", "val"]:` over `dataloaders[phase]`
        with the dict handed in as `{"train": train_loader, "val": val_loader}`, trains on the
        loader at each key whose pass reaches the backward (`if phase == "train":`), and only
        evaluates the others.

        A loader handed its dataset in a dict spread into it (`DataLoader(**loader_kwargs)` with
        `"dataset": ds`) is read with that dataset; one read through an endless generator
        (`data = yielder(DataLoader(...))`, `def yielder(l): while True: yield from l`) by a
        helper that draws `next(data)` and backpropagates trains; a loader built by a class
        whose every object the callers hold is made on the one-process side of the switch
        (`if opt.dist: h = ShardedLoader() else: h = PlainLoader()`) is that side's; so is one
        built by a class whose instances never join a process group, where the group is set up
        only in a sibling class's override (`DSTrainer._setup_experiment` calling
        deepspeed.init_distributed beside a MultiTaskTrainer that keeps the base's) or on the
        other side of the script's own switch (an inference command's set-up).
        torchrun and `python -m torch.distributed.launch` with no `--nproc_per_node` start one
        process per node: a launch written so counts as one process (the finding is then a
        warning that says so).
        A sampler made by a method of the object's own (`self._get_sampler(ds, is_distributed)`
        of `if not is_distributed: return None; return DistributedSampler(...)`) is what that
        method returns on the way in: None where every call leaves `is_distributed=False`. A
        loader over offsets (`DataLoader(range(...), collate_fn=self.get_batch)`) whose
        collate_fn reads an object that keeps one rank's share of the data (`data =
        parts[rank]` in its constructor, Transformer-XL's ordered iterator) is sharded.
        A loader bound through a wrapper (`val_loader = cycle(DataLoader(val_ds, ...))`) is known by
        that name, and a batch drawn under `with torch.no_grad():` in the training loop trains nothing.
        A helper called only on the `else:` of the very test the process group is set up under (`if
        args.dist and not args.only_test:`) builds the one-process run's loader.
        `if args.local_rank != -1: model = DistributedDataParallel(model)` makes that test the
        distributed run's switch: a loader without a sampler on the `else:` of the same test is
        the one-process run's (also where the group is set up under a compound test, `if
        args.local_rank == -1 or args.no_cuda: ... else: init_process_group(...)`).
        A builder's side the training call never takes is not its loader: `if fold in ("dev",
        "test"): DataLoader(features, shuffle=False)` in `load_examples(args, fold)` that training
        calls as `load_examples(args, fold="train")` builds the evaluation folds' loaders only.
    Why it hurts:
        Every rank iterates the whole dataset. Seeded alike, the ranks draw the same
        batches: N GPUs do the work of one, and an epoch takes N times longer than it should
        while looking normal. The probe (DDP301) proves it from the batches themselves.

        An option every launch beside the script gives a value worked out in the shell
        (`--n_gpu=$num_gpus`) has no known value: its declared default is no launch's, so a
        sampler built under `if n_gpu > 1:` may be the run's.
    How to fix:
        Give the loader a DistributedSampler, shuffle in the sampler, and call set_epoch:

            sampler = DistributedSampler(dataset, shuffle=True)
            loader = DataLoader(dataset, batch_size=32, sampler=sampler)
            for epoch in range(epochs):
                sampler.set_epoch(epoch)
                for x, y in loader:
                    ...
    """
    # a script Accelerate runs whose training loader no accelerator.prepare() takes (the
    # prepared copy thrown away, or only the model and optimizer prepared): nothing inserts a sampler
    unprepared = facts.framework == "accelerate" and any(
        getattr(loader, "unprepared", False) and loader.trains for loader in facts.loaders)
    # a Hugging Face Trainer subclass whose get_train_dataloader override returns a loader it never
    # prepares: the Trainer's prepare() in the base method is what shards, and it is bypassed
    hooked = facts.framework == "transformers" and any(getattr(loader, "trainer_hook", "") for loader in facts.loaders)
    if facts.distributed is None and not unprepared and not hooked:
        return Skipped("the script sets up no process group")
    # a script that runs under Accelerate on one side of a switch and wraps its own DDP model on
    # the other (coqui's Trainer: `use_accelerate`) is judged on its DDP side
    both = facts.framework == "accelerate" and facts.ddp_model and any(
        getattr(loader, "prepared_under", "") for loader in facts.loaders)
    # a script that also sets up its own process group (minChatGPT's `--strategy fsdp` spawns
    # ranks whose trainer builds its own loader, beside an Accelerate trainer): that trainer's
    # loader, built where no Accelerator is in sight and never prepared, is judged
    apart = facts.framework == "accelerate" and "init_process_group" in (facts.distributed_how or "") and any(
        getattr(loader, "apart_from_accelerate", False) for loader in facts.loaders)
    if facts.framework is not None and not both and not apart and not unprepared and not hooked:
        return Skipped(f"{facts.framework} inserts the DistributedSampler itself")
    problems = []
    drawn_alike = {str(u.loader) for u in getattr(facts, "unranked_seeds", [])}
    for loader in facts.loaders:
        if _sampler_picks_nothing(loader, drawn_alike):
            problems.append(Problem(
                severity=Severity.WARNING,
                message=(f"`{loader.name or 'the DataLoader'}` at {loader.location} has a DistributedSampler "
                         f"({loader.sampler_text}), but its dataset's __getitem__ ignores the index it is "
                         "handed and draws its own sample from random streams every rank seeds alike (in the "
                         "rank's own process: no loader workers): the sampler splits nothing, and every rank "
                         "trains on the same samples"),
                hint=("seed each rank's streams apart (seed + rank) before the loader is read, or make "
                      "__getitem__ pick its sample from the index the sampler hands it"),
                location=loader.location,
                evidence={"loader": loader.name, "dataset": loader.dataset_text, "sampler": loader.sampler_text,
                          "index_ignored": True}))
            continue
        if loader.sampler not in ("none", "plain") or loader.unseen_options or loader.handed_to_framework:
            continue
        alone = unprepared and getattr(loader, "unprepared", False) and loader.trains
        hook = getattr(loader, "trainer_hook", "")
        if facts.framework is not None and not both and not alone and not hook and \
                not (apart and getattr(loader, "apart_from_accelerate", False)):
            continue  # Accelerate's own loaders
        if both and not getattr(loader, "prepared_under", ""):
            continue  # prepared on every way, or never on a DDP path the source shows
        if loader.sharded_by_rank or loader.iterable or loader.under_rank_guard or loader.evaluation:
            continue
        if getattr(loader, "single_process", False):
            continue  # the branch where the process group is never set up: one process, all the data
        if getattr(loader, "off_at_launch", ""):
            continue  # on a side the options, as launched, never take (`elif args.task == ...`)
        if getattr(loader, "unread", False):
            continue  # returned by a builder into a name no caller reads: never iterated
        if getattr(loader, "no_grad_read", False):
            continue  # read with gradients off only (a feature cache every rank builds in full)
        if getattr(loader, "plain_trains", False):
            continue  # trains a plain model only (a helper every rank fine-tunes): no DDP training reads it
        if not loader.trains:
            if not loader.train_named and _whole_job(facts, loader):
                problems.append(_every_rank_everything(facts, loader))
            # a loader the source does not tie to a loop running backward: an evaluation helper's,
            # most often. Tied to training by its name alone it was a warning until session 40; on
            # seven sets of real code labelled blind (holdouts 40-46, as first scored) that warning
            # was right once in 8, and 2 times in 11 over every read set at session 39's code (one
            # loader per dataset of a registry, a builder's branch the run never takes, a first
            # loader rebuilt with a sampler), so a name is no longer evidence that a loader trains
            continue
        what = f"`{loader.name}`" if loader.name else "a DataLoader"
        sampler = (f"sampler={loader.sampler_text} (a {loader.sampler_class or 'plain sampler'}, not a "
                   "DistributedSampler)" if loader.sampler == "plain" else "no sampler")
        if hook:
            message = (f"{what} at {loader.location} = DataLoader({loader.dataset_text}, ...) has {sampler}, "
                       f"and {hook} returns it as the Trainer's training loader without accelerator.prepare(): "
                       "the override replaces the Trainer's own get_train_dataloader, whose prepare() is what "
                       "shards the batches across the processes, so every process iterates the whole dataset")
        elif alone and getattr(loader, "rebuilt_unprepared", ""):
            message = (f"{what} at {loader.location} = DataLoader({loader.dataset_text}, ...) has {sampler}; "
                       f"the first one built is handed to accelerator.prepare(), but the loop that iterates it "
                       f"builds it again at {loader.rebuilt_unprepared} and no prepare() takes that one, so "
                       "Accelerate inserts no sampler: from then on every process iterates the whole dataset")
        elif alone and not both and not (apart and getattr(loader, "apart_from_accelerate", False)):
            message = (f"{what} at {loader.location} = DataLoader({loader.dataset_text}, ...) has {sampler}, "
                       "and no accelerator.prepare() takes it (what is prepared is the model, the optimizer, "
                       "or a copy whose result is thrown away), so Accelerate inserts no sampler: every "
                       "process iterates the whole dataset, the same batches where the processes are seeded alike")
        else:
            message = (f"{what} at {loader.location} = DataLoader({loader.dataset_text}, ...) has {sampler}, "
                       f"in a script that sets up a process group ({facts.distributed_how} at "
                       f"{facts.distributed}): every rank iterates the whole dataset, the same "
                       "batches where the ranks are seeded alike")
        split = getattr(loader, "worker_split", ())
        if split:  # a stream split among one process's workers, never by rank
            by = "a Hugging Face streaming dataset, which datasets splits among the loader's workers" \
                if split[2:] == ("datasets",) else "its items split among the loader's workers (get_worker_info)"
            message = (f"{what} at {loader.location} streams {split[0]} (an IterableDataset), whose __iter__ "
                       f"reads {by} but never by rank: every rank reads the same items in the same order")
            if split[1]:
                message = f"where the branch that builds {split[0]} runs: {message}"
        if getattr(loader, "index_ignored", False) and \
                str(loader.location) in {str(u.loader) for u in getattr(facts, "unranked_seeds", [])}:
            # the dataset draws its own sample whatever index it is handed, and the ranks' workers
            # draw alike: DDP808 reports this loader for that, which is the whole of the bug
            continue
        if getattr(loader, "index_ignored", False):  # the sampler's order does not pick the samples
            message = (f"{message}; unless each rank's random state differs, since the dataset's "
                       "__getitem__ ignores the index it is handed and draws its own sample")
        replacement = getattr(loader, "with_replacement", False)
        if replacement and not getattr(loader, "seeded_alike", True):
            continue  # independent draws: nothing seeds the ranks' generators alike
        if replacement:  # no epoch to split: independent draws per rank are a design, if seeded apart
            message = (f"{message}; unless the ranks are seeded apart: {loader.sampler_class} draws with "
                       "replacement, so ranks with their own random state draw their own samples")
        if both:  # the DDP side: where `use_accelerate` is off, nothing shards the loader
            message = (f"where `{loader.prepared_under}` is false (the script's own DDP path; accelerator."
                       f"prepare() shards the loader only on the other): {message}")
        elif apart:
            message = (f"built apart from Accelerate (no accelerator.prepare() takes it; the script sets "
                       f"up its own process group too): {message}")
        switched = getattr(loader, "switched_on", "")
        if switched:  # built only where a setting that is off unless a config sets it is on
            message = f"if `{switched}` holds (a setting off by default): {message}"
        dropped = getattr(loader, "sampler_dropped_by", "")
        if dropped:  # the DistributedSampler is on the side the options as launched do not take
            message = (f"with `{dropped}` false as launched (the options' defaults; the sampler is built "
                       f"only where it holds): {message}")
        configured = getattr(loader, "other_branch_distributed", "")
        if configured:  # the other side of a configuration test handles the distributed switch
            message = (f"if the side of `{configured}` that builds {what} is chosen in a distributed run "
                       f"(the other side is written for the process group: it tests its switch or shards "
                       f"the data; this one does neither): {message}")
        one = getattr(facts, "one_process_launch", "")
        pinned = getattr(facts, "one_device_pinned", "")
        if one:  # the launches shipped beside the script start one process: it bites on more
            message = (f"where the script is launched on several processes (every launch written beside it "
                       f"starts one process - {one}): {message}")
        elif pinned:  # the script itself sees one GPU and starts a process per GPU it sees
            message = (f"where more than one GPU is visible (the script pins one - {pinned} - and starts a "
                       f"process per GPU it sees, so one as shipped): {message}")
            one = pinned
        problems.append(Problem(
            severity=None if loader.trains and not configured and not switched and not dropped
            and not getattr(loader, "index_ignored", False) and not (split and split[1])
            and not replacement and not both and (not apart or alone) and not one else Severity.WARNING,
            message=message,
            hint=(f"split {split[0]}'s stream by rank: `datasets.distributed.split_dataset_by_node(ds, "
                  "rank=dist.get_rank(), world_size=dist.get_world_size())` on the stream it reads; a "
                  "DistributedSampler cannot take an IterableDataset"
                  if split[2:] == ("datasets",) else
                  f"split {split[0]}'s stream by rank as well as by worker: in __iter__, take shard "
                  "`rank * num_workers + worker_id` of `world_size * num_workers` (dist.get_rank(), "
                  "dist.get_world_size(), get_worker_info()); a DistributedSampler cannot take an IterableDataset"
                  if split else
                  "return `self.accelerator.prepare(DataLoader(...))` from the override, as the Trainer's own "
                  "get_train_dataloader does (or give the loader a DistributedSampler)"
                  if hook else
                  f"prepare each loader the loop builds again as well (`{loader.name or 'loader'} = "
                  f"accelerator.prepare({loader.name or 'loader'})` after the rebuild), or keep one prepared "
                  "loader over a dataset that swaps its chunk"
                  if alone and getattr(loader, "rebuilt_unprepared", "") else
                  f"hand the loader itself to accelerator.prepare() and iterate what it returns "
                  f"(`{loader.name or 'loader'} = accelerator.prepare({loader.name or 'loader'})`): Accelerate "
                  "then shards it and sets its epoch"
                  if alone and not both and not (apart and getattr(loader, "apart_from_accelerate", False)) else
                  f"DataLoader({loader.dataset_text}, sampler=DistributedSampler({loader.dataset_text}), ...) "
                  "with shuffle in the sampler, and sampler.set_epoch(epoch) at the start of every epoch"),
            location=loader.location,
            evidence={"loader": loader.name, "dataset": loader.dataset_text, "sampler": loader.sampler_text or None,
                      "process_group": str(facts.distributed) if facts.distributed is not None else facts.framework,
                      **({"stream": split[0]} if split else {}),
                      # (the override the Trainer calls: its training loop sets the sampler's epoch)
                      **({"trainer_hook": hook} if hook else {})},
        ))
    return problems


def _sampler_picks_nothing(loader, drawn_alike: set) -> bool:
    """A training loader with a DistributedSampler over a dataset that ignores the index and draws
    its sample from streams every rank seeds alike, drawn in the rank's own process (ClassKG's
    subgraph sampler): each rank draws the same samples whatever its sampler hands it. With
    workers, DDP808 reports the alike-seeded workers (the loader is in drawn_alike)."""
    return loader.sampler == "distributed" and getattr(loader, "index_ignored", False) and \
        getattr(loader, "no_workers", False) and \
        getattr(loader, "seeded_alike", False) and loader.trains and not loader.evaluation and \
        not loader.under_rank_guard and not getattr(loader, "single_process", False) and \
        str(loader.location) not in drawn_alike


def _whole_job(facts: LintFacts, loader) -> bool:
    """The script sets up a process group but shards nothing and wraps no model in DDP (an
    inference or preprocessing job): a loader every rank iterates in full, with no collective
    in the loop (ranks cooperating per batch, as in tensor parallelism), is the job done N times."""
    if facts.ddp_model or facts.samplers or getattr(loader, "single_process", False):
        return False
    if getattr(facts, "subgroups", False):
        return False  # model-parallel groups: the ranks of a group read the same batches by design
    if any(other.sampler == "distributed" or other.sharded_by_rank for other in facts.loaders):
        return False
    return bool(getattr(loader, "iterated", False))


def _every_rank_everything(facts: LintFacts, loader) -> Problem:
    what = f"`{loader.name}`" if loader.name else "a DataLoader"
    return Problem(
        severity=Severity.WARNING,
        message=(f"if the ranks are meant to share the work: {what} at {loader.location} = "
                 f"DataLoader({loader.dataset_text}, ...) has no sampler and no rank in its dataset, in a "
                 f"script that sets up a process group ({facts.distributed_how} at {facts.distributed}) "
                 "but wraps no model in DDP and shards no data: every rank processes the whole dataset"),
        hint=(f"DataLoader({loader.dataset_text}, sampler=DistributedSampler({loader.dataset_text}, "
              "shuffle=False), ...), then gather the per-rank results (dist.all_gather_object)"),
        location=loader.location,
        evidence={"loader": loader.name, "dataset": loader.dataset_text, "ddp_model": False,
                  "process_group": str(facts.distributed)},
    )
