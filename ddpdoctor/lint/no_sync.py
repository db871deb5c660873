"""Whether an accumulation loop's no_sync covers every configuration it runs in.

`with model.no_sync():` (or `model.require_backward_grad_sync = ...`) used only under a test
that does not follow the micro-step - a configuration switch such as `if use_fsdp:` or
`isinstance(model, FSDP)` - leaves the other configuration (plain DDP) all-reducing on every
micro-step: the fix that wrapped only the FSDP path. A test on the micro-step itself (`if not
last_step:`, `micro % accum != 0`) is how no_sync is meant to be used and covers the loop.
DDP805 reads this per loop (lint/facts.py), instead of "no_sync appears somewhere".
"""

from __future__ import annotations

import ast
import re
from typing import Any, Optional

from ddpdoctor.lint.defaults import three_valued
from ddpdoctor.lint.nodes import walk
from ddpdoctor.lint.patterns import ddp_class, fsdp_builder, last_name, text

Function = Any
# What skips DDP's all-reduce for a backward: the model's own switches, and Lightning Fabric's
# context over its wrapped model (`with fabric.no_backward_sync(model, enabled=accumulating):`)
SYNC_WORDS = frozenset({"no_sync", "require_backward_grad_sync", "no_backward_sync"})


def covered(program, fn: Function, loop: ast.AST) -> Optional[bool]:
    """True: no_sync reaches the loop's backward on every configuration; False: only under a
    configuration switch, the other side without it; None: no no_sync in the loop (nor in what
    it calls one level down), so the whole-script answer stands."""
    # a no_sync around the forward decides; one around a backward alone changes nothing, so
    # where it sits under a switch (`if fp16: plain backward else: no_sync backward`) says nothing
    uses = around_forward(loop) or _uses(loop)
    if not uses:
        for node in walk(loop):
            if isinstance(node, ast.Call):
                for target in program.resolve(node.func, fn)[0]:
                    if target.node is not None and any(mentions(n) for n in target.own):
                        return None  # set up in a helper: not judged here
        return None
    # (a no_sync on a side no run takes: `if last or not self.use_ddp: ... else: with no_sync():`
    # where every assignment of `self.use_ddp` is False - guided-diffusion's forks)
    dead = [u for parent, side, _ in _branches(loop) if _never_taken(program, parent, side)
            for u in uses if any(u is n for s in side for n in walk(s))]
    if dead and len(dead) == len(uses):
        return False
    stepping = _stepping_names(loop)
    for parent, side, other in _branches(loop):
        inside = [u for u in uses if any(u is n for s in side for n in walk(s))]
        if not inside:
            continue
        test = parent.test
        # `if use_fsdp and not last:` - each part of an `and` must hold: a part that does not
        # follow the micro-step is a configuration switch
        parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
        if side is parent.orelse or (isinstance(parent, ast.IfExp) and side[0] is parent.orelse):
            parts = [test]  # the else side: what the test's negation holds
        # `if ddp:` (distributed at all): the other side has no DDP model to sync; nor has the
        # other side of `hasattr(model, "no_sync")` or `isinstance(model, DDP)`, which every DDP
        # model passes
        parts = [p for p in parts if not program.ranks.uniform(p, fn) and not _every_ddp_passes(program, p, fn)
                 and not _fsdp_side_off(program, p) and not _period_above_one(p, loop)]
        if all({n.id for n in walk(p) if isinstance(n, ast.Name)} & stepping for p in parts):
            continue  # a test on the micro-step: how no_sync is meant to be used
        if any(isinstance(n, ast.Call) and engine_backward(n, fn) for s in other
               for n in (walk(s) if isinstance(s, ast.AST) else [])):
            continue  # the other side is an engine's (DeepSpeed): no DDP model to sync there
        if not any(mentions(n) for s in other for n in (walk(s) if isinstance(s, ast.AST) else [])):
            return False
    return True


_OPTIMIZER_WRAPPER = re.compile(r"optim", re.IGNORECASE)


def engine_backward(call: ast.Call, fn: Function) -> bool:
    """`model.backward(loss)` with `model.step()` in the same function: an engine (DeepSpeed's)
    that owns backward and step, and with them the accumulation boundary; a tensor's backward
    takes no loss and has no step."""
    if not (isinstance(call.func, ast.Attribute) and call.func.attr == "backward" and call.args):
        return False
    owner = text(call.func.value)
    if _OPTIMIZER_WRAPPER.search(owner.rpartition(".")[2]):
        # `self.optimizer.backward(loss)` then `self.optimizer.step()`: an optimizer wrapper
        # (fairseq's FairseqOptimizer, apex's FP16_Optimizer) runs `loss.backward()` on the
        # model's graph, DDP's hooks and all; an engine that owns the boundary is the model
        return False
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "step"
               and text(n.func.value) == owner for n in fn.own)


def _every_ddp_passes(program, test: ast.AST, fn: Function) -> bool:
    """`hasattr(model, "no_sync")` or `isinstance(model, DDP)`: true for every DDP model."""
    if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and len(test.args) == 2):
        return False
    kind = test.args[1]
    if test.func.id == "hasattr":
        return isinstance(kind, ast.Constant) and kind.value in SYNC_WORDS
    classes = kind.elts if isinstance(kind, ast.Tuple) else [kind]
    return test.func.id == "isinstance" and any(ddp_class(program, c, fn) for c in classes)


def _fsdp_side_off(program, test: ast.AST) -> bool:
    """`not use_fsdp` where the script's own `if <...>.use_fsdp:` (the same flag, any owner)
    wraps the model in FSDP, there or in a helper it calls: the other side of the switch holds
    an FSDP model, no DDP model to sync (a training step's `if ddp and not use_fsdp:
    model.require_backward_grad_sync = last`, training-custom-llama)."""
    if not (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
            and isinstance(test.operand, (ast.Name, ast.Attribute))):
        return False
    flag = test.operand.id if isinstance(test.operand, ast.Name) else test.operand.attr
    memo = program.__dict__.setdefault("_fsdp_flags", {})
    if flag not in memo:
        memo[flag] = any(isinstance(node, ast.If) and isinstance(node.test, (ast.Name, ast.Attribute))
                         and (node.test.id if isinstance(node.test, ast.Name) else node.test.attr) == flag
                         and _wraps_fsdp(program, node.body, f)
                         for f in list(program.functions) if f.node is not None for node in f.own_of(ast.If))
    return memo[flag]


def _wraps_fsdp(program, body: list, fn: Function) -> bool:
    """The statements build an FSDP model, or call a local helper that does (one level)."""
    for call in (n for s in body for n in walk(s) if isinstance(n, ast.Call)):
        if fsdp_builder(program.qualify(call.func, fn) or ""):
            return True
        for target in program.resolve(call.func, fn)[0]:
            if target.node is not None and any(isinstance(n, ast.Call) and fsdp_builder(program.qualify(n.func, target) or "")
                                               for n in target.own):
                return True
    return False


def mentions(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr in SYNC_WORDS) or \
        (isinstance(node, ast.Name) and node.id in SYNC_WORDS)


def owner(context: ast.AST) -> Optional[ast.AST]:
    """The X of a `with X.no_sync():` context (the wrapped model), or None for any other context."""
    if context.__class__ is ast.Call and context.func.__class__ is ast.Attribute and context.func.attr == "no_sync":
        return context.func.value
    return None


def backward_unsynced(fn, call: ast.Call) -> bool:
    """The backward sits in a `with model.no_sync():` of fn that runs the model's forward before it
    (a script that all-reduces the gradients by hand after the block): it all-reduces nothing."""
    if fn.node is None:
        return False
    for block in fn.own_of(ast.With, ast.AsyncWith):
        models = [last_name(m) for item in block.items if (m := owner(item.context_expr)) is not None]
        if not any(models):
            continue
        inside = list(walk(block))
        if not any(n is call for n in inside):
            continue
        # (by its last name: `with model.no_sync():` around `self.model(...)`, model = self.model)
        if any(n.__class__ is ast.Call and n.func.__class__ in (ast.Name, ast.Attribute)
               and last_name(n.func) in models and n.lineno <= call.lineno for n in inside):
            return True
    return False


def around_forward(loop: ast.AST) -> list[ast.AST]:
    """The `X.no_sync` of each `with X.no_sync():` whose body calls X (the forward) in the loop."""
    found = []
    for node in walk(loop):
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                for sub in walk(item.context_expr):
                    if isinstance(sub, ast.Attribute) and sub.attr == "no_sync" and any(
                            isinstance(c, ast.Call) and text(c.func) == text(sub.value)
                            for stmt in node.body for c in walk(stmt)):
                        found.append(sub)
    return found


def _uses(loop: ast.AST) -> list[ast.AST]:
    return [n for n in walk(loop) if mentions(n)]


def _period_above_one(test: ast.AST, loop: ast.AST) -> bool:
    """`accum_steps > 1` (or `!= 1`, `>= 2`) of the period the loop steps by (`(i + 1) %
    accum_steps == 0`): its other side accumulates nothing, so it needs no no_sync."""
    if not (test.__class__ is ast.Compare and len(test.ops) == 1 and test.comparators[0].__class__ is ast.Constant):
        return False
    op, bound = test.ops[0].__class__, test.comparators[0].value
    if not ((op in (ast.Gt, ast.NotEq) and bound == 1) or (op is ast.GtE and bound == 2)):
        return False
    said = text(test.left)
    return any(n.__class__ is ast.BinOp and n.op.__class__ is ast.Mod and text(n.right) == said for n in walk(loop))


def _stepping_names(loop: ast.AST) -> set[str]:
    """Names that change with the micro-step: the loop targets and what the loop body assigns."""
    names = set()
    for node in walk(loop):
        if isinstance(node, (ast.For, ast.AsyncFor)):
            names.update(n.id for n in walk(node.target) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.update(n.id for n in walk(target) if isinstance(n, ast.Name))
    return names


def _never_taken(program, parent: ast.AST, side: list) -> bool:
    """The side of the test is never taken: the attributes it reads are set to one constant
    wherever they are set (Program.attribute_constants), and with them the test is decided."""
    truth = _attribute_truth(program, parent.test)
    if truth is None:
        return False
    on_body = side is parent.body or (isinstance(parent, ast.IfExp) and side and side[0] is parent.body)
    return truth is (not on_body)


def _attribute_truth(program, test: ast.AST) -> Optional[bool]:
    def leaf(part: ast.AST) -> Optional[bool]:
        if isinstance(part, ast.Attribute) and isinstance(part.value, ast.Name) and part.value.id == "self":
            values = program.attribute_constants(part.attr)
            truths = {bool(v) for v in values} if values else set()
            return truths.pop() if len(truths) == 1 else None
        return None
    return three_valued(test, leaf)


def _branches(loop: ast.AST):
    """(the if / conditional expression, one side, the other side) for every branch in the loop."""
    for node in walk(loop):
        if isinstance(node, ast.If):
            yield node, node.body, node.orelse
            yield node, node.orelse, node.body
        elif isinstance(node, ast.IfExp):
            yield node, [node.body], [node.orelse]
            yield node, [node.orelse], [node.body]
