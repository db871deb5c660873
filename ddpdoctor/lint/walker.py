"""Walking one function of the program in order (lint/program.py resolves, this module walks):
every statement with the rank tests and loops around it, and the events a rule cares about
(collectives, init_process_group, saves, calls into local functions, functions passed on) with
the plain tests (not rank tests) each sits under.

What a call means for DDP is asked of patterns.py (through the Program), which tests differ
between ranks of ranks.py, where a call goes of the Program's resolution.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any, Optional

from ddpdoctor.lint import patterns
from ddpdoctor.lint.defaults import branch_truth
from ddpdoctor.lint.gating import decorator_test, rebound_test, wrap_test
from ddpdoctor.lint.nodes import TERMINATORS, children, param_defaults, parse_test, walk
from ddpdoctor.lint.patterns import RankTest, dotted, is_const, last_name, text

Function = Any  # lint/program.Function (program imports this module, not the reverse)
Program = Any  # lint/program.Program




@dataclass(frozen=True)
class Guard:
    """A rank test that a statement sits under: the `if` (or decorator) and the branch taken."""

    test: RankTest
    file: str
    line: int
    branch: int  # id of the If node, 0 for a decorator
    side: str  # "body" | "else"
    # after `if not use_fsdp_eval and not is_rank0: return`, the code under `if use_fsdp_eval:`
    # runs on every rank: the tests (source text) under which this guard no longer holds
    unless: tuple[str, ...] = ()


@dataclass
class Event:
    """Something in a function body that a rule cares about, with where and under what."""

    kind: str  # collective | call | ref | save
    node: ast.AST
    line: int
    guards: tuple[Guard, ...]
    loops: int  # enclosing loops inside this function
    op: str = ""  # collective: what it is, in the user's words
    targets: tuple["Function", ...] = ()  # call/ref: the local functions it reaches
    weak: tuple["Function", ...] = ()  # call: local methods of that name, receiver unknown
    # the tests (not rank tests) it sits under, as source text, each with whether it is a plain
    # flag (`use_fsdp_eval`, `args.fsdp`): a value the lint cannot see, which findings then assume
    conds: tuple[tuple[str, bool], ...] = ()


def _calls_param(target: "Function", slot) -> bool:
    """The local function calls what it receives in this argument slot (index or keyword)."""
    params = target.params
    name = params[slot] if isinstance(slot, int) and slot < len(params) else slot
    if not isinstance(name, str):
        return True  # *args, **kwargs: cannot tell, keep the callback
    if name not in params:
        return True
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name
               or (isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load))
               or (isinstance(n, ast.Call) and CALLBACK_SINK.search(last_name(n.func) or "")
                   and any(isinstance(a, ast.Name) and a.id == name for a in _handed(n)))
               for n in target.own)


def _handed(call: ast.Call) -> list:
    """What a call hands on: its arguments and keyword values, and the items of a tuple or list
    among them (`mp.spawn(_worker, args=(main_func,))`: detectron2-style launchers)."""
    values = [*call.args, *(kw.value for kw in call.keywords)]
    return values + [item for v in values if isinstance(v, (ast.Tuple, ast.List)) for item in v.elts]


# Calls that keep a function to call it later: a helper passing its argument on to one of these
# registers a callback; one passing it to inspect.signature only reads it.
CALLBACK_SINK = re.compile(r"spawn|Thread|Process|partial|submit|register|hook|callback|^add_|append|"
                           r"^map$|^run|^apply|^start|wrap", re.IGNORECASE)


def is_main_block(stmt: ast.stmt) -> bool:
    """`if __name__ == "__main__":`"""
    test = getattr(stmt, "test", None)
    return isinstance(stmt, ast.If) and isinstance(test, ast.Compare) and len(test.ops) == 1 \
        and isinstance(test.left, ast.Name) and test.left.id == "__name__" \
        and isinstance(test.ops[0], ast.Eq) and isinstance(test.comparators[0], ast.Constant) \
        and test.comparators[0].value == "__main__"


def _crashes(stmt: ast.stmt) -> bool:
    """`raise SomeError(...)` (or a bare re-raise): the rank fails and the launcher ends the
    job (not SystemExit, which exits cleanly while the other ranks go on - unless it carries a
    message or a non-zero code, `raise SystemExit(f"shard too short")`: exit status 1, a failed
    rank as any other error's)."""
    if not isinstance(stmt, ast.Raise):
        return False
    if stmt.exc is None:
        return True
    return not clean_exit(stmt)


def clean_exit(stmt: ast.stmt) -> bool:
    """`raise SystemExit` / `raise SystemExit(0)` (or None): sys.exit(0) spelt as the exception
    it raises - the process ends with status 0 and the launcher waits for the other ranks."""
    if not isinstance(stmt, ast.Raise) or stmt.exc is None:
        return False
    exc = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
    name = exc.attr if isinstance(exc, ast.Attribute) else getattr(exc, "id", "")
    if name != "SystemExit":
        return False
    return not isinstance(stmt.exc, ast.Call) or (
        not stmt.exc.keywords and all(is_const(a, 0, None) for a in stmt.exc.args))


# The calls that end the process where they stand: a rank that takes one leaves every loop it is in.
PROCESS_EXITS = frozenset({"exit", "quit", "sys.exit", "os._exit"})


def exits(stmt: ast.stmt) -> bool:
    """`quit()`, `sys.exit(0)`, `os._exit(1)` as a statement of its own."""
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and \
        dotted(stmt.value.func) in PROCESS_EXITS


def _never_returns(program, call: ast.Call, fn) -> bool:
    """The call runs local functions only, each of which ends the process or raises on every
    way through it: no `return` in it, and its body's last statement an exit or a raise."""
    if call.func.__class__ is ast.Name and call.func.id in PROCESS_EXITS:
        return False  # (said where it stands: the exits the rules read as a statement of their own)
    targets = program.resolve(call.func, fn)[0]
    return bool(targets) and all(_ends_the_process(t) for t in targets)


def _ends_the_process(target) -> bool:
    memo = target.__dict__.get("_ends_process")
    if memo is None:
        body = getattr(target.node, "body", None)
        last = body[-1] if isinstance(body, list) and body else None
        memo = last is not None and not isinstance(target.node, (ast.Module, ast.ClassDef)) and (
            (last.__class__ is ast.Raise and last.exc is not None and not _abstract(last)) or exits(last)) and \
            not any(n.__class__ is ast.Return or n.__class__ is ast.Yield for n in target.own)
        target.__dict__["_ends_process"] = memo
    return memo


def _abstract(stmt: ast.Raise) -> bool:
    """`raise NotImplementedError(...)`: a base class's stub, which a subclass the source may not
    show replaces - no proof that the call ends anything."""
    exc = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
    return (last_name(exc) or "") == "NotImplementedError"


def _plain_test(node: ast.AST) -> ast.AST:
    """`ddp == True` / `ddp is True` said as `ddp`, `ddp == False` as `not ddp`: the same switch
    (a builder's `if ddp == True:` and the launcher's `if ddp:` are one test)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "bool" and \
            len(node.args) == 1 and not node.keywords:
        return _plain_test(node.args[0])  # `bool(eval_only)`: the switch itself
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _plain_test(node.operand)
        if inner is not node.operand:
            return ast.UnaryOp(ast.Not(), inner)
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.Is)) \
            and isinstance(node.comparators[0], ast.Constant) and isinstance(node.comparators[0].value, bool):
        if node.comparators[0].value:
            return node.left
        return ast.UnaryOp(ast.Not(), node.left)
    return node


def rank_return_in_try(program, fn, stmt: ast.stmt):
    """(the rank test, its `if`) of a `try` whose own body leaves the function under a rank test
    (`if not is_main_process(): return`): what follows the `try` runs only where the test was
    false, or where a handler swallowed an error raised before it (the run without the helper)."""
    if not isinstance(stmt, ast.Try) or stmt.finalbody or stmt.orelse:
        return None
    for inner in stmt.body:
        if isinstance(inner, ast.If) and not inner.orelse and inner.body and \
                isinstance(inner.body[-1], ast.Return) and not _crashes(inner.body[-1]):
            test = program.ranks.guard(inner.test, fn)
            if test is not None:
                return test, inner
    return None


def _negation_text(node: ast.AST) -> str:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return text(node.operand, 10_000)
    # kept on the node (as text() keeps its own): the `not` made here is new on every ask, so
    # its text would be unparsed again for each call under the test's other side
    # (with the node's id, as text() keeps its own: a copy of the node carries it)
    kept = node.__dict__.get("_negation_text")
    if kept is not None and kept[0] == id(node):
        return kept[1]
    said = text(ast.UnaryOp(ast.Not(), node), 10_000)
    node.__dict__["_negation_text"] = (id(node), said)
    return said


def _flag_like(test: ast.AST) -> bool:
    """`use_fsdp_eval`, `not args.fsdp`: a switch whose value the source does not show; also
    one looked up by its name in a config (`config.get("use_hf_hub", False)`, `cfg["use_ema"]`,
    `getattr(args, "push", False)`)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    if test.__class__ is ast.Call:
        func, args = test.func, test.args
        if func.__class__ is ast.Attribute and func.attr == "get" and not test.keywords:
            return 1 <= len(args) <= 2 and _named_key(args[0]) and (len(args) == 1 or args[1].__class__ is ast.Constant)
        if func.__class__ is ast.Name and func.id == "getattr" and not test.keywords:
            return len(args) in (2, 3) and _named_key(args[1]) and (len(args) == 2 or args[2].__class__ is ast.Constant)
        return False
    if test.__class__ is ast.Subscript:
        return _named_key(test.slice) and test.value.__class__ in (ast.Name, ast.Attribute)
    return isinstance(test, (ast.Name, ast.Attribute))


def _named_key(node: ast.AST) -> bool:
    return node.__class__ is ast.Constant and isinstance(node.value, str) and node.value.isidentifier()


def _conjuncts(test: ast.AST) -> dict[str, bool]:
    """The source text of a test and of each part of an `and` (what holds inside its body), each
    with whether it is a plain flag: each part of an `and` is a switch of its own (`if synchronize
    and dist.is_initialized():`), which a caller's constant may turn off. Each part unparsed once."""
    said = {}
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        said = {text(v, 10_000): _flag_like(v) for v in test.values}
    whole = text(test, 10_000)
    if whole not in said:
        said[whole] = _flag_like(test)
    return said


class _Said:
    """A plain test around the code walked, on one side of its `if`: its source text (and each
    part's, for an `and`) as (text, is a plain flag) pairs, which the events and calls beneath
    it carry. Unparsed when a call beneath it first asks: most tests have none, or are asked of
    by many."""

    __slots__ = ("test", "side", "_said")

    def __init__(self, test: ast.AST, side: str) -> None:
        self.test, self.side, self._said = test, side, None

    def said(self) -> tuple[tuple[str, bool], ...]:
        if self._said is None:
            # (kept on the test too: each walk of its side makes a _Said of its own)
            key = "_said_body" if self.side == "body" else "_said_else"
            kept = self.test.__dict__.get(key)
            if kept is not None and kept[0] == id(self.test):  # (a copy of the test carries it)
                found = kept[1]
            else:
                test = _plain_test(self.test)
                if self.side == "body":
                    parts = _conjuncts(test)
                    found = tuple((t, parts[t]) for t in sorted(parts))
                else:
                    found = ((_negation_text(test), _flag_like(test)),)
                self.test.__dict__[key] = (id(self.test), found)
            self._said = found
        return self._said


def _contradicts(held: RankTest, other: RankTest) -> bool:
    """Two negated rank tests no rank passes together: rank 0 only and every rank but 0, on the
    same rank and scope, each with the same other parts (`not (P and rank == 0)` with `not (P and
    rank > 0)`): where P holds no rank gets there; where it does not, every rank does."""
    return held.key == other.key and held.scope == other.scope and held.open == other.open and \
        bool(other.open) and {held.polarity, other.polarity} == {"zero", "nonzero"}


def side_conds(test: ast.AST, body: bool) -> tuple[tuple[str, bool], ...]:
    """The conds (as events carry them) that hold on one side of an `if` on test."""
    return _Said(test, "body" if body else "else").said()


# Nodes the walk has nothing to do in: a name or constant has no child, an operator neither
# (`+`, `not`, `==`: a third of an expression's nodes), a nested scope is not walked.
_LEAVES_AND_SCOPES = {ast.Name, ast.Constant, ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                      *(k for base in (ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
                        for k in base.__subclasses__())}


class Walker:
    """Walks one function's statements in order, keeping the rank tests and loops around them."""

    def __init__(self, program: Program, fn: Function) -> None:
        self.program = program
        self.fn = fn
        self.conds: list[_Said] = []  # the plain tests around the statement walked, outermost first
        self.whiles: list[ast.While] = []  # the plain `while` loops around it (their first test decides)
        self.asserted: list[str] = []  # `assert args.distill` earlier in the block or one around it

    def run(self) -> None:
        self.program.in_budget()
        guards: tuple[Guard, ...] = ()
        test = decorator_test(self.program, self.fn)
        if test is not None:
            if test.polarity == "zero" and not self.fn.rank_only:
                # the rules that ask whether a function runs on one rank (its saves, the state it
                # sets) read rank_only; walked before any of them runs
                self.fn.rank_only = test.text
            guards = (Guard(test, self.fn.file.display, self.fn.line, 0, "body"),)
        body = self.fn.node.body
        self.block(body, guards, 0)

    def block(self, body: list[ast.stmt], guards: tuple[Guard, ...], loops: int) -> None:
        mark, held = len(self.conds), len(self.asserted)
        try:
            self._block(body, guards, loops)
        finally:
            del self.conds[mark:]
            del self.asserted[held:]

    def _block(self, body: list[ast.stmt], guards: tuple[Guard, ...], loops: int) -> None:
        for index, stmt in enumerate(body):
            self.stmt(stmt, guards, loops)
            if isinstance(stmt, (ast.Raise, ast.Return, ast.Continue, ast.Break)):
                return  # what follows in this block never runs (relora's retired save helper)
            if stmt.__class__ is ast.Expr and stmt.value.__class__ is ast.Call and \
                    _never_returns(self.program, stmt.value, self.fn):
                # `trainer.backup_session(sig, None)` whose body ends in `exit(1)` (3DC-Seg's
                # interrupt handler): the `synchronize()` after it in rank 0's branch never runs
                return
            if isinstance(stmt, ast.If) and not stmt.orelse and stmt.body and \
                    isinstance(stmt.body[-1], (ast.Return, ast.Continue, ast.Break)) and \
                    self.program.ranks.guard(stmt.test, self.fn) is None:
                # `if phase == "train": return train_loader` then `return DataLoader(ds)`: what
                # follows runs where the test is false (a call that passes "train" never gets there)
                self.conds.append(_Said(stmt.test, "else"))
            elif isinstance(stmt, ast.If) and not stmt.orelse and stmt.body and _crashes(stmt.body[-1]) and \
                    self.program.ranks.distributed_run(stmt.test, self.fn):
                # `if is_distributed(): raise NotImplementedError("not for DDP")`: what follows runs
                # only in a process that joined no group. Said as the plain switch `distributed`
                # being false, the way every rule reads a one-process side (`not args.distributed`)
                self.conds.append(_Said(ast.Name(id="distributed", ctx=ast.Load()), "else"))
            # `if rank != 0: return` - what follows runs on the other ranks only. Not after a
            # raise: a rank that raises crashes and the launcher ends the job (dinov2's
            # `if _LOCAL_RANK >= 0: raise RuntimeError("already initialised")`, read before the
            # rank is set, is an assertion, not a branch of work); SystemExit is an exit.
            if isinstance(stmt, ast.If) and not stmt.orelse and stmt.body and \
                    isinstance(stmt.body[-1], TERMINATORS) and not _crashes(stmt.body[-1]):
                test = self.program.ranks.guard(stmt.test, self.fn)
                if test is not None:
                    unless = ()
                    if isinstance(stmt.test, ast.BoolOp) and isinstance(stmt.test.op, ast.And):
                        unless = tuple(_negation_text(_plain_test(p)) for p in stmt.test.values
                                       if self.program.ranks.guard(p, self.fn) is None)
                    guard = Guard(test.negated(), self.fn.file.display, stmt.lineno, id(stmt), "else", unless)
                    self.block(body[index + 1:], guards + (guard,), loops)
                    return
            # `try: from utils import is_main; if not is_main(): return / except: pass` (a
            # stopper's __call__ that keeps its count on rank 0): the return leaves the function
            # from inside the `try` as from outside it; the handler is the run without the helper
            leave = rank_return_in_try(self.program, self.fn, stmt)
            if leave is not None:
                test, at = leave
                guard = Guard(test.negated(), self.fn.file.display, at.lineno, id(at), "else")
                self.block(body[index + 1:], guards + (guard,), loops)
                return
            # `if rank == 0: log() else: continue` (adaptive-span's loop tail): what follows runs
            # where the side that goes on holds; the same with the sides the other way round
            if isinstance(stmt, ast.If) and stmt.orelse and stmt.body:
                ends = [isinstance(side[-1], TERMINATORS) and not _crashes(side[-1])
                        for side in (stmt.body, stmt.orelse)]
                test = self.program.ranks.guard(stmt.test, self.fn) \
                    if ends[0] != ends[1] and _goes_on(stmt.orelse if ends[0] else stmt.body) else None
                if test is not None:
                    on = test if ends[1] else test.negated()
                    guard = Guard(on, self.fn.file.display, stmt.lineno, id(stmt), "body" if ends[1] else "else")
                    self.block(body[index + 1:], guards + (guard,), loops)
                    return
            # `if distributed: gather(); if rank != 0: return` (else: one process's own rows):
            # what follows the outer `if` runs on rank 0 of a distributed run, or on a single
            # process - every rank only if the outer test is false, the case `unless` names
            inner = _rank_return(self, stmt)
            if inner is not None:
                test, leave, way = inner
                guard = Guard(test.negated(), self.fn.file.display, leave.lineno, id(leave), "else",
                              tuple(_negation_text(t) for t in way))
                self.block(body[index + 1:], guards + (guard,), loops)
                return

    def stmt(self, stmt: ast.stmt, guards: tuple[Guard, ...], loops: int) -> None:
        if isinstance(self.fn.node, ast.Module) and self.fn.file is not self.program.files[0] \
                and is_main_block(stmt):
            return  # an imported module's own `if __name__ == "__main__":` never runs on import
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for deco in stmt.decorator_list:
                self.expr(deco, guards, loops)
            registered = next((d for d in stmt.decorator_list if _registers_command(d)), None)
            if registered is not None and not isinstance(stmt, ast.ClassDef):
                # `@cli.command()` (click), `@app.command()` (typer): the group run by `cli()` /
                # `app()` calls the function it was handed here; reached as a handed-on function
                name = ast.copy_location(ast.Name(id=stmt.name, ctx=ast.Load()), stmt)
                refs = self.program.reference(name, self.fn)
                if refs:
                    self.fn.events.append(Event("ref", registered, stmt.lineno, guards, loops, targets=tuple(refs),
                                                op=COMMAND))
            return
        if stmt.__class__ is ast.Assert:
            self.asserted.append(text(stmt.test))
            if self.program.ranks.one_process_run(stmt.test, self.fn):
                # `assert not distributed` heading a dataset's branch, `assert world_size == 1`
                # heading a mode's (DistEGNN's cutoff_edges): what follows in the block runs only
                # in a process that joined no group, said as the plain switch `distributed` being
                # false (as past `if is_distributed(): raise ...` below)
                self.conds.append(_Said(ast.Name(id="distributed", ctx=ast.Load()), "else"))
        if stmt.__class__ is ast.If and self.asserted:
            said = text(stmt.test)
            if said in self.asserted or f"not {said}" in self.asserted or _negation(said) in self.asserted:
                # `assert args.distill` above `if args.distill: A() else: B()`: only one side runs
                self.expr(stmt.test, guards, loops)
                self.block(stmt.body if said in self.asserted else stmt.orelse, guards, loops)
                return
        if stmt.__class__ is ast.If:
            truth = branch_truth(stmt.test, self.program, self.fn)
            if truth is not None:
                # `if False and args.save_steps > 0 ...:` - a block its author switched off in the
                # source (or `if True:` left on), or a test of a function where a flag was meant:
                # no run takes the other side
                self.block(stmt.body if truth else stmt.orelse, guards, loops)
                skipped = stmt.orelse if truth else stmt.body
                if skipped:
                    # (what it would build is not built either: Program._classes_named skips it)
                    self.fn.__dict__.setdefault("_dead_spans", set()).add(
                        (skipped[0].lineno, skipped[-1].end_lineno or skipped[-1].lineno))
                return
        if isinstance(stmt, (ast.If, ast.While)):
            self.expr(stmt.test, guards, loops)
            test = self.program.ranks.guard(stmt.test, self.fn)
            inner = loops + (1 if isinstance(stmt, ast.While) else 0)
            if test is None:
                mark = len(self.conds)
                if isinstance(stmt, ast.If):
                    self.conds.append(_Said(stmt.test, "body"))
                else:
                    self.whiles.append(stmt)
                inside = guards
                if any(g.unless for g in guards):
                    said = _conjuncts(stmt.test)
                    inside = tuple(g for g in guards if not said.keys() & set(g.unless))
                self.block(stmt.body, inside, inner)
                del self.conds[mark:]
                if isinstance(stmt, ast.While):
                    self.whiles.pop()
                if stmt.orelse:
                    self.conds.append(_Said(stmt.test, "else"))
                    self.block(stmt.orelse, guards, loops)
                    del self.conds[mark:]
                return
            file = self.fn.file.display
            self.block(stmt.body, guards + (Guard(test, file, stmt.lineno, id(stmt), "body"),), inner)
            if stmt.orelse:
                negated = test.negated()
                clash = next((g for g in guards if _contradicts(g.test, negated)), None)
                if clash is not None:
                    # `if P and rank == 0: A elif P and rank > 0: B else: C`: no rank passes both
                    # rank parts' negations, so C runs only where P is false - on every rank alike,
                    # said as the plain tests it rests on (`not P`), no rank branch
                    mark = len(self.conds)
                    for part in negated.open:
                        parsed = parse_test(part)
                        if parsed is not None:
                            self.conds.append(_Said(parsed, "else"))
                    self.block(stmt.orelse, tuple(g for g in guards if g is not clash), loops)
                    del self.conds[mark:]
                else:
                    self.block(stmt.orelse, guards + (Guard(negated, file, stmt.lineno, id(stmt), "else"),), loops)
            return
        if isinstance(stmt, (ast.For, ast.AsyncFor)):
            self.expr(stmt.iter, guards, loops)
            self.block(stmt.body, guards, loops + 1)
            self.block(stmt.orelse, guards, loops)
            return
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                self.expr(item.context_expr, guards, loops)
            self.block(stmt.body, guards, loops)
            return
        if isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            self.block(stmt.body, guards, loops)
            for handler in stmt.handlers:
                self.block(handler.body, guards, loops)
            self.block(stmt.orelse, guards, loops)
            self.block(stmt.finalbody, guards, loops)
            return
        if isinstance(stmt, ast.Match):
            self.expr(stmt.subject, guards, loops)
            for case in stmt.cases:
                self.block(case.body, guards, loops)
            return
        for child in children(stmt):
            self.expr(child, guards, loops)

    def expr(self, node: ast.AST, guards: tuple[Guard, ...], loops: int) -> None:
        """The calls in an expression, in the order a recursive walk meets them (each node before
        its children, the children in order), under these guards. A loop over a stack, not a
        call per node: most nodes are plain (`x.view(b, -1)`, `a + b`); only a conditional
        expression and an `and` add a guard to a part of themselves."""
        stack = [node]
        pop, push = stack.pop, stack.extend
        plain = _LEAVES_AND_SCOPES
        while stack:
            node = pop()
            cls = node.__class__  # a parsed tree's nodes are of the exact classes: set tests, not isinstance
            if cls in plain:
                continue
            if cls is ast.IfExp or (cls is ast.BoolOp and node.op.__class__ is ast.And):
                self._branching(node, guards, loops)
                continue
            if cls is ast.Call:
                self.call(node, guards, loops)
            inner = children(node)
            inner.reverse()  # popped first to last
            push(inner)

    def _branching(self, node: ast.AST, guards: tuple[Guard, ...], loops: int) -> None:
        """A conditional expression or an `and`: the parts a rank test decides run on some ranks."""
        if node.__class__ is ast.IfExp:
            self.expr(node.test, guards, loops)
            test = self.program.ranks.guard(node.test, self.fn)
            if test is None:
                # `gather(x) if gathered is None else gathered`: each side under its test, as an
                # if's (a caller that always hands `gathered` never reaches the gather)
                for side, branch in ((node.body, "body"), (node.orelse, "else")):
                    mark = len(self.conds)
                    self.conds.append(_Said(node.test, branch))
                    self.expr(side, guards, loops)
                    del self.conds[mark:]
            else:
                file = self.fn.file.display
                self.expr(node.body, guards + (Guard(test, file, node.lineno, id(node), "body"),), loops)
                self.expr(node.orelse, guards + (Guard(test.negated(), file, node.lineno, id(node), "else"),), loops)
            return
        # `rank == 0 and dist.barrier()`: what follows a rank test runs on some ranks only
        current = guards
        for value in node.values:
            self.expr(value, current, loops)
            test = self.program.ranks.guard(value, self.fn)
            if test is not None:
                current = current + (Guard(test, self.fn.file.display, node.lineno, id(node), "body"),)

    def call(self, call: ast.Call, guards: tuple[Guard, ...], loops: int) -> None:
        program, fn = self.program, self.fn
        line = call.lineno
        if call.func.__class__ is ast.Name:
            rebound = rebound_test(program, call, fn)
            if rebound is not None:  # `checkpoint = when(lambda: rank == 0)(checkpoint)` above
                guards = guards + (Guard(rebound[0], fn.file.display, rebound[1].lineno, id(rebound[1]), "body"),)
        fn.calls.append((call, guards, loops))
        conds = tuple(c for said in self.conds for c in said.said()) if self.conds else ()
        if conds:  # the plain tests around every call, for rules on calls that are not events
            fn.__dict__.setdefault("_call_conds", {})[id(call)] = conds
        if self.whiles:
            fn.__dict__.setdefault("_call_whiles", {})[id(call)] = tuple(self.whiles)
        op = program.collective(call, fn)
        if op is not None:
            fn.events.append(Event("collective", call, line, guards, loops, op=op, conds=conds))
        if patterns.is_init(program, call, fn):
            fn.events.append(Event("init", call, line, guards, loops, conds=conds))
        if patterns.is_save(program, call, fn):
            fn.events.append(Event("save", call, line, guards, loops, conds=conds))
        targets, weak = program.resolve(call.func, fn)
        if weak:
            # a method guessed by its name alone is not one the call cannot be: `sched.step()`
            # is no `Keeper.step(self, it)`, which needs an argument it is not given
            weak = [w for w in weak if _arity_fits(w, call)]
        if targets:
            split = _null_object_guard(program, fn, call, targets)
            if split is not None:  # `saver = Saver() if rank == 0 else NoOp()`: Saver's methods, rank 0's
                guards = guards + (split,)
        if targets or weak:
            fn.events.append(Event("call", call, line, guards, loops, targets=tuple(targets), weak=tuple(weak),
                                   conds=conds))
        passed = [(i, a) for i, a in enumerate(call.args)] + [(kw.arg, kw.value) for kw in call.keywords]
        if not targets:
            # `Process(target=init_processes, args=(rank, n, main, opt))`, `mp.spawn(run, args=(
            # partial(train),))`: a library's starter hands the functions in `args` on to what it runs
            handed = [(kw.arg, kw.value) for kw in call.keywords if kw.arg == "args"]
            passed += [(slot, unwrapped) for slot, value in handed if isinstance(value, (ast.Tuple, ast.List))
                       for item in value.elts for unwrapped in partial_target(program, item, fn)]
        if passed and call.func.__class__ is ast.Name and call.func.id in _LOOKS_AT and not targets and \
                program.symbol(call.func.id, fn) is None:
            passed = []  # `hasattr(train_one_epoch, "_best")`: a builtin that looks at a function runs none
        if passed and wrap_test(program, call, fn) is not None:
            passed = []  # `when(lambda: rank == 0)(checkpoint)`: gated where the result is called
        for slot, arg in passed:
            refs = program.reference(arg, fn) or _bound_method(program, arg, fn)
            if not refs and isinstance(arg, ast.Lambda) and not targets:
                # `wandb.agent(sweep, function=lambda: main_train(args))`: a library runs the
                # lambda, and the lambda calls the script's own functions
                refs = [t for c in walk(arg.body) if isinstance(c, ast.Call)
                        for t in program.resolve(c.func, fn)[0] if t.node.__class__ is not ast.Module]
            if refs and targets and not any(_calls_param(t, slot) for t in targets):
                continue  # a local helper that only looks at the function (its name, signature)
            if refs:
                fn.events.append(Event("ref", call, line, guards, loops, targets=tuple(refs), conds=conds))


# builtins that look at what they are handed (its attributes, type, identity, text) and never call it
_LOOKS_AT = frozenset({"hasattr", "getattr", "setattr", "delattr", "isinstance", "issubclass", "callable",
                       "id", "hash", "type", "vars", "dir", "repr", "str", "print", "format"})


def _arity_fits(target, call: ast.Call) -> bool:
    """The call gives the function's required parameters, no more positional ones than it takes
    and no keyword it does not take (anything goes where `*args` / `**kwargs` spread on either
    side)."""
    args = getattr(target.node, "args", None)
    if args is None or any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return True
    params = target.params  # (a method's without self / cls)
    if len(call.args) > len(params) and args.vararg is None:
        return False
    defaults, given = param_defaults(target.node), {k.arg for k in call.keywords}
    if args.kwarg is None and not given <= {*params, *target.kwonly}:
        return False  # (`frames[0].save(path, save_all=True, loop=0)` of PIL is no `save(self, path)`)
    return all(p in defaults or p in given for p in [*params[len(call.args):], *target.kwonly])


COMMAND = "command"  # a "ref" event's op: a command-line framework's registration of its target


def _null_object_guard(program, fn, call: ast.Call, targets: list):
    """`if rank != 0: saver = NoOp() else: saver = Saver()` (or the `x if test else y` form),
    then `saver.save(model)` on every rank, there or in a function handed `saver`: the local
    class's method runs only on the side of the rank test that built it, the other side holding
    None or a do-nothing stand-in (a class whose methods only pass, or whose __getattr__ hands
    out one that does). The Guard of that side, or None."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
        return None
    owners = {t.cls for t in targets if t.cls is not None}
    if not owners:
        return None
    name = func.value.id
    if name in fn.params and not fn.bindings.get(name):
        # handed in: every caller's argument built that way, under the same test
        passed = program._passed(name, fn)
        found = [_split_binding(program, caller, value.id, owners) for value, caller in passed
                 if value.__class__ is ast.Name]
        if found and len(found) == len(passed) and all(found) and \
                len({g.branch for g in found}) == 1:
            return found[0]
        return None
    return _split_binding(program, fn, name, owners, call)


def _split_binding(program, fn, name: str, owners: set, call: Optional[ast.Call] = None):
    sides = _binding_sides(fn, name)
    if sides is None:
        return _stood_down(program, fn, name, call)
    test, body, orelse, where = sides
    rank = program.ranks.guard(test, fn)
    if rank is None:
        return None
    made = [program.callee(v.func, fn) if v.__class__ is ast.Call else None for v in (body, orelse)]
    for real, other, side in ((made[0], (orelse, made[1]), "body"), (made[1], (body, made[0]), "else")):
        if real in owners and (patterns.is_const(other[0], None) or program.does_nothing(other[1])):
            test_there = rank if side == "body" else rank.negated()
            return Guard(test_there, fn.file.display, getattr(where, "lineno", 0), id(where), side)
    return None


def _stood_down(program, fn, name: str, call: Optional[ast.Call]):
    """`restorer = Restorer(...)`, then `if not is_main_process() or not resume: restorer =
    NoOp()` before `restorer.step()` (AxANet's): where the rank test holds, the name holds the
    do-nothing stand-in from there on, so the real class's methods run only where it fails. The
    Guard of that side, or None."""
    if call is None:
        return None
    return next((guard for end, guard in _stand_downs(program, fn, name) if end < call.lineno), None)


def _stand_downs(program, fn, name: str) -> list:
    """(where it ends, the Guard where the real object runs) of each `if <rank test>: name =
    <do-nothing>()` in fn, looked up once per name (every method call on it asks)."""
    made = fn.__dict__.setdefault("_stand_downs", {})
    if name in made:
        return made[name]
    found = []
    for node in fn.own_of(ast.If):
        if not (node.__class__ is ast.If and not node.orelse and len(node.body) == 1
                and node.body[0].__class__ is ast.Assign and len(node.body[0].targets) == 1
                and isinstance(node.body[0].targets[0], ast.Name) and node.body[0].targets[0].id == name
                and node.body[0].value.__class__ is ast.Call
                and program.does_nothing(program.callee(node.body[0].value.func, fn))):
            continue
        # (a test `rank_test or X` holds wherever its rank part does)
        parts = node.test.values if isinstance(node.test, ast.BoolOp) and isinstance(node.test.op, ast.Or) \
            else [node.test]
        rank = next((g for g in (program.ranks.guard(part, fn) for part in parts) if g is not None), None)
        if rank is not None:
            found.append((node.end_lineno, Guard(rank.negated(), fn.file.display, node.lineno, id(node), "else")))
    made[name] = found
    return found


def _binding_sides(fn, name: str):
    """(test, value on its true side, value on its false side, the if) of the one if/else (or
    conditional expression) that binds `name` in fn; None otherwise. Looked up once per name:
    every method call on a name asks (`model.train()`, `saver.save()`)."""
    made = fn.__dict__.setdefault("_binding_sides", {})
    if name not in made:
        made[name] = _find_binding_sides(fn, name)
    return made[name]


def _find_binding_sides(fn, name: str):
    bound = fn.bindings.get(name, [])
    if not 1 <= len(bound) <= 2:
        return None
    for node in fn.own:
        sides = None
        if node.__class__ is ast.If and node.orelse:
            body = [s.value for s in node.body if s.__class__ is ast.Assign and len(s.targets) == 1
                    and isinstance(s.targets[0], ast.Name) and s.targets[0].id == name]
            other = [s.value for s in node.orelse if s.__class__ is ast.Assign and len(s.targets) == 1
                     and isinstance(s.targets[0], ast.Name) and s.targets[0].id == name]
            if len(body) == 1 and len(other) == 1:
                sides = (node.test, body[0], other[0], node)
        elif node.__class__ is ast.Assign and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id == name and node.value.__class__ is ast.IfExp:
            sides = (node.value.test, node.value.body, node.value.orelse, node.value)
        if sides is not None:
            return sides
    return None


def _registers_command(deco: ast.AST) -> bool:
    """A command-line framework's registration: `@cli.command()`, `@click.group()`,
    `@app.command(name=...)` (typer), `@cli.command` without the call."""
    func = deco.func if isinstance(deco, ast.Call) else deco
    return isinstance(func, ast.Attribute) and func.attr in ("command", "group") and \
        isinstance(func.value, (ast.Name, ast.Attribute)) and patterns.last_name(func.value) != "self"


def partial_target(program, item: ast.AST, fn) -> list:
    """What a handed-on value runs: `partial(f, ...)` runs f, as does a name bound to one
    (OpenNMT's `train_process = partial(single_main)`); anything else is itself."""
    values = [item]
    if isinstance(item, ast.Name):
        values += [v for v, _ in program.values_of(item, fn, 1) if v is not item]
    found = [v.args[0] for v in values if isinstance(v, ast.Call) and v.args and patterns.last_name(v.func) == "partial"]
    return found or [item]


def _bound_method(program, node: ast.AST, fn) -> list:
    """`retry_call(model.train, ...)`: a local class's method handed on bound to an instance the
    source builds (`model = Trainer(...)`); whoever receives it runs it."""
    if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id != "self"):
        return []
    methods = program.__dict__.get("_method_names")
    if methods is None:  # built once: most attributes handed on (`args.lr`) name no local method
        methods = program.__dict__["_method_names"] = {m for k in program.classes for m in k.methods}
    if node.attr not in methods:
        return []
    klass = program.class_of(node.value, fn)
    method = program.method(klass, node.attr) if klass is not None else None
    return [method] if method is not None else []


def _rank_return(walker: "Walker", stmt: ast.stmt, depth: int = 3):
    """(rank test, the `if`, the tests on the way) for `if <switch>: ...; if <rank test>: return`
    where the rank-terminating `if` sits in the outer `if`'s body (or in an `if` of that body, a
    few levels down: `if has_checkpoint: if os.path.exists(f): ...; if done and rank == 0:
    return`) and the else does not end the same way; None otherwise."""
    if stmt.__class__ is not ast.If or (stmt.orelse and isinstance(stmt.orelse[-1], TERMINATORS)):
        return None
    def leaves(side: list) -> bool:
        return bool(side) and isinstance(side[-1], TERMINATORS) and not _crashes(side[-1])

    if leaves(stmt.body):
        # `if eval_only: (if rank != 0: return) ... return`: every rank that takes the switch
        # leaves by its end, so what follows the `if` runs where the switch is off, on every rank
        return None

    # `if rank != 0: return`, or `if rank == 0: ... else: continue` (adaptive-span): the side
    # that leaves, as the test that holds there
    inners = [(inner, leaves(inner.body)) for inner in stmt.body if inner.__class__ is ast.If and inner.body
              and ((not inner.orelse and leaves(inner.body)) or (inner.orelse and leaves(inner.orelse) != leaves(inner.body)
                                                                 and _goes_on(inner.orelse if leaves(inner.body) else inner.body)))]
    deeper = [inner for inner in stmt.body if inner.__class__ is ast.If] if depth > 1 else []
    if not inners and not deeper:
        return None  # (the structure first: most ifs hold no such return, and guard() is dearer)
    if walker.program.ranks.guard(stmt.test, walker.fn) is not None:
        return None
    if walker.program.ranks.single_process(stmt.test, walker.fn):
        return None  # `if not distributed: if device_id > 0: return`: distributed ranks all go on
    from ddpdoctor.lint.defaults import settled  # (defaults reads the program this module builds)
    if settled(stmt.test, walker.program) is False:
        # `if args.mode == "eval": (if rank == 0: ...; return)` with --mode at "train": the run as
        # launched never takes the switch, so every rank goes on past it
        return None
    for inner, body_leaves in inners:
        test = walker.program.ranks.guard(inner.test, walker.fn)
        if test is not None:
            return (test if body_leaves else test.negated()), inner, (stmt.test,)
    for inner in deeper:
        found = _rank_return(walker, inner, depth - 1)
        if found is not None:
            return found[0], found[1], (stmt.test, *found[2])
    return None


def _goes_on(side: list) -> bool:
    """The other side of a rank test whose one side leaves (`if keep and rank == 0: continue`)
    lets its ranks on past the `if`: not where it raises or exits the process (`else:
    sys.exit(1)`) - then no rank gets past the `if` that way, and what follows is not split by
    the rank test (a rank-local value around it is DDP809's to judge)."""
    return not side or not (isinstance(side[-1], TERMINATORS) or exits(side[-1]))


def _negation(said: str) -> str:
    """The text of a test's `not`: `not x` for `x`, `x` for `not x`."""
    return said[4:] if said.startswith("not ") else f"not {said}"
