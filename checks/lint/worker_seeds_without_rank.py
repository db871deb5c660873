"""DDP808: DataLoader workers seeded alike on every rank (the static twin of DDP305)."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check
from ddpdoctor.lint.facts import LintFacts


@check("DDP808", "DataLoader workers seeded without the rank", Severity.WARNING)
def worker_seeds_without_rank(facts: LintFacts) -> list[Problem] | Skipped:
    """
    What it detects:
        In a distributed script (a process group, a DDP model, a DistributedSampler, or a
        framework that starts the ranks itself: Accelerate, Lightning), a DataLoader whose
        workers get the same seeds on every rank:

        - a `worker_init_fn` (directly or through functools.partial) that seeds numpy, `random`
          or torch (or a seeding helper) from values that are the same on every rank: constants,
          the worker id, a module-level seed, a config attribute (`args.seed`, `cfg.SEED`);
        - `generator=g` on a loader with workers, where `g.manual_seed(...)` is such a value:
          the workers' seeds come from that generator (also `g = torch.manual_seed(seed)`,
          which hands back the default generator it seeded, made in a helper and handed to a
          loader builder's parameter);
        - a dataset class the run builds whose worker-side method (`__getitem__`, `__iter__`)
          reseeds torch, numpy or `random` from the worker's id and constants only (RAFT's
          `torch.manual_seed(get_worker_info().id)` on the first item a worker loads), beside a
          training loader with workers: reported at the seeding call;
        - a training loader with workers and neither of those (or a worker_init_fn that reseeds
          from `torch.initial_seed()`), whose dataset draws random numbers (its class, builder,
          transform or collate_fn says random / Rand... / augment / jitter / flip, or calls a
          draw imported by its bare name: `from random import sample`), in a script
          whose ranks all seed torch with the same value (`torch.manual_seed(args.seed)`,
          `seed_everything(cfg.seed)`, `set_seed(seed)`, lhotse's `fix_random_seed(seed)`, or
          a seed rank 0 broadcast to all: `dist.broadcast(t, src=0); seed = t.item()`): each
          worker's base seed is drawn from the rank's torch generator (a rank helper that
          answers 0 until the group is set up, read into the seed above the set-up call -
          `seed = args.seed + get_rank()` before `init_process_group` - adds 0 on every rank; a
          dataset an mmcv-style registry builds, `DATASETS.build(cfg)`, draws where a class
          registered there draws). Not when any seeding the
          ranks run puts the rank in or seeds from a value of unknown origin, nor for the
          launcher's own seeding before mp.spawn (the spawned ranks never run it; a seeding
          helper the script calls at its top, outside `__main__`, runs in each rank that imports
          it: `seed_all(cfg.seed)` under the imports), nor for a
          seeding under a test every caller's constant leaves false (`if eval_time:` in a
          dataset built with the default `eval_time=False`), nor for a seeding helper called only
          under an option the launch leaves off (`if opt.debug: set_random_seed(0)`, --debug a
          store_true no launch gives), or under a test on a key of the YAML config that no
          config shipped beside the script sets (`if config["seed"] is not None:`, each config
          holding `#seed: 0` commented out, the loader filling the key with None), or under the
          script's own top-level switch bound only to False that no function moves
          (`deterministic = False`, then `if deterministic: torch.manual_seed(SEED)`) - unless the
          script stops a distributed run that leaves it unset (`if args.seed is None and
          args.gpus > 1: raise ...`). A seeding helper called
          without its seed takes its default as written (`def set_seed(seed=SEED)`, `SEED = 42`
          above); a library's seeder imported through a local module (`from utils.seed import
          seed_everything`, which imports Lightning's) is the library's. A worker_init_fn made
          by a factory (`worker_init_fn=get_seed_worker(seed)`) is judged by what its callers
          hand the factory, also through a `**options` dict they build, and a loader class picked
          by a conditional (`cls = FastLoader if cached else DataLoader`) is a DataLoader.
          A loader handed a section of the YAML configs (`**self.loader_config["train"]`, the
          object keeping the `cfg["dataloader"]` it is handed) has the workers those configs
          give it and no generator or worker_init_fn (a YAML file holds neither); a config
          object whose `__init__(**kwargs)` sets each keyword on itself (minGPT's
          TrainerConfig) holds its class default or what its construction hands. A count an
          option gives (`--workers`, default 0) that no launch written beside the script sets
          is 0. The launcher's direct call of the spawn target with a constant process index
          (`runner(rank=0, args=args)` beside `mp.spawn(runner, ...)`, where the group is
          joined at the rank handed) is the run's one process, and a spawn target bound to a
          name under a test (`if args.exp == "e2e": runner = main`) is still the spawn target;
          the script's `if __name__ == "__main__":` holds on every launch.
          Options spread from a method's dict (`**self._loader_kwargs()`) are read. Numbers
          drawn once where the dataset is made (`np.random.RandomState(0).permutation(n)` for a
          split) are data, not a draw in the workers. A draw under a test on a field the
          constructor keeps from its parameter (`if self.split == "demo":`) is judged by the
          construction the loader is handed (`Clips(root, "train")`, or `get_dataset(name)(root,
          "train")` of a helper handing back a class of its table): no draw there.

        Not reported: seeds with a rank in them (`seed + rank * num_workers + worker_id`,
        Accelerate's `process_index`), seeds derived from the worker's own state
        (`torch.initial_seed()`, `get_worker_info().seed`, `np.random.get_state()`: torch seeds
        those per worker from the rank's generator), and seeds of unknown origin (a parameter,
        a helper's result). A draw in an `except` handler (a stand-in sample picked on a read
        error) is no augmentation, nor one that only picks another sample and retries (`idx =
        random.randint(0, n - 1); continue` on a sample whose files are missing, `return
        self[random.randrange(n)]`); a transform built with its augmentation switched on
        (`_aug=True`) is one. Nor is an evaluation loader that no training loop reads, or a loader
        built on some ranks only (the variety it would cost is the training augmentation's),
        nor a loader that runs no workers on the values the source
        gives (`num_workers=0`, a name bound to 0), nor one over a dataset of a local class the
        source shows drawing no random numbers (the first two ways too: alike seeds then draw
        nothing alike; a library's dataset, whose transforms may draw, is still reported), nor
        one whose item method only hands back what the class filled itself (`return
        self.img_ids[i]`: the transform it was handed runs in the process, not the workers; a
        flag its constructor hands on by its own name, `partial(make_row, augment=self.augment)`,
        names no transform) - draws
        from a generator `__getitem__` makes from the index and hands to a helper of the class
        (`rng = np.random.RandomState(idx)`, `self.pick(rng)`) included. Nor is a loader no
        sampler or rank shards where the ranks are split into model-parallel groups or pipeline
        stages (`torch.distributed.pipelining`'s PipelineStage and schedules) and no model is
        wrapped in DDP: the ranks of a group read the same batches, draws included, by design. A worker count that only an option gives,
        declared with default 0 and never set by the script (`num_workers=args.workers`), is
        what launch recipes set: that loader is reported as a warning that states it (`if
        --workers is above its default 0`). The probe (DDP305) sees the random state itself.
        The finding points at what seeds the workers alike: the seeding call inside the
        worker_init_fn, or the generator's `manual_seed(...)`; for the third way, at the
        DataLoader.

        A rank parameter that partial() binds a constant (`partial(init_fn, rank=0, seed=s)`)
        is that constant on every rank. Draws from a generator a method makes itself (`rng =
        np.random.default_rng(...)`, or a parameter typed `rng: np.random.Generator`) follow
        that generator's seed; a draw folded into a seed that puts the rank in (`seed = base +
        worker + rank * n + random.randint(0, 1000)`, then `g.manual_seed(seed)`) draws no
        augmentation; a seeding in a private method no code calls (or only such methods call)
        never runs. One seeding shared by several loaders is told at a loader with a
        DistributedSampler first.
        Workers every launch written beside the script gives 0 (`--dataloader_num_workers=0`), or
        leaves at a declared 0, are no workers.
        Options a loop declares from a YAML file the script reads (`cfg = yaml_config_hook(
        "./configs/run.yaml")`, `for k, v in cfg.items(): parser.add_argument(f"--{k}", default=v)`)
        hold that file's values, as a launch's are: `workers: 0` there is no workers. A parser in
        a function nothing calls (`def define_args():` in a utilities module) declares no option
        of this run. One seeded generator handed to several loaders is one finding, at its
        `manual_seed(...)`, naming the other loaders.
        A seeding under a config comparison every config answers false is no seeding: `if
        cfg.SEED_VALUE >= 0: torch.manual_seed(cfg.SEED_VALUE)` with a yacs default `cfg.SEED_VALUE =
        -1` that the YAML configs keep leaves each process the seed torch drew for it.
    Why it hurts:
        The ranks read different samples, but worker k of every rank draws the same random
        numbers: the k-th sample of every rank gets the same crop, flip and noise. Nothing
        fails; the model sees 1/world of the augmentation variety it was meant to.

        The transforms a builder hands out as its dict's values (`make = ZOO[args.dataset]`,
        then `train_tf, eval_tf = make(root).values()`) are read as that dict's entries, and a collate
        function's helpers are followed four calls down for a draw. Where the dataset reseeds
        every generator in its workers itself (from the worker's id alone), that reseed is the
        one finding: the seed the loader hands its workers decides nothing there.
    How to fix:
        Put the rank into the seed, or derive it from torch's per-worker seed with torch (or
        the generator) seeded per rank:

            def seed_worker(worker_id):
                np.random.seed(base_seed + rank * num_workers + worker_id)
                random.seed(base_seed + rank * num_workers + worker_id)

            g = torch.Generator()
            g.manual_seed(base_seed + rank)
            DataLoader(dataset, sampler=sampler, num_workers=4, generator=g, worker_init_fn=seed_worker)
    """
    # a framework (Accelerate, Lightning) starts the ranks and the group itself
    distributed = facts.distributed is not None or facts.ddp_model or facts.framework is not None or any(
        loader.sampler == "distributed" for loader in facts.loaders)
    if not distributed:
        return Skipped("the script sets up no process group and uses no DistributedSampler")
    if not facts.unranked_seeds:
        return []
    # an evaluation loader no training loop reads, or one only some ranks build: the same
    # random streams on every rank cost no augmentation variety there
    quiet = {str(loader.location) for loader in facts.loaders
             if (not loader.trains and (loader.evaluation or loader.under_rank_guard))
             # (and one built only where the run is one process: `if not is_ddp:`' loader)
             or loader.single_process
             # (or one every process reads whole - a Trainer override's loader never prepared,
             # an Accelerate script's loader no prepare() takes: the ranks read the same samples,
             # DDP802's finding, and alike augmentations are part of it, not news)
             # (not one whose own sampler shards it, `sampler=self._get_train_sampler()` of a
             # DistributedSampler: DDP802 tells nothing there, and the workers' draws are news)
             or (getattr(loader, "trainer_hook", "") and loader.sampler in ("none", "plain"))
             or (facts.framework == "accelerate" and getattr(loader, "unprepared", False))}
    # ranks split into model-parallel groups or pipeline stages, with no DDP model: a loader no
    # sampler or rank shards is read alike by the ranks of a group by design, draws included
    if getattr(facts, "subgroups", False) and not facts.ddp_model:
        quiet |= {str(loader.location) for loader in facts.loaders
                  if loader.sampler != "distributed" and not loader.sharded_by_rank}
    problems = []
    told: dict[tuple, Problem] = {}  # one worker_init_fn's seeding, reported once for all its loaders
    # (one seeding shared by several loaders is told at the one a distributed run reads first:
    # a loader with a DistributedSampler before one built for a single process or another config)
    sharded = {str(loader.location) for loader in facts.loaders if loader.sampler == "distributed"}
    for found in sorted(facts.unranked_seeds, key=lambda u: str(u.loader) not in sharded):
        if str(found.loader) in quiet:
            continue
        # (every training loader whose workers draw from one seeding shares one fix: the seeding)
        key = (found.how, tuple(found.seed_sites)) if found.how == "process" else (found.how, str(found.location))
        # (also one seeded generator handed to several loaders: one fix, at its manual_seed)
        if key in told:
            told[key].message += f" (and the DataLoader at {found.loader})"
            told[key].evidence.setdefault("other_loaders", []).append(str(found.loader))
            continue
        seeds = "; ".join(found.seeds[:3])
        if found.how == "worker_init_fn":
            # (a lambda is named as one: `worker_init_fn=lambda wid: seed_worker(wid, self.seed)`)
            runs = "a lambda as worker_init_fn" if found.function == "lambda" else f"worker_init_fn {found.function}"
            message = (f"the DataLoader at {found.loader} runs {runs}, which "
                       f"seeds its worker the same way on every rank ({seeds} at {found.location}: no "
                       "rank in the seed): the ranks read different samples but worker k of every "
                       "rank draws the same random augmentation")
            hint = (f"put the rank into {'the lambda' if found.function == 'lambda' else found.function}'s seed "
                    "(seed + rank * num_workers + worker_id), "
                    "or seed from torch.initial_seed() % 2**32 with torch seeded per rank")
        elif found.how == "process":
            sites = ", ".join(found.seed_sites[:3])  # (set for "process" findings only)
            handed = getattr(found, "seed_calls", [])[:2]
            if handed:  # (the helper's caller chooses the seed: where the rank goes in)
                sites += f", handed its seed at {', '.join(handed)}"
            message = (f"the training DataLoader at {found.loader} has workers whose seeds come from the "
                       f"rank's torch generator, which every rank seeds alike ({seeds} at {sites}: no rank "
                       "in the seed), and its dataset draws random numbers: worker k of every rank draws "
                       "the same random augmentation for different samples")
            hint = ("seed torch per rank (torch.manual_seed(seed + rank)), or give the loader "
                    "generator=g with g.manual_seed(seed + rank)")
        elif found.how == "dataset":
            message = (f"{found.function} reseeds the generators in each loader worker from the worker's id "
                       f"({seeds} at {found.location}: no rank in the seed), which every rank's workers share: "
                       f"the ranks read different samples from the training DataLoader at {found.loader}, but "
                       "worker k of every rank draws the same random augmentation")
            hint = (f"put the rank into {found.function}'s seed (seed + rank * num_workers + worker_info.id), "
                    "or seed from worker_info.seed, which torch makes per worker and per rank's generator")
        else:
            message = (f"the DataLoader at {found.loader} draws its workers' seeds from a generator "
                       f"seeded the same on every rank ({seeds} at {found.location})"
                       + (f", which {found.function} then hands on" if found.function else "")
                       + ": worker k of every rank draws the same random augmentation for different samples")
            hint = "seed the generator per rank: g.manual_seed(seed + rank)"
        if getattr(found, "assumption", ""):
            message = f"if {found.assumption}: {message}"
        problems.append(Problem(message=message, hint=hint, location=found.location,
                                evidence={"loader_location": str(found.loader), "how": found.how,
                                          "worker_init_fn": found.function or None, "seeds": found.seeds,
                                          **({"seed_locations": found.seed_sites + getattr(found, "seed_calls", [])}
                                             if getattr(found, "seed_sites", None) else {})}))
        told[key] = problems[-1]
    return problems
