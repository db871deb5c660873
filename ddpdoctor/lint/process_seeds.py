"""DDP808's third way: every rank seeds its own torch generator alike, and a training loader's
workers inherit it.

A DataLoader draws its workers' base seed from the rank's torch generator (the loader's
`generator=`, else the process's default one): worker k is seeded `base_seed + k`, and torch
seeds `random` and numpy in the worker from that too. A script that calls
`torch.manual_seed(args.seed)` (or `seed_everything(cfg.seed)`, transformers' / Accelerate's
`set_seed(seed)`) with the same value on every rank therefore gives worker k of every rank the
same base seed: the ranks read different samples, and the k-th of each gets the same random
crop, flip, masking. A `worker_init_fn` that reseeds from `torch.initial_seed()`,
`get_worker_info().seed` or numpy's state in the worker keeps that sameness (those are the base
seed again). A wall-clock seed in whole seconds (`torch.manual_seed(int(time.time()))`) counts
as alike: ranks in lockstep read the same second.

Reported only with all of these in the source (each one missing leaves no finding: the lint
does not guess):
- a seeding call the ranks run (under mp.spawn: in what the spawned function reaches, not the
  launcher's `__main__` block, which the spawned processes never run), and none of the reached
  seeding calls puts the rank in (`seed + rank`, Accelerate's `device_specific=True`,
  Lightning's `seed_everything(..., workers=True)`) or seeds from a value of unknown origin;
- a training loader (a training loop reads it, or it is named or built for training, or it has
  a sampler) with workers on the default path, no `generator=`, no worker_init_fn of its own
  making (one that seeds from something else is judged by lint/worker_seeds.py), not built on
  some ranks only;
- a dataset that draws randomness in the workers: its class, the local builder that makes it, the
  arguments it is built with (a transform) or the loader's collate_fn say `random` / `Rand…` /
  `augment` / `jitter` / `flip` (a token dataset that draws nothing loses nothing).
"""

from __future__ import annotations

import ast
import re
from typing import Any, Optional

from ddpdoctor.lint.defaults import OPTION_TEST, _assigned, config_candidates, config_key_unset, option_off, settled, spread_config_values
from ddpdoctor.lint.fact_builder import _rebound, _single_process, argument_at, group_query, loc, pinned_constants, set_false_above
from ddpdoctor.lint.nodes import children, param_defaults, parse_test, walk
from ddpdoctor.lint.patterns import GLOBAL_DRAWS, SCALAR_DRAWS, _construction_constants, _decided_by, built_class, call_chain, call_keywords, dotted, is_const, keyword, kept_keywords, last_name, loader_call, loader_dataset, own_keyword, text
from ddpdoctor.lint.worker_seeds import RANK_WORDS, UnrankedSeed, left_at_zero

Builder = Any  # ddpdoctor.lint.facts.FactBuilder (facts imports this module, not the reverse)
Function = Any

# The calls that seed the process's torch generator, by full name (through the file's imports).
TORCH_SEEDERS = {"torch.manual_seed", "torch.random.manual_seed"}
# Libraries' helpers that seed torch (and numpy, random) with the value given, on this process:
# (module prefixes, helper name, the argument that makes the seed per rank when true, that
# argument's place when given by position)
LIBRARY_SEEDERS = (
    (("lightning", "pytorch_lightning", "lightning_fabric"), "seed_everything", "workers", 1),
    (("accelerate",), "set_seed", "device_specific", 1),
    (("transformers",), "set_seed", None, None),
    # lhotse.utils.fix_random_seed(seed): random, numpy and torch (the k2 / icefall recipes' seeding)
    (("lhotse",), "fix_random_seed", None, None),
    # mmengine.runner.set_random_seed(seed, deterministic=False, diff_rank_seed=False): the rank
    # is added only with diff_rank_seed (the OpenMMLab projects' seeding)
    (("mmengine",), "set_random_seed", "diff_rank_seed", 2),
    # timm.utils.random_seed(seed=42, rank=0): seed + rank
    (("timm",), "random_seed", "rank", 1),
)
# What a dataset that draws randomness in its workers says somewhere in its own code
# (`random.random()`, `np.random.randint`, `torch.rand(...)`, an augmentation)...
# (a flip called on the spot, `ids.flip(0)` / `np.fliplr(img)`, reverses and draws nothing: the
# draw, when there is one, says `random` beside it; a `HorizontalFlip(p=0.5)` transform draws)
# (`augment` as a name of its own or a call - `augment(img)`, `self.augmentation(x)` - not an
# option's field read off a settings object, `self.args.data_augment`, which only switches)
# ("random" as a module read or a call, `random.random()`, `np.random.rand(`, `self.random_crop(img)`,
# a `Random...` transform; not a field named for what it holds: `self.is_random_next[item]`)
# (`flip` as a word: not a mask drawn beforehand and indexed, `self._flip[i]`, nor a helper's
# name, `flip_boxes(...)`: what decides there is the draw, read where it is made)
RANDOM_WORDS = re.compile(r"\brandom\s*\.|\.random\b|random\w*\s*\(|(?-i:Random[A-Z])|\brand\w*\(|RandAugment|(?<![\w.])augment|augment\w*\s*\(|jitter|(?-i:Flip|FLIP)|(?-i:flip)(?![_\[])(?!(?:lr|ud)?\s*\()"
                          # torch's other draws: an MLM collator's `torch.bernoulli(probs)` mask
                          r"|\b(?:bernoulli|multinomial|poisson)\(|\.(?:normal|uniform|exponential|geometric)_\(",
                          re.IGNORECASE)
# ...and in what it is built with, which runs in the launching process: there a draw
# (`TensorDataset(torch.randn(64, 4))`) is data, not augmentation; a transform's name is
# (and a switch that turns augmentation on, `Preprocess(h, w, _aug=True)`, `use_aug=True`)
ARGUMENT_WORDS = re.compile(r"Random[A-Z]|RandAugment|TrivialAugment|Flip|(?i:augment|jitter)|flip(?!(?:lr|ud)?\s*\()|FLIP"
                            r"|\b_*(?:do_|use_|with_)?aug\s*=\s*True\b")
_SAME, _PER_RANK, _UNKNOWN = 0, 1, 2
# a seed drawn from the process's own generators (`np.random.randint(2**31)`): an origin _judge
# weighs, never a verdict
_DRAWN = 3
_DRAWS = ("numpy.random.", "random.", "torch.randint", "torch.rand", "torch.randn")


def gather(builder: Builder, loaders: list, already: list[UnrankedSeed]) -> list[UnrankedSeed]:
    """The training loaders whose workers take their seeds from a torch generator every rank
    seeded alike. `loaders`: the LoaderFacts (for which are evaluation / some ranks' only);
    `already`: what lint/worker_seeds.py found (a loader is reported once)."""
    seeds = _seeding_calls(builder)
    # (and as a loader with a worker_init_fn of its own sees them: Lightning's workers=True
    # leaves such a loader's workers to it)
    own = _seeding_calls(builder, own_init=True) if builder.program.uses_lightning() else seeds
    if not seeds:
        return []
    alike = all(verdict == _SAME for _, _, verdict in seeds)
    alike_own = all(verdict == _SAME for _, _, verdict in own)
    # a training loader, by what the source shows: a training loop reads it, it is called or
    # built from something called "train", or it has a sampler (an evaluation loader is
    # sequential); not one built on some ranks only
    training = {str(f.location) for f in loaders if not f.under_rank_guard and not f.single_process and (
        f.trains or (not f.evaluation and (f.train_named or (f.sampler != "none" and not f.sequential))))}
    training -= {str(found.loader) for found in already}
    program = builder.program
    found = []
    defaults: Optional[dict] = None
    for fn, call, _, _ in builder.calls():
        if not loader_call(program, call, fn):
            continue
        where = loc(fn, call)
        if str(where) not in training:
            continue
        # the seeding that runs last before the loader is built, in its own function (MiniMind-V
        # seeds per rank at the start, then `setup_seed(42 + epoch)` alike at each epoch's top,
        # just before building the loader): that one decides; elsewhere every seeding must agree
        mine, mine_alike = (own, alike_own) if own_keyword(program, call, fn, "worker_init_fn") is not None \
            else (seeds, alike)
        reaching = _last_seeding_before(program, mine, fn, call)
        if (reaching if reaching is not None else (_SAME if mine_alike else _UNKNOWN)) != _SAME:
            continue
        if not mine_alike and _reseeded_after(builder, mine, fn, call):
            continue
        given = call_keywords(program, call, fn)  # `**loader_kwargs` read where it is a dict literal
        if given is None:
            given = _spread_from_configs(program, call, fn)
        if given is not None and isinstance(call.func, (ast.Name, ast.Attribute)):
            kept = kept_keywords(program, call, fn)  # (a subclass's own `generator=` goes nowhere)
            given = {k: v for k, v in given.items() if k not in kept}
        if given is None or ("generator" in given and not (isinstance(given["generator"], ast.Constant)
                                                           and given["generator"].value is None)):
            continue  # a `**kwargs` that cannot be read may hold a generator (`generator=None` is none)
        workers = given.get("num_workers")
        # (`loader_args = {..., "worker_init_fn": partial(init_worker, ...)}` then
        # `DataLoader(ds, **loader_args)`: judged where the dict is this function's own)
        init = own_keyword(program, call, fn, "worker_init_fn")
        if init is None and "worker_init_fn" in given:
            continue  # in a dict a caller hands in: not read here
        if workers is None:
            continue  # no workers by default
        if defaults is None:
            defaults = program.option_defaults()
        workers_by = _workers(program, workers, fn, defaults)
        if workers_by is not None and _zeroed_when_distributed(program, workers, fn, call):
            workers_by = None
        if workers_by is None or not _keeps_base_seed(program, init, fn):
            continue
        if not _draws_randomness(program, call, fn):
            continue
        # (and the calls that hand a seeding helper its seed: `set_random_seed(cfg.seed)`)
        handing = [str(loc(caller, event.node)) for f, _, _ in mine[:3] if not isinstance(f.node, ast.Module)
                   for caller, event in builder.callers().get(f, [])[:2] if event.kind == "call"]
        found.append(UnrankedSeed(where, "process", "", [text(c) for _, c, _ in mine[:3]], where,
                                  [str(loc(f, c)) for f, c, _ in mine[:3]], workers_by, handing))
    return found


# the loader keywords a config section spread into the DataLoader is read for
_SPREAD_KEYS = ("num_workers", "generator", "worker_init_fn")


def _spread_from_configs(program, call: ast.Call, fn: Function) -> Optional[dict]:
    """The loader's keywords where its one `**` spread is a section of the YAML configs
    (`DataLoader(ds, sampler=s, **self.dataloader_config["train"])`, cxr-clip's `num_workers:
    8`): a YAML file holds no generator or worker_init_fn object, so none is set where no config
    names one; the workers are the fewest the configs that set the count give.
    None where that cannot be read."""
    spreads = [kw.value for kw in call.keywords if kw.arg is None]
    if len(spreads) != 1:
        return None
    held = spread_config_values(spreads[0], fn, program, _SPREAD_KEYS)
    if held is None or held["generator"] or held["worker_init_fn"]:
        return None
    given = {kw.arg: kw.value for kw in call.keywords if kw.arg is not None}
    counts = held["num_workers"]
    if counts and all(type(n) is int for n in counts):
        # (the fewest any config gives: 0 in one of them is a run without workers)
        given.setdefault("num_workers", ast.Constant(value=min(counts)))
    return given


def seeded_per_rank(builder: Builder) -> bool:
    """Every seeding of the process's generators that the ranks run puts the rank in the seed
    (`torch.manual_seed(args.seed + get_rank())`): what each draws from them is its own.
    Asked once per program."""
    found = builder.__dict__.get("_seeded_per_rank")
    if found is None:
        # (the seed itself: Lightning's `seed_everything(s, workers=True)` puts the rank in the
        # loader workers' seeds only, and seeds the process's own streams alike on every rank)
        seeds = _seeding_calls(builder, own_init=True)
        found = builder.__dict__["_seeded_per_rank"] = bool(seeds) and all(v == _PER_RANK for _, _, v in seeds)
    return found


def _last_seeding_before(program, seeds: list, fn: Function, loader: ast.Call) -> Optional[int]:
    """The verdict of the seeding fn runs last before building the loader: a seeding call of
    its own, or a call of a local helper that seeds (`setup_seed(42 + epoch)`), judged by what
    that call hands the helper. None where fn runs none before it."""
    best: Optional[tuple[int, int]] = None
    for site in fn.own_calls:
        if site.lineno >= loader.lineno or (best is not None and site.lineno <= best[0]):
            continue
        verdict = _site_verdict(program, seeds, fn, site)
        if verdict is not None:
            best = (site.lineno, verdict)
    return best[1] if best is not None else None


def _site_verdict(program, seeds: list, fn: Function, site: ast.Call) -> Optional[int]:
    """What the call seeds the process's torch generator with: a seeding call of fn's own, or a
    local helper's, judged by what this call hands it; None where it seeds nothing."""
    verdict = next((v for f, c, v in seeds if f is fn and c is site), None)
    if verdict is None:
        for target in program.resolve(site.func, fn)[0]:
            inner = next(((c, v) for f, c, v in seeds if f is target), None)
            if inner is None:
                continue
            seed = inner[0].args[0] if inner[0].args else keyword(inner[0], "seed")
            # the caller's value decides only where the helper seeds with the parameter as
            # given (MOTIP's `seed = seed + distributed_rank()` first: the helper's own verdict)
            given = argument_at(target, site, seed.id) if isinstance(seed, ast.Name) and \
                not _rebound(target, seed.id) else None
            verdict = _judge(given, fn, program) if given is not None else inner[1]
    return verdict


def _reseeded_after(builder: Builder, seeds: list, fn: Function, site: ast.AST, depth: int = 2) -> bool:
    """After the loader is built (site: its call, or a call on the way to it), and before the
    loop that follows, fn or a caller seeds again with a value not alike on every rank
    (ae-kd's `get_cifar100_dataloaders()` seeds 0 and builds the loader, then `main` runs
    `set_seed(opt.seed + opt.local_rank)` before training): the workers' base seed is drawn
    when the loader is iterated, so that later seeding is the one they get."""
    program = builder.program
    loops = [n.lineno for n in fn.own_of(ast.For, ast.While) if n.lineno > site.lineno]
    until = min(loops, default=None)
    if any(site.lineno < call.lineno and (until is None or call.lineno < until)
           and _site_verdict(program, seeds, fn, call) not in (None, _SAME) for call in fn.own_calls):
        return True
    return depth > 0 and not isinstance(fn.node, ast.Module) and any(
        event.kind == "call" and _reseeded_after(builder, seeds, caller, event.node, depth - 1)
        for caller, event in builder.callers().get(fn, [])[:4])


def seed_has_rank(call: ast.Call, fn: Function, program) -> bool:
    """The seeding call's seed puts the rank in (`random.seed(0 + rank)`): each process's
    stream is its own, whichever stream it seeds."""
    return bool(call.args) and _judge(call.args[0], fn, program) == _PER_RANK


def seeded_alike(builder: Builder) -> bool:
    """The ranks run some seeding of torch's generator, and every one of them seeds alike."""
    seeds = _seeding_calls(builder)
    return bool(seeds) and all(verdict == _SAME for _, _, verdict in seeds)


def _seeding_calls(builder: Builder, own_init: bool = False) -> list[tuple[Function, ast.Call, int]]:
    """Each seeding of the process's torch generator that the ranks run, with what its seed is.
    own_init: for a loader with a worker_init_fn of its own, which Lightning's rank-aware worker
    seeding (`seed_everything(..., workers=True)`) does not replace: the flag does not count."""
    program = builder.program
    spawned = program.ranks.live_spawn_targets()
    reach = builder._spawn_reach() if spawned else None
    found = []
    for fn, call, guards, _ in builder.calls():
        full = program.qualify(call.func, fn) or ""
        verdict = _library_seed(full, call, fn, program, own_init)
        if verdict is None:
            continue
        if _never_called(builder, fn):
            continue  # a private method no code calls (`self._init_validation()` commented out)
        if guards or builder.only_guarded(fn) is True:
            # `if local_rank == 0: torch.manual_seed(20)` (rank 0's evaluation set-up): the other
            # ranks keep the seeds torch drew for their processes, apart from rank 0's
            verdict = _PER_RANK
        if reach is not None and fn not in reach and not _on_import(fn, call, program) and \
                not _called_on_import(builder, fn) and not _seeds_direct_path(builder, fn, call, spawned, 3):
            # the launcher's own seeding: the spawned ranks start from their own (on its direct
            # path, counted only where the launcher seeds whatever the options)
            continue
        conds = fn.__dict__.get("_call_conds", {}).get(id(call), ())
        # (`if seed is not None:` on the function's own parameter, which its callers hand a
        # value: the test is on what they give, not on a command-line option of that name)
        conds = tuple(c for c in conds if not _handed_param_test(fn, c[0]))
        if _off_by_default(conds, program) or _script_switch_off(conds, fn, program):
            # `if args.seed is not None: torch.manual_seed(args.seed)`, --seed unset by default; or
            # `deterministic = False` at the script's top, then `if deterministic: manual_seed(SEED)`
            continue
        if any(NO_GPU.search(cond) for cond, _ in conds):
            # `if torch.cuda.is_available(): torch.cuda.manual_seed_all(s) else: torch.manual_seed(s)`
            # (One-DM's fix_seed): on the GPUs the ranks run on, the generator the workers' seeds
            # come from is left as each process drew it
            continue
        if _called_only_when_off(builder, fn):
            continue  # `if opt.debug: set_random_seed(0)`, --debug a store_true no launch gives
        if builder.switched_off(fn, call):
            continue  # `if eval_time: torch.manual_seed(0)` in a dataset every caller builds with eval_time=False
        if not isinstance(fn.node, ast.Module) and fn not in builder.callers() and fn not in spawned \
                and fn not in program.entry_functions:
            continue  # a method of a live class that nothing calls (a model's `check_sample()` test)
        if fn in _worker_inits(builder):
            continue  # a loader's worker_init_fn seeds its worker, not the rank's process
        found.append((fn, call, verdict))
    return found


def _handed_param_test(fn: Function, test_text: str) -> bool:
    """`seed` / `seed is not None` where seed is a parameter of fn that some call hands a value
    other than None (Taskonomy's dataset constructor, given `seed=config.seed + LOCAL_RANK`)."""
    found = re.fullmatch(r"(\w+)(?: is not None)?", test_text)
    return found is not None and found.group(1) in getattr(fn, "params", ()) and \
        any(not is_const(v, None) for v, _ in fn.arguments.get(found.group(1), ()))


def _worker_inits(builder: Builder) -> set:
    """The local functions the program's DataLoaders are handed as worker_init_fn (by name, or
    bound by `functools.partial(init_worker, ...)`, also in a `**loader_args` dict)."""
    memo = builder.__dict__.get("_worker_inits")
    if memo is not None:
        return memo
    program, found = builder.program, set()
    builder.__dict__["_worker_inits"] = found
    for fn, call, _, _ in builder.calls():
        init = own_keyword(program, call, fn, "worker_init_fn") if loader_call(program, call, fn) else None
        if init is not None:
            found |= {target for value, scope in program.values_of(init, fn, 2)
                      for target in [_init_function(program, value, scope)] if target is not None}
    return found


def _init_function(program, value: ast.AST, scope: Function) -> Optional[Function]:
    """The local function a worker_init_fn value runs: named, or bound by
    `functools.partial(init_worker, ...)`; None for a library's (or anything else)."""
    if isinstance(value, ast.Call) and last_name(value.func) == "partial" and value.args:
        value = value.args[0]
    target = program.callee(value, scope) if isinstance(value, (ast.Name, ast.Attribute)) else None
    return target if program.is_function(target) and not isinstance(target.node, ast.Module) else None


def _seeds_direct_path(builder: Builder, fn: Function, call: ast.Call, spawned: list, depth: int) -> bool:
    """The launcher's seeding call, on the way by default, in a function that also runs the
    spawn target itself (_calls_directly), or in a helper such a function calls (RTM3D's
    `configure()` -> `utils.init_seeds(20)` -> `torch.manual_seed(seed)`, then `main_worker(...)`
    on the torchrun path): there the process that seeded is the rank."""
    if not _on_by_default(fn.__dict__.get("_call_conds", {}).get(id(call), ()), builder.program, fn):
        return False
    if _calls_directly(builder, fn, spawned):
        return True
    return depth > 0 and any(
        event.kind == "call" and _seeds_direct_path(builder, caller, event.node, spawned, depth - 1)
        for caller, event in builder.callers().get(fn, [])[:4])


def _calls_directly(builder: Builder, fn: Function, spawned: list) -> bool:
    """fn also calls a spawn target itself on a path that may be distributed (`if
    args.multiprocessing_distributed: mp.spawn(worker) else: worker()`, the torchrun / SLURM
    path): there the process that seeded is the rank. Not the other side of the switch the
    process group is set up under (`if num_gpus > 1: mp.spawn(...) else: train(0)`: one process)."""
    program = builder.program
    conds = fn.__dict__.get("_call_conds", {})
    # (not a side fn itself rules out just above: `args.multiprocessing_distributed = True`
    # before `if args.multiprocessing_distributed: mp.spawn(...) else: main_worker(...)`)
    return any(target in spawned and not _single_process(conds.get(id(call), ()), builder._switches())
               and not any(set_false_above(fn, call, cond) for cond, _ in conds.get(id(call), ()))
               and not _constant_index(program, call, target)
               for call in fn.own_calls for target in program.resolve(call.func, fn)[0])


def _constant_index(program, call: ast.Call, target: Function) -> bool:
    """The direct call hands the spawn target a constant where mp.spawn hands the process index
    (`runner(rank=0, args=args)` beside `mp.spawn(runner, ...)`, ULE's launcher), and every
    set-up joins the group with a rank it is handed (`init_process_group(..., rank=rank)`): that
    process is the run's only one; under a launcher starting several, each would be rank 0. (A
    set-up that takes its rank from the launcher's environment makes the index no rank.)"""
    node = target.node
    if node is None or isinstance(node, ast.Module) or not target.params or not program.ranks.init_calls or \
            any(given is None for _, given in program.ranks.init_calls):
        return False
    first = target.params[0]
    given = call.args[0] if call.args and not isinstance(call.args[0], ast.Starred) else next(
        (k.value for k in call.keywords if k.arg == first), None)
    return isinstance(given, ast.Constant) and type(given.value) is int


def _on_by_default(conds: tuple, program, fn: Function) -> bool:
    """Every test around the seeding holds with the options at their defaults (none at all,
    or `if args.seed is not None:` with `--seed` defaulting to 1): it runs on a plain launch."""
    from ddpdoctor.lint.save_facts import _main_test

    defaults = _defaults(program)
    # (the script's `if __name__ == "__main__":` holds on every launch: the run itself)
    return all((found := OPTION_TEST.match(cond)) is not None and found.group(1) in defaults
               and not option_off(cond, program) or _main_test(program, cond, fn) for cond, _ in conds)


def _defaults(program) -> dict:
    return program.option_defaults()


def _called_only_when_off(builder: Builder, fn: Function) -> bool:
    """Every call of the seeding helper fn the source shows runs under a test the options, as
    launched, leave false: the helper never seeds on that launch."""
    sites = builder.callers().get(fn, []) if not isinstance(fn.node, ast.Module) else []
    return bool(sites) and all(
        isinstance(event.node, ast.Call) and _off_unless_set(
            caller.__dict__.get("_call_conds", {}).get(id(event.node), ()), builder.program)
        for caller, event in sites)


def _off_unless_set(conds: tuple, program) -> bool:
    """_off_by_default, where no code the lint reads sets that option's field itself (`args.seed
    = cfg.seed` from a config file: the default is not all there is); or a key of a dict config
    that no config shipped beside the script sets (config_key_unset)."""
    return any((option_off(cond, program) and not _assigned(OPTION_TEST.match(cond).group(1), program))
               or config_key_unset(cond, program) for cond, flag in conds)


def _script_switch_off(conds: tuple, fn: Function, program) -> bool:
    """A test of a module-level name the script binds only to false constants, that no function
    moves (`deterministic = False`, then `if deterministic:`): a setting its user may edit, off
    as shipped - as an option left at its false default, what the seeding needs is not there."""
    for cond, flag in conds:
        name = cond[4:] if cond.startswith("not ") else cond
        local = fn.bindings.get(name) and not isinstance(fn.node, ast.Module)  # (a function's own name)
        if not flag or not name.isidentifier() or name in fn.params or local:
            continue
        body = fn if isinstance(fn.node, ast.Module) else fn.module.body
        values = pinned_constants(program, body, name) if body is not None else None
        if values and all(bool(v) == (name != cond) for v in values):
            return True
    return False


def _off_by_default(conds: tuple, program) -> bool:
    """The seeding runs only where an option left at a false default (`--seed` unset: None) is
    given: `if args.seed is not None:` / `if args.seed:`; or under a config comparison every
    config answers the other way (`if cfg.SEED_VALUE >= 0:` of a yacs default -1 that the
    YAML configs keep)."""
    return any(option_off(cond, program) or _settled_against(cond, program) for cond, _ in conds)


def _settled_against(cond: str, program) -> bool:
    """A comparison of a config field (or its `not`, the else side's text) that the code's
    default and the configs beside the script answer false (an option's test is option_off's,
    which knows an option a distributed run must be given)."""
    test = parse_test(cond)
    inner = test.operand if test.__class__ is ast.UnaryOp and test.op.__class__ is ast.Not else test
    return inner.__class__ is ast.Compare and inner.left.__class__ is ast.Attribute and \
        config_candidates(inner.left, program) is not None and settled(test, program) is False


def _library_seed(full: str, call: ast.Call, fn: Function, program, own_init: bool = False) -> Optional[int]:
    """What a call seeds the process's torch generator with: None when it is no such call.
    own_init: Lightning's `workers=True` does not count (see _seeding_calls)."""
    if full in TORCH_SEEDERS:
        return _judge(call.args[0] if call.args else keyword(call, "seed"), fn, program)
    name = full.rpartition(".")[2]
    for prefixes, helper, per_rank, place in LIBRARY_SEEDERS:
        if name == helper and full.startswith(prefixes):
            if own_init and helper == "seed_everything":
                # Lightning adds its rank-aware worker_init_fn only to a loader with none
                return _judge(call.args[0] if call.args else keyword(call, "seed"), fn, program)
            switch = keyword(call, per_rank) if per_rank else None
            if switch is None and place is not None and len(call.args) > place:
                switch = call.args[place]
            if switch is not None and not (isinstance(switch, ast.Constant) and not switch.value):
                return _PER_RANK  # workers=True / device_specific=True (or a value: maybe true)
            return _judge(call.args[0] if call.args else keyword(call, "seed"), fn, program)
    return None


def _judge(seed: Optional[ast.AST], fn: Function, program) -> int:
    """_SAME when every value the seed may hold names no rank and comes from constants or a
    config's attributes; _PER_RANK with a rank in it; _UNKNOWN otherwise (a parameter no caller
    shows, a helper's result)."""
    if seed is None:
        return _UNKNOWN  # seed_everything() draws one itself
    if _stepped_by_rank(seed, fn, program, 3):
        return _PER_RANK
    inner = _bare_params(seed, fn) if seed.__class__ is not ast.Name else []
    if inner:
        # `torch.manual_seed(seed + 2)` in `def set_random_seed(seed)`: the parameter is what the
        # callers hand it (a number each process drew, `np.random.randint(...)`, or a setting),
        # judged as the bare parameter is; the constants beside it change nothing
        verdicts = {_judge(n, fn, program) for n in inner}
        if _PER_RANK in verdicts:
            return _PER_RANK
        if _UNKNOWN in verdicts:
            return _UNKNOWN
    if isinstance(seed, ast.Attribute) and any(
            isinstance(s, ast.Assign) and any(text(t) == text(seed) for t in s.targets)
            and _origin(s.value, fn, program) == _DRAWN for s in fn.own):
        # `if opt.manual_seed is None: opt.manual_seed = random.randint(1, 10000)` before
        # `torch.manual_seed(opt.manual_seed)`: where the option gives none, each process draws
        # its own (values_of follows the option, not the field set here)
        return _UNKNOWN
    origins, on_import = set(), False
    fallbacks = True  # every draw a fallback where no usable seed was given
    settings: list[bool] = []  # of each other value: a setting the run's configuration gives
    for value, scope in program.values_of(seed, fn, 3):
        if _drawn_where_unset(value, scope, program):
            # `if config.seed is None: config.seed = np.random.randint(2000, 1000000)` in the
            # set-up, --seed given by no launch: each process draws its own seed, as a rank would
            # make it (FMImaging's set_seed(config.seed))
            return _PER_RANK
        zero = _zero_before_group(program, value, scope)
        for node in walk(value):
            if zero and any(id(n) in zero for n in walk(node)):
                continue  # (`args.seed + get_rank()` is judged by its parts, the call's being 0)
            if RANK_WORDS.search(last_name(node) or "") or program.ranks.is_rank(node, scope):
                return _PER_RANK
        origin = _origin(value, scope, program)
        origins.add(origin)
        on_import = on_import or (origin == _SAME and isinstance(scope.node, ast.Module))
        if origin == _DRAWN:
            fallbacks = fallbacks and _fallback_draw(value, scope, seed)
        elif not (isinstance(seed, ast.Name) and scope is fn and any(
                n.__class__ is ast.Name and n.id == seed.id for n in walk(value))):
            # (`seed = int(seed)` of the value given is that value again)
            settings.append(_set_in_config(value, program))
    if _PER_RANK in origins:
        return _PER_RANK  # (a parameter left at a default with the rank in it)
    if _DRAWN in origins and fallbacks and settings and all(settings) and origins <= {_SAME, _DRAWN}:
        # `def seed_everything(seed=None): if seed is None: seed = random.randint(...)` handed
        # `cfg.experiment.seed`, which the config the run reads sets (`seed: 123456`): the draw
        # is the way of a run given no seed, not of this one (se3_diffusion's helper)
        return _SAME
    if _DRAWN in origins:
        # a seed drawn from the process's own generators is alike on every rank only after
        # they were seeded alike: a constant handed in as the modules are imported, before
        # anything runs (`set_random_seed(42)` at the top, then a sampling helper that restores
        # `set_random_seed(np.random.randint(...))`); a draw where the option gives no seed
        # (`if seed is None: seed = random.randint(...)`) is each process's own
        return _SAME if on_import and _UNKNOWN not in origins else _UNKNOWN
    return _UNKNOWN if _UNKNOWN in origins else _SAME


def _zero_before_group(program, value: ast.AST, fn: Function) -> set[int]:
    """The ids of the nodes of each rank helper call in value that runs before fn sets up the
    process group, where the helper answers a constant until the group exists (`def get_rank():
    if not is_dist_avail_and_initialized(): return 0`): `args.seed + get_rank()` a few lines
    above `init_process_group` is the seed plus 0 on every rank."""
    found: set[int] = set()
    calls = [c for c in walk(value) if c.__class__ is ast.Call and RANK_WORDS.search(last_name(c.func) or "")]
    if not calls:
        return found
    starts = [c.lineno for c in fn.own_calls if program.starts_run([c], fn)]
    for call in calls:
        if not starts or min(starts) <= call.lineno:
            continue
        targets = program.resolve(call.func, fn)[0]
        if targets and all(_constant_until_grouped(program, t) for t in targets):
            found.update(id(n) for n in walk(call))
    return found


def _constant_until_grouped(program, fn: Function) -> bool:
    """fn's first statement returns a constant where the process group is not set up yet
    (`if not dist.is_initialized(): return 0`)."""
    if fn.node is None or isinstance(fn.node, ast.Module):
        return False
    body = [s for s in fn.node.body if not (s.__class__ is ast.Expr and isinstance(s.value, ast.Constant))]
    first = body[0] if body else None
    return first.__class__ is ast.If and len(first.body) == 1 and first.body[0].__class__ is ast.Return \
        and first.body[0].value.__class__ is ast.Constant and first.test.__class__ is ast.UnaryOp \
        and first.test.op.__class__ is ast.Not and first.test.operand.__class__ is ast.Call \
        and group_query(program, first.test.operand, fn)


def _fallback_draw(value: ast.AST, fn: Function, seed: ast.AST) -> bool:
    """The draw sits in the body of an `if` of fn on the seed it replaces (`if seed is None:`,
    `if not (low <= seed <= high):`): the fallback where no usable seed was given."""
    if not isinstance(seed, ast.Name):
        return False
    for node in fn.own_of(ast.If):
        if any(n.__class__ is ast.Name and n.id == seed.id for n in walk(node.test)) and \
                any(n is value for stmt in node.body for n in walk(stmt)):
            return True
    return False


def _set_in_config(value: ast.AST, program) -> bool:
    """A setting's read (`cfg.experiment.seed`) whose key the configuration the run reads sets
    to a number (Program.option_defaults)."""
    if not isinstance(value, ast.Attribute) or value.value.__class__ is ast.Name and value.value.id == "self":
        return False
    given = program.option_defaults().get(value.attr)
    return isinstance(given, int) and not isinstance(given, bool)


def _bare_params(value: ast.AST, fn: Function) -> list:
    """fn's parameters a seed expression reads as numbers (`seed + 2`, `int(seed) * 3`), not as
    the receiver of a field (`cfg.seed` is a setting, judged as a config's attribute)."""
    params = getattr(fn, "params", ())
    found, stack = [], [value]
    while stack:
        node = stack.pop()
        if node.__class__ in (ast.Attribute, ast.Subscript):
            continue
        if node.__class__ is ast.Name and node.id in params:
            found.append(node)
        stack.extend(children(node))
    return found


def _stepped_by_rank(node: ast.AST, fn: Function, program, depth: int) -> bool:
    """`seed = opts.SEED; seed += opts.rank` (a plain name's `+=` binds nothing): the name the
    seed is read from is stepped by a rank, there or in a caller that hands it on."""
    if not isinstance(node, ast.Name):
        return False
    for stmt in fn.own_of(ast.AugAssign):
        if isinstance(stmt.target, ast.Name) and stmt.target.id == node.id and \
                any(RANK_WORDS.search(last_name(n) or "") or program.ranks.is_rank(n, fn) for n in walk(stmt.value)):
            return True
    if depth > 0 and node.id in fn.params:
        return any(_stepped_by_rank(arg, caller, program, depth - 1) for arg, caller in fn.arguments.get(node.id, []))
    return False


# A test that holds only on a machine without a GPU: the else of `if torch.cuda.is_available():`
# (or of `device_count() > 0 and ...`), `not torch.cuda.is_available()`, `device_count() == 0`
NO_GPU = re.compile(r"^not\b(?!.*\bnot\b).*\bcuda\.(?:is_available|device_count)\(\)|\bcuda\.device_count\(\)\s*(?:==\s*0|<\s*1)\b")
# Counters the ranks step in lockstep (DDP keeps them so): the same on every rank wherever they come from.
# (fairseq's trainers count optimizer steps as `num_updates`, read through `get_num_updates()`)
LOCKSTEP = re.compile(r"epoch|step|iter|num_updates", re.IGNORECASE)


def _drawn_where_unset(value: ast.AST, scope: Function, program) -> bool:
    """An option's field (`config.seed`) the function sets to a draw from the process's own
    generators where the option is left unset (`if config.seed is None: config.seed =
    np.random.randint(...)`), the option None on the run as launched."""
    if value.__class__ is not ast.Attribute or scope.node is None or scope.node.__class__ is ast.Module:
        return False
    said = text(value)
    if not any(s.__class__ is ast.Assign and any(text(t) == said for t in s.targets)
               and _origin(s.value, scope, program) == _DRAWN for s in scope.own):
        return False
    defaults = program.option_defaults()
    return value.attr in defaults and defaults[value.attr] is None


def _origin(value: ast.AST, fn: Function, program) -> int:
    if isinstance(value, (ast.Name, ast.Attribute)) and LOCKSTEP.search(last_name(value) or ""):
        return _SAME
    if _broadcast_read(value, fn, program):
        return _SAME  # rank 0's seed handed to every rank: the same seed everywhere
    # `int(time.time())`: whole seconds, which ranks reaching the same line in lockstep (every
    # epoch's start, after the last step's all-reduce) read alike but across a second's turn
    clock = {id(node.args[0]) for node in walk(value) if isinstance(node, ast.Call)
             and last_name(node.func) == "int" and len(node.args) == 1 and isinstance(node.args[0], ast.Call)
             and program.qualify(node.args[0].func, fn) == "time.time"}
    # (`1111 if "seed" not in params.keys() else params["seed"]`: the test picks a value, it is
    # none; the values are the two sides)
    tests = {id(n) for sub in walk(value) if isinstance(sub, ast.IfExp) for n in walk(sub.test)}
    zero = _zero_before_group(program, value, fn)  # (a rank helper's 0 before the group exists)
    for node in walk(value):
        if id(node) in clock or id(node) in tests or id(node) in zero:
            continue
        if isinstance(node, ast.Call) and not node.args and not node.keywords and \
                isinstance(node.func, ast.Attribute) and LOCKSTEP.search(node.func.attr):
            continue  # `self.get_num_updates()`: a getter of such a counter
        if isinstance(node, ast.Call) and (last_name(node.func) or "") not in ("int", "abs", "hash", "str", "getattr"):
            if (program.qualify(node.func, fn) or "").startswith(_DRAWS):
                return _DRAWN
            if not (isinstance(node.func, ast.Attribute) and node.func.attr == "get"):
                return _UNKNOWN  # a helper's result (`get_seed()`, `random_seed()`): not judged
        if isinstance(node, ast.Name) and node is value and node.id in getattr(fn, "params", ()):
            default = param_defaults(fn.node).get(node.id)
            if default is not None and not fn.arguments.get(node.id) and fn.defaulted.get(node.id):
                # `def seed_everything(seed=1): ...` called as `seed_everything()` (CenterNet's
                # script, at import): no caller hands a seed, the default seeds every rank; a
                # default read from a name (`def set_seed(seed=SEED)`, `SEED = 42` above) is
                # judged where the def reads it
                if isinstance(default, ast.Constant):
                    return _SAME
                if isinstance(default, (ast.Name, ast.Attribute)):
                    return _judge(default, fn.parent or fn.module.body or fn, program)
            if not fn.arguments.get(node.id) and fn.__dict__.get("_spread_calls") and \
                    isinstance(program.option_defaults().get(node.id), (int, str)):
                # `main(**OmegaConf.load(args.config))` whose named config sets `seed: 42`: the
                # settings every rank reads alike hand the parameter its value
                return _SAME
            return _UNKNOWN  # a parameter whose callers the lint does not show
    return _SAME


def _broadcast_read(value: ast.AST, fn: Function, program) -> bool:
    """`seed = t.item()` (or `int(t)`, `t.tolist()`) of a tensor fn hands to `dist.broadcast(t,
    src=0)` first: after the broadcast every rank holds the source rank's value."""
    if isinstance(value, ast.Call) and last_name(value.func) == "int" and len(value.args) == 1:
        value = value.args[0]
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in ("item", "tolist"):
        value = value.func.value
    if not isinstance(value, ast.Name):
        return False
    return any(isinstance(node, ast.Call) and last_name(node.func) == "broadcast" and node.args
               and isinstance(node.args[0], ast.Name) and node.args[0].id == value.id
               and (program.qualify(node.func, fn) or "").startswith("torch.distributed.")
               for node in fn.own)


def _on_import(fn: Function, call: ast.Call, program) -> bool:
    """A module's top-level seeding outside its `__main__` block: a spawned rank imports the
    script, so it runs there too."""
    from ddpdoctor.lint.save_facts import _main_test

    if not isinstance(fn.node, ast.Module):
        return False
    conds = fn.__dict__.get("_call_conds", {}).get(id(call), ())
    return not any(_main_test(program, cond, fn) for cond, _ in conds)


def _called_on_import(builder: Builder, fn: Function) -> bool:
    """fn is called at a module's top level outside its `__main__` block (`seed_all(cfg.seed)`
    under the script's imports): a spawned rank imports the script and runs it too. Not a
    function that spawns the ranks itself: that is the launcher, whatever calls it."""
    if any(last_name(call.func) in ("spawn", "start_processes") for call in fn.own_calls):
        return False
    return any(event.kind == "call" and _on_import(caller, event.node, builder.program)
               for caller, event in builder.callers().get(fn, []))


def _workers(program, workers: ast.AST, fn: Function, defaults: dict) -> Optional[str]:
    """Whether the loader has workers: "" on the default path (not a literal 0, nor a name bound
    only to 0); the assumption where only an option gives them (`--num_workers`, declared with
    default 0, which a launch recipe sets: wekws, P5); None where it never has any."""
    options = []
    for value, scope in _field_values(program, workers, fn):
        if isinstance(value, ast.Constant) and value.value == 0:
            continue
        if isinstance(value, ast.Name) and value.id in scope.params and left_at_zero(
                value.id, scope.node, program.files, scope.cls.name if scope.name == "__init__" and scope.cls else None):
            continue  # `def get_loaders(rank, n, num_workers=0)`, every call leaving it out
        if isinstance(value, ast.Attribute) and defaults.get(value.attr, 1) == 0:
            if not program.launched_at(value.attr, 0):
                options.append(value.attr)  # (the launches written beside the script all leave it or give 0)
            continue
        return ""
    if options:
        return f"--{options[0]} is above its default 0"
    return None


def _field_values(program, node: ast.AST, fn: Function) -> list:
    """values_of, and for a field of an object of a local class that the source sets no other
    way (`config.num_workers`, `config` a minGPT-style TrainerConfig whose `__init__` sets each
    keyword it is handed): what its class says it holds."""
    found = []
    for value, scope in program.values_of(node, fn, 2):
        klass = program.class_of(value.value, scope) if value.__class__ is ast.Attribute and not (
            value.value.__class__ is ast.Name and value.value.id == "self") else None
        held = program._attr(klass, value.attr) if program.is_class(klass) else []
        found += [v for h, s in held for v in program.values_of(h, s, 2)] if held else [(value, scope)]
    return found


def _zeroed_when_distributed(program, workers: ast.AST, fn: Function, call: ast.Call) -> bool:
    """`if args.distributed: args.num_workers = 0` above the loader: on every distributed run
    (the only one whose ranks could draw alike) the loader has no workers."""
    key = dotted(workers) if isinstance(workers, ast.Attribute) else None
    if key is None:
        return False
    for stmt in fn.own_of(ast.If):
        if stmt.lineno < call.lineno and \
                program.ranks.single_process(ast.UnaryOp(op=ast.Not(), operand=stmt.test), fn) and any(
                    s.__class__ is ast.Assign and is_const(s.value, 0) and any(dotted(t) == key for t in s.targets)
                    for s in stmt.body):
            return True
    return False


def _keeps_base_seed(program, init: Optional[ast.AST], fn: Function) -> bool:
    """No worker_init_fn (init: the loader's, in fn), or one that reseeds from the worker's base
    seed only (`torch.initial_seed()`, `get_worker_info().seed`, numpy's state in the worker),
    also through `functools.partial(init_worker, ...)`: the sameness stays."""
    if init is None or (isinstance(init, ast.Constant) and init.value is None):
        return True
    for value, scope in program.values_of(init, fn, 2):
        if isinstance(value, ast.Name) and value.id in getattr(scope, "params", ()) and \
                not scope.arguments.get(value.id) and scope.defaulted.get(value.id):
            # `def _create_dataloader(self, dataset, wif=None)`, no caller handing one: the default
            value = param_defaults(scope.node).get(value.id, value)
        if isinstance(value, ast.Constant) and value.value is None or \
                isinstance(value, ast.Attribute) and program.attribute_constants(value.attr) == frozenset({None}):
            continue  # (`worker_init_fn = dataset.worker_init_fn`, None in every dataset class)
        if isinstance(value, ast.Call) and _makes_none(program, value, scope):
            continue  # `worker_init_fn=utils.loader_worker_init_fn(dataset)` whose factory returns None
        target = _init_function(program, value, scope)  # (a partial's: the function it binds)
        if target is None:
            return False  # a library's: not judged here
        body = "\n".join(text(stmt, 2000) for stmt in target.node.body)
        if not WORKER_SEEDING.search(body):
            continue  # seeds nothing (`set_sharing_strategy("file_system")`): the base seed stays
        # (a rank name the function pins to a constant, `global_rank = 0` in a copy of
        # Lightning's pl_worker_init_function, puts no rank in: se3_diffusion's loader)
        pinned = [name for name, bound in target.bindings.items() if RANK_WORDS.search(name)
                  and name not in target.params and bound and all(isinstance(v, ast.Constant) for _, v in bound)]
        if pinned:
            body = re.sub(r"\b(?:%s)\b" % "|".join(map(re.escape, pinned)), "", body)
        if RANK_WORDS.search(body) or WORKER_ENTROPY.search(body) or not WORKER_STATE.search(body):
            return False
    return True


def _makes_none(program, call: ast.Call, fn: Function) -> bool:
    """A local factory every return of which is None (or that returns nothing)."""
    targets = [t for t in program.resolve(call.func, fn)[0] if program.is_function(t)
               and not isinstance(t.node, ast.Module) and t.name != "__init__"]
    return bool(targets) and all(
        all(r is None or (isinstance(r, ast.Constant) and r.value is None)
            for r in [n.value for n in t.own if isinstance(n, ast.Return)])
        for t in targets)


# What a worker_init_fn that reseeds at all says somewhere.
WORKER_SEEDING = re.compile(r"seed|set_state|setstate|Generator|default_rng|SeedSequence")


# What a worker_init_fn may seed from and keep the base seed's sameness: the base seed itself,
# or the state torch seeded from it in the worker (numpy's and random's, since torch 1.9);
# `np.random.seed(np.random.get_state()[1][0] + worker_id)` is the base seed again.
WORKER_STATE = re.compile(r"initial_seed|get_worker_info|get_state\(|getstate\(")
# ...and what breaks it: true entropy.
WORKER_ENTROPY = re.compile(r"\btime(?:_ns)?\(|urandom|uuid|getpid|SeedSequence\(\)|default_rng\(\)")


def draws_nothing(builder: Builder, found: UnrankedSeed) -> bool:
    """The DataLoader a worker_init_fn or generator seeds alike on every rank has a dataset of a
    local class the source shows (and a collate_fn) that draws no random numbers
    (_draws_randomness, as for the process's own seed): worker k of every rank then draws
    nothing alike, whatever its seed. A library's dataset (TensorDataset, ImageFolder) is not
    read so: its transforms may draw."""
    where = str(found.loader)
    for fn, call, _, _ in builder.calls():
        # (the loader's own call: `list(DataLoader(...))` on that line is another call there)
        if call.__class__ is ast.Call and str(loc(fn, call)) == where and loader_call(builder.program, call, fn):
            dataset = loader_dataset(builder.program, call, fn)
            if dataset is None or builder.program.class_of(dataset, fn) is None:
                return False
            return not _draws_randomness(builder.program, call, fn)
    return False


def _draws_randomness(program, call: ast.Call, fn: Function) -> bool:
    """The loader's dataset (or collate_fn) says it draws random numbers somewhere in its making.
    When the source does not show which local dataset class it is (handed through a container
    or a library), any local dataset class that draws is taken: the assumption is the message's."""
    dataset = loader_dataset(program, call, fn)
    made = [dataset, keyword(call, "collate_fn")]
    unshown = dataset is None  # (the dataset's class unseen: a collate_fn that is seen says nothing of it)
    collated = False  # a collate_fn the source shows, drawing nothing
    for node in made:
        if node is None:
            continue
        shown: list = []
        if _random_in(program, node, fn, 5, shown):
            return True
        unshown = unshown or (node is dataset and not shown)
        collated = collated or (node is not dataset and bool(shown))
    if not unshown:
        return False
    # (CompletionFormer's `getattr(import_module("data." + name), name)`: the dataset modules
    # a name picks at run time are read for their classes)
    program.read_waiting(DATASET_CLASS, 16)
    # (also a torchvision dataset subclassed: `class IMBALANCECIFAR10(torchvision.datasets.CIFAR10)`)
    roots = [k for k in program.classes if any(
        b.rpartition(".")[2].endswith("Dataset") or "datasets." in b for b in k.bases)]
    datasets = [k for k in roots if "__getitem__" in k.methods]
    if roots:
        # (and their subclasses, in modules only a configured name reaches: NCL's `class
        # iNaturalist(BaseSet)` of `class BaseSet(Dataset)`, built by `eval(cfg.DATASET.DATASET)`)
        names = "|".join(sorted({re.escape(k.name) for k in roots}))
        program.read_waiting(re.compile(rf"^class \w+\((?:[\w.]*\.)?(?:{names})\b", re.MULTILINE), 16)
        bases = {id(k) for k in roots}
        datasets += [k for k in program.classes if id(k) not in bases and any(id(b) in bases for b in program.bases(k))
                     and any("__getitem__" in c.methods for c in [k, *program.bases(k)])]
    # the ones the run is seen to build, where it builds any (a class kept for another
    # experiment and never built draws in no worker)
    # (and the ones the configs name for a factory that builds by name: sources._config_named)
    named = {id(program.full_symbol(t)) for t in (program.sources[0].config_named if program.sources else ())}
    built = [k for k in datasets if k in program.built_classes or id(k) in named]
    if collated:
        # beside a collate_fn the source shows, only a dataset class the run builds or names
        # (`params = {"dataset_class": OCRDataset}`), not any class of the package (GROVER's
        # pretraining dataset, beside a fine-tuning loader whose collator draws nothing)
        named = _names_read(program)
        return any(_draws(program, k) for k in datasets if k in built or k.name in named)
    return any(_draws(program, k) for k in (built or datasets))


def _lambda_draws(program, value: ast.AST, scope: Function) -> bool:
    """A lambda inside the value draws from the process's generators (`transforms.Lambda(lambda
    crops: random.choice(crops))` in a Compose): the workers run it for every item."""
    return any(n.__class__ is ast.Lambda and any(
        c.__class__ is ast.Call and (program.qualify(c.func, scope) or "").startswith(_DRAWS) for c in walk(n.body))
        for n in walk(value))


# Libraries whose dataset pipelines run their stages lazily, item by item, in the loader's workers
# (not eagerly at construction, as Hugging Face datasets' `map` does).
LAZY_PIPELINES = ("webdataset", "wds.", "torchdata.")


def _lazy_pipeline(program, value: ast.Call, scope: Function, depth: int = 2) -> bool:
    """The call is a stage of a lazy pipeline (LAZY_PIPELINES): its chain starts at one, or at a
    name bound to one (`dataset = wds.WebDataset(urls)`, then `dataset.decode("rgb")...`)."""
    head = call_chain(value)[-1]
    if (program.qualify(head.func, scope) or "").startswith(LAZY_PIPELINES):
        return True
    if depth <= 0 or not (head.func.__class__ is ast.Attribute and head.func.value.__class__ is ast.Name):
        return False
    return any(isinstance(branch, ast.Call) and _lazy_pipeline(program, branch, where, depth - 1)
               for held, where in program.values_of(head.func.value, scope, 1)
               for branch in ((held.body, held.orelse) if isinstance(held, ast.IfExp) else (held,)))


def _names_read(program) -> set[str]:
    """The plain names the functions the script reaches read (made once)."""
    found = program.__dict__.get("_reached_names")
    if found is None:
        found = program.__dict__["_reached_names"] = {
            n.id for f in program.reachable for n in walk(f.node if f.node.__class__ is not ast.Module else
                                                          ast.Module(body=list(f.own), type_ignores=[]))
            if n.__class__ is ast.Name and n.ctx.__class__ is ast.Load}
    return found


# Methods a dataset base class runs while the dataset is built, in the launching process:
# torch_geometric's Dataset calls download() and process() from its __init__.
CONSTRUCTION_HOOKS = {"download", "process"}


DATASET_CLASS = re.compile(r"^class \w+\((?:[\w.]*Dataset\b|[\w.]*datasets\.\w)", re.MULTILINE)


def _draws(program, klass) -> bool:
    """_class_draws, worked out once per class: a class is asked once for each loader and each
    base it is a base of (FMS's 310 asks of a few classes were half its lint)."""
    found = klass.__dict__.get("_draws")
    if found is None:
        found = klass.__dict__["_draws"] = _class_draws(program, klass)
    return found


def _draws_as_built(program, klass, built: ast.Call, scope: Function) -> bool:
    """_draws, for the one construction the loader is handed: a draw under a test on a field the
    constructor keeps from its parameter (`self.split = split`, then `if self.split == "demo":
    start = np.random.randint(...)`) runs in no worker of a dataset built with another constant
    (`Clips(root, "train")`); other constructions of the class may still take it."""
    if not _draws(program, klass):
        return False
    bound = _kept_constants(program, klass, built, scope)
    return _class_draws(program, klass, bound) if bound else True


def _kept_constants(program, klass, built: ast.Call, scope: Function) -> dict:
    """{"self.<field>": its constants} for `self.<field> = <param>` at the top of the class's own
    constructor, where this construction hands the parameter constants (or leaves it at a
    constant default: patterns._construction_constants), and no other method sets the field."""
    init = klass.methods.get("__init__")
    given = _construction_constants(program, klass, built, scope) if init is not None else {}
    found = {}
    for stmt in init.node.body if given else ():
        if stmt.__class__ is ast.Assign and len(stmt.targets) == 1 and stmt.value.__class__ is ast.Name \
                and stmt.value.id in given and _on_self(stmt.targets[0]):
            found[stmt.targets[0].attr] = given[stmt.value.id]
    # (a field set again elsewhere in the class holds more than this construction's constants)
    return {f"self.{f}": v for f, v in found.items() if not any(
        _on_self(t) and t.attr == f for m in klass.methods.values() if m is not init
        and m.node is not None and m.node.__class__ is not ast.Module for a in m.own_of(ast.Assign) for t in a.targets)}


def _on_self(node: ast.AST) -> bool:
    return node.__class__ is ast.Attribute and node.value.__class__ is ast.Name and node.value.id == "self"


def _bound_dead(method, bound: dict) -> set[int]:
    """The lines of the method a test settled by the construction's constants leaves out."""
    skip: set[int] = set()
    for stmt in method.own_of(ast.If):
        truth = _decided_by(stmt.test, bound, method)
        side = stmt.orelse if truth is True else stmt.body if truth is False else None
        if side:
            skip |= set(range(side[0].lineno, (side[-1].end_lineno or side[-1].lineno) + 1))
    return skip


def _class_draws(program, klass, bound: Optional[dict] = None) -> bool:
    """A dataset class draws in the worker: a method other than __init__ draws (`random.random()`,
    `np.random.randint`, an augmentation called), or __init__ builds a random transform
    (`RandomResizedCrop`, `ColorJitter`). A draw in __init__ itself (`random.shuffle(self.files)`),
    in a method only __init__ calls (`self.idx = self._split(n)`: a seeded permutation choosing
    the split) or in a base's construction hook (PyG's process()) runs once in the launching
    process: every rank's workers get the list as it is. A method nothing in the program names
    (GPT-SoVITS's `random_slice()`) draws nothing. bound: fields at one construction's
    constants (_draws_as_built)."""
    built = _construction_methods(klass)
    workers = _worker_methods(klass, program)
    reading = workers or set(klass.methods) - built
    if any(_self_seeds(method) for name, method in klass.methods.items() if name in reading):
        return False  # DLRM's RandomDataset reseeds numpy as it reads: its draws follow its own seed
    named = _attribute_names(program)
    own = _own_generators(klass, built)
    handed = _handed_generators(klass)
    # (methods the workers reach only through lines no way in runs: none of their draws run)
    unreached = _worker_methods(klass) - reading
    return any(_built_draw_read(klass, method, reading, program) if name in built else
               (RANDOM_WORDS.search(_without_methods(_without_own(_live_source(program, method, bound), own,
                                                                  handed.get(name, ())), klass))
                or _helpers_draw(program, method)
                or _imported_draw(program, method)
                or _inherited_draw(program, klass, method))
               # (where the class's own __getitem__ / __iter__ is in sight, only what the workers run
               # from it: GROVER's `shuffle(seed)`, which the main process calls, draws in no worker)
               if (name in reading if workers and name not in built else (name in named or name.startswith("__")))
               and name not in unreached else False
               for name, method in klass.methods.items())


def _imported_draw(program, method) -> bool:
    """The method calls a draw of the process's streams imported by its bare name (`from random
    import sample`, then `sample(same_concept - {i}, 30)` for each item): what RANDOM_WORDS
    cannot see in the text."""
    return any(c.func.__class__ is ast.Name and program.qualify(c.func, method) in GLOBAL_DRAWS
               for c in method.own_calls)


def _kept_draw_applied(init, call_method) -> bool:
    """The constructor keeps a random transform in a field (`self.ops = Compose([Random...])`)
    that the object's `__call__` reads."""
    applied = _source(call_method)
    for stmt in walk(init.node):
        if isinstance(stmt, ast.Assign) and ARGUMENT_WORDS.search(text(stmt.value, 4000)) and any(
                isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
                and re.search(rf"\bself\.{re.escape(t.attr)}\b", applied) for t in stmt.targets):
            return True
    return False


def _built_draw_read(klass, method, reading: set, program) -> bool:
    """The constructor builds a random transform that the workers' methods use: one kept as
    `self.<name> = Compose([RandomResizedCrop(...)])` counts where a method the workers run (or,
    where none is in sight, any other method) reads `self.<name>`; a table of transforms nothing
    reads (DiffusionRet's `tsfm_dict`) draws nothing. Built any other way, it counts as before.
    Also one a local builder makes (`self.transform = build_transform(is_train, size)`, the
    builder's text naming a random transform) and a worker's method reads."""
    others = [m for n, m in klass.methods.items() if n in reading and m is not method] or \
        [m for m in klass.methods.values() if m is not method]
    read_text = "\n".join(_source(m) for m in others)
    if not ARGUMENT_WORDS.search(_source(method)):
        return _helper_built_read(program, method, read_text)
    kept = False
    for stmt in walk(method.node):
        if not isinstance(stmt, (ast.Assign, ast.AnnAssign)) or stmt.value is None or \
                not _names_a_transform(program, stmt.value, method):
            continue
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        fields = [t.attr for t in targets if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                  and t.value.id == "self"]
        if len(fields) != len(targets):
            return True  # kept in a local or handed on: as before
        kept = True
        if any(re.search(rf"\bself\.{re.escape(f)}\b", read_text) for f in fields):
            return True
    # (a random word outside any assignment: a call in __init__, a transform handed to a base;
    # not the signature's `flip=False` or a flag an assignment tests: _names_a_transform)
    simple = (ast.Expr, ast.Return, ast.AugAssign)
    return any(isinstance(stmt, simple) and ARGUMENT_WORDS.search(text(stmt, 4000)) for stmt in walk(method.node)) \
        or (not kept and any(isinstance(stmt, ast.Assign) and _names_a_transform(program, stmt.value, method)
                             for stmt in walk(method.node)))


def _names_a_transform(program, value: ast.AST, method) -> bool:
    """The value a constructor keeps names a random transform (`Compose([RandomFlip(), ...])`):
    not the flag that picks a side (`torch.randint(0, 2, (n,)) if flip else torch.zeros(n)`, a
    per-item flip mask drawn once, in the process that builds the dataset), nor a draw itself."""
    sides = (value.body, value.orelse) if isinstance(value, ast.IfExp) else (value,)
    return any(ARGUMENT_WORDS.search(_without_flags(side)) for side in sides
               if not (isinstance(side, ast.Call) and (program.qualify(side.func, method) or "").startswith(_DRAWS)))


def _without_flags(node: ast.AST) -> str:
    """The value's text less the switches it hands on by their own name (`augment=self.augment`,
    `flip=False`): a flag passed down (Trajectron's `partial(process_scene, augment=self.augment)`
    indexing its scenes) names no transform; a transform handed under that name still does."""
    said = text(node, 4000)
    for kw in walk(node):
        if kw.__class__ is ast.keyword and kw.arg and ARGUMENT_WORDS.search(kw.arg) and (
                (kw.value.__class__ is ast.Constant and isinstance(kw.value.value, bool)) or
                (kw.value.__class__ in (ast.Name, ast.Attribute) and last_name(kw.value) == kw.arg)):
            said = said.replace(f"{kw.arg}={text(kw.value)}", "")
    return said


def _helper_built_read(program, method, read_text: str) -> bool:
    """`self.<field> = helper(...)` in the constructor, where the local helper's own text names
    a random transform and the workers' methods read `self.<field>`."""
    for stmt in method.own_of(ast.Assign):
        if not (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call)):
            continue
        fields = [t.attr for t in stmt.targets if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                  and t.value.id == "self"]
        if not fields or not any(re.search(rf"\bself\.{re.escape(f)}\b", read_text) for f in fields):
            continue
        targets = [t for t in program.resolve(stmt.value.func, method)[0]
                   if t.node is not None and not isinstance(t.node, ast.Module) and t.cls is None]
        if any(ARGUMENT_WORDS.search(_source(t)) for t in targets):
            return True
    return False


def _inherited_draw(program, klass, method, depth: int = 3) -> bool:
    """The method calls `self.<name>()` that a local base class defines, and that one draws, a
    few calls down (ViLT's `__getitem__` -> the base's `get_suite` -> `get_false_image`, a
    `random.randint` for a negative sample)."""
    todo, seen = [method], {id(method)}
    for _ in range(depth):
        more = []
        for m in todo:
            for call in m.own_calls:
                if not (isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name)
                        and call.func.value.id == "self"):
                    continue
                callee = program.method(klass, call.func.attr)
                if callee is None or id(callee) in seen or callee.name == "__init__":
                    continue
                seen.add(id(callee))
                if callee.cls is not klass and RANDOM_WORDS.search(
                        _without_methods(OWN_GENERATOR.sub("", _source(callee)), callee.cls)):
                    return True
                more.append(callee)
        todo = more
    return False


def _live_source(program, method, bound: Optional[dict] = None) -> str:
    """The method's text without the bodies of tests no way in can pass: `if frame_order == 2:`
    (a shuffle of the frames) where frame_order is a constructor's option every construction
    leaves at its default 0 - that draw never runs in a worker."""
    dead = _dead_lines(program, method)
    return _source(method, dead | _bound_dead(method, bound) if bound else dead)


def _picks_a_stand_in(side: list) -> bool:
    """A side that only picks another item and retries: names rebound (`idx = randint(...)`) then
    `continue`, or `return self[...]` / `return self.__getitem__(...)`."""
    last = side[-1]
    retried = last.__class__ is ast.Continue or (
        last.__class__ is ast.Return and last.value is not None and (
            (last.value.__class__ is ast.Subscript and last.value.value.__class__ is ast.Name
             and last.value.value.id == "self")
            or (last.value.__class__ is ast.Call and last_name(last.value.func) == "__getitem__")))
    return retried and all((s.__class__ is ast.Assign and all(t.__class__ is ast.Name for t in s.targets))
                           or (s.__class__ is ast.Expr and s.value.__class__ is ast.Call
                               and last_name(s.value.func) in _LOG_CALLS) for s in side[:-1])


# calls that only report (a retry's `print(f"missing {path}")`, `logger.warning(...)`)
_LOG_CALLS = frozenset({"print", "debug", "info", "warning", "warn", "error", "log"})


def _dead_lines(program, method) -> set[int]:
    """The lines of the method no way in runs (see _live_source), worked out once."""
    found = method.__dict__.get("_dead_lines")
    if found is not None:
        return found
    # (an `elif self.order == 2:` draw too, and one an option reaches only away from its
    # declared default, `--frame_order 2`: the default path, as DDP808 reads workers)
    dead = [stmt for stmt in method.own if isinstance(stmt, ast.If)
            and (_never_equal(program, stmt.test, method) or _never_equal_by_default(program, stmt.test, method))]
    skip = {n for stmt in dead for n in range(stmt.body[0].lineno, stmt.body[-1].end_lineno + 1)}
    # `if center: <centre crop> else: <random crop>` where every call hands `center=True`
    # (lip2sp's transform): the side the constant rules out runs on no way in
    # (and `if shuffle: np.random.shuffle(cols)` with no `else:`, shuffle=False on every call)
    for stmt in method.own_of(ast.If):
        truth = _truth_held(program, stmt.test, method)
        side = stmt.orelse if truth is True else stmt.body if truth is False else None
        if side:
            skip |= set(range(side[0].lineno, side[-1].end_lineno + 1))
            if not any(n.__class__ is ast.Call for n in walk(stmt.test)) and \
                    stmt.body[0].lineno > (stmt.test.end_lineno or stmt.test.lineno):
                # (and the settled test itself, a flag read: `if self.random:` draws nothing)
                skip |= set(range(stmt.test.lineno, (stmt.test.end_lineno or stmt.test.lineno) + 1))
    # `if frame_order == 0: return clip` at the top of the body, frame_order 0 on every way in:
    # nothing below it runs
    body = getattr(method.node, "body", [])
    for stmt in body:
        if isinstance(stmt, ast.If) and not stmt.orelse and stmt.body and isinstance(stmt.body[-1], ast.Return) \
                and _always_equal(program, stmt.test, method):
            skip |= set(range(stmt.end_lineno + 1, (body[-1].end_lineno or stmt.end_lineno) + 1))
            break
    skip |= _seed_draw_lines(method)
    # `except Exception: return self[np.random.randint(len(self))]`: a draw on a read error picks
    # a stand-in sample, no augmentation each item draws (NASTR's lmdb reader)
    for stmt in method.own_of(ast.Try):
        for handler in stmt.handlers:
            if handler.body:
                skip |= set(range(handler.body[0].lineno, (handler.body[-1].end_lineno or handler.lineno) + 1))
    # (and one on an unusable item, `if not os.path.exists(depth): idx = random.randint(0, n - 1);
    # continue` in a `while True:` reader, or `return self[random.randrange(len(self))]`: the retry
    # picks another sample)
    for stmt in method.own_of(ast.If):
        if stmt.body and _picks_a_stand_in(stmt.body):
            skip |= set(range(stmt.body[0].lineno, (stmt.body[-1].end_lineno or stmt.lineno) + 1))
    method.__dict__["_dead_lines"] = skip
    return skip


def _seed_draws(method) -> list:
    """The assignments of a name that a seeding call of the method is then handed, where the
    value mixes the rank in (`seed = self.seed + worker_id + rank * n + random.randint(0, 1000)`,
    then `g.manual_seed(seed)`): a draw there only perturbs a per-rank seed, no augmentation."""
    seeded = {a.id for c in method.own_of(ast.Call) if (last_name(c.func) or "") in _SEEDING_CALLS
              for a in c.args if isinstance(a, ast.Name)}
    return [n for n in method.own_of(ast.Assign) if len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
            and n.targets[0].id in seeded and _RANKED.search(text(n.value, 400))]


def _seed_draw_lines(method) -> set[int]:
    return {line for n in _seed_draws(method) for line in range(n.lineno, (n.end_lineno or n.lineno) + 1)}


_SEEDING_CALLS = frozenset({"manual_seed", "seed", "default_rng", "Random", "RandomState", "Generator"})
_RANKED = re.compile(r"\brank\b|\brank_id\b|local_rank|global_rank|get_rank\(")


def _truth_held(program, test: ast.AST, fn) -> Optional[bool]:
    """The truth of a test on a parameter (`if center:`, `if not center:`) where every value
    the calls hand it (or its default, where a call leaves it out) is a constant of one truth;
    None where the source does not settle it."""
    negated = test.__class__ is ast.UnaryOp and test.op.__class__ is ast.Not
    name = test.operand if negated else test
    if name.__class__ is ast.Attribute:
        # `elif self.args.raw_label:` of a store_true option every launch beside the script gives
        # (ChartT5's ChartQA), the field holding what the parser returned (followed through the
        # constructor's callers): the options as launched settle it, as they do `args.raw_label`
        if name.value.__class__ is ast.Attribute and name.value.value.__class__ is ast.Name and \
                name.value.value.id == "self" and any(
                    v.__class__ is ast.Call and last_name(v.func) in ("parse_args", "parse_known_args")
                    for v, _ in program.values_of(name.value, fn, 6)):
            read = ast.Attribute(value=ast.Name(id="args", ctx=ast.Load()), attr=name.attr, ctx=ast.Load())
            truth = settled(read, program)
            return None if truth is None else truth != negated
        if name.value.__class__ is ast.Name and name.value.id == "self":
            # `if self.random: np.random.shuffle(...)` of `self.random = random`, a constructor's
            # parameter every construction leaves at its False default (dyMEAN's E2EDataset)
            truths = _field_truths(program, name, fn)
            if len(truths) == 1:
                return truths.pop() != negated
        return settled(test, program)
    if name.__class__ is not ast.Name or name.id not in fn.params:
        return None
    held = _held_constants(program, name, fn, on_default_path=False)
    truths = {bool(value) for value in held or ()}
    if len(truths) != 1:
        return None
    return truths.pop() != negated


def _field_truths(program, field: ast.Attribute, fn) -> set:
    """The truths `self.<field>` may hold where the constructor keeps a parameter in it: what
    each construction hands that parameter, and its default where one leaves it out (a
    training dataset at `is_training=True` beside `Dataset(..., is_training=False)` for the dev
    set holds both); {None} where any value is no constant."""
    held = []
    for value, scope in program.values_of(field, fn, 1):
        if value.__class__ is ast.Name and value.id in scope.params and not scope.bindings.get(value.id):
            if scope.__dict__.get("_spread_calls"):
                return {None}
            held += [given for given, _ in scope.arguments.get(value.id, ())]
            if scope.defaulted.get(value.id):
                held.append(param_defaults(scope.node).get(value.id))
        else:
            held.append(value)
    if not held or not all(isinstance(value, ast.Constant) for value in held):
        return {None}
    return {bool(value.value) for value in held}


def _always_equal(program, test: ast.AST, fn) -> bool:
    """`x == C` where every value x can hold is C: a constant passed, a parameter left at it, or
    a command-line option whose declared default it is (the default path, as DDP808 reads workers)."""
    held = _compared_values(program, test, fn, on_default_path=True)
    return held is not None and all(value == held[0] for value in held[1])


def _never_equal(program, test: ast.AST, fn) -> bool:
    """`x == C` where every value x can hold is a constant other than C: passed so, or a
    parameter left at a constant default (no construction passes it)."""
    held = _compared_values(program, test, fn, on_default_path=False)
    return held is not None and all(value != held[0] for value in held[1])


def _never_equal_by_default(program, test: ast.AST, fn) -> bool:
    """`x == C` where x holds, on the default path (options at their declared defaults), only
    constants other than C."""
    held = _compared_values(program, test, fn, on_default_path=True)
    return held is not None and bool(held[1]) and all(value != held[0] for value in held[1])


def _compared_values(program, test: ast.AST, fn, on_default_path: bool) -> Optional[tuple]:
    """(C, the constants x may hold) for a test `x == C`; None where x may hold anything else."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
            and isinstance(test.comparators[0], ast.Constant) and isinstance(test.left, (ast.Name, ast.Attribute))):
        return None
    held = _held_constants(program, test.left, fn, on_default_path)
    return None if held is None else (test.comparators[0].value, held)


def _held_constants(program, node: ast.AST, fn, on_default_path: bool) -> Optional[list]:
    """The constants a name or attribute may hold; None where it may hold anything else (or
    nothing is known). A parameter counts at its default where known calls leave it out (and none
    spreads `**opts` into it; on_default_path: and none passes it); on_default_path, a
    command-line option counts at its declared default."""
    values = program.values_of(node, fn, 4)
    if not values:
        return None
    found, defaults = [], None
    for value, scope in values:
        # (the parameter itself where the calls that leave it out are known: `self.extract(x)`
        # into `def __call__(self, x, shuffle=False)`, its default)
        if isinstance(value, ast.Name) and value.id in scope.params and (value is not node or scope.defaulted.get(value.id)):
            if not scope.defaulted.get(value.id) or scope.__dict__.get("_spread_calls") or \
                    (on_default_path and scope.arguments.get(value.id)):
                return None
            value = param_defaults(scope.node).get(value.id)
        elif on_default_path and isinstance(value, ast.Attribute) and value is not node:
            if defaults is None:
                defaults = program.option_defaults()
            if value.attr not in defaults:
                return None
            value = ast.Constant(defaults[value.attr])
        if not isinstance(value, ast.Constant):
            return None
        found.append(value.value)
    return found


def _own_generators(klass, built: set) -> set[str]:
    """`self.rng = random.Random(seed)` in the construction: the attributes holding a generator
    the dataset made and seeded itself (its draws in the workers follow that seed)."""
    found = set()
    for name in built:
        method = klass.methods.get(name)
        for node in walk(method.node) if method is not None and method.node is not None else ():
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and \
                    OWN_GENERATOR.match(text(node.value, 200)):
                found.update(t.attr for t in node.targets if isinstance(t, ast.Attribute)
                             and isinstance(t.value, ast.Name) and t.value.id == "self")
    return found


def _without_own(source: str, own: set[str], handed=()) -> str:
    """The source with the draws from the dataset's own generators taken out (`self.rng.randint(`);
    handed: the method's parameters every call in the class hands such a generator."""
    # (and a generator a method makes for itself: `rng = np.random.default_rng(seed + worker)`,
    # then `rng.integers(...)`: its draws follow the seed it was given, as `self.rng`'s do)
    local = set(_LOCAL_GENERATOR.findall(source)) | set(handed)
    # (a parameter typed as one, `rng: np.random.Generator`, handed the caller's own generator)
    local |= set(_GENERATOR_PARAMETER.findall(source))
    source = _GENERATOR_PARAMETER.sub("", source)
    source = OWN_GENERATOR.sub("", source)
    if local:
        source = re.sub(r"\b(?<!\.)(?:" + "|".join(map(re.escape, sorted(local))) + r")\.\w+\(", "", source)
    if own:
        source = re.sub(r"\bself\.(?:" + "|".join(map(re.escape, sorted(own))) + r")\.\w+\(", "", source)
    return source


def _handed_generators(klass) -> dict[str, set[str]]:
    """{method: its parameters} where every `self.<method>(...)` call in the class hands, at that
    place, a generator the calling method made itself (`rng = np.random.RandomState(idx)`, then
    `self.get_weighted_samples(rng)`): the helper draws from the caller's own generator."""
    found: dict[str, set[str]] = {}
    made: dict[int, set[str]] = {}  # each caller's own generators, read off its text once

    def makes(caller) -> set[str]:
        if id(caller) not in made:
            made[id(caller)] = set(_LOCAL_GENERATOR.findall(_source(caller)))
        return made[id(caller)]

    for name, method in klass.methods.items():
        node = method.node
        if node is None or isinstance(node, ast.Module):
            continue
        params = [a.arg for a in node.args.args][1:]
        calls = [(c, caller) for caller in klass.methods.values() if caller.node is not None
                 and not isinstance(caller.node, ast.Module) for c in caller.own_calls
                 if isinstance(c.func, ast.Attribute) and c.func.attr == name
                 and isinstance(c.func.value, ast.Name) and c.func.value.id == "self"]
        if not calls:
            continue
        for index, param in enumerate(params):
            given = []
            for call, caller in calls:
                arg = call.args[index] if index < len(call.args) else next(
                    (k.value for k in call.keywords if k.arg == param), None)
                given.append(isinstance(arg, ast.Name) and arg.id in makes(caller))
            if all(given):
                found.setdefault(name, set()).add(param)
    return found


def _without_methods(source: str, klass) -> str:
    """The source with the class's own method names taken out: `def sample_augmentation(self):`
    and `self.sample_augmentation()` say a word, not a draw; that method is judged by its own
    body (LiDAR2Map's fixed resize, its random version commented out)."""
    names = [n for n in klass.methods if RANDOM_WORDS.search(n + "(")]  # (a call's spelling: `random_crop(`)
    if not names:
        return source
    return re.sub(r"\b(?:" + "|".join(map(re.escape, sorted(names))) + r")\b", "_", source)


def _live_draw(program, method) -> bool:
    """The lines of the method some way in runs draw (not a draw from a generator of its own, nor
    a word in the name of its class's method: `self.random_crop(lip, center=True)` is judged by
    random_crop's own live lines)."""
    source = OWN_GENERATOR.sub("", _live_source(program, method))
    return bool(RANDOM_WORDS.search(_without_methods(source, method.cls) if method.cls is not None else source))


def _helpers_draw(program, method) -> bool:
    """A module function the method calls draws (MiniMind-V's `__getitem__` ->
    `pre_processing_chat()`: `random.random() < 0.2` adds a system prompt), or a method of a
    helper object the dataset keeps (`self.frames.indices(n)`, a frame sampler drawing its
    offset), or the `__call__` of one (`self.transform(image)`): one call down."""
    for call in method.own_calls:
        helper = isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Attribute) and \
            isinstance(call.func.value.value, ast.Name) and call.func.value.value.id == "self"
        kept = isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) and \
            call.func.value.id == "self" and method.cls is not None and call.func.attr not in method.cls.methods
        if kept:
            # `self.augm(sample)` of `self.augm = train_augm if train else valid_augm`: the local
            # functions the attribute holds (each side of a choice the constructor makes)
            held = [t for value, owner in _kept_values(program, method.cls, call.func.attr)
                    for side in ((value.body, value.orelse) if isinstance(value, ast.IfExp) else (value,))
                    if isinstance(side, (ast.Name, ast.Attribute))
                    for t in program.reference(side, owner) if t.cls is None and t.node is not None
                    and not isinstance(t.node, ast.Module)]
            if any(_step_draws(program, t, _HELPERS_DOWN) for t in held):
                return True
            # `self.transform(image)` of `self.transform = Transform(train=train)`, a local class
            # whose __call__ draws (Prismer's random crop and flip)
            klass = program.class_of(call.func, method)
            target = program.method(klass, "__call__") if klass is not None else None
            if target is not None and target.node is not None and any(
                    _live_draw(program, m)
                    for m in _with_own_calls(target, program=program) if m.name != "__init__"):
                return True
            # a base's `__call__` applying `self.ops`, which the subclass's constructor makes a
            # random pipeline (`self.ops = Compose([RandomRotation(10), ...])`)
            init = program.method(klass, "__init__") if target is not None else None
            if init is not None and init.node is not None and _kept_draw_applied(init, target):
                return True
            continue
        if not isinstance(call.func, ast.Name) and not helper:
            continue
        for target in program.resolve(call.func, method)[0]:
            if (target.cls is None or (helper and target.cls is not method.cls)) and target.node is not None \
                    and not isinstance(target.node, ast.Module) and target.name != "__init__" \
                    and any(_live_draw(program, m)
                            for m in _with_own_calls(target, program=program) if m.name != "__init__"):
                return True
    return False


def _kept_values(program, klass, attr: str) -> list:
    """What `self.<attr>` holds, and where a constructor keeps a parameter there (`self.transforms
    = transforms`), what that parameter holds: its default (`transforms=transform`, a local
    function) and what the constructions pass for it."""
    found = []
    for value, owner in program._attr(klass, attr):
        found.append((value, owner))
        if value.__class__ is ast.Name and owner.node is not None and value.id in owner.params \
                and not owner.bindings.get(value.id):
            default = param_defaults(owner.node).get(value.id)
            if default is not None:
                found.append((default, owner))
            found.extend(owner.arguments.get(value.id, []))
    return found


def _with_own_calls(method, depth: int = 3, program=None) -> list:
    """The method and the methods of its class it calls as `self.<name>(...)`, a few calls down
    (a frame extractor's `get_video_data` -> `self.video_to_tensor`, which draws the offset);
    with program, not those called only where no way in goes (`if self.subset == "train":`)."""
    klass, found, todo = method.cls, [method], [method]
    for _ in range(depth if klass is not None else 0):
        more = []
        for m in todo:
            dead = _dead_lines(program, m) if program is not None else set()
            for n in m.own_calls:
                if getattr(n, "lineno", 0) in dead:
                    continue
                if isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name) and \
                        n.func.value.id == "self" and n.func.attr in klass.methods:
                    callee = klass.methods[n.func.attr]
                    if callee not in found:
                        found.append(callee)
                        more.append(callee)
        todo = more
    return found


# A generator the code makes and seeds itself (`np.random.Generator(np.random.PCG64(seed +
# epoch))`, `random.Random(seed)`): its draws follow that seed, not the worker's inherited one
# (OLMo's global data order, the same on every rank by design). Unseeded (`default_rng()`), it
# draws fresh entropy in each process: no sameness either.
OWN_GENERATOR = re.compile(r"\b(?:np|numpy)\.random\.(?:Generator|PCG64|PCG64DXSM|Philox|SFC64|MT19937|"
                           r"default_rng|SeedSequence|RandomState)\(|\brandom\.Random\(|(?<![\w.])(?:Random|RandomState)\(|\btorch\.Generator\("
                           # a torch draw handed such a generator: `torch.randn(3, generator=g)`
                           r"|\b[\w.]+\((?:[^()]|\([^()]*\))*\bgenerator=(?:[^()]|\([^()]*\))*\)")


# `rng = np.random.default_rng(...)` (or `random.Random(...)`, `torch.Generator()`): a name a
# method binds to a generator of its own
_LOCAL_GENERATOR = re.compile(r"\b([A-Za-z_]\w*)\s*=\s*(?:(?:np|numpy)\.random\.(?:Generator|default_rng|RandomState)"
                              r"|random\.Random|torch\.Generator)\(")


_GENERATOR_PARAMETER = re.compile(r"\b([A-Za-z_]\w*)\s*:\s*(?:(?:np|numpy)\.random\.(?:Generator|RandomState)"
                                  r"|random\.Random|torch\.Generator)\b")


# A dataset that seeds a global generator in the methods its workers run (`np.random.seed(
# self.rand_seed)` on reading index 0): what it draws is what it seeded, not what the worker
# inherited. (A seeding in __init__ runs in the launching process; the workers reseed after it.)
SELF_SEEDING = re.compile(r"\b(?:np|numpy)\.random\.seed\(|\brandom\.seed\(|\btorch\.manual_seed\(")


_SEEDERS = frozenset({"np.random.seed", "numpy.random.seed", "random.seed", "torch.manual_seed"})


def _self_seeds(method) -> bool:
    """The method seeds a global generator from something of its own - not from a draw of a
    global stream (`seed = np.random.randint(2**31); random.seed(seed)` before two transforms:
    the seed follows the worker's numpy stream, which the worker's base seed set, so workers
    seeded alike still draw alike)."""
    if not SELF_SEEDING.search(_source(method)):
        return False
    calls = [c for c in walk(method.node) if c.__class__ is ast.Call and dotted(c.func) in _SEEDERS]
    return not calls or any(not _relays_a_draw(call, method) for call in calls)


def _relays_a_draw(call: ast.Call, method) -> bool:
    """The seeding call's seed is a draw of a global stream, given inline or bound once before."""
    given = call.args[0] if call.args else None
    values = [given] if given is not None and given.__class__ is not ast.Name else \
        [v for _, v in method.bindings.get(given.id, ())] if given is not None else []
    return bool(values) and all(v.__class__ is ast.Call and _spelt_draw(dotted(v.func) or "") for v in values)


def _spelt_draw(name: str) -> bool:
    """A number drawn from a global stream, as the source spells the call (`np.random.randint`)."""
    return ("numpy." + name[3:] if name.startswith("np.") else name) in SCALAR_DRAWS


def _attribute_names(program) -> set[str]:
    """Every `x.<name>` the program's files spell: the methods something may call."""
    found = program.__dict__.get("_spelled_attributes")
    if found is None:
        found = program.__dict__["_spelled_attributes"] = {
            n.attr for f in program.files for n in f.of(ast.Attribute)}
    return found


# The methods a DataLoader worker calls on its dataset.
WORKER_ENTRIES = frozenset({"__getitem__", "__getitems__", "__iter__", "__next__"})


def _worker_methods(klass, program=None) -> set[str]:
    """The methods the workers run: __getitem__ / __iter__ and what they call as `self.<name>()`.
    Empty where the class defines neither (a base's reading is not in sight). A method only the
    main process calls between epochs (`loader.dataset.reorder(epoch)` reseeding numpy: Grad-W)
    seeds nothing the workers draw from. With the program, a call on lines no way in runs
    (`if self.mode == "video": return self._video_only(i)` where every construction leaves mode
    at "pair", _dead_lines) leads nowhere."""
    todo = [name for name in WORKER_ENTRIES if name in klass.methods]
    found: set[str] = set()
    while todo:
        name = todo.pop()
        if name in found or name not in klass.methods:
            continue
        found.add(name)
        dead = _dead_lines(program, klass.methods[name]) if program is not None else set()
        todo.extend(n.func.attr for n in walk(klass.methods[name].node) if isinstance(n, ast.Call)
                    and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
                    and n.func.value.id == "self" and n.lineno not in dead)
    return found


def _never_called(builder, fn, depth: int = 3) -> bool:
    """fn is a private method of the script's own (`_init_validation`, no framework hook) that no
    code calls, or is called only from such methods, a few calls up: it never runs."""
    if depth <= 0 or fn.node is None or isinstance(fn.node, ast.Module):
        return False
    callers = builder.callers().get(fn, [])
    if not callers:
        return fn.cls is not None and fn.name.startswith("_") and not fn.name.startswith("__")
    return all(caller is not fn and _never_called(builder, caller, depth - 1) for caller, _ in callers)


def _construction_methods(klass) -> set[str]:
    """__init__, and the methods only it (or another such) calls as `self.<name>(...)`, or a
    base runs while building (CONSTRUCTION_HOOKS): those that run before any worker starts."""
    calls = {name: {n.func.attr for n in walk(method.node) if isinstance(n, ast.Call)
                    and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
                    and n.func.value.id == "self"}
             for name, method in klass.methods.items()}
    built = {"__init__"} | (CONSTRUCTION_HOOKS & set(klass.methods))
    grown = True
    while grown:
        grown = False
        for name in klass.methods:
            callers = {c for c, called in calls.items() if name in called and c != name}
            if name not in built and callers and callers <= built:
                built.add(name)
                grown = True
    return built


# how many calls down a step a worker runs is read for its draws (a collate function, a handed
# pipeline stage, a lambda's callees: TwoStream's collate -> load_batch_video -> load_video ->
# get_selected_indexs)
_HELPERS_DOWN = 4


def _step_draws(program, step: Function, depth: int) -> bool:
    """A local function the workers run draws: in its own text, or in a local helper it calls
    (`collate` -> `pick_frames`, whose `np.random.permutation` picks the clip's frames).
    Worked out once per (function, depth)."""
    memo = program.__dict__.setdefault("_step_draws_memo", {})
    key = (id(step), depth)
    if key not in memo:
        memo[key] = False  # (a helper that leads back to itself draws nothing more)
        memo[key] = _step_draws_once(program, step, depth)
    return memo[key]


def _step_draws_once(program, step: Function, depth: int) -> bool:
    if RANDOM_WORDS.search(OWN_GENERATOR.sub("", _source(step))):
        return True
    if step.cls is not None and any(
            RANDOM_WORDS.search(OWN_GENERATOR.sub("", text(value, 400)))
            for c in step.own_calls if isinstance(c.func, ast.Attribute) and isinstance(c.func.value, ast.Name)
            and c.func.value.id == "self" for value, _ in program._attr(step.cls, c.func.attr)
            if isinstance(value, (ast.Call, ast.IfExp))):
        # a collate method calling `self.aug(batch)` where the constructor made `self.aug =
        # MolRandomizer()`: the object it calls draws
        return True
    return depth > 1 and any(
        _step_draws(program, t, depth - 1) for c in step.own_calls for t in program.resolve(c.func, step)[0]
        if program.is_function(t) and not isinstance(t.node, ast.Module) and t is not step
        and (t.cls is None or t.cls is step.cls))


def _stored_items(fn: Function, name: str) -> list:
    """(key, value) of each `name[key] = value` in fn: the items a dict gets after it is made."""
    return [(t.slice, stmt.value) for stmt in fn.own if stmt.__class__ is ast.Assign for t in stmt.targets
            if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id == name]


def _random_in(program, node: ast.AST, fn: Function, depth: int, shown: list) -> bool:
    """`shown` gets each local class or builder the values lead to. Worked out once per
    (value, function, depth): the values fan out at every step, and UniFormerV2's loaders asked
    the same few hundred values 85,000 times (13 s)."""
    memo = program.__dict__.setdefault("_random_memo", {})
    key = (id(node), id(fn), depth)
    hit = memo.get(key)
    if hit is not None and hit[2] is node:
        shown.extend(hit[1])
        return hit[0]
    memo[key] = (False, [], node)  # (a value that leads back to itself draws nothing more)
    mine: list = []
    found = _random_in_values(program, node, fn, depth, mine)
    shown.extend(mine)
    memo[key] = (found, mine, node)  # (the node kept alive: its id is the key)
    return found


# A generator's methods that hand back numbers (an index permutation, a choice), not a transform.
_DRAWN_NUMBERS = {"permutation", "choice", "shuffle", "randint", "integers", "rand", "randn", "random", "sample",
                  "uniform", "normal", "randperm"}


def _numbers_drawn(value: ast.AST) -> bool:
    """The value is numbers drawn from a generator made on the spot (`np.random.RandomState(0)
    .permutation(n)`, `np.random.default_rng(seed).choice(...)`): drawn once, where the dataset
    is made, and handed on as data; no worker draws them."""
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
        value.func.attr in _DRAWN_NUMBERS and isinstance(value.func.value, ast.Call) and \
        last_name(value.func.value.func) in ("RandomState", "default_rng", "Generator")


def _registry_built(program, value: ast.Call) -> list:
    """The classes `TABLE.build(cfg)` (an mmcv-style registry of the project's) may build: those
    decorated `@TABLE.register_module()`; empty for any other call."""
    func = value.func
    if func.__class__ is not ast.Attribute or func.attr != "build" or func.value.__class__ not in (ast.Name, ast.Attribute):
        return []
    table = last_name(func.value) or ""
    # (the registered classes sit in modules a package's __init__ imports for their decorators:
    # those are read once a table, not at each `.build(...)` the values lead to)
    asked = program.__dict__.setdefault("_registries_read", set())
    if table not in asked:
        asked.add(table)
        program.read_waiting(re.compile(rf"^@{re.escape(table)}\.register", re.MULTILINE), 16)
    return [k for k in program._registered_with(table) if program.is_class(k)]


def _hands_back_held(program, klass) -> bool:
    """The class's item method (its own or the nearest base's) only hands back what the object
    holds, by the index (`return self.img_ids[i]`): its workers call nothing, so nothing they do
    draws, whatever transform the constructor is handed (the loop applies it in the process)."""
    for each in [klass, *program.bases(klass)]:
        if "__iter__" in each.methods:
            return False
        method = each.methods.get("__getitem__")
        if method is not None and method.node is not None:
            body = [s for s in method.node.body if not (s.__class__ is ast.Expr and isinstance(s.value, ast.Constant))]
            if not (len(body) == 1 and body[0].__class__ is ast.Return and body[0].value is not None) or \
                    any(n.__class__ is ast.Call for n in walk(body[0])):
                return False
            # (not `return self.base[self.idx[i]]` of a dataset handed in: indexing it runs its
            # own __getitem__; a field the class fills itself, `self.ids = coco.get_img_ids()`)
            fields = {n.value.attr for n in walk(body[0]) if n.__class__ is ast.Subscript
                      and n.value.__class__ is ast.Attribute and n.value.value.__class__ is ast.Name
                      and n.value.value.id == "self"}
            return bool(fields) and all(_filled_by_the_class(each, field) for field in fields)
    return False


def _filled_by_the_class(klass, field: str) -> bool:
    """Every `self.<field> = ...` in the class's methods binds something other than a parameter
    of the method as handed in (a list it builds, an index it reads), and there is one."""
    found = False
    for method in klass.methods.values():
        if method.node is None:
            continue
        for node in method.own_of(ast.Assign):
            if any(t.__class__ is ast.Attribute and t.attr == field and t.value.__class__ is ast.Name
                   and t.value.id == "self" for t in node.targets):
                if node.value.__class__ is ast.Name and node.value.id in method.params:
                    return False  # (what the caller hands in: a dataset of its own, maybe)
                found = True
    return found


def _random_in_values(program, node: ast.AST, fn: Function, depth: int, shown: list) -> bool:
    # what `items.append(x)` / `extend` / `insert` put in a list named node, in fn
    added = [call.args[-1] for call in fn.own_calls
             if call.args and isinstance(call.func, ast.Attribute) and call.func.attr in ("append", "extend", "insert")
             and isinstance(call.func.value, ast.Name) and call.func.value.id == node.id] \
        if isinstance(node, ast.Name) else []
    if any(ARGUMENT_WORDS.search(text(arg, 4000)) for arg in added):
        return True  # `ops = []; ops.extend([RandomResizedCrop(224), ...])`, then `Compose(ops)`
    values = program.values_of(node, fn, 2)
    if added and depth > 0 and any(isinstance(v, ast.List) and not v.elts for v, _ in values):
        # `db_list = []`, `db_list.append(db)` in a loop, then `ConcatDataset(db_list)` (RelPose's
        # dataset_factory): what the list is filled with
        values = [*values, *((arg, fn) for arg in added)]
    if isinstance(node, ast.Name) and depth > 0:
        # `dataset, has_subfolder = self.create_dataset(..., transform=transform)` and then
        # `dataset = dataset_with_indices(dataset)` (ProPos): the first binding is an unpacking,
        # which values_of leaves out
        values = [*values, *program.unpacked(node.id, fn)]
    for value, scope in values:
        said = text(value, 4000)
        if _numbers_drawn(value):
            continue  # `np.random.RandomState(0).permutation(n)`: a split's indices, drawn where it is made
        if isinstance(value, ast.Call):
            registered = _registry_built(program, value)
            if any(_draws(program, k) for k in registered):
                shown.extend(registered)
                return True  # `DATASETS.build(cfg)`: one of the classes registered there, by the config's name
            local = program.callee(value.func, scope)
            if program.is_class(local) and _hands_back_held(program, local):
                continue  # `def __getitem__(self, i): return self.ids[i]`: what it is handed never runs in a worker
            if program.is_class(local) or program.is_function(local):
                # a local class is judged by what it does below, not its name (DLRM's
                # `RandomDataset(...)` draws synthetic data it seeds itself): its arguments only
                said = " ".join(text(a, 4000) for a in [*value.args, *(kw.value for kw in value.keywords)])
        if ARGUMENT_WORDS.search(said):
            return True
        if _lambda_draws(program, value, scope):
            return True
        if isinstance(value, ast.Call) and _lazy_pipeline(program, value, scope):
            # `dataset.decode("rgb").map_tuple(crop if train else resize)` over a webdataset: the
            # pipeline's stages run the local functions handed to them, in the workers
            handed = [h for c in call_chain(value) for a in [*c.args, *(k.value for k in c.keywords)]
                      for h in ((a.body, a.orelse) if isinstance(a, ast.IfExp) else (a,))
                      if isinstance(h, (ast.Name, ast.Attribute))]
            steps = [t for h in handed for t in program.reference(h, scope) if program.is_function(t)
                     and not isinstance(t.node, ast.Module)]
            if any(_step_draws(program, t, _HELPERS_DOWN) for t in steps):
                shown.extend(steps)
                return True
        if depth <= 0:
            continue
        if isinstance(value, ast.IfExp):
            # `collate = default_collator if plain else get_masking_collator(cfg)`: either side
            if any(_random_in(program, side, scope, depth - 1, shown) for side in (value.body, value.orelse)):
                return True
            continue
        if isinstance(value, ast.Subscript):
            # `datasets["train"]` of `datasets = {"train": train_set, ...}`; `datasets[i]` in
            # `{i: DataLoader(datasets[i], ...) for i in splits}`: one call builds a loader of each
            # item, so any item that draws is drawn from in that call's workers
            named = value.slice.value if isinstance(value.slice, ast.Constant) else None
            for held, where in program.values_of(value.value, scope, 2):
                if isinstance(held, ast.Call) and _random_in(program, held, where, depth - 1, shown):
                    return True  # `transf = get_transforms(...)` then `transf['train']` (FixRes): what the builder makes
                items = list(zip(held.keys, held.values)) if isinstance(held, ast.Dict) else \
                    [(None, held.value)] if isinstance(held, ast.DictComp) else []
                if isinstance(held, (ast.Dict, ast.DictComp)) and isinstance(value.value, ast.Name):
                    # `datasets["pretrain"] = Custom(...)` after the literal: an item set by key
                    items += _stored_items(where, value.value.id)
                for key, item in items:
                    if (named is None or key is None or (isinstance(key, ast.Constant) and key.value == named)) \
                            and _random_in(program, item, where, depth - 1, shown):
                        return True
            continue
        if isinstance(value, (ast.Name, ast.Attribute)) or (
                isinstance(value, ast.Call) and last_name(value.func) == "partial" and value.args):
            # a local function handed on as a processing step (`Pipeline(rows, [volume_aug,
            # partial(crop, size=8)])`, wenet's processors): the workers run what it draws
            handed = value.args[0] if isinstance(value, ast.Call) else value
            # (a method too: `collate_fn=self._collate` of the data module)
            steps = [t for t in program.reference(handed, scope) if program.is_function(t)
                     and not isinstance(t.node, ast.Module) and (t.cls is None or isinstance(handed, ast.Attribute))]
            if any(_step_draws(program, t, _HELPERS_DOWN) for t in steps):
                shown.extend(steps)
                return True
        if isinstance(value, ast.Lambda):
            # `collate_fn=lambda b: collate(b, train=True)`: the workers run the functions it calls
            steps = [t for c in walk(value.body) if isinstance(c, ast.Call)
                     for t in program.resolve(c.func, scope)[0]
                     if program.is_function(t) and not isinstance(t.node, ast.Module) and t.cls is None]
            if any(_step_draws(program, t, _HELPERS_DOWN) for t in steps):
                shown.extend(steps)
                return True
        if isinstance(value, ast.Name):  # `train_set, val_set = data.splits()`: what the builder returns
            if any(_random_in(program, held, where, depth - 1, shown)
                   for held, where in program.unpacked(value.id, scope)):
                return True
            if value.id in scope.params and any(
                    _random_in(program, held, where, depth - 1, shown)
                    for held, where in program.values_of(value, scope, 2) if held is not value):
                return True  # `self.transform = transform`: what the constructions pass
            if value is not node and value.id not in scope.params and _random_in(program, value, scope, depth - 1, shown):
                return True  # a caller's own local it handed in (`train_transform = self.train_transform(n)`)
            continue
        if not isinstance(value, ast.Call):
            continue
        # (`penn.data.Dataset(...)` through the package's names: the class whose constructor it
        # resolves to is what is built - its worker methods draw, not __init__)
        target = built_class(program, value.func, scope)
        if target is None and isinstance(value.func, ast.Attribute):
            # `Data(Masker()).train_set()`: a method of an object made on the spot
            target = next(iter(program.resolve(value.func, scope)[0]), None)
        if target is None and isinstance(value.func, ast.Name):
            # `Dataset = VideoDataset if osp.isdir(path) else HDF5Dataset`, then `Dataset(path, ...)`
            # (VideoGPT): each class the name may hold
            picks = [(branch, where) for held, where in program.values_of(value.func, scope, 1)
                     for branch in ((held.body, held.orelse) if isinstance(held, ast.IfExp) else (held,))]
            # (`dataset_class = Kmeans` in the caller, handed on as `ds_type`, then `ds_type(path=p)`:
            # the class the caller's name holds)
            picks += [(held, at) for branch, where in picks if branch.__class__ is ast.Name
                      and program.callee(branch, where) is None
                      for held, at in program.values_of(branch, where, 1) if held is not branch]
            classes = [k for branch, where in picks if isinstance(branch, (ast.Name, ast.Attribute))
                       for k in [program.callee(branch, where)] if program.is_class(k)]
            # `Data = data_dict[args.data]`, then `Data(...)`: the registry's classes, the one
            # the option's default names where it names one (aLLM4TS's sixteen datasets, one of
            # which draws)
            classes += [k for branch, where in picks if isinstance(branch, ast.Subscript)
                        for k in _picked_entries(program, branch, where)]
            shown.extend(classes)
            if any(_draws(program, k) for c in classes for k in [c, *program.bases(c)]):
                return True
            # `build = {"cifar10": lambda: CIFAR10(root, transform=pipeline(32)), ...}[name]`,
            # then `build()`: what each lambda of the table makes
            if any(_random_in(program, item.body, held_at, depth - 1, shown)
                   for branch, where in picks if isinstance(branch, ast.Subscript)
                   for held, held_at in program.values_of(branch.value, where, 1) if isinstance(held, ast.Dict)
                   for item in held.values if isinstance(item, ast.Lambda)):
                return True
        if target is None and value.func.__class__ is ast.Call:
            # `get_dataset(cfg.NAME)(root, "train")`, the helper handing back a class of its
            # table (`return table.get(name)`): each class it may hand back, as this call builds it
            classes = _classes_handed_back(program, value.func, scope)
            shown.extend(classes)
            if any(_draws_as_built(program, k, value, scope) or any(_draws(program, b) for b in program.bases(k))
                   for k in classes):
                return True
        if target is None and isinstance(value.func, ast.Subscript):
            # `datasets[name.lower()](**kwargs)` over a registry table: each class it holds
            # (`config["dataset"](...)` names its key: the entry under it, not a nested block's
            # classes beside it)
            classes = _picked_entries(program, value.func, scope)
            shown.extend(classes)
            if any(_draws(program, k) for c in classes for k in [c, *program.bases(c)]):
                return True
        if program.is_class(target):
            shown.append(target)
            if _draws_as_built(program, target, value, scope) or any(_draws(program, k) for k in program.bases(target)):
                return True
        elif program.is_function(target) and not isinstance(target.node, ast.Module):
            if _parses_options(target):
                continue  # `args = get_args()`: the options' parser (a `--random_flip` declared) draws nothing
            if ARGUMENT_WORDS.search(_source(target)):
                shown.append(target)
                return True
            led: list = []
            if any(_random_in(program, ret, target, depth - 1, led) for ret in target.returned):
                return True
            # a builder whose result the source does not show (CompletionFormer's `get(args)`:
            # `getattr(import_module("data." + name), name)`) shows no dataset: the local
            # dataset classes are taken, as where nothing is shown
            if led or not _unshown(target):
                shown.append(target)
                shown.extend(led)
        if program.is_class(target) and _reseeds_in_worker(target):
            continue  # it reseeds as it reads: what it holds draws from that seed (a simulator handed in)
        # what the arguments lead to shows the dataset only where the callee is known: through
        # `getattr(import_module(...), name)(args)` the options' builder is no dataset maker
        # (nor where the callee builds by a name known at run time: `build_dataset(name, cfg,
        # split)` returning `REGISTRY.get(name)(cfg, split)` - the config it is handed, read by a
        # local loader, is no dataset)
        into = shown if target is not None and not (
            program.is_function(target) and not isinstance(target.node, ast.Module) and _unshown(target)) else []
        given = [*value.args, *(kw.value for kw in value.keywords)]
        # `ConcatDataset([Coco(...), Vqa(...)])`: each dataset the list holds
        given += [elt for arg in given if isinstance(arg, (ast.List, ast.Tuple)) for elt in arg.elts]
        if any(_random_in(program, arg, scope, depth - 1, into)
               for arg in given if isinstance(arg, (ast.Name, ast.Attribute, ast.Call, ast.Subscript))):
            return True
    return False


def _classes_handed_back(program, call: ast.Call, scope: Function) -> list:
    """The local classes a local helper hands back as classes, not instances: `return cls`, or
    an entry of its table (`return table.get(name)`, `return table[name]`)."""
    helper = program.callee(call.func, scope)
    if not program.is_function(helper) or helper.node.__class__ is ast.Module:
        return []
    found: list = []
    for ret in helper.returned:
        for held, where in program.values_of(ret, helper, 2):
            if held.__class__ in (ast.Name, ast.Attribute):
                klass = program.callee(held, where)
                if program.is_class(klass):
                    found.append(klass)
                continue
            table = held.value if held.__class__ is ast.Subscript else \
                held.func.value if held.__class__ is ast.Call and held.func.__class__ is ast.Attribute \
                and held.func.attr == "get" else None
            if table is not None:
                found += [k for k in program._table_entries(table, where, read=True) if program.is_class(k)]
    return [k for i, k in enumerate(found) if all(k is not j for j in found[:i])]


def _picked_entries(program, subscript: ast.Subscript, scope: Function) -> list:
    """The classes a registry lookup (`datasets[name]`, `config["dataset"]`) may give: the entry
    under the key it spells; under a command-line option's key (`data_dict[args.data]`) the
    entry its default names where the table has that key, for that is the run the code is
    judged on; under an attribute key nothing settles (a required option, a config file's
    field) the registry as most of its classes are; else all of them."""
    table, path = subscript, []
    while isinstance(table, ast.Subscript):
        path.insert(0, table.slice)
        table = table.value
    entries = lambda keys: [k for k in program._table_entries(table, scope, read=True, path=keys)
                            if program.is_class(k)]
    last = path[-1] if path else None
    option = last.attr if isinstance(last, ast.Attribute) else None
    default = program.option_defaults().get(option) if option else None
    if isinstance(default, str):
        picked = entries([*path[:-1], ast.Constant(default)])
        every = entries(path)
        if picked and len(picked) < len(every):
            return picked
        return every
    every = entries(path)
    if option and len(every) > 2:
        # a key the run gives (`required=True`, a config field): which entry is unknown, so the
        # registry is taken to draw only where most of its classes do (one of aLLM4TS's sixteen
        # forecasting datasets draws: the assumption would rest on the rare pick)
        drawing = [k for k in every if any(_draws(program, b) for b in [k, *program.bases(k)])]
        # (the quiet majority stands for the registry: shown, drawing nothing)
        return every if 2 * len(drawing) >= len(every) else [k for k in every if k not in drawing]
    return every


def _parses_options(target) -> bool:
    """The function returns what an argument parser parsed (`return parser.parse_args()`)."""
    names = {r.id for r in target.returned if isinstance(r, ast.Name)}
    values = [v for name in names for _, v in target.bindings.get(name, [])] + list(target.returned)
    return any(isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute)
               and v.func.attr in ("parse_args", "parse_known_args") for v in values)


def _reseeds_in_worker(klass) -> bool:
    """A dataset class that seeds the generators itself in the methods its workers run
    (`torch.manual_seed(rank * 10000 + worker_id)` in `__iter__`)."""
    reading = _worker_methods(klass) or set(klass.methods) - _construction_methods(klass)
    return any(_self_seeds(method) for name, method in klass.methods.items() if name in reading)


def _unshown(target) -> bool:
    """Every value the function returns is picked by name at run time (`getattr(module, name)`,
    a module `import_module` loads, or what such a lookup gives, called: `instantiate_from_config`'s
    `get_obj_from_str(config["name"])(**params)`): no class the source names."""
    returned = list(target.returned)
    return bool(returned) and all(isinstance(r, ast.Call) and (
        last_name(r.func) in ("getattr", "import_module") or isinstance(r.func, ast.Call)) for r in returned)


def _source(symbol, skip: frozenset = frozenset()) -> str:
    """A local class's or function's own text (its lines in the file), less the lines in skip."""
    node = symbol.node
    first = node.lineno
    lines = symbol.file.lines[first - 1:getattr(node, "end_lineno", first)]
    return "\n".join(line for n, line in enumerate(lines, first)
                     if n not in skip and not line.lstrip().startswith(("import ", "from ", "#")))
