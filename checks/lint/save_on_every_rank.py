"""DDP806: torch.save on every rank."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check
from ddpdoctor.lint.facts import LintFacts


@check("DDP806", "torch.save runs on every rank", Severity.WARNING)
def save_on_every_rank(facts: LintFacts) -> list[Problem] | Skipped:
    """
    What it detects:
        A `torch.save` that every rank reaches - no rank test around it nor around any call
        that leads to it - to a path that does not depend on the rank, in a script that sets
        up a process group (a "rank" a helper module only ever sets to a constant, `ptu.dist_rank
        = 0` with the real rank left in a comment, tests nothing); and one under a per-node test (`if local_rank == 0:`,
        `rank % ngpus_per_node == 0`), which one rank on every node reaches: the global rank
        0 is meant; and one every rank reaches whose path differs only by the rank within a
        node (`final_{local_rank}.pt`, or mp.spawn's index where the script makes the global
        rank as `node * ngpus + gpu`, also where the node's offset is handed in,
        `mp.spawn(train, args=(node_rank * ngpus, ...))` then `rank=offset + gpu`): the same
        local rank of every node writes it. These two
        only where the source is written for several nodes (it names a node rank, the number
        of nodes or a SLURM node id, or a launch beside it - a shell script, or a command of
        the README's blocks that runs this script - starts it on several nodes; not in a package function the script never runs, a
        vendored SLURM set-up beside its own one-node launch, nor an option counting nodes
        that no code reads, such as a graph model's `--node_num`, nor a launch script that sets
        its own variables to one node, `export NUM_NODES=1` then `--nnodes=$NUM_NODES`): code
        that knows only the rank within a node runs as one node, and its local rank 0 is the
        job's rank 0. (A rank made as `args.nr * args.gpus + gpu` with `args.gpus = 1` the
        only value that field is ever set to, and no `--gpus` option, is one process a node:
        `if args.nr == 0:` is the job's rank 0.) A method guessed by its name alone, on a
        receiver whose class is not known (`frames[0].save(out, save_all=True)`), is not one
        the call hands keywords it does not take. A save under a config flag every config
        beside the script sets false (`if cfg.method.save_model:`) is off, as one under an
        option off by default is - also the script's only save in a Lightning run, whose
        Trainer keeps the checkpoints. A library save in an imported function that drives
        the training itself (`trainer.train()`, or a backward) is judged as the entry
        script's, and a DeepSpeed run whose every JSON config beside the script holds a ZeRO
        stage below 3 shards no state a save writes. A `--local_rank` option the launch
        never hands (every launch written beside the script uses torchrun, which puts the local
        rank in LOCAL_RANK alone, and nothing reads that variable) keeps its default on every
        rank: a save under `if args.local_rank == 0:` is every rank's. So does a `--rank`
        option with a number for default that no launch written beside the script hands and
        no code that runs sets (`opts.rank = rank` only in a set-up helper nothing calls): a
        save under `if opts.rank == 0:` is every rank's. A test asked of an object whose
        class is not followed (a namespace handed down through several helpers) by a method
        exactly one class of the project defines is that method's answer: `if not
        state.get_output_flag(): return` where the flag is set by `set_output_flag(rank == 0)`
        is a rank test. Saves under
        `if rank == 0:` (or in a function only called under
        one), to per-rank paths (`f"ckpt-{rank}.pt"`) or to an in-memory buffer are fine,
        and so is a file per sample written while a dataset loads it (a feature cache in
        `__getitem__`: the sampler gives each sample to one rank). A cache of data that
        every rank writes to one path - an object holding no model or optimizer state, built
        where the file is missing and loaded back where it exists, or written by a class
        that serves samples (a dataset's label table, its drop indices) - is told as such:
        the race is the first run's, and its cure is to build it on one rank first.
        Writes under one per-node test are one finding, at the first, the others named (one
        test to fix, whatever tests inside it group them: `if epoch in saved_epochs:`).
        Library writes count the same: a model's `save_pretrained(dir)` (transformers, PEFT,
        diffusers: every calling rank writes unless given `is_main_process=`; a
        `save_function=accelerator.save` alone still leaves config.json, and safetensors
        weights, to every caller), safetensors' `save_file`. A local copy of such a library (a
        vendored `transformers/` whose `save_pretrained` runs `torch.save`) reached only through
        the script's call, itself told, is one write: told once, at that call. Accelerate's `save` /
        `save_state` and a Trainer's `save_model` write from the main process themselves (a
        Trainer subclass's own `save_model`, which the Trainer calls on every process, writes
        wherever it does not test `self.args.should_save` or the like; so does its own `_save`
        under transformers 5, while 4.x's save_model calls `_save` only where `should_save`
        holds, and a project that pins 4.x or uses what only 4.x's Trainer has is read so),
        and a save inside a "rank 0 first" block (a
        context manager that lets rank 0 through, then the others after a barrier, such as
        `accelerator.main_process_first()`, or written out: `if local_rank == 0: ds = Cache()`,
        a barrier, then `ds = Cache()` on every rank) builds a cache the others then read: not reported.
        Nor is a file written inside a lock held across processes (`with FileLock(path +
        ".lock"):`, filelock's or portalocker's) under a test that it is missing: the first
        process to take the lock writes it, the others find it there.
        Nor is a write no rank reaches: one made only by the launcher's `__main__` code before
        it spawns the ranks (mp.spawn), or one after `if return_model: return model` when every
        caller leaves that parameter true, or one on the side of `if model is not None:` that a
        caller's constant (the default None of a load-or-save helper) never takes, or on the
        None side of `if self.accelerator is not None:` where every construction hands the
        object one it built. Nor is a helper's write reached without a rank test only from a
        base class's method that every class the run builds replaces (the DPO trainers' base
        `save()`, where the worker picked by name joins the group only for an FSDP trainer
        whose own `save()` writes on rank 0). A path made new on every call (`uuid.uuid4()`,
        `tempfile.mkstemp()`) or holding the process's id (`os.getpid()`), or the rank's own device (`torch.device(
        f"cuda:{rank}")` handed in and formatted into the name), is each rank's own file, and a cache the same function reads
        back when it exists (`if os.path.exists(p): return torch.load(p)`) is built by local
        rank 0 once per node on purpose: not reported. Nor is a dump made only in an
        `except:` that raises again or exits (the failing rank's state on its way out), nor one under
        `if args.X:` where the option `--X` is off by default (a store_true, None or 0) and no
        launch written beside the script turns it on - unless that option holds every save of
        the script (a `--use_writer` around the checkpoints and the logs alike: a training run
        that keeps nothing is not the one launched); one rank per node's write under such an
        option (`if args.iter_resume: if local_rank == 0:`) alike - nor one in a helper every call of which, a
        few callers up, sits under a test the options as launched make false (`if args.model ==
        "unet": train_unet(...)` with every launch naming another model), nor one in a side
        command that ends the program before any process group is set up (`if args.merge:
        merge_and_save(args); sys.exit(0)` ahead of the training), nor one whose only call
        without a rank test sits under an option off at launch (`if args.debug:`) while the
        others test for rank 0, or under a test that the object holds an attribute only rank 0's
        calls set (`if "models" in self.__dict__:` with `self.models` set in `log_epoch()`,
        itself called under `if rank == 0:`). A tokenizer's, processor's or configuration's
        `save_pretrained` (`AutoConfig.from_pretrained(name).save_pretrained(dir)` too) writes a few
        small files of the same content: not reported. Writes one
        after the other in one block under the same rank tests (model, optimizer, EMA) are one
        finding, at the first, naming the others: one block to move under one rank test.
        A save in a loop over a list bound to `[]` that only rank 0 grows (`to_save.append(
        "model_latest.pth")` under `if ... and is_global_zero:`, then `for name in to_save:
        torch.save(...)`) runs on rank 0 alone. A helper whose every call sits under a test no
        way in passes (a python-fire parameter every launch leaves at False) writes nothing, and
        a value handed only by a call the options as launched never make (`save(state,
        is_swa=True)` under `if args.swa:`, --swa off) is no value the helper's tests see.
        A field of a `collections.namedtuple` record is what its constructions hand it: a
        singleton's `Env.get().master`, built from `dist.get_rank() == 0` (or True where no
        group is set up), is a rank test. A base class's method that only objects built for the
        one-process run keep (`trainer = TrainerDDP(...)` where the group is set up, `Trainer(...)`
        on the other side, TrainerDDP overriding `train()`) saves in that run alone.
        A switch the worker is handed (`if not distr or rank == 0:`) is the distributed run's
        where the worker joins the group only under it (`if distr: setup(rank, world)`), however
        the main block sets it (`distr = False` before `if distr: mp.spawn(main, args=(w, distr))`):
        there only rank 0 saves. A method called by its name alone (`loss.save_state(path)` on an
        item of a list of losses) writes the path those calls hand it: one with the rank in it
        (`os.path.join(ckpt, str(dist.get_rank()), name)`) is each rank's own file.
        A folder set on the options namespace with the rank in it (`config.root_dir = join(
        config.log_dir, f"run_{config.world_rank}")`, then `config.model_dir` under it), handed on
        through the functions that take the config, names each rank's own files. A checkpoint's
        `map_location` only places the loaded tensors: an epoch read back from it is every
        rank's.
        A file named after an item of the rank's own stride (`for i in np.arange(rank, n, world):
        torch.save(m, f"psnr-{i}.pt")`, or `items[rank::world]`; the one-process side of `if
        "RANK" in os.environ:` walking every item) is each rank's own; not a count of the rank's
        shard (`range(len(shard))`, the same numbers on every rank). A build written out between
        barriers (`if not is_master: dist.barrier()` above it, `if is_master: dist.barrier()`
        below it) of a class that skips what exists is rank 0 first, as `with main_first():` is.
        A library dataset's constructor runs the subclass's hooks (PyG's `InMemoryDataset` its
        `download()` and `process()`, DGL's `DGLDataset` its `process()` and `save()`) where the
        subclass's `__init__` calls `super().__init__(...)`: their writes are a cache every rank
        that builds the dataset writes.
        A feature extractor's `save_pretrained` is told by the class the name holds too
        (`extractor = WhisperFeatureExtractor.from_pretrained(name)`): a side file, not reported.
        A main-process flag bound on the side of `if args.use_accelerate:` that builds the
        Accelerator (`is_main = accelerator.is_main_process`, `else: is_main = True`) is the
        main process's test on the run that turns the switch on, off by default or not.
        A hook handed to `register_save_state_pre_hook` writes where `save_state()` runs: a call of
        it under a test the engine passes (`if accelerator.distributed_type == DistributedType.FSDP:`)
        is no run's when every launch names a MULTI_GPU config, so a hook reached otherwise only
        under `is_main_process` writes on the main process alone.
        The loader a trainer keeps from its constructor (`self.data_loader = data_loader`, built by
        `config.init_data_loader()` returning a DataLoader subclass the config names) hands each
        rank its own batches: per-index files written from them (`params_{idx}.pt`) have one
        writer each.

    Why it hurts:
        Every rank writes the same file at the same time. On a shared filesystem the writes
        interleave: a truncated or mixed checkpoint, found only when a resume fails. It also
        costs N times the I/O. The probe (DDP701) sees the ranks open the same path.

    How to fix:
        Save from one rank, and let the others wait for it if they read it back:

            if dist.get_rank() == 0:
                torch.save(model.module.state_dict(), path)
            dist.barrier()      # every rank, outside the if
    """
    if facts.distributed is None and facts.framework is None:
        return Skipped("the script sets up no process group")
    # one writer per node only where the code is written for several nodes (a node rank, the
    # node count): code that knows only the rank within a node is a one-node job as written
    nodes = facts.nodes
    per_node = _blocks([s for s in facts.saves if not s.every_rank and s.per_node]) if nodes else []
    node_local = _blocks([s for s in facts.saves if getattr(s, "local_path", "")]) if nodes else []
    multi = f" (the project runs on several nodes: {nodes})" if nodes else ""
    every = _blocks([s for s in facts.saves if s.every_rank])
    return [Problem(
        message=(f"{_written(save)} at {save.location}{_and(more)} runs on one rank per node: "
                 f"`{save.per_node}` is true on local rank 0 of every node, not on global rank 0 alone{multi}. "
                 "On several nodes sharing a filesystem, each node's writer saves the same file at once"),
        hint="save where the global rank is 0 (`dist.get_rank() == 0`), or write to a per-node path "
             "when the nodes do not share a filesystem",
        location=save.location,
        evidence=_also({"path": save.path_text, "why": f"under {save.per_node}", "per_node": True,
                        "nodes_at": str(nodes)}, more),
    ) for save, more in per_node] + [Problem(
        message=(f"{_written(save)} at {save.location}{_and(more)} runs on every rank, and its path differs only "
                 f"by `{save.local_path}`, the rank within a node{multi}: on several nodes sharing a filesystem, the "
                 "same local rank of every node writes the same file at once"),
        hint="put the global rank in the path (`dist.get_rank()`), or save where the global rank is 0",
        location=save.location,
        evidence=_also({"path": save.path_text, "why": save.reason, "per_node": True, "nodes_at": str(nodes)}, more),
    ) for save, more in node_local] + [Problem(
        message=(f"{_written(save)} at {save.location}{_and(more)} runs on every rank ({save.reason}): "
                 f"{save.data_cache}, which every rank of a first run builds and writes at once - a rank "
                 "that finds the file half-written loads a torn one"),
        hint=("build it on one rank first: every other rank waits at a barrier while rank 0 builds and "
              "writes the cache, then loads it (`if rank != 0: dist.barrier()` before the build, "
              "`if rank == 0: dist.barrier()` after it)"),
        location=save.location,
        evidence=_also({"path": save.path_text, "why": save.reason, "data_cache": save.data_cache,
                        **_call_site(save)}, more),
    ) for save, more in every if getattr(save, "data_cache", "")] + [Problem(
        message=(f"{_written(save)} at {save.location}{_and(more)} runs on every rank ({save.reason}): "
                 "all ranks write the same file at once"),
        hint=("tell it which process writes: `save_pretrained(dir, is_main_process=accelerator.is_main_process)` "
              "(or `dist.get_rank() == 0`), or call it under that test; then a barrier before anyone reads it"
              if (save.call or "").endswith("save_pretrained") else
              "save on one rank only: `if dist.get_rank() == 0: torch.save(...)`, then dist.barrier() "
              "on every rank before anyone reads it"),
        location=save.location,
        evidence=_also({"path": save.path_text, "why": save.reason, **_call_site(save)}, more),
    ) for save, more in every if not getattr(save, "data_cache", "")]


def _call_site(save) -> dict:
    """The call into the save's helper that no rank test guards where the helper's other callers
    have one (the message names it too): the place the slip is."""
    site = getattr(save, "call_site", None)
    return {"call_site": str(site)} if site is not None else {}


def _blocks(saves: list) -> list:
    """(first write, the later writes of its block): writes one after the other in one block,
    under the same rank tests (model, optimizer, EMA), are one thing to fix, told once."""
    groups: dict = {}
    order = []
    for save in saves:
        key = save.block or str(save.location)
        if key not in groups:
            groups[key] = []
            order.append((save, groups[key]))
        else:
            groups[key].append(save)
    return order


def _and(more: list) -> str:
    if not more:
        return ""
    lines = ", ".join(str(s.location.line) for s in more)
    return f" (and {len(more)} more write{'s' if len(more) > 1 else ''} in the same block, line{'s' if len(more) > 1 else ''} {lines})"


def _also(evidence: dict, more: list) -> dict:
    if more:
        evidence["also"] = [s.location.line for s in more]
    return evidence


def _written(save) -> str:
    """`torch.save(..., path)` / `model.save_pretrained(dir)`, as the save was written."""
    how = getattr(save, "call", "torch.save")
    return f"torch.save(..., {save.path_text})" if how == "torch.save" else f"{how}({save.path_text})"
