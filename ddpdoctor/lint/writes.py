"""Where a write on every rank is not a race: a "rank 0 first" block.

`with main_first(): build_cache()` where the context manager lets rank 0 run the body while
the others wait in a barrier, then releases them (its own barriers pair across its rank tests:
`if rank != 0: barrier()` / `yield` / `if rank == 0: barrier()`), or a library's
(`accelerator.main_process_first()`, `training_args.main_process_first()`,
`local_main_process_first()`). Rank 0 writes the cache; the others find it written. DDP806
reads this for the saves it judges (lint/facts.py).
"""

from __future__ import annotations

import ast
import re
from typing import Any, Optional

from ddpdoctor.lint.fact_builder import rank_guards
from ddpdoctor.lint.nodes import source_lines, walk
from ddpdoctor.lint.patterns import last_name, text

Builder = Any  # ddpdoctor.lint.facts.FactBuilder (facts imports this module, not the reverse)
Function = Any
LIBRARY_FIRST = {"main_process_first", "local_main_process_first", "rank_zero_first",
                 "torch_distributed_zero_first", "zero_first"}


def rank_zero_first(builder: Builder, fn: Function, call: ast.Call) -> str:
    """Why `call` in fn runs in a rank-0-first block ("" when it does not): the `with` around it
    (in fn, or around a call to fn) whose context manager orders the ranks."""
    for stmt in fn.own_of(ast.With, ast.AsyncWith):
        if not any(inner is call for part in stmt.body for inner in walk(part)):
            continue
        for item in stmt.items:
            why = _ordering(builder, item.context_expr, fn)
            if why:
                return why
    return _built_first(builder, fn, call) or _between_barriers(builder, fn, call)


def _between_barriers(builder: Builder, fn: Function, call: ast.Call) -> str:
    """The context manager written out around the call, in fn's own statements: `if not
    is_local_master: barrier()` above it and `if is_local_master: barrier()` below it (Mega-NeRF's
    dataset writing its chunks; neither `if` holds more than its barrier): rank 0 runs it while the
    others wait, then they run it and find its files (a constructor that skips what exists)."""
    program = builder.program
    targets = program.resolve(call.func, fn)[0]
    if not _skips_written(targets):
        return ""
    above = below = None
    for stmt in fn.own:
        if stmt.__class__ is not ast.If or stmt.orelse or not stmt.body or not all(_a_barrier(s) for s in stmt.body):
            continue
        test = program.ranks.guard(stmt.test, fn)
        if test is None:
            continue
        if stmt.end_lineno < call.lineno and test.polarity == "nonzero":
            above = stmt
        elif stmt.lineno > call.end_lineno and test.polarity == "zero" and below is None:
            below = stmt
    if above is None or below is None:
        return ""
    return (f"between `if {text(above.test, 50)}: barrier()` at line {above.lineno} and `if {text(below.test, 50)}: "
            f"barrier()` at line {below.lineno}: rank 0 writes first (a cache the others read)")


def _a_barrier(stmt: ast.stmt) -> bool:
    return stmt.__class__ is ast.Expr and stmt.value.__class__ is ast.Call and \
        bool(_WAITS.search(last_name(stmt.value.func) or ""))


def _built_first(builder: Builder, fn: Function, call: ast.Call) -> str:
    """The same, written out: `if local_rank == 0: dataset = Cache(download=True)`, then a barrier
    every rank waits at, then `dataset = Cache(download=False)` on every rank - the call made
    again once rank 0 has made it and the others waited (the files it writes are there, and a
    cache skips them). "" where fn has no such block before the call."""
    program = builder.program
    targets = program.resolve(call.func, fn)[0]
    made = {id(t) for t in targets}
    if not _skips_written(targets):
        return ""
    barriers = [e.line for e in fn.events if e.kind == "collective" and e.line < call.lineno
                and _WAITS.search(e.op) and not rank_guards(e.guards)]
    for stmt in fn.own:
        if not (isinstance(stmt, ast.If) and stmt.lineno < call.lineno) or \
                not any(stmt.end_lineno < line for line in barriers):
            continue
        test = program.ranks.guard(stmt.test, fn)
        if test is None or test.polarity != "zero":
            continue
        for inner in (n for part in stmt.body for n in walk(part)):
            if isinstance(inner, ast.Call) and inner is not call and \
                    made & {id(t) for t in program.resolve(inner.func, fn)[0]}:
                return (f"made first under `if {test.text}:` at line {stmt.lineno}, then a barrier, then on every "
                        f"rank: rank 0 writes first (a cache the others read)")
    return ""


def _skips_written(targets: list) -> bool:
    """Some function (or its class) the call reaches tests that a file exists first: a cache
    skips what is on disk (a checkpoint saved first on rank 0 and then again by every rank in a
    `finally:` is two writes, not a cache read back)."""
    return any(_SKIPS_WRITTEN.search(source_lines(t.file.lines, (t.cls or t).node)) for t in targets)


_WAITS = re.compile(r"barrier|wait_for_everyone")
_SKIPS_WRITTEN = re.compile(r"\b(?:exists|isfile|is_file)\(")


def rank_zero_first_above(builder: Builder, fn: Function) -> str:
    """Why fn's writes have one writer at a time through a rank-0-first block a few calls up
    ("" when some way into fn has neither such a block nor a rank test): `with zero_first(rank):
    data = Labels(root)` whose constructor calls the method that writes the cache, the other
    ways in under `if rank == 0:`. Nothing calling fn, or a call at module level: ""."""
    return _ways_in(builder, fn, 6, ()) or ""


def _ways_in(builder: Builder, fn: Function, depth: int, stack: tuple) -> Optional[str]:
    """None: some way into fn passes neither a rank-0-first block nor a rank test; otherwise the
    block's reason, "" where every way in is under a rank test."""
    sites = builder.callers().get(fn, [])
    if fn in stack or depth <= 0 or not sites:
        return None
    why = ""
    for caller, event in sites:
        if event.guards:
            continue  # a rank test on this way in: one rank gets through
        here = rank_zero_first(builder, caller, event.node) or (
            None if isinstance(caller.node, ast.Module) else _ways_in(builder, caller, depth - 1, stack + (fn,)))
        if here is None:
            return None
        why = why or here
    return why


def _ordering(builder: Builder, expr: ast.AST, fn: Function) -> str:
    if not isinstance(expr, ast.Call):
        return ""
    name = last_name(expr.func) or ""
    targets, _ = builder.program.resolve(expr.func, fn)
    for target in targets:
        has_yield = any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in target.own)
        if has_yield and builder._paired(target):
            return f"in `with {text(expr, 60)}:`, whose barriers let rank 0 write first (a cache the others read)"
    if not targets and name in LIBRARY_FIRST:
        return f"in `with {text(expr, 60)}:`: rank 0 writes first (a cache the others read)"
    return ""
