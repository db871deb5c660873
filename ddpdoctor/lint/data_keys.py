"""Collectives run once per key of a dict whose keys come from the data (DDP807's count twin).

    for x, domain in loader:                  # each rank sees its own share of the data
        for d in domain.tolist():
            losses.setdefault(d, []).append(...)
    for key, values in losses.items():        # as many all_reduces as domains this rank saw
        dist.all_reduce(torch.tensor(values).sum())

Ranks that saw different domains run a different number of all_reduces, and pair one key's
value with another's: wrong numbers while counts agree, a hang when they do not. A key is from
the data when it comes out of an iteration over what a data loop yields (`for d in domain`,
`domain` bound by the outer loop over the loader), out of `.tolist()` / `.unique()` / `.item()`;
not a loop over `range(...)`, a literal or a model's parameters (the same on every rank). An
exchange of the keys before the loop (all_gather_object, broadcast_object_list) makes them
agree and is not reported. Read per function from the syntax, as data_sized.py reads sizes.
"""

from __future__ import annotations

import ast
from typing import Iterator, Optional

from ddpdoctor.core.findings import Location
from ddpdoctor.lint import data_sized
from ddpdoctor.lint.data_sized import DataSizedCollective
from ddpdoctor.lint.nodes import walk

# Iterations whose items are the same on every rank.
FIXED_ITERS = {"range", "named_parameters", "parameters", "named_modules", "modules", "named_buffers",
               "items", "keys", "values", "state_dict"}
FROM_DATA = {"tolist", "unique", "item"}


def gather(files: list, reachable: Optional[set] = None) -> list[DataSizedCollective]:
    found: list[DataSizedCollective] = []
    for source in files:
        dist_names, bare, calls = data_sized.file_collectives(source)
        if not calls:
            continue
        scopes = [("<module>", source.tree)]
        scopes += [(node.name, node) for node in source.of(ast.FunctionDef, ast.AsyncFunctionDef)
                   if reachable is None or id(node) in reachable]
        for label, root in scopes:
            found.extend(_scope(source.display, label, root, dist_names, bare))
    return found


def _scope(file: str, label: str, root: ast.AST, dist_names: set, bare: set) -> Iterator[DataSizedCollective]:
    own = list(data_sized._walk_own(root))
    loops = [n for n in own if isinstance(n, (ast.For, ast.AsyncFor)) and n is not root]
    data_names: set[str] = set()
    for loop in loops:  # what a loop over the data binds (not a loop over range or parameters)
        if not _fixed(loop.iter):
            data_names.update(n.id for n in walk(loop.target) if isinstance(n, ast.Name))
    # and the names bound to a value taken from the data (`classes = torch.unique(torch.cat([preds,
    # labels]))`, then `for cls in classes:` - a segmentation metric's per-class sums)
    for _ in range(2):
        data_names.update(t.id for n in own if isinstance(n, ast.Assign) and _from_data(n.value, data_names)
                          for target in n.targets for t in walk(target) if isinstance(t, ast.Name))
    keyed: dict[str, int] = {}  # dict name -> line its data key is set
    kept_by: dict[str, str] = {}  # dict name -> the emptiness test a fixed key is kept under
    for loop in loops:
        from_data = _from_data(loop.iter, data_names)
        keys = {n.id for n in walk(loop.target) if isinstance(n, ast.Name)}
        if not keys:
            continue
        # (`for key in losses: losses[key] = losses[key][0]` rewrites the keys the dict already
        # has: none comes from the data there)
        itself = _over(loop.iter)
        if not from_data:
            # a fixed list of keys, each kept only where this rank's share holds some of it
            # (`for i, mode in enumerate(modes): mask = types == i; if not mask.any(): continue;
            # acc[mode] = ...`: AIpparel's per-mode metrics)
            for name, (line, test) in _kept_where_present(loop, keys).items():
                if name != itself:
                    keyed.setdefault(name, line)
                    kept_by.setdefault(name, test)
            continue
        for node in walk(loop):
            name = _keyed_write(node, keys)
            if name and name != itself:
                keyed.setdefault(name, node.lineno)
    if not keyed:
        return
    exchanged_at = min((n.lineno for n in own if isinstance(n, ast.Call)
                        and data_sized._collective(n, dist_names, bare) in ("all_gather_object", "broadcast_object_list")),
                       default=None)
    for loop in loops:
        name = _over(loop.iter)
        if name not in keyed or keyed[name] > loop.lineno:
            continue
        if exchanged_at is not None and keyed[name] < exchanged_at < loop.lineno:
            continue
        for node in walk(loop):
            op = data_sized._collective(node, dist_names, bare) if isinstance(node, ast.Call) else None
            if op:
                whose = f"whose keys are kept only where `{kept_by[name]}` holds on the rank's own data" \
                    if name in kept_by else "whose keys come from the data"
                yield DataSizedCollective(
                    f"dist.{op}()", Location(file, node.lineno),
                    f"one call per key of `{name}`, {whose}", Location(file, keyed[name]),
                    label, kind="count")
                break


# Tests of whether a selection of the data holds anything (`mask.any()`, `len(rows) > 0`).
EMPTINESS = {"any", "all", "numel", "nonzero", "count_nonzero", "len", "sum"}


def _kept_where_present(loop: ast.AST, keys: set[str]) -> dict[str, tuple[int, str]]:
    """The dicts the loop writes at one of its keys only past a test of whether a selection
    holds anything (`if not mask.any(): continue` before the write, or the write under `if
    mask.any():`): {dict: (the write's line, the test)}."""
    found: dict[str, tuple[int, str]] = {}
    skipped = ""
    for stmt in loop.body:
        if isinstance(stmt, ast.If) and _emptiness(stmt.test) and any(
                isinstance(s, ast.Continue) for s in stmt.body) and not stmt.orelse:
            # (the test a key is kept under: `mask.any()` for `if not mask.any(): continue`)
            kept = stmt.test.operand if isinstance(stmt.test, ast.UnaryOp) and isinstance(stmt.test.op, ast.Not) \
                else None
            skipped = skipped or (data_sized._text(kept) if kept is not None else f"not ({data_sized._text(stmt.test)})")
            continue
        guard = data_sized._text(stmt.test) if isinstance(stmt, ast.If) and _emptiness(stmt.test) else ""
        for node in walk(stmt):
            name = _keyed_write(node, keys)
            test = skipped or guard
            if name and test and name not in found:
                found[name] = (node.lineno, test)
    return found


def _emptiness(test: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and data_sized._name(n.func) in EMPTINESS for n in walk(test))


def _fixed(node: ast.AST) -> bool:
    if isinstance(node, (ast.List, ast.Tuple, ast.Constant)):
        return True
    if isinstance(node, ast.Call):
        name = data_sized._name(node.func)
        if name in FIXED_ITERS:
            return True
        if name in ("enumerate", "zip", "sorted", "reversed", "list") and node.args:
            return all(_fixed(a) for a in node.args)
    return False


def _from_data(node: ast.AST, data_names: set[str]) -> bool:
    """The iteration yields values taken from the data."""
    if _fixed(node):
        return False
    for sub in walk(node):
        if isinstance(sub, ast.Call) and data_sized._name(sub.func) in FROM_DATA:
            return True
    root = node
    while isinstance(root, (ast.Attribute, ast.Subscript, ast.Call)):
        root = root.func if isinstance(root, ast.Call) else root.value
    return isinstance(root, ast.Name) and root.id in data_names


def _keyed_write(node: ast.AST, keys: set[str]) -> Optional[str]:
    """`d[k] = ...`, `d[k] += ...`, `d.setdefault(k, ...)`, `d[k].append(...)` with k a key: d."""
    targets = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AugAssign):
        targets = [node.target]
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr == "setdefault" and node.args and isinstance(node.args[0], ast.Name) \
                and node.args[0].id in keys and isinstance(node.func.value, ast.Name):
            return node.func.value.id
        targets = [node.func.value]
    for target in targets:
        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) \
                and isinstance(target.slice, ast.Name) and target.slice.id in keys:
            return target.value.id
    return None


def _over(node: ast.AST) -> Optional[str]:
    """`d` for `d`, `d.items()`, `d.keys()`, `sorted(d)`, `sorted(d.items())`."""
    if isinstance(node, ast.Call) and data_sized._name(node.func) in ("sorted", "list", "enumerate") and node.args:
        return _over(node.args[0])
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("items", "keys", "values"):
        node = node.func.value
    return node.id if isinstance(node, ast.Name) else None
