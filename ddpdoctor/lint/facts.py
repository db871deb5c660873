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
from ddpdoctor.lint import data_sized
from ddpdoctor.lint.patterns import dotted, is_const, keyword, last_name, text
from ddpdoctor.lint.program import Event, Function, Guard, Klass, Program, _own_nodes

MAX_DEPTH = 4  # calls followed from a guarded block to the collective
EVAL_NAME = re.compile(r"val|valid|test|eval|dev\b|holdout|calib", re.IGNORECASE)
OPTIMIZER_NAME = re.compile(r"opt", re.IGNORECASE)
SCHEDULER_NAME = re.compile(r"sched|warmup|lr_", re.IGNORECASE)
PLAIN_SAMPLERS = {"RandomSampler", "SequentialSampler", "WeightedRandomSampler", "SubsetRandomSampler"}
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
    pattern: str  # "micro_step_loop" | "conditional_step"


@dataclass
class SaveFact:
    location: Location
    path_text: str
    every_rank: bool  # reached by every rank: no rank test on any way to it
    reason: str  # why it is (not) judged every-rank


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
    guarded_collectives: list[GuardedCollective] = field(default_factory=list)
    loaders: list[LoaderFact] = field(default_factory=list)
    samplers: list[SamplerFact] = field(default_factory=list)
    accumulations: list[AccumulationFact] = field(default_factory=list)
    saves: list[SaveFact] = field(default_factory=list)
    elapsed_s: float = 0.0
    data_sized: list = field(default_factory=list)  # lint/data_sized.DataSizedCollective (DDP807)


def loc(fn: Function, node: ast.AST) -> Location:
    return Location(fn.file.display, getattr(node, "lineno", None))


class FactBuilder:
    def __init__(self, program: Program) -> None:
        self.program = program
        self._reach: dict[Function, list[tuple[str, Location, list[str]]]] = {}
        self._callers: Optional[dict[Function, list[tuple[Function, Event]]]] = None

    # ------------------------------------------------------------------ collectives
    def reach(self, fn: Function, depth: int = MAX_DEPTH, stack: tuple = ()) -> list[tuple[str, Location, list[str]]]:
        """Every collective a function may run, directly or through local calls, with the chain."""
        if fn in stack or depth <= 0:
            return []
        if fn in self._reach and not stack:
            return self._reach[fn]
        found = []
        for event in fn.events:
            if event.kind == "collective":
                found.append((event.op, loc(fn, event.node), []))
            elif event.kind in ("call", "ref"):
                for target in event.targets:
                    step = f"{fn.file.display}:{event.line} {target.label}"
                    for op, where, chain in self.reach(target, depth - 1, stack + (fn,)):
                        found.append((op, where, [step] + chain))
        if not stack:
            self._reach[fn] = found
        return found

    def _ops_under(self, fn: Function, branch: int, side: str) -> Counter:
        ops: Counter = Counter()
        for event in fn.events:
            if not any(g.branch == branch and g.side == side for g in event.guards):
                continue
            if event.kind == "collective":
                ops[_op_kind(event.op)] += 1
            elif event.kind in ("call", "ref"):
                for target in event.targets:
                    ops.update(_op_kind(op) for op, _, _ in self.reach(target, MAX_DEPTH - 1))
        return ops

    def guarded_collectives(self) -> list[GuardedCollective]:
        best: dict[tuple, GuardedCollective] = {}
        for fn in self.program.functions:
            candidates: list[tuple[Guard, GuardedCollective]] = []
            for event in fn.events:
                if not event.guards:
                    continue
                guard = event.guards[-1]
                reached: list[tuple[str, Location, list[str]]] = []
                if event.kind == "collective":
                    reached.append((event.op, loc(fn, event.node), []))
                elif event.kind in ("call", "ref"):
                    for target in event.targets:
                        step = f"{fn.file.display}:{event.line} {target.label}"
                        for op, where, chain in self.reach(target, MAX_DEPTH - 1, (fn,)):
                            reached.append((op, where, [step] + chain))
                for op, where, chain in reached:
                    candidates.append((guard, GuardedCollective(
                        op, where, guard.test.text, Location(guard.file, guard.line), fn.label, chain)))
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
        for fn in self.program.functions:
            for call, guards, loops in fn.calls:
                yield fn, call, guards, loops

    def callers(self) -> dict[Function, list[tuple[Function, Event]]]:
        if self._callers is None:
            self._callers = {}
            for fn in self.program.functions:
                for event in fn.events:
                    if event.kind in ("call", "ref"):
                        for target in set(event.targets) | set(event.weak):
                            self._callers.setdefault(target, []).append((fn, event))
        return self._callers

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
            if event.guards:
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

    def mentions_rank(self, node: ast.AST, fn: Function, depth: int = 3) -> bool:
        ranks = self.program.ranks
        for sub in ast.walk(node):
            if isinstance(sub, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)) and ranks.is_rank(sub):
                return True
            if isinstance(sub, ast.Call) and (last_name(sub.func) or "") in ("shard", "split_dataset_by_node"):
                return True
        if depth <= 0:
            return False
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) or (isinstance(sub, ast.Attribute) and dotted(sub or "") and
                                             isinstance(sub.value, ast.Name) and sub.value.id == "self"):
                for value, scope in self.program.values_of(sub, fn, 1):
                    if value is not sub and self.mentions_rank(value, scope, depth - 1):
                        return True
        return False

    def dataset_kind(self, node: ast.AST, fn: Function) -> bool:
        """An IterableDataset or a dataset class that shards itself by rank."""
        for value, scope in self.program.values_of(node, fn):
            if not isinstance(value, ast.Call):
                continue
            name = last_name(value.func) or ""
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
        for node in _own_nodes(fn.node):
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
            evaluation = bool(EVAL_NAME.search(name) or EVAL_NAME.search(dataset_text)
                              or (not isinstance(fn.node, ast.Module) and EVAL_NAME.search(fn.name)))
            found.append(LoaderFact(
                location=loc(fn, call), name=name, sampler=kind,
                sampler_text=text(sampler) if sampler is not None else "",
                dataset_text=dataset_text,
                sharded_by_rank=dataset is not None and self.mentions_rank(dataset, fn),
                iterable=dataset is not None and self.dataset_kind(dataset, fn),
                under_rank_guard=bool(guards) or self.only_guarded(fn) is True,
                evaluation=evaluation,
                prepared_by="accelerate" if framework == "accelerate" and name and name in prepared else None))
        return found

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
        if "custom" in kinds:
            return "custom"
        return "plain" if "plain" in kinds else "none"

    def samplers(self, loaders: list[LoaderFact]) -> list[SamplerFact]:
        program = self.program
        set_epochs = [(fn, call, loops) for fn, call, _, loops in self.calls()
                      if isinstance(call.func, ast.Attribute) and call.func.attr == "set_epoch"]
        iterated = self._iterated()
        epoch_loop = any(isinstance(n, (ast.For, ast.AsyncFor)) and "epoch" in text(n.target).lower()
                         for f in program.files for n in ast.walk(f.tree))
        by_line = {(l.location.file, l.location.line): l for l in loaders}
        found = []
        for fn, call, _, _ in self.calls():
            if "DistributedSampler" not in (last_name(call.func) or ""):
                continue
            shuffle = keyword(call, "shuffle")
            if shuffle is None and len(call.args) > 3:
                shuffle = call.args[3]
            name = self.bound_name(fn, call)
            loader_name, loader_at = "", None
            for fact in loaders:
                if name and fact.sampler_text in (name, f"self.{name}") and fact.location.file == fn.file.display:
                    loader_at = fact.location
            if name in ("sampler", "batch_sampler") or not name:
                # built inline: DataLoader(ds, sampler=DistributedSampler(ds)) -> the loader's name
                for node in _own_nodes(fn.node):
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
                    or not own
                if ok:
                    matched.append(loc(sfn, scall))
                    if scall.args and isinstance(scall.args[0], ast.Constant) and \
                            (loops > 0 or self.in_loop(sfn)):
                        constant = loc(sfn, scall)
            names = {n for n in (own, loader_name, name) if n}
            across = any(iterated.get(n) for n in names) if any(n in iterated for n in names) else epoch_loop
            dataset = call.args[0] if call.args else keyword(call, "dataset")
            found.append(SamplerFact(
                location=loc(fn, call), name=name or "DistributedSampler(...)",
                shuffle=shuffle is None or not is_const(shuffle, False, 0),
                set_epoch=matched, constant_epoch=constant, across_epochs=across,
                sharded_by_rank=dataset is not None and self.mentions_rank(dataset, fn),
                dataset_text=text(dataset) if dataset is not None else "?", loader=loader_at))
        return found

    def _iterated(self) -> dict[str, bool]:
        """name -> iterated more than once (a `for` over it inside a loop, or in a function that
        runs in a loop)."""
        out: dict[str, bool] = {}
        for fn in self.program.functions:
            for node, depth in _loops(fn.node, 0):
                if not isinstance(node, (ast.For, ast.AsyncFor)):
                    continue
                names = {last_name(n) for n in ast.walk(node.iter) if isinstance(n, (ast.Name, ast.Attribute))}
                again = depth > 0 or self.in_loop(fn)
                for name in filter(None, names):
                    out[name] = out.get(name, False) or again
        return out

    # ------------------------------------------------------------------ accumulation
    def accumulations(self) -> list[AccumulationFact]:
        found = []
        for fn in self.program.functions:
            for node, _ in _loops(fn.node, 0):
                fact = self._accumulation(fn, node)
                if fact is not None:
                    found.append(fact)
        return found

    def _accumulation(self, fn: Function, loop: ast.AST) -> Optional[AccumulationFact]:
        calls = list(_loop_calls(loop.body, False))
        backward = [c for c, cond in calls if not cond and self._backward(c, fn)]
        if not backward:
            return None
        steps = [(c, cond) for c, cond in calls if self._step(c, fn)]
        if steps:
            if any(not cond for _, cond in steps):
                return None
            return AccumulationFact(loc(fn, backward[0]), loc(fn, loop), loc(fn, steps[0][0]), "conditional_step")
        outer = _enclosing_loop(fn.node, loop)
        if outer is None:
            return None
        after = [c for c, cond in _loop_calls(outer.body, False, skip=loop) if self._step(c, fn)
                 and c.lineno > loop.lineno]
        if not after:
            return None
        return AccumulationFact(loc(fn, backward[0]), loc(fn, loop), loc(fn, after[0]), "micro_step_loop")

    def _backward(self, call: ast.Call, fn: Function, depth: int = 2) -> bool:
        if isinstance(call.func, ast.Attribute) and call.func.attr == "backward":
            owner = (last_name(call.func.value) or "").lower()
            return not any(w in owner for w in ("engine", "accelerator", "fabric", "deepspeed"))
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

    def _through(self, call: ast.Call, fn: Function, depth: int, pred) -> bool:
        if depth <= 0:
            return False
        targets, _ = self.program.resolve(call.func, fn)
        for target in targets:
            for inner, cond in _loop_calls(target.node.body, False):
                if not cond and pred(inner, target, depth - 1):
                    return True
        return False

    # ------------------------------------------------------------------ saves
    def saves(self) -> list[SaveFact]:
        found = []
        for fn in self.program.functions:
            for event in fn.events:
                if event.kind != "save":
                    continue
                call = event.node
                path = call.args[1] if len(call.args) > 1 else keyword(call, "f")
                path_text = text(path) if path is not None else "?"
                where = loc(fn, call)
                if event.guards:
                    found.append(SaveFact(where, path_text, False, f"under `{event.guards[0].test.text}`"))
                    continue
                if path is not None and self.mentions_rank(path, fn):
                    found.append(SaveFact(where, path_text, False, "the path depends on the rank"))
                    continue
                if path is not None and any("BytesIO" in text(v, 1000) for v, _ in self.program.values_of(path, fn)):
                    found.append(SaveFact(where, path_text, False, "saved to memory"))
                    continue
                if isinstance(fn.node, ast.Module):
                    found.append(SaveFact(where, path_text, True, "module level, no rank test"))
                    continue
                guarded = self.only_guarded(fn)
                if guarded is None:
                    hook = fn.name.startswith("on_")
                    found.append(SaveFact(where, path_text, hook,
                                          "a hook the framework calls on every rank" if hook else "never called"))
                else:
                    found.append(SaveFact(where, path_text, not guarded,
                                          "every caller is under a rank test" if guarded else
                                          f"{fn.label} is called without a rank test"))
        return found


def _op_kind(op: str) -> str:
    return op.split("(")[0]


def _loops(root: ast.AST, depth: int) -> Iterator[tuple[ast.AST, int]]:
    """Every loop of a function body with the number of loops around it (no nested defs)."""
    for child in ast.iter_child_nodes(root):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(child, (ast.For, ast.AsyncFor, ast.While)):
            yield child, depth
            yield from _loops(child, depth + 1)
        else:
            yield from _loops(child, depth)


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
    for sub in ast.walk(node):
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
    no_sync = any(isinstance(n, ast.Attribute) and n.attr in ("no_sync", "require_backward_grad_sync")
                  for f in program.files for n in ast.walk(f.tree))
    loaders = builder.loaders(framework)
    return LintFacts(
        script=script, files=[f.display for f in program.files],
        statements=sum(f.statements for f in program.files),
        distributed=distributed, distributed_how=how, framework=framework, ddp_model=ddp,
        no_sync=no_sync,
        guarded_collectives=builder.guarded_collectives(), loaders=loaders,
        samplers=builder.samplers(loaders), accumulations=builder.accumulations(),
        saves=builder.saves(), data_sized=data_sized.gather(program.files))
