"""The folders a script puts on sys.path before importing its own modules.

Research code kept in a `scripts/` or `tools/` folder often reaches the repository's packages with
`sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))` (or `insert(0, ...)`,
through a name: `root = os.path.split(cur)[0]`). Python then finds `import core.models` there, so the
lint reads those modules too. Only what can be worked out from the script's own location is
followed: `__file__`, the os.path and pathlib calls on it, `".."` joins and string constants
(relative to the working directory); an environment variable's root joined with a folder
(`os.environ["E2EASR"] + "/src"`) is read as that folder of the project being linted, where it
exists; anything else is not a folder.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import Optional

from ddpdoctor.lint.nodes import walk
from ddpdoctor.lint.patterns import dotted

_PATH_OPS = {"dirname", "abspath", "realpath", "normpath", "join", "expanduser"}


def added_roots(tree: ast.Module, script: Path, cwd: Path) -> list[Path]:
    """The existing folders the script (its top level, or any function of it) appends or inserts
    into sys.path."""
    if not any(_is_sys_path(node) for node in walk(tree)):
        return []  # (every way of adding a folder names sys.path: most modules never do)
    values: dict[str, str] = {}
    found: list[Path] = []
    adders = _path_adders(tree)
    _added(list(_top(tree.body)), values, adders, script, cwd, found, tree)
    # and in the script's functions and methods, each in its own order (SMPLer-X's config
    # method: `self.root = dirname(abspath(__file__))`, then `sys.path.insert(0, join(self.root,
    # "common"))`), with what the top level bound
    for fn in walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inside = sorted((s for s in walk(fn) if isinstance(s, ast.stmt) and s is not fn),
                            key=lambda s: (s.lineno, s.col_offset))  # in source order
            _added(inside, dict(values), adders, script, cwd, found, tree)
    return list(dict.fromkeys(found))


def _added(stmts: list, values: dict, adders: dict, script: Path, cwd: Path, found: list,
           tree: ast.Module) -> None:
    """The folders these statements put on sys.path, in order; `values`: the path-valued names
    (and `self.` attributes) bound so far."""
    for stmt in stmts:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], (ast.Name, ast.Attribute)):
            key = _key(stmt.targets[0])
            if key is None:
                continue
            value = _value(stmt.value, values, script, cwd)
            if value is not None:
                values[key] = value
            else:
                values.pop(key, None)
            continue
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in adders:
            slot = adders[call.func.id]  # `add_path(lib_path)`: a helper of this module adds its argument
            added = [call.args[slot]] if slot < len(call.args) else []
        elif isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and \
                call.func.attr in ("append", "insert") and _is_sys_path(call.func.value) and call.args:
            added = [call.args[-1]]
        elif isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "extend" \
                and _is_sys_path(call.func.value) and call.args and isinstance(call.args[0], (ast.List, ast.Tuple)):
            added = list(call.args[0].elts)  # `sys.path.extend(["../", "../lib"])`
        elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, ast.Add) and _is_sys_path(stmt.target) \
                and isinstance(stmt.value, (ast.List, ast.Tuple)):
            added = list(stmt.value.elts)  # `sys.path += ["../"]` (COCO-DR's drivers)
        else:
            continue
        for each in added:
            value = _value(each, values, script, cwd)
            if value is None:
                value = _under_project_root(each, script, cwd)
            if value is not None and not os.path.isdir(value) and isinstance(each, ast.Constant) \
                    and isinstance(each.value, str):
                # (a path spelt whole in the source, not one built here: `/home/me/proj`,
                # `../../MyGazeProject`, the author's own checkout's place, or a folder of it:
                # `/home/me/byol-pytorch/utils`, the checkout's `utils/` here)
                value = _folder_of_checkout(each.value, tree, script, cwd) or _checkout_of(tree, script)
            if value is not None and os.path.isdir(value) and not _installed(value):
                found.append(Path(os.path.normpath(value)))


def _under_project_root(node: ast.AST, script: Path, cwd: Path) -> Optional[str]:
    """`os.environ["E2EASR"] + "/src"` (or `os.path.join(os.getenv("ROOT"), "src")`): a folder
    of a root the environment names, which such projects set to their own checkout (`export
    E2EASR=$PWD`): that folder under the working directory, or under one of the few folders
    above the script, where one exists; None otherwise."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        root, rest = node.left, node.right
    elif isinstance(node, ast.Call) and (dotted(node.func) or "").endswith("path.join") and len(node.args) == 2:
        root, rest = node.args
    else:
        return None
    if not (_env_read(root) and isinstance(rest, ast.Constant) and isinstance(rest.value, str)):
        return None
    sub = rest.value.strip("/")
    if not sub or ".." in sub.split("/"):
        return None
    bases = [cwd] + list(script.parents)[:4]  # (the root is the checkout: the script sits in it)
    return next((str(b / sub) for b in bases if (b / sub).is_dir()), None)


def _folder_of_checkout(spelt: str, tree: ast.Module, script: Path, cwd: Path) -> Optional[str]:
    """`sys.path.append("/home/me/byol-pytorch/utils")` where this checkout holds `utils/` (in the
    working directory or a few folders above the script): the author's folder, here, when it
    holds a module the script imports (`from dataloader_v2 import ...`). Its last one or two
    parts are matched, nearest first; None where no such folder holds one."""
    parts = [p for p in Path(spelt).parts if p not in ("/", "", ".", "..")]
    wanted = imported_heads(tree)
    for tail in (parts[-2:], parts[-1:]):
        if not tail or (len(tail) == 2 and len(parts) < 2):
            continue
        for base in [cwd, *list(script.parents)[:4]]:
            folder = base.joinpath(*tail)
            if folder.is_dir() and any((folder / f"{h}.py").is_file() or (folder / h / "__init__.py").is_file()
                                       for h in wanted):
                return str(folder)
    return None


def imported_heads(tree: ast.Module) -> set[str]:
    """The first part of every absolute import the module makes."""
    heads = {a.name.split(".")[0] for node in walk(tree) if isinstance(node, ast.Import) for a in node.names}
    return heads | {node.module.split(".")[0] for node in walk(tree)
                    if isinstance(node, ast.ImportFrom) and node.module and not node.level}


def _checkout_of(tree: ast.Module, script: Path) -> Optional[str]:
    """`sys.path.append('/home/me/projects/gazex')` (or `'../../MyGazeProject'`): a folder of the
    author's machine that is not here. Such a path names the author's checkout, which the script
    sits in: the nearest of the few folders above the script that holds the packages the script
    (its tree, already read) imports from it (a folder of its own `import utils.io` finds), or None."""
    heads = imported_heads(tree)
    # (the names the script's own folder does not hold: those the author's root provides)
    wanted = {h for h in heads if not (script.parent / h).exists() and not (script.parent / f"{h}.py").exists()}
    for folder in list(script.parents)[1:4]:
        if any((folder / h / "__init__.py").is_file() or (folder / f"{h}.py").is_file()
               or _holds_python(folder / h) for h in wanted):
            return str(folder)
    return None


def _holds_python(folder: Path, most: int = 400) -> bool:
    """A `.py` file among the first `most` entries of the folder (a namespace package's); a
    folder of a million samples is not listed past that."""
    try:
        with os.scandir(folder) as entries:
            for count, entry in enumerate(entries):
                if count >= most:
                    return False
                if entry.name.endswith(".py"):
                    return True
    except OSError:
        return False
    return False


def _env_read(node: ast.AST) -> bool:
    """`os.environ["X"]`, `os.environ.get("X")`, `os.getenv("X")`."""
    if isinstance(node, ast.Subscript):
        return (dotted(node.value) or "").endswith("environ")
    return isinstance(node, ast.Call) and (dotted(node.func) or "").endswith(("environ.get", "getenv"))


def _key(target: ast.AST) -> Optional[str]:
    """A name, or `self.<attr>`: the bindings a path is followed through."""
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
        return f"self.{target.attr}"
    return None


def _path_adders(tree: ast.Module) -> dict[str, int]:
    """The module's own functions that put a parameter on sys.path (`def add_path(path):
    sys.path.insert(0, path)`, the `_init_paths.py` idiom): name -> that parameter's position."""
    adders = {}
    for stmt in tree.body:
        if not isinstance(stmt, ast.FunctionDef):
            continue
        params = [a.arg for a in stmt.args.args]
        for node in walk(stmt):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr in ("append", "insert") and _is_sys_path(node.func.value) and node.args and \
                    isinstance(node.args[-1], ast.Name) and node.args[-1].id in params:
                adders[stmt.name] = params.index(node.args[-1].id)
    return adders


def _installed(folder: str) -> bool:
    """The filesystem root or an installed-packages folder: not the script's own modules (reading
    every library there as local code would judge other people's code and take seconds)."""
    parts = Path(os.path.normpath(folder)).parts
    return len(parts) <= 1 or "site-packages" in parts or "dist-packages" in parts


def _top(body: list[ast.stmt]):
    """The module's statements, and those of a top-level `if`/`try` (`if root not in sys.path:`)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If):
            yield from _top(stmt.body)
        elif isinstance(stmt, ast.Try):
            yield from _top(stmt.body)


def _is_sys_path(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "path" and \
        isinstance(node.value, ast.Name) and node.value.id == "sys"


def path_value(node: ast.AST, script: Path, cwd: Path) -> Optional[str]:
    """The absolute path an expression spells from the script's own location (`str(Path(__file__)
    .parent.joinpath("pkg", "config"))`, `os.path.join(os.path.dirname(__file__), "conf")`), or
    None: what a decorator's argument names (a Hydra `config_path`)."""
    return _value(node, {}, script, cwd)


def _value(node: ast.AST, values: dict[str, str], script: Path, cwd: Path) -> Optional[str]:
    """The path an expression evaluates to (absolute), or None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value if os.path.isabs(node.value) else os.path.join(str(cwd), node.value)
    if isinstance(node, ast.Name):
        return str(script) if node.id == "__file__" else values.get(node.id)
    if isinstance(node, ast.Attribute) and node.attr in ("pardir", "curdir") and \
            dotted(node.value) in ("os", "path", "os.path"):  # os.pardir, os.path.pardir
        return os.pardir if node.attr == "pardir" else os.curdir  # a part of a join, not a path
    if isinstance(node, ast.Attribute) and _key(node) is not None:
        return values.get(_key(node))
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Call) and \
            isinstance(node.slice, ast.Constant) and node.slice.value == 0 and \
            isinstance(node.value.func, ast.Attribute) and node.value.func.attr == "split":
        inner = _value(node.value.args[0], values, script, cwd) if node.value.args else None
        return os.path.dirname(inner) if inner is not None else None  # os.path.split(p)[0]
    if isinstance(node, ast.Attribute) and node.attr in ("parent", "parents"):
        inner = _value(node.value, values, script, cwd)
        return os.path.dirname(inner) if inner is not None and node.attr == "parent" else None
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and \
            node.value.attr == "parents" and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int):
        inner = _value(node.value.value, values, script, cwd)
        for _ in range(node.slice.value + 1):
            inner = os.path.dirname(inner) if inner is not None else None
        return inner
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):  # Path(...) / ".."
        left, right = _value(node.left, values, script, cwd), node.right
        if left is not None and isinstance(right, ast.Constant) and isinstance(right.value, str):
            return os.path.normpath(os.path.join(left, right.value))
        return None
    if not isinstance(node, ast.Call):
        return None
    name = node.func.attr if isinstance(node.func, ast.Attribute) else \
        node.func.id if isinstance(node.func, ast.Name) else ""
    if name in ("str", "Path", "PurePath", "fspath") and len(node.args) == 1:
        return _value(node.args[0], values, script, cwd)
    if name in ("resolve", "absolute") and isinstance(node.func, ast.Attribute) and not node.args:
        return _value(node.func.value, values, script, cwd)
    if name == "joinpath" and isinstance(node.func, ast.Attribute):
        # `Path(__file__).parent.joinpath("pkg", "config")`: the receiver's path, then the parts
        node = ast.Call(func=ast.Name(id="join", ctx=ast.Load()), args=[node.func.value, *node.args], keywords=[])
        name = "join"
    if name not in _PATH_OPS or not node.args:
        return None
    parts = [_value(a, values, script, cwd) if not (isinstance(a, ast.Constant) and isinstance(a.value, str))
             else a.value for a in node.args]
    if any(p is None for p in parts):
        return None
    if name == "join":
        return os.path.normpath(os.path.join(*parts))
    if name == "dirname":
        return os.path.dirname(parts[0])
    return os.path.normpath(parts[0])  # abspath/realpath/normpath/expanduser of an absolute path
