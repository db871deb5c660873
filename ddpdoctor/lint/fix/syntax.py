"""What the fixes share over one file's syntax tree: finding nodes by line, the scope a node is
in, which names are bound there, indentation, imports. Pure functions of the text and its tree."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Iterable, Optional

from ddpdoctor.lint.fix.edits import Edit, SourceText
from ddpdoctor.lint.nodes import children, walk
from ddpdoctor.lint.patterns import dotted, last_name

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
EPOCH_NAME = re.compile(r"epoch", re.IGNORECASE)


class NoFix(Exception):
    """Why a finding gets no fix: one line the user reads."""


# What a fix kind proposes: the edits of one file and a line saying what they do. A kind may
# propose several, best first (the file's own rank test, then `dist.get_rank() == 0`); the
# first one that re-lints clean is offered.
Proposal = tuple[list[Edit], str]


@dataclass
class Parsed:
    """A file's text, its tree and each node's parent."""

    display: str
    source: SourceText
    tree: ast.Module
    parents: dict[int, ast.AST] = field(default_factory=dict)

    @classmethod
    def of(cls, display: str, text: str) -> "Parsed":
        tree = ast.parse(text)
        parents: dict[int, ast.AST] = {}
        for node in walk(tree):
            for child in children(node):
                parents[id(child)] = node
        return cls(display, SourceText(text), tree, parents)

    def parent(self, node: ast.AST) -> Optional[ast.AST]:
        return self.parents.get(id(node))

    def ancestors(self, node: ast.AST) -> Iterable[ast.AST]:
        current = self.parent(node)
        while current is not None:
            yield current
            current = self.parent(current)

    def scope(self, node: ast.AST) -> ast.AST:
        """The function (or the module) whose names the node reads; a class body is skipped, as
        Python skips it for the methods' names."""
        for up in self.ancestors(node):
            if isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.Module)):
                return up
        return self.tree

    def statement(self, node: ast.AST) -> ast.stmt:
        """The statement a node belongs to (itself when it is one)."""
        current = node
        while not isinstance(current, ast.stmt):
            current = self.parent(current)
            if current is None:
                raise NoFix("the code is not inside a statement")
        return current

    def calls_on_line(self, line: int, names: set[str]) -> list[ast.Call]:
        """The calls starting on `line` whose callee's last name is one of `names`."""
        return [n for n in walk(self.tree) if isinstance(n, ast.Call) and n.lineno == line
                and last_name(n.func) in names]

    def own_nodes(self, scope: ast.AST) -> list[ast.AST]:
        """The nodes of a scope, not of the functions and classes defined in it."""
        out, stack = [], list(children(scope))
        while stack:
            node = stack.pop()
            out.append(node)
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                stack.extend(children(node))
        return out

    # ------------------------------------------------------------------ names
    def bound_in(self, scope: ast.AST, before: int) -> set[str]:
        """Names a scope binds before line `before`: parameters, assignments, loop and with
        targets, imports, definitions."""
        names: set[str] = set()
        if isinstance(scope, FUNCTIONS):
            args = scope.args
            for arg in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
                if arg is not None:
                    names.add(arg.arg)
        for node in self.own_nodes(scope):
            if getattr(node, "lineno", before) >= before:
                continue
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
        return names

    def visible(self, names: Iterable[str], at: ast.AST) -> bool:
        """Every name can be read at `at`: bound before it in its function, or at the module's
        top level (which runs before any function is called)."""
        scope = self.scope(at)
        local = self.bound_in(scope, at.lineno)
        module = self.bound_in(self.tree, 10 ** 9) if scope is not self.tree else local
        return all(n in local or n in module for n in names)

    # ------------------------------------------------------------------ imports
    def top_imports(self) -> list[ast.stmt]:
        """The import statements at the module's top level (inside a top-level try too)."""
        out = []
        for stmt in self.tree.body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                out.append(stmt)
            elif isinstance(stmt, ast.Try):
                out.extend(s for s in stmt.body if isinstance(s, (ast.Import, ast.ImportFrom)))
        return out

    def module_alias(self, module: str) -> Optional[str]:
        """How the file names `module` at its top level: "dist" for `import torch.distributed as
        dist`, "torch.distributed" for `import torch.distributed` (or plain `import torch`,
        which imports torch.distributed itself); None when it is not imported."""
        parent, _, leaf = module.rpartition(".")
        for stmt in self.top_imports():
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if alias.name == module:
                        return alias.asname or module
            elif isinstance(stmt, ast.ImportFrom) and stmt.module == parent and not stmt.level:
                for alias in stmt.names:
                    if alias.name == leaf:
                        return alias.asname or leaf
        for stmt in self.top_imports():
            if isinstance(stmt, ast.Import) and any(a.name == "torch" and not a.asname for a in stmt.names) \
                    and module.startswith("torch."):
                return module
        return None

    def imported_as(self, name: str, modules: tuple[str, ...]) -> Optional[str]:
        """The local name of `name` imported from one of `modules` at the top level."""
        for stmt in self.top_imports():
            if isinstance(stmt, ast.ImportFrom) and stmt.module in modules and not stmt.level:
                for alias in stmt.names:
                    if alias.name == name:
                        return alias.asname or name
        return None

    def add_import(self, line: str) -> Edit:
        """Insert an import line after the file's last top-level import (after the docstring
        and `from __future__` when there is none)."""
        nl = self.source.newline()
        imports = [s for s in self.tree.body if isinstance(s, (ast.Import, ast.ImportFrom))]
        if imports:
            at = self.source.line_end(imports[-1].end_lineno)
            if at == len(self.source.text) and not self.source.text.endswith(("\n", "\r")):
                return Edit(at, at, nl + line)
            return Edit(at, at, line + nl)
        after = 0
        for stmt in self.tree.body:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
                after = stmt.end_lineno
                continue
            break
        at = self.source.line_end(after) if after else 0
        return Edit(at, at, line + nl)

    # ------------------------------------------------------------------ layout
    def indent(self, stmt: ast.stmt) -> str:
        """The whitespace before a statement that starts its own line; NoFix when it shares one
        (`if x: save()`, `a(); save()`)."""
        line = self.source.line(stmt.lineno)
        start = len(line.encode("utf-8")[:stmt.col_offset].decode("utf-8", errors="ignore"))
        lead = line[:start]
        if lead.strip():
            raise NoFix(f"line {stmt.lineno} holds more than the statement (`{line.strip()[:60]}`)")
        return lead

    def indent_unit(self) -> str:
        """One level of indentation as the file writes it (its first indented block)."""
        for node in walk(self.tree):
            body = getattr(node, "body", None)
            if isinstance(node, ast.stmt) and isinstance(body, list) and body and body[0].lineno > node.lineno:
                outer = self.source.line(node.lineno)
                inner = self.source.line(body[0].lineno)
                outer_lead = outer[:len(outer) - len(outer.lstrip())]
                inner_lead = inner[:len(inner) - len(inner.lstrip())]
                if inner_lead.startswith(outer_lead) and len(inner_lead) > len(outer_lead):
                    return inner_lead[len(outer_lead):]
        return "    "

    def reindent(self, first: int, last: int, extra: str) -> list[Edit]:
        """Edits adding `extra` at the start of lines first..last, blank lines and the lines
        inside a multi-line string left alone (their text would change)."""
        inside_strings = set()
        for node in walk(self.tree):
            if isinstance(node, (ast.Constant, ast.JoinedStr)) and node.end_lineno > node.lineno and \
                    isinstance(getattr(node, "value", ""), (str, bytes, list)):
                inside_strings.update(range(node.lineno + 1, node.end_lineno + 1))
        edits = []
        for lineno in range(first, last + 1):
            if lineno in inside_strings or not self.source.line(lineno).strip():
                continue
            at = self.source.line_start(lineno)
            edits.append(Edit(at, at, extra))
        return edits


def simple_target(node: ast.AST) -> Optional[str]:
    """`x` or `self.x` (what a fix may name), else None."""
    name = dotted(node)
    return name if name and name.count(".") <= 1 else None


def names_read(node: ast.AST) -> set[str]:
    """The bare names an expression reads (`args.rank == 0` reads `args`)."""
    return {n.id for n in walk(node) if isinstance(n, ast.Name)}


def epoch_loop(parsed: Parsed, scope: ast.AST, after: int, uses: set[str]) -> ast.For:
    """The epoch loop of a scope after line `after`: a `for` over a plain name that says epoch,
    or a `for <name> in range(...)` whose body reads one of `uses` (the loader, the sampler).
    Exactly one, not nested in another: NoFix otherwise."""
    loops = [n for n in parsed.own_nodes(scope) if isinstance(n, ast.For) and n.lineno > after]
    named = [n for n in loops if isinstance(n.target, ast.Name) and EPOCH_NAME.search(n.target.id)]
    if not named:
        named = [n for n in loops if isinstance(n.target, ast.Name) and isinstance(n.iter, ast.Call)
                 and last_name(n.iter.func) == "range"
                 and uses & {x for s in n.body for x in names_read(s)}]
    outer = [n for n in named if not any(a in named for a in parsed.ancestors(n))]
    if not outer:
        raise NoFix("no epoch loop (`for epoch in ...`) found where the sampler is in scope")
    if len(outer) > 1:
        lines = ", ".join(str(n.lineno) for n in outer)
        raise NoFix(f"several loops could be the epoch loop (lines {lines}): which one is ambiguous")
    return outer[0]


def insert_line_before(parsed: Parsed, stmt: ast.stmt, code: str) -> Edit:
    """Insert `code` as a line of its own before `stmt`, with stmt's indentation."""
    lead = parsed.indent(stmt)
    at = parsed.source.line_start(stmt.lineno)
    return Edit(at, at, lead + code + parsed.source.newline())
