"""Which binding of a name reaches a statement: flow, not every binding the function has.

`model = DDP(net)` then `model = net.to(dev)` before rank 0 evaluates: the evaluation sees the
plain module. Read on one function's syntax, block by block outward from the statement, with the
tests on its way (`if not p.endswith(".onnx"): model = plain` reaches the `else:` of
`if p.endswith(".onnx"):` below it); anything else that may bind the name between, or a loop
that may bring a later binding back round, leaves it unknown (None), and the callers fall back to
every binding the name has.
"""

from __future__ import annotations

import ast
from typing import Optional

from ddpdoctor.lint.nodes import walk


def reaching_values(root: ast.AST, name: str, node: ast.AST, unpacked: bool = False,
                    params: bool = False) -> Optional[list[ast.AST]]:
    """The values of the `name = ...` bindings a path to `node` (inside root, a function or
    module) may last pass through: the nearest one before it in its own block or an enclosing
    one, each side of an earlier `if` that binds it (only the side whose test holds at node as
    well: `if not p.endswith(".onnx"): model = plain` ... `if p.endswith(".onnx"): ... else:
    evaluate(model)`), with what came before where a side binds nothing. None where it cannot
    tell: no binding before node, or one in a loop, a `try`, a tuple unpacking, or a later
    binding a loop around node brings back round. unpacked: `model, opt = setup(cfg)` gives the
    call itself (for a question every element answers alike: does it return a DDP wrapper).
    params: a way that reaches root's start with `name` one of its parameters gives that
    parameter's `ast.arg` (what the callers pass) rather than None."""
    path = _path_to(root, node)
    if path is None:
        return None
    holds = [(ast.dump(owner.test), field == "body") for _, _, owner, field in path if isinstance(owner, ast.If)]
    values: list[ast.AST] = []
    for block, index, owner, _ in reversed(path):
        if isinstance(owner, (ast.For, ast.AsyncFor, ast.While)):
            later = owner.body[index + 1:] if block is owner.body else []
            if _binds(later, name) or (not isinstance(owner, ast.While) and _binds([owner.target], name)):
                return None
        left = _leaving(block[:index], name, holds, unpacked)
        if left is None:
            return None
        values += left[0]
        if not left[1]:
            return values
    args = getattr(root, "args", None)
    if params and isinstance(args, ast.arguments):
        arg = next((a for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg)
                    if a is not None and a.arg == name), None)
        if arg is not None:
            return values + [arg]
    return None


def reaching_value(root: ast.AST, name: str, node: ast.AST) -> Optional[ast.AST]:
    """The one value that reaches node (reaching_values), or None."""
    values = reaching_values(root, name, node)
    return values[0] if values and len(values) == 1 else None


def _leaving(stmts: list, name: str, holds: list, unpacked: bool) -> Optional[tuple[list, bool]]:
    """(the values these statements may leave `name` bound to, whether some way through them
    binds nothing); None where a binding is not a plain one."""
    values: list[ast.AST] = []
    for stmt in reversed(stmts):
        if not _binds([stmt], name):
            continue
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
                isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id == name:
            return values + [stmt.value], False
        if unpacked and isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
                isinstance(stmt.targets[0], ast.Tuple) and isinstance(stmt.value, ast.Call) and \
                any(isinstance(e, ast.Name) and e.id == name for e in stmt.targets[0].elts):
            return values + [stmt.value], False
        if isinstance(stmt, ast.If) and not _binds([stmt.test], name):
            sides = [stmt.body] if _holds(stmt.test, holds, True) else [stmt.orelse] \
                if _holds(stmt.test, holds, False) else [stmt.body, stmt.orelse]
        elif isinstance(stmt, (ast.With, ast.AsyncWith)) and not _binds(stmt.items, name):
            sides = [stmt.body]
        else:
            return None
        through = False
        for side in sides:
            left = _leaving(side, name, holds, unpacked)
            if left is None:
                return None
            values += left[0]
            through = through or left[1]
        if not through:
            return values, False
    return values, True


def _path_to(root: ast.AST, node: ast.AST) -> Optional[list]:
    """(block, index in it, the statement owning the block, its field) from the outermost block
    of root down to the statement holding node; None when node is not inside root."""
    for field in ("body", "orelse", "finalbody"):
        block = getattr(root, field, None)
        if not (isinstance(block, list) and block and isinstance(block[0], ast.stmt)):
            continue
        for index, stmt in enumerate(block):
            if stmt is node or any(n is node for n in walk(stmt)):
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                    return None  # inside a nested def: its own bindings
                inner = _path_to(stmt, node) if stmt is not node else []
                return [(block, index, root, field)] + (inner or [])
    return None  # in an `except` handler (which of the try's statements ran is not known)


def _binds(stmts: list, name: str) -> bool:
    for stmt in stmts:
        for n in walk(stmt):
            if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, (ast.Store, ast.Del)):
                return True
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == name:
                return True
            if isinstance(n, (ast.Import, ast.ImportFrom)) and any(
                    (a.asname or a.name.partition(".")[0]) == name for a in n.names):
                return True
    return False


def _holds(test: ast.AST, holds: list, side: bool) -> bool:
    """`test` is known to be `side` (true or false) where the (test, side) pairs on node's way
    hold: the same test on that side, or its negation on the other."""
    if (ast.dump(test), side) in holds:
        return True
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return (ast.dump(test.operand), not side) in holds
    return False
