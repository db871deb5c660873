"""Decorators that decide on which ranks a function runs.

Three shapes: a def under a rank test of the function around it (the name is bound on those
ranks alone), a rank-only decorator by name (`@rank_zero_only`, patterns.rank_only_decorator), and a
decorator handed a predicate on the rank (`@when(lambda: local_rank == 0)`, audiotools' idiom, or a
project's own `run_if(...)`). The second is read from its values, not its name: a zero-argument
lambda whose body is a rank test. When the decorator is local, its code must show the gate (an
`if` on a call of the parameter the predicate is passed as); a decorator from a library, whose code
is not read, is taken to gate on its predicate, and the findings that rest on it say so.
"""

from __future__ import annotations

import ast
from dataclasses import replace
from typing import Any, Optional

from ddpdoctor.lint import reaching
from ddpdoctor.lint.nodes import walk
from ddpdoctor.lint.patterns import RankTest, text

Program = Any  # ddpdoctor.lint.program.Program
Function = Any


def decorator_test(program: Program, fn: Function) -> Optional[RankTest]:
    """The rank test a decorator of fn puts around its whole body, or None."""
    if fn.rank_only:
        return RankTest(fn.rank_only, fn.rank_only, "zero")
    defined = defining_test(program, fn)
    if defined is not None:
        return defined
    where = fn.parent or fn.module.body  # the predicate reads the names where the def sits
    for deco in getattr(fn.node, "decorator_list", []):
        if isinstance(deco, (ast.Name, ast.Attribute)):
            # (a decorator defined in the class body itself, `@master_only` over a method: the
            # class's own function of that name, which the module does not see)
            own = program.method(fn.cls, deco.id) if fn.cls is not None and deco.__class__ is ast.Name else None
            test = _wrapper_test(program, deco, where, [own] if own is not None and own.cls is fn.cls else None)
            if test is not None:
                return replace(test, text=f"@{text(deco)}")
        if not isinstance(deco, ast.Call):
            continue
        for slot, arg in [*enumerate(deco.args), *((kw.arg, kw.value) for kw in deco.keywords)]:
            if not (isinstance(arg, ast.Lambda) and not arg.args.args and not arg.args.vararg):
                continue
            test = program.ranks.guard(arg.body, where)
            if test is None:
                continue
            gates = _gates_on(program, deco.func, where, slot)
            if gates is False:
                continue
            said = f"@{text(deco)}"
            if gates is None:
                assumption = f"`{text(deco.func)}` runs the function only where its predicate holds"
                test = replace(test, assumption="; ".join(a for a in (test.assumption, assumption) if a))
            return replace(test, text=said)
    return None


def defining_test(program: Program, fn: Function) -> Optional[RankTest]:
    """The rank test around fn's def in the function that holds it: a handler defined under
    `if local_rank == 0:` (`@evaluator.on(Events.EPOCH_COMPLETED) def save(engine): ...`) is
    bound on rank 0 alone, so whatever runs it - the code itself, or the framework it is
    registered with - runs it there. Only the side of the test that is rank 0's."""
    parent = fn.parent
    if parent is None:
        return None
    for owner, field in reaching.owners_of_def(parent.node, fn.node):
        if owner.__class__ is not ast.If or field not in ("body", "orelse"):
            continue
        test = program.ranks.guard(owner.test, parent)
        if test is None:
            continue
        if field == "body" and test.polarity == "zero":
            return test
        if field == "orelse" and test.polarity == "nonzero" and not test.assumption:
            return replace(test, text=f"not ({test.text})", polarity="zero")
    return None


def rebound_test(program: Program, call: ast.Call, fn: Function) -> Optional[tuple[RankTest, ast.AST]]:
    """The decorator applied by hand: `checkpoint = when(lambda: accel.local_rank == 0)(checkpoint)`
    (DAC's idiom, with `global checkpoint` in the training function) before the call: the call
    runs the function under the predicate. (The test and the rebinding, or None.) The rebinding
    must be a module-level one or sit above the call in the same function: a later one does not
    gate this call."""
    func = call.func
    if func.__class__ is not ast.Name:
        return None
    for line, value, scope in program.lookup(func.id, fn):
        if scope.node.__class__ is not ast.Module and not (scope is fn and line < call.lineno):
            continue
        test = wrap_test(program, value, scope)
        if test is not None:
            return test, value
    return None


def wrap_test(program: Program, value: ast.AST, where: Function) -> Optional[RankTest]:
    """`when(lambda: rank == 0)(fn)`: a decorator handed a rank predicate, applied to one
    function by a call; the rank test it gates that function on, or None. The function handed
    in is no reference a library runs on every rank: it runs where the predicate holds."""
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Call) and len(value.args) == 1
            and isinstance(value.args[0], ast.Name)):
        return None
    factory = value.func
    for slot, arg in [*enumerate(factory.args), *((kw.arg, kw.value) for kw in factory.keywords)]:
        if not (isinstance(arg, ast.Lambda) and not arg.args.args and not arg.args.vararg):
            continue
        test = program.ranks.guard(arg.body, where)
        gates = _gates_on(program, factory.func, where, slot) if test is not None else False
        if gates is False:
            continue
        if gates is None:
            assumption = f"`{text(factory.func)}` runs the function only where its predicate holds"
            test = replace(test, assumption="; ".join(a for a in (test.assumption, assumption) if a))
        return replace(test, text=text(factory))
    return None


def _wrapper_test(program: Program, deco: ast.AST, where: Function, targets: Optional[list] = None) -> Optional[RankTest]:
    """The rank test a local decorator's wrapper calls the decorated function under, read from
    its code (BasicSR's `master_only`: `def wrapper(*args, **kwargs): rank, _ = get_dist_info();
    if rank == 0: return func(*args, **kwargs)`), whatever the decorator is called. Every call
    of the function in the wrapper must sit under one such test. targets: the decorator's
    function where the caller knows it (one of the class body's own)."""
    if targets is None:
        targets, _ = program.resolve(deco, where)
    for target in targets:
        if not target.params or target.node.__class__ is ast.Module:
            continue
        wrapped = target.params[0]
        for inner in target.nested.values():
            calls, gated = 0, None
            for node in walk(inner.node):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == wrapped:
                    calls += 1
            if not calls:
                continue
            under = 0
            for node in walk(inner.node):
                if not isinstance(node, ast.If):
                    continue
                inside = sum(1 for part in node.body for sub in walk(part) if isinstance(sub, ast.Call)
                             and isinstance(sub.func, ast.Name) and sub.func.id == wrapped)
                if not inside:
                    continue
                test = program.ranks.guard(node.test, inner)
                if test is None:
                    return None
                gated, under = gated or test, under + inside
            if gated is not None and under == calls:
                return gated
    return None


def _gates_on(program: Program, func: ast.AST, where: Function, slot) -> Optional[bool]:
    """Whether a local decorator runs the decorated function under `if <predicate>():`, the
    predicate being its parameter at `slot`; None when the decorator is not local (unread)."""
    targets, _weak = program.resolve(func, where)
    if not targets:
        return None
    for target in targets:
        params = [a.arg for a in target.node.args.args]
        name = params[slot] if isinstance(slot, int) and slot < len(params) else slot
        nodes = walk(target.node)
        # the decorated function arrives as a parameter of a function inside (`def decorator(fn)`)
        wrapped = {a.arg for node in nodes[1:] if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                   for a in node.args.args}
        for node in nodes:
            if isinstance(node, ast.If) and isinstance(node.test, ast.Call) and \
                    isinstance(node.test.func, ast.Name) and node.test.func.id == name and \
                    any(isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id in wrapped
                        for part in node.body for inner in walk(part)):
                return True  # `if condition(): return fn(*args, **kwargs)`
    return False
