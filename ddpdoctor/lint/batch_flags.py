"""DDP809 on a flag that comes with each rank's own batch (rank_state.py reads the other shapes).

    for step, (batch, ok) in enumerate(loader):
        if not all(ok):      # the dataset marks a sample it could not build
            continue         # this rank skips the backward the others run
        loss = model(batch).sum(); loss.backward()

Each rank draws its own samples, so a value that arrives with the batch (the loop's target, and
what is unpacked, indexed or read off it without a call) differs between ranks. A test on it
that every rank runs and that breaks or continues before a collective, a DDP forward or a
backward of a DDP model is a divergence. What only sizes or types the batch (`len`, `.shape`)
and the loop's counter (`enumerate`'s index) are not read; tests on a tensor's value
(`isfinite`, `.item()`) are rank_state.py's; a flag handed to a collective first is shared.
"""

from __future__ import annotations

import ast
from typing import Any

from ddpdoctor.core.findings import Location
from ddpdoctor.lint import rank_state
from ddpdoctor.lint.nodes import walk
from ddpdoctor.lint.patterns import last_name, text

Builder = Any  # ddpdoctor.lint.facts.FactBuilder (facts imports this module, not the reverse)
# Calls that make (or wrap) a loader: their result's items are each rank's own batches.
LOADER_CALLS = {"DataLoader", "setup_dataloaders", "prepare", "prepare_data_loader"}
# Wrappers a loop reads a loader through: the loader is their first argument.
WRAPPERS = {"enumerate", "tqdm", "iter", "zip"}


def gather(builder: Builder, ddp: bool) -> list[rank_state.RankLocalDecision]:
    if not ddp:
        return []
    found = []
    for fn in builder.functions:
        if fn.node is None:
            continue
        loops = [n for n in fn.own if n.__class__ is ast.For or n.__class__ is ast.AsyncFor]  # exact: cheap
        batches = [(loop, names) for loop in loops for names in [_batch_names(builder, fn, loop)] if names]
        if not batches:
            continue
        items = {id(s.node): s for s in rank_state._statements(builder.program, fn, fn.node.body, (), (), False)}
        # (a batch handed to the DDP forward stays the rank's own: the forward shares no input)
        shared = rank_state.shared_names(builder.program, fn, forwards=False)
        for loop, names in batches:
            for stmt in _tests(loop.body):
                item = items.get(id(stmt))
                if item is None or item.guards or not item.loops or item.loops[-1] is not loop:
                    continue
                if rank_state.none_batch_alike(builder.program, fn, loop, stmt.test):
                    continue  # (a default-collated loader yields no None batch; a prefetcher's end is every rank's)
                if _helper_verdict(builder, fn, stmt.test):
                    continue  # `if train_one_step(step, batch): break`: the helper's answer, not the batch
                flags = (rank_state.value_inputs(rank_state.none_decided_by(loop, stmt.test, builder.program, fn)) & names) - shared
                if not flags or _tensor_test(stmt.test):
                    continue
                effect = rank_state._effect(builder, fn, stmt, item, ddp, after_only=True)
                if effect is None:
                    continue
                action, work = effect
                found.append(rank_state.RankLocalDecision(
                    Location(fn.file.display, stmt.lineno), text(stmt.test), action, ", ".join(sorted(flags)),
                    "tensor_value", work, assumption="the value differs between ranks (each rank's own batch)"))
    return found


def _batch_names(builder: Builder, fn, loop: ast.AST) -> set[str]:
    """The names a loop over a loader binds to each rank's batch, and what the body unpacks from
    them without a call; empty when the loop is not over a loader."""
    names = loop_batch(builder, fn, loop)
    for node in walk(loop):
        if isinstance(node, ast.Assign) and not any(isinstance(n, ast.Call) for n in walk(node.value)) \
                and rank_state.value_inputs(node.value) & names:
            names |= {n.id for t in node.targets for n in walk(t) if isinstance(n, ast.Name)}
    return names


def loop_batch(builder: Builder, fn, loop: ast.AST) -> set[str]:
    """The names a loop over a loader binds to each rank's batch (its target, less enumerate's
    counter); empty when the loop is not over a loader."""
    source, target = loop.iter, loop.target
    counted = False
    while isinstance(source, ast.Call) and last_name(source.func) in WRAPPERS and source.args:
        counted = counted or last_name(source.func) == "enumerate"
        source = source.args[0]
    if isinstance(source, ast.Name):
        # `bar = tqdm(loader)` then `for i, batch in enumerate(bar)`: the wrapped loader's batches
        wrapped = [v for v, scope in builder.program.values_of(source, fn, 1) if scope is fn]
        if len(wrapped) == 1 and isinstance(wrapped[0], ast.Call) and last_name(wrapped[0].func) in WRAPPERS \
                and wrapped[0].args:
            source = wrapped[0].args[0]
    if isinstance(source, ast.Call) and source.args and not _a_loader(builder, fn, source) and \
            _a_loader(builder, fn, source.args[0]):
        source = source.args[0]  # `metric_logger.log_every(data_loader, 10)`: a logger yielding its batches
    if not _a_loader(builder, fn, source):
        return set()
    if counted and isinstance(target, ast.Tuple) and len(target.elts) == 2:
        target = target.elts[1]  # `for i, batch in enumerate(loader)`: i is the same on every rank
    return {n.id for n in walk(target) if isinstance(n, ast.Name)}


def _a_loader(builder: Builder, fn, source: ast.AST) -> bool:
    if isinstance(source, ast.Call):
        return _loader_made(builder, source, fn)
    if not isinstance(source, (ast.Name, ast.Attribute)):
        return False
    return any(_loader_made(builder, value, scope) or (
        # (`self.val_loader = val_loader` of `model, val_loader = accelerator.prepare(model, val_loader)`)
        value.__class__ is ast.Name and value is not source and (
            _unpacked_from_loader_call(scope, value.id) or _handed_a_loader(builder, scope, value)))
        for value, scope in builder.program.values_of(source, fn, 2))


def _handed_a_loader(builder: Builder, scope, name: ast.Name) -> bool:
    """Where values_of stopped following a name a field was set from (`self.data_loader =
    data_loader` in a trainer's constructor): the loader it holds - a parameter the calls into
    scope hand one, or a name scope binds to one (`data_loader = config.init_data_loader()`)."""
    program = builder.program
    if name.id in getattr(scope, "params", ()):
        handed = [(value, owner) for given, caller in scope.arguments.get(name.id, ())[:4]
                  for value, owner in program.values_of(given, caller, 1)[:4]]
    else:
        handed = program.values_of(name, scope, 1)[:4]
    return any(value is not name and _loader_made(builder, value, owner) for value, owner in handed)


def _unpacked_from_loader_call(scope, name: str) -> bool:
    """scope binds `name` as an item of what a loader-making call returns (`model, loader =
    accelerator.prepare(model, loader)`)."""
    if scope.node is None or isinstance(scope.node, ast.Module):
        return False
    return any(node.value.__class__ is ast.Call and last_name(node.value.func) in LOADER_CALLS
               and any(t.__class__ is ast.Tuple and any(e.__class__ is ast.Name and e.id == name for e in t.elts)
                       for t in node.targets)
               for node in scope.own_of(ast.Assign))


def _loader_made(builder: Builder, value: ast.AST, scope) -> bool:
    return isinstance(value, ast.Call) and (last_name(value.func) in LOADER_CALLS
                                            or _built_by_helper(builder, scope, value))


def _built_by_helper(builder: Builder, fn, call: ast.Call) -> bool:
    """`data_loader = make_data_loader(cfg)`: a local builder that makes the DataLoader in its
    own body and returns it (or the list it appended it to); or one that returns an object of a
    local DataLoader subclass, built by name or by a config factory (pytorch-template's
    `config.init_data_loader()` returning `self.init_obj('data_loader', module_data)`, each class
    the configs may name a `BaseDataLoader(DataLoader)`)."""
    program = builder.program
    for target in program.resolve(call.func, fn)[0]:
        if isinstance(target.node, ast.Module) or not target.returned:
            continue
        if any(last_name(c.func) in LOADER_CALLS for c in target.own_calls):
            return True
        made = [(v, scope) for ret in target.returned[:4] for v, scope in [(ret, target), *program.values_of(ret, target, 1)]
                if v.__class__ is ast.Call]
        for value, scope in made[:8]:
            classes = [program.callee(value.func, scope)] + list(program._module_factory_classes(value, scope))
            if any(program.is_class(k) and any(base.endswith("DataLoader") for base in program.library_bases(k))
                   for k in classes):
                return True
    return False


def _helper_verdict(builder: Builder, fn, test: ast.AST) -> bool:
    """The test is (the negation of) a call of a local function handed the batch, which answers
    with constants only (`return True` past `if global_step >= max_steps:`): what decides is that
    function's own tests, which rank_state reads as a step helper's; the batch is only handed on."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    if not isinstance(test, ast.Call):
        return False
    targets = [t for t in builder.program.resolve(test.func, fn)[0] if t.node is not None
               and isinstance(t.node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return bool(targets) and all(
        all(isinstance(r.value, ast.Constant) for r in walk(t.node) if isinstance(r, ast.Return) and r.value is not None)
        and any(isinstance(r, ast.Return) for r in walk(t.node)) for t in targets)


def _tests(body: list[ast.stmt]):
    """The `if`s of a loop body, not those of a nested loop or def."""
    for stmt in body:
        if isinstance(stmt, ast.If):
            yield stmt
            yield from _tests(stmt.body)
            yield from _tests(stmt.orelse)
        elif isinstance(stmt, (ast.With, ast.AsyncWith, ast.Try)):
            yield from _tests(stmt.body)


def _tensor_test(test: ast.AST) -> bool:
    """A test rank_state.py reads as a tensor's value (`isfinite(x)`, `x.item() > k`)."""
    return any(isinstance(c, ast.Call) and (last_name(c.func) in rank_state.VALUE_TESTS or (
        isinstance(c.func, ast.Attribute) and c.func.attr == "item")) for c in walk(test))

