"""DDP804: DistributedSampler.set_epoch never called (or called with a constant)."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check
from ddpdoctor.lint.facts import LintFacts


@check("DDP804", "DistributedSampler.set_epoch is never called", Severity.WARNING)
def set_epoch_missing(facts: LintFacts) -> list[Problem] | Skipped:
    """
    What it detects:
        A shuffling DistributedSampler whose loader is iterated epoch after epoch, while
        nothing calls `set_epoch` on it (on the sampler, or on `loader.sampler`; a sampler kept
        in a table by split is set by its key, `self.config["sampler"]["train"].set_epoch(e)`
        for `sampler = {"train": train_sampler, ...}` handed on, and one kept beside its loader
        in a table by kind, `loaders[kind] = (loader, sampler)`, by the loop over the table's
        items that unpacks it - a table of loaders read so under no_grad is an evaluation's), or calls
        it with a constant (`sampler.set_epoch(0)` inside the epoch loop, a counter set
        once and never advanced - or advanced only under a rank test, `if not rank: epoch
        += 1`, which leaves every other rank's epoch where it started - or a value the
        loop around the call never moves:
        `set_epoch(args.epochs)` in `for epoch in range(args.epochs)`, or a function's
        parameter that bounds the loop around the call, `for epoch_id in range(epoch):
        sampler.set_epoch(epoch)`; one finding per loop that does it), or calls it only
        in one loop while another loop beside it reads the loader pass after pass (a warm-up's
        epochs before the epoch loop that sets it), or calls it only
        once, before any loop (`sampler.set_epoch(start_epoch - 1)` above the epoch loop: the
        order it fixes is every epoch's; the finding points at that lone call, the line to
        move into the loop). A loader an ignite Engine runs
        (`trainer.run(train_loader, max_epochs=n)`) is read epoch after epoch: the Engine
        sets no sampler's epoch itself (an `Events.EPOCH_STARTED` handler does). A local copy
        of DistributedSampler under another name and base (`DistIterSampler(Sampler)` handed
        `num_replicas` and `rank`, with its own `__iter__` and a `set_epoch`) is one. Not an evaluation
        loader's: one no backward reads, its loops running with gradients off, or built by
        an evaluation builder and read by no training loop, or one no backward reads beside
        the loader that trains (an analysis pass over the training set every few epochs); the
        order of an evaluation changes no result (and `set_epoch(0)` there pins it on purpose). Nor a loader handed
        to `accelerator.prepare`: Accelerate's loader sets the epoch of the sampler it wraps
        at the start of every pass; nor one handed to Lightning Fabric's `setup_dataloaders`
        (also through a list spread into it), whose loader sets the epoch of its sampler and
        batch sampler at every `iter()`. A `set_epoch` on an object of the script's own class that
        iterates nothing and hands no epoch on (a progress reporter's `reporter.set_epoch(ep)`)
        sets no sampler. A loop that back-propagates only to a perturbation of its inputs and
        reads that gradient, stepping no optimizer (a PGD attack, a saliency map, inline or in a
        helper it calls), trains nothing: the test loader it reads is an evaluation's. Of a
        builder making the training loader on one side of `if train_set:` and the test loader
        on the other, the test sampler's loader is what the calls taking that side bind.
        A set_epoch under a test the options as launched make false (`if not
        args.use_batch_sampler:` with the option on by default) sets nothing, where the sampler
        is built all the same; a sampler a helper returns to one side of a choice is set by
        `train_loader.sampler.set_epoch(epoch)` on the loader it feeds; a loop at a module's top
        level reads the binding of its name that reaches it (`tbar = tqdm(val_loader)` after
        the training loop's `tbar = tqdm(train_loader)`). A loop of steps that counts its own
        epochs (`epoch += 1`) and draws batches with `next()` is an epoch loop: a sampler built
        afresh each epoch there (`batches = iter(DataLoader(ds, sampler=DistributedSampler(ds)))`
        under `if iteration % epoch_size == 0:`, the SSD and RetinaFace trainers) starts at epoch
        0 each time. A builder's sampler on the side of a flag its callers turn on only under
        the switch that starts the distributed run (`if args.parallel: mp.spawn(...)`, whatever
        the switch is called) is judged on the run that turns it on, not left as switched off.
        A sampler under a comparison the run as launched makes false is no run's sampler: a
        yacs project's `if cfg.LOADER.MODE == "plain":` where every launch written beside the
        script names a config (`--config-file configs/cub.yaml`) that sets another mode (the
        code's default counts only where a named config leaves the key out); plain switches
        left off by default (`if args.multi_gpu and args.dist:`) are the run asked for by name.
        A sampler a helper builds with `shuffle=shuffle` shuffles as its callers hand it: a
        constant, or a config key every YAML config beside the script settles, read off a
        section (`data_config = config["data"]`, then `shuffle=data_config["shuffle"]` with
        `shuffle: False` in each config) - no shuffle, nothing to set.
        A switch read from the environment (`int(os.environ.get("USE_STORE", 0))`) is what every
        shell launch script of the script exports before the command that runs it (`export
        USE_STORE=0`, or `USE_STORE=0 torchrun ...`), where they all agree and the code never
        writes it itself; otherwise either side may run. `self.loader.epoch = epoch` sets an
        attribute of the DataLoader, which the sampler never reads: no set_epoch. A loader built by
        a class a registry kept as a class attribute hands out (`Factory.builders[name].build(args)`,
        `builders: Dict[str, Any] = {...}` in the class body) is followed like any other.
        A loader handed once to a function the epoch loop calls with another loader (`self.train(
        warmup_loader)` before `for epoch: train_loader.sampler.set_epoch(epoch); self.train(train_loader)`)
        is read one pass, and an evaluation loader built inline as its loop's iterable (`for perm in
        DataLoader(edges, bs, sampler=DistributedSampler(edges)):` in a test() run each epoch) reads
        every item whatever the order: neither is reported.
        Samplers bound by one tuple assignment (`train_sampler, val_sampler = DistributedSampler(a),
        DistributedSampler(b)`) are each known by the name in its place, and a sampler returned at
        its place of a tuple through two helpers (`loader, _, sampler, _ = build(...)` returned by
        `get_loaders()` to the script's `loader, fit_sampler = get_loaders(cfg)`) is the one the
        script's `fit_sampler.set_epoch(epoch)` sets.
        A sampler built under the comparison the process group is set up under (`if args.nodes > 1:
        init_process_group(...)`, `--nodes` defaulting to 1) is judged on the run that turns it on:
        the options' defaults never settle the distributed run's own switch off.

    Why it hurts:
        DistributedSampler shuffles with the seed `seed + epoch`. Without set_epoch the
        epoch stays 0: every epoch visits the samples in the same order, in the same
        batches, on the same rank. Training loses the reshuffling it asked for and
        converges worse; nothing warns. The probe (DDP302) shows it from the batches.

        Not reported: a DistributedSampler subclass that hands its base `shuffle=False` itself
        (`super().__init__(dataset=inds, ..., shuffle=False)`) and whose own `__iter__` reads no
        epoch: set_epoch would only reseed the base's shuffle, which is off.
    How to fix:
        Call set_epoch with the epoch number before iterating:

            for epoch in range(epochs):
                sampler.set_epoch(epoch)        # or loader.sampler.set_epoch(epoch)
                for x, y in loader:
                    ...
    """
    if not facts.samplers:
        return Skipped("no DistributedSampler in the script")
    problems = []
    for sampler in facts.samplers:
        if not sampler.shuffle or sampler.sharded_by_rank or getattr(sampler, "unread", False):
            continue  # (a sampler no loader takes orders nothing: the loader is DDP802's)
        if sampler.constant_epoch is not None:
            # one finding per loop whose set_epoch holds still: each repeats its own order
            for at, pinned, held in [(sampler.constant_epoch, getattr(sampler, "pinned_epoch", ""),
                                      getattr(sampler, "invariant_epoch", None)),
                                     *getattr(sampler, "more_constant_epochs", [])]:
                problems.append(_constant_epoch(sampler, at, pinned, held))
        elif getattr(sampler, "set_epoch_once", None) is not None:
            problems.append(Problem(
                message=(f"{sampler.name} (DistributedSampler at {sampler.location}) shuffles, and its "
                         f"loader is iterated epoch after epoch, but set_epoch runs once, before any loop "
                         f"({sampler.set_epoch_once}): every epoch repeats the same order"),
                hint=f"call {sampler.name}.set_epoch(epoch) at the start of each epoch, inside the epoch loop",
                # (at the lone call: the line to move into the loop)
                location=sampler.set_epoch_once,
                evidence={"sampler": sampler.name, "set_epoch": str(sampler.set_epoch_once), "constant": False,
                          "once": True, "loader_location": str(sampler.loader) if sampler.loader else None,
                          "sampler_line": sampler.location.line if sampler.location.file == sampler.set_epoch_once.file
                          else None}))
        elif getattr(sampler, "set_epoch_under", "") and sampler.across_epochs:
            problems.append(Problem(
                message=(f"{sampler.name} (DistributedSampler at {sampler.location}) shuffles, and its "
                         f"loader is iterated epoch after epoch, but set_epoch is called only where "
                         f"`{sampler.set_epoch_under}` holds ({sampler.set_epoch[0]}): the other ranks keep "
                         "the first epoch's order, and from the second epoch on the ranks' shards overlap"),
                hint=f"call {sampler.name}.set_epoch(epoch) on every rank, outside the rank test",
                location=sampler.location,
                evidence={"sampler": sampler.name, "set_epoch": str(sampler.set_epoch[0]), "constant": False,
                          "under": sampler.set_epoch_under,
                          "loader_location": str(sampler.loader) if sampler.loader else None}))
        elif getattr(sampler, "unset_loop", None) is not None and not getattr(sampler, "epoch_set_by", ""):
            read, setter = sampler.unset_loop
            problems.append(Problem(
                message=(f"{sampler.name} (DistributedSampler at {sampler.location}) shuffles, and the loop "
                         f"at {read} reads its loader pass after pass without set_epoch (only the loop "
                         f"of {setter} sets it): every pass of that loop repeats one order"),
                hint=f"call {sampler.name}.set_epoch(...) at the start of each pass of that loop too "
                     "(a number no other pass uses: a warm-up's own epochs before the main loop's)",
                location=read,
                evidence={"sampler": sampler.name, "set_epoch": str(setter), "constant": False,
                          "unset_loop": str(read),
                          "loader_location": str(sampler.loader) if sampler.loader else None}))
        elif not sampler.set_epoch and sampler.across_epochs and not getattr(sampler, "epoch_set_by", ""):
            problems.append(Problem(
                message=(f"{sampler.name} (DistributedSampler at {sampler.location}) shuffles, and its "
                         "loader is iterated epoch after epoch, but set_epoch is never called"
                         + (f" (the call at {sampler.set_epoch_off} sits under a switch that no way into it "
                            "turns on)" if getattr(sampler, "set_epoch_off", None) else "")
                         + (f" on it (the call at {sampler.set_epoch_stale} sets the sampler the previous "
                            "pass built, before this pass builds the one its loader takes)"
                            if getattr(sampler, "set_epoch_stale", None) else "")
                         + ": the same order every epoch"),
                hint=(f"set it where the Engine that runs the loader ({sampler.run_by}) starts an epoch: "
                      f"`@trainer.on(Events.EPOCH_STARTED)` with `{sampler.name}.set_epoch(engine.state.epoch)`"
                      if getattr(sampler, "run_by", None) else
                      f"call {sampler.name}.set_epoch(epoch) after it is built, before its loader is read"
                      if getattr(sampler, "set_epoch_stale", None) else
                      f"call {sampler.name}.set_epoch(epoch) at the start of every epoch"),
                location=sampler.location,
                evidence={"sampler": sampler.name, "set_epoch": None, "constant": False,
                          "loader_location": str(sampler.loader) if sampler.loader else None}))
    return problems


def _constant_epoch(sampler, at, pinned: str, held) -> Problem:
    """set_epoch(<constant>) at `at`: pinned, the name set once and never advanced; held, (the
    argument, the loop it never changes in)."""
    return Problem(
        message=(f"{sampler.name} (DistributedSampler at {sampler.location}) gets set_epoch with a "
                 f"constant at {at}"
                 + (f" (`{pinned}`, advanced only under `{sampler.pinned_by_rank}`: on the other ranks it "
                    f"never moves)" if pinned and getattr(sampler, "pinned_by_rank", "") and at == sampler.constant_epoch
                    else f" (`{pinned}`, set once and never advanced)" if pinned else "")
                 + (f" (`{held[0]}`, which the loop at {held[1]} never changes)" if held else "")
                 + ": the shuffle order is the same every epoch"),
        hint=(f"advance `{pinned}` each epoch, or pass the epoch number: sampler.set_epoch(epoch)" if pinned
              else f"pass the loop's own epoch number, not `{held[0]}`: sampler.set_epoch(epoch)" if held
              else "pass the epoch number: sampler.set_epoch(epoch)"),
        location=at,
        evidence={"sampler": sampler.name, "set_epoch": str(at), "constant": True,
                  "loader_location": str(sampler.loader) if sampler.loader else None})
