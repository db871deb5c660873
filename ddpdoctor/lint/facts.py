"""The facts the lint checks judge (checks/lint/), gathered from a Program: collectives under a
rank test, DataLoaders and their samplers, set_epoch calls, accumulation loops, torch.save calls.

Each fact holds what a finding needs (file:line, the guarding test, the call chain) and no AST,
so a check is a small pure function and a unit test can build facts by hand.
"""

from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass, field
from typing import Optional

from ddpdoctor.core.findings import Location
from ddpdoctor.lint import (batch_flags, bypass, config_files, data_keys, data_sized, dataset_seeds, defaults,
                            multi_node, no_sync, process_seeds, rank_state, shard_metrics, signal_state,
                            trainer_data, worker_seeds)
from ddpdoctor.lint.accumulation_facts import AccumulationFact, AccumulationFacts
from ddpdoctor.lint.collective_facts import CollectiveFacts, GuardedCollective
from ddpdoctor.lint.fact_builder import BuilderCore, loc
from ddpdoctor.lint.no_sync import SYNC_WORDS
from ddpdoctor.lint.pinned_device import pinned_one_process
from ddpdoctor.lint.nodes import walk
from ddpdoctor.lint.loader_facts import LoaderFact, LoaderFacts, SamplerFact
from ddpdoctor.lint.patterns import SETUP_CALLS, discarded, dotted, env_key, is_const, keyword, kept_parameters, last_name, passing_loader_class, text
from ddpdoctor.lint.program import Program
from ddpdoctor.lint.save_facts import SaveFact, SaveFacts
from ddpdoctor.lint.sources import IMPORTERS, dynamic_spec, setup_in_unread

__all__ = ["AccumulationFact", "FactBuilder", "GuardedCollective", "LintFacts", "LoaderFact", "SamplerFact",
           "SaveFact", "build", "loc"]


# Libraries whose ranks come from MPI (a plain `python train.py` is a world of one)
MPI_RANKED = ("mpi4py", "torchpack", "horovod")


@dataclass
class LintFacts:
    script: str
    files: list[str]
    statements: int
    distributed: Optional[Location]  # where the script sets up distributed training
    distributed_how: str
    framework: Optional[str]  # "accelerate" | "lightning" | "transformers" | None
    ddp_model: bool  # a DistributedDataParallel is built
    no_sync: bool  # no_sync / require_backward_grad_sync appear in the source
    accumulate: bool = False  # accelerator.accumulate() / gradient_accumulation_steps= appear
    guarded_collectives: list[GuardedCollective] = field(default_factory=list)
    loaders: list[LoaderFact] = field(default_factory=list)
    samplers: list[SamplerFact] = field(default_factory=list)
    accumulations: list[AccumulationFact] = field(default_factory=list)
    saves: list[SaveFact] = field(default_factory=list)
    elapsed_s: float = 0.0
    functions: int = 0  # functions and methods read
    unreachable: int = 0  # of those, never run from the entry script: not judged
    notes: list[str] = field(default_factory=list)  # files not read, and why
    cached: bool = False  # read from the cache: no file changed since the last lint
    data_sized: list = field(default_factory=list)  # lint/data_sized.DataSizedCollective (DDP807)
    unranked_seeds: list = field(default_factory=list)  # lint/worker_seeds.UnrankedSeed (DDP808)
    rank_local: list = field(default_factory=list)  # lint/rank_state.RankLocalDecision (DDP809)
    bypassed: list = field(default_factory=list)  # lint/bypass.BypassedBackward (DDP810)
    # datasets handed to a transformers Trainer that keep one rank's share themselves (DDP803)
    trainer_shards: list = field(default_factory=list)  # lint/trainer_data.TrainerShard
    # Where a function the script never reaches sets up the process group, when nothing it
    # reaches does (agents built through a registry of lambdas): the rules could not judge it.
    unreached_setup: Optional[Location] = None
    # the script sets up the process group but reaches no training code of its own, and runs a
    # class its config names (`hydra.utils.get_class(cfg._target_)(cfg).run()`): where
    config_named: Optional[Location] = None
    # the script splits the ranks into process groups (`dist.new_group`, `init_device_mesh`, a
    # library's `initialize_model_parallel`): ranks of one group work on the same batch together
    # (tensor or pipeline parallelism), so every rank reading every batch may be the design
    subgroups: bool = False
    # why the analysis stopped before a verdict (its budget spent: lint/program.AnalysisBudget);
    # "" when it ran to the end
    stopped: str = ""
    # where the source tells the nodes of the job apart (a node rank, the number of nodes, a
    # SLURM node id: lint/multi_node), None where it knows only the rank within a node
    nodes: Optional[Location] = None
    # the script sets up the process group, reaches no backward, and calls a name it neither
    # defines nor imports (`train_ddp(model, ...)` with the import left out): where, and the name
    undefined_call: Optional[Location] = None
    undefined_name: str = ""
    # every launcher command beside the script starts one process (`mpiexec -n 1 python
    # train.py`): "file: command" of the first (config_files.one_process_launch), "" otherwise
    one_process_launch: str = ""
    # the script pins one visible GPU and starts a process per GPU it sees: "file:line: the pin"
    # (lint/pinned_device.py), "" otherwise
    one_device_pinned: str = ""


# Receivers of an `.accumulate(...)` that is no Accelerator's context: numpy's ufuncs, itertools.
_NOT_ACCELERATORS = frozenset({"np", "numpy", "itertools", "torch", "operator"})

# The calls that set up the default process group, by their last name.


# Library calls that set up the default process group by their full name (OpenMMLab's
# `init_dist(launcher)` reads RANK / WORLD_SIZE and calls init_process_group)
LIBRARY_SETUPS = frozenset({"mmcv.runner.init_dist", "mmcv.runner.dist_utils.init_dist", "mmengine.dist.init_dist",
                            "mmengine.dist.utils.init_dist",
                            # Colossal-AI's launchers set up the default process group (FastFold)
                            "colossalai.launch", "colossalai.launch_from_torch", "colossalai.launch_from_slurm",
                            "colossalai.launch_from_openmpi",
                            # detectron2's launch(main, num_gpus, ...): spawns one process per GPU
                            # (or runs in the one torchrun started), sets up the group, calls main
                            "detectron2.engine.launch", "detectron2.engine.launch.launch",
                            "detectron2.engine.defaults.launch",
                            # audiotools' Accelerator (DAC and the codecs built on it) calls
                            # init_process_group when the launcher set LOCAL_RANK
                            "audiotools.ml.Accelerator", "audiotools.ml.accelerator.Accelerator"})


def _unbound(program, func: ast.AST, fn) -> Optional[str]:
    """`Accelerator = argbind.bind(ml.Accelerator, without_prefix=True)` then `Accelerator()`:
    argbind's bind hands back the callable it was given (its defaults read from the command
    line), so the call is the library's. Its full name, or None."""
    if func.__class__ is not ast.Name:
        return None
    found = program.lookup(func.id, fn)
    if len(found) != 1:
        return None
    value, scope = found[0][1], found[0][2]
    if isinstance(value, ast.Call) and value.args and program.qualify(value.func, scope) == "argbind.bind":
        return program.qualify(value.args[0], scope)
    return None


def _engine_setup(call: ast.Call, full: str) -> bool:
    """`deepspeed.initialize(model=...)`: it sets up the default process group itself unless
    told not to (`dist_init_required=False`), and many scripts call nothing else; OpenMMLab's
    init_dist always does."""
    if full in LIBRARY_SETUPS:
        return True
    return full == "deepspeed.initialize" and not any(
        kw.arg == "dist_init_required" and isinstance(kw.value, ast.Constant) and kw.value.value is False
        for kw in call.keywords)


class FactBuilder(CollectiveFacts, LoaderFacts, AccumulationFacts, SaveFacts, BuilderCore):
    """Every check's facts over one program: each check's gatherer is a mixin in its own module
    (lint/collective_facts.py, loader_facts.py, accumulation_facts.py, save_facts.py), over the
    walks they share (lint/fact_builder.BuilderCore)."""


def _world_of_one(fn, call: ast.Call) -> bool:
    """The set-up call makes a group of one process: `world_size=1` given to it, or the function
    writes WORLD_SIZE as the constant 1 into the environment before an env:// set-up."""
    size = next((kw.value for kw in call.keywords if kw.arg == "world_size"), None)
    if size is not None:
        return isinstance(size, ast.Constant) and size.value in (1, "1")
    # Only a write every run makes: `if "RANK" not in os.environ: os.environ["WORLD_SIZE"] = "1"`
    # is the fallback of a run no launcher started, and torchrun's WORLD_SIZE stands otherwise.
    return any(isinstance(node, ast.Assign) and len(node.targets) == 1 and env_key(node.targets[0]) == "WORLD_SIZE"
               and isinstance(node.value, ast.Constant) and node.value.value in (1, "1")
               and node.lineno < call.lineno for node in _every_run(getattr(fn.node, "body", [])))


def _every_run(body: list[ast.stmt]):
    """The statements of a body that run whenever it does: not under an `if`, a loop or an
    exception handler (a `with` block's and a `try` block's own statements do run)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            yield from _every_run(stmt.body)
        elif isinstance(stmt, ast.Try):
            yield from _every_run(stmt.body)


# Calls handed `gradient_accumulation_steps=` that accumulate nothing themselves: Accelerate's
# own (its backward only divides the loss), and a namespace the options are packed into
# (`SimpleNamespace(gradient_accumulation_steps=...)` of a python-fire main, pytorchvideo-accelerate)
_NO_ACCUMULATOR = frozenset({"Accelerator", "GradientAccumulationPlugin", "SimpleNamespace", "Namespace", "dict",
                             "EasyDict", "edict", "AttrDict"})




def _aliased_setup(program: Program, call: ast.Call, fn) -> bool:
    """`init_fn = dist_c10d.init_process_group` (one of two backends picked), then `init_fn(...)`:
    a local name bound only to set-up functions (old fairseq's distributed_init)."""
    if call.func.__class__ is not ast.Name or call.func.id not in fn.bindings:
        return False
    held = [value for _, value in fn.bindings[call.func.id]]
    return bool(held) and all(value.__class__ in (ast.Attribute, ast.Name) and last_name(value) in SETUP_CALLS
                              for value in held)


def build(program: Program, script: str) -> LintFacts:
    """All the facts of one program."""
    builder = FactBuilder(program)
    distributed, how, framework, ddp, thrown = None, "", None, False, False
    off: set[int] = set()  # set-up calls no way in switches on
    ones: list[Location] = []  # set-ups of a group of one process (world size 1)
    # `class Lite(LightningLite): def run(self): ...` then `Lite(strategy="ddp").run()`: the
    # script's own subclass of Lightning's Fabric (LightningLite before it) is the framework
    fabric = {k.name for k in program.classes if program.uses_lightning() and any(
        b.rpartition(".")[2] in ("Fabric", "LightningLite") for b in program.library_bases(k))}
    for fn, call, _, _ in builder.calls():
        full = program.qualify(call.func, fn) or ""
        name = last_name(call.func) or ""
        sets_up = name in SETUP_CALLS or _engine_setup(call, _unbound(program, call.func, fn) or full) or \
            _aliased_setup(program, call, fn)
        if (sets_up or program.ddp_call(call, fn)) and builder.switched_off(fn, call):
            off.add(id(call))  # under `if is_distributed:` with the flag left False on every way in
            continue
        if sets_up and _world_of_one(fn, call):
            # `os.environ["WORLD_SIZE"] = "1"` (or world_size=1) right before it: every process
            # is a group of its own, nothing is split between ranks (a DDP-shaped one-GPU run)
            off.add(id(call))
            ones.append(loc(fn, call))
            continue
        if distributed is None and sets_up:
            distributed, how = loc(fn, call), f"{text(call.func)}()"
        if program.ddp_call(call, fn) and not discarded(fn, call) and not _dropped_by_callers(builder, fn, call) \
                and not _never_called(builder, fn):
            ddp = True
        elif program.ddp_call(call, fn) and discarded(fn, call) and not _never_called(builder, fn):
            thrown = True  # (no DDP model: but a loop training what it was handed trains it plain, DDP810)
        if program.uses("accelerate") and (name == "Accelerator" or name[:1].isupper() and any(
                c.startswith("accelerate.") and c.endswith(".Accelerator") for c in program.library_classes(call, fn))):
            framework = "accelerate"  # also a local subclass, or the class imported under another name
        elif (name in ("Trainer", "Fabric") and program.uses_lightning() and not full.startswith("transformers")) \
                or name in fabric:
            framework = framework or "lightning"
        elif trainer_data.hf_trainer(program, call, fn):
            framework = framework or "transformers"  # also the script's own subclass of HF's Trainer
    if framework is None and program.uses_lightning() and any(
            b.endswith("LightningModule") for k in program.classes for b in program.library_bases(k)) and any(
            last_name(call.func) == "fit" for _, call, _, _ in builder.calls()):
        # the script's own LightningModule fitted by a Trainer the source never names a call to
        # (`trainer: Trainer = hydra.utils.instantiate(cfg.trainer)`): Lightning still runs it
        framework = "lightning"
    if distributed is None and framework is not None:
        how = framework
    if distributed is None and ones and not how:
        how = f"only a group of one process (world size 1 at {ones[0]})"
    if distributed is None and ddp and not ones:
        # (a DDP model in a group of one, the only set-up a world of one: no other rank)
        for fn, call, _, _ in builder.calls():
            if program.ddp_call(call, fn) and not builder.switched_off(fn, call):
                distributed, how = loc(fn, call), "DistributedDataParallel(...)"
                break
    accumulate = False
    syncing = set()  # the files that mention no_sync
    for f in program.files:
        attrs = {n.attr for n in f.of(ast.Attribute)}
        if attrs & SYNC_WORDS:
            syncing.add(id(f))
        # (`Accelerator(gradient_accumulation_steps=K)` itself skips no sync: its backward()
        # only divides the loss by K; the sync is skipped inside `accelerator.accumulate(model)`)
        # (called: `with accelerator.accumulate(model):`; a field named so, `self.accumulate = 4`,
        # is a count, not the context)
        # (not numpy's `np.add.accumulate(lengths)`, a ufunc's running sum: RDDM's vendored random_split)
        accumulate = accumulate or any(c.func.__class__ is ast.Attribute and c.func.attr == "accumulate"
                                       and (dotted(c.func.value) or "").split(".")[0] not in _NOT_ACCELERATORS
                                       for c in f.of(ast.Call)) or \
            any(kw.arg == "gradient_accumulation_steps" for c in f.of(ast.Call)
                if last_name(c.func) not in _NO_ACCUMULATOR for kw in c.keywords)
    # only where it can run: a helper nothing calls (EDM's `ddp_sync`, imported with the module
    # for another name) syncs nothing; a lambda or closure inside a called one does
    # (a guessed receiver counts here: `backend.get_context_for_microstep_forward(...)` over
    # several backends' methods may be the one that syncs)
    called = {t for fn in builder.functions for e in fn.events if e.kind in ("call", "ref")
              for t in (*e.targets, *e.weak)} if syncing else set()
    no_sync = any(isinstance(n, ast.Attribute) and n.attr in SYNC_WORDS
                  for fn in builder.functions
                  if id(fn.file) in syncing and (isinstance(fn.node, ast.Module) or fn in called
                                                 or fn.name.startswith("on_"))
                  for n in (fn.own if isinstance(fn.node, ast.Module) else walk(fn.node)))
    loaders = builder.loaders(framework)
    reachable = {id(f.node) for f in program.reachable}
    # (and the local DataLoader subclasses that take a DataLoader's options as they come)
    subclasses = {k.name: kept_parameters(k) for k in program.classes if passing_loader_class(program, k)}
    seeds = worker_seeds.gather(program.files, reachable, program.functions, subclasses)
    # (worker_seeds reads the files on their own: a loader on a side of its builder's switch no
    # call takes - `if not is_ddp:` of `create_dataloaders(True, ...)` - is built on no way in)
    seeds = [s for s in seeds if str(s.loader) not in builder.off_loaders]
    # (and one whose dataset draws no random numbers: alike seeds make nothing alike there)
    seeds = [s for s in seeds if not process_seeds.draws_nothing(builder, s)]
    # (a dataset that reseeds every generator in its workers itself - from the worker's id alone
    # - decides what they draw, whatever seed the loader hands them: one finding, that one)
    reseeded = dataset_seeds.gather(builder, loaders, seeds)
    facts = LintFacts(
        accumulate=accumulate,
        script=script, files=[f.display for f in program.sources],
        statements=sum(f.statements for f in program.files),
        distributed=distributed, distributed_how=how, framework=framework, ddp_model=ddp,
        no_sync=no_sync,
        guarded_collectives=builder.guarded_collectives(), loaders=loaders,
        samplers=builder.samplers(loaders), accumulations=builder.accumulations() + builder.late_sync_flags(),
        saves=builder.saves(),
        functions=sum(1 for f in program.functions if not isinstance(f.node, ast.Module)),
        unreachable=program.skipped,
        data_sized=data_sized.gather(program.files, reachable) + data_keys.gather(program.files, reachable),
        unranked_seeds=seeds + process_seeds.gather(builder, loaders, seeds + reseeded) + reseeded,
        # (an FSDP model's forward all-gathers: a rank that skips it strands the others too)
        rank_local=_rank_local(builder, ddp or builder.builds_fsdp() or framework is not None, loaders),
        trainer_shards=trainer_data.gather(builder) if framework is not None else [],
        bypassed=bypass.gather(builder) if ddp or thrown or framework == "accelerate" else [],
        unreached_setup=_unreached_setup(program, off) if distributed is None and framework is None else None,
        subgroups=any(_splits_the_world(c) for f in program.reachable for c in f.own_calls),
        # (a loader the script builds and hands on, no loop of its own training on it, leaves the
        # training to what the config names all the same; so does a DDP model it wraps and hands
        # on: ASR-Wav2vec-Finetune's trainer class comes from its TOML)
        config_named=_config_named(builder) if distributed is not None and framework is None
        and not any(loader.trains for loader in loaders) else None)
    if distributed is not None and framework is None and facts.config_named is None and \
            not any(loader.trains for loader in loaders):
        missing = _undefined_call(builder)
        if missing is not None:
            facts.undefined_call, facts.undefined_name = missing
    # asked only where a training loader has no DistributedSampler (DDP802 says how sure it is)
    # (or where a Trainer subclass's own sampler is sharded again by the library's loader: DDP803)
    if program.sources and (any(loader.trains and loader.sampler != "distributed" for loader in loaders)
                            or any(getattr(s, "sampler", "") for s in facts.trainer_shards)):
        # (a plain `python train.py` is one process where the ranks come from MPI - mpi4py, or
        # the libraries built on it, torchpack.distributed and Horovod - or where a Hugging
        # Face Trainer trains - it starts no processes - and nothing spawns)
        facts.one_process_launch = config_files.one_process_launch(
            program.sources[0].path, program.sources[0].hydra_configs,
            plain_one=(any(program.uses(m) for m in MPI_RANKED) or framework == "transformers")
            and not program.ranks.live_spawn_targets())
        facts.one_device_pinned = pinned_one_process(program)
    # asked only where a save is one rank's per node (the look reads every file's text and may
    # walk the script's folder for launch scripts), after the other facts as before
    if any(s.per_node or s.local_path for s in facts.saves):
        reached = getattr(program, "reachable", None)
        # (the functions of the package the script imports that it never runs; the script's own
        # file says what it is written for, reached or not)
        own = program.sources[0].display if program.sources else None
        # (and those reached only where the constant a caller is always handed rules them out:
        # `init_dist('pytorch')` never runs the dispatcher's SLURM set-up)
        ruled_out = defaults.ruled_out_by_arguments(reached) if reached is not None else set()
        unreached = tuple((f.file.display, f.node.lineno, f.node.end_lineno) for f in program.functions
                          if reached is not None and (f not in reached or f in ruled_out)
                          and not isinstance(f.node, ast.Module)
                          and f.node.lineno is not None and f.file.display != own)
        facts.nodes = multi_node.told_apart(program.files, program.sources[0] if program.sources else None,
                                            unreached)
    return facts


def _rank_local(builder, ddp: bool, loaders: list) -> list:
    """DDP809's decisions: a test on a flag of the batch (batch_flags) is told once, in its own
    words, not again as a test on the batch's values (rank_state); a test on a sharded
    evaluation's metric (shard_metrics) once, where nothing else told it."""
    builder.callers()  # (the calls resolved: a one-process pick is known once they are)
    # a function only the one-process side of a pick on the distributed flag runs (`run_epoch =
    # self._run_epoch_ddp if self._ddp else self._run_epoch`) decides nothing between ranks
    aside = [(f.file.display, f.node.lineno, f.node.end_lineno) for f in builder.program.one_process_picks
             if builder.one_process_pick(f)]
    flags = batch_flags.gather(builder, ddp)
    told = {str(d.location) for d in flags}
    found = [d for d in rank_state.gather(builder, ddp) if not (d.kind == "tensor_value" and str(d.location) in told)] \
        + flags + signal_state.gather(builder, ddp)
    found = rank_state.one_per_cause(builder, found)  # (a test inside another's block: its way out)
    told = {str(d.location) for d in found}
    found += [d for d in shard_metrics.gather(builder, ddp, loaders) if str(d.location) not in told]
    return [d for d in found if not any(d.location.file == file and start <= (d.location.line or 0) <= end
                                        for file, start, end in aside)]


# Calls that split the ranks into groups that cooperate on one batch (torch.distributed's,
# fairscale's / Megatron's model-parallel initializers), or make the ranks stages of one pipeline
# (torch.distributed.pipelining's stages and schedules: every stage reads the same batches).
SUBGROUP_CALLS = frozenset({"new_group", "new_subgroups", "new_subgroups_by_enumeration", "init_device_mesh",
                            "DeviceMesh", "initialize_model_parallel", "PipelineStage", "ScheduleGPipe",
                            "Schedule1F1B", "ScheduleInterleaved1F1B", "ScheduleInterleavedZeroBubble"})


def _splits_the_world(call: ast.Call) -> bool:
    """A SUBGROUP_CALLS call that parts the ranks: not `dist.new_group(backend="gloo")` with no
    ranks, a second group over the whole world (detectron2's comm keeps one for object gathers)."""
    name = last_name(call.func)
    if name not in SUBGROUP_CALLS:
        return False
    if name == "new_group":
        ranks = call.args[0] if call.args else keyword(call, "ranks")
        return ranks is not None and not is_const(ranks, None)
    return True


# Hydra's documented ways to make an object from a config's `_target_` (hydra.utils).
CONFIG_MAKERS = {"get_class", "get_method", "instantiate", "call"}


def _config_named(builder: FactBuilder) -> Optional[Location]:
    """A call that makes what a config's `_target_` names (hydra.utils.get_class / instantiate),
    where no backward is reached either: the training code is chosen by the config, and the
    lint did not read it."""
    program = builder.program
    found = None
    for fn, call, _, _ in builder.calls():
        if last_name(call.func) == "backward":
            return None
        full = program.qualify(call.func, fn) or ""
        if found is None and full.startswith("hydra.") and last_name(call.func) in CONFIG_MAKERS:
            found = loc(fn, call)
        # `importlib.import_module(cfg.trainer.type).Trainer(cfg)` (Neuralangelo): a module the
        # config names at run time, which the lint cannot read
        if found is None and full == "importlib.import_module" and call.args and \
                not isinstance(call.args[0], ast.Constant):
            found = loc(fn, call)
    return found


def _undefined_call(builder: FactBuilder) -> Optional[tuple[Location, str]]:
    """(where, name) of a call in the entry script, where no backward is reached, of a plain
    name the script neither defines, binds nor imports (no `import *` either): as written the
    run stops there with a NameError, and the code it meant to run (the training) was not read."""
    program = builder.program
    script = program.sources[0] if program.sources else None
    if script is None or script.tree is None or any(
            isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names) for n in script.of(ast.ImportFrom)):
        return None
    if RUNTIME_NAMES.search(script.text if script.text is not None else "\n".join(script.lines)):
        return None  # (`globals().update(...)`, `exec(...)`, `setattr(sys.modules[__name__], ...)`)
    for fn, call, _, _ in builder.calls():
        if last_name(call.func) == "backward":
            return None
    # every name the script binds anywhere (any scope: an assignment, a loop, a def, an import,
    # an `except ... as`, a parameter), and the builtins: a call of any other is a NameError
    known = set(dir(builtins)) | {"__file__", "__name__"} | _bound_names(script.tree)
    for fn, call, _, _ in builder.calls():
        if fn.file is script and call.func.__class__ is ast.Name and call.func.id not in known:
            return loc(fn, call), call.func.id
    return None


# Ways a module makes names at run time that no statement binds.
RUNTIME_NAMES = re.compile(r"\bglobals\(\)|\bexec\(|sys\.modules\[__name__\]|__builtins__")


def _bound_names(tree: ast.AST) -> set[str]:
    found: set[str] = set()
    for node in walk(tree):
        kind = node.__class__
        if kind is ast.Name and node.ctx.__class__ is not ast.Load:
            found.add(node.id)
        elif kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            found.add(node.name)
        elif kind is ast.arg:
            found.add(node.arg)
        elif kind is ast.ExceptHandler and node.name:
            found.add(node.name)
        elif kind in (ast.Import, ast.ImportFrom):
            found.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif kind in (ast.Global, ast.Nonlocal):
            found.update(node.names)
        elif kind is ast.MatchAs and node.name:
            found.add(node.name)
    return found


def _unreached_setup(program: Program, off: set) -> Optional[Location]:
    """A process-group set-up inside a function of the files read (none the script reaches
    does one, or the caller would not ask): code that runs distributed where the lint could
    not follow. A set-up in another module's `if __name__ == "__main__":` is that module's own
    entry point, not this script's, and is left out."""
    for source in program.files:
        calls = [c for c in source.of(ast.Call) if last_name(c.func) in SETUP_CALLS and id(c) not in off]
        if not calls:
            continue
        defs = source.of(ast.FunctionDef, ast.AsyncFunctionDef)
        for call in calls:
            if any(d.lineno <= call.lineno <= (d.end_lineno or d.lineno) for d in defs):
                return Location(source.display, call.lineno)
    # a module loaded by a name the source does not spell (`import_module(cfg["trainer"])`):
    # the local modules never read that set up a process group are where the job's code lives
    if any(last_name(c.func) in IMPORTERS and dynamic_spec(c) is None and c.args
           for source in program.files for c in source.of(ast.Call)):
        read = {f.path for f in program.files}
        script = program.sources[0].path if program.sources else None
        if script is not None:
            return setup_in_unread(script, read, SETUP_CALLS)
    return None


def _never_called(builder, fn) -> bool:
    """A method of a local class no library runs (no framework base), which no call in the
    source reaches: live because its class is built, but the DDP wrapper it would make is never
    made (continual-medseg-distill's `DistContext.wrap_model`, only named in a docstring at the
    commit before its fix)."""
    program = builder.program
    if isinstance(fn.node, ast.Module) or fn.cls is None or fn.name.startswith("__") or \
            fn in program.entry_functions or fn in program.ranks.live_spawn_targets():
        return False
    if any(b.rsplit(".", 1)[-1] not in ("object", "Module") for b in program.library_bases(fn.cls)):
        return False  # (a framework's class: it may call any method by name)
    return fn not in builder.callers()


def _dropped_by_callers(builder, fn, call: ast.Call) -> bool:
    """`models = DistributedDataParallel(model)` kept in a local name of a helper whose every
    caller drops what it returns (`manager.init_training(model, optimizer)` as a statement,
    ARDM's): the wrapper never reaches the loop."""
    if isinstance(fn.node, ast.Module):
        return False
    kept = [node for node in fn.own_of(ast.Assign) if any(n is call for n in walk(node.value))]
    if not kept or not all(t.__class__ is ast.Name for node in kept for t in node.targets):
        return False
    names = {t.id for node in kept for t in node.targets}
    returned = {n.id for r in fn.own_of(ast.Return) if r.value is not None
                for n in walk(r.value) if n.__class__ is ast.Name}
    wrapped_at = min(node.lineno for node in kept)
    if not names <= returned or any(  # only handed back: not run here (`model(x)`, `model.train()`)
            c.__class__ is ast.Call and c.lineno > wrapped_at  # (`models = models.to(device)` above the wrap is the plain one)
            and any(n.__class__ is ast.Name and n.id in names for n in walk(c.func))
            for c in fn.own):
        return False
    sites = builder.callers().get(fn, [])
    return bool(sites) and all(
        event.kind == "call" and any(n.__class__ is ast.Expr and n.value is event.node for n in caller.own)
        for caller, event in sites)
