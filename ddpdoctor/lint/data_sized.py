"""Collectives whose tensor's size comes from the data (the static twin of DDP506, for DDP807).

Within one function (or the module's top level), in source order: a tensor whose length
follows the values of a batch - `torch.bincount(x)` without `minlength`, `unique`, `nonzero`,
`argwhere`, `masked_select`, boolean-mask indexing `x[x > 0]` / `x[mask]`, a list filled
under a condition in a loop (or a filtered comprehension) turned into a tensor - and what is
computed from it elementwise, handed to a tensor collective (all_reduce, all_gather, broadcast,
reduce, ...) with no size exchange before it in the same function: an all_reduce with
ReduceOp.MAX, an all_gather, all_gather_object, broadcast or broadcast_object_list. Padding
(`F.pad`), reductions (`.sum()`, `.max()`, `len()`, ...) and `minlength` give a size that does
not follow the data.

Only the files' syntax trees are read (lint/sources.SourceFile), so this module stands beside
the Program's own analysis and needs nothing of it.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Iterator, Optional

from ddpdoctor.core import torch_names as names
from ddpdoctor.core.findings import Location
from ddpdoctor.lint.nodes import children, key_presence, walk

# The tensor collectives whose one tensor's size must match on every rank; all_to_all takes
# lists of tensors, which this rule does not follow.
SINKS = frozenset(names.TENSOR_COLLECTIVES) - {"all_to_all"}
# A size exchange before the sink (all_reduce counts only with ReduceOp.MAX: read at the call).
EXCHANGES = frozenset(names.SIZE_GATHERS + names.OBJECT_EXCHANGES)
_READ = SINKS | EXCHANGES  # the torch.distributed calls this rule reads
# Accelerate's collectives on an Accelerator (`accelerator.gather(t)` all-gathers tensors of one
# shape, as dist.all_gather_into_tensor does), and its size exchange (pad_across_processes
# agrees on the longest first): as the rule reads them.
ACCELERATE_READ = {"gather": "accelerator.gather", "reduce": "accelerator.reduce",
                   "pad_across_processes": "accelerator.pad_across_processes"}
SINKS = SINKS | {"accelerator.gather", "accelerator.reduce"}
EXCHANGES = EXCHANGES | {"accelerator.pad_across_processes"}
_ACCELERATOR = re.compile(r"(?:^|\.)_?accelerator$", re.IGNORECASE)
DATA_SIZED = {"unique", "unique_consecutive", "nonzero", "argwhere", "masked_select"}
# Calls whose result no longer has the data's length: reductions, sizes, padding, conversion
# to Python numbers.
FIXED = {"sum", "mean", "max", "min", "amax", "amin", "prod", "numel", "size", "item", "norm", "pad_across_processes",
         "count_nonzero", "any", "all", "len", "pad", "std", "var", "median", "logsumexp",
         "zeros", "ones", "full", "empty", "arange", "shape", "dim"}
NUMBERS = {"int", "float", "bool"}  # int(x): a number; x.int(): a cast of the same length
ELEMENTWISE = {"abs", "exp", "log", "sqrt", "sigmoid", "softmax", "log_softmax", "relu", "clamp",
               "one_hot", "pow", "mul", "add", "sub", "div", "sort", "flip", "cumsum", "square",
               "index_select", "flatten", "reshape", "squeeze", "unsqueeze", "round", "floor",
               "ceil", "sign", "neg", "argsort", "sorted", "list", "tuple", "array", "asarray"}
# nn.Module's own iterators: their length is the model's, the same on every rank.
MODULE_STRUCTURE = {"parameters", "named_parameters", "buffers", "named_buffers", "modules",
                    "named_modules", "children", "named_children"}
LIST_TO_TENSOR = {"tensor", "as_tensor", "stack", "cat", "concat", "concatenate", "from_numpy",
                  "LongTensor", "FloatTensor", "Tensor", "hstack", "vstack"}


@dataclass
class DataSizedCollective:
    """A collective fed a tensor whose size follows the data, with no size exchange before it."""

    op: str  # "dist.all_reduce()"
    location: Location  # the collective
    source: str  # what makes the size: "torch.bincount(preds) without minlength"
    source_location: Location
    function: str  # the function it is in ("<module>" at top level)
    kind: str = "size"  # "count": one call per data-dependent key (lint/data_keys.py)


def _text(node: ast.AST, limit: int = 60) -> str:
    try:
        out = ast.unparse(node)
    except Exception:  # noqa: BLE001 - only for the message
        return "?"
    return out if len(out) <= limit else out[: limit - 1] + "…"


def _name(func: ast.AST) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _kw(call: ast.Call, name: str) -> Optional[ast.AST]:
    return next((k.value for k in call.keywords if k.arg == name), None)


class _Scope:
    """One function body (or the module's top level), walked in source order."""

    def __init__(self, file: str, label: str, body: list[ast.stmt], dist_names: set[str],
                 imported: set[str]):
        self.file = file
        self.label = label
        self.body = body
        self.dist_names = dist_names  # "dist", "torch.distributed"
        self.imported = imported  # collective names imported bare (from torch.distributed import ...)
        self.sized: dict[str, tuple[str, int]] = {}  # name -> (why, line)
        self.masks: set[str] = set()
        self.filled: dict[str, tuple[str, int]] = {}  # lists appended to under a loop's condition
        self.exchanged = False
        self.found: list[DataSizedCollective] = []
        self.every_pass: set[int] = set()  # appends that run once per pass (both sides of an if)
        self.in_structure = False  # inside a loop over a module's own structure (its parameters)
        self.counters: set[str] = set()  # the indexes of the `for i in range(...)` loops around

    # -- what the data sizes ---------------------------------------------------------------
    def origin(self, node: ast.AST) -> Optional[tuple[str, int]]:
        """(why, line) when `node`'s length follows the data; None otherwise."""
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Name):
            return self.sized.get(node.id) or self.filled.get(node.id)
        if isinstance(node, ast.Call):
            name = _name(node.func)
            if name in FIXED or (name in NUMBERS and isinstance(node.func, ast.Name)):
                return None
            if name == "bincount":
                # torch.bincount(x, weights, minlength) or x.bincount(weights, minlength)
                function_form = isinstance(node.func, ast.Attribute) and _text(node.func.value) == "torch"
                positional = len(node.args) >= (3 if function_form else 2)
                if _kw(node, "minlength") is None and not positional:
                    return f"{_text(node)} without minlength", line
                return None
            if name in DATA_SIZED:
                return _text(node), line
            if name == "where" and len(node.args) == 1 and not node.keywords:
                return _text(node), line
            if name in LIST_TO_TENSOR:
                for arg in node.args[:1]:
                    found = self.origin(arg)
                    if found:
                        return found
                return None
            if isinstance(node.func, ast.Attribute):
                found = self.origin(node.func.value)  # x.float(), x.to(device), x.view(-1)
                if found:
                    return found
            if name in ELEMENTWISE:  # torch.abs(x), F.one_hot(x): the input's length
                return self._first(node.args[:1])
            return None  # any other function (a loss, a model) may reduce: not followed
        if isinstance(node, ast.Subscript):
            mask = node.slice
            if isinstance(mask, ast.Compare) or (isinstance(mask, ast.Name) and mask.id in self.masks) or (
                    isinstance(mask, ast.UnaryOp) and isinstance(mask.op, (ast.Not, ast.Invert))):
                return f"{_text(node)} (a boolean mask)", line
            return self.origin(node.value)
        if isinstance(node, ast.BinOp):
            return self._first([node.left, node.right])
        if isinstance(node, ast.UnaryOp):
            return self.origin(node.operand)
        if isinstance(node, ast.ListComp):
            if any(g.ifs and not _parameter_comprehension(g) for g in node.generators):
                return f"{_text(node)} (a filtered list)", line
            return self._first([g.iter for g in node.generators])
        if isinstance(node, (ast.List, ast.Tuple)):
            return None
        return None

    def _first(self, nodes: list[ast.AST]) -> Optional[tuple[str, int]]:
        for node in nodes:
            found = self.origin(node)
            if found:
                return found
        return None

    # -- collectives -------------------------------------------------------------------------
    def collective(self, call: ast.Call) -> Optional[str]:
        return _collective(call, self.dist_names, self.imported)

    def is_exchange(self, op: str, call: ast.Call) -> bool:
        if op in EXCHANGES:
            return True
        if op == "all_reduce":
            reduce_op = _kw(call, "op") or (call.args[1] if len(call.args) > 1 else None)
            return reduce_op is not None and "MAX" in _text(reduce_op).upper()
        return False

    # -- the walk ----------------------------------------------------------------------------
    def run(self) -> list[DataSizedCollective]:
        for stmt in self.body:
            self.statement(stmt, loop_depth=0, conditional=False)
        return self.found

    def statement(self, stmt: ast.stmt, loop_depth: int, conditional: bool) -> None:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return  # its own scope
        self.calls(stmt)
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            pairs = [(targets, stmt.value)]
            if len(targets) == 1 and isinstance(targets[0], ast.Tuple) and isinstance(stmt.value, ast.Tuple) \
                    and len(targets[0].elts) == len(stmt.value.elts):
                # `tokens, labels = torch.cat(outs), torch.cat(golds)`: each name its own value
                pairs = [([t], v) for t, v in zip(targets[0].elts, stmt.value.elts)]
            for targets, value in pairs:
                if value is None:
                    continue
                found = self.origin(value)
                for target in targets:
                    if not isinstance(target, ast.Name):
                        continue
                    if isinstance(stmt, ast.AugAssign):
                        if found:
                            self.sized[target.id] = found
                        continue
                    if found:
                        self.sized[target.id] = found
                    else:
                        self.sized.pop(target.id, None)
                        self.filled.pop(target.id, None)
                    if isinstance(value, (ast.Compare, ast.BoolOp)) or (
                            isinstance(value, ast.Call) and _name(value.func) in ("bool", "isin", "eq", "gt",
                                                                                  "lt", "ge", "le", "ne")):
                        self.masks.add(target.id)
                    else:
                        self.masks.discard(target.id)
        if isinstance(stmt, ast.If) and loop_depth and not conditional:
            # `if a: out.append(x)` / `else: out.append(y)`: one append per pass, a fixed length
            self.every_pass.update(_once_each(stmt, _appends(stmt.body) & _appends(stmt.orelse)))
        for field_name in ("body", "orelse", "finalbody", "handlers"):
            children = getattr(stmt, field_name, None)
            if not isinstance(children, list):
                continue
            in_loop = loop_depth + isinstance(stmt, (ast.For, ast.AsyncFor, ast.While))
            # (`if "logits" in out.keys():` asks which keys the code put there: every pass alike)
            under_if = conditional or (isinstance(stmt, ast.If) and not key_presence(stmt.test)
                                       and not _counter_test(stmt.test, self.counters))
            if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
                under_if = False  # a condition counts inside the loop it filters
            outer_structure, outer_counters = self.in_structure, self.counters
            if isinstance(stmt, (ast.For, ast.AsyncFor)) and field_name == "body":
                self.in_structure = _module_structure(stmt.iter) or _parameter_filter(stmt)
                if isinstance(stmt.target, ast.Name) and isinstance(stmt.iter, ast.Call) and _name(stmt.iter.func) == "range":
                    self.counters = self.counters | {stmt.target.id}
            for child in children:
                if isinstance(child, ast.ExceptHandler):
                    for inner in child.body:
                        self.statement(inner, in_loop, under_if)
                else:
                    self.statement(child, in_loop, under_if)
            self.in_structure, self.counters = outer_structure, outer_counters

        if loop_depth and conditional and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) \
                and id(stmt) not in self.every_pass and not self.in_structure:
            call = stmt.value
            if (isinstance(call.func, ast.Attribute) and call.func.attr in ("append", "extend")
                    and isinstance(call.func.value, ast.Name)):
                name = call.func.value.id
                self.filled.setdefault(name, (f"{name} (filled under a condition in a loop)",
                                              stmt.lineno))

    def calls(self, stmt: ast.stmt) -> None:
        """The collectives of one statement (not of its nested blocks), in order."""
        nodes = [stmt] if not hasattr(stmt, "body") else [
            getattr(stmt, name) for name in ("test", "iter", "items", "context_expr")
            if isinstance(getattr(stmt, name, None), ast.AST)]
        for root in nodes:
            for node in _walk_own(root):
                if not isinstance(node, ast.Call):
                    continue
                op = self.collective(node)
                if op is None:
                    continue
                if op in SINKS and not self.exchanged:
                    tensors = list(node.args[:2]) + [k.value for k in node.keywords
                                                      if k.arg in ("tensor", "tensor_list", "input_tensor")]
                    found = self._first(tensors)
                    if found:
                        why, line = found
                        self.found.append(DataSizedCollective(
                            f"{op}()" if "." in op else f"dist.{op}()", Location(self.file, node.lineno), why,
                            Location(self.file, line), self.label))
                if self.is_exchange(op, node):
                    self.exchanged = True


def _collective(call: ast.Call, dist_names: set[str], imported: set[str]) -> Optional[str]:
    """The torch.distributed call this is, when it is one this rule reads (a sink or an
    exchange): `dist.all_reduce(...)`, `all_gather(...)` imported bare. The receiver is
    unparsed only for those names (unparsing every `x.m()` was most of this rule's time)."""
    func = call.func
    if isinstance(func, ast.Attribute):
        if func.attr in ACCELERATE_READ and _ACCELERATOR.search(_text(func.value)):
            return ACCELERATE_READ[func.attr]
        return func.attr if func.attr in _READ and _text(func.value) in dist_names else None
    if isinstance(func, ast.Name) and func.id in imported:
        return func.id
    return None


def _module_structure(node: ast.AST) -> bool:
    """`model.parameters()`, `named_buffers()`, `state_dict().items()`, `zip(...)` or
    `enumerate(...)` of them: the loop walks the model, which is the same on every rank, so
    what it keeps (`if p.grad is not None: grads.append(p.grad)`) has the model's size, not the
    data's."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Name) and func.id in ("zip", "enumerate", "list", "reversed"):
        return bool(node.args) and all(_module_structure(a) for a in node.args[:1 if func.id != "zip" else None])
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr in MODULE_STRUCTURE:
        return True
    return func.attr in ("items", "values", "keys") and isinstance(func.value, ast.Call) \
        and isinstance(func.value.func, ast.Attribute) and func.value.func.attr == "state_dict"


def _parameter_filter(loop: ast.AST) -> bool:
    """`for p in params: if p.requires_grad: flat.append(p.grad)`: every test in the loop reads
    only a parameter's own properties (`requires_grad`, `grad is not None`) of the loop's item,
    the same on every rank whatever list of parameters was handed in."""
    items = {n.id for n in walk(loop.target) if isinstance(n, ast.Name)}
    tests = [n.test for stmt in loop.body for n in walk(stmt) if isinstance(n, ast.If)]
    if not tests or not items:
        return False
    for test in tests:
        reads = [n for n in walk(test) if isinstance(n, ast.Attribute)]
        if not reads or not all(n.attr in ("requires_grad", "grad") and isinstance(n.value, ast.Name)
                                and n.value.id in items for n in reads):
            return False
        if any(isinstance(n, ast.Name) and n.id not in items and n.id != "None" for n in walk(test)):
            return False
    return True


def _parameter_comprehension(generator: ast.comprehension) -> bool:
    """`for p in model.parameters() if p.grad is not None`: a filter on a parameter's own
    properties over the model's structure keeps the model's size, not the data's."""
    return _module_structure(generator.iter) and _parameter_filter(
        ast.For(target=generator.target, iter=generator.iter, body=[ast.If(test=t, body=[], orelse=[])
                                                                    for t in generator.ifs], orelse=[]))


def _append_name(stmt: ast.stmt) -> Optional[str]:
    """`out` for the statement `out.append(...)`, or `out.extend(...)` (a batch's rows: the two
    sides of `if two_branch: preds.extend(out[0]) else: preds.extend(out)` grow it alike, as an
    unconditional extend in the loop would)."""
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        func = stmt.value.func
        if isinstance(func, ast.Attribute) and func.attr in ("append", "extend") and isinstance(func.value, ast.Name):
            return func.value.id
    return None


def _appends(branch: list[ast.stmt]) -> set[str]:
    """The lists a branch appends to exactly once on every way through it (an `elif` chain too);
    `name@flag` for one append under a plain flag (`if collect: out.append(x)`), which two
    sides that both say so append alike (OLMo's metrics: a real value or a placeholder)."""
    names = [_append_name(s) for s in branch]
    names += [flagged for s in branch for flagged in _flagged_appends(s)]
    once = {n for n in names if n and names.count(n) == 1}
    for stmt in branch:
        if isinstance(stmt, ast.If) and stmt.orelse:
            once |= _appends(stmt.body) & _appends(stmt.orelse)
    return once


def _flagged_appends(stmt: ast.stmt) -> set[str]:
    """`out@collect` for each list `if collect: ... out.append(...) ...` appends to once: a
    flag (a name or an attribute, not a comparison on the item) around the appends."""
    if isinstance(stmt, ast.If) and not stmt.orelse and isinstance(stmt.test, (ast.Name, ast.Attribute)):
        return {f"{name}@{ast.dump(stmt.test)}" for name in _appends(stmt.body) if "@" not in name}
    return set()


def _once_each(stmt: ast.If, names: set[str]) -> Iterator[int]:
    """The ids of the append statements that together run once per pass for names."""
    for side in (stmt.body, stmt.orelse):
        for inner in side:
            if _append_name(inner) in names:
                yield id(inner)
            elif _flagged_appends(inner) & names:
                flagged = {n.partition("@")[0] for n in _flagged_appends(inner) & names}
                yield from (id(s) for s in inner.body if _append_name(s) in flagged)
            elif isinstance(inner, ast.If) and inner.orelse:
                yield from _once_each(inner, names & _appends(inner.body) & _appends(inner.orelse))


def _walk_own(root: ast.AST) -> Iterator[ast.AST]:
    """The nodes under `root` in source order, not entering nested functions or lambdas."""
    stack = [root]
    nested = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, nested) and node is not root:
            continue
        stack.extend(reversed(children(node)))


def _dist_names(imports: list[ast.AST]) -> tuple[set[str], set[str]]:
    """How the file names torch.distributed, and the collectives it imports bare."""
    names, bare = {"torch.distributed"}, set()
    for node in imports:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "torch.distributed":
                    names.add(alias.asname or alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.module == "torch" and any(a.name == "distributed" for a in node.names):
                names.update(a.asname or a.name for a in node.names if a.name == "distributed")
            elif node.module in ("torch.distributed", "torch.distributed.distributed_c10d"):
                bare.update(a.asname or a.name for a in node.names
                            if a.name in SINKS | EXCHANGES)
    return names, bare


def file_collectives(source) -> tuple[set[str], set[str], bool]:
    """(_dist_names of the file's imports, whether some call of the file is a collective this
    rule reads): kept on the file, since data_keys asks the same of every file (a scan of every
    call of the package each)."""
    kept = source.__dict__.get("_file_collectives")
    if kept is None:
        dist_names, bare = _dist_names(source.imports)
        calls = any(_collective(n, dist_names, bare) for n in source.of(ast.Call))
        kept = source.__dict__["_file_collectives"] = (dist_names, bare, calls)
    return kept


def gather(files: list, reachable: Optional[set] = None) -> list[DataSizedCollective]:
    """Every data-sized collective in the files (lint/sources.SourceFile: .nodes, .imports,
    .tree, .display); `reachable`: the ids of the function nodes the entry script can run (the
    other rules judge only those too), None for every function. A file that calls no collective
    this rule reads is not walked statement by statement (most files of a package)."""
    found: list[DataSizedCollective] = []
    for source in files:
        dist_names, bare, calls = file_collectives(source)
        if not calls:
            continue
        scopes = [("<module>", source.tree.body)]
        scopes += [(node.name, node.body) for node in source.of(ast.FunctionDef, ast.AsyncFunctionDef)
                   if reachable is None or id(node) in reachable]
        for label, body in scopes:
            found.extend(_Scope(source.display, label, body, dist_names, bare).run())
    return found


def _counter_test(test: ast.AST, counters: set[str]) -> bool:
    """`if ppo_epoch == cfg["epochs"] - 1:` of a `for ppo_epoch in range(...)` around: a test of
    a loop's own count against settings, the same on every rank (an append under it fills the
    list alike everywhere). Only counters, constants and settings read by attribute or key
    (no call, no other name): a bound that comes from the data is no setting."""
    if not isinstance(test, ast.Compare):
        return False
    parts = [test.left, *test.comparators]
    if not any(isinstance(p, ast.Name) and p.id in counters for p in parts):
        return False
    roots = set()
    for node in walk(test):
        if isinstance(node, (ast.Call, ast.Lambda, ast.ListComp, ast.GeneratorExp)):
            return False
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            root = node
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            if isinstance(root, ast.Name):
                roots.add(id(root))
    return all(node.id in counters or id(node) in roots for node in walk(test) if isinstance(node, ast.Name))
