"""The files a lint reads: the script, and the local modules it imports (transitively).

A module is local when its source lies next to the script (or under the working directory,
where `python -m` and torchrun put it on sys.path) and not inside an installed package: the
user's own `model.py`, `utils/dist.py`, never torch's. Nothing is imported or executed.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from ddpdoctor.core.errors import UsageError
from ddpdoctor.core.files import open_regular
from ddpdoctor.core.paths import display_path
from ddpdoctor.lint.nodes import walk

MAX_FILES = 200  # a "script" importing more local files than this is a package, not a script
MAX_BYTES = 4_000_000  # per file


@dataclass
class SourceFile:
    """One parsed file."""

    path: Path  # absolute
    display: str  # as the user reads it: relative to the working directory when beneath it
    module: str  # dotted name it is imported by ("" for the script itself)
    tree: ast.Module
    lines: list[str] = field(default_factory=list)
    _nodes: Optional[list] = field(default=None, repr=False)
    # the script's dotted name from the working directory (`python -m pkg.train`), for its
    # relative imports; "" when it lies outside
    import_name: str = ""

    @property
    def nodes(self) -> list[ast.AST]:
        """Every node of the file, walked once (several passes read them)."""
        if self._nodes is None:
            self._nodes = walk(self.tree)
        return self._nodes

    def of(self, *kinds: type) -> list[ast.AST]:
        """The nodes of these exact classes, in the order of `nodes`: several rules look for one
        kind of node (the calls, the assignments) in every file, and a scan of every node per
        rule cost a 200-file package most of a second; the nodes are sorted by class once."""
        by_kind = self.__dict__.get("_by_kind")
        if by_kind is None:
            by_kind = self.__dict__["_by_kind"] = {}
            for node in self.nodes:
                found = by_kind.get(node.__class__)
                if found is None:
                    by_kind[node.__class__] = [node]
                else:
                    found.append(node)
        if len(kinds) == 1:
            return by_kind.get(kinds[0], [])
        present = [k for k in kinds if by_kind.get(k)]
        if len(present) <= 1:
            return by_kind.get(present[0], []) if present else []
        return [n for n in self.nodes if n.__class__ in present]  # several kinds: in walk order

    @property
    def imports(self) -> list[ast.AST]:
        """The import statements, in the order of `nodes` (read by two passes)."""
        found = self.__dict__.get("_imports")
        if found is None:
            found = self.__dict__["_imports"] = self.of(ast.Import, ast.ImportFrom)
        return found

    @property
    def statements(self) -> int:
        self.of(ast.Module)
        return sum(len(nodes) for kind, nodes in self.__dict__["_by_kind"].items() if issubclass(kind, ast.stmt))


def read_source(path: Path) -> bytes:
    """A source file's bytes, at most MAX_BYTES; a device, a FIFO or a directory is refused
    before anything is read (/dev/zero would be read forever, a FIFO would block)."""
    with open_regular(path, display_path(path), "lint reads Python source files") as handle:
        try:
            data = handle.read(MAX_BYTES + 1)
        except OSError as exc:
            raise UsageError(f"cannot read {display_path(path)}: {exc.strerror or exc}") from None
    if len(data) > MAX_BYTES:
        raise UsageError(f"{display_path(path)} is over {MAX_BYTES} bytes: too large for a training script")
    return data


def _parse(path: Path, module: str, texts: Optional[dict[Path, str]] = None) -> SourceFile:
    if texts is not None and path in texts:  # an edit not yet written (lint --fix proving it)
        data = texts[path].encode("utf-8")
    else:
        data = read_source(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    try:
        tree = ast.parse(text, filename=str(path))
    except SyntaxError as exc:
        raise UsageError(f"{display_path(path)}:{exc.lineno or '?'}: not valid Python: {exc.msg}") from None
    except ValueError as exc:  # null bytes
        raise UsageError(f"{display_path(path)}: not valid Python: {exc}") from None
    except (RecursionError, MemoryError):
        raise UsageError(f"{display_path(path)}: nested too deeply to parse (an expression or block "
                         "deeper than the interpreter's limits)") from None
    return SourceFile(path, display_path(path), module, tree, text.splitlines())


def _candidates(name: str, roots: list[Path]) -> Optional[Path]:
    parts = name.split(".")
    for root in roots:
        base = root.joinpath(*parts)
        for path in (base.with_suffix(".py"), base / "__init__.py"):
            if path.is_file():
                return path
    return None


def _imported_names(nodes: list[ast.AST], module: str, is_package: bool) -> list[tuple[str, ast.AST]]:
    """Every dotted module name the file may import (relative imports resolved), including the
    submodules named in `from pkg import sub`, each with the import statement."""
    names = []
    package = module if is_package else module.rpartition(".")[0]
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                names.extend((".".join(parts[:i]), node) for i in range(1, len(parts) + 1))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".") if package else []
                keep = len(anchor) - (node.level - 1)
                if keep < 0:
                    continue
                base = ".".join(anchor[:keep] + ([base] if base else []))
            if base:
                names.append((base, node))
            names.extend((f"{base}.{a.name}" if base else a.name, node) for a in node.names if a.name != "*")
    return names


def load_program(script: str, notes: Optional[list[str]] = None,
                 texts: Optional[dict[Path, str]] = None) -> list[SourceFile]:
    """Parse the script and the local modules it imports. Bad input (no such file, not Python)
    raises UsageError for the script itself; an imported module that cannot be read or parsed is
    left out with a note (the script may import it only under a flag, and runs fine without).
    `texts`: the text of some files (absolute paths) in place of what is on disk."""
    path = Path(script)
    if not path.exists():
        raise UsageError(f"no such file: {script}")
    if path.is_dir():
        main = path / "__main__.py"
        if not main.is_file():
            raise UsageError(f"{script} is a directory without __main__.py")
        path = main
    path = path.resolve()
    # Where `python train.py` and `python -m pkg.train` look for `import model`.
    roots = list(dict.fromkeys([path.parent, Path.cwd().resolve()]))
    files = [_parse(path, "", texts)]
    seen = {path}
    queue = [files[0]]
    while queue and len(files) < MAX_FILES:
        current = queue.pop(0)
        is_package = current.path.name == "__init__.py"
        module = current.module
        if not module:  # the script: relative imports resolve against its package, if any
            try:
                rel = current.path.relative_to(Path.cwd().resolve()).with_suffix("")
                module = ".".join(rel.parts)
                current.import_name = module
            except ValueError:
                module = current.path.stem
        for name, where in _imported_names(current.imports, module, is_package):
            found = _candidates(name, roots)
            if found is None or found in seen or "site-packages" in found.parts:
                continue
            seen.add(found)
            try:
                parsed = _parse(found, name, texts)
            except UsageError as exc:
                if notes is not None:
                    notes.append(_not_read(exc, current, where))
                continue
            files.append(parsed)
            queue.append(parsed)
    return files


def _not_read(exc: UsageError, importer: SourceFile, where: ast.AST) -> str:
    """"models/x.py:15: not valid Python: ...; imported at train.py:12 only when `args.arch ==
    'x'`; not read"."""
    condition = ""
    for node in importer.nodes:
        if isinstance(node, (ast.If, ast.Try)):
            inside = [n for part in (node.body, getattr(node, "orelse", [])) for stmt in part for n in walk(stmt)]
            if any(n is where for n in inside):
                condition = (f" only when `{ast.unparse(node.test)}`" if isinstance(node, ast.If)
                             else " inside a try")
    return f"{exc}; imported at {importer.display}:{getattr(where, 'lineno', '?')}{condition}; not read"
