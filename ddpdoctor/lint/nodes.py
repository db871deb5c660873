"""Walking syntax trees fast: the lint walks every node of a 200-file package several times, and
`ast.iter_child_nodes` (a generator over a generator, with an isinstance test per field) was a
third of its time. Same nodes in the same order as `ast.walk` / `ast.iter_child_nodes`, less the
expression contexts (`Load`, `Store`: no rule looks for them as nodes, only as `node.ctx`).
"""

from __future__ import annotations

import ast

# Fields that never hold a node (names, numbers, flags), and the expression context.
_SCALAR = {"ctx", "id", "attr", "name", "arg", "asname", "module", "level", "type_comment", "kind",
           "conversion", "is_async", "simple"}
_FIELDS: dict[type, tuple[str, ...]] = {}


def node_fields(cls: type) -> tuple[str, ...]:
    """The fields of a node class that may hold nodes."""
    fields = _FIELDS.get(cls)
    if fields is None:
        fields = tuple(f for f in cls._fields
                       if f not in _SCALAR and not (cls is ast.Constant and f == "value"))
        _FIELDS[cls] = fields
    return fields


def children(node: ast.AST) -> list[ast.AST]:
    """The child nodes, in `ast.iter_child_nodes` order."""
    out: list[ast.AST] = []
    AST = ast.AST
    fields = _FIELDS.get(node.__class__)
    for name in node_fields(node.__class__) if fields is None else fields:
        value = getattr(node, name, None)
        if value is None:
            continue
        if value.__class__ is list:
            for item in value:
                if isinstance(item, AST):
                    out.append(item)
        elif isinstance(value, AST):
            out.append(value)
    return out


def walk(root: ast.AST) -> list[ast.AST]:
    """Every node under root (root first), breadth first as `ast.walk` yields them."""
    # children() inlined: a call per node is a measurable share of a 200-file package's lint.
    out = [root]
    index = 0
    AST = ast.AST
    fields_of = _FIELDS
    while index < len(out):
        node = out[index]
        index += 1
        fields = fields_of.get(node.__class__)
        for name in node_fields(node.__class__) if fields is None else fields:
            value = getattr(node, name, None)
            if value is None:
                continue
            if value.__class__ is list:
                for item in value:
                    if isinstance(item, AST):
                        out.append(item)
            elif isinstance(value, AST):
                out.append(value)
    return out


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def own_nodes(root: ast.AST, stop: tuple = _SCOPES) -> list[ast.AST]:
    """Every node under root (not root), not descending into nodes of the `stop` types (nested
    defs, classes, lambdas: their own scopes), in the order a stack walk pops them: last child
    first, each node before its children. children() inlined, as in walk()."""
    return own_nodes_of(children(root), stop)


def own_nodes_of(roots: list[ast.AST], stop: tuple = _SCOPES) -> list[ast.AST]:
    """own_nodes() of several roots (each root included), the last root's first."""
    out: list[ast.AST] = []
    AST = ast.AST
    fields_of = _FIELDS
    stack = list(roots)
    pop, push, append = stack.pop, stack.append, out.append
    while stack:
        node = pop()
        append(node)
        if isinstance(node, stop):
            continue
        cls = node.__class__
        fields = fields_of.get(cls)
        for name in node_fields(cls) if fields is None else fields:
            value = getattr(node, name, None)
            if value is None:
                continue
            if value.__class__ is list:
                for item in value:
                    if isinstance(item, AST):
                        push(item)
            elif isinstance(value, AST):
                push(value)
    return out
