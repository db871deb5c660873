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
import weakref
from typing import Optional

from ddpdoctor.lint.nodes import TERMINATORS, children, walk


def reaching_values(root: ast.AST, name: str, node: ast.AST, unpacked: bool = False,
                    params: bool = False, run=None) -> Optional[list[ast.AST]]:
    """The values of the `name = ...` bindings a path to `node` (inside root, a function or
    module) may last pass through: the nearest one before it in its own block or an enclosing
    one, each side of an earlier `if` that binds it (only the side whose test holds at node as
    well: `if not p.endswith(".onnx"): model = plain` ... `if p.endswith(".onnx"): ... else:
    evaluate(model)`; not a side that ends in a `return` / `raise` / `continue` / `break`: it
    never falls through), with what came before where a side binds nothing. None where it cannot
    tell: no binding before node, or one in a loop, a `try`, a tuple unpacking, or a later
    binding a loop around node brings back round. unpacked: `model, opt = setup(cfg)` gives the
    call itself (for a question every element answers alike: does it return a DDP wrapper).
    params: a way that reaches root's start with `name` one of its parameters gives that
    parameter's `ast.arg` (what the callers pass) rather than None. run: asked of an earlier
    `if`'s test, True where a distributed run always takes its body, False where it never does
    (`if is_distributed: flag = bool(t.item())` leaves the one-process value to the one-process
    run); None, or no run, reads both sides. Keep one run per function: it is part of the key."""
    index = _index(root)
    # asked again for the same use at each step out of a value's names (a path rebound under
    # 100 tests is asked about each binding's own use, at every depth): answered once
    key = (name, id(node), unpacked, params, run)
    if key in index.answers:
        found = index.answers[key]
        return None if found is None else list(found)
    found = index.answers[key] = _reaching_values(root, index, name, node, unpacked, params, run)
    return None if found is None else list(found)


def _reaching_values(root: ast.AST, index: "_Index", name: str, node: ast.AST, unpacked: bool,
                     params: bool, run=None) -> Optional[list[ast.AST]]:
    path = _path_to(root, node)
    if path is None:
        return None
    holds = [held for _, _, owner, field in path if isinstance(owner, ast.If)
             for held in _sides(owner.test, field == "body", index)]
    # `model(x) if not distributed else model.module(x)`: the side of a conditional expression
    # holds its test as an `if`'s block does (the statement itself binds nothing before node)
    holds += [held for test, side in _expression_sides(index, index.holder[id(node)], node)
              for held in _sides(test, side, index)]
    values: list[ast.AST] = []
    for block, at, owner, _ in reversed(path):
        left = _leaving(block[:at], name, holds, unpacked, index, run)
        if left is None:
            return None
        if left[1] and isinstance(owner, (ast.For, ast.AsyncFor, ast.While)):
            # (a way from the loop's head to node that binds nothing on the way: a binding later
            # in the body comes back round to it; where every way binds first, none can)
            later = owner.body[at + 1:] if block is owner.body else []
            if _binds(later, name, index) or (not isinstance(owner, ast.While) and _binds([owner.target], name)):
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


def _leaving(stmts: list, name: str, holds: list, unpacked: bool,
             index: Optional[_Index] = None, run=None) -> Optional[tuple[list, bool]]:
    """(the values these statements may leave `name` bound to, whether some way through them
    binds nothing); None where a binding is not a plain one."""
    values: list[ast.AST] = []
    for stmt in reversed(stmts):
        if not _binds([stmt], name, index):
            continue
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
                isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id == name:
            return values + [stmt.value], False
        if stmt.__class__ is ast.AnnAssign and stmt.target.__class__ is ast.Name:
            if stmt.value is None:
                continue  # `model: "DDP | FSDPModule"`: an annotation alone binds nothing when run
            return values + [stmt.value], False  # `policy: "BasePolicy" = cfg.instantiate()`
        if unpacked and isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
                isinstance(stmt.targets[0], ast.Tuple) and isinstance(stmt.value, ast.Call) and \
                any(isinstance(e, ast.Name) and e.id == name for e in stmt.targets[0].elts):
            return values + [stmt.value], False
        if isinstance(stmt, ast.If) and not _binds([stmt.test], name):
            taken = run(stmt.test) if run is not None else None
            sides = [stmt.body] if taken is True or _holds(stmt.test, holds, True, index) else [stmt.orelse] \
                if taken is False or _holds(stmt.test, holds, False, index) else [stmt.body, stmt.orelse]
        elif isinstance(stmt, (ast.With, ast.AsyncWith)) and not _binds(stmt.items, name):
            sides = [stmt.body]
        elif stmt.__class__ is ast.Try and not stmt.finalbody and stmt.handlers and all(
                (h.name != name and h.body[-1].__class__ in TERMINATORS) or _all_bind(h.body, name, holds, unpacked, index, run)
                for h in stmt.handlers):
            # `try: model = Model(cfg, device)` / `except TypeError: model = Model(cfg)`: a way
            # through ends in the body's binding or in a handler's (each handler binds on every
            # way or leaves), never in a half-run body's
            sides = [stmt.body + stmt.orelse] + [h.body for h in stmt.handlers]
        else:
            return None
        through = False
        for side in sides:
            if side and side[-1].__class__ in TERMINATORS:
                continue  # a side that leaves (`return DataLoader(shard)`) never falls through to node
            left = _leaving(side, name, holds, unpacked, index, run)
            if left is None:
                return None
            values += left[0]
            through = through or left[1]
        if not through:
            return values, False
    return values, True


def _all_bind(stmts: list, name: str, holds: list, unpacked: bool, index, run) -> bool:
    """Every way through these statements that falls through binds the name plainly."""
    left = _leaving(stmts, name, holds, unpacked, index, run)
    return left is not None and not left[1]


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_BLOCKS = ("body", "orelse", "finalbody")


class _Index:
    """One walk of a function (or module): for every node, the innermost statement of a
    `body` / `orelse` / `finalbody` block holding it; for every such statement, its place and
    the one around it; and the names each statement binds anywhere under it. Every question
    reaching_values asks of that function is then a lookup, not a walk of its statements (a
    500-line `main()` is asked about each name it reads)."""

    def __init__(self, root: ast.AST):
        self.place: dict[int, tuple] = {}  # id(stmt) -> (block, index, owner or None for root, field, up stmt)
        self.holder: dict[int, ast.stmt] = {}  # id(node) -> innermost block statement holding it
        self.bound: dict[int, frozenset] = {}  # id(stmt) -> names bound anywhere under it
        self._dumps: dict[int, str] = {}  # id(test) -> ast.dump(test): each test compared many times
        self.answers: dict[tuple, Optional[list]] = {}  # reaching_values, per (name, use, ...)
        self.ifexps: dict[int, list] = {}  # id(stmt) -> the conditional expressions of its own
        self._blocks(root, None, None)

    def dump(self, node: ast.AST) -> str:
        found = self._dumps.get(id(node))
        if found is None:
            found = self._dumps[id(node)] = ast.dump(node)
        return found

    def _blocks(self, root: ast.AST, _owner: None, _up: None) -> None:
        """One walk of root's nodes, each handed the innermost block statement it sits in; a
        statement's bound names are its own nodes' and those of the statements inside it. (It
        walked every statement's subtree at every depth before: a node ten blocks deep was visited
        ten times, and every statement kept its own list of nodes; a third of a large package's
        index time.)"""
        place, holder = self.place, self.holder
        names: dict[int, set] = {}
        order: list[ast.stmt] = []  # the block statements, each before those inside it
        self._register(root, None)
        stack: list[tuple[ast.AST, Optional[ast.stmt]]] = [(root, None)]
        pop, push = stack.pop, stack.append
        binders = _BINDERS
        while stack:
            node, held = pop()
            if held is not None:
                holder[id(node)] = held
                # (_binds_name asked only of the kinds that bind: most nodes bind nothing)
                if node.__class__ in binders:
                    bound = _binds_name(node)
                    if bound:
                        names[id(held)].update(bound)
            for child in children(node):
                at = place.get(id(child))
                if at is not None and at[2] is (None if node is root else node):
                    # a statement of one of node's blocks: it holds what is under it
                    order.append(child)
                    names[id(child)] = set()
                    if not isinstance(child, _DEFS):
                        self._register(child, child)
                    push((child, child))
                else:
                    push((child, held))
        for stmt in reversed(order):  # inner statements first: theirs are folded into the outer's
            found = self.bound[id(stmt)] = frozenset(names[id(stmt)])
            up = place[id(stmt)][4]
            if up is not None:
                names[id(up)].update(found)

    def _register(self, owner: ast.AST, owner_stmt: Optional[ast.stmt]) -> None:
        for field in _BLOCKS:
            block = getattr(owner, field, None)
            if not (isinstance(block, list) and block and isinstance(block[0], ast.stmt)):
                continue
            for index, stmt in enumerate(block):
                self.place[id(stmt)] = (block, index, owner_stmt, field, owner_stmt)


_INDEXES: "weakref.WeakKeyDictionary[ast.AST, _Index]" = weakref.WeakKeyDictionary()


def _index(root: ast.AST) -> _Index:
    found = _INDEXES.get(root)
    if found is None:
        found = _INDEXES[root] = _Index(root)
    return found


def _path_to(root: ast.AST, node: ast.AST) -> Optional[list]:
    """(block, index in it, the statement owning the block, its field) from the outermost block
    of root down to the statement holding node; None when node is not inside root, or inside a
    def of root's own blocks. A way into an `except` handler (which of the try's statements ran
    is not known), or into a def nested deeper, ends at the statement around it."""
    index = _index(root)
    stmt = index.holder.get(id(node))
    if stmt is None:
        return None
    chain = []
    while stmt is not None:
        chain.append(stmt)
        stmt = index.place[id(stmt)][4]
    chain.reverse()
    path = []
    for stmt in chain:
        block, at, owner, field, _ = index.place[id(stmt)]
        if isinstance(stmt, _DEFS):
            return None if owner is None else path
        path.append((block, at, root if owner is None else owner, field))
    return path


def with_bound(root: ast.AST, name: str, node: ast.AST) -> Optional[ast.AST]:
    """What the innermost `with X as name:` around node binds name to (X), where nothing in that
    body rebinds name before node's statement: `with amp.scale_loss(loss, opt) as scaled:
    scaled.backward()` is this block's `scaled`, whatever the function's other `with ... as
    scaled` blocks bind. None where no such `with` holds node, or a nearer binding does."""
    index = _index(root)
    path = _path_to(root, node)
    for block, at, owner, field in reversed(path or ()):
        if _binds(block[:at], name, index):
            return None
        if field == "body" and owner.__class__ in (ast.With, ast.AsyncWith):
            for item in owner.items:
                held = item.optional_vars
                if held.__class__ is ast.Name and held.id == name:
                    return item.context_expr
    return None


def owners_of_def(root: ast.AST, node: ast.AST) -> list:
    """(the statement owning the block, its field) for every block around a def statement of
    root's own, outermost first, the def's own block last; [] where the def is not one of
    root's (or sits in root's top block)."""
    path = _path_to(root, node)
    place = _index(root).place.get(id(node))
    if path is None or place is None or place[2] is None:
        return []
    return [(owner, field) for _, _, owner, field in path] + [(place[2], place[3])]


def _binds(stmts: list, name: str, index: Optional[_Index] = None) -> bool:
    for stmt in stmts:
        bound = index.bound.get(id(stmt)) if index is not None else None
        if name in (bound if bound is not None else _bound_names(stmt)):
            return True
    return False


def _bound_names(root: ast.AST) -> frozenset:
    """Every name bound anywhere under root (nested defs included): assigned or deleted, a
    def's or class's name, an import's."""
    return frozenset(name for n in walk(root) for name in _binds_name(n))


# the node kinds _binds_name answers anything for
_BINDERS = frozenset({ast.Name, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom})


def _binds_name(n: ast.AST) -> tuple:
    """The names one node binds itself (see _bound_names)."""
    kind = n.__class__
    if kind is ast.Name:
        return (n.id,) if n.ctx.__class__ is not ast.Load else ()
    if kind is ast.FunctionDef or kind is ast.AsyncFunctionDef or kind is ast.ClassDef:
        return (n.name,)
    if kind is ast.Import or kind is ast.ImportFrom:
        return tuple(a.asname or a.name.partition(".")[0] for a in n.names)
    return ()


def _sides(test: ast.AST, side: bool, index: _Index) -> list[tuple[str, bool]]:
    """What a test on one side says: (its dump, side), and for `not x` also (x's dump, the
    other side): `if is_distributed:` binds what `if not is_distributed: ... else:` reads."""
    said = [(index.dump(test), side)]
    if test.__class__ is ast.UnaryOp and test.op.__class__ is ast.Not:
        said.append((index.dump(test.operand), not side))
    return said


def _expression_sides(index: _Index, stmt: ast.stmt, node: ast.AST) -> list[tuple[ast.AST, bool]]:
    """(test, side) of each conditional expression of stmt's own (not its blocks') that holds
    node in its body (True) or orelse (False)."""
    ifexps = index.ifexps.get(id(stmt))
    if ifexps is None:
        # (the statement's own expressions: a compound statement's blocks hold statements of their own)
        own = [stmt] if not hasattr(stmt, "body") else \
            [getattr(stmt, f) for f in ("test", "iter", "target", "items", "subject") if getattr(stmt, f, None)]
        flat = [p for part in own for p in (part if isinstance(part, list) else [part])]
        ifexps = index.ifexps[id(stmt)] = [n for part in flat for n in walk(part) if n.__class__ is ast.IfExp]
    found = []
    for ifexp in ifexps:
        if ifexp is not node:
            for side, part in ((True, ifexp.body), (False, ifexp.orelse)):
                if part is node or any(n is node for n in walk(part)):
                    found.append((ifexp.test, side))
    return found


def _holds(test: ast.AST, holds: list, side: bool, index: Optional[_Index] = None) -> bool:
    """`test` is known to be `side` (true or false) where the (test, side) pairs on node's way
    hold: the same test on that side, or its negation on the other."""
    if not holds:
        return False
    dump = index.dump if index is not None else ast.dump
    if (dump(test), side) in holds:
        return True
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return (dump(test.operand), not side) in holds
    return False
