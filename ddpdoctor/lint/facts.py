"""The facts the lint checks judge (checks/lint/), gathered from a Program: collectives under a
rank test, DataLoaders and their samplers, set_epoch calls, accumulation loops, torch.save calls.

Each fact holds what a finding needs (file:line, the guarding test, the call chain) and no AST,
so a check is a small pure function and a unit test can build facts by hand.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterator, Optional

from ddpdoctor.core.findings import Location
from ddpdoctor.lint import data_keys, data_sized, no_sync, rank_state, worker_seeds, writes
from ddpdoctor.lint.patterns import (dotted, is_const, keyword, last_name, save_call, save_path, text,
                                     through_grad_off)
from ddpdoctor.lint.nodes import children, walk
from ddpdoctor.lint.program import Event, Function, Guard, Klass, Program

MAX_DEPTH = 4  # calls followed from a guarded block to the collective
EVAL_NAME = re.compile(r"val|valid|test|eval|dev\b|holdout|calib", re.IGNORECASE)
OPTIMIZER_NAME = re.compile(r"opt", re.IGNORECASE)
SCHEDULER_NAME = re.compile(r"sched|warmup|lr_", re.IGNORECASE)
PLAIN_SAMPLERS = {"RandomSampler", "SequentialSampler", "WeightedRandomSampler", "SubsetRandomSampler"}
SHARD_KEYWORDS = {"shard", "shard_id", "num_shards", "rank", "world_size", "num_replicas", "shard_index"}
SELF_SHARDING = re.compile(r"get_rank|\brank\b|world_size|num_replicas|split_dataset_by_node|get_worker_info")


@dataclass
class GuardedCollective:
    """A collective (or a call that ends in one) that runs only where a rank test holds."""

    op: str
    location: Location  # the collective itself
    guard: str  # the rank test's source text
    guard_location: Location
    function: str  # where the guard is
    chain: list[str] = field(default_factory=list)  # "train.py:40 save_checkpoint()" steps
    assumption: str = ""  # what must hold for the guard to differ between ranks ("" : proven)


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
    sampler_class: str = ""  # the plain sampler's class (RandomSampler), for the message
    trains: bool = False  # iterated by a loop that runs backward: the training loader, proven
    train_named: bool = False  # its name, dataset or builder says "train"
    unseen_options: bool = False  # DataLoader(ds, **kwargs): a sampler may be in there
    handed_to_framework: bool = False  # the loader or its dataset goes to training_data=...
    single_process: bool = False  # built where the process group is not set up (`else:` of `if opt["dist"]:`)
    iterated: bool = False  # a `for` over it (or iter() of it) that runs no collective: each rank's own work


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


@dataclass
class AccumulationFact:
    backward: Location
    loop: Location  # the micro-step loop (or the loop whose step is conditional)
    step: Optional[Location]
    pattern: str  # "micro_step_loop" | "conditional_step" | "sync_flag_after_forward" (step: the forward)
    by: Optional[str] = None  # "accelerate": accelerator.backward() by hand, outside accumulate()
    no_sync: Optional[bool] = None  # lint/no_sync.covered: False where it covers one configuration only


@dataclass
class SaveFact:
    location: Location
    path_text: str
    every_rank: bool  # reached by every rank: no rank test on any way to it
    reason: str  # why it is (not) judged every-rank
    per_node: Optional[str] = None  # the per-node test (`local_rank == 0`) that lets one rank per node save
    call: str = "torch.save"  # the writing call, as the finding words it (`model.save_pretrained`)


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


def loc(fn: Function, node: ast.AST) -> Location:
    return Location(fn.file.display, getattr(node, "lineno", None))


class FactBuilder:
    def __init__(self, program: Program) -> None:
        self.program = program
        # only what the entry script can run is judged
        self.functions = [f for f in program.functions if f in program.reachable]
        self._reach: dict[Function, list[tuple[str, Location, list[str]]]] = {}
        self._callers: Optional[dict[Function, list[tuple[Function, Event]]]] = None

    # ------------------------------------------------------------------ collectives
    def reach(self, fn: Function, depth: int = MAX_DEPTH, stack: tuple = (),
              call: Optional[ast.Call] = None, entries: tuple = ()) -> list[Reached]:
        """Every collective a function may run, directly or through local calls, with the chain
        and the (non-rank) tests on the way. `call`: the call that enters fn, whose arguments
        may switch some of it off (`merge(state)` leaves `use_barriers=False`); `entries`: the
        calls that entered the functions of `stack` (None where not a call), so a value passed
        on (`_write(..., synchronize=synchronize)`) is read where it was given."""
        if fn in stack or depth <= 0:
            return []
        if fn in self._reach and not stack:
            return self._reach[fn]
        found = []
        paired = self._paired(fn)
        context = tuple(zip(stack[-len(entries):], entries)) if entries else ()
        for event in fn.events:
            if call is not None and any(flag and _switched(fn, call, c, context) is False for c, flag in event.conds):
                continue
            own_conds = event.conds if call is None else \
                tuple((c, flag) for c, flag in event.conds if not (flag and _switched(fn, call, c, context) is True))
            if event.kind == "collective" and id(event) not in paired:
                found.append((event.op, loc(fn, event.node), [], own_conds))
            elif event.kind in ("call", "ref"):
                for target in event.targets:
                    step = f"{fn.file.display}:{event.line} {target.label}"
                    entry = event.node if event.kind == "call" else None
                    for op, where, chain, conds in self.reach(target, depth - 1, stack + (fn,), entry,
                                                              (entries + (call,))[-3:]):
                        op = through_grad_off(self.program, op, event.node, fn)
                        found.append((op, where, [step] + chain, own_conds + conds))
        if not stack:
            self._reach[fn] = found
        return found

    def _paired(self, fn: Function) -> set[int]:
        """Collectives of a function that pair up across its own rank tests (yolov5's
        `if local_rank not in [-1, 0]: barrier()` ... `yield` ... `if local_rank == 0: barrier()`):
        every rank runs one of them, so a caller's rank test does not make them one-sided."""
        polarities: dict[tuple[str, str], set[str]] = {}
        for event in fn.events:
            if event.kind == "collective" and event.guards:
                test = event.guards[-1].test
                polarities.setdefault((_op_kind(event.op), test.key), set()).add(test.polarity)
        return {id(e) for e in fn.events if e.kind == "collective" and e.guards
                and {"zero", "nonzero"} <= polarities.get((_op_kind(e.op), e.guards[-1].test.key), set())}

    def _ops_under(self, fn: Function, branch: int, side: str) -> Counter:
        ops: Counter = Counter()
        for event in fn.events:
            if not any(g.branch == branch and g.side == side for g in event.guards):
                continue
            if event.kind == "collective":
                ops[_op_kind(event.op)] += 1
            elif event.kind in ("call", "ref"):
                for target in event.targets:
                    ops.update(_op_kind(op) for op, _, _, _ in self.reach(target, MAX_DEPTH - 1))
        return ops

    def guarded_collectives(self) -> list[GuardedCollective]:
        best: dict[tuple, GuardedCollective] = {}
        for fn in self.functions:
            candidates: list[tuple[Guard, GuardedCollective]] = []
            for event in fn.events:
                if not event.guards:
                    continue
                reached: list[Reached] = []
                if event.kind == "collective":
                    reached.append((event.op, loc(fn, event.node), [], ()))
                elif event.kind in ("call", "ref"):
                    for target in event.targets:
                        step = f"{fn.file.display}:{event.line} {target.label}"
                        entry = event.node if event.kind == "call" else None
                        for op, where, chain, conds in self.reach(target, MAX_DEPTH - 1, (fn,), entry):
                            op = through_grad_off(self.program, op, event.node, fn)
                            reached.append((op, where, [step] + chain, conds))
                for op, where, chain, conds in reached:
                    # `if not use_fsdp_eval and not is_rank0: return` ... a callee's
                    # `if use_fsdp_eval: all_reduce()`: every rank gets there
                    said = {c for c, _ in conds}
                    guards = [g for g in event.guards if not said & set(g.unless)]
                    if not guards:
                        continue
                    guard = guards[-1]
                    assumption = _assume(guard.test.assumption, conds)
                    candidates.append((guard, GuardedCollective(
                        op, where, guard.test.text, Location(guard.file, guard.line), fn.label, chain,
                        assumption)))
            # ranks that take the other branch run the same collectives: balanced, no hang
            balanced = set()
            for guard, _ in candidates:
                if guard.branch and guard.branch not in balanced:
                    other = "else" if guard.side == "body" else "body"
                    mine = self._ops_under(fn, guard.branch, guard.side)
                    if mine and mine == self._ops_under(fn, guard.branch, other):
                        balanced.add(guard.branch)
            # `if local_rank != 0: barrier()` ... `if local_rank == 0: barrier()`: paired
            polarities: dict[tuple[str, str], set[str]] = {}
            for guard, found in candidates:
                polarities.setdefault((_op_kind(found.op), guard.test.key), set()).add(guard.test.polarity)
            for guard, found in candidates:
                if guard.branch in balanced:
                    continue
                if {"zero", "nonzero"} <= polarities[(_op_kind(found.op), guard.test.key)]:
                    continue
                key = (found.location.file, found.location.line, found.op)
                if key not in best or len(found.chain) < len(best[key].chain):
                    best[key] = found
        return sorted(best.values(), key=lambda g: (g.location.file, g.location.line or 0))

    # ------------------------------------------------------------------ helpers
    def calls(self) -> Iterator[tuple[Function, ast.Call, tuple[Guard, ...], int]]:
        for fn in self.functions:
            for call, guards, loops in fn.calls:
                yield fn, call, guards, loops

    def callers(self) -> dict[Function, list[tuple[Function, Event]]]:
        if self._callers is None:
            self._callers = {}
            for fn in self.functions:
                for event in fn.events:
                    if event.kind in ("call", "ref"):
                        for target in set(event.targets) | set(event.weak):
                            self._callers.setdefault(target, []).append((fn, event))
        return self._callers

    def _switches(self) -> frozenset:
        """The switches the process group is set up under (`if opts.shard: init_process_group()`)."""
        if not hasattr(self, "_switch_set"):
            # any test, not only a plain flag: `if opt["dist"]:`, `if args.world_size > 1:`
            self._switch_set = frozenset(c for fn in self.functions for e in fn.events if e.kind == "init"
                                         for c, _ in e.conds)
        return self._switch_set

    def only_guarded(self, fn: Function, depth: int = 6, stack: tuple = ()) -> Optional[bool]:
        """True when every way into fn passes a rank test; None when nothing calls it."""
        if fn.rank_only:
            return True
        sites = self.callers().get(fn, [])
        if not sites:
            return None
        if fn in stack or depth <= 0:
            return False
        for caller, event in sites:
            if event.guards or _single_process(event.conds, self._switches()):
                continue
            if caller.node is caller.module.file.tree:
                return False
            if not self.only_guarded(caller, depth - 1, stack + (fn,)):
                return False
        return True

    def in_loop(self, fn: Function, depth: int = 4, stack: tuple = ()) -> bool:
        """Some way into fn passes through a loop (it runs more than once)."""
        if fn in stack or depth <= 0:
            return False
        for caller, event in self.callers().get(fn, []):
            if event.loops > 0 or self.in_loop(caller, depth - 1, stack + (fn,)):
                return True
        return False

    def mentions_rank(self, node: ast.AST, fn: Function, depth: int = 3, strict: bool = False) -> bool:
        """The expression depends on the rank. strict: a rank handed on as `rank=` to a call
        (`Dataset(..., rank=rank)`, which may only cache or log on one rank) does not count."""
        ranks = self.program.ranks
        passed_on = {id(n) for sub in walk(node) if strict and isinstance(sub, ast.Call)
                     for kw in sub.keywords if kw.arg in ("rank", "local_rank", "global_rank")
                     for n in walk(kw.value)}
        for sub in walk(node):
            if id(sub) in passed_on:
                continue  # Dataset(..., rank=rank): handed on (to cache or log on one rank), not a shard
            if isinstance(sub, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)) and ranks.is_rank(sub, fn):
                return True
            if isinstance(sub, ast.Call) and (last_name(sub.func) or "") in ("shard", "split_dataset_by_node"):
                return True
        if depth <= 0:
            return False
        for sub in walk(node):
            if id(sub) in passed_on:
                continue
            if isinstance(sub, ast.Name) or (isinstance(sub, ast.Attribute) and dotted(sub or "") and
                                             isinstance(sub.value, ast.Name) and sub.value.id == "self"):
                for value, scope in self.program.values_of(sub, fn, 1):
                    if value is not sub and self.mentions_rank(value, scope, depth - 1, strict):
                        return True
            if isinstance(sub, ast.Call):  # shard_for_this_rank(ds): what the local helper returns
                targets, _ = self.program.resolve(sub.func, fn)
                for target in targets:
                    if isinstance(target.node, ast.Module) or target.name == "__init__":
                        continue
                    for ret in (n.value for n in target.own if isinstance(n, ast.Return) and n.value is not None):
                        if self.mentions_rank(ret, target, depth - 1, strict):
                            return True
        return False

    def dataset_kind(self, node: ast.AST, fn: Function) -> bool:
        """An IterableDataset or a dataset class that shards itself by rank."""
        for value, scope in self.program.values_of(node, fn):
            if not isinstance(value, ast.Call):
                continue
            name = last_name(value.func) or ""
            if any(kw.arg in SHARD_KEYWORDS for kw in value.keywords):
                return True  # ImageDataset(..., shard=rank, num_shards=world): shards itself
            if "Iterable" in name or (self.program.qualify(value.func, scope) or "").startswith(("webdataset", "wds.")):
                return True
            target = self.program._callee_symbol(value.func, scope)
            if isinstance(target, Klass) and self._self_sharding(target, set()):
                return True
        return False

    def _self_sharding(self, klass: Klass, seen: set) -> bool:
        if klass in seen:
            return False
        seen.add(klass)
        if any("Iterable" in b for b in klass.bases):
            return True
        source = ast.get_source_segment("\n".join(klass.file.lines), klass.node) or ""
        if SELF_SHARDING.search(source):
            return True
        return any(self._self_sharding(b, seen) for b in self.program.bases(klass))

    def bound_name(self, fn: Function, call: ast.Call) -> str:
        for node in fn.own:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is call:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                return last_name(targets[0]) or ""
            if isinstance(node, ast.keyword) and node.value is call and node.arg:
                return node.arg
            if isinstance(node, ast.Return) and node.value is call and not isinstance(fn.node, ast.Module):
                return fn.name
        return ""

    # ------------------------------------------------------------------ loaders and samplers
    def loaders(self, framework: Optional[str]) -> list[LoaderFact]:
        program = self.program
        prepared = set()
        for fn, call, _, _ in self.calls():
            if last_name(call.func) == "prepare" and isinstance(call.func, ast.Attribute):
                for arg in call.args:
                    prepared.add(last_name(arg) or "")
        found = []
        for fn, call, guards, _ in self.calls():
            full = program.qualify(call.func, fn) or ""
            if last_name(call.func) != "DataLoader" or not (full.startswith("torch.") or full == "DataLoader"):
                continue
            dataset = call.args[0] if call.args else keyword(call, "dataset")
            sampler = keyword(call, "sampler") or keyword(call, "batch_sampler")
            if sampler is None and len(call.args) > 3:
                sampler = call.args[3]
            if sampler is None and len(call.args) > 4:
                sampler = call.args[4]
            kind = self._sampler_kind(sampler, fn)
            name = self.bound_name(fn, call)
            dataset_text = text(dataset) if dataset is not None else "?"
            builder = "" if isinstance(fn.node, ast.Module) else fn.name
            evaluation = bool(EVAL_NAME.search(name) or EVAL_NAME.search(dataset_text)
                              or EVAL_NAME.search(builder) or self._eval_only(fn))
            classes = {last_name(v.func) for v, _ in self.program.values_of(sampler, fn)
                       if isinstance(v, ast.Call) and last_name(v.func) in PLAIN_SAMPLERS} if sampler is not None else set()
            found.append(LoaderFact(
                sampler_class=" or ".join(sorted(filter(None, classes))),
                trains=self._trains(fn, name),
                train_named=bool(re.search(r"train", f"{name} {dataset_text} {builder}", re.IGNORECASE)),
                unseen_options=any(kw.arg is None for kw in call.keywords) and sampler is None,
                handed_to_framework=bool({name, last_name(dataset) if dataset is not None else ""}
                                         & self._handed_to_framework()),
                location=loc(fn, call), name=name, sampler=kind,
                sampler_text=text(sampler) if sampler is not None else "",
                dataset_text=dataset_text,
                sharded_by_rank=dataset is not None and self.mentions_rank(dataset, fn),
                iterable=dataset is not None and self.dataset_kind(dataset, fn),
                under_rank_guard=bool(guards) or self.only_guarded(fn) is True,
                single_process=_single_process(fn.__dict__.get("_call_conds", {}).get(id(call), ()),
                                               self._switches()),
                iterated=bool(name) and self._iterated_alone(name),
                evaluation=evaluation,
                prepared_by="accelerate" if framework == "accelerate" and name and name in prepared else None))
        return found

    def _eval_only(self, fn: Function) -> bool:
        """Every function that calls this one is an evaluation helper (named so)."""
        sites = self.callers().get(fn, [])
        return bool(sites) and all(not isinstance(c.node, ast.Module) and EVAL_NAME.search(c.name)
                                   for c, _ in sites)

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
        for fn in self.functions:
            for node, _ in _fn_loops(fn):
                if not isinstance(node, (ast.For, ast.AsyncFor)):
                    continue
                if not any(isinstance(c, ast.Call) and self._backward(c, fn)
                           for stmt in node.body for c in walk(stmt)):
                    continue
                for sub in walk(node.iter):
                    name = last_name(sub) if isinstance(sub, (ast.Name, ast.Attribute)) else None
                    if not name:
                        continue
                    names.add((id(fn), name))
                    for value, caller in fn.arguments.get(name, []):
                        names.add((id(caller), last_name(value) or ""))
                    if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "self":
                        # `for x in self.train_data` where __init__ did `self.train_data = train_data`
                        klass = self.program._class_of_fn(fn)
                        for value, owner in (self.program._attr(klass, name) if klass else []):
                            if isinstance(value, ast.Name):
                                for arg, caller in owner.arguments.get(value.id, []):
                                    names.add((id(caller), last_name(arg) or ""))
        self._train_names = names
        return names

    def _trains(self, fn: Function, name: str) -> bool:
        """The loader bound to name in fn is iterated by a backward loop: there, or (returned by a
        builder) where a caller binds what the builder returns."""
        if not name:
            return False
        if (id(fn), name) in self._training_names():
            return True
        if name == fn.name:  # `return DataLoader(...)`: follow the callers
            for caller, event in self.callers().get(fn, []):
                bound = self.bound_name(caller, event.node) if isinstance(event.node, ast.Call) else ""
                if bound and (id(caller), bound) in self._training_names():
                    return True
        return False

    def _sampler_kind(self, sampler: Optional[ast.AST], fn: Function) -> str:
        if sampler is None or is_const(sampler, None):
            return "none"
        kinds = set()
        for value, scope in self.program.values_of(sampler, fn):
            body = text(value, 100000)
            if "Distributed" in body:
                return "distributed"
            if is_const(value, None):
                kinds.add("none")
            elif isinstance(value, ast.Call) and last_name(value.func) in PLAIN_SAMPLERS:
                kinds.add("custom" if self.mentions_rank(value, scope) else "plain")
            elif isinstance(value, ast.Call) and last_name(value.func) == "BatchSampler" and value.args:
                kinds.add(self._sampler_kind(value.args[0], scope))
            else:
                kinds.add("custom")
        if "distributed" in kinds:  # BatchSampler(DistributedSampler(...) or RandomSampler(...))
            return "distributed"
        if "custom" in kinds:
            return "custom"
        return "plain" if "plain" in kinds else "none"

    def samplers(self, loaders: list[LoaderFact]) -> list[SamplerFact]:
        program = self.program
        set_epochs = [(fn, call, loops) for fn, call, _, loops in self.calls()
                      if isinstance(call.func, ast.Attribute) and call.func.attr == "set_epoch"]
        iterated = self._iterated()
        epoch_loop = any("epoch" in text(n.target).lower()
                         for f in program.files for n in f.of(ast.For, ast.AsyncFor))
        by_line = {(l.location.file, l.location.line): l for l in loaders}
        found = []
        for fn, call, _, _ in self.calls():
            if "DistributedSampler" not in (last_name(call.func) or ""):
                continue
            shuffle = keyword(call, "shuffle")
            if shuffle is None and len(call.args) > 3:
                shuffle = call.args[3]
            name = self.bound_name(fn, call)
            loader_name, loader_at, fed = "", None, ""
            for fact in loaders:
                if name and fact.sampler_text in (name, f"self.{name}") and fact.location.file == fn.file.display:
                    loader_at, fed = fact.location, fact.name
            if name in ("sampler", "batch_sampler") or not name:
                # built inline: DataLoader(ds, sampler=DistributedSampler(ds)) -> the loader's name
                for node in fn.own:
                    if isinstance(node, ast.Call) and any(kw.value is call for kw in node.keywords):
                        fact = by_line.get((fn.file.display, node.lineno))
                        loader_name = fact.name if fact else ""
                        loader_at = fact.location if fact else loader_at
                name = f"{loader_name}.sampler" if loader_name else name
            own = name.split(".")[0] if "." not in name else ""
            matched = []
            constant = None
            for sfn, scall, loops in set_epochs:
                receiver = scall.func.value
                rname = last_name(receiver) or ""
                ok = (own and rname == own) or rname in ("sampler", "batch_sampler", "train_sampler") \
                    or (dotted(receiver) or "").endswith(".sampler") \
                    or any(v is call for v, _ in program.values_of(receiver, sfn)) \
                    or (isinstance(receiver, ast.Name)
                        and any(v is call for v, _ in program.unpacked(receiver.id, sfn))) \
                    or not own
                if ok:
                    matched.append(loc(sfn, scall))
                    if scall.args and isinstance(scall.args[0], ast.Constant) and \
                            (loops > 0 or self.in_loop(sfn)):
                        constant = loc(sfn, scall)
            names = {n for n in (own, loader_name, name, fed) if n}
            if fn.name in names and not isinstance(fn.node, ast.Module):
                # `return DataLoader(...)` from a builder: the names its callers bind the loader
                # to (`self.val_loader = make_eval_loader(ds)`), not the loop variable's name
                names |= {self.bound_name(c, e.node) for c, e in self.callers().get(fn, [])
                          if isinstance(e.node, ast.Call)} - {""}
            across = any(iterated.get(n) for n in names) if any(n in iterated for n in names) else epoch_loop
            dataset = call.args[0] if call.args else keyword(call, "dataset")
            found.append(SamplerFact(
                location=loc(fn, call), name=name or "DistributedSampler(...)",
                shuffle=shuffle is None or not is_const(shuffle, False, 0),
                set_epoch=matched, constant_epoch=constant, across_epochs=across,
                sharded_by_rank=dataset is not None and self.mentions_rank(dataset, fn, strict=True),
                dataset_text=text(dataset) if dataset is not None else "?", loader=loader_at))
        return found

    def _iterated_alone(self, name: str) -> bool:
        """A loop over the loader named `name` (a name or attribute) whose body runs no
        collective: the ranks do not cooperate on each batch (tensor parallelism would)."""
        for fn in self.functions:
            for node, _ in _fn_loops(fn):
                if isinstance(node, (ast.For, ast.AsyncFor)) and name in {
                        last_name(n) for n in walk(node.iter) if isinstance(n, (ast.Name, ast.Attribute))}:
                    if not any(isinstance(c, ast.Call) and self.program.collective(c, fn) for c in walk(node)):
                        return True
        return False

    def _iterated(self) -> dict[str, bool]:
        """name -> iterated more than once (a `for` over it inside a loop, or in a function that
        runs in a loop)."""
        out: dict[str, bool] = {}
        for fn in self.functions:
            for node, depth in _fn_loops(fn):
                if isinstance(node, (ast.For, ast.AsyncFor)):
                    names = {last_name(n) for n in walk(node.iter) if isinstance(n, (ast.Name, ast.Attribute))}
                    again = depth > 0 or self.in_loop(fn)
                    for name in filter(None, names):
                        out[name] = out.get(name, False) or again
                # `it = iter(loader)` again inside a `while` (StopIteration: a new epoch)
                for sub in walk(node):
                    if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == "iter" \
                            and sub.args and isinstance(sub.args[0], (ast.Name, ast.Attribute)):
                        name = last_name(sub.args[0])
                        if name:
                            out[name] = True
        return out

    # ------------------------------------------------------------------ accumulation
    def accumulations(self) -> list[AccumulationFact]:
        found = []
        for fn in self.functions:
            for node, _ in _fn_loops(fn):
                fact = self._accumulation(fn, node)
                if fact is not None:
                    fact.no_sync = no_sync.covered(self.program, fn, node)
                    found.append(fact)
        return found

    def _accumulation(self, fn: Function, loop: ast.AST) -> Optional[AccumulationFact]:
        calls = list(_loop_calls(loop.body, False))
        backward = self._always(loop.body, fn, self._backward)
        if backward is None:
            return None
        by = "accelerate" if "accelerator" in text(backward.func).lower() else None
        steps = [(c, cond or kind == "sometimes") for c, cond in calls
                 for kind in [self._step_kind(c, fn)] if kind is not None]
        if steps and self._always(loop.body, fn, lambda c, f, d: self._step_kind(c, f) == "always") is not None:
            return None  # `if scaler is None: ... opt.step() else: scaler.step(opt)`: a step every pass
        if steps:
            if any(not cond for _, cond in steps):
                return None
            return AccumulationFact(loc(fn, backward), loc(fn, loop), loc(fn, steps[0][0]), "conditional_step", by)
        outer = _enclosing_loop(fn.node, loop)
        if outer is None:
            return None
        after = [c for c, cond in _loop_calls(outer.body, False, skip=loop) if self._step(c, fn)
                 and c.lineno > loop.lineno]
        if not after:
            return None
        return AccumulationFact(loc(fn, backward), loc(fn, loop), loc(fn, after[0]), "micro_step_loop", by)

    def late_sync_flags(self) -> list[AccumulationFact]:
        """`model.require_backward_grad_sync = last` set after `model(...)` in the same loop pass:
        DDP reads the flag in the forward, so it takes effect one micro-step late."""
        found = []
        for fn in self.functions:
            for loop, _ in _fn_loops(fn):
                body = [n for stmt in loop.body if not isinstance(stmt, (ast.For, ast.AsyncFor, ast.While))
                        for n in walk(stmt)]
                for node in body:
                    if not (isinstance(node, ast.Assign) and any(
                            isinstance(t, ast.Attribute) and t.attr == "require_backward_grad_sync"
                            for t in node.targets)):
                        continue
                    owner = next(text(t.value) for t in node.targets if isinstance(t, ast.Attribute))
                    forwards = [c for c in body if isinstance(c, ast.Call) and text(c.func) == owner
                                and c.lineno < node.lineno]
                    if forwards:
                        found.append(AccumulationFact(loc(fn, node), loc(fn, loop), loc(fn, forwards[0]),
                                                      "sync_flag_after_forward"))
        return found

    def _always(self, body: list[ast.stmt], fn: Function, pred, depth: int = 2) -> Optional[ast.Call]:
        """The first call matching pred that runs on every pass of body: not under an `if`,
        or under both sides of one (`if scaler is not None: scaler.scale(loss).backward()
        else: loss.backward()`). Nested loops and defs are not entered."""
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.For, ast.AsyncFor,
                                 ast.While)):
                continue
            if isinstance(stmt, ast.If):
                found = next((c for c in _expr_calls(stmt.test, False) if pred(c[0], fn, depth)), None)
                if found:
                    return found[0]
                if stmt.orelse:
                    a = self._always(stmt.body, fn, pred, depth)
                    if a is not None and self._always(stmt.orelse, fn, pred, depth) is not None:
                        return a
                continue
            if isinstance(stmt, (ast.With, ast.AsyncWith)):
                found = next((c for item in stmt.items for c, _ in _expr_calls(item.context_expr, False)
                              if pred(c, fn, depth)), None)
                found = found or self._always(stmt.body, fn, pred, depth)
                if found is not None:
                    return found
                continue
            if isinstance(stmt, ast.Try):
                found = self._always(stmt.body, fn, pred, depth)
                if found is not None:
                    return found
                continue
            for call, _ in _expr_calls(stmt, False):
                if pred(call, fn, depth):
                    return call
        return None

    def _backward(self, call: ast.Call, fn: Function, depth: int = 2) -> bool:
        if isinstance(call.func, ast.Attribute) and call.func.attr == "backward":
            owner = (last_name(call.func.value) or "").lower()
            return not any(w in owner for w in ("engine", "fabric", "deepspeed"))
        return self._through(call, fn, depth, self._backward)

    def _step(self, call: ast.Call, fn: Function, depth: int = 2) -> bool:
        if isinstance(call.func, ast.Attribute) and call.func.attr == "step":
            owner = text(call.func.value)
            if SCHEDULER_NAME.search(owner):
                return False
            if OPTIMIZER_NAME.search(owner) or any(OPTIMIZER_NAME.search(text(a)) for a in call.args):
                return True
            return False
        return self._through(call, fn, depth, self._step)

    def _step_kind(self, call: ast.Call, fn: Function) -> Optional[str]:
        """"always" / "sometimes" (a helper that steps under a switch its caller sets per call:
        `loss_scaler(loss, opt, update_grad=(i + 1) % accum == 0)`) / None (no step)."""
        if self._step(call, fn):
            return "always"
        targets, _ = self.program.resolve(call.func, fn)
        for target in targets:
            for stmt in target.own:
                if not isinstance(stmt, ast.If):
                    continue
                inner = [c for part in stmt.body for c, _ in _expr_calls(part, False) if self._step(c, target, 1)]
                if not inner:
                    continue
                switch = stmt.test.id if isinstance(stmt.test, ast.Name) else None
                if switch is None or switch not in target.params:
                    return "sometimes"
                passed = keyword(call, switch)
                index = target.params.index(switch)
                if passed is None and index < len(call.args):
                    passed = call.args[index]
                if passed is None or is_const(passed, True):
                    return "always"
                return None if is_const(passed, False, 0, None) else "sometimes"
        return None

    def _through(self, call: ast.Call, fn: Function, depth: int, pred) -> bool:
        if depth <= 0:
            return False
        targets, _ = self.program.resolve(call.func, fn)
        return any(self._always(target.node.body, target, pred, depth - 1) is not None for target in targets)

    # ------------------------------------------------------------------ saves
    def saves(self) -> list[SaveFact]:
        found = []
        for fn in self.functions:
            for event in fn.events:
                if event.kind != "save":
                    continue
                call = event.node
                how = save_call(self.program, call, fn) or "torch.save"
                path = save_path(call, how)
                path_text = text(path) if path is not None else "?"
                where = loc(fn, call)
                if event.guards:
                    found.append(SaveFact(where, path_text, False, f"under `{event.guards[0].test.text}`",
                                          _per_node(event.guards), how))
                    continue
                first = writes.rank_zero_first(self, fn, call)
                if first:
                    found.append(SaveFact(where, path_text, False, first, None, how))
                    continue
                if how != "torch.save" and fn.file is not self.program.files[0]:
                    # a library save inside an imported helper (a checkpoint handler, a tokenizer
                    # wrapper): which ranks hold the state it writes (an FSDP state dict gathered
                    # to rank 0) is not in the source; the entry script's own save is judged
                    found.append(SaveFact(where, path_text, False, "a library save in an imported helper", None, how))
                    continue
                if _single_process(event.conds, self._switches()):
                    found.append(SaveFact(where, path_text, False, "on the single-process path"))
                    continue
                if path is not None and self.mentions_rank(path, fn):
                    found.append(SaveFact(where, path_text, False, "the path depends on the rank"))
                    continue
                if path is not None and any("BytesIO" in text(v, 1000) for v, _ in self.program.values_of(path, fn)):
                    found.append(SaveFact(where, path_text, False, "saved to memory"))
                    continue
                if isinstance(fn.node, ast.Module):
                    found.append(SaveFact(where, path_text, True, "module level, no rank test", None, how))
                    continue
                guarded = self.only_guarded(fn)
                if guarded is None:
                    hook = fn.name.startswith("on_")
                    found.append(SaveFact(where, path_text, hook,
                                          "a hook the framework calls on every rank" if hook else "never called"))
                else:
                    found.append(SaveFact(where, path_text, not guarded,
                                          "every caller is under a rank test" if guarded else
                                          f"{fn.label} is called without a rank test",
                                          self._per_node_callers(fn) if guarded else None, how))
        return found

    def _per_node_callers(self, fn: Function, depth: int = 6, stack: tuple = ()) -> Optional[str]:
        """The per-node test on some way into fn whose other guards are per-node too: one rank
        per node gets there (`if local_rank == 0: save_checkpoint()`)."""
        if fn.rank_only or fn in stack or depth <= 0:
            return None
        for caller, event in self.callers().get(fn, []):
            if event.guards:
                found = _per_node(event.guards)
            elif not isinstance(caller.node, ast.Module):
                found = self._per_node_callers(caller, depth - 1, stack + (fn,))
            else:
                found = None
            if found:
                return found
        return None


SINGLE = re.compile(r"^not [\w.]*(?:distributed|fsdp|ddp|deepspeed|use_dist|multi_gpu)$|world_size == 1$",
                    re.IGNORECASE)


def _single_process(conds: tuple, switches: frozenset = frozenset()) -> bool:
    """Under `if not args.distributed:` / `if not enable_fsdp:`, or `if not X:` where the process
    group is set up only under `if X:`: the run is not distributed there."""
    return any(SINGLE.search(c) or (c.startswith("not ") and c[4:] in switches) for c, _ in conds)


def _switched(target: Function, call: ast.Call, cond: str, context: tuple = ()) -> Optional[bool]:
    """`if use_barriers:` in target: False where this call leaves the parameter at its default
    False (or passes a constant False), so the branch never runs on this way in; True where it
    passes a constant True (proven on); None when it cannot tell. context: the (function, call
    that entered it) pairs of the callers, innermost last: a parameter passed on by name is
    read at the call that gave it (bounded: the last three calls)."""
    if isinstance(target.node, ast.Module) or cond not in target.params:
        return None
    args = target.node.args
    positional = [a.arg for a in args.posonlyargs + args.args]
    value = keyword(call, cond)
    index = positional.index(cond) if cond in positional else -1
    offset = 1 if target.cls is not None and target.parent is None and positional[:1] in (["self"], ["cls"]) else 0
    if value is None and 0 <= index - offset < len(call.args):
        value = call.args[index - offset]
    if value is None and any(kw.arg is None for kw in call.keywords):
        return None  # **kwargs: cannot tell
    if value is None and index >= 0:
        defaults = args.defaults
        first = len(positional) - len(defaults)
        value = defaults[index - first] if index >= first else None
    if value is None:
        return None
    if isinstance(value, ast.Name) and context:
        caller, entered = context[-1]
        if entered is not None and value.id in caller.params and not caller.bindings.get(value.id):
            return _switched(caller, entered, value.id, context[:-1])
    if is_const(value, False, None, 0):
        return False
    return True if is_const(value, True) else None


def _per_node(guards: tuple[Guard, ...]) -> Optional[str]:
    """The guarding test when every rank test around a statement is true on one rank per node
    (local rank 0), not on one rank of the job."""
    tests = [g.test for g in guards]
    if tests and all(t.scope == "node" and t.polarity == "zero" for t in tests):
        return tests[-1].text
    return None


Reached = tuple  # (op, Location, chain, conds): a collective a call leads to


def _assume(assumption: str, conds: tuple) -> str:
    """The guard's own assumption, and the switches on the way to the collective (`if
    use_fsdp_eval:` in a callee): the finding holds only where they are on."""
    flags = list(dict.fromkeys(f"`{c}`" for c, flag in conds if flag))
    if not flags:
        return assumption
    more = f"{' and '.join(flags)} {'is' if len(flags) == 1 else 'are'} true on the way"
    return f"{assumption}, and {more}" if assumption else more


def _op_kind(op: str) -> str:
    return op.split("(")[0]


def _fn_loops(fn: Function) -> list[tuple[ast.AST, int]]:
    """A function's loops with their nesting depth, found once (several rules read them)."""
    found = fn.__dict__.get("_loops")
    if found is None:
        found = fn.__dict__["_loops"] = list(_loops(fn.node, 0))
    return found


def _loops(root: ast.AST, depth: int) -> Iterator[tuple[ast.AST, int]]:
    """Every loop of a function body with the number of loops around it (no nested defs). A
    loop is a statement: only the statement lists are followed, never an expression (most of a
    tree's nodes), in the order of the fields as a walk of every child meets them."""
    for name in _block_fields(root.__class__):
        for child in getattr(root, name):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(child, (ast.For, ast.AsyncFor, ast.While)):
                yield child, depth
                yield from _loops(child, depth + 1)
            else:
                yield from _loops(child, depth)


_BLOCKS: dict[type, tuple[str, ...]] = {}


def _block_fields(cls: type) -> tuple[str, ...]:
    """The fields of a node class that hold statements (or handlers, match cases: their bodies)."""
    found = _BLOCKS.get(cls)
    if found is None:
        found = _BLOCKS[cls] = tuple(f for f in cls._fields if f in ("body", "orelse", "finalbody", "handlers", "cases"))
    return found


def _enclosing_loop(root: ast.AST, target: ast.AST) -> Optional[ast.AST]:
    for node, _ in _loops(root, 0):
        for inner, _ in _loops(node, 0):
            if inner is target:
                # the nearest: no loop between node and target
                if not any(mid is not target and any(x is target for x, _ in _loops(mid, 0))
                           for mid, _ in _loops(node, 0)):
                    return node
    return None


def _loop_calls(body: list[ast.stmt], conditional: bool, skip: Optional[ast.AST] = None
                ) -> Iterator[tuple[ast.Call, bool]]:
    """The calls a loop body makes on each pass, with whether an `if` decides them; nested
    loops are not entered (their calls run a different number of times)."""
    for stmt in body:
        if stmt is skip or isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                             ast.For, ast.AsyncFor, ast.While)):
            continue
        if isinstance(stmt, ast.If):
            yield from _expr_calls(stmt.test, conditional)
            yield from _loop_calls(stmt.body, True, skip)
            yield from _loop_calls(stmt.orelse, True, skip)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                yield from _expr_calls(item.context_expr, conditional)
            yield from _loop_calls(stmt.body, conditional, skip)
        elif isinstance(stmt, ast.Try):
            yield from _loop_calls(stmt.body, conditional, skip)
            yield from _loop_calls(stmt.finalbody, conditional, skip)
        else:
            yield from _expr_calls(stmt, conditional)


def _expr_calls(node: ast.AST, conditional: bool) -> Iterator[tuple[ast.Call, bool]]:
    for sub in walk(node):
        if isinstance(sub, ast.Call):
            yield sub, conditional


def build(program: Program, script: str) -> LintFacts:
    """All the facts of one program."""
    builder = FactBuilder(program)
    distributed, how, framework, ddp = None, "", None, False
    for fn, call, _, _ in builder.calls():
        full = program.qualify(call.func, fn) or ""
        name = last_name(call.func) or ""
        if distributed is None and name in ("init_process_group", "init_distributed", "initialize_distributed"):
            distributed, how = loc(fn, call), f"{text(call.func)}()"
        if program.ddp_call(call, fn):
            ddp = True
        if name == "Accelerator" and program.uses("accelerate"):
            framework = "accelerate"
        elif name in ("Trainer", "Fabric") and program.uses_lightning() and not full.startswith("transformers"):
            framework = framework or "lightning"
        elif name.endswith("Trainer") and (full.startswith(("transformers", "trl"))):
            framework = framework or "transformers"
    if distributed is None and framework is not None:
        how = framework
    if distributed is None and ddp:
        for fn, call, _, _ in builder.calls():
            if program.ddp_call(call, fn):
                distributed, how = loc(fn, call), "DistributedDataParallel(...)"
                break
    no_sync = accumulate = False
    for f in program.files:
        attrs = {n.attr for n in f.of(ast.Attribute)}
        no_sync = no_sync or "no_sync" in attrs or "require_backward_grad_sync" in attrs
        accumulate = accumulate or "accumulate" in attrs or \
            any(n.arg == "gradient_accumulation_steps" for n in f.of(ast.keyword))
    loaders = builder.loaders(framework)
    reachable = {id(f.node) for f in program.reachable}
    return LintFacts(
        accumulate=accumulate,
        script=script, files=[f.display for f in program.files],
        statements=sum(f.statements for f in program.files),
        distributed=distributed, distributed_how=how, framework=framework, ddp_model=ddp,
        no_sync=no_sync,
        guarded_collectives=builder.guarded_collectives(), loaders=loaders,
        samplers=builder.samplers(loaders), accumulations=builder.accumulations() + builder.late_sync_flags(),
        saves=builder.saves(),
        functions=sum(1 for f in program.functions if not isinstance(f.node, ast.Module)),
        unreachable=program.skipped,
        data_sized=data_sized.gather(program.files, reachable) + data_keys.gather(program.files, reachable),
        unranked_seeds=worker_seeds.gather(program.files, reachable, program.functions),
        rank_local=rank_state.gather(builder, ddp or framework is not None))
