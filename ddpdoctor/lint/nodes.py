"""Walking syntax trees fast: the lint walks every node of a 200-file package several times, and
`ast.iter_child_nodes` (a generator over a generator, with an isinstance test per field) was a
third of its time. Same nodes in the same order as `ast.walk` / `ast.iter_child_nodes`, less the
expression contexts (`Load`, `Store`: no rule looks for them as nodes, only as `node.ctx`).
"""

from __future__ import annotations

import ast
from typing import Optional

# Fields that never hold a node (names, numbers, flags), and the expression context.
_SCALAR = {"ctx", "id", "attr", "name", "arg", "asname", "module", "level", "type_comment", "kind",
           "conversion", "is_async", "simple"}
# The list fields that may hold something else than nodes: `{**d}`'s key is None, a keyword-only
# argument without a default is None in kw_defaults, and these name lists are strings. Every other
# list field holds only nodes, so the walks below take it whole (a test per item was most of their
# time: 4 million isinstance calls on a 200-file package).
_LOOSE = {(ast.Dict, "keys"), (ast.arguments, "kw_defaults"), (ast.Global, "names"),
          (ast.Nonlocal, "names"), (ast.MatchClass, "kwd_attrs")}
_FIELDS: dict[type, tuple[tuple[str, bool], ...]] = {}


def param_defaults(node: ast.AST) -> dict:
    """A def's (or lambda's) parameters with a default, name -> the default as written."""
    args = getattr(node, "args", None)
    if not isinstance(args, ast.arguments):
        return {}
    positional = [*args.posonlyargs, *args.args]
    found = dict(zip([a.arg for a in positional[len(positional) - len(args.defaults):]], args.defaults))
    found.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
    return found


def node_fields(cls: type) -> tuple[tuple[str, bool], ...]:
    """The fields of a node class that may hold nodes, each with whether a list there may hold
    other things (see _LOOSE)."""
    fields = _FIELDS.get(cls)
    if fields is None:
        fields = tuple((f, (cls, f) in _LOOSE) for f in cls._fields
                       if f not in _SCALAR and not (cls is ast.Constant and f == "value"))
        _FIELDS[cls] = fields
    return fields


def children(node: ast.AST) -> list[ast.AST]:
    """The child nodes, in `ast.iter_child_nodes` order."""
    out: list[ast.AST] = []
    AST = ast.AST
    fields = _FIELDS.get(node.__class__)
    for name, loose in node_fields(node.__class__) if fields is None else fields:
        value = getattr(node, name, None)
        if value is None:
            continue
        if value.__class__ is list:
            if loose:
                out.extend(item for item in value if isinstance(item, AST))
            else:
                out.extend(value)
        elif isinstance(value, AST):
            out.append(value)
    return out


def walk(root: ast.AST) -> list[ast.AST]:
    """Every node under root (root first), breadth first as `ast.walk` yields them. Kept on the
    node: the rules walk the same statements again and again (40,000 walks on a 14,000-statement
    package), and the trees are never changed once parsed. Callers only read the list.
    What is kept leaves root out (root is put first in a fresh list on each ask): kept with
    itself in it, each walked node was a cycle, which the lint's end had to break by walking
    every node of every file again (Program.release); without, a tree is freed by reference
    counting alone."""
    below = root.__dict__.get("_walked")
    if below is None:
        found = _walk(root)
        root.__dict__["_walked"] = found[1:]
        return found
    return [root, *below]


def _walk(root: ast.AST) -> list[ast.AST]:
    # children() inlined: a call per node is a measurable share of a 200-file package's lint.
    out = [root]
    index = 0
    AST = ast.AST
    fields_of = _FIELDS
    append, extend = out.append, out.extend
    while index < len(out):
        node = out[index]
        index += 1
        fields = fields_of.get(node.__class__)
        for name, loose in node_fields(node.__class__) if fields is None else fields:
            value = getattr(node, name, None)
            if value is None:
                continue
            if value.__class__ is list:
                if loose:
                    extend(item for item in value if isinstance(item, AST))
                else:
                    extend(value)
            elif isinstance(value, AST):
                append(value)
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
    pop, push, extend, append = stack.pop, stack.append, stack.extend, out.append
    stops = set(stop)  # a parsed tree's nodes are of the exact classes: a set test, not isinstance
    while stack:
        node = pop()
        append(node)
        if node.__class__ in stops:
            continue
        cls = node.__class__
        fields = fields_of.get(cls)
        for name, loose in node_fields(cls) if fields is None else fields:
            value = getattr(node, name, None)
            if value is None:
                continue
            if value.__class__ is list:
                if loose:
                    extend(item for item in value if isinstance(item, AST))
                else:
                    extend(value)  # pushed in order, as one push per item
            elif isinstance(value, AST):
                push(value)
    return out


def key_presence(test: ast.AST) -> bool:
    """`"main" in terms`, `"k" not in list(out.keys())`, and `and`/`or`/`not` of such: a test on
    which keys a dict holds, each a constant string."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return key_presence(test.operand)
    if isinstance(test, ast.BoolOp):
        return all(key_presence(v) for v in test.values)
    return isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.In, ast.NotIn)) \
        and isinstance(test.left, ast.Constant) and isinstance(test.left.value, str)


def source_lines(lines: list, node: ast.AST) -> str:
    """The source lines a statement spans (a class or a def: its header to its last line), from
    a file's lines as read. ast.get_source_segment splits the whole file again on every call: a
    500-class package asked it 516 times (7 s)."""
    start, end = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
    if start is None or end is None:
        return ""
    return "\n".join(lines[start - 1:end])


# statements after which nothing in the same block runs (the walker, reaching and rank_state read them)
TERMINATORS = (ast.Return, ast.Raise, ast.Continue, ast.Break)


def blocks_around(body: list, node: ast.AST) -> list[tuple[list, int]]:
    """(statement list, index) of each statement on the way from body down to the innermost
    statement that holds node, outermost first (through `if` / `for` / `while` / `with` / `try`
    blocks, their handlers and `match` cases; not into nested functions' bodies); [] where body
    does not hold it."""
    found: list[tuple[list, int]] = []
    while body:
        index = next((i for i, s in enumerate(body) if any(n is node for n in walk(s))), None)
        if index is None:
            break
        found.append((body, index))
        holder = body[index]
        if isinstance(holder, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            break
        blocks = [getattr(holder, f, None) or [] for f in ("body", "orelse", "finalbody")] + \
            [h.body for h in getattr(holder, "handlers", ())] + [c.body for c in getattr(holder, "cases", ())]
        body = next((b for b in blocks if any(n is node for s in b for n in walk(s))), [])
    return found


def apart(body: list, a: ast.AST, b: ast.AST) -> bool:
    """a and b lie on the two sides of one `if` under body (its block and its `else:` / `elif`):
    no pass through body reaches both."""
    outer_a, outer_b = blocks_around(body, a), blocks_around(body, b)
    for level, ((block_a, at_a), (block_b, at_b)) in enumerate(zip(outer_a, outer_b)):
        if block_a is not block_b:
            holder_block, at = outer_a[level - 1]
            return level > 0 and isinstance(holder_block[at], ast.If)
        if at_a != at_b:
            return False
    return False


def parse_test(cond: str) -> Optional[ast.AST]:
    """A test's text (as the walker says it) parsed back; None where it does not parse, or is
    nested deeper than the interpreter parses. The trees are only read."""
    try:
        return ast.parse(cond, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
