"""DDP802-DDP804's facts: every DataLoader with its sampler and dataset (sharded by rank or not,
training or evaluation, handed to a framework), and every DistributedSampler with its set_epoch
calls."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Optional

from ddpdoctor.core.findings import Location
from ddpdoctor.lint.fact_builder import (_COUNTS, _count_test, pinned_constants, _cond_false, _fn_loops, switch_form, rank_guards, _single_process, _statement_blocks, _switched, _test_of,
                                         argument_at, given_constants, group_query, loc, never_true, ruled_out)
from ddpdoctor.lint.defaults import DIST_SWITCH, LAUNCH_WORDS, _compare_constant, off_at_launch, option_value, runs_once_at_launch, settled
from ddpdoctor.lint.nodes import children, param_defaults, source_lines, walk
from ddpdoctor.lint.process_seeds import _off_by_default as _seed_option_unset, _on_import, _seeds_direct_path, _with_own_calls, seed_has_rank, seeded_per_rank
from ddpdoctor.lint.rank_state import rank_advanced
from ddpdoctor.lint.ranks import GPU_COUNT, SPAWNERS
from ddpdoctor.lint.patterns import (GLOBAL_DRAWS, SCALAR_DRAWS, library_scaler_backward, returned_items, _dict_call_literal, _grad_context, _instantiated, call_chain, call_keywords, dotted, hf_trainer_class, is_const, keyword, last_name, loader_call, loader_dataset,
                                     own_keyword, plain_loss, text)
from ddpdoctor.lint.pins import program_floor
from ddpdoctor.lint.program import Function, Klass, is_property, table_values_bound
from ddpdoctor.lint import reaching
from ddpdoctor.lint.walker import side_conds
from ddpdoctor.lint.value_flow import root_name, loop_invariant, outer_loop, unread_by_constructor, reaches_return


EVAL_NAME = re.compile(r"val|valid|test|eval|dev(?:\b|_|s\b)|holdout|calib", re.IGNORECASE)
TRAIN_NAME = re.compile(r"train", re.IGNORECASE)
TRAIN_SWITCH = re.compile(r"(?:is_)?train(?:ing)?$", re.IGNORECASE)  # a builder's `is_train` parameter
# A builder named for both splits (`create_train_and_valid_dataloader`, `build_train_val_loaders`),
# not an evaluation's own training split (`get_eval_train_dataloader`: a linear probe's)
BOTH_SPLITS = re.compile(r"train\w*?_(?:and_)?(?:val|valid|test|eval|dev)|(?:val|valid|test|eval|dev)\w*?_and_\w*train",
                         re.IGNORECASE)
ORDERED_SAMPLER = re.compile(r"Ordered|Sequential|Eval|Inference")
PLAIN_SAMPLERS = {"RandomSampler", "SequentialSampler", "WeightedRandomSampler", "SubsetRandomSampler"}
SHARD_KEYWORDS = {"shard", "shard_id", "num_shards", "rank", "world_size", "num_replicas", "shard_index"}
# Dataset kinds that yield samples rather than index them: a sampler never applies (torch's
# IterableDataset, and its datapipes, IterDataPipe subclasses).
ITERABLE_KINDS = ("Iterable", "IterDataPipe")
# Libraries whose datasets split the data across ranks themselves (they read the rank and world
# size from the environment): MosaicML's streaming, Lightning's litdata, webdataset, torchdata's
# nodes, Hugging Face datasets' split_dataset_by_node.
SELF_SHARDING_LIBRARIES = ("streaming.", "litdata.", "webdataset", "wds.", "torchdata.",
                           "datasets.distributed.split_dataset_by_node")
LISTS_ITS_OWN = re.compile(r"\bglob\(|\blistdir\(|\bscandir\(|\biterdir\(|\brglob\(|\breadlines\(|\bfor \w+ in range\(")
WRAPS = re.compile(r"\biter\(self\.|\bfrom self\.|\.as_numpy_iterator\(")
DRAWS = re.compile(r"\brandom\b|\brand(?:n|int|perm)?\(|\.normal\(|\.uniform\(")
# a Hugging Face datasets stream (`load_dataset(..., streaming=True)`): datasets hands its shards
# out among one process's DataLoader workers itself, and among ranks only through
# split_dataset_by_node (SELF_SHARDING)
HF_STREAM = re.compile(r"\bload_dataset\([^)]*\bstreaming\s*=\s*True|\.to_iterable_dataset\(")
SELF_SHARDING = re.compile(r"get_rank|\b[Rr]ank\b|RANK\b|world_size|WORLD_SIZE|num_replicas|split_dataset_by_node")
# A map-style dataset keeping one rank's share of its items: `if count % world == rank:` while it
# lists them, or `items[rank::world]`
# A line of a dataset's own code that keeps one rank's items: `i % world == rank`, `i % (world *
# workers) != rank * workers + worker_id` (then `continue`), `items[rank::world]`
KEEPS_RANK_SHARE = re.compile(r"%\s*\(?[\w.\s*+]+\)?\s*[!=]=\s*\(?\s*[\w.]*(?:rank|process_index)\b"
                              r"|\[\s*[\w.]*rank\w*\s*::", re.IGNORECASE)


@dataclass
class LoaderFact:
    location: Location
    name: str  # what it is bound to ("" when passed inline)
    sampler: str  # "distributed" | "none" | "plain" | "custom"
    sampler_text: str
    dataset_text: str
    sharded_by_rank: bool  # the dataset already depends on the rank (manual shards)
    iterable: bool  # an IterableDataset, or a dataset class that shards itself
    under_rank_guard: bool
    evaluation: bool  # named like a validation / test loader
    prepared_by: Optional[str] = None  # "accelerate" when handed to accelerator.prepare
    prepared_under: str = ""  # the test the prepare() sits under, "" when it always runs
    sampler_class: str = ""  # the plain sampler's class (RandomSampler), for the message
    sequential: bool = False  # its sampler keeps the order (shuffle=False, SequentialSampler): an evaluation's
    trains: bool = False  # iterated by a loop that runs backward: the training loader, proven
    # only loops whose backward is provably a plain model's iterate it (a helper fine-tuned on
    # every rank before the DDP run), while another loop trains through DDP: that one is the
    # training the ranks share, this loader feeds none of it
    plain_trains: bool = False
    train_named: bool = False  # its name, dataset or builder says "train"
    unseen_options: bool = False  # DataLoader(ds, **kwargs): a sampler may be in there
    handed_to_framework: bool = False  # the loader or its dataset goes to training_data=...
    single_process: bool = False  # built where the process group is not set up (`else:` of `if opt["dist"]:`)
    iterated: bool = False  # a `for` over it (or iter() of it) that runs no collective: each rank's own work
    unread: bool = False  # returned in a builder's tuple that every caller unpacks into a name it never reads
    other_branch_distributed: str = ""  # the test whose other side handles the process-group switch
    # the dataset's __getitem__ never reads the index it is handed (it draws its own sample):
    # the sampler does not decide what each rank loads
    index_ignored: bool = False
    # a local IterableDataset among the dataset's values whose __iter__ splits its stream among
    # the loader's workers alone (get_worker_info, never the rank): (its class, whether another
    # dataset may be handed instead, on a branch a setting picks)
    worker_split: tuple = ()
    # no `num_workers=` (or a literal 0) and no `**kwargs`: the dataset is read in the rank's own process
    no_workers: bool = False
    # not proven a training loader, and read by loops that run with gradients off (a feature
    # cache, an evaluation) whatever its name says
    no_grad_read: bool = False
    # its plain sampler draws with replacement (`RandomSampler(ds, replacement=True)`, a
    # WeightedRandomSampler): each rank draws its own samples when the ranks are seeded apart
    with_replacement: bool = False  # its plain sampler draws (with replacement, or a fixed number of samples)
    seeded_alike: bool = True  # the ranks seed torch alike (their random samplers draw the same)
    # in a script Accelerate runs, built and read where no Accelerator is in sight (its class or
    # function never names one) and never prepared: the script's own process-group run's loader
    apart_from_accelerate: bool = False
    # in a script Accelerate runs, never handed to a prepare() that the source shows whole (every
    # prepare() takes named objects of its own function): no sampler is inserted, and a training
    # loop that iterates it reads the whole dataset on every process
    unprepared: bool = False
    # a builder's loader prepared where it is first made, then made again by the same builder
    # inside the loop that iterates it, and never prepared there (a chunk swap): the site
    rebuilt_unprepared: str = ""
    # returned by a Hugging Face Trainer subclass's `get_train_dataloader` override that never
    # prepares it (that override's label): the Trainer iterates it as built, on every process
    trainer_hook: str = ""
    # `sampler=DistributedSampler(ds) if num_gpus > 1 else None` where the options, as launched,
    # make the test false (--num_gpus left at 1 while the launcher starts a rank per GPU): the
    # test's text; the missing sampler rests on that option value
    sampler_dropped_by: str = ""
    # its dataset is a local map-style class that keeps one rank's share of the items itself, or
    # a split of a whole by the rank (`Subset(ds, range(rank * n, ...))`: split_at says where)
    keeps_rank_share: bool = False
    split_at: str = ""
    prepared_at: str = ""  # the accelerator.prepare() call it is handed to, where one names it
    # a switch read with an off default (`cfg.get("HM", False)`) that every way to the loader
    # passes: built only where a config turns it on, which the source does not settle
    switched_on: str = ""
    # a test around the DataLoader call that the options, as launched, make false (`elif
    # args.task == "classification":` with --task defaulting to another): "" where none is
    off_at_launch: str = ""
    # a training loader a framework shards itself (Lightning's Trainer puts a DistributedSampler
    # in, Accelerate's prepare() shards it) over a dataset an unseeded draw picks on each
    # process apart (`random_split(ds, [a, b])` at the script's top level, which every process
    # Lightning starts runs again): the draw, "" where none
    framework_drawn: str = ""


@dataclass
class SamplerFact:
    location: Location
    name: str  # the sampler's name, or "<loader>.sampler" when built inline
    shuffle: bool
    set_epoch: list[Location]  # the set_epoch calls that reach it
    constant_epoch: Optional[Location]  # set_epoch(<constant>) inside a loop
    across_epochs: bool  # its loader is iterated more than once (inside a loop)
    sharded_by_rank: bool
    dataset_text: str
    loader: Optional[Location] = None  # the DataLoader it feeds, where known
    # every set_epoch call found sits under this rank test (`if rank <= 0:` around a progress
    # bar): the other ranks keep epoch 0's order, and the ranks' shards overlap after the first
    set_epoch_under: str = ""
    # every set_epoch call found runs once, before any loop (`sampler.set_epoch(start - 1)` above
    # the epoch loop): the order it fixes is the same every epoch
    set_epoch_once: Optional[Location] = None
    # the loader it feeds goes through `accelerator.prepare`: Accelerate's DataLoaderShard calls
    # set_epoch on the sampler it wraps at the start of every pass (accelerate/data_loader.py)
    epoch_set_by: str = ""
    # where an ignite Engine runs its loader for several epochs (`trainer.run(loader,
    # max_epochs=n)`): the fix is a handler on the Engine's EPOCH_STARTED event, not a loop line
    run_by: Optional[Location] = None
    # built and bound to a plain name that nothing reads again (no loader takes it): it orders
    # nothing, so no epoch of it repeats (the loader without it is DDP802's)
    unread: bool = False
    # (where another loop reads its loader pass after pass without set_epoch, the matched
    # set_epoch sitting in a loop of its own beside it - a warm-up before the epoch loop: that
    # read, and the set_epoch it lacks)
    unset_loop: Optional[tuple[Location, Location]] = None
    # the set_epoch call that would set it, on a side of a switch no way in takes (`if self.ddp:`
    # where every construction leaves `ddp=False`): it never runs
    set_epoch_off: Optional[Location] = None
    # constant_epoch's argument where it is a name set once and never advanced (`epoch_iter`)
    pinned_epoch: str = ""
    # the rank test under which alone pinned_epoch is advanced (`if not rank: epoch += 1`): the
    # other ranks' epoch never moves
    pinned_by_rank: str = ""
    # constant_epoch's argument where it is a value the loop around the call never moves
    # (`set_epoch(args.epoch)` in `for epoch in range(args.epoch)`), and that loop
    invariant_epoch: Optional[tuple[str, Location]] = None
    # (constant_epoch, pinned_epoch, invariant_epoch) of further set_epoch calls with a constant,
    # in other loops over the sampler (a fine-tuning stage's loop, then the main one's)
    more_constant_epochs: list[tuple[Location, str, Optional[tuple[str, Location]]]] = field(default_factory=list)
    # a set_epoch on the name before the pass builds the sampler anew under it (_rebuilt_after):
    # it sets the previous pass's sampler
    set_epoch_stale: Optional[Location] = None
    # the dataset's items are picked or ordered by a draw from a process's global random stream
    # that nothing seeds (`torch.randperm(n)` in its constructor, `random_split(ds, [a, b])`
    # with no generator): each rank draws its own, so the ranks shard different datasets
    drawn_apart: str = ""
    # that draw's stream is seeded, but with the rank (`torch.manual_seed(args.seed + rank)`
    # before `ds.train_test_split(...)`): each rank still draws its own
    drawn_by_rank_seed: bool = False


def _off_by_default(conds: tuple) -> str:
    """The first test among conds (as the walker keeps them: each holding conjunct's text) that
    reads a setting with an off default - `cfg.get("HM", False)`, `opts.get("x", None)`, `0` - the
    run takes that way only where its config turns the setting on: "" where none does."""
    for cond, _ in conds:
        try:
            tree = ast.parse(cond, mode="eval")
        except SyntaxError:
            continue
        if any(n.__class__ is ast.Call and n.func.__class__ is ast.Attribute and n.func.attr == "get"
               and len(n.args) == 2 and is_const(n.args[1], False, None, 0, "") for n in walk(tree)):
            return cond
    return ""


# Draws that pick or order a dataset's items from a process's global random stream (a split, a
# permutation, a shuffle): unseeded, each process draws its own.
ITEM_DRAWS = frozenset({"torch.randperm", "numpy.random.permutation", "numpy.random.shuffle", "random.shuffle",
                        "numpy.random.choice", "random.choices",
                        "random.sample", "torch.utils.data.random_split",
                        "sklearn.model_selection.train_test_split", "sklearn.utils.shuffle"})


# `loaders['train']`, a loader kept in a table by key (_keyed_name's form)
_KEYED_NAME = re.compile(r"""(\w+)\[['"](\w+)['"]\]""")


def _one_pick(call: ast.Call, fn: Function, full: str) -> bool:
    """A draw of one element, taken at once: `random.choices(options, weights=w, k=1)[0]` (or
    with k left at 1), `np.random.choice(options)` with no size - a value, not a set of items."""
    if full == "random.choices":
        k = keyword(call, "k")
        if not (k is None or is_const(k, 1)):
            return False
        return any(n.__class__ is ast.Subscript and n.value is call and is_const(n.slice, 0) for n in fn.own_of(ast.Subscript))
    if full == "numpy.random.choice":
        size = keyword(call, "size")
        if size is None and len(call.args) > 1:
            size = call.args[1]
        if size.__class__ is ast.Tuple and len(size.elts) >= 2:
            # `np.random.choice(means, size=(n, chains, modes))`: an array of values drawn from a
            # list of numbers (a simulated item's parameters), no set of items picked
            return True
        return len(call.args) == 1 and keyword(call, "size") is None and not any(k.arg is None for k in call.keywords)
    return False


def _keeps_by_draw(call: ast.Call, fn: Function, full: str) -> bool:
    """A scalar draw that decides which items a loop keeps: `x = randint(0, 5000)` then `if x >
    keep * 5000: continue` (or the item appended under a test of it), in a loop over the items -
    an unseeded one keeps a different subset, of a different length, in each process."""
    if full not in SCALAR_DRAWS or fn.node is None or isinstance(fn.node, ast.Module):
        return False
    path = reaching._path_to(fn.node, call) or []
    loop = next((owner for _, _, owner, _ in reversed(path) if owner.__class__ in (ast.For, ast.While)), None)
    if loop is None:
        return False
    # the names the draw is bound to (`xx = randint(...)`), or the draw itself in a test
    bound = {t.id for stmt in walk(loop) if stmt.__class__ is ast.Assign and stmt.value is call
             for t in stmt.targets if t.__class__ is ast.Name}
    for test in (n for n in walk(loop) if n.__class__ is ast.If):
        reads = any(n is call or (n.__class__ is ast.Name and n.id in bound) for n in walk(test.test))
        if reads and any(n.__class__ in (ast.Continue, ast.Break) or (
                n.__class__ is ast.Call and n.func.__class__ is ast.Attribute and n.func.attr == "append")
                for stmt in test.body + test.orelse for n in walk(stmt)):
            return True
    return False


def _datasets_split(program, call: ast.Call, fn: Function, full: str) -> bool:
    """Hugging Face datasets' `ds.train_test_split(test_size=...)` with no seed= nor generator=
    and shuffle left on: it seeds its generator from numpy's global state, each process's own."""
    return isinstance(call.func, ast.Attribute) and call.func.attr == "train_test_split" and \
        not full.startswith("sklearn") and program.uses("datasets") and \
        all(keyword(call, k) is None or is_const(keyword(call, k), None) for k in ("seed", "generator")) and \
        not is_const(keyword(call, "shuffle") or ast.Constant(True), False)


def _frame_sample(program, call: ast.Call, fn: Function, full: str) -> bool:
    """pandas' `df.sample(1)` / `df.sample(frac=1)` / `df.sample(n=k)`: rows drawn from numpy's
    global stream unless it is handed a random_state. (A count or fraction it is handed tells it from a torch
    distribution's `.sample()` / `.sample((n,))` and a sampler object's; not a method of the
    project's own classes.)"""
    if not (call.func.__class__ is ast.Attribute and call.func.attr == "sample" and program.uses("pandas")):
        return False
    if full.startswith(("torch.", "numpy.", "random.")) or program.class_of(call.func.value, fn) is not None:
        return False
    counted = (call.args and call.args[0].__class__ is ast.Constant and type(call.args[0].value) is int) or \
        any(k.arg in ("n", "frac") for k in call.keywords)
    return bool(counted)  # (a random_state= of its own: _unseeded_draw reads it, as scikit-learn's)


# The steps of a datapipe chain (`ds = ds.map(f)`) followed back to its source: a real one has
# a dozen (wenet); the bound keeps a generated script of thousands within the recursion limit.
CHAIN_STEPS = 64


# calls that read a file's content back (their first argument the file or its path), and those
# that turn what they are given into a dataset's tensors: _read_from_rank_file follows these only
FILE_LOADS = frozenset({"load", "loads", "load_from_disk", "read_pickle", "read_csv", "read_json", "fromfile"})
# the calls that put an item into a buffer object (a replay buffer, a list of experiences)
_FILLS = frozenset({"append", "extend", "add", "push", "insert", "store"})
TENSOR_BUILDERS = frozenset({"TensorDataset", "tensor", "as_tensor", "from_numpy", "LongTensor", "FloatTensor",
                             "Tensor", "array", "asarray", "stack", "cat", "list", "dict"})


class LoaderFacts:
    """Mixin of lint/facts.FactBuilder over lint/fact_builder.BuilderCore's walks: DDP802, DDP803, DDP804."""

    def dataset_kind(self, node: ast.AST, fn: Function, depth: int = 4, seen: frozenset = frozenset()) -> bool:
        """An IterableDataset or a dataset class that shards itself by rank, also as what a
        local builder returns (`init_dataset(...)` -> `Dataset(...)` -> a datapipe chain). A
        name is what reaches this use (SimXNS binds `train_ds` to a self-sharding dataset on one
        side of a flag and to a plain one on the other)."""
        values = self._bound_here(node, fn, 3) if isinstance(node, ast.Name) else []
        if not values or not all(isinstance(v, ast.Call) for v, _ in values):
            values = self.program.values_of(node, fn)  # `x.map(f) if ... else x`: every binding
        if isinstance(node, ast.Name):
            # `train_set, test_set = define_datasets(opt)`: the item the builder returns there
            values = [*values, *self.program.unpacked(node.id, fn)]
        for value, scope in values:
            if not isinstance(value, ast.Call):
                continue
            name = last_name(value.func) or ""
            if any(kw.arg in SHARD_KEYWORDS for kw in value.keywords) and not self._shards_unread(value, scope):
                return True  # ImageDataset(..., shard=rank, num_shards=world): shards itself
            if any(kind in name for kind in ITERABLE_KINDS) or \
                    (self.program.qualify(value.func, scope) or "").startswith(SELF_SHARDING_LIBRARIES):
                return True
            head = call_chain(value)[-1]  # `wds.WebDataset(urls).shuffle(1000).decode("pil")`: the chain's start
            if head is not value and (self.program.qualify(head.func, scope) or "").startswith(SELF_SHARDING_LIBRARIES):
                return True
            if isinstance(head.func, ast.Attribute) and isinstance(head.func.value, ast.Name) \
                    and id(value) not in seen and len(seen) < CHAIN_STEPS \
                    and self.dataset_kind(head.func.value, scope, depth, seen | {id(value)}):
                # `dataset = dataset.map(parse)`: a datapipe chain keeps its kind (no depth spent:
                # each step is another binding, and none is walked twice)
                return True
            target = self.program._callee_symbol(value.func, scope)
            if isinstance(target, Klass) and self._self_sharding(target, set()):
                return True
            if name == "instantiate" and not isinstance(target, (Klass, Function)):
                # `instantiate(cfg.dataset)`: the classes the configs name for that entry (a
                # Hydra `_target_`, a LazyConfig `L(ImageTextWebDataset)(...)`), all streams
                made = _instantiated(self.program, value, scope)
                if made and all(self._self_sharding(k, set()) for k in made):
                    return True
            if target is None and isinstance(value.func, ast.Name):
                # `dataset_cls = TASKS[task]["dataset"]` (or `= ShardedTables`), then
                # `dataset_cls(...)`: the classes the name may hold
                made = []
                for held, where in self.program.values_of(value.func, scope, 2):
                    if held is value.func:
                        continue
                    if isinstance(held, ast.Subscript):
                        table, path, hops = held, [], 0
                        while hops < 4:  # `task = task_dict[name]`, then `task["dataset"]`
                            while isinstance(table, ast.Subscript):
                                path.insert(0, table.slice)
                                table = table.value
                            bound = self.program.values_of(table, where, 1) if isinstance(table, ast.Name) else []
                            if len(bound) == 1 and isinstance(bound[0][0], ast.Subscript) and bound[0][0] is not table:
                                table, where = bound[0]
                                hops += 1
                                continue
                            break
                        made += self.program._table_entries(table, where, path=path)
                    elif isinstance(held, (ast.Name, ast.Attribute)):
                        made.append(self.program._callee_symbol(held, where))
                if made and all(isinstance(k, Klass) and self._self_sharding(k, set()) for k in made):
                    return True
            if depth > 0 and self.program.is_function(target) and not isinstance(target.node, ast.Module) and \
                    any(self.dataset_kind(ret, target, depth - 1, seen) for ret in target.returned):
                return True
        return False

    def _collates_a_rank_share(self, call: ast.Call, fn: Function) -> bool:
        """`collate_fn=self.get_batch` of an object whose constructor keeps one rank's share of
        the data (Transformer-XL's LMOrderedIterator: `data = data[rank]`, and the loader's
        items are offsets into it): each rank's batches come from its own share."""
        collate = next((kw.value for kw in call.keywords if kw.arg == "collate_fn"), None)
        if collate.__class__ is not ast.Attribute:
            return False
        owner = collate.value
        klass = self.program._class_of_fn(fn) if owner.__class__ is ast.Name and owner.id == "self" \
            else self.program.class_of(owner, fn)
        init = self.program.method(klass, "__init__") if self.program.is_class(klass) else None
        return init is not None and init.node is not None and any(
            sub.ctx.__class__ is ast.Load and sub.slice.__class__ in (ast.Name, ast.Attribute, ast.Call)
            and self.mentions_rank(sub.slice, init) for sub in init.own_of(ast.Subscript))

    def _shards_unread(self, value: ast.Call, fn: Function) -> bool:
        """A local class's constructor takes `shard=` / `num_shards=` and never reads them (a
        sketch dataset keeping every item): the keywords shard nothing."""
        targets, _ = self.program.resolve(value.func, fn)
        if len(targets) != 1 or targets[0].name != "__init__" or targets[0].cls is None:
            return False  # a library's class: its keywords do what they say
        unread = unread_by_constructor(targets[0], value)
        return all(id(kw.value) in unread for kw in value.keywords if kw.arg in SHARD_KEYWORDS)

    def _self_sharding(self, klass: Klass, seen: set) -> bool:
        if klass in seen:
            return False
        seen.add(klass)
        source = source_lines(klass.file.lines, klass.node)
        if SELF_SHARDING.search(source):
            return True
        if any("Iterable" in b for b in klass.bases) and "get_worker_info" in source and \
                not any(self._self_sharding(b, seen) for b in self.program.bases(klass)):
            # `__iter__` splits its stream by `get_worker_info().id` alone: the author split the
            # work among one process's loader workers, and every rank reads the same splits
            return False
        if any("Iterable" in b for b in klass.bases) and HF_STREAM.search(source) and \
                not any(self._self_sharding(b, seen) for b in self.program.bases(klass)):
            # `for sample in load_dataset(..., streaming=True)` in `__iter__`: the library splits
            # the stream among the loader's workers, as get_worker_info does, never by rank
            return False
        if "get_worker_info" in source:
            return True  # (a map-style class reading its worker: not a stream, as before)
        # a datapipe is sharded by its loader; a local IterableDataset only where it reads the
        # rank, the world size or its worker (above): one that never does streams the same
        # items to every rank
        if any("Iterable" in b for b in klass.bases) and not (LISTS_ITS_OWN.search(source) and not DRAWS.search(source)
                                                              and not WRAPS.search(source)):
            # a local stream shards itself, or wraps one that may (a processor over `iter(self.source)`,
            # a library pipeline), or draws its samples; only one that lists its own files
            # (glob, listdir, range) and never reads the rank streams the same items to every rank
            return True
        if any("IterDataPipe" in b for b in klass.bases):
            return True
        return any(self._self_sharding(b, seen) for b in self.program.bases(klass))

    # ------------------------------------------------------------------ loaders and samplers
    def loaders(self, framework: Optional[str]) -> list[LoaderFact]:
        program = self.program
        prepared, switched = set(), {}
        # `self.loader` handed to prepare() in one class's method is that class's field: another
        # class's own `self.loader` (an FSDP trainer beside an Accelerate one) is not prepared
        prepared_fields: dict[str, set] = {}
        prepared_names: set[str] = set()
        unseen = False  # a prepare() whose arguments the source does not name here
        sites: dict[str, str] = {}  # a prepared name -> the first prepare() handed it
        for fn, call, _, _ in self.calls():
            if last_name(call.func) in ("prepare", "prepare_data_loader") and isinstance(call.func, ast.Attribute):
                conds = fn.__dict__.get("_call_conds", {}).get(id(call), ())
                dropped = _dropped_results(fn, call)
                handed = [(arg, scope) for index, arg in enumerate(call.args) if index not in dropped
                          for arg, scope in self._handed_to_prepare(arg, fn)]
                unseen = unseen or bool(call.keywords) or any(_unseen_prepared(arg, scope) for arg, scope in handed)
                for arg, scope in handed:
                    # (`model, opt, _ = accelerator.prepare(model, opt, loader)`: the original is read;
                    # `prepare(config["loader"]["train"])`: the loader kept at that key)
                    held = last_name(arg) or _key_of(arg)
                    prepared.add(held)
                    sites.setdefault(held, str(loc(fn, call)))
                    if _self_field(arg) and scope.cls is not None:
                        prepared_fields.setdefault(arg.attr, set()).add(scope.cls)
                    else:
                        prepared_names.add(held)
                    if conds:  # `if args.use_accelerate: loader = acc.prepare(loader)`
                        switched.setdefault(held, conds[-1][0])
        found = []
        # the loaders on a side of their builder's switch no call takes: built on no way in
        # (worker_seeds reads the files on its own, and is told these: facts.build)
        self.off_loaders: set[str] = set()
        for fn, call, guards, _ in self.calls():
            if not loader_call(program, call, fn):
                continue
            # (and a side its callers' options rule out, as for the sampler beside it: a loader
            # judged built where its sampler is not would be told it has none)
            if self.switched_off(fn, call) or self.off_at_launch_only(fn) or self._never_built(call, fn):
                self.off_loaders.add(str(loc(fn, call)))
                continue
            if self._typed_away(call, fn):
                continue  # (a loader past an early return every caller takes is never built)
            dataset = loader_dataset(self.program, call, fn)
            sampler = keyword(call, "sampler") or keyword(call, "batch_sampler")
            if sampler is None and len(call.args) > 3:
                sampler = call.args[3]
            if sampler is None and len(call.args) > 4:
                sampler = call.args[4]
            if sampler is None and any(kw.arg is None for kw in call.keywords):
                sampler = _spread_sampler(program, call, fn)
            kind = self._sampler_kind(sampler, fn)
            name = self.bound_name(fn, call) or _keyed_name(fn, call)
            dataset_text = text(dataset) if dataset is not None else "?"
            builder = "" if isinstance(fn.node, ast.Module) else fn.name
            # (a builder named for both, `create_train_and_valid_dataloader`, says nothing of
            # which of its loaders this is)
            # a builder handed True for its training switch (`build_dataloader(ds, collate, True)`
            # from the training's way) builds a training loader there, whatever names its
            # evaluation callers read the same local by
            for_training = self._built_for_training(fn, call)
            named = bool(EVAL_NAME.search(name) or EVAL_NAME.search(dataset_text)) or not for_training and (
                bool(name) and self._bound_as_evaluation(fn, name, call))
            evaluation = not for_training and bool(
                (EVAL_NAME.search(builder) and not BOTH_SPLITS.search(builder)) or self._eval_only(fn)
                or _off_the_training_side(fn, call)
                or self._default_side_to_evaluate(fn, call)
                or (bool(name) and self._read_only_to_evaluate(self._names_outside(fn, name)))
                or (bool(name) and self._peeked_on_one_rank(name))
                or (bool(name) and self._read_on_one_rank(fn, name, call))
                or (bool(name) and self._one_batch_handed_on(fn, name))
                or (bool(name) and bool(self._names_outside(fn, name) & self._picked_to_evaluate())))
            plain = [v for v, _ in self._sampler_values(sampler, fn)
                     if isinstance(v, ast.Call) and self._plain_sampler(v, fn)] if sampler is not None else []
            classes = {last_name(v.func) for v in plain}
            handed = bool(name) and name in prepared and self._prepared_here(fn, call, name, prepared_fields,
                                                                             prepared_names)
            # (a builder's loader is prepared under the name its callers bind it to)
            handed = handed or (framework == "accelerate" and bool(name) and
                                bool((self._names_outside(fn, name) - {name}) & prepared))
            # (a field a `@property` hands out, prepared under the name its reader binds)
            handed = handed or (framework == "accelerate" and bool(name) and
                                bool(self._property_read_names(fn, call, name) & prepared))
            rebuilt = self._rebuilt_unprepared(fn, name) if framework == "accelerate" and handed and name else ""
            split = self._rank_split_at(dataset, fn) if handed and dataset is not None else None
            switched_on = _off_by_default(fn.__dict__.get("_call_conds", {}).get(id(call), ())) or (
                "" if isinstance(fn.node, ast.Module) else self._reached_switched(fn))
            hooked = self._trainer_hook_loader(fn, call, name)
            found.append(LoaderFact(
                seeded_alike=self._seeded_alike(),
                sequential=sampler is not None and _sequential(self.program, sampler, fn),
                sampler_class=" or ".join(sorted(filter(None, classes))),
                with_replacement=bool(plain) and all(_with_replacement(v) for v in plain),
                # (a builder's `if phase == "train": ... else: DataLoader(...)`: the name its
                # caller binds is read by the training loop, but that side never builds it there)
                trains=(trains := (self._trains(fn, name, call=call) or bool(hooked)
                                   or self._instances_train(fn, call))
                        and not _off_the_training_side(fn, call)),
                trainer_hook=hooked if framework == "transformers" and trains else "",
                plain_trains=trains and self._trains(fn, name, call=call, among=self._plain_names_seen())
                and bool(self._ddp_names) and not self._trains(fn, name, call=call, among=self._ddp_names),
                no_grad_read=not trains and bool(name) and bool(re.search(r"train", name, re.IGNORECASE))
                and self._trains(fn, name, call=call, among=self._no_grad_names()),
                # (and a builder's own `loader` its callers bind as `train_loader = build_dataloader(
                # train_set, ...)`: semseg_benchmark's one builder for both loaders)
                train_named=for_training or bool(TRAIN_NAME.search(f"{name} {dataset_text} {builder}")) or (
                    bool(name) and not isinstance(fn.node, ast.Module)
                    and any(TRAIN_NAME.search(n) for n in self._names_outside(fn, name) - {name})),
                unseen_options=any(kw.arg is None for kw in call.keywords) and sampler is None
                and not _spread_without_sampler(self.program, call, fn),
                handed_to_framework=bool({name, last_name(dataset) if dataset is not None else ""}
                                         & self._handed_to_framework()),
                location=loc(fn, call), name=name, sampler=kind,
                sampler_text=text(sampler) if sampler is not None else "",
                dataset_text=dataset_text,
                sharded_by_rank=(dataset is not None and (self.mentions_rank(dataset, fn)
                                                          or self._read_from_rank_file(dataset, fn)
                                                          or self._rank_part_built(dataset, fn)
                                                          or self._subset_of_sampler(dataset, fn)
                                                          or self._made_each_pass(dataset, fn, call)))
                or self._trains(fn, name, split=True) or self._collates_a_rank_share(call, fn),
                # (webdataset's WebLoader exists for its own pipelines, which split themselves
                # by node and worker: its dataset is one wherever the source does not show it)
                iterable=(dataset is not None and self.dataset_kind(dataset, fn))
                or (self.program.qualify(call.func, fn) or "").startswith("webdataset.")
                or (dataset is not None and _under_iterable_test(fn, call, dataset)),
                under_rank_guard=bool(rank_guards(guards)) or (self.only_guarded(fn) is True
                                                               and not self._called_on_both_sides(fn)),
                off_at_launch=off_at_launch(fn.__dict__.get("_call_conds", {}).get(id(call), ()), self.program),
                single_process=_single_process(self._switch_ever_on(fn, fn.__dict__.get("_call_conds", {}).get(id(call), ())),
                                               self._switches(), self.wraps_ddp()) or (
                    self.in_the_launcher(fn, call) and not self._loader_to_ranks(fn, name))
                or self._replaced_when_distributed(fn, call) or self._counts_apart(fn, call)
                or self._where_no_group(fn, call) or bool(self.in_another_command(fn)) or self.one_process_pick(fn)
                or self._instances_single_process(fn) or self.apart_from_siblings(fn)
                or self.apart_from_setups(fn, fn.__dict__.get("_call_conds", {}).get(id(call), ()))
                or self._called_one_process_only(fn),
                iterated=bool(name) and self._iterated_alone(name),
                unread=bool(name) and self._unread(fn, name, call),
                other_branch_distributed=self._other_branch_distributed(fn, call),
                index_ignored=dataset is not None and self._index_ignored(dataset, fn, call),
                worker_split=self._worker_split(dataset, fn) if dataset is not None else (),
                no_workers=not any(k.arg is None for k in call.keywords) and (
                    keyword(call, "num_workers") is None or is_const(keyword(call, "num_workers"), 0)),
                # a name says evaluation (`dataset_dev`, VoxCeleb's dev split), but a loop that runs
                # backward iterating it says training: the use, not the name
                evaluation=evaluation or (named and not trains) or self._training_side_apart(fn, call)
                or (not trains and _table_read(fn, call, name) is False),
                prepared_by="accelerate" if framework == "accelerate" and handed else None,
                prepared_under=switched.get(name, "") if name else "",
                apart_from_accelerate=framework == "accelerate" and not handed and not self._near_accelerator(fn),
                keeps_rank_share=handed and dataset is not None and (self._keeps_rank_share(dataset, fn)
                                                                     or split is not None),
                split_at=str(split or ""), switched_on=switched_on,
                sampler_dropped_by=self._sampler_dropped_by(sampler, fn) if kind == "none" and sampler is not None else "",
                prepared_at=next((sites[n] for n in sorted({name} | self._names_outside(fn, name)) if n in sites), "")
                if handed else "",
                unprepared=bool(rebuilt) or (framework == "accelerate" and not handed and not unseen and bool(prepared)
                and dataset is not None and self._stored_dataset(dataset, fn)
                and not any(n is call for c in self._prepare_calls() for n in walk(c))),
                rebuilt_unprepared=rebuilt,
                framework_drawn=self._framework_drawn(fn, dataset, framework, kind, handed,
                                                      trains or self._lightning_train_hook(fn))))
        return found

    def _framework_drawn(self, fn: Function, dataset: Optional[ast.AST], framework: Optional[str], kind: str,
                         prepared: bool, trains: bool) -> str:
        """The unseeded draw that picks a framework-sharded training loader's items apart on each
        process (LoaderFact.framework_drawn), "" where none: a loader without a DistributedSampler
        that Lightning trains on in processes it starts by running the script again (not
        `strategy="ddp_spawn"`, whose processes get the data pickled, nor one device), or one
        Accelerate prepares."""
        if dataset is None or kind == "distributed" or not trains:
            return ""
        if framework == "lightning" and not self._lightning_reruns_script():
            return ""
        if framework not in ("lightning", "accelerate") or (framework == "accelerate" and not prepared):
            return ""
        return self._drawn_apart(dataset, fn)

    def _lightning_train_hook(self, fn: Function) -> bool:
        """fn is a `train_dataloader` method of a LightningModule or LightningDataModule: the
        Trainer trains on what it returns."""
        if fn.name != "train_dataloader":
            return False
        klass = self.program._class_of_fn(fn)
        return klass is not None and any(b.startswith(("lightning.", "pytorch_lightning."))
                                         for b in self.program.library_bases(klass))

    def _lightning_reruns_script(self) -> bool:
        """Every Lightning `Trainer(...)` the source builds may run several processes that each run
        the script (the default strategy on several devices, `strategy="ddp"`): not one with a
        spawning or forking strategy (`"ddp_spawn"`, `"ddp_notebook"`: the processes are handed
        the data made once), nor on one device (`devices=1`, `accelerator="cpu"` without devices).
        Asked once per program."""
        kept = self.__dict__.get("_lightning_reruns")
        if kept is None:
            kept = self.__dict__["_lightning_reruns"] = self._lightning_trainers_rerun()
        return kept

    def _lightning_trainers_rerun(self) -> bool:
        found = False
        for fn, call, _, _ in self.calls():
            if last_name(call.func) != "Trainer" or not (self.program.qualify(call.func, fn) or "").startswith(
                    ("lightning", "pytorch_lightning")):
                continue
            strategy, devices = keyword(call, "strategy"), keyword(call, "devices")
            if strategy is not None and strategy.__class__ is ast.Constant and isinstance(strategy.value, str) \
                    and re.search(r"spawn|fork|notebook", strategy.value):
                return False
            if devices is not None and is_const(devices, 1) and keyword(call, "num_nodes") is None:
                return False
            accelerator = keyword(call, "accelerator")
            if devices is None and accelerator is not None and is_const(accelerator, "cpu"):
                return False
            found = True
        return found

    def _keyed_unread(self, fn: Function, call: ast.Call) -> bool:
        """The call is the value at a constant key of a dict literal bound to a local name that
        nothing reads at that key (`samplers = {"train": DistributedSampler(a), "val":
        DistributedSampler(b)}` with `sampler=samplers["val"]` commented out, the dict handed
        whole to a local function that reads only `samplers["train"]`): it feeds nothing."""
        for node in fn.own_of(ast.Assign):
            if node.value.__class__ is not ast.Dict or len(node.targets) != 1 or \
                    node.targets[0].__class__ is not ast.Name:
                continue
            key = next((k for k, v in zip(node.value.keys, node.value.values) if v is call), None)
            if key is None or key.__class__ is not ast.Constant:
                continue
            return self._read_only_at_other_keys(fn, node.targets[0].id, key.value, 2)
        return False

    def _read_only_at_other_keys(self, fn: Function, name: str, key, depth: int) -> bool:
        """Every read of name in fn is `name[K]` with a constant K other than key, or the whole
        handed to a local function (depth levels down) that reads its parameter so."""
        if any(n.__class__ in (ast.Global, ast.Nonlocal) and name in n.names for n in walk(fn.node)):
            return False
        nodes = list(walk(fn.node))
        parents = {id(child): parent for parent in nodes for child in children(parent)}
        # (a script's global: its functions that take or bind a name of their own so read that
        # one, handed in where they are called; the others read the global)
        shadowed = [(f.node.lineno, f.node.end_lineno) for f in self.program.functions
                    if isinstance(fn.node, ast.Module) and f.module is fn.module and f.node is not None
                    and not isinstance(f.node, ast.Module) and (name in f.params or f.bindings.get(name))]
        for n in nodes:
            if n.__class__ is not ast.Name or n.id != name or n.ctx.__class__ is not ast.Load:
                continue
            if any(a <= n.lineno <= b for a, b in shadowed):
                continue
            up = parents.get(id(n))
            if up.__class__ is ast.Subscript and up.value is n:
                if up.slice.__class__ is ast.Constant and up.slice.value != key:
                    continue
                return False
            if up.__class__ is ast.Call and n in up.args and depth > 0:
                index = up.args.index(n)
                targets = self.program.resolve(up.func, fn)[0]
                if targets and all(
                        t.node is not None and not isinstance(t.node, ast.Module)
                        and (param := _param_at(t, up, index)) is not None and not t.bindings.get(param)
                        and self._read_only_at_other_keys(t, param, key, depth - 1) for t in targets):
                    continue
            return False
        return True

    def _handed_to_prepare(self, arg: ast.AST, fn: Function) -> list[tuple[ast.AST, Function]]:
        """What a prepare() argument is where a helper hands its own parameters on: `def
        accelerator_prepare(*args): accelerator.prepare(*args)` prepares what each caller passes
        (OpenKE's `accelerator_prepare(dataloader, model)`). The argument itself otherwise, or
        where a caller's is not plain to see (a spread of its own)."""
        node = fn.node
        star = arg.value if arg.__class__ is ast.Starred else None
        callers = [e.node for _, e in self.callers().get(fn, []) if e.node.__class__ is ast.Call]
        if isinstance(node, ast.Module) or not callers:
            return [(arg, fn)]
        found = []
        if star is not None and star.__class__ is ast.Name and node.args.vararg is not None and \
                star.id == node.args.vararg.arg and not fn.bindings.get(star.id):
            first = len(node.args.posonlyargs) + len(node.args.args) - (1 if fn.cls is not None else 0)
            for caller, event in self.callers().get(fn, []):
                site = event.node
                if site.__class__ is not ast.Call or any(a.__class__ is ast.Starred for a in site.args):
                    return [(arg, fn)]
                found += [(a, caller) for a in site.args[first:]]
            return found
        if arg.__class__ is ast.Name and arg.id in fn.params and not fn.bindings.get(arg.id):
            for caller, event in self.callers().get(fn, []):
                given = argument_at(fn, event.node, arg.id) if event.node.__class__ is ast.Call else None
                if given is None or given.__class__ is ast.Starred:
                    return [(arg, fn)]
                found.append((given, caller))
            return found
        return [(arg, fn)]

    def _stored_dataset(self, dataset: ast.AST, fn: Function) -> bool:
        """Every dataset the loader may get is read from storage: a local Dataset class, a
        library's `...Dataset(...)` or `load_dataset(...)`; not a TensorDataset of tensors the
        run made (AlpacaFarm's rollouts, each rank's own and not prepared on purpose)."""
        values = self.program.values_of(dataset, fn)
        if not values:
            return False
        for value, scope in values:
            if not isinstance(value, ast.Call):
                return False
            name = last_name(value.func) or ""
            if name == "TensorDataset":
                return False
            if not (isinstance(self.program._callee_symbol(value.func, scope), Klass) or name.endswith("Dataset")
                    or name == "load_dataset" or self._reader_call(value, scope)):
                return False
        return True

    def _reader_call(self, value: ast.Call, scope: Function) -> bool:
        """A local method that hands back what its object read (`self.train_sampler.get_train()`
        of OpenKE's KGReader: a list of triples from the data files), not tensors the run made:
        every function it reaches is local and returns a field or a name, no torch call."""
        # (the receiver's class handed in by the caller, `train_sampler=BernSampler`: the local
        # methods of that name, which resolve gives apart)
        targets, weak = self.program.resolve(value.func, scope)
        targets = targets or weak
        return bool(targets) and all(
            t.cls is not None and t.node is not None and not isinstance(t.node, ast.Module) and t.returned
            and all(r.__class__ in (ast.Attribute, ast.Name) for r in t.returned)
            and not any(c.__class__ is ast.Call and (self.program.qualify(c.func, t) or "").startswith("torch.")
                        for c in t.own_calls) for t in targets)

    def _keeps_rank_share(self, dataset: ast.AST, fn: Function) -> bool:
        """Every dataset the loader may get is a local map-style class whose code keeps one
        rank's share of the items (KEEPS_RANK_SHARE), not a stream."""
        classes = []
        values = self.program.values_of(dataset, fn)
        if values and all(isinstance(value, ast.Call) and any(
                isinstance(c, ast.Call) and any(self._sampler_class(kw.value, scope) for kw in c.keywords)
                for c in walk(value)) for value, scope in values):
            # `LimitDataset(Kinetics(path, video_sampler=DistributedSampler))`: pytorchvideo's video
            # datasets build the sampler class they are handed over their videos, this rank's share
            return True
        for value, scope in values:
            target = self.program._callee_symbol(value.func, scope) if isinstance(value, ast.Call) else None
            if not isinstance(target, Klass) or any("Iterable" in b or "IterDataPipe" in b for b in target.bases):
                return False
            classes.append(target)
        return bool(classes) and all(
            KEEPS_RANK_SHARE.search(source_lines(k.file.lines, k.node)) for k in classes)

    def _reached_switched(self, fn: Function) -> str:
        """The off-by-default switch (_off_by_default) every call into fn sits under ("" where some
        call passes none): `if cfg.get("HM", False) and epoch % k == 0: loader = rebuild(...)`."""
        sites = [event for _, event in self.callers().get(fn, []) if event.kind == "call"]
        found = [_off_by_default(getattr(event, "conds", ())) for event in sites]
        return found[0] if found and all(found) else ""

    def _rank_split_at(self, dataset: ast.AST, fn: Function, depth: int = 1) -> Optional[Location]:
        """Where a value the loader's dataset may be picks this rank's items from a whole, or None:
        `Subset(ds, indices)` over indices built from the rank (`range(rank * per, rank * per +
        per)`), `items[rank::world]`, `parts[rank]`. Not a dataset that only hands the rank on or
        seeds by it (`ds.shuffle(seed=seed + rank)` still holds every item). The bindings that
        reach the loader (flow: `if n > 1: ds = Subset(ds, mine)` then `DataLoader(ds)` reads
        that side, not a stream built on the other side of an `if`/`else` for another loader).
        Hugging Face's `split_dataset_by_node(ds, rank, world)` too, also inside a local class
        that wraps the stream it is handed (`DataLoader(Endless(ds))`)."""
        flow = reaching.reaching_values(fn.node, dataset.id, dataset) \
            if dataset.__class__ is ast.Name and fn.node is not None else None
        values = [(dataset, fn)] + ([(v, fn) for v in flow] if flow is not None
                                    else self.program.values_of(dataset, fn, 2))
        for value, scope in values:
            if value.__class__ is ast.Call and last_name(value.func) == "Subset" and len(value.args) >= 2 and \
                    self.mentions_rank(value.args[1], scope, strict=True):
                return loc(scope, value)
            if value.__class__ is ast.Subscript and self.mentions_rank(value.slice, scope, strict=True):
                return loc(scope, value)
            if value.__class__ is ast.Call and (self.program.qualify(value.func, scope) or "").endswith(
                    "datasets.distributed.split_dataset_by_node"):
                return loc(scope, value)
            if value.__class__ is ast.Call and depth > 0 and len(value.args) == 1 and \
                    value.args[0].__class__ is ast.Name and \
                    isinstance(self.program._callee_symbol(value.func, scope), Klass):
                inner = self._rank_split_at(value.args[0], scope, depth - 1)
                if inner is not None:
                    return inner
        return None

    def _prepare_calls(self) -> list:
        """Every `x.prepare(...)` / `x.prepare_data_loader(...)` call of the program."""
        if not hasattr(self, "_prepares"):
            self._prepares = [call for _, call, _, _ in self.calls() if isinstance(call.func, ast.Attribute)
                              and call.func.attr in ("prepare", "prepare_data_loader")]
        return self._prepares

    def _near_accelerator(self, fn: Function) -> bool:
        """fn (or the class it is a method of) names an Accelerator anywhere in its text."""
        node = fn.cls.node if fn.cls is not None and fn.cls.node is not None else fn.node
        if node is None or isinstance(node, ast.Module):
            return True  # the script's top level: not told apart
        # (its lines as written, not an unparse of the tree: asked once per loader)
        lines = fn.file.lines[node.lineno - 1:getattr(node, "end_lineno", node.lineno)]
        return any("accelerat" in line.lower() for line in lines)

    def _prepared_here(self, fn: Function, call: ast.Call, name: str, fields: dict, names: set) -> bool:
        """The loader bound to `name` is what a prepare() call was handed: a plain name anywhere,
        or for a loader stored as `self.<name>`, a prepare() of `self.<name>` in a method of the
        same class (or one of its bases or subclasses)."""
        if name in names:
            return True
        target = next((t for n in fn.own_of(ast.Assign) if n.value is call for t in n.targets), None)
        if not (_self_field(target) and fn.cls is not None):
            return True  # not a field: as the name says
        owners = fields.get(name, set())
        family = {fn.cls, *self.program._descendants(fn.cls), *self.program.bases(fn.cls)}
        return bool(owners & family)

    def _built_for_training(self, fn: Function, call: ast.Call) -> bool:
        """A builder called both to train and to evaluate, whose training way is told by its
        caller: a call handing True to its training switch (`build_dataloader(ds, collate,
        is_train=True)`), the loader not on the switch's off side (`if is_train: ... else:
        DataLoader(...)` is the evaluation's)."""
        if isinstance(fn.node, ast.Module):
            return False
        switch = next((p for p in fn.params if TRAIN_SWITCH.match(p)), None)
        off = {f"not {switch}", f"{switch} is False", f"{switch} == False"}
        if switch is None or any(cond in off for cond, _ in fn.__dict__.get("_call_conds", {}).get(id(call), ())):
            return False
        return any(isinstance(event.node, ast.Call) and is_const(argument_at(fn, event.node, switch), True)
                   for _, event in self.callers().get(fn, []))

    def _rebuilt_unprepared(self, fn: Function, name: str) -> str:
        """Where a builder that returns its loader (`return dataloader`) is called again inside a
        loop that iterates the name the call binds, and no prepare() in that loop takes the name:
        a chunk swap (`dataloader = next_chunk_loader(...)` in `for batch in dataloader:`, the first
        chunk's loader prepared before the loop, each later one not). "" where there is none."""
        if isinstance(fn.node, ast.Module) or not any(
                r.__class__ is ast.Return and r.value.__class__ is ast.Name and r.value.id == name for r in fn.own):
            return ""
        for caller, event in self.callers().get(fn, []):
            site = event.node
            bound = self.bound_name(caller, site) if site.__class__ is ast.Call else ""
            if not bound or caller.node is None:
                continue
            for _, _, owner, field in reaching._path_to(caller.node, site) or ():
                if field != "body" or owner.__class__ not in (ast.For, ast.While, ast.AsyncFor):
                    continue
                inside = walk(owner)
                iterated = any(n.__class__ in (ast.For, ast.AsyncFor) and any(
                    v.__class__ is ast.Name and v.id == bound for v in walk(n.iter)) for n in inside)
                prepared = any(n.__class__ is ast.Call and n.func.__class__ is ast.Attribute
                               and n.func.attr in ("prepare", "prepare_data_loader") and any(
                                   a.__class__ is ast.Name and a.id == bound for a in n.args) for n in inside)
                if iterated and not prepared:
                    return str(loc(caller, site))
        return ""

    def _kept_in_grad_off(self, fn: Function, sampler: str) -> bool:
        """fn runs with gradients off and keeps the sampler and the loaders made of it in locals
        of its own: not returned, stored in a field, or handed to a call other than the loader's
        and a wrapper of its loop (`enumerate(dataloader)`, `len(dataloader)`)."""
        if "." in sampler or fn.node.__class__ is ast.Module or not _grad_off_function(self.program, fn):
            return False
        made = [stmt for stmt in fn.own_of(ast.Assign) if stmt.value.__class__ is ast.Call and any(
            a.__class__ is ast.Name and a.id == sampler for a in [*stmt.value.args, *(k.value for k in stmt.value.keywords)])]
        loaders = {t.id for stmt in made for t in stmt.targets if t.__class__ is ast.Name}
        if not loaders or any(t.__class__ is not ast.Name for stmt in made for t in stmt.targets):
            return False
        names = loaders | {sampler}
        takers = {id(stmt.value) for stmt in made}
        for node in walk(fn.node):
            if node.__class__ is ast.Return and node.value is not None and any(
                    n.__class__ is ast.Name and n.id in names for n in walk(node.value)):
                return False
            if node.__class__ is ast.Assign and node.value.__class__ is ast.Name and node.value.id in names:
                return False  # (`self.loader = dataloader`: kept for later)
            if node.__class__ is ast.Call and id(node) not in takers \
                    and last_name(node.func) not in ("enumerate", "len", "iter", "tqdm", "zip") \
                    and any(a.__class__ is ast.Name and a.id in names for a in [*node.args, *(k.value for k in node.keywords)]):
                return False
        return True

    def _handed_names(self, fn: Function, value: ast.AST, depth: int = 2) -> set[str]:
        """The names a value handed positionally to a local callable is known by there: the
        callee's parameter at that place, the field its constructor keeps it in (`self.dataset
        = dataset`), and, depth calls on, the same where the callee hands the parameter on
        (`Learner(model, dataset)`)."""
        out: set[str] = set()
        for outer in fn.own_calls:
            index = next((i for i, a in enumerate(outer.args) if a is value), None)
            if index is None or any(a.__class__ is ast.Starred for a in outer.args[:index]):
                continue
            for target in self.program.resolve(outer.func, fn)[0]:
                node = target.node
                if node.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef):
                    continue
                param = _param_at(target, outer, index)
                if param is None:
                    continue
                out.add(param)
                out |= {t.attr for stmt in target.own_of(ast.Assign) if stmt.value.__class__ is ast.Name
                        and stmt.value.id == param for t in stmt.targets
                        if t.__class__ is ast.Attribute and t.value.__class__ is ast.Name and t.value.id == "self"}
                if depth > 1:
                    for inner in target.own_calls:
                        for arg in inner.args:
                            if arg.__class__ is ast.Name and arg.id == param:
                                out |= self._handed_names(target, arg, depth - 1)
        return out

    def _names_outside(self, fn: Function, name: str) -> set[str]:
        """The names a loader bound to `name` in fn is known by where it is read: a builder's own
        local that it returns (`loader = DataLoader(...)`; `return loader`) is whatever its callers
        bind the call to, not every `loader` of the program (VL-T5's `predict(self, loader)`); an
        item of a returned tuple (`return train_loader, val_loader`) is what the callers unpack there."""
        position = None if "." in name else _returned_at(fn, name)
        if position is not None:
            unpacked = {_unpacked_at(c, e.node, position) for c, e in self.callers().get(fn, [])
                        if isinstance(e.node, ast.Call)} - {""}
            return unpacked or {name}
        if isinstance(fn.node, ast.Module) or "." in name or not (name == fn.name or any(
                isinstance(r, ast.Return) and isinstance(r.value, ast.Name) and r.value.id == name for r in fn.own)):
            return {name}  # (`return DataLoader(...)`: bound_name says the builder's own name)
        out = set()
        for c, e in self.callers().get(fn, []):
            if not isinstance(e.node, ast.Call):
                continue
            bound = self.bound_name(c, e.node)
            out.add(bound or self._unpacked_from_return(c, e.node))
        return out - {""}

    def _unpacked_from_return(self, fn: Function, call: ast.Call) -> str:
        """`return sup, unsup, build_one("val")` in fn, and `sup, unsup, val = get_loader(...)` where
        fn is called: the name that item lands in ("val"); "" where it cannot be told."""
        index = _call_returned_at(fn, call)
        if index is None:
            return ""
        names = {_unpacked_at(c, e.node, index) for c, e in self.callers().get(fn, []) if isinstance(e.node, ast.Call)}
        names.discard("")
        return names.pop() if len(names) == 1 else ""

    def _seeded_alike(self) -> bool:
        if not hasattr(self, "_alike"):
            from ddpdoctor.lint.process_seeds import seeded_alike  # it reads the loaders' facts back

            self._alike = seeded_alike(self)
        return self._alike

    def _rank_part_built(self, dataset: ast.AST, fn: Function) -> bool:
        """The dataset comes from a local helper that picks this rank's part inside its own body
        (`mine = np.array_split(files, world)[rank]`, then loads and concatenates `mine`): the rank
        reaches what it returns through the helper's names, not through its return expression.
        (Two steps back: a builder's parameter, then what its caller bound it to.)"""
        for value, scope in [(dataset, fn), *self.program.values_of(dataset, fn, 2)]:
            for sub in walk(value):
                if isinstance(sub, ast.Call) and any(self._returns_rank_part(t, 3)
                                                     for t in self.program.resolve(sub.func, scope)[0]):
                    return True
                if isinstance(sub, ast.Call) and _next_of(sub) is not None and self._yields_rank_part(_next_of(sub), scope):
                    return True
        return False

    def _yields_rank_part(self, source: ast.AST, fn: Function) -> bool:
        """`next(self.parts)` where `self.parts = Source(...).epochs()`, a generator that yields
        `self.load()` of this rank's part each pass: what it yields is the rank's part."""
        for value, scope in self.program.values_of(source, fn, 2):
            if not isinstance(value, ast.Call):
                continue
            for gen in self.program.resolve(value.func, scope)[0]:
                if isinstance(gen.node, ast.Module):
                    continue
                if any(self._rank_part_value(n.value, gen, 4) for n in gen.own
                       if isinstance(n, (ast.Yield, ast.YieldFrom)) and n.value is not None):
                    return True
        return False

    def _returns_rank_part(self, fn: Function, depth: int) -> bool:
        """What fn returns is derived (by assignment, a `for` over it, `append`/`extend`, an item
        stored) from a value that reads the rank, or from a local helper that returns such a part."""
        if isinstance(fn.node, ast.Module) or fn.name == "__init__" or depth <= 0:
            return False
        cache = self.__dict__.setdefault("_rank_parts", {})
        key = (id(fn.node), depth)
        if key not in cache:
            cache[key] = False  # a helper that reaches itself again adds nothing
            cache[key] = self._taints_return(fn, depth)
        return cache[key]

    def _taints_return(self, fn: Function, depth: int) -> bool:
        return reaches_return(fn, set(), lambda value: self._rank_part_value(value, fn, depth))

    def _rank_part_value(self, value: ast.AST, fn: Function, depth: int) -> bool:
        """The value reads the rank, or calls a local helper that returns a rank's part."""
        return self.mentions_rank(value, fn, depth=0, strict=True) or any(
            isinstance(sub, ast.Call) and any(self._returns_rank_part(t, depth - 1)
                                              for t in self.program.resolve(sub.func, fn)[0])
            for sub in walk(value))

    def _subset_of_sampler(self, dataset: ast.AST, fn: Function) -> bool:
        """`Subset(ds, indices)` where the indices are what this rank's DistributedSampler lists
        (`epoch_indices = list(sampler)`, resuming mid-epoch): the data is the rank's share."""
        for value, scope in self.program.values_of(dataset, fn, 2):
            if isinstance(value, ast.Call) and last_name(value.func) == "Subset" and len(value.args) >= 2 \
                    and self._listed_from_sampler(value.args[1], scope, 4):
                return True
        return False

    def _listed_from_sampler(self, node: ast.AST, fn: Function, depth: int) -> bool:
        for sub in walk(node):
            if isinstance(sub, ast.Call) and last_name(sub.func) in ("list", "iter", "sorted", "tuple") and sub.args:
                if any(isinstance(v, ast.Call) and self._builds_distributed_sampler(v, s)
                       for v, s in self.program.values_of(sub.args[0], fn, 2)):
                    return True
            if isinstance(sub, ast.Name) and depth > 0 and any(
                    v is not sub and self._listed_from_sampler(v, s, depth - 1)
                    for v, s in self.program.values_of(sub, fn, 1)):
                return True
        return False

    def _bound_as_evaluation(self, fn: Function, name: str, call: Optional[ast.Call] = None) -> bool:
        """A builder returns the loader (`loader = DataLoader(...); return loader`, or as an item
        of `return ds, loader`) and every caller whose constants reach the DataLoader `call`
        keeps it under an evaluation name (`self.test_dataloader = self.Dl_test.loader()`;
        `_, val_loader = get_loader(args, "val")` for the `if split == "val":` side), none under
        a training one."""
        position = _returned_at(fn, name)
        if position is None and not (_returned_alone(fn, name) or name == fn.name):
            return False
        bound = [self.bound_name(caller, event.node) if position is None else
                 _unpacked_at(caller, event.node, position)
                 for caller, event in self.callers().get(fn, [])
                 if isinstance(event.node, ast.Call) and not ruled_out(fn, call, event.node, program=self.program)]
        return bool(bound) and all(b and EVAL_NAME.search(b) and not TRAIN_NAME.search(b) for b in bound)

    def _eval_only(self, fn: Function) -> bool:
        """Every function that calls this one is an evaluation helper (named so; not one that
        builds the training loader beside it, `make_train_val_loaders`)."""
        sites = self.callers().get(fn, [])
        return bool(sites) and all(not isinstance(c.node, ast.Module) and EVAL_NAME.search(c.name)
                                   and not TRAIN_NAME.search(c.name) for c, _ in sites)

    def _handed_to_framework(self) -> set[str]:
        """Names passed as `training_data=` (deepspeed.initialize builds and shards the loader)."""
        if not hasattr(self, "_framework_data"):
            self._framework_data = {n.id for _, call, _, _ in self.calls() for kw in call.keywords
                                    if kw.arg == "training_data" for n in walk(kw.value)
                                    if isinstance(n, ast.Name)}
        return self._framework_data

    def _training_names(self) -> set[tuple[int, str]]:
        """(function, name) pairs a loop that runs backward iterates: the training loaders, by
        scope. A parameter iterated so names what each caller passes, in the caller's scope."""
        if hasattr(self, "_train_names"):
            return self._train_names
        names: set[tuple[int, str]] = set()
        self._split_names: set[tuple[int, str]] = set()
        self._train_calls: set[int] = set()  # the calls in a training loop's iterable itself
        # loops whose every backward is provably a plain model's (no DDP forward in its loss:
        # a helper fine-tuned on every rank before the DDP run), and the names they iterate
        self._plain_loops: set[int] = set()
        self._plain_names: set[tuple[int, str]] = set()
        self._ddp_names: set[tuple[int, str]] = set()  # iterated by a loop not provably plain
        lightning = self.program.uses_lightning()
        for fn in self.functions:
            for c in fn.own_calls:
                # DeepSpeed's pipeline engine: `engine.train_batch(data_iter=batches)` runs the
                # forward, backward and step of the batches it draws from the iterator
                if isinstance(c.func, ast.Attribute) and c.func.attr == "train_batch":
                    given = keyword(c, "data_iter") or (c.args[0] if c.args else None)
                    if isinstance(given, (ast.Name, ast.Attribute)):
                        names |= self._iterated_names_of(given, fn)
                # Lightning's `trainer.fit(model, train_dataloaders=loader)` (or the loader as its
                # second argument): the Trainer's training loop iterates it
                if isinstance(c.func, ast.Attribute) and c.func.attr == "fit" and lightning:
                    given = keyword(c, "train_dataloaders") or keyword(c, "train_dataloader") or \
                        (c.args[1] if len(c.args) > 1 else None)
                    if isinstance(given, (ast.Name, ast.Attribute)):
                        names |= self._iterated_names_of(given, fn)
            rank_read = {id(call) for call, guards, _ in fn.calls if rank_guards(guards)}
            for node, _ in _fn_loops(fn):
                backwards = [c for stmt in node.body for c in walk(stmt)
                             if isinstance(c, ast.Call) and self._runs_backward(c, fn)]
                if not backwards:
                    continue
                if _input_gradients(fn) and all(c.func.__class__ is ast.Attribute and c.func.attr == "backward"
                                                for c in backwards):
                    continue  # it back-propagates to its inputs and reads their gradients (an attack, a saliency map)
                if all(isinstance(c.func, ast.Attribute) and c.func.attr == "backward" and not c.args
                       and plain_loss(self.program, c.func.value, fn) for c in backwards):
                    self._plain_loops.add(id(node))
                # `(x,) = next(batches)` in the loop, or in a helper it hands the loader to
                # (I2SB's `sample_batch(opt, train_loader)`): batches is read as a loop would;
                # not in a loop of its own that runs no backward (TRNet's `while test_done <
                # train_done: next(test_enum)`, evaluation batches between training steps)
                aside = {id(c) for inner in walk(node) if inner is not node and inner.__class__ in (
                    ast.For, ast.While, ast.AsyncFor) and not any(
                        isinstance(b, ast.Call) and self._runs_backward(b, fn) for b in walk(inner))
                    for c in walk(inner) if c.__class__ is ast.Call}
                # (nor under `with torch.no_grad():` in the loop, a validation batch drawn every few
                # steps: `loss = model(next(val_loader))` there back-propagates nothing)
                aside |= {id(c) for inner in walk(node) if inner.__class__ is ast.With and any(
                    _grad_context(self.program, item.context_expr, fn) for item in inner.items) and not any(
                        isinstance(b, ast.Call) and self._runs_backward(b, fn) for b in walk(inner))
                    for c in walk(inner) if c.__class__ is ast.Call}
                for c in (c for stmt in node.body for c in walk(stmt)):
                    if not isinstance(c, ast.Call) or id(c) in aside:
                        continue
                    read = _next_of(c)
                    if read is not None:
                        # (not a batch only some ranks draw: `if rank == 0: b = next(test_iter)`
                        # for a picture is no rank's training data)
                        if id(c) not in rank_read:
                            names |= self._iterated_names_of(read, fn)
                        continue
                    for target in self.program.resolve(c.func, fn)[0]:
                        if isinstance(target.node, ast.Module):
                            continue
                        for inner in target.own_calls:
                            read = _next_of(inner)
                            if read.__class__ is ast.Name and read.id not in target.params:
                                # `loader = loaders[random.randint(...)]; next(loader)`: an item of
                                # the list the helper is handed (a multi-task batch picker)
                                held = target.bindings.get(read.id, ())
                                if len(held) == 1 and held[0][1].__class__ is ast.Subscript and \
                                        held[0][1].value.__class__ is ast.Name:
                                    read = held[0][1].value
                            # (what it returns reaches the loop's backward, or it runs one itself:
                            # guided-diffusion's `forward_backward_log(data)` draws and backpropagates)
                            if isinstance(read, ast.Name) and read.id in target.params and (
                                    _hands_back(target, inner)
                                    or any(self._runs_backward(b, target) for b in target.own_calls)):
                                given = argument_at(target, c, read.id)
                                if isinstance(given, ast.Call) and last_name(given.func) == "iter" and given.args:
                                    given = given.args[0]  # `sample(model, iter(loader))`
                                if isinstance(given, (ast.Name, ast.Attribute)):
                                    names |= self._iterated_names_of(given, fn)
                if not isinstance(node, (ast.For, ast.AsyncFor)):
                    continue
                split = self._splits_by_rank(node, fn)
                if split:
                    # every rank loads the whole batch and keeps its own slice of it
                    before, names = names, set()
                else:
                    self._train_calls.update(id(c) for c in walk(node.iter) if isinstance(c, ast.Call))
                iterated = self._iterated_names_of(node.iter, fn, None if split else self._train_calls)
                # `run_epoch("val", val_loader)` into a loop whose every backward sits under
                # `if phase == "train":`: that way in trains nothing, its loader is not named
                # (and what the callers' callers named it: `trainer.train(train_loader,
                # val_loader)` hands it on as `val_dl`) - not a name another way trains on
                off, on = set(), set()
                for param in fn.params:
                    for value, caller in fn.arguments.get(param, []):
                        named = (id(caller), last_name(value) or "")
                        if named not in iterated:
                            continue
                        call = _call_holding(caller, value)
                        side = off if call is not None and all(ruled_out(fn, b, call, program=self.program) for b in backwards) else on
                        side |= {named} | self._iterated_names_of(value, caller)
                iterated -= off - on
                # `dataloaders[phase]` whose every backward sits under `if phase == "train":`: the
                # entries at the other keys are read for evaluation alone
                for sub in walk(node.iter):
                    if sub.__class__ is ast.Subscript and sub.slice.__class__ is ast.Name:
                        iterated -= {(id(scope), held) for key, scope, held in self._dict_entries(sub, fn)
                                     if all(_key_rules_out(fn, b, sub.slice.id, key) for b in backwards)}
                names |= iterated
                (self._plain_names if id(node) in self._plain_loops else self._ddp_names).update(iterated)
                if split:
                    self._split_names |= names
                    names = before | names
        self._train_names = names
        return names

    def _plain_names_seen(self) -> set[tuple[int, str]]:
        self._training_names()
        return self._plain_names

    def _restarts(self, call: ast.Call, fn: Function) -> bool:
        """`iter(loader)`, `itertools.cycle(loader)`, or a local generator that loops over its
        first parameter and yields (`def cycle(dl): while True: for d in dl: yield d`): what
        it makes hands out the loader's batches."""
        if last_name(call.func) in ("iter", "cycle"):
            return True
        target = self.program.callee(call.func, fn)
        return self.program.is_function(target) and not isinstance(target.node, ast.Module) \
            and bool(target.params) and _yielded_from(target, target.params[0])

    def _iterated_names(self, loop: ast.AST, fn: Function) -> set[tuple[int, str]]:
        """(function, name) pairs that name what a `for` loop iterates: in fn, and where a
        parameter iterated comes from (what each caller passes, in the caller's scope)."""
        return self._iterated_names_of(loop.iter, fn)

    def _iterated_names_of(self, iterable: ast.AST, fn: Function, calls: Optional[set] = None) -> set[tuple[int, str]]:
        """calls: gets the calls whose result a caller hands the constructor for the iterated
        field (`Trainer(data_loader=data.train_dataloader())`, then `for batch in self.data_loader`)."""
        names: set[tuple[int, str]] = set()
        subs = [*walk(iterable), *_held(self.program, iterable, fn)]
        # (`loader = self.loaders[key]`, then `with tqdm(loader) as t: for x in t:`: the entry)
        subs += [v for sub in subs if sub.__class__ is ast.Name for _, v in fn.bindings.get(sub.id, ())
                 if v.__class__ is ast.Subscript]
        # (`self.loaders["train" if train else "val"]`: the entry at either key)
        subs += [ast.Subscript(value=sub.value, slice=side, ctx=ast.Load()) for sub in subs
                 if sub.__class__ is ast.Subscript and sub.slice.__class__ is ast.IfExp
                 for side in (sub.slice.body, sub.slice.orelse) if side.__class__ is ast.Constant and isinstance(side.value, str)]
        for sub in subs:
            keyed = _key_of(sub)
            if keyed and _self_field(sub.value) and fn.cls is not None:
                # `self.data_loader["train"]`, filled by a method of the class (the skeleton
                # trainers' `load_data`): the loader stored at that key, where it was stored
                names.update((id(m), keyed) for m in fn.cls.methods.values() if m.node is not None
                             and any(_key_of(t) == keyed for n in m.own if n.__class__ is ast.Assign for t in n.targets))
                # or handed in as a dict the constructor keeps (`Trainer(data_loader={"train":
                # train_loader})`, Tiny-Face's trainer): the loader under that key, where it is named
                key = sub.slice.value if isinstance(sub.slice, ast.Constant) else None
                for value, scope in self.program.values_of(sub.value, fn, 3) if key is not None else ():
                    if value.__class__ is ast.Dict:
                        names.update((id(scope), held) for k, v in zip(value.keys, value.values)
                                     if is_const(k, key) and (held := last_name(v)))
                        if calls is not None:
                            # (`{"train": get_data("train"), ...}`: the builder's call there)
                            calls.update(id(v) for k, v in zip(value.keys, value.values)
                                         if is_const(k, key) and v.__class__ is ast.Call)
                    elif value.__class__ is ast.DictComp and calls is not None and value.value.__class__ is ast.Call \
                            and _comprehension_keys(self.program, value, scope) & {key}:
                        # `{split: get_data(args, split) for split in ["train", "val"]}`: the call
                        # whose result is kept at each key
                        calls.add(id(value.value))
            elif keyed:
                names.add((id(fn), keyed))
            elif sub.__class__ is ast.Subscript and sub.slice.__class__ is ast.Name:
                # `dataloaders[phase]` in `for phase in ["train", "val"]:`, the dict handed in
                # as `{"train": train_loader, "val": val_loader}`: the loader at each key
                names.update((id(scope), held) for _, scope, held in self._dict_entries(sub, fn))
            name = last_name(sub) if isinstance(sub, (ast.Name, ast.Attribute)) else None
            if not name:
                continue
            _mark_passed(names, fn, name)
            if isinstance(sub, ast.Name) and name not in fn.params and name not in fn.bindings:
                # a global (`for x in train_loader:` in a module-level function, the loader
                # bound at the top level or in the `__main__` block): where it is bound
                for _, _, scope in self.program.lookup(name, fn):
                    names.add((id(scope), name))
            names |= _packed_by_callers(fn, name)
            if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "self":
                # `for x in self.train_data` where __init__ did `self.train_data = train_data`
                klass = self.program._class_of_fn(fn)
                # (and what a subclass sets it to: `self.train_loader = creator.get_dataloader(rank)`
                # in a distributed trainer's worker, read by its base class's epoch loop - ezflow)
                held = (self.program._attr(klass, name) + [v for sub in self.program._descendants(klass)
                                                          for v in sub.attrs.get(name, ())]) if klass else []
                for value, owner in held:
                    if isinstance(value, ast.Call) and value.args and isinstance(value.args[0], ast.Name) and \
                            self._restarts(value, owner):
                        value = value.args[0]  # `self.train_dl = cycle(train_dl)`, then `next(self.train_dl)` (RVD)
                    if isinstance(value, ast.Name):
                        for arg, caller in owner.arguments.get(value.id, []):
                            names.add((id(caller), last_name(arg) or ""))
                            if calls is not None and arg.__class__ is ast.Call:
                                calls.add(id(arg))
                    # `self.loader = DataLoader(...)` in the method that starts each epoch, read
                    # by the loop of another: the loader is the attribute's, in the method setting it
                    names.add((id(owner), name))
        return names

    def _dict_entries(self, sub: ast.Subscript, fn: Function) -> list[tuple[object, Function, str]]:
        """(key, scope, name) of each named entry of the dict literals `d[k]` reads (`d` bound to
        one, or handed one by the callers) at the keys `k` may hold: the constants of the list a
        loop over it runs through (`for phase in ["train", "val"]:`), else every key."""
        keys = _loop_constants(fn, sub.slice.id)
        found = []
        for value, scope in self.program.values_of(sub.value, fn, 3):
            if value.__class__ is not ast.Dict:
                continue
            for k, v in zip(value.keys, value.values):
                held = last_name(v) if v.__class__ in (ast.Name, ast.Attribute) else None
                if k.__class__ is ast.Constant and held and (keys is None or k.value in keys):
                    found.append((k.value, scope, held))
        return found

    def _runs_backward(self, call: ast.Call, fn: Function, depth: int = 2) -> bool:
        """The call runs a backward, an engine's included (`model_engine.backward(loss)`,
        `accelerator.backward(loss)`): a loop that runs one trains, whoever syncs its gradients
        (DDP805 asks which backward DDP syncs: accumulation_facts._backward). Once per call,
        function and depth: each loop's body is asked again for the loops around it."""
        memo = self.__dict__.setdefault("_backward_memo", {})
        key = (id(call), id(fn), depth)
        found = memo.get(key)
        if found is None and isinstance(call.func, ast.Attribute) and call.func.attr == "backward":
            # (not a method of the project's own that back-propagates nothing: a normalizer's
            # `self.normalizer.backward(motions)`, mapping features back to their scale)
            targets = self.program.resolve(call.func, fn)[0]
            found = memo[key] = not targets or any(t.node is None or isinstance(t.node, ast.Module) or any(
                c.func.__class__ is ast.Attribute and c.func.attr == "backward" for c in t.own_calls) for t in targets)
        if found is None:
            # (`loss_scaler(loss, optimizer, ...)`: timm's NativeScaler back-propagates in its __call__)
            found = memo[key] = library_scaler_backward(self.program, call, fn) or \
                self._backward_through(call, fn, depth)
        return found

    def _backward_through(self, call: ast.Call, fn: Function, depth: int) -> bool:
        if not self._backward_within(call, fn, depth):
            return False  # nothing the call can run names a backward: no body need be weighed
        if self._through(call, fn, depth, self._runs_backward):
            return True
        # a step helper whose backward runs in its own loop over micro-batches (improved-
        # diffusion's `forward_backward`: `for i in range(0, len(batch), micro): ...backward()`)
        return depth > 0 and any(
            isinstance(stmt, (ast.For, ast.AsyncFor)) and self._always(stmt.body, target, self._runs_backward, depth - 1)
            is not None
            for target in self.program.resolve(call.func, fn)[0]
            if target.node is not None and not isinstance(target.node, ast.Module) for stmt in target.node.body)

    def _backward_within(self, call: ast.Call, fn: Function, depth: int) -> bool:
        """Some function the call may run, within `depth` calls, has a `.backward(...)` call of
        its own: what _backward_through needs before it weighs on which passes the helpers'
        bodies run one (those weighings were a tenth of a 200-file package's lint, nearly all of
        them over helpers that back-propagate nothing). Memoised per call, function and depth."""
        if depth <= 0:
            return False
        memo = self.__dict__.setdefault("_backward_within_memo", {})
        key = (id(call), id(fn), depth)
        found = memo.get(key)
        if found is None:
            memo[key] = False  # a recursion back to this call adds nothing
            found = memo[key] = any(
                (any(isinstance(c.func, ast.Attribute) and c.func.attr == "backward" for c in target.own_calls)
                 and not _input_gradients(target))
                or any(self._backward_within(c, target, depth - 1) for c in target.own_calls)
                for target in self._helpers(call, fn))
        return found

    def _may_backward(self, call: ast.Call, fn: Function, depth: int = 2) -> bool:
        """The call may run a backward on some way through it (`step(model, batch, train)` whose
        `if train: loss.backward()`): a loop that makes one is no evaluation loop, whatever else
        it runs under no_grad (EvoDiff saves its checkpoints so)."""
        if (isinstance(call.func, ast.Attribute) and call.func.attr == "backward") or \
                library_scaler_backward(self.program, call, fn):
            return True
        if depth <= 0:
            return False
        # (not an attack's: a helper back-propagating to its inputs trains nothing)
        return any(self._may_backward(inner, target, depth - 1)
                   for target in self.program.resolve(call.func, fn)[0]
                   if target.node is not None and not isinstance(target.node, ast.Module)
                   and not _input_gradients(target) for inner in target.own_calls)

    def _evaluates(self, fn: Function) -> bool:
        """fn evaluates: it turns gradients off for some of its work and runs no backward
        (py-meanflow's evaluation pins its sampler with set_epoch(0), a fixed order on purpose)."""
        return bool(_no_grad_blocks(self.program, fn)) and not any(
            self._may_backward(c, fn) for c in fn.own_calls)

    def _runs_per_draw(self, fn: Function, depth: int = 2) -> bool:
        """fn is an iterator's `__next__` / `__iter__`, or a method one calls (an endless
        loader's `_next_epoch()` on StopIteration): it runs as the loop draws, not once."""
        if fn.name in ("__next__", "__iter__") or (fn.cls is not None and fn.name.startswith("on_")):
            return True  # (a callback's `on_epoch_begin`: its trainer calls it as often as it says)
        return depth > 0 and any(self._runs_per_draw(caller, depth - 1) for caller, _ in self.callers().get(fn, ())
                                 if caller is not fn)

    def _one_loader(self, fn: Function, call: ast.Call) -> bool:
        """The sampler built here serves one loader: not in a loop (mlpf builds the training
        and the validation sampler in one pass per split), nor in a helper called more than
        once (`make_loader("train")`, `make_loader("val")`)."""
        if any(any(n is call for n in walk(loop)) for loop, _ in _fn_loops(fn)):
            return False
        # an evaluation function that builds its own loader, however often it is called
        # (BERT-NER's `evaluate(args, model, prefix)` for dev and test): evaluation's own; and a
        # sampler over a dataset no parameter of fn makes is the same one on every call (SimCLS's
        # `run` both mp.spawn'd and called on one GPU builds its validation sampler alike)
        dataset = loader_dataset(self.program, call, fn)
        return isinstance(fn.node, ast.Module) or len(self.callers().get(fn, [])) <= 1 or self._evaluates(fn) \
            or (dataset is not None and self._same_on_every_call(dataset, fn))

    def _same_on_every_call(self, node: ast.AST, fn: Function, depth: int = 3) -> bool:
        """The value is the same on every call of fn: the parameters it is built from (through
        the local names it is built from, a few bindings back) are given alike by every call
        (`run(0, args)` beside `mp.spawn(run, args=(args,))`); not `make_loader("val")` beside
        `make_loader("train")`."""
        params = set(fn.params) | set(fn.kwonly)
        todo, seen, used = [node], set(), set()
        while todo:
            if depth < 0:
                return False  # deeper than followed: may differ
            names = {n.id for value in todo for n in walk(value) if isinstance(n, ast.Name)} - seen
            used |= names & params
            seen |= names
            todo = [value for name in names - params for _, value in fn.bindings.get(name, [])]
            depth -= 1
        calls = [event.node for _, event in self.callers().get(fn, []) if event.kind == "call"]
        for param in used:
            given = {text(argument_at(fn, c, param)) if argument_at(fn, c, param) is not None else None
                     for c in calls}
            if None in given or len(given) > 1:
                return False
        return True

    def _peeked_on_one_rank(self, name: str) -> bool:
        """The loader is only ever read as `next(iter(loader))` under a rank test (rank 0 draws
        one batch to render or log) and no loop iterates it: one rank's sample, not an epoch the
        ranks share."""
        reads = [guards for fn, call, guards, _ in self.calls()
                 if isinstance(call.func, ast.Name) and call.func.id == "iter" and len(call.args) == 1
                 and last_name(call.args[0]) == name]
        if not reads or not all(rank_guards(guards) for guards in reads):
            return False
        evaluating, other = self._evaluation_loops()
        return name not in evaluating | other and name not in {n for _, n in self._training_names()}

    def _read_on_one_rank(self, fn: Function, name: str, call: ast.Call) -> bool:
        """What this call binds the name to (the loader built here, not another the name held
        before: `train_loader` built again unsharded after training) is read only by calls under
        a rank test (`if rank == 0: visualize(model, train_loader)`): one rank's pictures, not an
        epoch every rank repeats. Unknown flow (a loop, a `try`) is no such loader."""
        if "." in name:
            return False
        loads = [n for n in fn.own_of(ast.Name) if n.id == name and isinstance(n.ctx, ast.Load)]
        if not loads or len(loads) > 40:
            return False
        guards_of = {id(c): guards for c, guards, _ in fn.calls}
        mine = 0
        for load in loads:
            values = reaching.reaching_values(fn.node, name, load)
            if values is None:
                return False
            if call not in values:
                continue
            mine += 1
            holder = next((c for c in fn.own_calls if load in c.args or any(k.value is load for k in c.keywords)), None)
            if holder is None or not rank_guards(guards_of.get(id(holder), ())):
                return False
        return mine > 0

    def _one_batch_handed_on(self, fn: Function, name: str) -> bool:
        """The loader is read once, outside any loop, as `next(iter(loader))` handed straight to
        a call (`RepeatBatch(next(iter(probe)))`: one batch to build a dataset from, which its
        own loader then shards), and read nowhere else: it feeds no epoch."""
        if isinstance(fn.node, ast.Module) or "." in name:
            return False
        reads = [n for n in walk(fn.node) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)]
        if len(reads) != 1:
            return False
        handed = [c for c in fn.own_calls for arg in c.args
                  if isinstance(arg, ast.Call) and last_name(arg.func) == "next" and arg.args
                  and isinstance(arg.args[0], ast.Call) and last_name(arg.args[0].func) == "iter"
                  and arg.args[0].args and arg.args[0].args[0] is reads[0]]
        if len(handed) != 1:
            return False
        return not any(loops for f, c, _, loops in self.calls() if f is fn and c is handed[0]) and not self.in_loop(fn)

    def _unpacked_element(self, name: ast.Name, where: Function, builder: Function, call: ast.Call,
                          depth: int = 2) -> bool:
        """`dataset, sampler = builder(...)` in where binds name to the element of builder's
        returned tuple that holds call (either side of a choice); or, depth allowing, to the
        element of another function's returned tuple that it unpacks from builder in turn
        (`(loader_pt, sampler_pt, ...) = get_loaders(cfg)`, get_loaders returning the
        `sampler_pt` of its own `loader_pt, _, sampler_pt, _ = get_train_valid_loader(...)`)."""
        for element, helper in returned_items(self.program, name.id, where):
            if helper is builder:
                if any(side is call for v, _ in self.program.values_of(element, builder, 2)
                       for side in ((v.body, v.orelse) if isinstance(v, ast.IfExp) else (v,))):
                    return True
            elif depth > 1 and isinstance(element, ast.Name) and not isinstance(helper.node, ast.Module) and \
                    self._unpacked_element(element, helper, builder, call, depth - 1):
                return True
        return False

    def _returned_to(self, receiver: ast.AST, where: Function, builder: Function, call: ast.Call) -> bool:
        """`sampler_train = build_sampler(ds, shuffle=True)` then `sampler_train.set_epoch(e)`, where
        build_sampler returns the sampler built here (`sampler = DistributedSampler(...)`;
        `return sampler`), or a field unpacked from what it returns: the receiver is this sampler."""
        if isinstance(builder.node, ast.Module) or not builder.returned:
            return False
        for value, scope in self.program.values_of(receiver, where, 2):
            if not isinstance(value, ast.Call) or builder not in self.program.resolve(value.func, scope)[0]:
                continue
            for ret in builder.returned:
                if ret is call or any(v is call for v, _ in self.program.values_of(ret, builder, 2)):
                    return True
        # `dataset, sampler = get_training_dataset(args)` then `sampler.set_epoch(e)` (OmniMotion),
        # the builder's `train_sampler = DistributedSampler(ds) if args.distributed else None`:
        # that element of what it returns, either side of the choice
        # (or a field kept from such an element: `loader, sampler = make_loader(ds)`, then
        # `self.trainsampler = sampler` and `self.trainsampler.set_epoch(step)` - lossy-vae)
        named = [(receiver, where)] if isinstance(receiver, ast.Name) else \
            [(v, scope) for v, scope in self.program.values_of(receiver, where, 1) if isinstance(v, ast.Name)]
        if any(self._unpacked_element(name, scope, builder, call) for name, scope in named[:4]):
            return True
        # `self.loader, self.sampler = self.prepare()` in a method of the class, then
        # `self.sampler.set_epoch(e)` (FGT's Trainer): that element of what the builder returns
        if isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name) and \
                receiver.value.id == "self" and where.cls is not None:
            for method in where.cls.methods.values():
                for stmt in method.own_of(ast.Assign):
                    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and
                            isinstance(stmt.targets[0], ast.Tuple) and isinstance(stmt.value, ast.Call)):
                        continue
                    at = [i for i, t in enumerate(stmt.targets[0].elts) if isinstance(t, ast.Attribute)
                          and t.attr == receiver.attr and isinstance(t.value, ast.Name) and t.value.id == "self"]
                    if not at or builder not in self.program.resolve(stmt.value.func, method)[0]:
                        continue
                    for ret in builder.returned:
                        if isinstance(ret, ast.Tuple) and len(ret.elts) == len(stmt.targets[0].elts) and any(
                                v is call for v, _ in self.program.values_of(ret.elts[at[0]], builder, 2)):
                            return True
        return False

    def _read_only_to_evaluate(self, names: set[str]) -> bool:
        """Every loop over the loader these names hold evaluates: no backward, and its work runs
        with gradients off (inside `torch.no_grad()`, a `with` of it in the loop, or a step
        function under a no-grad decorator: CasMVSNet's `@make_nograd_func test_sample`). An
        evaluation visits every sample whatever the order set_epoch would shuffle."""
        evaluating, other = self._evaluation_loops()
        return bool(names & evaluating) and not names & other

    def _evaluation_loops(self) -> tuple[set[str], set[str]]:
        """(the names loops that evaluate iterate, the names any other loop iterates)."""
        if hasattr(self, "_evaluating"):
            return self._evaluating
        evaluating: set[str] = set()
        other: set[str] = set()
        for fn in self.functions:
            blocks = _no_grad_blocks(self.program, fn)
            inside = {id(inner) for block in blocks for inner in block}
            for node, _ in _fn_loops(fn):
                if not isinstance(node, (ast.For, ast.AsyncFor)):
                    continue
                calls = [c for s in node.body for c in walk(s) if isinstance(c, ast.Call)]
                grad_off = id(node) in inside or any(
                    isinstance(s, (ast.With, ast.AsyncWith)) and any(
                        _grad_context(self.program, item.context_expr, fn) for item in s.items)
                    for stmt in node.body for s in walk(stmt)) or any(
                    _grad_off_function(self.program, target)
                    for c in calls for target in self.program.resolve(c.func, fn)[0])
                evaluates = grad_off and not any(self._may_backward(c, fn) for c in calls)
                (evaluating if evaluates else other).update(name for _, name in self._iterated_names(node, fn))
            # `support = iter(loader)` then next() in a function that runs with gradients off and
            # makes no backward (Meta-DETR's evaluate() reads its support loader so); the reads
            # first, the dearer question of a backward only where there are some
            reads = [c for c in fn.own_calls if id(c) in inside and isinstance(c.func, ast.Name)
                     and c.func.id == "iter" and c.args] if inside else []
            if reads and not any(self._may_backward(c, fn) for c in fn.own_calls):
                for c in reads:
                    evaluating.update(name for _, name in self._iterated_names_of(c.args[0], fn))
        self._evaluating = (evaluating, other)
        return self._evaluating

    def _read_without_backward(self, names: set[str]) -> bool:
        """Every loop over (or `iter()` of) the loader these names hold sits in a function that
        runs no backward anywhere, a few calls down included: what it reads trains nothing."""
        quiet, other = self._backward_free_reads()
        return bool(names & quiet) and not names & other

    def _backward_free_reads(self) -> tuple[set[str], set[str]]:
        """(the names read only in functions without a backward, the names read elsewhere)."""
        if hasattr(self, "_backward_free"):
            return self._backward_free
        quiet: set[str] = set()
        other: set[str] = set()
        for fn in self.functions:
            read = {name for node, _ in _fn_loops(fn) if isinstance(node, (ast.For, ast.AsyncFor))
                    for _, name in self._iterated_names(node, fn)}
            read |= {name for c in fn.own_calls if isinstance(c.func, ast.Name) and c.func.id == "iter" and c.args
                     for _, name in self._iterated_names_of(c.args[0], fn)}
            if read:
                backprops = not _input_gradients(fn) and any(self._may_backward(c, fn) for c in fn.own_calls)
                (other if backprops else quiet).update(read)
        self._backward_free = (quiet, other)
        return self._backward_free

    def _no_grad_names(self) -> set[tuple[int, str]]:
        """(function, name) pairs that loops inside `with torch.no_grad():` (or under a no-grad
        decorator) iterate without a backward: loaders read to compute without gradients (a
        feature cache every rank builds in full, an evaluation)."""
        if hasattr(self, "_no_grad_read"):
            return self._no_grad_read
        names: set[tuple[int, str]] = set()
        for fn in self.functions:
            blocks = _no_grad_blocks(self.program, fn)
            if not blocks:
                continue
            inside = {id(inner) for block in blocks for inner in block}
            for node, _ in _fn_loops(fn):
                if isinstance(node, (ast.For, ast.AsyncFor)) and id(node) in inside and not \
                        any(isinstance(c, ast.Call) and self._runs_backward(c, fn) for s in node.body for c in walk(s)):
                    names |= self._iterated_names(node, fn)
            for block in blocks:  # `cache = [encoder(x) for x, _ in loader]` under `with torch.no_grad():`
                for inner in block:
                    if isinstance(inner, ast.comprehension):
                        names |= self._iterated_names(inner, fn)
        self._no_grad_read = names
        return names

    def _splits_by_rank(self, loop: ast.AST, fn: Function) -> bool:
        """The loop cuts what it loads by the rank: `y = y[rank * n:(rank + 1) * n]`, or through a
        helper returning such a `slice(...)` (a hybrid-parallel model that gives each rank part
        of every batch)."""
        for stmt in loop.body:
            for node in walk(stmt):
                if isinstance(node, ast.Subscript) and _slicing(node.slice) \
                        and self.mentions_rank(node.slice, fn):
                    return True
        return False

    def _loader_to_ranks(self, fn: Function, name: str) -> bool:
        """The launcher's loader is handed to the ranks (`mp.spawn(run, args=(world, loader))`):
        each rank gets a copy of it and iterates all of it (finetune-SAM)."""
        if not name:
            return False
        if any(self._spawned_as(fn, name)):
            return True
        # `loader = DataLoader(...); return loader` in a builder the launcher calls, and the
        # launcher hands what it binds to the ranks (Hiveformer's `get_train_loader`)
        if _returned_at(fn, name) is None and not _returned_alone(fn, name):
            return False
        return any(any(self._spawned_as(caller, bound))
                   for caller, event in self.callers().get(fn, []) if isinstance(event.node, ast.Call)
                   for bound in [self.bound_name(caller, event.node)] if bound and caller is not fn)

    def _spawned_as(self, fn: Function, name: str):
        """(the spawn target, its parameter) for each mp.spawn in fn handing `name` in its args
        (the target's first parameter is the process index; the args follow)."""
        for call in fn.own_calls:
            if last_name(call.func) not in SPAWNERS or not call.args:
                continue
            handed = self.program.spawned_args(call, fn)
            if handed is None:
                continue
            for index, item in enumerate(handed.elts):
                if isinstance(item, ast.Name) and item.id == name:
                    for target in self.program.reference(call.args[0], fn):
                        if index + 1 < len(target.params):
                            yield target, target.params[index + 1]

    def _instances_train(self, fn: Function, call: ast.Call) -> bool:
        """`super().__init__(dataset, shuffle=True, ...)` in the constructor of the project's own
        DataLoader subclass: the loader is each instance the program builds (`loader =
        Loader(ds, ...)`, returned by a factory), and it trains where one of them does."""
        func = call.func
        if not (fn.name == "__init__" and fn.cls is not None and func.__class__ is ast.Attribute
                and func.attr == "__init__" and func.value.__class__ is ast.Call
                and func.value.func.__class__ is ast.Name and func.value.func.id == "super"):
            return False
        klass = self.program._class_of_fn(fn)
        if klass is None:
            return False
        return any(site.func.__class__ is ast.Name and self.program._callee_symbol(site.func, where) is klass
                   and self._trains(where, self.bound_name(where, site), call=site)
                   for where, site, _, _ in self.calls())

    def _trains(self, fn: Function, name: str, split: bool = False, call: Optional[ast.Call] = None,
                among: Optional[set] = None) -> bool:
        """The loader bound to name in fn is iterated by a backward loop: there, or (returned by a
        builder, alone or as one item of a tuple) where a caller binds what the builder returns,
        on a way in whose constants reach the DataLoader `call` (`create_loader(cfg, True)` never
        builds the `else:` side of `if train:`). split: by a loop that cuts each batch by the rank.
        among: other loops' names instead (_no_grad_names: read with gradients off)."""
        names = self._training_names()
        if among is None and call is not None and not split and id(call) in self._train_calls:
            return True  # `for x, y in DataLoader(ds, shuffle=True):` built where it is iterated
        if split:
            names = self._split_names
        if among is not None:
            names = among
        if not name and call is not None and among is None and not split and \
                self._wrapped_by_generator(fn, "", names, call):
            return True  # `data = yielder(DataLoader(ds, shuffle=True))`
        if not name and call is not None:
            # `return DataLoader(train_ds, ...), DataLoader(val_ds, ...)`: the item a caller unpacks
            position = _call_returned_at(fn, call)
            if position is not None:
                return self._bound_by_callers(fn, position, names, call, among is None and not split)
        if not name:
            return False
        if (id(fn), name) in names:
            return True
        if self._wrapped_by_generator(fn, name, names):
            return True
        if any((id(target), param) in names for target, param in self._spawned_as(fn, name)):
            return True  # the launcher's loader, iterated by the training loop of each rank
        position = _returned_at(fn, name)
        collected = _collected_into(fn, name) if position is None else None
        if collected is not None:
            # `loaders.append(iter(loader))` then `return loaders, total`: the list stands for
            # each loader it holds (a multi-task builder's list, drawn from by the caller)
            name = collected
            position = _returned_at(fn, name)
        if position is None and (_yielded_from(fn, name) or _returned_alone(fn, name)
                                 or self._returned_through_generator(fn, name)):
            # `while True: yield from loader` (the generator is the loader), or `loader =
            # DataLoader(...); return loader` (IRRA's builder): what the callers bind it to
            position = -1
        if name == fn.name or position is not None:  # `return DataLoader(...)`: follow the callers
            return self._bound_by_callers(fn, position, names, call, among is None and not split)
        if call is not None and fn.cls is not None and self._kept_as_field(fn, call, name):
            # `self.train_loader = DataLoader(...)` in the constructor, handed out by a getter
            # (`def get_data_loader(self): return self.train_loader, self.test_loader`): what
            # the getter's callers bind that item to
            for method in fn.cls.methods.values():
                at = _field_returned_at(method, name)
                if at is not None and self._bound_by_callers(method, at, names, None, among is None and not split):
                    return True
                if at is not None and is_property(method.node) and self._bound_by_readers(method, names, among is None and not split):
                    return True
        keyed = _KEYED_NAME.fullmatch(name)
        if keyed and _returned_alone(fn, keyed.group(1)):
            # `loaders["train"] = DataLoader(...)` in a builder returning the table: where a
            # caller binds the table and takes that key (`train_loader = loaders["train"]`)
            for caller, event in self.callers().get(fn, []):
                held = self.bound_name(caller, event.node) if event.kind == "call" and \
                    event.node.__class__ is ast.Call else ""
                for node in caller.own_of(ast.Assign) if held else ():
                    value, target = node.value, node.targets[0]
                    if len(node.targets) == 1 and target.__class__ is ast.Name and value.__class__ is ast.Subscript \
                            and value.value.__class__ is ast.Name and value.value.id == held \
                            and value.slice.__class__ is ast.Constant and value.slice.value == keyed.group(2) \
                            and self._trains(caller, target.id, split, None, among):
                        return True
        return False

    def _trainer_hook_loader(self, fn: Function, call: ast.Call, name: str) -> str:
        """The loader a Hugging Face Trainer subclass's `get_train_dataloader` override returns,
        never handed to `self.accelerator.prepare`: the Trainer's training loop iterates it as it
        is (the base method's prepare is what shards the batches across the processes). The
        override's label, or ""."""
        if fn.name != "get_train_dataloader" or fn.cls is None or not hf_trainer_class(self.program, fn.cls):
            return ""
        prepares = {id(c) for c in self._prepare_calls()}
        if any(id(c) in prepares for c in fn.own_calls):
            return ""
        returned = any(ret is call for ret in fn.returned) or (bool(name) and _returned_alone(fn, name))
        return fn.label if returned else ""

    def _wrapped_by_generator(self, fn: Function, name: str, names: set, built: Optional[ast.Call] = None) -> bool:
        """`batches = yielder(loader)` with `def yielder(loader): while True: yield from loader`
        (guided-diffusion's scripts), where what fn binds the generator to trains; built: the
        DataLoader call handed in place (`yielder(DataLoader(ds))`) instead of a name."""
        for call in fn.own_calls:
            position = next((i for i, a in enumerate(call.args) if (a is built if built is not None else
                                                                     a.__class__ is ast.Name and a.id == name)), None)
            if position is None:
                continue
            targets = self.program.resolve(call.func, fn)[0]
            if len(targets) != 1 or targets[0].node is None or isinstance(targets[0].node, ast.Module):
                continue
            params = [a.arg for a in targets[0].node.args.args]
            if targets[0].cls is not None and params and params[0] in ("self", "cls"):
                params = params[1:]
            if position < len(params) and _yielded_from(targets[0], params[position]):
                bound = self.bound_name(fn, call)
                if bound and (id(fn), bound) in names:
                    return True
        return False

    def _called_on_both_sides(self, fn: Function) -> bool:
        """fn is called under a rank test and again under its complement (`if local_rank == 0:
        loaders = build(...)`, `dist.barrier()`, `if local_rank != 0: loaders = build(...)`: rank 0
        first, then the others): every rank builds what it builds."""
        sides: dict[tuple, set] = {}
        for _, event in self.callers().get(fn, []):
            tests = rank_guards(getattr(event, "guards", ()))
            if len(tests) == 1:
                test = tests[0].test
                sides.setdefault((test.key, test.scope), set()).add(test.polarity)
        return any({"zero", "nonzero"} <= found for found in sides.values())

    def _switch_ever_on(self, fn: Function, conds: tuple) -> tuple:
        """conds without the `else:` side of a switch no construction or call ever turns on
        (`if self.distributed: DistributedSampler... else: DataLoader(shuffle=True)` in a
        loader factory every caller builds with its default `distributed=False`, run inside the
        ranks a trainer spawns: ezflow's DataloaderCreator): that side is the only one taken,
        in whatever run reaches it, so it says nothing of a one-process run."""
        return tuple((c, f) for c, f in conds
                     if not (c.startswith("not ") and never_true(self.callers(), fn, c[4:], True, self.program)))

    def _property_read_names(self, fn: Function, call: ast.Call, name: str) -> set[str]:
        """The names the loader a constructor keeps as `self.<name>` is bound to where a `@property`
        handing it out is read (`train_dl = reader.train_dataloader`), and what the callers of a
        function returning that name bind (one step)."""
        if fn.cls is None or not self._kept_as_field(fn, call, name):
            return set()
        found: set[str] = set()
        for method in fn.cls.methods.values():
            if _field_returned_at(method, name) is None or not is_property(method.node):
                continue
            for reader, bound in self._property_readers(method):
                found.add(bound)
                if not isinstance(reader.node, ast.Module) and (_returned_alone(reader, bound)
                                                                or _returned_at(reader, bound) is not None):
                    found |= self._names_outside(reader, bound)
        return found

    def _property_readers(self, method: Function) -> list[tuple[Function, str]]:
        """(function, name) for each plain binding of a read of the property `X.<method.name>`
        (also an item of a tuple binding: `train, val = ds.train_loader, ds.val_loader`). Every
        binding of a read of an attribute is indexed once, by the attribute's name: each loader a
        constructor keeps asks again."""
        index = self.__dict__.get("_attribute_reads")
        if index is None:
            index = self.__dict__["_attribute_reads"] = self._index_attribute_reads()
        return index.get(method.name, [])

    def _index_attribute_reads(self) -> dict[str, list[tuple[Function, str]]]:
        found: dict[str, list[tuple[Function, str]]] = {}
        for fn in self.functions:
            for node in fn.own_of(ast.Assign):
                if len(node.targets) != 1:
                    continue
                target, value = node.targets[0], node.value
                pairs = list(zip(target.elts, value.elts)) if target.__class__ is ast.Tuple and \
                    value.__class__ is ast.Tuple and len(target.elts) == len(value.elts) else [(target, value)]
                for bound, read in pairs:
                    if read.__class__ is ast.Attribute and bound.__class__ is ast.Name:
                        found.setdefault(read.attr, []).append((fn, bound.id))
        return found

    def _bound_by_readers(self, method: Function, names: set, loops: bool) -> bool:
        """A `@property` handing out the loader field (`def train_dataloader(self): return
        self._train_dataloader`), read as `dataset.train_dataloader` where a function binds it
        (`train_dl, eval_dl = dataset.train_dataloader, dataset.eval_dataloader`): the names that
        read binds, as _bound_by_callers follows a call's (returned again to its callers too)."""
        for fn, bound in self._property_readers(method):
            if (id(fn), bound) in names:
                return True
            again = _returned_at(fn, bound)
            if again is None and _returned_alone(fn, bound):
                again = -1
            if again is not None and not isinstance(fn.node, ast.Module) and \
                    self._bound_by_callers(fn, again, names, None, loops):
                return True
        return False

    @staticmethod
    def _kept_as_field(fn: Function, call: ast.Call, name: str) -> bool:
        """The call is bound to `self.<name>` in fn."""
        return any(isinstance(node, ast.Assign) and node.value is call and any(
            _self_field(t) and t.attr == name for t in node.targets) for node in fn.own)

    def _returned_through_generator(self, fn: Function, name: str) -> bool:
        """`return sample_data(loader)`, where the local generator `sample_data` loops over its
        parameter and yields each batch (AOT-GAN's endless loader): what fn returns passes the
        loader's batches on."""
        for node in fn.own_of(ast.Return):
            if not (isinstance(node, ast.Return) and isinstance(node.value, ast.Call)):
                continue
            for index, arg in enumerate(node.value.args):
                if isinstance(arg, ast.Name) and arg.id == name and any(
                        self.program.is_function(t) and index < len(t.params) and _yielded_from(t, t.params[index])
                        for t in self.program.resolve(node.value.func, fn)[0]):
                    return True
        return False

    def _bound_by_callers(self, fn: Function, position: Optional[int], names: set, call: Optional[ast.Call],
                          loops: bool, depth: int = 3) -> bool:
        """What fn returns (the loader, or the item at position of its tuple) is bound by a
        caller to one of names; or iterated where it is called (loops); or returned again as
        it is by a builder above it (`get_dataloader` -> `return from_datasets(...)`)."""
        for caller, event in self.callers().get(fn, []):
            if not isinstance(event.node, ast.Call):
                continue
            bound = self.bound_name(caller, event.node) if position in (None, -1) else \
                _unpacked_at(caller, event.node, position)
            if bound and _rebound_unread(caller, event.node, bound):
                continue  # (bound, then bound again before any read: this loader is dropped)
            if self._unbound_when_distributed(caller, event.node) or off_at_launch(event.conds, self.program):
                # (the side that builds it leaves a name the distributed run reads unbound, or is
                # one the options, as launched, never take: `if opt.dataset == "cifar100":`)
                continue
            if bound and (id(caller), bound) in names and not ruled_out(fn, call, event.node, program=self.program):
                return True
            if loops and position in (None, -1) and id(event.node) in self._train_calls \
                    and not ruled_out(fn, call, event.node, program=self.program):
                return True  # `for x, y in make_loader(data):` iterated where the builder is called
            if depth > 1 and bound and caller is not fn:
                # `train_dat = prepare_data(...)` then `return train_dat, valid_dat`: what the
                # caller binds it to, it returns again (alone or as an item) to its own callers
                again = _returned_at(caller, bound)
                if again is None and (_returned_alone(caller, bound) or _yielded_from(caller, bound)):
                    # (or passed on by the caller's own generator: `data = load_data(bs)`, then
                    # `for batch, cond in data: yield batch, cond` - guided-diffusion's SR scripts)
                    again = -1
                if again is not None and self._bound_by_callers(caller, again, names, None, loops, depth - 1):
                    return True
            # (`return get_loaders_eval(...)`: the whole value, a tuple's items where they were)
            if depth > 1 and not bound and caller is not fn and any(
                    isinstance(n, ast.Return) and n.value is event.node for n in caller.own) \
                    and self._bound_by_callers(caller, position, names, None, loops, depth - 1):
                return True
        return False

    def _unbound_when_distributed(self, fn: Function, node: ast.AST) -> str:
        """A name the distributed run reads after the `if` chain that holds node (unconditionally,
        or under the switches the process group is set up under), bound only on the chain's other
        sides: the side that holds node ends in a NameError in any distributed run, so it is not
        the distributed run's (a KD repository's `if opt.dataset == "cifar100": train_loader, val_loader
        = get_cifar100_dataloaders(...)` / `elif ...: ..., train_sampler = get_imagenet_dataloader(...)`,
        then `if opt.multiprocessing_distributed: train_sampler.set_epoch(epoch)`). "" where none is."""
        memo = self.__dict__.setdefault("_unbound_memo", {})
        key = (id(fn), id(node))
        if key in memo:
            return memo[key]
        memo[key] = found = ""
        path = reaching._path_to(fn.node, node) if not isinstance(fn.node, ast.Module) else None
        ifs = [(owner, field) for _, _, owner, field in path or () if isinstance(owner, ast.If)]
        if ifs:
            others = [owner.orelse if field == "body" else owner.body for owner, field in ifs]
            inside = {id(n) for side in others for stmt in side for n in walk(stmt)}
            stored = lambda n: n.__class__ is ast.Name and n.ctx.__class__ is not ast.Load  # noqa: E731
            there = {n.id for side in others for stmt in side for n in walk(stmt) if stored(n)}
            elsewhere = {n.id for n in walk(fn.node) if stored(n) and id(n) not in inside}
            declared = {name for n in walk(fn.node) if isinstance(n, (ast.Global, ast.Nonlocal)) for name in n.names}
            wanted = there - elsewhere - declared - set(fn.params)
            end = ifs[0][0].end_lineno or 0
            switches = self._switches()
            for read in walk(fn.node) if wanted else ():
                if read.__class__ is not ast.Name or read.id not in wanted or read.ctx.__class__ is not ast.Load \
                        or read.lineno <= end:
                    continue
                way = reaching._path_to(fn.node, read) or ()
                if any(isinstance(o, (ast.Try, ast.ExceptHandler)) for _, _, o, _ in way):
                    continue
                # every test on the way holds in the distributed run: a switch the group is set up
                # under, or one the options, as launched, settle that way (`if opt.dali is None:`)
                tests = [(side_conds(o.test, f == "body"), settled(o.test, self.program), f == "body")
                         for _, _, o, f in way if isinstance(o, ast.If)]
                if all(any(c in switches for c, _ in said) or held is body for said, held, body in tests):
                    found = read.id
                    break
        memo[key] = found
        return found

    def _worker_split(self, dataset: ast.AST, fn: Function) -> tuple:
        """(class, chosen, how) where a value of the dataset is a local IterableDataset that
        splits its stream by loader worker only (`_self_sharding` says no for it, and its source
        reads get_worker_info, or streams a Hugging Face dataset); chosen: another value is built
        instead on another branch; how: "get_worker_info" or "datasets"."""
        values = [(v, s) for v, s in self.program.values_of(dataset, fn) if isinstance(v, ast.Call)]
        split = []
        for value, scope in values:
            target = self.program._callee_symbol(value.func, scope)
            if not (isinstance(target, Klass) and any("Iterable" in b for b in target.bases)):
                continue
            source = source_lines(target.file.lines, target.node)
            how = "get_worker_info" if "get_worker_info" in source else "datasets" if HF_STREAM.search(source) else ""
            if how and not self._self_sharding(target, set()):
                split.append((target.name, how))
        return (split[0][0], len(split) < len(values), split[0][1]) if split else ()

    def _index_ignored(self, dataset: ast.AST, fn: Function, call: ast.Call) -> bool:
        """Every dataset the loader may be handed is built from a class whose `__getitem__`
        replaces the index it is handed before reading it (`idx = torch.multinomial(w, 1).item()`:
        it draws a sample of its own), on the branch of `if self.<flag>:` the construction
        decides (`Dataset(..., train)` inside `if train:` sets the flag true)."""
        conds = {c for c, _ in fn.__dict__.get("_call_conds", {}).get(id(call), ())}
        found = False
        for value, scope in self.program.values_of(dataset, fn):
            target = self.program._callee_symbol(value.func, scope) if isinstance(value, ast.Call) else None
            getitem = self.program.method(target, "__getitem__") if isinstance(target, Klass) else None
            init = self.program.method(target, "__init__") if isinstance(target, Klass) else None
            params = [a.arg for a in getitem.node.args.args] if getitem is not None else []
            anew = _drawn_anew(getitem.node.body, params[1], _flags(init, value, conds) if init is not None else {}) \
                if len(params) >= 2 else False
            if anew is None:
                # the index is never read, and a sample is drawn instead (`np.random.choice(chars, 4)`)
                # there or in a method of its own it calls (`ret = self.try_random_slice()`,
                # drawing a file and an offset)
                anew = any(c.__class__ is ast.Call and (self.program.qualify(c.func, m) or "") in GLOBAL_DRAWS
                           for m in self._drawing_helpers(getitem) for c in m.own_calls)
            if not anew:
                return False
            found = True
        return found

    def _drawing_helpers(self, getitem: Function, depth: int = 2, most: int = 40) -> list:
        """__getitem__ and the methods it calls on itself (process_seeds._with_own_calls), and
        those of the objects it holds (`self.get_audio.train_data()`, an audio mixer drawing two
        speakers) with theirs, a few objects down: where a sample that reads no index is drawn."""
        found = _with_own_calls(getitem, 2, self.program)
        todo = list(found)
        for _ in range(depth):
            more = []
            for m in todo:
                for c in m.own_calls:
                    if c.func.__class__ is not ast.Attribute or (
                            c.func.value.__class__ is ast.Name and c.func.value.id == "self") or len(found) >= most:
                        continue  # (its own methods: _with_own_calls, which skips dead lines)
                    for target in self.program.resolve(c.func, m)[0]:
                        if target not in found and target.node is not None and \
                                not isinstance(target.node, ast.Module):
                            added = [t for t in _with_own_calls(target, 2, self.program) if t not in found]
                            found.extend(added)
                            more.extend(added)
            todo = more
        return found

    def _instances_single_process(self, fn: Function) -> bool:
        """A method of a class whose every object the callers hold is built where the run is one
        process: `if opt.dist: loader = DistributedDataLoader() else: loader =
        CustomDatasetDataLoader()`, then `loader.initialize(opt)` - CustomDatasetDataLoader's
        initialize builds its loader only where no process group is set up."""
        klass = fn.cls
        if klass is None or isinstance(fn.node, ast.Module):
            return False
        program = self.program
        built = []
        for caller, event in self.callers().get(fn, []):
            node = event.node
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name) and node.func.value.id != "self"):
                return False
            values = program.values_of(node.func.value, caller)
            if not values or any(not isinstance(v, ast.Call) for v, _ in values):
                return False
            mine = [(v, scope) for v, scope in values if program.class_of(v, scope) is klass]
            if not mine:
                return False
            built += mine
        switches, ddp = self._switches(), self.wraps_ddp()
        return bool(built) and all(
            _single_process(self._switch_ever_on(scope, scope.__dict__.get("_call_conds", {}).get(id(v), ())),
                            switches, ddp) for v, scope in built)

    def _called_one_process_only(self, fn: Function) -> bool:
        """Every call of the helper sits on the side of an `if` only a one-process run takes (the
        `else:` of `if self.args.dist and not self.args.only_test:`, the test the group is set up
        under: MEAformer's `_dataloader`, beside `_dataloader_dist`)."""
        if fn.node is None or isinstance(fn.node, ast.Module):
            return False
        sites = self.callers().get(fn, [])
        return bool(sites) and all(event.kind == "call" and self._off_the_setup_switch(caller, event.node)
                                   for caller, event in sites)

    def _off_the_setup_switch(self, fn: Function, node: ast.AST) -> bool:
        """node sits in the `else:` of the set-up's own test read again (RankFlow.setup_test)."""
        if fn.node is None or isinstance(fn.node, ast.Module):
            return False
        return any(owner.__class__ is ast.If and field == "orelse" and self.program.ranks.setup_test(owner.test)
                   for _, _, owner, field in reaching._path_to(fn.node, node) or ())

    def _where_no_group(self, fn: Function, call: ast.Call) -> bool:
        """Built under `not is_dist()` (the `else:` of `if is_dist():`), a local helper that
        returns `dist.is_initialized()`: no process group there, so no rank to shard for."""
        for cond, _ in fn.__dict__.get("_call_conds", {}).get(id(call), ()):
            test = _test_of(cond) if cond.startswith("not ") else None
            if test is not None and test.__class__ is ast.UnaryOp and test.operand.__class__ is ast.Call \
                    and test.operand.func.__class__ in (ast.Name, ast.Attribute) and group_query(self.program, test.operand, fn):
                return True
            if not cond.startswith("not ") and self._none_only_undistributed(_test_of(cond), fn, call):
                return True
        return False

    def _none_only_undistributed(self, test: Optional[ast.AST], fn: Function, call: ast.Call) -> bool:
        """`if train_sampler is None: DataLoader(ds, shuffle=True)` where the sampler is
        `DistributedSampler(ds) if multigpu else None` (or None only on the `else:` of the
        switch the group is set up under): it is None only in a run without a process group."""
        if not (test.__class__ is ast.Compare and len(test.ops) == 1 and test.ops[0].__class__ is ast.Is
                and is_const(test.comparators[0], None) and test.left.__class__ is ast.Name):
            return False
        ranks = self.program.ranks
        # (the test's text parsed again has no place: the name as read at the loader's call)
        name = ast.copy_location(ast.Name(id=test.left.id, ctx=ast.Load()), call)
        values = [(v, s) for v, s in self.program.values_of(name, fn, 1)
                  if not (v.__class__ is ast.Name and v.id == test.left.id)]
        nones = 0
        for value, scope in values:
            if value.__class__ is ast.IfExp:
                if is_const(value.orelse, None):
                    if not ranks.distributed_run(value.test, scope):
                        return False
                    nones += 1
                elif is_const(value.body, None):
                    if not (ranks.single_process(value.test, scope) or ranks.one_process_run(value.test, scope)):
                        return False
                    nones += 1
            elif is_const(value, None):
                if not ranks._on_the_single_side(value, scope):
                    return False
                nones += 1
        return nones > 0

    def _training_side_apart(self, fn: Function, call: ast.Call) -> bool:
        """`if args.use_multi_gpu and flag == "train": <a sharded loader> else: DataLoader(ds,
        shuffle=...)`: in the distributed run (the switch on) this `else:` builds only the loaders
        of the other flags (`"val"`, `"test"`): an evaluation's, whatever the builder's name."""
        switches = self._switches()
        if not switches or isinstance(fn.node, ast.Module):
            return False
        forms = {switch_form(c) for c in switches}
        for node in fn.own_of(ast.If):
            if not (isinstance(node.test, ast.BoolOp) and isinstance(node.test.op, ast.And)) or \
                    not any(n is call for s in node.orelse for n in walk(s)):
                continue
            parts = node.test.values
            switched = any(switch_form(text(p)) in forms for p in parts)
            training = any(isinstance(p, ast.Compare) and len(p.ops) == 1 and isinstance(p.ops[0], ast.Eq)
                           and isinstance(p.left, ast.Name) and p.left.id in fn.params
                           and is_const(p.comparators[0], "train") for p in parts)
            if switched and training:
                return True
        return False

    def _other_branch_distributed(self, fn: Function, call: ast.Call) -> str:
        """`if 'triplet' in cfg.SAMPLER: (if cfg.DIST: a sharding sampler ...) elif ...: DataLoader(ds,
        shuffle=True)`: the other side of a configuration test handles the switch the process
        group is set up under, this side never tests it - the loader meets a distributed run
        only if that configuration is chosen with it. The test, or ""."""
        switches = self._switches()
        if not switches or isinstance(fn.node, ast.Module):
            return ""
        for node in walk(fn.node):
            if not isinstance(node, ast.If) or text(node.test) in switches:
                continue
            for mine, other in ((node.body, node.orelse), (node.orelse, node.body)):
                if not any(n is call for s in mine for n in walk(s)):
                    continue
                if self._side_always_taken(fn, node.test, mine is node.body):
                    continue  # (`Loader(ds, distributed=ptu.distributed)`, False on every way in)
                tests = lambda stmts: {switch_form(text(n.test)) for s in stmts for n in walk(s) if isinstance(n, ast.If)}
                forms = {switch_form(c) for c in switches}
                if tests(other) & forms and not tests(mine) & forms:
                    return text(node.test)
                if _shards(other) and not _shards(mine) and _LAUNCH_TEST.search(text(node.test)) and \
                        not any(form and form in switch_form(text(node.test)) for form in forms):
                    # `if launcher == "slurm": build_dataloader(ds, ..., dist=True) else:
                    # DataLoader(ds, shuffle=True)`: a test on how the job is launched whose other
                    # side is the author's distributed one; this side meets a process group only
                    # with a choice the source leaves open (`--launcher pytorch`), so the verdict
                    # rests on that choice. (A test on the data - `if "mnist" in data_dir:` - is
                    # no such choice: every launch is the distributed one there; nor is a test
                    # that holds the switch itself - `if args.distributed and args.num_gpu > 1:` -
                    # whose other side the switched-on run takes at the options' defaults.)
                    return text(node.test)
        return ""

    def _side_always_taken(self, fn: Function, test: ast.AST, body: bool) -> bool:
        """A test on a bare parameter every way into fn gives constants that take this side
        (body: the `if` side): no choice is left open for the run."""
        negated = test.__class__ is ast.UnaryOp and test.op.__class__ is ast.Not
        name = test.operand if negated else test
        if name.__class__ is not ast.Name or name.id not in fn.params:
            return False
        held = given_constants(self.callers(), fn, name.id, program=self.program)
        return bool(held) and all((bool(v) != negated) == body for v in held)

    def _replaced_when_distributed(self, fn: Function, call: ast.Call) -> bool:
        """`train_loader = load_data(...)` then `if distributed: train_loader = DataLoader(ds,
        sampler=DistributedSampler(ds))` before anything else reads the name: under the switch
        the process group is set up under, the plain loader is dropped; it is only ever iterated
        in a run without a process group. Every place the loader is bound (here, or where each
        caller binds what the builder returns) must be replaced so."""
        switches = self._switches()
        if not switches and not fn.params:
            return False
        callers = self.callers()
        sites = []
        name = self.bound_name(fn, call)
        kept = self._kept_for_getters(fn, call, name)
        if kept is not None:
            return bool(kept) and all(_rebound_under(scope, bound, value, switches, callers)
                                      for scope, bound, value in kept)
        position = _returned_at(fn, name) if name else None
        if position is None and name and _returned_alone(fn, name):
            position = -1  # `loader = DataLoader(...); return loader`: where the callers bind it
        if name and name != fn.name and position is not None and _rebound_under(fn, name, call, switches, callers):
            return True  # `loader = DataLoader(ds)`; `if ddp: loader = DataLoader(ds, sampler=...)`; `return loader, sampler`
        if name and name != fn.name and position is None:
            sites.append((fn, name, call))
        else:
            for caller, event in self.callers().get(fn, []):
                if not isinstance(event.node, ast.Call):
                    return False
                bound = self.bound_name(caller, event.node) if position in (None, -1) else \
                    _unpacked_at(caller, event.node, position)
                if not bound:
                    return False
                if (id(caller), bound) not in self._training_names() and EVAL_NAME.search(bound) \
                        and not TRAIN_NAME.search(bound):
                    continue  # `eval_loader = self.prepare_data_loader(dev)`: no training loop reads it
                sites.append((caller, bound, event.node))
        return bool(sites) and all(_rebound_under(scope, bound, value, switches, callers) for scope, bound, value in sites)

    def _kept_for_getters(self, fn: Function, call: ast.Call, attr: str) -> Optional[list]:
        """`self.train_loader = DataLoader(...)` in a constructor, handed out only by a getter
        (`def get_data_loader(self): return self.train_loader, self.test_loader`): where each
        caller of the getter binds it (proVLAE's `train_loader, test_loader =
        dataset.get_data_loader()`, then `if params.distributed:` builds it again with a
        sampler). None where the loader is not kept so; [] where a way to it is not followed."""
        if fn.cls is None or not attr or not any(
                isinstance(n, ast.Assign) and n.value is call and len(n.targets) == 1
                and isinstance(n.targets[0], ast.Attribute) and isinstance(n.targets[0].value, ast.Name)
                and n.targets[0].value.id == "self" for n in fn.own):
            return None
        getters = []
        for method in fn.cls.methods.values():
            if method is fn:
                continue
            for node in method.own:
                if not isinstance(node, ast.Return) or node.value is None:
                    continue
                items = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
                for index, item in enumerate(items):
                    if isinstance(item, ast.Attribute) and item.attr == attr and \
                            isinstance(item.value, ast.Name) and item.value.id == "self":
                        getters.append((method, index if isinstance(node.value, ast.Tuple) else None))
        if not getters:
            return None
        # read anywhere but in a getter (`data.train_loader` iterated, or another method of the
        # class using it), it is not handed out only so
        readers = {id(m) for m, _ in getters} | {id(fn)}
        if any(isinstance(n, ast.Attribute) and n.attr == attr and isinstance(n.ctx, ast.Load) and (
                not (isinstance(n.value, ast.Name) and n.value.id == "self")
                or (other.cls is fn.cls and id(other) not in readers))
               for other in self.functions for n in other.own):
            return []
        sites = []
        for getter, index in getters:
            ways = [(caller, event.node) for caller, event in self.callers().get(getter, [])]
            if not ways:
                # an object out of a registry (`dataset_classes[name](...)`): the calls of a
                # method of that name, on any object (each must be rebound, so a common name
                # only keeps the finding)
                ways = [(other, c) for other in self.functions for c in other.own_calls
                        if isinstance(c.func, ast.Attribute) and c.func.attr == getter.name
                        and not (isinstance(c.func.value, ast.Name) and c.func.value.id == "self")]
            for caller, node in ways:
                if not isinstance(node, ast.Call):
                    return []
                bound = self.bound_name(caller, node) if index is None else _unpacked_at(caller, node, index)
                if not bound:
                    return []
                sites.append((caller, bound, node))
        return sites

    def _unread(self, fn: Function, name: str, call: Optional[ast.Call] = None) -> bool:
        """The loader is one item of the tuple fn returns, and every caller unpacks that item into
        a name it never reads: nothing iterates it, on any rank. Or (call: the DataLoader) the
        name it is bound to is bound again before every read of it (_overwritten_unread)."""
        if call is not None and _overwritten_unread(fn, call, name):
            return True
        position = _returned_at(fn, name)
        if position is None:
            return False
        calls = [(caller, event.node) for caller, event in self.callers().get(fn, [])
                 if isinstance(event.node, ast.Call)]
        builder = {id(n) for n in walk(fn.node)}  # its own `return ..., name` is not a read
        for caller, call in calls:
            bound = _unpacked_at(caller, call, position)
            if not bound or any(isinstance(n, ast.Name) and n.id == bound and isinstance(n.ctx, ast.Load)
                                and id(n) not in builder for n in walk(caller.node)):
                return False
        return bool(calls)

    def _sampler_dropped_by(self, sampler: ast.AST, fn: Function) -> str:
        """The test of `DistributedSampler(ds) if test else None` (the value itself, or one a name
        holds) that the callers, as launched, leave false: "" where none is."""
        for value, scope in [(sampler, fn), *self.program.values_of(sampler, fn)]:
            side = value.body if value.__class__ is ast.IfExp else None
            if side.__class__ is ast.Call and self._builds_distributed_sampler(side, scope) and \
                    self._never_built(side, scope) and self._read_from_options(value.test, scope, 3):
                return text(value.test)
        return ""

    def _read_from_options(self, test: ast.AST, fn: Function, depth: int) -> bool:
        """A name the test reads is a command-line option, directly (`args.num_gpus`) or as the
        parameter the callers hand one (depth levels up): the launch decides it, not the code
        (a `partial(make_loader, distributed=False)` is the code's own choice)."""
        if depth <= 0:
            return False
        for node in walk(test):
            if node.__class__ is ast.Attribute and option_value(node, self.program) is not None:
                return True
            if node.__class__ is ast.Name and node.id in fn.params and not fn.bindings.get(node.id):
                if any(self._read_from_options(given, caller, depth - 1)
                       for given, caller in fn.arguments.get(node.id, [])):
                    return True
        return False

    def _sampler_kind(self, sampler: Optional[ast.AST], fn: Function, depth: int = 4) -> str:
        if sampler is None or is_const(sampler, None):
            return "none"
        if depth <= 0:
            return "custom"  # (`sampler = sampler if ... else ...`: not followed round again)
        kinds = set()
        for value, scope in self.program.values_of(sampler, fn):
            if isinstance(value, ast.Call) and (self._never_built(value, scope) or self.switched_off(scope, value)):
                # `if use_distributed_sampler:` left False by every caller (operator_learning); `if
                # self.distributed:` a constructor's `distributed=False` no construction changes
                continue
            if isinstance(value, ast.IfExp):
                # `RandomSampler(ds) if split == "train" else SequentialSampler(ds)`: either side's;
                # `DistributedSampler(ds) if distributed else None` with `distributed=False` left
                # at its default by every call (RVD's load_data): the side it takes
                said = text(value.test)
                candidates = (value.orelse,) if never_true(self.callers(), scope, said) or \
                    self.asked_before_group(value.test, scope) else \
                    (value.body,) if never_true(self.callers(), scope, f"not {said}") else (value.body, value.orelse)
                sides = {self._sampler_kind(side, scope, depth - 1) for side in candidates}
                if "distributed" in sides:
                    return "distributed"
                kinds |= sides
                continue
            body = text(value, 100000)
            if "Distributed" in body or (isinstance(value, ast.Call) and self._builds_distributed_sampler(value, scope)):
                return "distributed"
            if isinstance(value, ast.Call):
                # `smp = pick_sampler(ds, acc)`, a helper returning DistributedSampler(...) where
                # there are several processes (None otherwise): what its returns are
                target = self.program.callee(value.func, scope)
                if target is None and value.func.__class__ is ast.Attribute:
                    # (`self._get_sampler(...)`, a method of the object's own class: WavCaps)
                    found = self.program.resolve(value.func, scope)[0]
                    target = found[0] if len(found) == 1 else None
                if self.program.is_function(target) and not isinstance(target.node, ast.Module) and target.returned:
                    returned = {self._sampler_kind(r, target, depth - 1) for r in target.returned}
                    if "distributed" in returned:
                        return "distributed"
                    if returned and returned <= {"plain", "none"}:
                        # `get_weighted_sampler(ds)` returning `WeightedRandomSampler(w, n)`: plain;
                        # one returning None alone where the way in switches its DistributedSampler
                        # off (`if not is_distributed: return None`): none
                        kinds |= returned
                        continue
            if is_const(value, None):
                kinds.add("none")
            elif isinstance(value, ast.Call) and self._plain_sampler(value, scope):
                kinds.add("custom" if self.mentions_rank(value, scope) else "plain")
            elif isinstance(value, ast.Call) and last_name(value.func) == "BatchSampler" and \
                    (wrapped := batch_sampler_source(value)) is not None:
                kinds.add(self._sampler_kind(wrapped, scope, depth - 1))
            elif isinstance(value, ast.Call) and self._trainer_base_sampler(value, scope):
                kinds.add("plain")
            else:
                kinds.add("custom")
        if "distributed" in kinds:  # BatchSampler(DistributedSampler(...) or RandomSampler(...))
            return "distributed"
        if "custom" in kinds:
            return "custom"
        return "plain" if "plain" in kinds else "none"

    def _sampler_values(self, sampler: ast.AST, fn: Function) -> list:
        """What a sampler expression may hold (values_of), and for a call to a local helper the
        samplers it returns (`get_weighted_sampler(ds)` -> `WeightedRandomSampler(...)`)."""
        found = []
        for value, scope in self.program.values_of(sampler, fn):
            found.append((value, scope))
            target = self.program.callee(value.func, scope) if value.__class__ is ast.Call else None
            if target is not None and self.program.is_function(target) and not isinstance(target.node, ast.Module):
                found += [held for r in target.returned for held in self.program.values_of(r, target)]
        return found

    def _trainer_base_sampler(self, call: ast.Call, fn: Function) -> bool:
        """`self._get_train_sampler()` in a Hugging Face Trainer subclass that does not override
        it, where the project pins transformers at 4.30 or later: the library's own method, a
        RandomSampler (or a length-grouped one) - from 4.30 the Trainer leaves the sharding to the
        accelerator.prepare() its own get_train_dataloader calls. Before 4.30, or with no pin,
        it returned a DistributedSampler on several processes: not known, not claimed."""
        func = call.func
        if not (func.__class__ is ast.Attribute and func.attr == "_get_train_sampler"
                and func.value.__class__ is ast.Name and func.value.id == "self"):
            return False
        klass = fn.cls
        if klass is None or not hf_trainer_class(self.program, klass) or self.program.method(klass, "_get_train_sampler"):
            return False
        floor, _ = program_floor(self.program, "transformers")
        return floor is not None and floor >= (4, 30)

    def _plain_sampler(self, call: ast.Call, fn: Function) -> bool:
        """torch's RandomSampler & co., not a class of the source's own that took the name
        (MTLFace's `RandomSampler(Sampler)` shards by rank in its __iter__)."""
        return last_name(call.func) in PLAIN_SAMPLERS and not self.program.is_class(self.program.callee(call.func, fn))

    def _default_side_to_evaluate(self, fn: Function, call: ast.Call) -> bool:
        """Per call: the loader sits on the side of a builder's test that only its parameter's
        default takes (`def get_loader(self, rank=-1, world_size=-1): if world_size > 0:
        ...sampler... else: return DataLoader(self)`). The calls that hand that parameter a world
        size take the other side; the loader here is built only for the calls that leave it at
        its default, and none of them is read by a training loop (CHORE's validation loader)."""
        if isinstance(fn.node, ast.Module) or fn.node is None:
            return False
        params = [a.arg for a in fn.node.args.posonlyargs + fn.node.args.args]
        defaults = dict(zip(params[len(params) - len(fn.node.args.defaults):], fn.node.args.defaults))
        ranks = self.program.ranks
        for cond, _ in fn.__dict__.get("_call_conds", {}).get(id(call), ()):
            counted = _count_test(cond, fn)
            if counted is None or counted[0] not in defaults:
                continue
            name, holds = counted
            default = _int_constant(defaults[name])
            if default is None or not holds(default) or any(holds(n) for n in _COUNTS):
                continue  # not a side only the default (a sentinel no world size equals) takes
            sites = [(c, e.node) for c, e in self.callers().get(fn, []) if isinstance(e.node, ast.Call)]
            if not sites:
                return False
            for caller, site in sites:
                given = argument_at(fn, site, name)
                if given is None:
                    return False  # handed through `**kwargs` or `*args`: not told
                if given is not defaults[name]:
                    if not ranks._world_size(given, caller):
                        return False  # a value the lint cannot place: not settled
                    continue  # a world size: the other side
                bound = self.bound_name(caller, site)
                if not bound or (id(caller), bound) in self._training_names():
                    return False  # the default's loader feeds training there
            return True
        return False

    def _counts_apart(self, fn: Function, call: ast.Call) -> bool:
        """The loader's test on a count and the one the process group is set up under never hold
        together: SimCLS's `if is_mp:` (`is_mp = len(gpus) > 1`) builds the plain loader on its
        `else:`, and `if len(gpus) == 1: ... else: init_process_group(...)`."""
        switches = self._switches()
        if not switches:
            return False
        mine = [_count_test(c, fn) for c, _ in fn.__dict__.get("_call_conds", {}).get(id(call), ())]
        setups = [_count_test(c, fn) for c in switches if c not in getattr(switches, "shut", ())]
        for here in filter(None, mine):
            for there in filter(None, setups):
                if here[0] == there[0] and not any(here[1](n) and there[1](n) for n in _COUNTS):
                    return True
        return False

    def _typed_away(self, call: ast.Call, fn: Function) -> bool:
        """The call sits on the side of `if type(data) == DataLoader:` (or `isinstance(data,
        DataLoader)`) that a parameter's type rules out: every caller hands fn an instance of
        that class (`fit_epoch(net, opt, loader)` with `loader = DataLoader(...)`)."""
        if isinstance(fn.node, ast.Module):
            return False
        for cond, _ in fn.__dict__.get("_call_conds", {}).get(id(call), ()):
            test = _test_of(cond)
            if not (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)):
                continue
            inner = test.operand
            param = kind = None
            if isinstance(inner, ast.Call) and last_name(inner.func) == "isinstance" and len(inner.args) == 2:
                param, kind = inner.args
            elif isinstance(inner, ast.Compare) and len(inner.ops) == 1 and isinstance(inner.ops[0], (ast.Eq, ast.Is)) \
                    and isinstance(inner.left, ast.Call) and last_name(inner.left.func) == "type" and inner.left.args:
                param, kind = inner.left.args[0], inner.comparators[0]
            if not (isinstance(param, ast.Name) and param.id in fn.params and not fn.bindings.get(param.id)):
                continue
            wanted = last_name(kind) if isinstance(kind, (ast.Name, ast.Attribute)) else None
            passed = fn.arguments.get(param.id, [])
            if wanted and passed and all(
                    values and all(isinstance(v, ast.Call) and last_name(v.func) == wanted for v in values)
                    for values in (self._arriving(arg, caller) for arg, caller in passed)):
                return True
        return False

    def _arriving(self, arg: ast.AST, caller: Function) -> list:
        """The values an argument may hold where it is passed: for a name, the bindings that reach
        the call (`ds = DataLoader(ds, ...)` after `ds = TensorDataset(...)`: the loader)."""
        if isinstance(arg, ast.Name):
            found = reaching.reaching_values(caller.node, arg.id, arg)
            if found:
                return found
        return [v for v, _ in self.program.values_of(arg, caller) if v is not arg]

    def _never_built(self, call: ast.Call, fn: Function) -> bool:
        """Every way into fn leaves the call on a side that does not run (ruled_out: a switch
        its callers leave at a false default or pass a constant against)."""
        if isinstance(fn.node, ast.Module):
            return False
        if any(start <= call.lineno <= end for start, end in fn.__dict__.get("_dead_spans") or ()):
            return True  # (a side the walk skipped: no way in takes it)
        if not fn.__dict__.get("_call_conds", {}).get(id(call)):
            return False
        sites = self.callers().get(fn, [])
        # (a reference - `mp.spawn(train, args=(cfg, 2))` - hands the arguments another way: its
        # call's own arguments are not the function's)
        return bool(sites) and all(event.kind == "call" and isinstance(event.node, ast.Call)
                                   and ruled_out(fn, call, event.node, program=self.program) for _, event in sites)

    def samplers(self, loaders: list[LoaderFact]) -> list[SamplerFact]:
        program = self.program
        found_set_epochs = [(fn, call, guards, loops) for fn, call, guards, loops in self.calls()
                            if isinstance(call.func, ast.Attribute) and call.func.attr == "set_epoch"]
        found_set_epochs += [(fn, bound, guards, loops) for fn, call, guards, loops in self.calls()
                             for bound in [_bound_set_epoch(fn, call)] if bound is not None]
        # `return loader, sampler.set_epoch` (the bound method handed on, called elsewhere by
        # whatever keeps it): counted as a call, in a loop (where it is called is not known)
        found_set_epochs += [(fn, ast.copy_location(ast.Call(func=node, args=[], keywords=[]), node), (), 1)
                             for fn in self.functions for node in _set_epoch_handed_on(fn)]
        # `data_loader.sampler.epoch = engine.state.epoch` (an ignite handler of the DeepSeismic
        # kind): set_epoch only stores the epoch, so storing it is the same call; counted as in
        # a loop (a handler's caller is not in the source)
        found_set_epochs += [(fn, ast.copy_location(ast.Call(
            func=ast.Attribute(value=node.targets[0].value, attr="set_epoch", ctx=ast.Load()),
            args=[node.value], keywords=[]), node), (), 1)
            for fn in self.functions for node in fn.own
            if node.__class__ is ast.Assign and len(node.targets) == 1
            and node.targets[0].__class__ is ast.Attribute and node.targets[0].attr == "epoch"
            and "sampler" in (last_name(node.targets[0].value) or "").lower()]
        # `trainer.add_event_handler(Events.EPOCH_STARTED, lambda engine: sampler.set_epoch(
        # engine.state.epoch))`: a handler an Engine calls once per epoch, counted as in a loop
        found_set_epochs += [(fn, call, (), 1) for fn in self.functions for node in fn.own
                             if node.__class__ is ast.Lambda for call in walk(node.body)
                             if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                             and call.func.attr == "set_epoch"]
        # (`reporter.set_epoch(ep)` on a progress reporter of the script's own: a set_epoch that
        # stores a number for its logs, on no sampler)
        found_set_epochs = [entry for entry in found_set_epochs
                            if not _not_a_sampler(program, entry[1].func.value, entry[0])]
        set_epochs = [(fn, call, loops) for fn, call, _, loops in found_set_epochs]
        epochs = _EpochIndex(set_epochs)
        # the ones on a side of a switch no way in takes (asked once, not once per sampler)
        # (or under a test the options, as launched, make false: `if not args.use_batch_sampler:
        # loader.sampler.set_epoch(e)` with that option on by default)
        switched = {id(call) for fn, call, _ in set_epochs if self.switched_off(fn, call) or self._never_built(call, fn)}
        # (not the distributed switch itself - `if args.distributed: sampler.set_epoch(e)`: the
        # run that builds the sampler is the one that turns it on)
        launched_off = {id(call) for fn, call, _ in set_epochs
                        if any(off_at_launch((cond,), program) and not DIST_SWITCH.search(cond[0])
                               for cond in fn.__dict__.get("_call_conds", {}).get(id(call), ()))}
        ranked = {id(call): rank_guards(guards) for _, call, guards, _ in found_set_epochs}  # the rank tests around each
        iterated = self._iterated()
        epoch_loop = any("epoch" in text(n.target).lower()
                         for f in program.files for n in f.of(ast.For, ast.AsyncFor)) or any(
            # `while True: epoch += 1; for x in loader: ...` (ended by a step count): an epoch loop
            any(isinstance(inner, (ast.For, ast.AsyncFor)) for stmt in n.body for inner in walk(stmt))
            and any("epoch" in (dotted(t) or "").lower() for stmt in n.body if isinstance(stmt, ast.AugAssign)
                    for t in [stmt.target])
            for f in program.files for n in f.of(ast.While)) or any(
            # `for iteration in range(max_iter): if iteration % epoch_size == 0: batches =
            # iter(DataLoader(...)); epoch += 1` then `next(batches)`: a loop of steps that
            # counts epochs and draws its batches one by one (the SSD / RetinaFace trainers)
            _counts_epochs(n) for f in program.files for n in f.of(ast.For, ast.While)) or any(
            # a loop around the training loop, whatever its variable is called (`for e in
            # range(args.max_epoch): for split in splits: for batch in loaders[split]: ...
            # loss.backward()`): every pass of it is an epoch
            _around_training(n) for f in program.files for n in f.of(ast.For, ast.While))
        by_line = {(l.location.file, l.location.line): l for l in loaders}
        found = []
        for fn, call, _, _ in self.calls():
            if not self._builds_distributed_sampler(call, fn) or self._never_built(call, fn) or \
                    self.switched_off(fn, call) or self.off_at_launch_only(fn):
                continue  # (a sampler on a side of its builder's switch no call takes)
            if off_at_launch(tuple((cond, flag) for cond, flag in fn.__dict__.get("_call_conds", {}).get(id(call), ())
                                   if not flag and not DIST_SWITCH.search(cond)), program):
                # (or under a test the run as launched makes false: `if cfg.DATALOADER.MODE ==
                # "random":` where every config the launches name sets "episode"; not a plain
                # flag, `if args.multi_gpu and args.dist:` - the switches of the run asked for)
                continue
            if self._keyed_unread(fn, call):
                continue  # (`samplers = {"train": ..., "val": ...}` whose "val" nothing reads)
            shuffle = keyword(call, "shuffle")
            if shuffle is None and any(kw.arg is None for kw in call.keywords):
                # `DistributedSampler(ds, **sampler_args)`, a dict literal that says shuffle=False
                shuffle = (call_keywords(program, call, fn) or {}).get("shuffle")
            if shuffle is None and len(call.args) > 3:
                shuffle = call.args[3]
            if isinstance(shuffle, ast.Name) and shuffle.id in fn.params and not fn.bindings.get(shuffle.id):
                # `shuffle=shuffle` of a builder that makes the sampler only under `if parallel:`:
                # what the calls that take that side hand it (diffae's evaluation loaders)
                given = given_constants(self.callers(), fn, shuffle.id,
                                        taken=fn.__dict__.get("_call_conds", {}).get(id(call), ()), program=program)
                shuffle = ast.Constant(False) if given and not any(given) else shuffle
            name = self.bound_name(fn, call) or self._bound_by_conditional(fn, call) or _dict_held(fn, call)
            loader_name, loader_at, fed = "", None, ""
            # the loader that takes it by name, in this function first (two builders of one class
            # that both call their sampler `order`: each feeds its own loader)
            span = (getattr(fn.node, "lineno", 0), getattr(fn.node, "end_lineno", 1 << 30))
            # (and a BatchSampler made around it: `te_batch = BatchSampler(te_sampler, 1, drop_last=True)`,
            # then `DataLoader(ds, batch_sampler=te_batch)` - the loader this sampler feeds)
            wrapping = _batch_samplers_of(fn, name) if name and "." not in name else []
            named = [fact for fact in loaders if name and (_names_sampler(fact.sampler_text, name) or any(
                _names_sampler(fact.sampler_text, outer) for outer in wrapping)) and fact.location.file == fn.file.display]
            mine = [fact for fact in named if span[0] <= fact.location.line <= span[1]]
            # (of a name bound again for the next loader - bddm's `sampler` for the training then
            # the validation loader - the first loader below this binding takes this one)
            below = sorted((f for f in mine if f.location.line >= call.lineno), key=lambda f: f.location.line)
            for fact in (below[:1] or mine[-1:] if mine and not isinstance(fn.node, ast.Module) else named):
                loader_at, fed = fact.location, fact.name
            if loader_at is None:
                # `samplers = [DistributedSampler(ds) for ds in sets]`, then `loaders = [DataLoader(ds,
                # sampler=s) for ds, s in zip(sets, samplers)]`: one loader per sampler, in a list
                fact = _fed_in_comprehension(fn, call, by_line)
                if fact is not None:
                    loader_at, fed = fact.location, fact.name
            if name in ("sampler", "batch_sampler") or not name:
                # built inline: DataLoader(ds, sampler=DistributedSampler(ds)) -> the loader's name
                for node in fn.own_of(ast.Call):
                    if any(_holds(kw.value, call) for kw in node.keywords):
                        fact = by_line.get((fn.file.display, node.lineno))
                        loader_name = fact.name if fact else ""
                        loader_at = fact.location if fact else loader_at
                name = f"{loader_name}.sampler" if loader_name else name
            holder = None  # (the function building the loader a helper's sampler feeds)
            if (name == fn.name or (loader_at is None and name and _returned_alone(fn, name))) \
                    and not isinstance(fn.node, ast.Module):
                # `sampler=make_sampler(ds, shuffle=True)`: the loaders that take what the helper returns
                # (also `sampler = DistributedSampler(ds) if n > 1 else None; return sampler`)
                # (before the set_epoch calls are matched: `train_loader.sampler.set_epoch(e)` in
                # the caller sets this one, not another loader's)
                loader_at, fed, shuffle, holder = self._fed_from_helper(fn, by_line, loader_at, fed, shuffle)
            own = name.split(".")[0] if "." not in name else ""
            matched = []
            matched_calls: list = []
            constant, pinned = None, ""
            pinned_by = ""  # the rank test that alone advances the pinned name
            invariant: Optional[tuple[str, Location]] = None  # (the argument, the loop it stays put in)
            more: list = []  # the constant set_epoch calls of other loops (each loop repeats its order)
            stilled: set[int] = set()  # those loops (one finding per loop, however many calls in it)
            # every set_epoch matched runs outside any loop, and so does every other one (one in
            # a loop the matching missed - `dataset.set_epoch(e)` handing it on - may be it)
            # (and every one of them is seen called: a hook's `before_epoch` that a runner calls by
            # name - `getattr(hook, "before_epoch")(self)` in its epoch loop - is called no one
            # knows how often)
            once = all(loops == 0 and not self.in_loop(sfn) and not self._runs_per_draw(sfn)
                       and self._called_from_the_top(sfn) for sfn, _, loops in set_epochs)
            off = None  # a set_epoch on a side of a switch no way in takes
            # (a sampler built only where the options as launched say not - `DistributedSampler(ds)
            # if args.distributed else None` - is judged on the launch that builds it)
            sampler_off = bool(off_at_launch(fn.__dict__.get("_call_conds", {}).get(id(call), ()), program)) or \
                _under_launched_off_choice(fn, call, program)
            stale = None  # a set_epoch on the sampler the previous pass built (_rebuilt_after)
            for sfn, scall, loops in set_epochs:
                if self._never_runs(sfn, scall):
                    continue  # `if sampler is not None: sampler.set_epoch(e)`, no caller hands one in
                if id(scall) in switched or (id(scall) in launched_off and not sampler_off):
                    # `if self.ddp: sampler.set_epoch(epoch)` in a trainer every construction
                    # leaves at its default `ddp=False`: it never runs (nor one under a test the
                    # options as launched make false, where the sampler is built all the same)
                    off = off or loc(sfn, scall)
                    continue
                receiver = scall.func.value
                rname = last_name(receiver) or ""
                if not rname and isinstance(receiver, ast.Subscript) and isinstance(receiver.slice, ast.Constant) \
                        and isinstance(receiver.slice.value, str):
                    rname = receiver.slice.value  # `loaders["train_sampler"].set_epoch(epoch)`
                elif not rname and isinstance(receiver, ast.Subscript):
                    # `self.train_samplers[i].set_epoch(epoch)`: an element of the list of samplers
                    rname = last_name(receiver.value) or ""
                # (`other_loader.sampler.set_epoch(e)` sets that loader's sampler, whatever its name)
                elsewhere = _another_loaders(program, receiver, sfn, fed or loader_name, loader_at, by_line) \
                    or _handed_another_sampler(program, receiver, sfn, call, fn)
                by_sampler_name = (rname in ("sampler", "batch_sampler", "train_sampler")
                                   or (dotted(receiver) or "").endswith(".sampler")) and not elsewhere
                if _another_sampler_here(program, receiver, sfn, call):
                    continue
                if _rebuilt_after(sfn, scall):
                    stale = stale or loc(sfn, scall)
                    continue
                ok = (own and rname == own and not elsewhere) or by_sampler_name \
                    or any(v is call for v, _ in program.values_of(receiver, sfn)) \
                    or (isinstance(receiver, ast.Name)
                        and any(v is call for v, _ in program.unpacked(receiver.id, sfn))) \
                    or self._returned_to(receiver, sfn, fn, call) \
                    or self._kept_by_instance(receiver, sfn, call) \
                    or _unknown_receiver(program, receiver, sfn) \
                    or _read_by_its_key(receiver, fn, call, own) \
                    or not own
                if ok:
                    matched.append(loc(sfn, scall))
                    matched_calls.append(scall)
                    if sfn.cls is not None and "set_epoch" in sfn.cls.methods:
                        once = False  # a class of its own that hands set_epoch on (a batcher's)
                    # (or a name set once and never advanced: `epoch_iter = 0`, `set_epoch(epoch_iter)`)
                    # (or one only a rank test advances: `if not rank: epoch += 1`, then every rank's
                    # `set_epoch(epoch)` - the other ranks' epoch never moves)
                    advanced_by = rank_advanced(program, sfn, scall.args[0].id) \
                        if scall.args and isinstance(scall.args[0], ast.Name) and (loops > 0 or self.in_loop(sfn)) else ""
                    if scall.args and (isinstance(scall.args[0], ast.Constant) or (
                            isinstance(scall.args[0], ast.Name)
                            and pinned_constants(program, sfn, scall.args[0].id) is not None)) and \
                            (loops > 0 or self.in_loop(sfn)) and not self._evaluates(sfn) and \
                            not epochs.varying_beside(sfn, scall) and not epochs.varying_elsewhere(sfn, scall) \
                            or advanced_by and not self._evaluates(sfn):
                        if _another_loop(sfn, scall, stilled):
                            if constant is not None:
                                more.append((constant, pinned, invariant))
                            constant, invariant = loc(sfn, scall), None
                            pinned = scall.args[0].id if isinstance(scall.args[0], ast.Name) else ""
                            pinned_by = advanced_by
                    elif scall.args and (held := loop_invariant(program, sfn, scall, scall.args[0])) is not None \
                            and not self._evaluates(sfn) and (not epochs.varying_beside(sfn, scall) \
                                                              and not epochs.varying_elsewhere(sfn, scall)
                                                              or _overwritten_before_use(sfn, scall)):
                        # (the loop asked first: answered once per loop and value, where the scans
                        # of every other set_epoch are a pair of walks per call)
                        if _another_loop(sfn, scall, stilled):
                            # `for epoch in range(n): sampler.set_epoch(args.epoch)`: a value the
                            # loop around it never moves is a constant for every pass of it
                            if constant is not None:
                                more.append((constant, pinned, invariant))
                            constant, pinned = loc(sfn, scall), ""
                            invariant = (text(scall.args[0]), loc(sfn, held))
            if not matched and _reseeded_per_pass(fn, call):
                # rebuilt in the epoch loop with a seed that moves with it (`seed=base + epoch`):
                # each pass shuffles anew, as set_epoch(epoch) would make it
                matched.append(loc(fn, call))
            names = {n for n in (own, loader_name, name, fed) if n}
            returned = {r.value.id for r in fn.own_of(ast.Return) if isinstance(r.value, ast.Name)}
            if (fn.name in names or names & returned) and not isinstance(fn.node, ast.Module):
                # `return DataLoader(...)` from a builder: the names its callers bind the loader
                # to (`self.val_loader = make_eval_loader(ds)`), not the loop variable's name
                # (those of the calls that can take the sampler's side: `get_loaders(train_set=False)`
                # binds no loader of the `if train_set:` side)
                taking = [(c, e) for c, e in self.callers().get(fn, [])
                          if isinstance(e.node, ast.Call) and not ruled_out(fn, call, e.node, program=self.program)]
                names |= {self.bound_name(c, e.node) for c, e in taking} - {""}
                # (and handed on as an argument, `_train(rank, model, from_path(...))`: the names
                # the callee knows it by, its parameter and the field it keeps it in)
                for c, e in taking:
                    names |= self._handed_names(c, e.node)
                # and one builder further out: `train_loader = prepare_dataloader(ds)` handed back
                # as `return train_loader, dev_loader` to `train_data, dev_data = get_dataloaders()`
                for c, e in taking:
                    bound = self.bound_name(c, e.node)
                    if bound and not isinstance(c.node, ast.Module):
                        names |= self._names_outside(c, bound) - {bound}
            elif not isinstance(fn.node, ast.Module):
                # `return dataset, dataloader`: what the callers unpack at its place
                for held in sorted(n for n in (own, loader_name, name, fed) if n):
                    names |= self._names_outside(fn, held) - {held}
            if fed and holder is not None and holder is not fn:
                # (a sampler a helper returns, fed to a loader another builder returns in turn:
                # `sampler = create_sampler(ds)`, `loader = DataLoader(ds, sampler=sampler)`,
                # `return loader` - the names that builder's callers bind the loader to)
                if _returned_alone(holder, fed):
                    names |= {self.bound_name(c, e.node) for c, e in self.callers().get(holder, [])
                              if isinstance(e.node, ast.Call)} - {""}
            across = any(iterated.get(n) for n in names) if any(n in iterated for n in names) else epoch_loop
            if loader_at is not None and iterated.get(f"@{loader_at.file}:{loader_at.line}"):
                across = True  # built inline as the argument of a function that iterates it again and again
            evaluated = {n for n in names if iterated.get(n) and self._read_only_to_evaluate({n})}
            if across and evaluated and evaluated != names and not self._one_loader(fn, call):
                # a builder serving the training and the evaluation loader (`make_loader(ds,
                # mode="valid")`): the evaluation's passes again and again reorder nothing that
                # matters; the training loader's passes decide (read once by `iter()`/`next()`: none)
                rest = [n for n in names - evaluated if n in iterated]
                if rest:
                    across = any(iterated.get(n) for n in rest)
            if across and self._one_loader(fn, call) and self._read_only_to_evaluate(names):
                across = False  # an evaluation visits every sample whatever the order (CasMVSNet's test loader)
            if across and name and self._kept_in_grad_off(fn, name):
                # built and read in a function that runs with gradients off (RNNLogic's
                # `@torch.no_grad() def compute_H`): an evaluation's pass, whatever other loops
                # elsewhere call their loaders by the same names
                across = False
            feeds = by_line.get((loader_at.file, loader_at.line)) if loader_at is not None else None
            if across and feeds is not None and feeds.evaluation and not feeds.trains and \
                    (self._one_loader(fn, call) or (bool(feeds.name) and bool(
                        self._names_outside(fn, feeds.name) & self._picked_to_evaluate())) or (bool(EVAL_NAME.search(name or "")) and (
                        isinstance(fn.node, ast.Module) or len(self.callers().get(fn, [])) <= 1))):
                # the loader's own facts: an evaluation loader no training loop reads (OLMo); also
                # one built in a loop over evaluation sets (`test_sampler` per benchmark) by a
                # function that runs once
                across = False
            if across and feeds is not None and feeds.evaluation and not feeds.trains and not feeds.name \
                    and _iterated_inline(fn, loader_at):
                # `for perm in DataLoader(edges, bs, sampler=DistributedSampler(edges)):` in an
                # evaluation (kubeflow-GNN's test()): a pass that reads every item, built afresh
                # each call, named nowhere - whatever order it reads them in
                across = False
            if across and feeds is not None and not feeds.trains and feeds.name and not TRAIN_NAME.search(feeds.name) and \
                    any(f.trains for f in loaders if f is not feeds) and \
                    not any(self._trains(fn, n, call=call) for n in names) and self._read_without_backward(names):
                # a loader no backward reads, beside the one the training loop does (an analysis
                # pass over the training set every few epochs, DDP-for-NC's `analysis_loader`):
                # its passes visit every sample whatever the order
                across = False
            if across and feeds is None and names and all(EVAL_NAME.search(n) and not TRAIN_NAME.search(n)
                                                          for n in names) \
                    and not any(self._trains(fn, n) for n in names):
                # `val_sampler` feeding a library's loader (`val_dataset.loader(bs, sampler=...)`,
                # no DataLoader facts): named for evaluation by every name it has, read by no
                # training loop: an evaluation visits every sample whatever the order
                across = False
            if across and loader_at is None and name and self._drawn_once(fn, name):
                across = False
            if across and name and _one_batch_of_a_fresh_loader(fn, name):
                across = False
            dataset = loader_dataset(self.program, call, fn)
            under = ""
            # (calls on both sides of a rank split - `if P and rank == 0: set_epoch(e) ... elif P
            # and rank > 0: set_epoch(e)` - set it on every rank)
            sides = {ranked[id(c)][-1].test.polarity for c in matched_calls if ranked.get(id(c))}
            if matched_calls and all(ranked.get(id(c)) for c in matched_calls) and not {"zero", "nonzero"} <= sides:
                test = ranked[id(matched_calls[0])][-1].test
                if test.polarity in ("zero", "other") and not test.everyone:
                    under = test.text  # `if rank <= 0: ...; train_sampler.set_epoch(epoch)`
            if name and name.split(".")[0] == fn.name and not isinstance(fn.node, ast.Module):
                # a builder's `return DataLoader(ds, sampler=DistributedSampler(ds))`: said by the
                # name its caller iterates epoch after epoch (`train_loader.sampler`), not by the
                # builder's own name (`getDataLoader.sampler` names no object)
                bound = sorted((n for n in names if n.split(".")[0] != fn.name and iterated.get(n)),
                               key=lambda n: (not TRAIN_NAME.search(n), n))
                name = f"{bound[0]}.sampler" if bound else name
            found.append(SamplerFact(
                location=loc(fn, call), name=name or "DistributedSampler(...)",
                shuffle=(shuffle is None or not is_const(shuffle, False, 0)) and not self._ordered_class(call, fn)
                and not (shuffle is None and self._unshuffled_by_default(call, fn))
                and not self._base_never_shuffles(call, fn)
                and not self._advances_itself(call, fn)
                # `DistributedSampler(ds, epoch=epoch)` of a copy that takes it, built each epoch
                and not (keyword(call, "epoch") is not None and not isinstance(keyword(call, "epoch"), ast.Constant)),
                set_epoch=matched, constant_epoch=constant, pinned_epoch=pinned, invariant_epoch=invariant,
                pinned_by_rank=pinned_by,
                more_constant_epochs=more,
                across_epochs=across,
                sharded_by_rank=dataset is not None and not _shards_a_group(call)
                and self.mentions_rank(dataset, fn, strict=True),
                drawn_apart=(drawn := self._drawn_apart(dataset, fn) if dataset is not None else ""),
                drawn_by_rank_seed=bool(drawn) and self._seeds_anything() and seeded_per_rank(self),
                dataset_text=text(dataset) if dataset is not None else "?", loader=loader_at, set_epoch_under=under,
                set_epoch_once=matched[0] if matched and once and matched_calls and across else None,
                unset_loop=self._loop_without_set_epoch(names, matched_calls, set_epochs) if matched_calls and across else None,
                epoch_set_by=self._prepared_loader(loader_at, by_line) or self._ignite_sets_epoch(names)
                or self._fabric_sets_epoch(loader_at, by_line),
                run_by=next((self._engine_runs()[n] for n in sorted(names) if n in self._engine_runs()), None),
                unread=(loader_at is None and _never_read(fn, name)) or _fed_loader_unread(fn, loader_at, fed),
                set_epoch_off=None if matched else off,
                set_epoch_stale=None if matched else stale))
        return found

    @staticmethod
    def _prepared_loader(loader_at: Optional[Location], by_line: dict) -> str:
        """The framework that wraps the loader a sampler feeds and sets its epoch ("" if none)."""
        fact = by_line.get((loader_at.file, loader_at.line)) if loader_at is not None else None
        return fact.prepared_by or "" if fact is not None else ""

    def _called_from_the_top(self, fn: Function, depth: int = 6, stack: tuple = ()) -> bool:
        """Every way into fn starts at a module's top level through calls the source shows (a
        few levels up): none at a method a framework calls by name (a hook's
        `before_train_epoch`, run by `getattr(hook, action)(runner)` in the runner's epoch loop)."""
        if isinstance(fn.node, ast.Module):
            return True
        sites = self.callers().get(fn, [])
        if not sites or fn in stack or depth <= 0:
            return False
        return all(self._called_from_the_top(caller, depth - 1, stack + (fn,)) for caller, _ in sites)

    def _loop_without_set_epoch(self, names: set, matched: list, set_epochs: list) -> Optional[tuple[Location, Location]]:
        """A `for ... in range(...)` loop beside the one that calls set_epoch, in the same
        function and neither inside the other, whose passes read the loader again (iterate it,
        or hand it to a call): a warm-up's epochs (`for e in range(args.warmup_epochs):
        train(train_loader, ...)`) before the epoch loop that sets the epoch. The read and the
        set_epoch, or None."""
        homes: dict = {}
        for sfn, scall, _ in set_epochs:
            if any(scall is c for c in matched):
                homes.setdefault(sfn, []).append(scall)
        within = lambda inner, outer: outer.lineno <= inner.lineno <= (outer.end_lineno or outer.lineno)
        for sfn, calls in homes.items():
            loops = [n for n in sfn.own if n.__class__ in (ast.For, ast.While)]
            setting = [loop for loop in loops if any(within(c, loop) for c in calls)]
            if not setting:
                continue
            for loop in loops:
                if any(within(loop, s) or within(s, loop) for s in setting) or not (
                        loop.__class__ is ast.For and loop.iter.__class__ is ast.Call
                        and last_name(loop.iter.func) == "range"):
                    continue
                for node in (n for stmt in loop.body for n in walk(stmt)):
                    read = node.__class__ is ast.Call and last_name(node.func) not in ("len", "set_epoch") \
                        and any(a.__class__ is ast.Name and a.id in names for a in node.args)
                    read = read or (node.__class__ is ast.For and node.iter.__class__ is ast.Name and node.iter.id in names)
                    if read:
                        return loc(sfn, node), loc(sfn, calls[0])
        return None

    def _drawn_once(self, fn: Function, name: str) -> bool:
        """The sampler (or a BatchSampler around it, bound to the same name) is handed to a
        local class whose `__init__` draws it whole, once (`self.frozen_batches =
        tuple(batch_sampler)`: fairseq's EpochBatchIterator, which then shuffles the frozen
        batches itself by seed + epoch): no later pass reads the sampler again."""
        program = self.program
        for node in fn.own_of(ast.Call):
            slots = [i for i, a in enumerate(node.args) if a.__class__ is ast.Name and a.id == name]
            if not slots:
                continue
            klass = program.callee(node.func, fn)
            init = program.method(klass, "__init__") if program.is_class(klass) else None
            if init is None or isinstance(init.node, ast.Module):
                continue
            params = [a.arg for a in init.node.args.posonlyargs + init.node.args.args][1:]
            held = {params[i] for i in slots if i < len(params)}
            reads = [n for n in init.own_of(ast.Name) if n.id in held]
            drawn = [n for n in init.own_of(ast.Call) if getattr(n.func, "id", "") in ("tuple", "list")
                     and len(n.args) == 1 and n.args[0].__class__ is ast.Name and n.args[0].id in held]
            if drawn and len(drawn) == len(reads):
                return True
        return False

    def _kept_by_instance(self, receiver: ast.AST, fn: Function, call: ast.Call) -> bool:
        """`self.loader.origin.set_epoch(e)`: an attribute of an instance of a local class that
        keeps the sampler it was given (`self.origin = sampler` in a DataLoader subclass's
        __init__, SCRL): the attribute's values, through the class, hold the sampler built here."""
        if not isinstance(receiver, ast.Attribute) or \
                (isinstance(receiver.value, ast.Name) and receiver.value.id == "self"):
            return False  # `self.sampler` is values_of's own case
        program = self.program
        klass = program.class_of(receiver.value, fn)
        if klass is None:
            return False
        return any(v is call for value, owner in program._attr(klass, receiver.attr)
                   for v, _ in program.values_of(value, owner))

    def _never_runs(self, fn: Function, call: ast.Call) -> bool:
        """Every way into fn decides against a test around the call on one of fn's parameters
        (left at its default None, or given a constant that turns the test off)."""
        sites = [event for _, event in self.callers().get(fn, [])]
        # (a reference - `mp.spawn(fn, args=(...))` - hands its arguments another way: not judged)
        return bool(sites) and all(event.kind == "call" and isinstance(event.node, ast.Call)
                                   and ruled_out(fn, call, event.node, program=self.program) for event in sites)

    def _arguments(self, fn: Function, param: str, depth: int = 3, looped: bool = False) -> set[str]:
        """The names fn's callers pass for its parameter `param`; where a caller passes a
        parameter of its own as it is (`train(model, train_loader)` -> `train_one_epoch(model,
        train_loader)`), what its callers pass, a few levels up. looped: only the calls that run
        more than once (in a loop of the caller, or in a caller that runs in one)."""
        node = fn.node
        positional = [a.arg for a in node.args.posonlyargs + node.args.args]
        offset = 1 if fn.cls is not None and positional[:1] in (["self"], ["cls"]) else 0
        index = positional.index(param) - offset if param in positional else -1
        found = set()
        for caller, event in self.callers().get(fn, []):
            call = event.node
            if not isinstance(call, ast.Call):
                continue
            if looped and not ((event.loops > 0 and not self._loops_run_once(caller, call)) or self.in_loop(caller)):
                continue
            value = keyword(call, param)
            if value is None and 0 <= index < len(call.args):
                value = call.args[index]
            if isinstance(value, (ast.Name, ast.Attribute)) and last_name(value):
                found.add(last_name(value))
                if isinstance(value, ast.Name) and value.id in caller.params and depth > 1 \
                        and not caller.bindings.get(value.id) and caller is not fn:
                    found |= self._arguments(caller, value.id, depth - 1)
            elif isinstance(value, ast.Call):  # `forever(DataLoader(ds, ...))`: the loader by its place
                found.add(f"@{caller.file.display}:{value.lineno}")
        return found

    @staticmethod
    def _bound_by_conditional(fn: Function, call: ast.Call) -> str:
        """`sampler = RandomSampler(ds) if not distributed else DistributedSampler(ds)`: the name."""
        for node in fn.own_of(ast.Assign):
            if isinstance(node.value, ast.IfExp) and \
                    call in (node.value.body, node.value.orelse) and len(node.targets) == 1:
                return last_name(node.targets[0]) or ""
        return ""

    def _ordered_class(self, call: ast.Call, fn: Function) -> bool:
        """A library's sampler whose name says it keeps the order (timm's
        `OrderedDistributedSampler`, transformers' `SequentialDistributedSampler`, a
        `DistributedEvalSampler`): it never shuffles, so no epoch changes its order."""
        name = last_name(call.func) or ""
        return bool(ORDERED_SAMPLER.search(name)) and self.program.callee(call.func, fn) is None

    def _unshuffled_by_default(self, call: ast.Call, fn: Function) -> bool:
        """A local DistributedSampler subclass whose constructor takes `shuffle=False` by default
        and hands it on (catalyst's `DistributedSamplerWrapper(sampler, ..., shuffle=False)`, the
        order left to the sampler it wraps), built without a shuffle argument."""
        klass = self.program.callee(call.func, fn)
        init = self.program.method(klass, "__init__") if self.program.is_class(klass) else None
        if init is None or init.node is None or isinstance(init.node, ast.Module):
            return False
        defaults = param_defaults(init.node)
        names = [a.arg for a in init.node.args.args]
        if "shuffle" not in defaults or not is_const(defaults["shuffle"], False) or any(
                kw.arg is None for kw in call.keywords):
            return False
        # (given by place: the call's i-th argument is the parameter after `self`)
        return "shuffle" not in names or len(call.args) < names.index("shuffle")

    def _base_never_shuffles(self, call: ast.Call, fn: Function) -> bool:
        """A local DistributedSampler subclass whose constructor hands the base `shuffle=False`
        itself (`super().__init__(dataset=inds, ..., shuffle=False)`) and whose own `__iter__`
        reads no epoch (it hands out what a sampler of its own draws): set_epoch only reseeds
        the base's shuffle, which is off, so it changes no order."""
        klass = self.program.callee(call.func, fn)
        if not self.program.is_class(klass):
            return False
        init, step = self.program.method(klass, "__init__"), self.program.method(klass, "__iter__")
        if init is None or init.node is None or isinstance(init.node, ast.Module) or \
                step is None or step.node is None or step.cls is not klass or "epoch" in text(step.node, 100_000):
            return False
        return any(isinstance(c.func, ast.Attribute) and c.func.attr == "__init__" and
                   isinstance(c.func.value, ast.Call) and last_name(c.func.value.func) == "super"
                   and is_const(keyword(c, "shuffle"), False) for c in init.own_calls)

    def _advances_itself(self, call: ast.Call, fn: Function) -> bool:
        """A local sampler class whose own `__iter__` steps its epoch (`self.epoch += 1` after the
        last batch): each pass shuffles anew without a set_epoch call."""
        klass = self.program.callee(call.func, fn)
        if not self.program.is_class(klass):
            return False
        method = self.program.method(klass, "__iter__")
        if method is None or method.node is None or isinstance(method.node, ast.Module):
            return False
        return any(isinstance(n, (ast.AugAssign, ast.Assign)) and any(
            dotted(t) == "self.epoch" for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))
            for n in method.own)

    def _builds_distributed_sampler(self, call: ast.Call, fn: Function) -> bool:
        """`DistributedSampler(ds)`, or a call through a name bound to the class
        (`make = RandomSampler if local_rank == -1 else DistributedSampler; make(ds)`)."""
        if "DistributedSampler" in (last_name(call.func) or "") or \
                (self.program.qualify(call.func, fn) or "").endswith(".DistributedSampler"):
            # (`from torch.utils.data.distributed import DistributedSampler as DistSampler`)
            target = self.program.callee(call.func, fn)
            # a local class is judged by what it is, not its name: IDM's unshuffled
            # `SequentialDistributedSampler(Sampler)` has no epoch to set
            return not self.program.is_class(target) or self._epoch_sampler(target)
        target = self.program.callee(call.func, fn)
        if self.program.is_class(target) and self._derives_distributed(target) and not self._wraps_a_sampler(call, fn):
            return True  # VITS's `DistributedBucketSampler`-alike named otherwise (`BucketSampler`)
        if self.program.is_class(target) and self._epoch_sampler(target) and _shards_by_rank(self.program, target) \
                and not self._wraps_a_sampler(call, fn):
            # a copy of DistributedSampler under another name and base (VFIformer's
            # `DistIterSampler(Sampler)`: num_replicas and rank, an epoch-seeded permutation)
            return True
        if not isinstance(call.func, ast.Name):
            return False
        for value, _ in self.program.values_of(call.func, fn):
            if value is call.func:
                continue
            for alternative in ((value.body, value.orelse) if isinstance(value, ast.IfExp) else (value,)):
                if isinstance(alternative, (ast.Name, ast.Attribute)) and \
                        "DistributedSampler" in (last_name(alternative) or ""):
                    return True
        return False

    def _made_each_pass(self, dataset: ast.AST, fn: Function, call: ast.Call) -> bool:
        """`dataset = TensorDataset(torch.stack(states), actions, returns)` and its loader built
        anew on each pass of a loop (a PPO update over the episode this rank just played): tensors
        the rank made itself are its own data, no one's shard. Not a TensorDataset of what a file
        holds (a split every rank reads whole), nor one built once before the loop."""
        loops = [loop for loop, _ in _fn_loops(fn) if any(n is call for n in walk(loop))]
        values = self.program.values_of(dataset, fn)
        if not loops or not values:
            return False
        if dataset.__class__ is ast.Name:
            # `replay_buffer.clear()`, then `replay_buffer.append(Experience(...))` of this pass's
            # rollouts, then `DataLoader(replay_buffer, ...)`: a buffer this pass filled with what
            # the rank computed (GRPO's experience), read from no file
            fills = [n for n in walk(loops[-1]) if n.__class__ is ast.Call and n.func.__class__ is ast.Attribute
                     and n.func.attr in _FILLS and n.func.value.__class__ is ast.Name
                     and n.func.value.id == dataset.id and n.lineno < call.lineno]
            if fills and not self._reads_a_file([a for n in fills for a in n.args], fn):
                return True
        for value, scope in values:
            if not (scope is fn and isinstance(value, ast.Call) and last_name(value.func) == "TensorDataset"
                    and value.args and any(n is value for n in walk(loops[-1]))):
                return False
            if self._reads_a_file(value.args, fn):
                return False
        return True

    def _reads_a_file(self, exprs: list, fn: Function, steps: int = 4) -> bool:
        """Some value these expressions are computed from (through the names in them, a few
        bindings back) is loaded from a file (`torch.load`, `np.load`, `read_csv`...)."""
        todo, seen = [(e, fn) for e in exprs], set()
        for _ in range(steps):
            more = []
            for expr, scope in todo:
                for n in walk(expr):
                    if isinstance(n, ast.Call) and (last_name(n.func) or "") in FILE_LOADS:
                        return True
                    if isinstance(n, ast.Name) and id(n) not in seen:
                        seen.add(id(n))
                        more += [(v, sc) for v, sc in self.program.values_of(n, scope, 1) if v is not n]
            todo = more[:64]
        return False

    def _read_from_rank_file(self, dataset: ast.AST, fn: Function, steps: int = 8) -> bool:
        """The dataset's tensors come, value by value, from a file whose path holds the rank:
        `TensorDataset(inputs["x"])` where `inputs = self.inputs`, which another method set from
        `pickle.load(open(f"train-rank={self.local_rank}.pkl"))` (MetaICL's pre-made shards).
        Followed through names, fields, subscripts and tensor builders only, not through any
        call's other arguments (a logger built with the rank says nothing of the data)."""
        todo, seen = [(dataset, fn)], set()
        for _ in range(steps):
            more = []
            for node, scope in todo:
                if id(node) in seen:
                    continue
                seen.add(id(node))
                if isinstance(node, ast.Subscript):
                    more.append((node.value, scope))
                elif isinstance(node, ast.Call):
                    name = last_name(node.func) or ""
                    if name in FILE_LOADS and node.args:
                        file = node.args[0]
                        opened = [v for v, _ in self.program.values_of(file, scope, 1) if v is not file] or [file]
                        paths = [v.args[0] if isinstance(v, ast.Call) and v.args and last_name(v.func) == "open"
                                 else v for v in opened]
                        if any(self.mentions_rank(p, scope) for p in paths):
                            return True
                    elif name in TENSOR_BUILDERS:
                        more += [(a, scope) for a in node.args]
                    else:
                        # `RecoData(cfg, np.load(train_path), titles)`: a dataset built on what a
                        # file load hands it (its other arguments say nothing of the data)
                        more += [(a, scope) for a in node.args if isinstance(a, ast.Call)
                                 and (last_name(a.func) or "") in FILE_LOADS]
                elif isinstance(node, (ast.Name, ast.Attribute)):
                    more += [(v, sc) for v, sc in self.program.values_of(node, scope, 1) if v is not node]
            todo = more[:64]
            if not todo:
                break
        return False

    def _wraps_a_sampler(self, call: ast.Call, fn: Function) -> bool:
        """`DistributedProxySampler(RandomSampler(ds, num_samples=...))`: built on another sampler,
        whose own order (and length: often every iteration of the run in one pass) it splits."""
        first = call.args[0] if call.args else None
        return first is not None and any(
            isinstance(v, ast.Call) and (last_name(v.func) or "").lower().endswith("sampler")
            for v, _ in self.program.values_of(first, fn))

    def _derives_distributed(self, klass, depth: int = 4) -> bool:
        """A local class built on torch's DistributedSampler (a base named so, a few levels up)."""
        if any("DistributedSampler" in base for base in klass.bases):
            return True
        return depth > 0 and any(self._derives_distributed(base, depth - 1) for base in self.program.bases(klass))

    def _epoch_sampler(self, klass, depth: int = 4) -> bool:
        """A local sampler class that derives from a DistributedSampler or has set_epoch."""
        if self.program.method(klass, "set_epoch") is not None or \
                any("DistributedSampler" in base for base in klass.bases):
            return True
        return depth > 0 and any(self._epoch_sampler(base, depth - 1) for base in self.program.bases(klass))

    def _fed_from_helper(self, fn: Function, by_line: dict, loader_at, fed: str, shuffle):
        """A DistributedSampler returned by helper fn: the loader whose `sampler=` calls fn, the
        shuffle flag when it is fn's parameter and every call passes a constant for it, and the
        function that builds that loader (None where none is found)."""
        passed = []
        holder = None
        shuffled = None  # the first loader fed where the call leaves shuffling on
        for caller, event in self.callers().get(fn, []):
            # `sampler = data_sampler(ds, shuffle=True)` then `DataLoader(ds, sampler=sampler)`
            bound = self.bound_name(caller, event.node) if isinstance(event.node, ast.Call) else ""
            given = _switched(fn, event.node, shuffle.id) \
                if isinstance(shuffle, ast.Name) and isinstance(event.node, ast.Call) else None
            for node in caller.own_of(ast.Call):
                if any(kw.value is event.node or (
                        bound and isinstance(kw.value, ast.Name) and kw.value.id == bound and kw.arg == "sampler")
                        for kw in node.keywords):
                    fact = by_line.get((caller.file.display, node.lineno))
                    if fact is not None:
                        loader_at, fed, holder = fact.location, fact.name, caller
                        if shuffled is None and given is not False:
                            shuffled = (fact.location, fact.name, caller)
            if isinstance(shuffle, ast.Name) and isinstance(event.node, ast.Call):
                passed.append(given)
        if passed and all(p is False for p in passed):
            shuffle = ast.Constant(False)
        elif shuffled is not None:
            # SDFusion's `data_sampler(ds, shuffle, distributed)` feeds the training loader
            # (shuffle=True) and two evaluation ones: the shuffled one is what DDP804 is about
            loader_at, fed, holder = shuffled
        return loader_at, fed, shuffle, holder

    def _picked_to_evaluate(self) -> set[str]:
        """The loaders a conditional picks on its evaluation side (`loader = self.vl_loader if
        validate else self.tr_loader`, `... if train else test_loader`): the test names the
        pass, whatever the loaders are called (bddm's `vl_loader`). Made once."""
        found = self.__dict__.get("_eval_picks")
        if found is None:
            found = self.__dict__["_eval_picks"] = set()
            for source in self.program.files:
                for node in source.of(ast.IfExp):
                    said = last_name(node.test.operand if isinstance(node.test, ast.UnaryOp) else node.test) or ""
                    negated = isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not)
                    evaluating = bool(EVAL_NAME.search(said)) and not TRAIN_NAME.search(said)
                    training = bool(TRAIN_NAME.search(said)) and not EVAL_NAME.search(said)
                    if not (evaluating or training) or not all(
                            isinstance(side, (ast.Name, ast.Attribute)) for side in (node.body, node.orelse)):
                        continue
                    side = node.body if evaluating != negated else node.orelse
                    found.add(last_name(side) or "")
            found.discard("")
        return found

    def _iterated_alone(self, name: str) -> bool:
        """A loop over the loader named `name` (a name or attribute) whose body runs no
        collective: the ranks do not cooperate on each batch (tensor parallelism would)."""
        cooperating = self._runs_collectives()
        for fn in self.functions:
            for node, _ in _fn_loops(fn):
                if isinstance(node, (ast.For, ast.AsyncFor)) and name in {
                        last_name(n) for n in walk(node.iter) if isinstance(n, (ast.Name, ast.Attribute))}:
                    calls = [c for c in walk(node) if isinstance(c, ast.Call)]
                    if any(self.program.collective(c, fn) for c in calls):
                        continue
                    # (or through what the body calls: a tensor-parallel model's layers gather in
                    # their forward, `collector.forward(batch)` in llama-rlhf's rollout loop)
                    inside = {id(c) for c in calls}
                    if any(id(e.node) in inside and any(t in cooperating for t in e.targets)
                           for e in fn.events if e.kind == "call"):
                        continue
                    return True
        return False

    def _runs_collectives(self) -> set:
        """The functions that run a collective themselves or through what they call (made once)."""
        found = self.__dict__.get("_collective_reach")
        if found is None:
            found = self.__dict__["_collective_reach"] = {fn for fn in self.functions
                                                          if any(e.kind == "collective" for e in fn.events)}
            callers = self.callers()
            todo = list(found)
            while todo:
                fn = todo.pop()
                for caller, event in callers.get(fn, ()):
                    if event.kind == "call" and fn in event.targets and caller not in found:
                        found.add(caller)
                        todo.append(caller)
        return found

    def _iterated(self) -> dict[str, bool]:
        """name -> iterated more than once (a `for` over it inside a loop, or in a function that
        runs in a loop)."""
        out: dict[str, bool] = {}
        for fn in self.functions:
            loops = _fn_loops(fn)
            for node, depth in loops:
                if isinstance(node, (ast.For, ast.AsyncFor)):
                    names = {last_name(n) for n in walk(node.iter) if isinstance(n, (ast.Name, ast.Attribute))}
                    # (not inside epoch loops that the options, as launched, run once: `for
                    # epoch in range(1, args.epochs + 1):` with --epochs defaulting to 1)
                    inside = depth > 0 and not all(runs_once_at_launch(outer, self.program)
                                                   for outer, _ in loops if outer is not node
                                                   and outer.lineno <= node.lineno <= outer.end_lineno)
                    again = inside or self.in_loop(fn)
                    held = {last_name(n) for n in _held(self.program, node.iter, fn)}
                    params = {n.id for n in walk(node.iter) if n.__class__ is ast.Name and n.id in fn.params}
                    if params and not inside:
                        # (fn called in a loop reads again only what the calls in a loop hand it:
                        # `self.train(warmup_loader)` once before `for epoch: self.train(loader)`)
                        handed = [(self._arguments(fn, p), self._arguments(fn, p, looped=True)) for p in params]
                        held -= set().union(*(every - looped for every, looped in handed))
                    names |= held
                    names |= self._iterated_through(node.iter, fn)
                    for name in filter(None, names):
                        out[name] = out.get(name, False) or again
                        if again and name in fn.params:  # `def endless(src): while True: for b in src`
                            # (read once a call, fn called in a loop: the loaders the calls made
                            # in a loop hand it, not a warm-up's handed once before the loop)
                            for arg in self._arguments(fn, name, looped=not inside):
                                out[arg] = True
                            if not inside:
                                for arg in self._arguments(fn, name):
                                    out.setdefault(arg, False)  # (read, once: one pass of its own)
                # `it = iter(loader)` again inside a `while` (StopIteration: a new epoch), or
                # `while True: yield from loader` (an endless generator: DiffuSeq, StyleSwin);
                # `it = enumerate(loader)` made again too, not a loop's own `for i, b in enumerate(loader):`
                kept = {id(n.value) for n in walk(node) if n.__class__ is ast.Assign}
                for sub in walk(node):
                    read = None
                    if isinstance(sub, ast.YieldFrom) and isinstance(sub.value, (ast.Name, ast.Attribute)):
                        read = sub.value
                    if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and (
                            sub.func.id == "iter" or (sub.func.id == "enumerate" and id(sub) in kept)) \
                            and sub.args and isinstance(sub.args[0], (ast.Name, ast.Attribute)):
                        read = sub.args[0]
                    if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and not sub.args \
                            and sub.func.attr == "__iter__" and isinstance(sub.func.value, (ast.Name, ast.Attribute)):
                        read = sub.func.value  # `iterator = iterable.__iter__()` again: iter() spelt out
                    name = last_name(read) if read is not None else None
                    if name:
                        out[name] = True
                        if isinstance(read, ast.Name) and name in fn.params:
                            # `def cycle(iterable): ... it = iter(iterable)` on StopIteration: the
                            # loader each caller hands it is read pass after pass
                            for arg in self._arguments(fn, name):
                                out[arg] = True
            # `self.batches = iter(loader)` once (a trainer's constructor), read by `next()` for
            # as many steps as the dataset holds (sized epochs x images per epoch): one pass
            looped = {id(sub) for node, _ in _fn_loops(fn) for sub in walk(node)}
            for call in fn.own_calls:
                # (`enumerate(loader)` kept and read with `__next__()`: an iterator as iter() makes)
                if isinstance(call.func, ast.Name) and call.func.id in ("iter", "enumerate") and len(call.args) == 1 \
                        and isinstance(call.args[0], (ast.Name, ast.Attribute)) and id(call) not in looped \
                        and (call.func.id == "iter" or _kept_outside_loops(fn, call)):
                    name = last_name(call.args[0])
                    if name:
                        out[name] = out.get(name, False) or self.in_loop(fn)
        # an ignite Engine's `trainer.run(train_loader, max_epochs=n)`: the engine reads the
        # loader pass after pass and sets no sampler's epoch itself
        out.update(dict.fromkeys(self._engine_runs(), True))
        return out

    def _iterated_through(self, iterable: ast.AST, fn: Function) -> set:
        """`for data, target in data_iterator:` over an instance of a local class whose `__iter__`
        reads a loader of its own (`for output in self.dataloader: yield ...`, fcos-simple's
        DataIterator): each pass of the loop over the instance is a pass over that loader."""
        if iterable.__class__ is ast.Call and iterable.func.__class__ is ast.Name and \
                iterable.func.id in ("enumerate", "iter") and iterable.args:
            iterable = iterable.args[0]  # `enumerate(data_iterator, start=1)`
        if iterable.__class__ not in (ast.Name, ast.Attribute):
            return set()
        klass = self.program.class_of(iterable, fn)
        method = self.program.method(klass, "__iter__") if klass is not None else None
        if method is None or method is fn:
            return set()
        return {last_name(n) for loop, depth in _fn_loops(method) if depth == 0 and loop.__class__ is ast.For
                for n in walk(loop.iter) if n.__class__ in (ast.Name, ast.Attribute)} - {None}

    def _engine_runs(self) -> dict[str, Location]:
        """loader name -> where an ignite Engine runs it for more than one epoch (`trainer.run(
        loader, max_epochs=n)`); worked out once."""
        found = self.__dict__.get("_engine_runs_seen")
        if found is None:
            found = self.__dict__["_engine_runs_seen"] = {}
            for fn in self.functions:
                for call in fn.own_calls:
                    passes = _engine_passes(call, fn)
                    if passes is not None and isinstance(call.args[0], (ast.Name, ast.Attribute)) and \
                            not is_const(passes, 0, 1) and (name := last_name(call.args[0])):
                        found.setdefault(name, loc(fn, call))
        return found

    def _drawn_apart(self, dataset: ast.AST, fn: Function, depth: int = 2) -> str:
        """Where (and what) an unseeded draw picks or orders the dataset's items ("" if none): the
        dataset is made by a local class whose constructor draws (ITEM_DRAWS: `entry_ids =
        torch.randperm(n)`, then keeps `index_map[entry_ids[k:]]`), or split by a draw with no
        seed of its own (`train, val = random_split(ds, [a, b])` with no generator=,
        `train_test_split(...)` with no random_state=). Only where the program seeds nothing at
        all, or seeds each process with its rank (scMETH's `seed = args.seed + get_rank()`, then a
        datasets `train_test_split` with no seed=): a seeding alike on every rank draws alike."""
        if self._seeds_anything() and not seeded_per_rank(self) and "*" in self._alike_streams():
            return ""
        program = self.program
        if program.ranks.live_spawn_targets() and fn not in self._spawn_reach():
            return ""  # (the launcher draws once and hands the datasets to the ranks it starts)
        # (`train, val = random_split(...)`: the call an unpacking takes its items from)
        unpacked = reaching.reaching_values(fn.node, dataset.id, dataset, unpacked=True) \
            if dataset.__class__ is ast.Name and fn.node is not None else None
        values = [(dataset, fn), *program.values_of(dataset, fn, depth), *((v, fn) for v in unpacked or ()),
                  *program.attr_unpacked(dataset, fn),
                  # (`train, val = load(path)`: what that place of load's returned tuple holds)
                  *(program.unpacked(dataset.id, fn) if dataset.__class__ is ast.Name else ())]
        # (`create_loader(dataset_train, ...)` building the sampler over its parameter: what the
        # callers hand it, and what they bind that to; timm's loader factory)
        # (and, handed a name a caller unpacked from a builder's tuple, `train_ds, eval_ds, ... =
        # load_train_objs()`, what that place of the tuple holds)
        # (and, handed a name the caller unpacked from a library's split, `train, val =
        # random_split(full, [a, b])`, that call)
        values += [found for value, scope in self._passed_in(dataset, fn, 2)
                   for found in [(value, scope), *program.values_of(value, scope, 1),
                                 *(program.unpacked(value.id, scope) if value.__class__ is ast.Name else ()),
                                 *((v, scope) for v in (reaching.reaching_values(scope.node, value.id, value, unpacked=True)
                                                        if value.__class__ is ast.Name and scope.node is not None
                                                        else None) or ())]]
        # (`tokenized = train.map(tokenize)`: a dataset derived item by item keeps the items its
        # source picked - what the source is bound to; llama2.c forks' fineweb loader)
        values += [found for value, scope in values if value.__class__ is ast.Call
                   and value.func.__class__ is ast.Attribute and value.func.attr in _ITEMWISE
                   and value.func.value.__class__ is ast.Name
                   for found in program.values_of(value.func.value, scope, 1)]
        # (`splits = ds.train_test_split(...)`, then `train = splits["train"]`: the split's call)
        values += [found for value, scope in values if value.__class__ is ast.Subscript
                   and value.value.__class__ is ast.Name for found in program.values_of(value.value, scope, 1)]
        for value, scope in values:
            for call in (c for c in walk(value) if c.__class__ is ast.Call):
                # (or the local helper whose answer the dataset is: `train, test = data.splits(ds)`
                # with `ds.train_test_split(test_size=0.1)` inside)
                target = program._callee_symbol(call.func, scope)
                draw = self._unseeded_draw(call, scope) or (
                    self._helper_draw(call, scope) if call is value and target.__class__ is not Klass else "")
                if draw:
                    return draw
                if target.__class__ is not Klass and call.func.__class__ is ast.Name:
                    # `train_dataset = get_dataset(bs)`, a builder returning an instance: its class
                    target = program.class_of(call, scope)
                if target.__class__ is Klass:
                    draw = self._constructor_draw(target, call, scope, 3)
                    if draw:
                        return draw
                if call is value and call.func.__class__ is ast.Name:
                    # (a builder that returns one of several classes, by a name the config gives:
                    # FADA's `build_dataset(cfg)` -> `DatasetCatalog.get(name, ...)`; class_of
                    # names the first, and any of them may be the one built)
                    for other, made, where in program.returned_classes(call, scope):
                        draw = other is not target and self._constructor_draw(other, made, where, 3)
                        if draw:
                            return draw
                if target.__class__ is Klass or call is value:
                    # (the items it is handed, split by a draw: `x_train, x_test, ... =
                    # train_test_split(x, y)` then `Data(x_train, y_train)`; or by a local helper
                    # that shuffles what it splits - `train, test = random_split_list(files)`
                    # then `instantiate(cfg.dataset, data_list=train)`)
                    for arg in [*call.args, *(k.value for k in call.keywords)]:
                        if arg.__class__ is ast.Subscript and arg.value.__class__ is ast.Name and \
                                arg.slice.__class__ is ast.Constant and isinstance(arg.slice.value, str):
                            arg = arg.value  # (`PairDataset(split["train"])`: a part of what split holds)
                        if arg.__class__ is ast.Name and scope.node is not None:
                            # (a parameter the builder wraps, `TrainData(train_subset)`: what its
                            # callers unpacked it from, `train, test = train_test_split(ds)`)
                            ways = [(arg, scope), *((given, caller) for given, caller in self._passed_in(arg, scope, 2)
                                                    if given.__class__ is ast.Name and caller.node is not None)]
                            for named, where in ways:
                                helds = list(reaching.reaching_values(where.node, named.id, named, unpacked=True) or ())
                                # (`files = files[:n]`, a cut of the list: the list it cuts, as bound there;
                                # `train = split["train"]`, a part of the split: the split)
                                helds += [v for held in helds if held.__class__ is ast.Subscript
                                          and (held.slice.__class__ is ast.Slice or (
                                              held.slice.__class__ is ast.Constant and isinstance(held.slice.value, str)))
                                          and held.value.__class__ is ast.Name
                                          for v in reaching.reaching_values(where.node, held.value.id, held.value,
                                                                            unpacked=True) or ()]
                                for held in helds:
                                    for inner in (c for c in walk(held) if c.__class__ is ast.Call):
                                        # (a caller's own: a library's split only - a dataset it builds
                                        # may be another split's, drawing under its own arguments)
                                        draw = self._unseeded_draw(inner, where) or (
                                            self._helper_draw(inner, where) if where is scope else "")
                                        if draw:
                                            return draw
                            # (or shuffled in place where it is kept: `random.shuffle(train_files)`,
                            # then `ByteDataset(train_files)` - bGPT's, its `random` seeded by rank)
                            draw = self._reordered_after(arg.id, scope)
                            if draw:
                                return draw
            if scope.node is not None and (value.__class__ is ast.Subscript or (
                    value.__class__ is ast.Call and last_name(value.func) in TENSOR_BUILDERS)):
                # `train = frame[~frame["id"].isin(val["id"])]` (or its tensor, `from_numpy(
                # frame.values)`) with `val` made of rows a helper drew (`df.sample(1)`): the rows
                # kept are the ones that draw left
                draw = self._kept_by_drawn(value, scope)
                if draw:
                    return draw
            if value.__class__ is ast.Name:
                draw = self._reordered_after(value.id, scope)
                if draw:
                    return draw
        return ""

    def _kept_by_drawn(self, selector: ast.AST, scope: Function, depth: int = 3) -> str:
        """An unseeded draw the names a selection of rows (or the tensor made of it) reads come
        from, a few bindings back in scope (`val = pd.concat([low, high])`, `low =
        pick_rows(frame)` whose body samples), "" if none."""
        todo = [(n, depth) for n in walk(selector) if n.__class__ is ast.Name and n.ctx.__class__ is ast.Load]
        seen: set = set()
        while todo and len(seen) < 16:
            name, left = todo.pop()
            if name.id in seen:
                continue
            seen.add(name.id)
            for held in reaching.reaching_values(scope.node, name.id, name, unpacked=True) or ():
                for inner in (c for c in walk(held) if c.__class__ is ast.Call):
                    draw = self._unseeded_draw(inner, scope) or self._helper_draw(inner, scope)
                    if draw:
                        return draw
                if left > 1:
                    todo.extend((n, left - 1) for n in walk(held) if n.__class__ is ast.Name
                                and n.ctx.__class__ is ast.Load)
        return ""

    def _helper_draw(self, call: ast.Call, scope: Function) -> str:
        """An unseeded draw in the body of the local function the call runs (a list splitter
        that `random.shuffle`s what it is handed before cutting it, or a method of the script's
        own data class: `dp.train_test_validation_split(ds)`); "" if none."""
        if call.func.__class__ is not ast.Name and call.func.__class__ is not ast.Attribute:
            return ""
        targets = self.program.resolve(call.func, scope)[0]
        if len(targets) != 1 or targets[0].node is None or isinstance(targets[0].node, ast.Module):
            return ""
        helper = targets[0]
        return next((draw for inner in helper.own_calls if (draw := self._unseeded_draw(inner, helper))), "")

    def _constructor_draw(self, klass: Klass, built: ast.Call, scope: Function, depth: int) -> str:
        """An unseeded draw in the constructor of the class `built` (in scope) makes, or in the
        constructor of a local class that constructor builds in turn, depth levels down (DCT's
        ComposeDataset building a Human36MDataset that keeps `random.sample(data_list, n)`)."""
        program = self.program
        init = next((k.methods.get("__init__") for k in [klass, *program.bases(klass)]
                     if "__init__" in k.methods), None)
        if init is None or init.node is None:
            return ""
        for inner in init.own_calls:
            draw = self._unseeded_draw(inner, init)
            if draw and not self._ruled_out_by(init, inner, built, scope):
                return draw
        # (and in the methods of its own that the constructor calls: PromptIR's `self._init_ids()`
        # shuffling the id lists it then keeps)
        # (or a module-level helper of the project's it calls: BEV-LaneDet's
        # `self.dset_files = random_pick_generic(files, skip)`, an `np.random.choice` pick inside)
        for inner in init.own_calls:
            func = inner.func
            if (func.__class__ is ast.Attribute and func.value.__class__ is ast.Name and func.value.id == "self"
                    or func.__class__ is ast.Name and program._callee_symbol(func, init).__class__ is not Klass) \
                    and not self._ruled_out_by(init, inner, built, scope):
                draw = self._helper_draw(inner, init)
                if draw:
                    return draw
        if depth > 1:
            for inner in init.own_calls:
                if inner.func.__class__ is not ast.Name:
                    continue
                target = program._callee_symbol(inner.func, init)
                # (not a transform it builds, whose constructor shuffles the order of its own
                # steps, `random.shuffle(transforms)`: that picks no items)
                if target.__class__ is Klass and target is not klass and not _a_transform(program, target):
                    draw = self._constructor_draw(target, inner, init, depth - 1)
                    if draw:
                        return draw
        return ""

    def _passed_in(self, value: ast.AST, fn: Function, depth: int) -> list[tuple[ast.AST, Function]]:
        """What fn's callers hand the parameter value names (a bare parameter fn never rebinds),
        and, where they hand a parameter of their own on, what theirs hand, depth levels up."""
        if depth <= 0 or value.__class__ is not ast.Name or isinstance(fn.node, ast.Module) or \
                value.id not in fn.params or fn.bindings.get(value.id):
            return []
        found = []
        for given, caller in fn.arguments.get(value.id, []):  # (what the walk bound at each call)
            if given is not value:
                found.append((given, caller))
                found += self._passed_in(given, caller, depth - 1)
        return found

    def _reordered_after(self, name: str, fn: Function) -> str:
        """A draw that reorders the dataset's items (or the list it is built from) in the scope
        that holds it: `dataset.parser.samples = shuffle(samples)` (sklearn's, numpy's global
        stream), `random.shuffle(dataset.samples)`, or `random.shuffle(files)` of the list itself
        ("" if none)."""
        for node in fn.own:
            if node.__class__ is ast.Assign and any(
                    t.__class__ is ast.Attribute and root_name(t) == name for t in node.targets):
                held = [node.value] if node.value.__class__ is not ast.Name else \
                    [v for v, _ in self.program.values_of(node.value, fn, 1)]
                for value in held:
                    for call in (c for c in walk(value) if c.__class__ is ast.Call):
                        draw = self._unseeded_draw(call, fn)
                        if draw:
                            return draw
        for call in fn.own_calls:
            if call.args and root_name(call.args[0]) == name and (call.args[0].__class__ is ast.Attribute or (
                    call.args[0].__class__ is ast.Name and last_name(call.func) == "shuffle")):
                draw = self._unseeded_draw(call, fn)
                if draw:
                    return draw
        # (or by a method of its own the scope calls on it before handing it on: `creator =
        # DataCreator(folders)`, then `creator.make_data()` keeping each file an unseeded
        # `randint` lets through)
        for call in fn.own_calls:
            func = call.func
            if func.__class__ is ast.Attribute and func.value.__class__ is ast.Name and func.value.id == name:
                draw = self._method_draw(call, fn)
                if draw:
                    return draw
        return ""

    def _method_draw(self, call: ast.Call, fn: Function) -> str:
        """An unseeded draw in the dataset's method the call runs (`creator.make_data()`), or in
        a method of its own that one calls on `self`; "" if none."""
        draw = self._helper_draw(call, fn)
        targets = self.program.resolve(call.func, fn)[0] if not draw else ()
        method = targets[0] if len(targets) == 1 and targets[0].cls is not None and targets[0].node is not None else None
        return draw or next((found for inner in method.own_calls if inner.func.__class__ is ast.Attribute
                             and inner.func.value.__class__ is ast.Name and inner.func.value.id == "self"
                             and (found := self._helper_draw(inner, method))), "") if method is not None else draw

    def _ruled_out_by(self, init: Function, inner: ast.Call, built: ast.Call, scope: Function) -> bool:
        """The constructor's draw sits under a test this construction makes false: `if max_samples
        > 0 and len(raw) > max_samples:` where `RLPromptDataset(max_samples=max_samples)` hands
        on a builder's parameter its one caller leaves at the default 0 (read through that call)."""
        sites = [event.node for _, event in self.callers().get(scope, []) if isinstance(event.node, ast.Call)]
        context = ((scope, sites[0]),) if len(sites) == 1 else ()
        # (or one no way in makes true: `if not noise_ratio: ... else: np.random.shuffle(idx)`
        # where every call chain hands `noise_ratio` None, a config key no shipped config sets)
        return any(_cond_false(init, built, cond, flag, context)
                   or never_true(self.callers(), init, cond, flag, self.program)
                   for cond, flag in init.__dict__.get("_call_conds", {}).get(id(inner), ()))

    def _alike_streams(self) -> set:
        """The random streams every rank seeds alike: "random", "numpy", "torch" for the library
        calls that seed one (`torch.manual_seed(cfg.seed)` leaves Python's `random` to each
        process), "*" for any other seeding (`seed_everything`, `set_seed`, a local helper);
        empty where the program seeds per rank or not at all. Asked once."""
        found = self.__dict__.get("_alike_streams_seen")
        if found is None:
            found = set()
            if self._seeds_anything() and not seeded_per_rank(self):
                for fn, call, _, _ in self.calls():
                    if not self._process_seeding(call, fn) or seed_has_rank(call, fn, self.program):
                        continue  # (`random.seed(0 + rank)` beside a torch seeding alike: its own)
                    full = self.program.qualify(call.func, fn) or ""
                    found.add(_SEED_STREAMS.get(full, "*"))
            self.__dict__["_alike_streams_seen"] = found
        return found

    def _unseeded_draw(self, call: ast.Call, fn: Function) -> str:
        full = self.program.qualify(call.func, fn) or ""
        if full not in ITEM_DRAWS and not _datasets_split(self.program, call, fn, full) and \
                not _frame_sample(self.program, call, fn, full) and not _keeps_by_draw(call, fn, full):
            return ""
        if full in ITEM_DRAWS and _one_pick(call, fn, full) and not _keeps_by_draw(call, fn, full):
            return ""  # (one value for a field of an item, `random.choices(ids, weights, k=1)[0]`: no items picked)
        alike = self._alike_streams()
        # (scikit-learn's, pandas' and a datasets split's default seeds come from numpy's global stream)
        stream = "numpy" if full.startswith("sklearn.") or (full not in ITEM_DRAWS and full not in SCALAR_DRAWS) \
            else full.partition(".")[0]
        if alike and (stream in alike or "*" in alike):
            return ""  # (drawn from a stream every rank seeded alike)
        if self._reseeded_before(call, fn, stream):
            return ""
        given = keyword(call, "generator") if keyword(call, "generator") is not None else (
            call.args[2] if full.endswith("random_split") and len(call.args) > 2 else None)
        if given is not None and not is_const(given, None):
            return ""  # (its own generator: seeded or not, that one is the caller's; None is the default one)
        # (scikit-learn's `train_test_split(..., random_state=0)`, `shuffle(x, random_state=0)`)
        if keyword(call, "random_state") is not None and not is_const(keyword(call, "random_state"), None):
            return ""
        return f"{text(call, 60)} at {loc(fn, call)}"

    def _reseeded_before(self, call: ast.Call, fn: Function, stream: str, depth: int = 2) -> bool:
        """fn seeds the draw's stream itself, earlier in its body and with no rank in the seed
        (`np.random.seed(seed)`, then `np.random.shuffle(order)`: a class order every rank draws
        alike, whatever each process seeded before; not `random.seed(0 + global_rank)`) - or every
        call into fn comes after such a seeding in its caller (a CIFAR-LT dataset's `__init__`
        seeding numpy, then calling the method that shuffles), a couple of callers up."""
        # (a seeding under a test, `if args.seed is not None: random.seed(args.seed)` with --seed
        # unset by default, may not run: not counted - unless the draw sits under the same tests,
        # `if not test_only: random.seed(seed); random.shuffle(train_set.samples)`: it runs wherever
        # the draw does)
        held = fn.__dict__.get("_call_conds", {})
        mine = held.get(id(call), ())
        if any(other.lineno < call.lineno and _SEED_STREAMS.get(self.program.qualify(other.func, fn) or "") == stream
               and other.args and not self.mentions_rank(other.args[0], fn)
               and mine[:len(held.get(id(other), ()))] == held.get(id(other), ())
               for other in fn.own_calls):
            return True
        # `random_seed(args.seed)` of `def random_seed(seed=42, rank=0): np.random.seed(seed +
        # rank)`, the rank left at 0 (Multimodal-GPT seeds so before building its datasets, and
        # with the rank only after): every rank draws alike - where it is the last seeding of the
        # stream before the draw (not `if flags.diff_seed: set_seed(seed + rank)` after it)
        verdicts = [(other, verdict) for other in fn.own_calls if other.lineno < call.lineno
                    for verdict in [self._helper_seeding(other, fn, stream)] if verdict is not None]
        if verdicts:
            site, last = max(verdicts, key=lambda sv: (sv[0].lineno, sv[0].col_offset))
            if last == "alike" and mine[:len(held.get(id(site), ()))] == held.get(id(site), ()):
                return True
        sites = self.callers().get(fn, []) if depth > 0 else []
        return bool(sites) and all(event.kind == "call" and isinstance(event.node, ast.Call) and
                                   self._reseeded_before(event.node, caller, stream, depth - 1) for caller, event in sites)

    def _helper_seeding(self, site: ast.Call, fn: Function, stream: str) -> Optional[str]:
        """How the call seeds the stream: "alike" (_helper_seeds_alike), "apart" (a seeding of
        that stream with a rank in it, its own or a helper's), None where it seeds none."""
        if _SEED_STREAMS.get(self.program.qualify(site.func, fn) or "") == stream:
            return "apart" if site.args and self.mentions_rank(site.args[0], fn) else "alike"
        if self._helper_seeds_alike(site, fn, stream):
            return "alike"
        for target in self.program.resolve(site.func, fn)[0]:
            if target.node is not None and target.node.__class__ is not ast.Module and any(
                    _SEED_STREAMS.get(self.program.qualify(inner.func, target) or "") == stream
                    for inner in target.own_calls):
                return "apart"
        return None

    def _helper_seeds_alike(self, site: ast.Call, fn: Function, stream: str) -> bool:
        """The call runs a local helper that seeds the stream (`np.random.seed(seed + rank)`)
        with a value this call makes alike on every rank: each parameter the seed reads is
        handed no rank here (or left at a default that holds none)."""
        for target in self.program.resolve(site.func, fn)[0]:
            if target.node is None or target.node.__class__ is ast.Module:
                continue
            for inner in target.own_calls:
                if _SEED_STREAMS.get(self.program.qualify(inner.func, target) or "") != stream or not inner.args:
                    continue
                seed = inner.args[0]
                params = {n.id for n in walk(seed) if n.__class__ is ast.Name and n.id in target.params
                          and not target.bindings.get(n.id)}
                if not params or any(n.id not in params and self.mentions_rank(n, target)
                                     for n in walk(seed) if n.__class__ is ast.Name):
                    continue
                defaults = param_defaults(target.node)
                given = {p: argument_at(target, site, p) for p in params}
                if all(not self.mentions_rank(value, fn) if value is not None
                       else defaults.get(p).__class__ is ast.Constant for p, value in given.items()):
                    return True
        return False

    def _seeds_anything(self) -> bool:
        """Some call of the program seeds a random stream (`torch.manual_seed`, `np.random.seed`,
        `random.seed`, `seed_everything`, `set_seed`, a local `fix_seed` helper...): asked once."""
        found = self.__dict__.get("_seeds_any")
        if found is None:
            # (not `if args.seed is not None: random.seed(args.seed)` with --seed unset by default:
            # MoCo's main_moco.py, whose ranks then draw from the seeds their processes made)
            # (nor `random.seed(int(time.time()))`: a clock reading is no seed two processes share)
            found = self.__dict__["_seeds_any"] = any(self._process_seeding(call, fn) for fn, call, _, _ in self.calls())
        return found

    def _process_seeding(self, call: ast.Call, fn: Function) -> bool:
        """The call seeds a random stream of the process (torch's, numpy's, Python's, a helper
        that seeds them): not a reading of one (`initial_seed()`), nor a seed off the clock, nor
        one under an option left unset, nor a generator's own (`torch.Generator().manual_seed(42)`
        for one `randperm`: the global streams stay each process's)."""
        name = (last_name(call.func) or "").lower()
        return "seed" in name and name not in ("initial_seed", "get_seed") and not _clock_seed(call) \
            and not _generator_seed(self.program, call, fn) \
            and not _seed_option_unset(fn.__dict__.get("_call_conds", {}).get(id(call), ()), self.program) \
            and self._seeds_the_ranks(call, fn)

    def _seeds_the_ranks(self, call: ast.Call, fn: Function) -> bool:
        """Under mp.spawn, a seeding the started processes run: in what the spawn target reaches,
        at a module's top level outside its `__main__` block (each rank imports it again), or on
        the launcher's path that runs the target itself. The `__main__` block's
        `random.seed(args.seed)` before `mp.spawn(worker)` seeds only the launcher: each spawned
        rank starts Python's, numpy's and torch's streams from its own entropy (DeepFake-Adapter's
        dataset constructor then shuffles its file list apart on every rank)."""
        spawned = self.program.ranks.live_spawn_targets()
        return not spawned or fn in self._spawn_reach() or _on_import(fn, call, self.program) \
            or _seeds_direct_path(self, fn, call, spawned, 3)

    def _fabric_sets_epoch(self, loader_at: Optional[Location], by_line: dict) -> str:
        """The loader the sampler feeds is handed to Lightning Fabric's `setup_dataloaders` (by
        name, or appended to a list spread into it: `dls.append(dl)`, `setup_dataloaders(*dls)`):
        Fabric's loader sets the epoch on its sampler and batch sampler at every `iter()` ("" if
        not)."""
        fact = by_line.get((loader_at.file, loader_at.line)) if loader_at is not None else None
        if fact is None or not fact.name or not self.program.uses_lightning():
            return ""
        for fn, call, _, _ in self.calls():
            if last_name(call.func) != "setup_dataloaders":
                continue
            for arg in call.args:
                spread = arg.value if isinstance(arg, ast.Starred) else None
                if last_name(arg) == fact.name or (isinstance(spread, ast.Name) and any(
                        isinstance(c.func, ast.Attribute) and c.func.attr == "append" and
                        last_name(c.func.value) == spread.id and c.args and last_name(c.args[0]) == fact.name
                        for c in fn.own_calls)):
                    return f"Lightning Fabric's setup_dataloaders at {loc(fn, call)}"
        return ""

    def _ignite_sets_epoch(self, names: set) -> str:
        """ignite's `setup_common_training_handlers(trainer, train_sampler=sampler)` handed one of
        the sampler's names: it adds the EPOCH_STARTED handler that calls set_epoch ("" if none)."""
        for fn, call, _, _ in self.calls():
            if (self.program.qualify(call.func, fn) or "").endswith("common.setup_common_training_handlers"):
                given = keyword(call, "train_sampler")
                if given is not None and (last_name(given) in names or
                                          (dotted(given) or "").rsplit(".sampler", 1)[0] in names):
                    return f"ignite's setup_common_training_handlers at {loc(fn, call)}"
        return ""


def _counts_epochs(loop: ast.AST) -> bool:
    """A loop whose body advances an epoch counter (`epoch += 1`, at any depth) and draws
    batches with `next(...)`: each epoch a pass over the loader, one batch a step."""
    nodes = [n for stmt in loop.body for n in walk(stmt)]
    return any(n.__class__ is ast.AugAssign and n.op.__class__ is ast.Add and "epoch" in (dotted(n.target) or "").lower()
               for n in nodes) and any(n.__class__ is ast.Call and n.func.__class__ is ast.Name and n.func.id == "next"
                                       for n in nodes)


def _engine_passes(call: ast.Call, fn: Function) -> Optional[ast.AST]:
    """The epoch count of an ignite Engine's `run(data, max_epochs=n)` (`n` also second, where
    the file imports ignite); None for any other call."""
    if not (isinstance(call.func, ast.Attribute) and call.func.attr == "run" and call.args):
        return None
    given = keyword(call, "max_epochs")
    if given is None and len(call.args) > 1 and any(
            (imp.module or "").startswith("ignite") if isinstance(imp, ast.ImportFrom)
            else any(a.name.startswith("ignite") for a in imp.names) for imp in fn.file.imports):
        given = call.args[1]
    return given


def _flags(init: Function, built: ast.Call, conds: set[str]) -> dict[str, bool]:
    """`self.<attr> = <param>` in a dataset's __init__, with the truth of what the construction
    passes for it: a constant, or a name the tests around the loader hold true (`if train:`)
    or false (its `else:`, `not train`)."""
    positional = [a.arg for a in init.node.args.args][1:]
    flags = {}
    for stmt in init.node.body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.value, ast.Name)):
            continue
        target = stmt.targets[0]
        if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"):
            continue
        param = stmt.value.id
        passed = keyword(built, param)
        if passed is None and param in positional and positional.index(param) < len(built.args):
            passed = built.args[positional.index(param)]
        if isinstance(passed, ast.Constant) and isinstance(passed.value, bool):
            flags[target.attr] = passed.value
        elif isinstance(passed, ast.Name) and (passed.id in conds or f"not {passed.id}" in conds):
            flags[target.attr] = passed.id in conds
    return flags


def _drawn_anew(body: list[ast.stmt], index: str, flags: dict[str, bool]) -> Optional[bool]:
    """The statements rebind `index` from something else before any of them reads it, following
    the side of `if self.<flag>:` the flags decide; None where none of them reads it at all."""
    for stmt in body:
        if isinstance(stmt, ast.If) and isinstance(stmt.test, ast.Attribute) and \
                isinstance(stmt.test.value, ast.Name) and stmt.test.value.id == "self" and stmt.test.attr in flags:
            side = _drawn_anew(stmt.body if flags[stmt.test.attr] else stmt.orelse, index, flags)
            if side is not None:
                return side
            continue  # that side leaves the index alone: what follows decides
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == index for t in stmt.targets):
            return not any(isinstance(n, ast.Name) and n.id == index for n in walk(stmt.value))
        if any(isinstance(n, ast.Name) and n.id == index for n in walk(stmt)):
            return False
    return None  # never read at all (the caller asks whether a sample is drawn instead)


def _holds(value: ast.AST, call: ast.Call) -> bool:
    """The keyword value is the call, or one side of a conditional expression that is
    (`sampler=DistributedSampler(ds) if distributed else None`)."""
    if value is call:
        return True
    return isinstance(value, ast.IfExp) and (_holds(value.body, call) or _holds(value.orelse, call))


def _held(program, iterated: ast.AST, fn: Function, aliases: bool = True) -> list[ast.AST]:
    """The names (and attributes) of the loader inside a name a loop iterates: `shown =
    tqdm(train_loader)` / `iter(train_loader)` before the loop, the call's first argument; with
    aliases, `progress = loader` too."""
    found = []
    for sub in walk(iterated):
        if not isinstance(sub, ast.Name):
            continue
        # (the bindings that reach this read: `data_loader = tqdm(train_loader)` before the
        # training loop, `data_loader = tqdm(val_loader)` before the validation one, in one body;
        # at a module's top level too: `tbar = tqdm(dataloader_val)` after the epoch's training)
        reached = reaching.reaching_values(fn.node, sub.id, sub)
        for value, scope in program.values_of(sub, fn, 1):
            if value is sub:
                continue
            if reached is not None and scope is fn and not any(value is r for r in reached):
                continue
            # (`iterator = tqdm(train_loader) if rank == 0 else train_loader`: either side; the
            # plain side is the loader itself, an alias or not)
            sides = (value.body, value.orelse) if value.__class__ is ast.IfExp else (value,)
            for side in sides:
                found += _held_by(program, side, scope, fn, aliases or len(sides) > 1)
    return found


def _held_by(program, value: ast.AST, scope: Function, fn: Function, aliases: bool) -> list[ast.AST]:
    """The loader names one value bound to an iterated name holds (see _held)."""
    if isinstance(value, ast.Call) and loader_call(program, value, scope):
        return []  # `DataLoader(first.dataset, sampler=...)`: a loader of its own, not `first`
    if isinstance(value, ast.Call):
        found = [n for arg in value.args[:1] for n in walk(arg) if isinstance(n, (ast.Name, ast.Attribute))]
        # (a local class iterating several loaders it keeps: `MixedDataLoader(a, b)` whose
        # __iter__ runs `iter(self.loader1)` and `iter(self.loader2)`: each of them)
        found += [arg for arg in _iterated_by_class(program, value, scope) if arg not in value.args[:1]]
        # (`loader = self.data_loader["train"]; process = tqdm(loader)`: the entry it reads)
        found += [v for arg in value.args[:1] if isinstance(arg, ast.Name)
                  for v, _ in program.values_of(arg, fn, 1) if isinstance(v, ast.Subscript) and _key_of(v)]
        return found
    if aliases and (isinstance(value, (ast.Name, ast.Attribute)) or (isinstance(value, ast.Subscript) and _key_of(value))):
        return [value]
    return []


def _input_gradients(fn: Function) -> bool:
    """A helper that back-propagates to a tensor it made to want gradients (`x_adv =
    Variable(x, requires_grad=True)`, `x.requires_grad_()`), reads them (`x_adv.grad`) and steps
    no optimizer: a PGD attack or a saliency map, not training (SupRobCon's `inf_pgd`, run in the
    evaluation of each epoch). Memoised on the function."""
    found = fn.__dict__.get("_input_gradients")
    if found is None:
        wants = {t.id for node in fn.own_of(ast.Assign) for t in node.targets if t.__class__ is ast.Name
                 and any(c.__class__ is ast.Call and (is_const(keyword(c, "requires_grad"), True) or (
                     c.func.__class__ is ast.Attribute and c.func.attr == "requires_grad_")) for c in walk(node.value))}
        wants |= {t.value.id for node in fn.own_of(ast.Assign) for t in node.targets
                  if t.__class__ is ast.Attribute and t.attr == "requires_grad" and t.value.__class__ is ast.Name
                  and is_const(node.value, True)}
        read = any(n.__class__ is ast.Attribute and n.attr == "grad" and n.value.__class__ is ast.Name
                   and n.value.id in wants for n in walk(fn.node))
        # (no `opt.step()`, and no helper named for one: `self.optimizer_step()`)
        steps = any("step" in (last_name(c.func) or "") for c in fn.own_calls)
        found = fn.__dict__["_input_gradients"] = read and not steps
    return found


# The names a process's own place in the whole world goes by (a sampler given one of these
# shards among every rank, not among a group's)
WORLD_PLACE = frozenset({"rank", "global_rank", "local_rank", "gpu", "gpu_id", "device_id", "get_rank",
                         "process_index", "RANK", "LOCAL_RANK"})


def _shards_a_group(call: ast.Call) -> bool:
    """`DistributedSampler(ds, num_replicas=args.num_replica_per_dataset, rank=args.dataset_rank)`:
    a share among the ranks that read the same dataset (MSeg's mixed run gives each group of
    ranks its own dataset), so a dataset chosen per group is sharded once, not twice. Both the
    count and the place must be other than the world's."""
    count = keyword(call, "num_replicas")
    place = keyword(call, "rank")
    if count is None or place is None or isinstance(count, ast.Constant) or isinstance(place, ast.Constant):
        return False
    counted = last_name(count.func if isinstance(count, ast.Call) else count) or ""
    if not counted or "world" in counted.lower():
        return False
    if isinstance(place, ast.BinOp) and isinstance(place.op, (ast.Mod, ast.FloorDiv)):
        return True  # `rank=rank % per_set`: the place within the group
    placed = last_name(place.func if isinstance(place, ast.Call) else place) or ""
    return bool(placed) and placed not in WORLD_PLACE


def _iterated_by_class(program, call: ast.Call, fn: Function) -> list[ast.AST]:
    """The arguments (names, attributes) of a local class's construction that its methods iterate
    (`self.loader2 = loader2`, then `iter(self.loader2)` or `for b in self.loader2`)."""
    klass = program.callee(call.func, fn)
    if not program.is_class(klass):
        return []
    init = klass.methods.get("__init__")
    if init is None or init.node is None:
        return []
    kept = {t.attr: n.value.id for n in init.own if isinstance(n, ast.Assign) and isinstance(n.value, ast.Name)
            and n.value.id in init.params for t in n.targets
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"}
    read = set()
    for method in klass.methods.values():
        for node in method.own:
            held = node.args[0] if isinstance(node, ast.Call) and last_name(node.func) == "iter" and node.args else \
                node.iter if isinstance(node, (ast.For, ast.comprehension)) else None
            if isinstance(held, ast.Attribute) and isinstance(held.value, ast.Name) and held.value.id == "self" \
                    and held.attr in kept:
                read.add(kept[held.attr])
    found = []
    for param in read:
        given = argument_at(klass.methods["__init__"], call, param)
        if isinstance(given, (ast.Name, ast.Attribute)):
            found.append(given)
    return found


def _sequential(program, sampler: ast.AST, fn: Function) -> bool:
    """Every sampler the loader may get keeps the dataset's order: `DistributedSampler(ds,
    shuffle=False)` or a SequentialSampler."""
    values = program.values_of(sampler, fn)
    return bool(values) and all(_fixed_indices(program, v, scope) or (
        isinstance(v, ast.Call) and (last_name(v.func) == "SequentialSampler" or (
            last_name(v.func) == "DistributedSampler"
            and is_const(keyword(v, "shuffle") if keyword(v, "shuffle") is not None
                         else (v.args[3] if len(v.args) > 3 else None), False))))
        for v, scope in values)


# Calls that cut an index range into fixed pieces: a `batch_sampler=` made of them is a list
_SPLITS = frozenset({"tensor_split", "array_split", "split", "chunk", "arange", "range"})


def _fixed_indices(program, value: ast.AST, fn: Function, depth: int = 2) -> bool:
    """A sampler that is a plain list of index batches, cut once from a range
    (`torch.arange(n).tensor_split(k)[rank::world]`, `[ids[i:i + b] for i in ...]`): it
    hands the same batches in the same order every time, as an evaluation's does."""
    if isinstance(value, (ast.List, ast.ListComp)):
        # (not a list of samplers one is picked from: `[DistributedSampler(a), ...][i]`)
        items = value.elts if isinstance(value, ast.List) else [value.elt]
        return not any(isinstance(n, ast.Call) and (last_name(n.func) or "").endswith("Sampler")
                       for item in items for n in walk(item))
    if isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Slice) and depth > 0:
        # a run of the batches (`[rank::world]`), still a list of them; one item is not
        return any(_fixed_indices(program, v, scope, depth - 1) for v, scope in program.values_of(value.value, fn))
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _SPLITS:
        return not any(isinstance(n, ast.Call) and (last_name(n.func) or "") in ("randperm", "permutation", "shuffle")
                       for n in walk(value))
    return False


def _rebound_under(fn: Function, name: str, value: ast.AST, switches: frozenset, callers: dict) -> bool:
    """The statement binding `name = value` is followed, in its own block and before any other
    read of the name, by `if <switch>:` whose body binds the name again (or `if <parameter>:`
    that every way in gives a true constant: po2_quantization's `get_dataloaders(...,
    distributed=True)` handing it on to the builder that tests it)."""
    for block in _statement_blocks(fn.node):
        for i, stmt in enumerate(block):
            if not (isinstance(stmt, ast.Assign) and stmt.value is value and any(
                    isinstance(t, ast.Name) and t.id == name for target in stmt.targets for t in walk(target))):
                continue
            later = _first_touching(block[i + 1:], name)
            return isinstance(later, ast.If) and (text(later.test) in switches or _given_true(callers, fn, later.test)
                                                  or _more_than_one_gpu(later.test)) \
                and any(
                isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in s.targets)
                for s in later.body)
    return False


def _more_than_one_gpu(test: ast.AST) -> bool:
    """`if ngpus > 1:` (`num_gpus >= 2`): the run has a process per GPU only where it holds (VPTR's
    data builder rebinds its loaders to DistributedSampler ones there)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Gt, ast.GtE))):
        return False
    bound = 1 if isinstance(test.ops[0], ast.Gt) else 2
    return is_const(test.comparators[0], bound) and bool(GPU_COUNT.search(last_name(test.left) or ""))


def _given_true(callers: dict, fn: Function, test: ast.AST) -> bool:
    """`if distributed:` on a parameter of fn that every way in gives a true constant."""
    if not (isinstance(test, ast.Name) and test.id in fn.params) or fn.bindings.get(test.id):
        return False
    given = given_constants(callers, fn, test.id)
    return bool(given) and all(given)


def _first_touching(stmts: list, name: str) -> Optional[ast.stmt]:
    """The first statement, in the order they run, that reads or binds `name`, looking into the
    body of a loop or `with` whose header does not touch it (ipgpf rebinds its loader under
    `if self.in_distributed_mode():` at the top of each epoch)."""
    for stmt in stmts:
        if not any(isinstance(n, ast.Name) and n.id == name for n in walk(stmt)):
            continue
        headers = [stmt.target, stmt.iter] if isinstance(stmt, (ast.For, ast.AsyncFor)) else \
            [stmt.test] if isinstance(stmt, ast.While) else \
            list(stmt.items) if isinstance(stmt, (ast.With, ast.AsyncWith)) else None
        if headers is None or any(isinstance(n, ast.Name) and n.id == name for h in headers for n in walk(h)):
            return stmt
        return _first_touching(stmt.body, name)
    return None


def _slicing(node: ast.AST) -> bool:
    """An index that takes a range: `a:b`, `slice(...)`, or a call that may return one."""
    return any(isinstance(n, (ast.Slice, ast.Call)) for n in walk(node))


# Wrappers that hand a loader's batches on unchanged: `iter(loader)`, DeepSpeed's
# `RepeatingLoader(loader)`, `itertools.cycle(loader)`
_PASSING = {"iter", "RepeatingLoader", "cycle"}


def _another_sampler_here(program, receiver: ast.AST, fn: Function, sampler: ast.Call) -> bool:
    """`sampler.set_epoch(epoch)` where fn binds `sampler` itself, only to DistributedSamplers it
    builds, none of them this one: a name two trainers share (puzzle's pretrain.py sets the epoch
    of its own `sampler`, train.py's is never set) says nothing across functions."""
    if receiver.__class__ is not ast.Name or receiver.id in fn.params or receiver.id in fn.kwonly:
        return False
    mine = [value for _, value, scope in program.lookup(receiver.id, fn) if scope is fn]
    # (`DistributedSampler(ds, shuffle=False) if distributed else None`: its sampler side)
    mine = [side for v in mine for side in ((v.body, v.orelse) if v.__class__ is ast.IfExp else (v,))
            if not is_const(side, None)]
    return bool(mine) and all(v.__class__ is ast.Call and last_name(v.func) == "DistributedSampler" for v in mine) \
        and not any(v is sampler for v in mine)


def _iterated_inline(fn: Function, at: Location) -> bool:
    """The loader at `at` is built in fn as a `for` loop's iterable itself (or inside the
    `enumerate(...)` / `tqdm(...)` round it): named nowhere, read by that loop alone."""
    for loop in fn.own_of(ast.For, ast.AsyncFor):
        iterable = loop.iter
        while iterable.__class__ is ast.Call and len(iterable.args) >= 1 and \
                last_name(iterable.func) in ("enumerate", "tqdm", "iter"):
            iterable = iterable.args[0]
        if iterable.__class__ is ast.Call and iterable.lineno == at.line:
            return True
    return False


def _one_batch_of_a_fresh_loader(fn: Function, name: str) -> bool:
    """`sel_sampler = DistributedSampler(picked)`; `sel_loader = build(picked, sampler=sel_sampler)`;
    `x = next(iter(sel_loader))` (HSI DQN's pseudo-labelled batch each step): each sampler is
    made anew and read for one batch, never iterated again, so no epoch of it repeats an order.
    The loader's every other read only sizes it (`len(sel_loader)`)."""
    if fn.node is None or isinstance(fn.node, ast.Module) or "." in name:
        return False
    handed = [node for node in fn.own_of(ast.Assign) if node.value.__class__ is ast.Call and any(
        k.arg in ("sampler", "batch_sampler") and k.value.__class__ is ast.Name and k.value.id == name
        for k in node.value.keywords)]
    if len(handed) != 1 or len(handed[0].targets) != 1 or handed[0].targets[0].__class__ is not ast.Name:
        return False
    loader = handed[0].targets[0].id
    reads, drawn, sized = [], 0, set()
    for node in walk(fn.node):
        if node.__class__ is ast.Name and node.id == loader and node.ctx.__class__ is ast.Load:
            reads.append(node)
        elif node.__class__ is ast.Call and node.args and node.args[0].__class__ in (ast.Name, ast.Call):
            inner = node.args[0]
            if last_name(node.func) == "len" and inner.__class__ is ast.Name:
                sized.add(id(inner))
            elif last_name(node.func) == "next" and inner.__class__ is ast.Call and last_name(inner.func) == "iter" \
                    and inner.args and inner.args[0].__class__ is ast.Name and inner.args[0].id == loader:
                drawn += 1
                sized.add(id(inner.args[0]))  # (the one draw: counted apart)
    return drawn == 1 and all(id(r) in sized for r in reads)


def _under_launched_off_choice(fn: Function, call: ast.Call, program) -> bool:
    """The call sits on the side of a conditional expression whose test the options as launched
    settle the other way (`DistributedSampler(ds) if args.distributed else None`, --distributed
    a switch left off)."""
    for node in fn.own_of(ast.IfExp):
        for side, wanted in ((node.body, True), (node.orelse, False)):
            if any(n is call for n in walk(side)):
                truth = settled(node.test, program)
                if truth is not None and truth != wanted:
                    return True
    return False


def _handed_another_sampler(program, receiver: ast.AST, fn: Function, sampler: ast.Call, maker: Function) -> bool:
    """`source_loader = build_dataloader(ds, sampler=source_sampler)`, then
    `source_loader.sampler.set_epoch(e)`: it sets the sampler source_sampler was built as, not
    `sampler` (this one), though one builder makes both loaders (HSI domain adaptation's target
    loader is never set). Only where what the loader is handed is seen to be built elsewhere
    (not by a call of `maker`, the helper that builds and returns this sampler)."""
    if not (isinstance(receiver, ast.Attribute) and receiver.attr in ("sampler", "batch_sampler")
            and isinstance(receiver.value, ast.Name)):
        return False
    values = [(v, s) for v, s in program.values_of(receiver.value, fn, 1) if v is not receiver.value]
    if not values or any(v.__class__ is not ast.Call for v, _ in values):
        return False
    for value, scope in values:
        handed = keyword(value, "sampler") or keyword(value, "batch_sampler")
        if handed.__class__ is not ast.Name:
            return False
        made = [(v, where) for v, where in program.values_of(handed, scope, 1) if v is not handed]
        if not made or any(v.__class__ is not ast.Call or v is sampler for v, _ in made):
            return False  # (a loop's name, a parameter: may be this sampler)
        if any(maker in program.resolve(v.func, where)[0] for v, where in made):
            return False  # (`sampler = make_sampler(...)` on one side of a switch: this one)
    return True


def _another_loaders(program, receiver: ast.AST, fn: Function, loader_name: str, loader_at, by_line: dict) -> bool:
    """`data_loader.sampler.set_epoch(e)` where `data_loader` is the name of another loader the
    script builds, not this sampler's (DISTL's labelled-data `l_sampler` is never set). Where
    it is a parameter, the names the callers hand it decide (LSR-MP's `train_epoch(self,
    loader)`, called with `self.train_loader`): a name of its own says nothing."""
    if not (isinstance(receiver, ast.Attribute) and receiver.attr in ("sampler", "batch_sampler")
            and isinstance(receiver.value, ast.Name)):
        return False
    holder = receiver.value.id
    if loader_at is None or not loader_name:
        return False  # the sampler's own loader unknown here (built by a helper it is handed to)
    others = {f.name for f in by_line.values() if f.location != loader_at}
    # (`ds, train_loader = get_dataset_and_loaders(args)` whose helper returns this loader as
    # `data_loader`: the name the caller unpacks it to, EncoderKD's main)
    for held, scope in program.unpacked(holder, fn):
        for value, where in program.values_of(held, scope, 2):
            if value.__class__ is ast.Call and loader_at == loc(where, value):
                return False
    # (a loader fn builds itself under that name: the one it built, wherever another function
    # builds one of the same name - puzzle's two trainers' `train_loader`)
    mine = [value for _, value, scope in program.lookup(holder, fn) if scope is fn]
    built = [by_line.get((fn.file.display, v.lineno)) for v in mine if v.__class__ is ast.Call]
    if mine and len(built) == len(mine) and all(f is not None for f in built):
        return all(f.location != loader_at for f in built)
    if holder in fn.params or holder in fn.kwonly:
        handed = {last_name(v) for depth in (1, 2) for v, _ in program.values_of(receiver.value, fn, depth)}
        handed.discard(holder)
        if loader_name in handed or not handed:
            return False
        return all(h in others for h in handed)
    return holder != loader_name and holder in others


def _rebuilt_after(fn: Function, scall: ast.Call) -> bool:
    """`sampler.set_epoch(epoch)` at the top of a loop's pass, then `sampler = build_sampler(...)`
    later in the same pass (MeMOTR's epoch loop): the set_epoch reaches the sampler the previous
    pass built, and the one this pass's loader takes never has its epoch set."""
    receiver = scall.func.value
    if not isinstance(receiver, ast.Name):
        return False
    loops = [n for n in fn.own_of(ast.For, ast.AsyncFor, ast.While)
             if n.lineno < scall.lineno <= getattr(n, "end_lineno", n.lineno)]
    if not loops:
        return False
    loop = max(loops, key=lambda n: n.lineno)  # the innermost
    return any(a.value.__class__ is ast.Call and scall.lineno < a.lineno <= loop.end_lineno
               and any(t.__class__ is ast.Name and t.id == receiver.id for t in a.targets)
               for a in fn.own_of(ast.Assign))


def _spread_sampler(program, call: ast.Call, fn: Function) -> Optional[ast.AST]:
    """The sampler a `**loader_args` dict literal of this function gives the loader
    (`loader_args = {..., "sampler": sampler}; DataLoader(ds, **loader_args)`), where it gives
    one: a dict without one, or read elsewhere, leaves the loader as unread as before."""
    for key in ("sampler", "batch_sampler"):
        value = own_keyword(program, call, fn, key)
        if value is not None and not is_const(value, None):
            return value
    return None


def _returned_alone(fn: Function, name: str) -> bool:
    """fn returns the name itself (`return loader`), or wrapped in what passes its batches on
    (`return iter(deepspeed.utils.RepeatingLoader(loader))`)."""
    if isinstance(fn.node, ast.Module):
        return False
    for node in fn.own_of(ast.Return):
        value = node.value
        while isinstance(value, ast.Call) and last_name(value.func) in _PASSING and len(value.args) == 1:
            value = value.args[0]
        if isinstance(value, ast.Name) and value.id == name:
            return True
    return False


def _returned_at(fn: Function, name: str) -> Optional[int]:
    """The position of `name` in the tuple fn returns (`return data, loader, ...`)."""
    if isinstance(fn.node, ast.Module):
        return None
    for node in fn.own_of(ast.Return):
        if isinstance(node.value, ast.Tuple):
            for index, item in enumerate(node.value.elts):
                if isinstance(item, ast.Name) and item.id == name:
                    return index
    return None


def _collected_into(fn: Function, name: str) -> Optional[str]:
    """The list fn appends `name` to (`loaders.append(loader)`, or an iterator over it:
    `loaders.append(iter(loader))`), where fn returns that list; None otherwise."""
    if isinstance(fn.node, ast.Module):
        return None
    for call in fn.own_calls:
        func = call.func
        if not (func.__class__ is ast.Attribute and func.attr == "append" and func.value.__class__ is ast.Name
                and len(call.args) == 1):
            continue
        item = call.args[0]
        if item.__class__ is ast.Call and last_name(item.func) == "iter" and len(item.args) == 1:
            item = item.args[0]
        if item.__class__ is ast.Name and item.id == name:
            held = func.value.id
            if _returned_at(fn, held) is not None or _returned_alone(fn, held):
                return held
    return None


def _kept_outside_loops(fn: Function, call: ast.Call) -> bool:
    """`it = enumerate(loader)` as a statement of its own, not `for i, b in enumerate(loader):`."""
    return any(node.value is call for node in fn.own_of(ast.Assign))


def _field_returned_at(fn: Function, field: str) -> Optional[int]:
    """Where a method returns `self.<field>`: -1 alone, else its position in the returned tuple."""
    if fn.node is None or isinstance(fn.node, ast.Module):
        return None
    for node in fn.own_of(ast.Return):
        if _self_field(node.value) and node.value.attr == field:
            return -1
        if isinstance(node.value, ast.Tuple):
            for index, item in enumerate(node.value.elts):
                if _self_field(item) and item.attr == field:
                    return index
    return None


def _call_returned_at(fn: Function, call: ast.AST) -> Optional[int]:
    """The position of a call built in place in the tuple fn returns (`return DataLoader(...), None`)."""
    return next((i for n in fn.own_of(ast.Return) if isinstance(n.value, ast.Tuple)
                 for i, elt in enumerate(n.value.elts) if elt is call), None)


def _unpacked_at(fn: Function, call: ast.Call, index: int) -> str:
    """The name a caller unpacks a call's returned tuple into at position index (also one of
    several calls unpacked side by side: `(tr_sampler, tr_loader), (_, val_loader) = build(a),
    build(b)`)."""
    for node in fn.own_of(ast.Assign):
        if len(node.targets) != 1:
            continue
        target = _unpacked_into(node.targets[0], node.value, call)
        if isinstance(target, (ast.Tuple, ast.List)):
            items = target.elts
            if index < len(items) and isinstance(items[index], ast.Name):
                return items[index].id
            if index < len(items) and isinstance(items[index], ast.Attribute):
                return items[index].attr  # `self.dataloader, self.dataset = build(opts)`
    return ""


def _unpacked_into(target: ast.AST, value: ast.AST, call: ast.Call) -> Optional[ast.AST]:
    """The part of an assignment's target that receives the call's whole result, matching
    tuples side by side (and either side of an IfExp); None where it does not."""
    if value is call:
        return target
    if value.__class__ is ast.IfExp:
        return _unpacked_into(target, value.body, call) or _unpacked_into(target, value.orelse, call)
    if value.__class__ in (ast.Tuple, ast.List) and target.__class__ in (ast.Tuple, ast.List) and \
            len(value.elts) == len(target.elts):
        for part, given in zip(target.elts, value.elts):
            found = _unpacked_into(part, given, call)
            if found is not None:
                return found
    return None


def _reseeded_per_pass(fn: Function, call: ast.Call) -> bool:
    """The sampler built by `call` sits in a loop of fn and its seed (`seed=` or the fifth
    argument) reads that loop's variable: a new order every pass."""
    seed = keyword(call, "seed")
    if seed is None and len(call.args) > 4:
        seed = call.args[4]
    if seed is None:
        return False
    read = {n.id for n in walk(seed) if isinstance(n, ast.Name)}
    for node in fn.own_of(ast.For, ast.AsyncFor):
        if any(n is call for part in node.body for n in walk(part)):
            if read & {n.id for n in walk(node.target) if isinstance(n, ast.Name)}:
                return True
    return False


def _names_sampler(sampler_text: str, name: str) -> bool:
    """The loader's `sampler=` is the name, or the name where it is set (`val_sampler if
    val_sampler else None`, llama-recipes' loaders)."""
    if sampler_text in (name, f"self.{name}"):
        return True
    got = re.fullmatch(r"(?:self\.)?(\w+) if .+ else None|None if .+ else (?:self\.)?(\w+)", sampler_text)
    return bool(got) and name in got.groups()


def _call_holding(caller: Function, value: ast.AST) -> Optional[ast.Call]:
    """The call in caller that hands value on as one of its arguments."""
    for call in caller.own_calls:
        if any(a is value for a in call.args) or any(k.value is value for k in call.keywords):
            return call
    return None


def _mark_passed(names: set, fn: Function, name: str, depth: int = 3) -> None:
    """(fn, name) trains, and so does what each caller passes for it when it is a parameter, up
    the callers (`train_model(dataloader)` handing it on to `train_one_epoch(dataloader)`, which
    loops over it): the caller's name, and its own callers' when that is a parameter too."""
    names.add((id(fn), name))
    if depth <= 0:
        return
    for value, caller in fn.arguments.get(name, []):
        passed = last_name(value) or ""
        if passed and (id(caller), passed) not in names:
            _mark_passed(names, caller, passed, depth - 1)
        else:
            names.add((id(caller), passed))


def _packed_by_callers(fn: Function, name: str) -> set[tuple[int, str]]:
    """(caller, name) for a name fn unpacks from a parameter (`train_loader, val_loader = loaders`)
    that callers fill with a list or tuple literal (`run(..., [train_loader, None])`): the
    caller's item at the same position is the loader fn iterates."""
    found = set()
    unpacks = fn.__dict__.get("_unpacked_names")
    if unpacks is None:  # (asked once per name a loop iterates: the function's nodes scanned once)
        unpacks = fn.__dict__["_unpacked_names"] = [
            node for node in fn.own_of(ast.Assign) if len(node.targets) == 1
            and node.value.__class__ is ast.Name and node.targets[0].__class__ in (ast.Tuple, ast.List)]
    for node in unpacks:
        items = node.targets[0].elts
        for index, item in enumerate(items):
            if not (isinstance(item, ast.Name) and item.id == name):
                continue
            for value, caller in fn.arguments.get(node.value.id, []):
                if isinstance(value, (ast.List, ast.Tuple)) and len(value.elts) == len(items) \
                        and isinstance(value.elts[index], ast.Name):
                    found.add((id(caller), value.elts[index].id))
    return found


def _overwritten_before_use(fn, call: ast.Call) -> bool:
    """Every other set_epoch of fn sits inside the `for` over the loader that comes right after
    this call in the same block (`sampler.set_epoch(start)`, then `for batch in loader:` whose body
    calls `sampler.set_epoch(step_epoch)`): the `for` made its iterator before those ran, and this
    call sets the epoch again before the next one is made, so this call's value is every pass's."""
    others = [c for c in fn.own_of(ast.Call) if c is not call and isinstance(c.func, ast.Attribute)
              and c.func.attr == "set_epoch"]
    if not others:
        return False
    for block in (getattr(n, "body", None) for n in walk(fn.node) if isinstance(n, (ast.For, ast.While))):
        if not isinstance(block, list):
            continue
        at = next((i for i, stmt in enumerate(block) if isinstance(stmt, (ast.Expr, ast.If))
                   and any(c is call for c in walk(stmt))), None)
        if at is None:
            continue
        following = [stmt for stmt in block[at + 1:] if isinstance(stmt, (ast.For, ast.AsyncFor))]
        return bool(following) and all(any(c is o for c in walk(following[0])) for o in others)
    return False


def _another_loop(fn, call: ast.Call, stilled: set) -> bool:
    """The call sits in a loop no constant set_epoch found so far sits in (noted in stilled)."""
    loop = outer_loop(fn, call)
    key = id(loop) if loop is not None else id(fn)
    if key in stilled:
        return False
    stilled.add(key)
    return True


class _EpochIndex:
    """The set_epoch calls of the script, indexed once per function by receiver and argument, so
    that asking of each call whether another one varies beside it is a few counts, not a scan of
    every other call (3,000 calls in one loop took past the analysis budget)."""

    def __init__(self, set_epochs) -> None:
        from collections import Counter

        self._by_fn: dict[int, tuple] = {}
        for fn, call, _ in set_epochs:
            total, by_receiver, by_arg, by_both = self._by_fn.setdefault(
                id(fn), (Counter(), Counter(), Counter(), Counter()))
            if not call.args or isinstance(call.args[0], ast.Constant):
                continue  # a constant (or nothing) moves nothing apart
            receiver, arg = _epoch_texts(call)
            total[0] += 1
            by_receiver[receiver] += 1
            by_arg[arg] += 1
            by_both[(receiver, arg)] += 1

    def _counts(self, fn, call: ast.Call) -> tuple[int, int, int, int]:
        total, by_receiver, by_arg, by_both = self._by_fn.get(id(fn), ({}, {}, {}, {}))
        receiver, arg = _epoch_texts(call)
        return (total.get(0, 0), by_receiver.get(receiver, 0),
                by_arg.get(arg, 0) if call.args else 0, by_both.get((receiver, arg), 0) if call.args else 0)

    def varying_elsewhere(self, fn, call: ast.Call) -> bool:
        """Another receiver gets set_epoch(<a varying value>) in the same function: the loaders'
        own samplers are matched to their set_epoch calls loosely (`x.sampler` names any), so the
        constant one (`valid_q.sampler.set_epoch(0)`, beside `train_q.sampler.set_epoch(step)`:
        NVAE) is the other loader's, not this one's. (Varying: not a constant, and not the value
        this call hands: two loops' `set_epoch(args.epoch)` are one mistake twice.)"""
        total, same_receiver, same_arg, same_both = self._counts(fn, call)
        return total - same_receiver - same_arg + same_both > 0

    def varying_beside(self, fn, call: ast.Call) -> bool:
        """The same receiver also gets set_epoch(<a varying value>) in the same function: a
        `set_epoch(0)` beside it (to fix the order of an evaluation pass over the training
        loader) is undone by the next epoch's `set_epoch(epoch)`, so the training order still
        changes every epoch."""
        _, same_receiver, _, same_both = self._counts(fn, call)
        return same_receiver - same_both > 0


def _epoch_texts(call: ast.Call) -> tuple[str, str]:
    """(receiver, argument) of a set_epoch call as text, worked out once per call."""
    found = call.__dict__.get("_ddpdoctor_epoch_texts")
    if found is None:
        found = call.__dict__["_ddpdoctor_epoch_texts"] = (
            text(call.func.value), text(call.args[0]) if call.args else "")
    return found


def _with_replacement(sampler: ast.Call) -> bool:
    """A plain sampler that draws with replacement: WeightedRandomSampler unless told not to,
    RandomSampler when told to; or one that draws a fixed number of samples (`num_samples=`):
    a random subset, not an epoch to split."""
    if keyword(sampler, "num_samples") is not None:
        return True
    replacement = keyword(sampler, "replacement")
    if last_name(sampler.func) == "WeightedRandomSampler":
        if replacement is None and len(sampler.args) > 2:
            replacement = sampler.args[2]
        return replacement is None or not (isinstance(replacement, ast.Constant) and not replacement.value)
    if replacement is None and last_name(sampler.func) == "RandomSampler" and len(sampler.args) > 1:
        replacement = sampler.args[1]
    return isinstance(replacement, ast.Constant) and replacement.value is True


def _no_grad_blocks(program, fn: Function) -> list[list[ast.AST]]:
    """The nodes of each block of fn that runs with gradients off: the whole body under a
    `@torch.no_grad()` decorator (or a local one that calls the function under it), each
    `with torch.no_grad():` / `inference_mode()` block."""
    if _grad_off_function(program, fn):
        return [list(fn.own)]
    return [[inner for s in stmt.body for inner in walk(s)] for stmt in fn.own
            if isinstance(stmt, (ast.With, ast.AsyncWith))
            and any(_grad_context(program, item.context_expr, fn) for item in stmt.items)]


# `not mode == 'train'` (the `else:` of `if mode == 'train':`), `split != "train"`, `not is_train`
_NOT_TRAINING = re.compile(r"^not \(?[\w.]*train\w*\b|^not \(?[\w.]+ == ['\"]train['\"]|!= ['\"]train['\"]"
                           # `elif "eval" in args.mode:` past `if "train" in args.mode:`
                           r"|^not \(?['\"]train\w*['\"] in \b|['\"]train\w*['\"] not in \b",
                           re.IGNORECASE)


def _never_read(fn: Function, name: str) -> bool:
    """`sampler = DistributedSampler(ds)` and no other mention of `sampler` in fn: not handed to
    a loader, returned or kept."""
    if not name or not name.isidentifier() or isinstance(fn.node, ast.Module) and name in fn.module.imports:
        return False
    if not fn.bindings.get(name):
        return False  # (`self.train_sampler = DistributedSampler(ds)`: a field, read through the object)
    return not any(n.__class__ is ast.Name and n.id == name and n.ctx.__class__ is ast.Load for n in walk(fn.node))


def _fed_loader_unread(fn: Function, loader_at: Optional[Location], fed: str) -> bool:
    """The loader the sampler feeds is bound, in this same function, to a plain name nothing
    reads again (SiamFC's fork: `dataloader = DataLoader(dataset, sampler=sampler)` in the
    script, while the tracker's train() builds and iterates a loader of its own): it is never
    iterated, so its sampler orders nothing."""
    node = fn.node
    return loader_at is not None and bool(fed) and not isinstance(node, ast.Module) and \
        loader_at.file == fn.file.display and node.lineno <= loader_at.line <= (node.end_lineno or 0) and \
        _never_read(fn, fed)


def _off_the_training_side(fn: Function, call: ast.Call) -> bool:
    """The loader is built on the other side of a test for training (P5's `if mode == 'train':
    DataLoader(..., shuffle=...) else: DataLoader(...)`): the builder's evaluation loader."""
    conds = [cond for cond, _ in fn.__dict__.get("_call_conds", {}).get(id(call), ())]
    # (not the `elif phase == "train" and ddp:` past `if phase == "train" and not ddp:`: the
    # first test's negation fails on its other part where a test on the way says training)
    if any(_TRAINING.search(cond) for cond in conds):
        return False
    return any(_NOT_TRAINING.search(cond) for cond in conds)


# A test that says the side is training's: `phase == "train"`, `mode == 'train' and ddp`.
_TRAINING = re.compile(r"^\(?[\w.]+ == ['\"]train['\"]", re.IGNORECASE)


def _int_constant(node: ast.AST) -> Optional[int]:
    """`3`, `-1`: an int the source spells; None otherwise."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int_constant(node.operand)
        return -inner if inner is not None else None
    return node.value if isinstance(node, ast.Constant) and type(node.value) is int else None


# the library calls that seed one random stream (the process's, every rank alike when no rank is in it)
_SEED_STREAMS = {"random.seed": "random", "numpy.random.seed": "numpy", "torch.manual_seed": "torch",
                 "torch.cuda.manual_seed": "torch.cuda", "torch.cuda.manual_seed_all": "torch.cuda",
                 "torch.random.manual_seed": "torch"}


def _under_iterable_test(fn: Function, call: ast.Call, dataset: ast.AST) -> bool:
    """The loader is built on the side of `if isinstance(dataset, IterableDataset):` (SlowFast's
    construct_loader): there the dataset is an iterable one, which takes no sampler."""
    said = text(dataset)
    return any(cond == f"isinstance({said}, {kind})" for cond, _ in fn.__dict__.get("_call_conds", {}).get(id(call), ())
               for kind in ("IterableDataset", "torch.utils.data.IterableDataset", "data.IterableDataset"))


def _shards_by_rank(program, klass) -> bool:
    """A sampler class that takes its shard by rank: its constructor is handed `num_replicas` /
    `rank` (or asks torch.distributed for them) and its `__iter__` is its own."""
    init, own_iter = program.method(klass, "__init__"), program.method(klass, "__iter__")
    if init is None or own_iter is None or init.node is None:
        return False
    asked = any(last_name(c.func) in ("get_rank", "get_world_size") for c in init.own_calls)
    return asked or {"num_replicas", "rank"} <= set(init.params)


def _clock_seed(call: ast.Call) -> bool:
    """`random.seed(int(time.time()))`, `np.random.seed(datetime.now().microsecond)`: seeded from
    the wall clock, which no two processes read alike by design."""
    return len(call.args) == 1 and not call.keywords and any(
        n.__class__ is ast.Call and (dotted(n.func) or "").rpartition(".")[2] in ("time", "time_ns", "now", "perf_counter")
        for n in walk(call.args[0]))


def _not_a_sampler(program, receiver: ast.AST, fn: Function) -> bool:
    """The receiver of a set_epoch is an instance of a class of the script's own that iterates
    nothing, derives from no library class and hands no set_epoch on (ALMTokenizer's `Reporter`,
    whose `set_epoch` keeps the epoch for its logs): no sampler, dataset or loader is set."""
    klass = program.class_of(receiver, fn)
    if klass is None:
        return False
    if program.library_derived(klass):
        return False  # a library base (a Sampler, a Dataset) may be what is set
    for k in [klass] + program.bases(klass):
        if {"__iter__", "__next__", "__getitem__", "__len__"} & set(k.methods):
            return False
    method = program.method(klass, "set_epoch")
    if method is None:
        return False
    return not any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "set_epoch"
                   for n in method.own)


def _unknown_receiver(program, receiver: ast.AST, fn: Function) -> bool:
    """`self.trn_smp.set_epoch(e)` where the attribute is only ever unpacked from a container
    the source does not show the items of (`self.trn_dl, self.trn_smp = phase["data"]`): which
    sampler it holds is not known, so it may be this one - no DDP804 rests on not knowing."""
    if not isinstance(receiver, ast.Attribute):
        return False
    values = program.values_of(receiver, fn)
    if not values or any(v is not receiver for v, _ in values):
        return False
    klass = program._class_of_fn(fn)
    if klass is None:
        return False
    # assigned somewhere in the class, and only as an item unpacked from a subscript or a name
    stores = [node for m in klass.methods.values() for node in m.own if isinstance(node, ast.Assign)
              for t in node.targets for n in walk(t)
              if isinstance(n, ast.Attribute) and n.attr == receiver.attr and isinstance(n.value, ast.Name)
              and n.value.id == "self"]
    return bool(stores) and all(isinstance(s.targets[0], (ast.Tuple, ast.List))
                                and isinstance(s.value, (ast.Subscript, ast.Name)) for s in stores)


def _hands_back(fn: Function, read: ast.Call) -> bool:
    """What fn reads with `next(batches)` reaches what it returns (I2SB's `sample_batch()`
    returning the batch the caller's loop trains on); a helper that keeps the batch to itself
    (an evaluation run over `next(test_iter)`, returning nothing) trains on nothing there."""
    bound = {t.id for node in fn.own_of(ast.Assign) if any(n is read for n in walk(node.value))
             for target in node.targets for t in walk(target) if isinstance(t, ast.Name)}
    for value in fn.returned:
        if value is None or is_const(value, None):
            continue
        if any(n is read or (isinstance(n, ast.Name) and n.id in bound) for n in walk(value)):
            return True
    return False


def _next_of(call: ast.Call):
    """`next(batches)`, `next(iter(loader))` (a fresh iterator, its first batch): the name
    read, or None."""
    if isinstance(call.func, ast.Name) and call.func.id == "next" and call.args:
        read = call.args[0]
        if isinstance(read, ast.Call) and isinstance(read.func, ast.Name) and read.func.id == "iter" and \
                len(read.args) == 1:
            read = read.args[0]
        if isinstance(read, (ast.Name, ast.Attribute)):
            return read
    return None


def _yielded_from(fn: Function, name: str) -> bool:
    """fn is a generator over the loader bound to name: `yield from loader`, or `for batch in
    loader: yield batch` (an endless loader wrapper read with next())."""
    for node in fn.own:
        if isinstance(node, ast.YieldFrom) and isinstance(node.value, ast.Name) and node.value.id == name:
            return True
        if isinstance(node, ast.For) and isinstance(node.iter, ast.Name) and node.iter.id == name and any(
                isinstance(n, ast.Yield) for stmt in node.body for n in walk(stmt)):
            return True
    return False


def _grad_off_function(program, fn: Function) -> bool:
    """fn runs with gradients off: decorated with `@torch.no_grad()`, or with a local decorator
    whose wrapper calls the function it wraps inside `with torch.no_grad():` (`make_nograd_func`),
    or every loop of its body sits in a `with torch.no_grad():` of its own (an evaluation helper
    handed each loader of a list)."""
    if isinstance(fn.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        blocks = [s for s in fn.node.body if isinstance(s, (ast.With, ast.AsyncWith))
                  and any(_grad_context(program, item.context_expr, fn) for item in s.items)]
        loops = [n for n in walk(fn.node) if isinstance(n, (ast.For, ast.AsyncFor, ast.While))]
        if blocks and loops and all(any(loop in walk(block) for block in blocks) for loop in loops):
            return True
    for deco in getattr(fn.node, "decorator_list", []):
        if _grad_context(program, deco, fn):
            return True
        if not isinstance(deco, (ast.Name, ast.Attribute)):
            continue
        maker = program.callee(deco, fn)
        if not program.is_function(maker) or isinstance(maker.node, ast.Module) or not maker.node.args.args:
            continue
        wrapped = maker.node.args.args[0].arg
        for node in walk(maker.node):
            if isinstance(node, (ast.With, ast.AsyncWith)) and any(
                    _grad_context(program, item.context_expr, maker) for item in node.items) and any(
                    isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == wrapped
                    for s in node.body for c in walk(s)):
                return True
    return False


SAMPLER_KEYS = frozenset({"sampler", "batch_sampler"})


def _fed_in_comprehension(fn: Function, call: ast.Call, by_line: dict):
    """The loader fact of a list comprehension that takes each sampler of the list this call
    makes (the sampler call the element of `L = [... for ...]`, a loader comprehension iterating
    `L`, or `zip(..., L)`, and handing the item as `sampler=`); None where there is none."""
    lists = {target for target, values in fn.bindings.items() for _, value in values
             if value.__class__ is ast.ListComp and value.elt is call}
    if not lists:
        return None
    for comp in fn.own_of(ast.ListComp):
        if comp.elt.__class__ is not ast.Call:
            continue
        fact = by_line.get((fn.file.display, comp.elt.lineno))
        sampler = keyword(comp.elt, "sampler")
        if fact is None or sampler is None or sampler.__class__ is not ast.Name:
            continue
        for gen in comp.generators:
            zipped = gen.iter.__class__ is ast.Call and last_name(gen.iter.func) == "zip"
            sources = gen.iter.args if zipped else [gen.iter]
            targets = gen.target.elts if zipped and gen.target.__class__ is ast.Tuple else [gen.target]
            if any(src.__class__ is ast.Name and src.id in lists and tgt.__class__ is ast.Name and tgt.id == sampler.id
                   for src, tgt in zip(sources, targets)):
                return fact
    return None


def _generator_seed(program, call: ast.Call, fn: Function) -> bool:
    """`torch.Generator().manual_seed(42)`, or `g.manual_seed(s)` of a name bound to a
    Generator: the seeding of that one generator, not of the process's streams."""
    if call.func.__class__ is not ast.Attribute:
        return False
    receiver = call.func.value
    values = [receiver] if receiver.__class__ is ast.Call else \
        [v for v, _ in program.values_of(receiver, fn, 1)] if receiver.__class__ is ast.Name else []
    return bool(values) and all(v.__class__ is ast.Call and last_name(v.func) == "Generator" for v in values)


def _batch_samplers_of(fn: Function, name: str) -> list[str]:
    """The names fn binds to a BatchSampler made around the sampler of that name."""
    return [target for target, values in fn.bindings.items() for _, value in values
            if value.__class__ is ast.Call and last_name(value.func) == "BatchSampler"
            and (wrapped := batch_sampler_source(value)).__class__ is ast.Name and wrapped.id == name]


def batch_sampler_source(call: ast.Call) -> Optional[ast.AST]:
    """The sampler a `BatchSampler(sampler, batch_size, drop_last)` call wraps, first or by
    keyword (`BatchSampler(sampler=base_sampler, batch_size=8, drop_last=True)`)."""
    return call.args[0] if call.args else keyword(call, "sampler")
CONFIG_FILE_READERS = ("toml.", "tomli.", "tomllib.", "yaml.", "json.", "omegaconf.OmegaConf.load", "configparser.")


def _from_config_file(program, spread: ast.AST, fn: Function, depth: int = 3) -> bool:
    """`**cfg["loader"]` where cfg is what toml.load / yaml.safe_load / json.load returned (here,
    or handed in by every caller): a part of a parsed config file."""
    root = spread
    while isinstance(root, (ast.Subscript, ast.Attribute)):
        root = root.value
    if not isinstance(root, ast.Name):
        return False
    values = [(v, scope) for v, scope in program.values_of(root, fn, depth) if v is not root]
    if not values and root.id in fn.params:
        values = _spawn_arguments(program, fn, root.id)
    if not values:
        return False
    for value, scope in values:
        while isinstance(value, (ast.Subscript, ast.Attribute)):
            value = value.value
        if not (isinstance(value, ast.Call) and (program.qualify(value.func, scope) or "").startswith(CONFIG_FILE_READERS)):
            return False
    return True


def _spawn_arguments(program, fn: Function, param: str) -> list:
    """What mp.spawn's `args=(...)` hands a spawned function's parameter (the process index
    comes first): (value, spawning function) pairs."""
    index = fn.params.index(param) - 1 if param in fn.params else -1
    found = []
    for spawner in program.ranks.spawners.get(id(fn), []):
        for call in spawner.own_calls:
            given = keyword(call, "args")
            if given is None or not isinstance(given, ast.Tuple) or not call.args or \
                    fn not in program.reference(call.args[0], spawner):
                continue
            if 0 <= index < len(given.elts):
                found.append((given.elts[index], spawner))
    return found


def _spread_without_sampler(program, call: ast.Call, fn: Function) -> bool:
    """Every `**options` of the call is a local dict the function fills with literal keys only
    (a dict literal, `.update({...})`, `options["k"] = v`), and no key is a sampler: PyTorch's
    MNIST example's `train_kwargs`. Anything else done with the dict (handed to a call, updated
    from another dict) may put a sampler in it."""
    spreads = [kw.value for kw in call.keywords if kw.arg is None]
    if spreads and all(_from_config_file(program, spread, fn) for spread in spreads):
        return True  # a TOML/YAML/JSON file holds plain values: no sampler object in it
    if not spreads:
        return False
    parents = {id(child): node for node in walk(fn.node) for child in children(node)}
    keys: set[str] = set()
    for spread in spreads:
        if not isinstance(spread, ast.Name) or spread.id in fn.params:
            return False
        # `kwargs = {"num_workers": 1, "pin_memory": True} if use_cuda else {}`: either literal
        values = [(_dict_call_literal(side), scope) for v, scope in program.values_of(spread, fn)
                  for side in ((v.body, v.orelse) if isinstance(v, ast.IfExp) else (v,))]
        if values and all(isinstance(v, ast.Dict) and isinstance(scope.node, ast.Module) and _literal_keys(v)
                          and not _given_keys(v) & SAMPLER_KEYS for v, scope in values):
            continue  # `CFG = {"batch_size": 8, "shuffle": True}` at the module's top, no sampler key
        if isinstance(fn.node, ast.Module):
            return False
        if not values or not all(isinstance(v, ast.Dict) and scope is fn and _literal_keys(v) for v, scope in values):
            return False
        keys.update(key for v, _ in values for key in _given_keys(v))
        for use in walk(fn.node):
            if not (isinstance(use, ast.Name) and use.id == spread.id) or use is spread:
                continue
            parent = parents.get(id(use))
            grand = parents.get(id(parent)) if parent is not None else None
            if isinstance(parent, ast.Assign) and use in parent.targets:
                continue  # its binding: the dict literal read above
            if isinstance(parent, ast.keyword) and parent.arg is None:
                continue  # spread into another call too (the test loader's `**kwargs`): read, not changed
            if isinstance(parent, ast.Subscript) and isinstance(parent.slice, ast.Constant) and \
                    isinstance(parent.slice.value, str):
                keys.add(parent.slice.value)  # `options["shuffle"] = True`
                continue
            if isinstance(parent, ast.Attribute) and parent.attr == "update" and isinstance(grand, ast.Call) \
                    and len(grand.args) == 1 and not grand.keywords:
                # `.update({...})`, or `.update(cuda_kwargs)` of another local dict literal
                added = [grand.args[0]] if isinstance(grand.args[0], ast.Dict) else [
                    v for v, scope in program.values_of(grand.args[0], fn) if scope is fn] \
                    if isinstance(grand.args[0], ast.Name) else []
                if added and all(isinstance(v, ast.Dict) and _literal_keys(v) for v in added):
                    keys.update(k.value for v in added for k in v.keys)
                    continue
            return False
    return not keys & SAMPLER_KEYS


def _given_keys(table: ast.Dict) -> set:
    """A dict literal's keys, less those it sets to None (`"sampler": None` gives no sampler)."""
    return {k.value for k, v in zip(table.keys, table.values) if not is_const(v, None)}


def _literal_keys(table: ast.Dict) -> bool:
    return all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in table.keys)


def _bound_set_epoch(fn: Function, call: ast.Call) -> Optional[ast.Call]:
    """`on_epoch = sampler.set_epoch` then `on_epoch(epoch)`: the call as `sampler.set_epoch(epoch)`
    would be written (a copy at the call's place; the tree is only read)."""
    if not isinstance(call.func, ast.Name):
        return None
    bound = fn.bindings.get(call.func.id, [])
    if len(bound) != 1 or not (isinstance(bound[0][1], ast.Attribute) and bound[0][1].attr == "set_epoch"):
        return None
    return ast.copy_location(ast.Call(func=bound[0][1], args=call.args, keywords=call.keywords), call)


def _set_epoch_handed_on(fn: Function) -> list[ast.Attribute]:
    """`x.set_epoch` read as a value, not called there (returned, kept, passed on); not a
    statement of its own (`if multi_gpu: loader.sampler.set_epoch`, the call's parentheses
    forgotten: a no-op that sets nothing)."""
    called = {id(n.func) for n in fn.own_calls}
    called |= {id(n.value) for n in fn.own_of(ast.Expr)}
    return [n for n in fn.own_of(ast.Attribute) if n.attr == "set_epoch"
            and isinstance(n.ctx, ast.Load) and id(n) not in called]


def _unseen_prepared(arg: ast.AST, fn: Function) -> bool:
    """A prepare() argument that may be a loader the source names elsewhere: a spread, a
    parameter handed in (`def setup(acc, loader): return acc.prepare(loader)`), or anything but
    a name, a field, or a copy of one (`deepcopy(loader)`: the copy is prepared, not loader)."""
    if isinstance(arg, ast.Call) and last_name(arg.func) in ("deepcopy", "copy") and len(arg.args) == 1:
        return _unseen_prepared(arg.args[0], fn)
    if isinstance(arg, ast.Name):
        return arg.id in fn.params or arg.id in fn.kwonly
    if isinstance(arg, ast.Attribute):
        return not isinstance(arg.value, ast.Name)  # `self.loader`, `trainer.loader`
    # (`prepare(DataLoader(ds, ...))` prepares that loader, built right there)
    return not (isinstance(arg, ast.Call) and last_name(arg.func) == "DataLoader")


def _dropped_results(fn: Function, call: ast.Call) -> set[int]:
    """The positions of a call's returned tuple its assignment throws away: `_`, or a new name
    fn never reads (`model, opt, train_dataloader = acc.prepare(model, opt, train_data_loader)`,
    then `for batch in train_data_loader:` - the loop reads the original, unprepared loader)."""
    for stmt in fn.own_of(ast.Assign):
        if stmt.value is call and len(stmt.targets) == 1 and \
                isinstance(stmt.targets[0], (ast.Tuple, ast.List)):
            elts = stmt.targets[0].elts
            # (a script's top level binds globals: any function of its file may read them)
            scope = walk(fn.node) if isinstance(fn.node, ast.Module) else fn.own
            read = {n.id for n in scope if n.__class__ is ast.Name and n.ctx.__class__ is ast.Load}
            return {i for i, t in enumerate(elts) if isinstance(t, ast.Name) and (t.id == "_" or (
                i < len(call.args) and isinstance(call.args[i], ast.Name) and call.args[i].id != t.id
                and t.id not in read and not _global_in(fn, t.id)))}
    return set()


def _global_in(fn: Function, name: str) -> bool:
    """fn declares `global name` (or nonlocal): another function may read what it binds."""
    return any(isinstance(n, (ast.Global, ast.Nonlocal)) and name in n.names for n in fn.own)


def _around_training(loop: ast.AST) -> bool:
    """A loop that counts passes (`while`, `for ... in range(...)`, not one over a list of
    splits) with another loop inside whose body calls `.backward()` itself."""
    if isinstance(loop, ast.For):
        counted = loop.iter  # (through `enumerate(...)` / `tqdm(...)`)
        while isinstance(counted, ast.Call) and last_name(counted.func) in ("enumerate", "tqdm") and counted.args:
            counted = counted.args[0]
        if not (isinstance(counted, ast.Call) and last_name(counted.func) in ("range", "trange")):
            return False
    for stmt in loop.body:
        for inner in walk(stmt):
            if isinstance(inner, (ast.For, ast.AsyncFor, ast.While)) and any(
                    isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "backward"
                    for part in inner.body for c in walk(part)):
                return True
    return False


def _comprehension_keys(program, comp: ast.DictComp, fn: Function) -> set:
    """The constant keys `{k: ... for k in ["train", "val"]}` makes (the list written there or
    bound to the name it iterates); empty where they cannot be told."""
    if len(comp.generators) != 1 or comp.key.__class__ is not ast.Name or \
            comp.generators[0].target.__class__ is not ast.Name or comp.generators[0].target.id != comp.key.id:
        return set()
    keys: set = set()
    source = comp.generators[0].iter
    for value, _ in (program.values_of(source, fn, 2) if source.__class__ is ast.Name else [(source, fn)]):
        if value.__class__ not in (ast.List, ast.Tuple, ast.Set) or not all(e.__class__ is ast.Constant for e in value.elts):
            return set()
        keys.update(e.value for e in value.elts)
    return keys


def _loop_constants(fn: Function, name: str) -> Optional[set]:
    """The constants every `for name in [...]` of fn runs the name through (and no other
    binding of it); None where one is not such a loop."""
    found: set = set()
    loops = [n for n in fn.own_of(ast.For) if n.target.__class__ is ast.Name and n.target.id == name]
    if not loops or len(fn.bindings.get(name, ())) > len(loops):
        return None
    for loop in loops:
        if loop.iter.__class__ not in (ast.List, ast.Tuple) or \
                not all(e.__class__ is ast.Constant for e in loop.iter.elts):
            return None
        found.update(e.value for e in loop.iter.elts)
    return found


def _key_rules_out(fn: Function, node: ast.AST, name: str, key) -> bool:
    """node sits on a side of an `if` comparing name with constants (`if phase == "train":`)
    that key does not take."""
    path = reaching._path_to(fn.node, node) or []
    for _, _, owner, field in path:
        if owner.__class__ is not ast.If or field not in ("body", "orelse"):
            continue
        test = owner.test
        if test.__class__ is ast.Compare and len(test.ops) == 1 and test.left.__class__ is ast.Name and \
                test.left.id == name:
            answer = _compare_constant(key, test.ops[0], test.comparators[0])
            if answer is not None and answer != (field == "body"):
                return True
    return False


def _key_of(node: ast.AST) -> str:
    """`data_loader['train']` for `self.data_loader["train"]` (or `loaders["train"]`): a
    container's entry at a constant key, named as a loader stored there is; also
    `loader['train']` for `config["loader"]["train"]`, the table kept in a dict under its own
    name (`config = {"loader": loader}`); "" otherwise."""
    if node.__class__ is ast.Subscript and node.slice.__class__ is ast.Constant and isinstance(node.slice.value, str):
        outer = node.value
        if outer.__class__ in (ast.Name, ast.Attribute):
            return f"{last_name(outer)}[{node.slice.value!r}]"
        if outer.__class__ is ast.Subscript and outer.slice.__class__ is ast.Constant and \
                isinstance(outer.slice.value, str) and outer.slice.value.isidentifier():
            return f"{outer.slice.value}[{node.slice.value!r}]"
    return ""


def _keyed_name(fn: Function, call: ast.Call) -> str:
    """The name of a loader stored at a constant key: `self.data_loader["train"] = DataLoader(...)`,
    or built in a table of loaders by split, `loader = {"train": DataLoader(...), ...}`."""
    for node in fn.own_of(ast.Assign):
        if len(node.targets) != 1:
            continue
        if node.value is call:
            return _key_of(node.targets[0])
        if node.value.__class__ is ast.Dict and node.targets[0].__class__ is ast.Name:
            key = next((k.value for k, v in zip(node.value.keys, node.value.values) if v is call
                        and k.__class__ is ast.Constant and isinstance(k.value, str)), None)
            if key is not None:
                return f"{node.targets[0].id}[{key!r}]"
    return ""


def _self_field(node: Optional[ast.AST]) -> bool:
    """`self.loader`: a field of the instance a method runs on."""
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def _rebound_unread(fn: Function, call: ast.Call, name: str) -> bool:
    """What the call gives `name` is never read: a later statement of fn's own body binds the
    name again, and nothing between reads it (TEMPO's first pass `train_data, train_loader =
    data_provider(args, "train")` only counts samples; the loop trains on the loader built after
    it). Read on the body's top-level statements: a binding inside a loop that reads the name
    earlier in the loop is not crossed. Reading what the loader was built over
    (`train_loader.dataset`, its batch size) reads no batch: ScoreVAE's `train_loader =
    DataLoader(train_loader.dataset, sampler=DistributedSampler(...))` replaces the builder's."""
    body = getattr(fn.node, "body", None)
    if not isinstance(body, list):
        return False
    start = next((i for i, stmt in enumerate(body) if any(n is call for n in walk(stmt))), None)
    if start is None:
        return False
    for stmt in body[start + 1:]:
        # (or inside `if train_loader is not None:` around the rebuild: where the name holds a
        # loader at all, it is rebuilt - ConceptFusion-style `get_distributed_dataloaders`)
        if isinstance(stmt, ast.If) and not stmt.orelse and _tests_only_presence(stmt.test, name):
            inner = next((s for s in stmt.body if _rebinds(s, name)), None)
            if inner is not None and not _reads_batches(inner.value, name) and not any(_reads_batches(s, name) for s in stmt.body[:stmt.body.index(inner)]):
                return not _reads_batches(body[start], name)
        if _rebinds(stmt, name) and not _reads_batches(stmt.value, name):
            return not _reads_batches(body[start], name)
        if _reads_batches(stmt, name):
            return False
    return False


def _overwritten_unread(fn: Function, call: ast.Call, name: str) -> bool:
    """`train_loader = DataLoader(ds, shuffle=True)` inside `if args.dataset == "imagenet":`, then
    `train_loader = DataLoader(ds, sampler=train_sampler)` after the `if`, before any read (a MoCo
    template's leftover): no read of the name is reached by this binding, so nothing iterates
    it. Asked of the reaching bindings at each read of the name in fn (reaching.reaching_values);
    not where one of them cannot be told (a loop bringing a binding back round, a read in a
    nested function, a `global`)."""
    if isinstance(fn.node, ast.Module) or not any(
            isinstance(node, ast.Assign) and node.value is call and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name) and node.targets[0].id == name for node in fn.own):
        return False
    reads = []
    for node in walk(fn.node):
        if isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            return False
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
            reads.append(node)
    for read in reads[:MAX_READS_ASKED]:
        values = reaching.reaching_values(fn.node, name, read)
        if values is None or any(value is call for value in values):
            return False
    return len(reads) <= MAX_READS_ASKED


# (reads of one loader's name asked of: past it, the loader counts as read)
MAX_READS_ASKED = 64


def _rebinds(stmt: ast.stmt, name: str) -> bool:
    """`name = ...` or `a, name = ...` (a plain assignment that binds the name again)."""
    return isinstance(stmt, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == name or isinstance(t, ast.Tuple) and any(
            isinstance(e, ast.Name) and e.id == name for e in t.elts) for t in stmt.targets)


def _tests_only_presence(test: ast.AST, name: str) -> bool:
    """`name is not None` or `name` itself: a test of whether the name holds anything."""
    if isinstance(test, ast.Name):
        return test.id == name
    return isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == name and \
        len(test.ops) == 1 and isinstance(test.ops[0], ast.IsNot) and is_const(test.comparators[0], None)


# What a loader was built with, read back without drawing a batch
_LOADER_FIELDS = frozenset({"dataset", "batch_size", "num_workers", "collate_fn"})


def _reads_batches(node: ast.AST, name: str) -> bool:
    """`name` is read in node other than for one of the fields it was built with."""
    fields = {id(n.value) for n in walk(node) if isinstance(n, ast.Attribute) and n.attr in _LOADER_FIELDS}
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) and id(n) not in fields
               for n in walk(node))


# The words of a test on how the job is launched: the launcher or scheduler, and defaults' words
# for the GPU, node and process counts.
_LAUNCH_TEST = re.compile(rf"launcher|slurm|mpi|torchrun|{LAUNCH_WORDS.pattern}", re.IGNORECASE)


def _shards(stmts: list) -> bool:
    """The statements build a sharded loader: a DistributedSampler, or a builder told so
    (`build_dataloader(ds, ..., dist=True)`, `distributed=True`)."""
    for node in (n for s in stmts for n in walk(s)):
        if node.__class__ is ast.Call and (
                (last_name(node.func) or "").endswith("DistributedSampler")
                or any(k.arg in ("dist", "distributed") and k.value.__class__ is ast.Constant and k.value.value is True
                       for k in node.keywords)):
            return True
    return False


# A Hugging Face dataset's methods that make a dataset of the same items in the same order, item
# by item (what picks or orders the items is the source's)
_ITEMWISE = frozenset({"map", "filter", "with_format", "set_format", "remove_columns", "rename_column",
                       "rename_columns", "cast", "cast_column", "flatten", "with_transform"})


def _param_at(target: Function, call: ast.Call, index: int) -> Optional[str]:
    """The name of target's parameter that the call's positional argument at index fills."""
    positional = [a.arg for a in target.node.args.posonlyargs + target.node.args.args]
    if target.cls is not None and positional[:1] in (["self"], ["cls"]) and target.parent is None:
        positional = positional[1:]
    return positional[index] if index < len(positional) else None


def _read_by_its_key(receiver: ast.AST, fn: Function, call: ast.Call, own: str) -> bool:
    """`sampler = {"train": train_sampler, "valid": valid_sampler}` built beside the sampler and
    handed on (returned, kept in a config dict), then `self.config["sampler"]["train"].set_epoch(e)`:
    the receiver reads the table by the key that holds this sampler (CoNKT's get_loader), whatever
    holds the table on the way."""
    if receiver.__class__ is not ast.Subscript or receiver.slice.__class__ is not ast.Constant \
            or not isinstance(receiver.slice.value, str):
        return False
    key = receiver.slice.value
    for table in fn.own_of(ast.Dict):
        for k, v in zip(table.keys, table.values):
            if k.__class__ is ast.Constant and k.value == key and (
                    v is call or (own and v.__class__ is ast.Name and v.id == own)):
                return True
    return False


def _table_read(fn: Function, call: ast.Call, name: str) -> Optional[bool]:
    """A loader fn keeps in a table by key (`loaders[kind] = loader`, or with its sampler,
    `loaders[kind] = (loader, sampler)`) and reads in a loop over the table's items (`for kind,
    (loader, sampler) in loaders.items(): for batch in tqdm(loader): ... backward()`): True where
    such a read runs a backward, False where every one runs none (an evaluation's table, read
    under no_grad), None where the loader is not read so. Each table apart: two loops that bind
    one name to the training and the evaluation loaders (Trajectron's `data_loader`) stay apart."""
    if not name or "." in name or isinstance(fn.node, ast.Module) or fn.node is None:
        return None
    stored = []  # (table, position or None) of the stores of the loader bound at this call
    for node in fn.own_of(ast.Assign):
        target = node.targets[0]
        if not (target.__class__ is ast.Subscript and target.value.__class__ is ast.Name):
            continue
        parts = node.value.elts if node.value.__class__ is ast.Tuple else [node.value]
        for position, part in enumerate(parts):
            if part.__class__ is ast.Name and part.id == name and \
                    any(v is call for v in reaching.reaching_values(fn.node, name, node) or ()):
                stored.append((target.value.id, position if node.value.__class__ is ast.Tuple else None))
    if not stored:
        return None
    verdicts = []
    for loop in fn.own_of(ast.For):
        read, values = table_values_bound(loop)
        for table, position in stored:
            if read != table:
                continue
            held = values
            if position is not None:
                held = held.elts[position] if held.__class__ is ast.Tuple and len(held.elts) > position else None
            if held.__class__ is not ast.Name:
                continue
            alias = held.id
            # the passes over the loader inside: `for b in loader`, `for b in tqdm(loader)`, or
            # over a name bound to such a wrapping (`pbar = tqdm(loader)`; `for b in pbar`)
            wrapped = {alias} | {t.id for n in walk(loop) if n.__class__ is ast.Assign and len(n.targets) == 1
                                 for t in n.targets if t.__class__ is ast.Name
                                 and alias in {x.id for x in walk(n.value) if x.__class__ is ast.Name}}
            passes = [inner for inner in walk(loop) if inner is not loop and inner.__class__ is ast.For
                      and {x.id for x in walk(inner.iter) if x.__class__ is ast.Name} & wrapped]
            verdicts += [any(n.__class__ is ast.Call and n.func.__class__ is ast.Attribute and n.func.attr == "backward"
                             for n in walk(inner)) for inner in passes]
    return any(verdicts) if verdicts else None


def _dict_held(fn: Function, call: ast.Call) -> str:
    """`val_sampler = {"sampler": DistributedSampler(val_ds, shuffle=True)}` handed on as
    `DataLoader(val_ds, **val_sampler)`: the name of the dict that holds the sampler, "" where
    it is held no such way."""
    for node in fn.own_of(ast.Assign):
        # (a dict of the loader's keyword arguments, the sampler under "sampler"; not a table of
        # samplers by split, `{"train": DistributedSampler(...), "dev": ...}`, read by key)
        if node.value.__class__ is ast.Dict and any(
                v is call and k.__class__ is ast.Constant and k.value in ("sampler", "batch_sampler")
                for k, v in zip(node.value.keys, node.value.values)) and \
                len(node.targets) == 1 and node.targets[0].__class__ is ast.Name:
            return node.targets[0].id
    return ""


def _a_transform(program, klass: Klass) -> bool:
    """A class whose instances are applied to items (`__call__`, its own or a local base's) and
    hold none (no `__getitem__` / `__iter__` / `__len__`, no library dataset base)."""
    chain = [klass, *program.bases(klass)]
    return any("__call__" in k.methods for k in chain) and \
        not any(name in k.methods for k in chain for name in ("__getitem__", "__iter__", "__len__")) and \
        not any(base.rsplit(".", 1)[-1].endswith("Dataset") for k in chain for base in k.bases)
