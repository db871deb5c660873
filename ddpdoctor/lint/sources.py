"""The files a lint reads: the script, and the local modules it imports (transitively).

A module is local when its source lies next to the script (or under the working directory,
where `python -m` and torchrun put it on sys.path) and not inside an installed package: the
user's own `model.py`, `utils/dist.py`, never torch's. Nothing is imported or executed.
A quiet module (see `quiet`) is found by a scan of its import statements and parsed only when
the program asks for a name it defines (lint/program.py): a package's model zoo is never parsed.
"""

from __future__ import annotations

import ast
import bisect
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from ddpdoctor.core.errors import UsageError
from ddpdoctor.core.files import open_regular
from ddpdoctor.core.paths import display_path
from ddpdoctor.lint import patterns
from ddpdoctor.lint.nodes import walk
from ddpdoctor.lint.config_files import (MAX_CONFIG_BYTES, config_files, config_values, lazy_call_targets, module_names, named_in_configs,
                                         yaml_beside)
from ddpdoctor.lint.syspath import added_roots, imported_heads, path_value

MAX_FILES = 200  # a "script" importing more local files than this is a package, not a script
MAX_BYTES = 4_000_000  # per file
DATA_TABLE_BYTES = 256_000  # a module larger than this, with few functions or classes, is a data table
_DEFINES = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]", re.MULTILINE)
DATA_PER_DEF = 64_000
# A smaller module is parsed when found, quiet or not: it costs little, and a module that does not
# parse is then told of in a note (one never parsed cannot be)
QUIET_MIN_CHARS = 2_000


@dataclass
class SourceFile:
    """One file: parsed, or (a quiet module, see `quiet`) found and not yet parsed: `tree` is
    None until `read(source)` parses it, and `imports` are its import statements alone."""

    path: Path  # absolute
    display: str  # as the user reads it: relative to the working directory when beneath it
    module: str  # dotted name it is imported by ("" for the script itself)
    tree: Optional[ast.Module]
    lines: list[str] = field(default_factory=list)
    _nodes: Optional[list] = field(default=None, repr=False)
    # the script's dotted name from the working directory (`python -m pkg.train`), for its
    # relative imports; "" when it lies outside
    import_name: str = ""
    text: Optional[str] = field(default=None, repr=False)  # kept until parsed (a quiet module)
    # the dotted names a Hydra config under the script's `@hydra.main(config_path=...)` asks
    # `hydra.utils.instantiate` to build (`_target_: pkg.models.Policy`); the script's only
    hydra_targets: list[str] = field(default_factory=list)
    # those targets by the config key that holds them: the config group's folder
    # (`conf/model/pixeltransformer.yaml`) or the top-level key above the `_target_` line
    # (`model:` / `  _target_: ...`), which `instantiate(cfg.model)` reads
    hydra_keyed: dict[str, list[str]] = field(default_factory=dict)
    # the dotted paths the configs beside the script name, where code loads modules by name
    # (_config_named): the classes a by-name factory may build
    config_named: list[str] = field(default_factory=list)
    # (of those, the ones some loader reads by a config key: `import_module(cfg.TRAINER.FILE)`)
    config_keyed: list[str] = field(default_factory=list)
    # the config files read beside the script (Hydra's, an Accelerate launch config): the cache
    # digests them with the sources
    hydra_configs: list[str] = field(default_factory=list)

    @property
    def defined(self) -> frozenset[str]:
        """The names a quiet module may define a function or method by (`def name`): a superset,
        read from the text without parsing it."""
        found = self.__dict__.get("_defined")
        if found is None:
            found = self.__dict__["_defined"] = frozenset(_DEF.findall(self.text or ""))
        return found

    @property
    def classes_named(self) -> frozenset[str]:
        """The names a quiet module may define a class by (`class Name`), a superset as `defined`."""
        found = self.__dict__.get("_classes_named")
        if found is None:
            found = self.__dict__["_classes_named"] = frozenset(_CLASS.findall(self.text or ""))
        return found

    @property
    def words(self) -> frozenset[str]:
        """The identifiers a quiet module's text holds (a superset of the names it uses)."""
        found = self.__dict__.get("_words")
        if found is None:
            found = self.__dict__["_words"] = frozenset(_WORD.findall(self.text or ""))
        return found

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
        # several kinds: in walk order, kept by the set of kinds (the same kinds asked in
        # another order are the same nodes: config_defaults and _assigned_names ask so)
        kept = self.__dict__.setdefault("_of_kinds", {})
        key = frozenset(present)
        found = kept.get(key)
        if found is None:
            found = kept[key] = [n for n in self.nodes if n.__class__ in key]
        return found

    @property
    def rewrites_globals(self) -> bool:
        """The module runs text or writes its globals by name (`exec(open("configurator.py").read())`,
        `globals()[key] = value`, `globals().update(...)`): any of its constants may be another
        value at run time."""
        def globals_call(node: ast.AST) -> bool:
            return node.__class__ is ast.Call and node.func.__class__ is ast.Name and node.func.id == "globals"

        # (`globals().items()` only reads them: nanoGPT's `config_keys` list)
        return any(n.func.__class__ is ast.Name and n.func.id == "exec" for n in self.of(ast.Call)) or any(
            n.func.__class__ is ast.Attribute and n.func.attr in ("update", "__setitem__", "setdefault")
            and globals_call(n.func.value) for n in self.of(ast.Call)) or any(
            t.__class__ is ast.Subscript and globals_call(t.value)
            for n in self.of(ast.Assign) for t in n.targets)

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


def _text(path: Path, texts: Optional[dict[Path, str]] = None) -> str:
    if texts is not None and path in texts:  # an edit not yet written (lint --fix proving it)
        data = texts[path].encode("utf-8")
    else:
        data = read_source(path)
    try:
        # utf-8-sig: a file that starts with a byte-order mark (StyleGAN2-ADA's) is Python to the
        # interpreter, which skips the mark; read as plain UTF-8 it would not parse
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _parse(path: Path, module: str, texts: Optional[dict[Path, str]] = None) -> SourceFile:
    text = _text(path, texts)
    return SourceFile(path, display_path(path), module, _tree(path, text), text.splitlines())


def read(source: SourceFile) -> None:
    """Parse a quiet module that resolution asks for (UsageError when it is not Python)."""
    if source.tree is None:
        text = source.text or ""
        source.tree = ast.Module(body=[], type_ignores=[]) if _data_table(text) else _tree(source.path, text)
        source.lines = source.text.splitlines() if source.text else []
        source.text = None
        source.__dict__.pop("_imports", None)  # the scanned statements give way to the tree's


# `async=` as a call's keyword argument (`[(,]` before it: never `async def`)
_ASYNC_KEYWORD = re.compile(r"([(,]\s*)async\s*=(?!=)")


def _data_table(text: str) -> bool:
    """Hundreds of kilobytes holding a function or class per 64 KB at most: a generated table (a
    pronunciation dictionary, a vocabulary, with a `load()` at its end). What its names hold is
    never what a rule reads, and parsing it costs a second a megabyte: it is read as empty, its
    names unknown values."""
    return len(text) > DATA_TABLE_BYTES and len(_DEFINES.findall(text)) * DATA_PER_DEF < len(text)


def _tree(path: Path, text: str) -> ast.Module:
    tree = _parsed(path, text)
    if _has_constant_if(text):
        _prune_constant_branches(tree)
    _prune_dead_tails(tree.body)
    return tree


# the statements after which nothing in the same block runs
_EXITS = (ast.Return, ast.Raise, ast.Continue, ast.Break)
# the statements that hold blocks of their own (their body, orelse, finalbody, handlers, cases)
_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")
_BLOCKS_OF: dict[type, tuple[str, ...]] = {}


def _prune_dead_tails(stmts: list, depth: int = 0) -> None:
    """What follows a `return` / `raise` / `continue` / `break` in its block never runs (a second
    training loop left below a function's `return`): it is dropped, as a constant `if`'s dead
    side is, so no rule judges it. Statements only, never expressions: one pass per file."""
    for index, stmt in enumerate(stmts):
        if stmt.__class__ in _EXITS:
            del stmts[index + 1:]
            break
    if depth > 100:
        return  # (deeper blocks stay as written: the parser's own limit is near)
    for stmt in stmts:
        fields = _BLOCKS_OF.get(stmt.__class__)
        if fields is None:  # (the block fields each kind of statement has, found once per kind)
            fields = _BLOCKS_OF[stmt.__class__] = tuple(name for name in _BLOCKS if name in stmt._fields)
        for name in fields:
            inner = getattr(stmt, name, None)
            if inner:
                _prune_dead_tails(inner, depth + 1)


# `if False:` / `if 0:` (a block switched off by hand), `if True:`, and their `elif`s
_CONSTANT_IF = re.compile(r"^[ \t]*(?:el)?if[ \t(]+(?:False|True|0|1|None)[ \t)]*:", re.MULTILINE)
# the same test from its `if` on: a literal first, which the regex engine scans for fast (the
# pattern above tried every line's start of every file: a tenth of the parse's time)
_CONSTANT_IF_TAIL = re.compile(r"if[ \t(]+(?:False|True|0|1|None)[ \t)]*:")


def _has_constant_if(text: str) -> bool:
    """_CONSTANT_IF.search(text): some line is such a test, with only spaces, tabs and an `el`
    before its `if` (no `if` can start inside another match, so none is skipped)."""
    for found in _CONSTANT_IF_TAIL.finditer(text):
        head = text[text.rfind("\n", 0, found.start()) + 1:found.start()]
        if head.endswith("el"):
            head = head[:-2]
        if not head.strip(" \t"):
            return True
    return False


def _prune_constant_branches(tree: ast.AST) -> None:
    """An `if` on a constant runs one side, always: the other is dead code, and a rule that reads
    it (a dataset built only under `if False:`, its loader, its random draws) judges what never
    runs. The side that runs takes the `if`'s place (its lines unchanged)."""
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            stmts = getattr(node, name, None)
            if isinstance(stmts, list) and any(_constant_if(s) for s in stmts):
                kept = _live(stmts)
                setattr(node, name, kept or [ast.copy_location(ast.Pass(), stmts[0])])


def _constant_if(stmt: ast.AST) -> bool:
    return isinstance(stmt, ast.If) and isinstance(stmt.test, ast.Constant)


def _live(stmts: list, depth: int = 0) -> list:
    """The statements with each constant `if` replaced by the side that runs."""
    out: list = []
    for stmt in stmts:
        if _constant_if(stmt) and depth < 20:
            out.extend(_live(stmt.body if stmt.test.value else stmt.orelse, depth + 1))
        else:
            out.append(stmt)
    return out


def _parsed(path: Path, text: str) -> ast.Module:
    try:
        return ast.parse(text, filename=str(path))
    except SyntaxError as exc:
        text, renamed = _ASYNC_KEYWORD.subn(r"\1async_=", text)
        if renamed:
            # `x.cuda(async=True)`: the keyword argument of Python <= 3.6 (since `non_blocking`),
            # a reserved word now; read as the same argument under a name Python accepts
            try:
                return ast.parse(text, filename=str(path))
            except SyntaxError as again:
                exc = again
            except (ValueError, RecursionError, MemoryError):
                pass
        tree, exc = _without_newer_fstrings(path, text, exc)
        if tree is not None:
            return tree
        where = f":{exc.lineno}" if exc.lineno else ""  # (null bytes: Python names no line)
        raise UsageError(f"{display_path(path)}{where}: not valid Python: {exc.msg}") from None
    except ValueError as exc:  # null bytes
        raise UsageError(f"{display_path(path)}: not valid Python: {exc}") from None
    except (RecursionError, MemoryError):
        raise UsageError(f"{display_path(path)}: nested too deeply to parse (an expression or block "
                         "deeper than the interpreter's limits)") from None


def _without_newer_fstrings(path: Path, text: str, exc: SyntaxError) -> tuple[Optional[ast.Module], SyntaxError]:
    """Python 3.12 lets an f-string reuse its own quotes inside (`f"{cfg["lr"]}"`, PEP 701); an
    older interpreter running the lint cannot parse that line. Each such line is read with the
    f-string's inner quotes swapped for the other kind (the same string, `_requoted`), or, where
    that does not parse, as `pass`, and the tree records those (`skipped_lines`: the load notes
    say so): what an f-string formats is never what a rule reads.
    (None, the error to report) where the file is not valid Python for another reason: the
    first error past the f-strings, not an f-string a newer Python reads."""
    if sys.version_info >= (3, 12) or not (exc.msg or "").startswith("f-string"):
        return None, exc
    lines = text.split("\n")
    skipped: list[int] = []  # read as `pass`, which the load notes say
    handled: set[int] = set()
    for _ in range(64):
        line = exc.lineno or 0
        if not (exc.msg or "").startswith("f-string") or not 0 < line <= len(lines):
            return None, exc
        original = lines[line - 1]
        if line in handled:
            if original.strip() == "pass":
                return None, exc
            # the requoted line still fails: read it as `pass`
            lines[line - 1] = original[:len(original) - len(original.lstrip())] + "pass"
            skipped.append(line)
        else:
            handled.add(line)
            # the f-string's inner quotes swapped for the other kind keeps the line (and the call it
            # sits in, `wandb.init(name=f"{hp["model"]}",` over two lines) whole; else it is `pass`
            requoted = _requoted(original)
            lines[line - 1] = requoted if requoted != original else \
                original[:len(original) - len(original.lstrip())] + "pass"
            if requoted == original:
                skipped.append(line)
        try:
            tree = ast.parse("\n".join(lines), filename=str(path))
        except SyntaxError as again:
            exc = again
            continue
        except (ValueError, RecursionError, MemoryError):
            return None, exc
        tree.skipped_lines = skipped  # type: ignore[attr-defined]
        return tree, exc
    return None, exc


def _requoted(line: str) -> str:
    """The line with each single-quoted f-string's own quotes inside its braces swapped for the
    other kind (`f"{cfg["lr"]}"` -> `f"{cfg['lr']}"`), which Python before 3.12 reads; the line
    as it was where it holds a triple-quoted string or a quote of both kinds inside braces."""
    if '"""' in line or "'''" in line:
        return line
    out, i, n = [], 0, len(line)
    while i < n:
        ch = line[i]
        prefix = line[max(0, i - 2):i].lower()
        if ch in "\"'" and (prefix.endswith("f") or prefix in ("fr", "rf")):
            quote, other, depth = ch, "'" if ch == '"' else '"', 0
            out.append(ch)
            i += 1
            while i < n:
                c = line[i]
                if c == "\\" and depth == 0 and i + 1 < n:
                    out.append(line[i:i + 2])
                    i += 2
                    continue
                if c == "{":
                    depth = depth + 1 if not (depth == 0 and line[i + 1:i + 2] == "{") else depth
                    if depth == 0:  # `{{`: a literal brace
                        out.append("{{")
                        i += 2
                        continue
                elif c == "}" and depth > 0:
                    depth -= 1
                elif c == quote and depth == 0:
                    break
                elif c == quote:
                    c = other
                elif c == other and depth > 0:
                    return line  # both kinds inside: not ours to rewrite
                out.append(c)
                i += 1
            if i < n:
                out.append(line[i])
                i += 1
            continue
        if ch in "\"'":  # a plain string: copied through to its end
            end = i + 1
            while end < n and line[end] != ch:
                end += 2 if line[end] == "\\" else 1
            out.append(line[i:end + 1])
            i = end + 1
            continue
        out.append(ch)
        i += 1
    return "".join(out)


# A module is quiet when its text holds none of the words that a pass over every file or every
# function (reached or not) looks for: collectives and the process group (torch.distributed,
# Accelerate, Fabric, Lightning, DeepSpeed/FSDP words), a rank or world size (in a name, an
# environment variable, an attribute set anywhere), spawn targets, seeds (workers' seeding is
# looked up by name in every file), no_sync and accumulation, an `epoch` loop. Such a module is
# parsed only when resolution asks for a name it defines (program.py), and is then read whole
# like any other: what the walk of a reached function finds there (a save, a DataLoader, a
# backward, a break) needs no word here. Unread stay what a quiet module adds on its own: its top
# level (run at import), the arguments its functions pass, the attributes they set; a model
# zoo's hundred model files are never parsed. A crude superset (substrings of the lowered text).
_LOUD_WORDS = tuple(sorted({
    "dist.", "distributed", "ddp", "fsdp", "deepspeed", "accelerat", "fabric", "lightning", "torch_xla",
    "rank", "world_size", "procid", "localid", "main_process", "local_process", "process_index",
    "master_proc", "is_master", "spawn", "start_processes", "seed", "epoch", "no_sync",
    "require_backward_grad_sync", "accumulat", *(w.lower() for w in patterns.RANK_ONLY_DECORATORS)}))
_DEF = re.compile(r"def[ \t]+(\w+)")  # a literal first: searched fast (`undef x` too: a superset)
_CLASS = re.compile(r"class[ \t]+(\w+)")  # the same for classes (`subclass x` too)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FROM = re.compile(r"[ \t]*from[ \t]+[\w.]+[ \t]+$")


def _positions(text: str, word: str) -> list[int]:
    found, at = [], text.find(word)
    while at >= 0:
        found.append(at)
        at = text.find(word, at + len(word))
    return found


# the loud words as one pattern: a quiet module's text is read once, not once per word
_LOUD = re.compile("|".join(re.escape(word) for word in _LOUD_WORDS))


def quiet(text: str) -> bool:
    return _LOUD.search(text.lower()) is None


def scan_imports(text: str) -> Optional[list[ast.AST]]:
    """A file's import statements without parsing the whole file: the lines that start an import
    (with their parenthesised or backslashed continuations) are parsed, without the rest, at the
    lines and columns the whole file's parse gives them. None when unsure (an
    import after `:` or `;`, a line inside a triple-quoted string, one that does not parse): the
    caller then parses the file."""
    quotes = sorted(_positions(text, '"""') + _positions(text, "'''"))
    found: list[ast.AST] = []
    parts: list[str] = []
    pieces: list[tuple[int, int, int]] = []  # (its first line in the parts joined, in the file - 1, indent)
    line, counted, joined = 0, 0, 1
    for at in _positions(text, "import"):
        if (at and (text[at - 1].isalnum() or text[at - 1] in "_.")) or text[at + 6:at + 7] not in (" ", "\t", "\\", "("):
            continue  # `importlib`, `reimport`, `x.import_`: not the keyword
        start = text.rfind("\n", 0, at) + 1
        before = text[start:at]
        if before.strip() and not _FROM.match(before):
            if "#" in before and ";" not in before:
                continue  # a comment
            if ":" in before or ";" in before:
                return None  # `try: import x`, or text that only looks so: unsure
            continue  # a comment or a string that says "import"
        if bisect.bisect(quotes, start) % 2:  # after an odd number of triple quotes: in a string
            return None
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        statement = text[start:end]
        if "(" in statement and ")" not in statement:
            close = text.find(")", start)
            if close < 0:
                return None
            end = close + 1
        while text[start:end].rstrip().endswith("\\"):
            more = text.find("\n", end + 1)
            end = len(text) if more < 0 else more
        statement = text[start:end]
        indent = len(statement) - len(statement.lstrip())
        line += text.count("\n", counted, start)
        counted = start
        pieces.append((joined, line, indent))
        joined += statement.count("\n") + 1
        parts.append(statement[indent:])
    try:  # the statements parsed at once, one per line, then put where the whole-file parse puts them
        parsed = ast.parse("\n".join(parts))
    except (SyntaxError, ValueError):
        return None
    starts = [piece[0] for piece in pieces]
    for node in parsed.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            first, line, indent = pieces[bisect.bisect(starts, node.lineno) - 1]
            for part in (node, *node.names):
                if part.lineno == first:
                    part.col_offset += indent
                if part.end_lineno == first:
                    part.end_col_offset += indent
                part.lineno += line - first + 1
                part.end_lineno += line - first + 1
            found.append(node)
    return found


def _found(path: Path, module: str, texts: Optional[dict[Path, str]]) -> SourceFile:
    """A local module: parsed when it is loud, else kept as text with its imports scanned."""
    text = _text(path, texts)
    if _data_table(text):
        # a data table (read()): its words (a dictionary's "rank", "seed") make it loud, its size
        # makes it dear, and nothing in it is code a rule reads
        return SourceFile(path, display_path(path), module, ast.Module(body=[], type_ignores=[]), [])
    if len(text) >= QUIET_MIN_CHARS and quiet(text):
        imports = scan_imports(text)
        if imports is not None:
            source = SourceFile(path, display_path(path), module, None, text=text)
            source.__dict__["_imports"] = imports
            return source
    return SourceFile(path, display_path(path), module, _tree(path, text), text.splitlines())


class Roots(list):
    """The import roots in the order Python searches them; those from `installed` on are on the
    path the way an installed package is (`pip install -e`, a .pth file): after the standard
    library, which they cannot shadow (a vendored `json/` in a sub-project is not `import json`)."""

    def __init__(self, roots: list, installed: list) -> None:
        super().__init__(dict.fromkeys(roots + installed))
        self.installed = len(dict.fromkeys(roots))


# Libraries whose calls the rules model by name (DDP, FSDP, engines, trainers, launchers). A copy
# of one kept in the repository as a package (gdGPT's patched deepspeed/, 331 files) is imported as
# that library: read as local code it would be a second, unmodelled copy of it, most of the program
# and of the lint's time, and `deepspeed.initialize` would no longer be the engine the rules know.
# A module of the same name (a `lightning.py` of the script's own) is the user's code, and read.
# Each with a part every release of it holds: a package of the same name without it is the
# user's own (dreamer4's src/lightning/ of LightningModules and DataModules, beside the library
# it imports as pytorch_lightning), read as local code.
LIBRARY_COPIES = {"torch": ("nn",), "deepspeed": ("runtime",), "accelerate": ("accelerator.py", "accelerator"),
                  "transformers": ("modeling_utils.py", "models"), "lightning": ("pytorch", "fabric"),
                  "pytorch_lightning": ("trainer",), "lightning_fabric": ("fabric.py", "strategies"),
                  "fairscale": ("nn",), "apex": ("amp", "optimizers", "parallel"), "mmcv": ("ops", "cnn", "utils"),
                  "mmengine": ("runner", "model")}


def library_copy(name: str, roots: list[Path]) -> Optional[Path]:
    """The package folder of a modelled library's copy that `import name` would find, if any."""
    top = name.partition(".")[0]
    if top not in LIBRARY_COPIES:
        return None
    for root in roots:
        if os.path.isfile(os.path.join(str(root), top, "__init__.py")):
            if not any(os.path.exists(os.path.join(str(root), top, part)) for part in LIBRARY_COPIES[top]):
                return None  # (the user's own package of that name: read, found as any other)
            return Path(root) / top
        if os.path.isfile(os.path.join(str(root), top + ".py")):
            return None
    return None


def _candidates(name: str, roots: list[Path]) -> Optional[Path]:
    # strings, not pathlib (a package's imports ask hundreds of names, most not local); a name
    # is never empty nor has an empty part, so the joined string is the path pathlib would build
    tail = name.replace(".", os.sep)
    if isinstance(roots, Roots) and name.partition(".")[0] in sys.stdlib_module_names:
        roots = roots[:roots.installed]
    if library_copy(name, roots) is not None:
        return None
    for root in roots:
        base = os.path.join(str(root), tail)
        # (a package before a module of the same name, as Python's path finder takes them: a
        # stray `mmdet.py` beside the `mmdet/` package is not what `import mmdet` reads)
        for path in (os.path.join(base, "__init__.py"), base + ".py"):
            if os.path.isfile(path):
                return Path(path)
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
                # `from pkg.common.registry import X` runs pkg/__init__.py and pkg/common/__init__.py
                # first (a package that registers its trainers on import)
                # (a trailing "." marks a name that must be a package: a module file of that name
                # found through a folder some module appends to sys.path is not it)
                parts = base.split(".")
                names.extend((".".join(parts[:i]) + ".", node) for i in range(1, len(parts)))
                names.append((base, node))
            names.extend((f"{base}.{a.name}" if base else a.name, node) for a in node.names if a.name != "*")
    return names


def _src_layouts(script: Path, cwd: Path) -> list[Path]:
    """`src/` of a project packaged in the "src layout" (pyproject.toml, setup.py or setup.cfg
    beside it), or the project's folder itself in a flat layout: `pip install -e .` puts its
    packages on the path, so `from pkg.train import main` in scripts/train.py is the project's
    own src/pkg/train.py (or pkg/train.py). Looked for at the working directory and at the
    script's folder and the two above it."""
    found, bases = [], list(dict.fromkeys([cwd, script.parent, *list(script.parents)[1:3]]))
    for base in bases:
        if _packaged(base):
            # (a flat layout - `siamban/` beside setup.py, the script in tools/ - is on the
            # path the same way once `python setup.py develop` ran, or PYTHONPATH names it as
            # the README says)
            found.append(base / "src" if (base / "src").is_dir() else base)
    # (sub-projects only beside the script and the working directory: the folders above may
    # hold other people's projects - but a folder that says it vendors them, `third_party/YARR`
    # beside the project's folder, holds this project's own, installed with `pip install -e`)
    vendored = [base / name for base in dict.fromkeys([cwd, script.parent, cwd.parent]) for name in VENDOR_FOLDERS
                if (base / name).is_dir()]
    return found + [folder for base in dict.fromkeys([cwd, script.parent, *vendored]) for folder in _sub_projects(base)]


# folders that hold the copies of other projects a repository ships and installs
VENDOR_FOLDERS = ("third_party", "thirdparty", "third-party", "3rdparty", "external", "vendor")


def _packaged(folder: Path) -> bool:
    return any((folder / f).is_file() for f in ("pyproject.toml", "setup.py", "setup.cfg"))


_LISTED_MAX = 400  # a working directory of a million samples is not listed past this


def _sub_projects(base: Path) -> list[Path]:
    """Folders of `base` that are packages of their own (a setup.py or a pyproject.toml in
    them): research code ships a modified library that way and installs it
    with `pip install -e sub/` (or `python setup.py develop`), so `import basicsr` is the
    repository's `basicsr_modified/basicsr`. Looked up after every other root, so a module of the
    script's own folder still wins."""
    found = []
    try:
        with os.scandir(base) as entries:
            for count, entry in enumerate(entries):
                if count >= _LISTED_MAX:
                    break
                if entry.is_dir(follow_symlinks=False) and not entry.name.startswith(".") \
                        and _packaged(Path(entry.path)):
                    folder = Path(entry.path)
                    found.append(folder / "src" if (folder / "src").is_dir() else folder)
    except OSError:
        return []
    return sorted(found)


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
    roots = list(dict.fromkeys(roots + added_roots(files[0].tree, path, Path.cwd().resolve())))
    roots = list(dict.fromkeys(roots + _path_setters(files[0], roots, texts)))
    roots = list(dict.fromkeys(roots + _package_setters(files[0], path, texts)))
    roots = list(dict.fromkeys(roots + _own_package_roots(files[0], path)))
    roots = Roots(roots, _src_layouts(path, Path.cwd().resolve()))
    seen = {path}
    queue = [files[0]]
    where_is: dict[str, Optional[Path]] = {}  # every file imports torch, os, ...: each name looked up once
    copies: set[Path] = set()  # the library copies told of in a note
    named: Optional[list] = None  # the modules the configs name, looked for once the imports are read
    while queue or named is None:
        if not queue:
            # (their own imports are not followed: a config names one class of a zoo, which is
            # read when a rule asks for it, not the zoo)
            named = _config_named(files, path, roots)
            found = [f for f in (_config_module(n, roots, seen, texts) for n in named) if f is not None]
            found = found[:max(0, MAX_FILES - len(files))]
            files.extend(found)
            # (a module loaded by the key a loader reads, `import_module(cfg.TRAINER.FILE)`, runs:
            # its own imports are read as an import's are - the renderer's network modules)
            queue.extend(f for f in found if f.module in files[0].config_keyed)
            # (but the modules their classes' bases come from are, with their own imports: a
            # config-named `GEN3dTrainer(trainer.BaseTrainer)` runs its base's fit(); SDF-Diffusion)
            # (and a named package's own `from .model import PCC as Model` in its __init__: the
            # class a config's `model_module_path: models.lossy` stands for lives there - FastPCC;
            # that module alone, as the named ones are read)
            for named_file in found:
                for name, exported in [(n, False) for n, _ in _base_imports(named_file)] + \
                        [(n, True) for n, _ in _package_exports(named_file)]:
                    place = where_is.setdefault(name, _candidates(name, roots))
                    if place is None or place in seen or "site-packages" in place.parts or len(files) >= MAX_FILES:
                        continue
                    seen.add(place)
                    try:
                        base = _found(place, name, texts)
                    except UsageError:
                        continue
                    files.append(base)
                    if not exported:
                        queue.append(base)
            continue
        if len(files) >= MAX_FILES:
            break
        current = queue.pop(0)
        is_package = current.path.name == "__init__.py"
        module = current.module
        if not module:  # the script: relative imports resolve against its package, if any
            try:
                rel = current.path.relative_to(Path.cwd().resolve()).with_suffix("")
                # a package's own `__init__.py` (a console script's `pkg/cli/__init__.py`) is
                # the module `pkg.cli`: its relative imports count from there
                parts = rel.parts[:-1] if rel.parts and rel.parts[-1] == "__init__" else rel.parts
                module = ".".join(parts)
                current.import_name = module
            except ValueError:
                module = current.path.stem
        if current.tree is None and _nested_local(current, module, is_package, roots):
            try:  # the walk orders a nested import by its depth, which the scan does not know
                read(current)
            except UsageError as exc:
                files.remove(current)
                if notes is not None:
                    notes.append(f"{exc}; not read")
                continue
        # modules loaded by name (a plugin package's every `*_trainer.py`): as many as the cap
        # on files leaves room for, said when some are left out
        dynamic = _dynamic_imports(current, roots)
        if current is files[0]:
            dynamic += _hydra_imports(current) + _lazy_config_imports(current)
        room = max(0, MAX_FILES - len(files))
        if len(dynamic) > room and notes is not None:
            notes.append(f"{current.display}: {len(dynamic)} modules may be loaded by name "
                         f"(import_module); {room} read, the lint reads at most {MAX_FILES} files")
        for name, where in _imported_names(current.imports, module, is_package) + dynamic[:room]:
            package_only = name.endswith(".")
            name = name.rstrip(".")
            if name not in where_is:
                where_is[name] = _candidates(name, roots)
                copy = library_copy(name, roots)
                if copy is not None and notes is not None and copy not in copies:
                    copies.add(copy)
                    notes.append(f"{display_path(copy)}/ is a copy of the library {copy.name} kept beside the "
                                 f"script: read as that library (its calls as the rules know them), not as local code")
            found = where_is[name]
            if package_only and found is not None and found.name != "__init__.py":
                continue
            if found is None or found in seen or "site-packages" in found.parts:
                continue
            seen.add(found)
            try:
                parsed = _found(found, name, texts)
            except UsageError as exc:
                if notes is not None:
                    notes.append(_not_read(exc, current, where))
                continue
            files.append(parsed)
            queue.append(parsed)
    if queue and notes is not None:  # the cap reached: say which local modules were never read
        unread = _unread(queue, roots, where_is, seen)
        if unread:
            notes.append(f"the lint reads at most {MAX_FILES} files: {len(unread)} more local modules "
                         f"imported were not read ({unread[0]} first)")
    return files


def _config_named(files: list[SourceFile], script: Path, roots: list[Path]) -> list[str]:
    """Where some file loads a module by a name it is handed (`import_module(module)`), the
    dotted paths the configs beside the script name: CompVis-style `instantiate_from_config`
    builds the dataset a config's `target:` names, which nothing imports."""
    if not any(names_importer(f) for f in files):
        return []
    keyed = _keyed_modules(files, script)
    files[0].config_keyed = keyed
    files[0].config_named = named_in_configs(script, files[0].hydra_configs) + \
        [n for n in keyed if n not in files[0].config_named]
    return files[0].config_named


def _keyed_modules(files: list[SourceFile], script: Path) -> list[str]:
    """The module names the YAML configs give a key some file loads by (`import_module(
    cfg.TRAINER.FILE)` with `TRAINER: / FILE: hoi_trainer`, a yacs project's plugin): plain
    names too, not only dotted paths."""
    keys: list[tuple] = []
    for f in files:
        if not names_importer(f):
            continue
        if f.tree is None:
            try:
                read(f)
            except UsageError:
                continue
        keys += [key for call in f.of(ast.Call) for key in [configured_key(call)] if key]
        # (`module = cfg.renderer_module` then `imp.load_source(module, path)`: the key the name
        # is bound to once in its function - the neuralbody family's loaders)
        for fn in f.of(ast.FunctionDef):
            loads = [call for call in walk(fn) if isinstance(call, ast.Call) and call.args
                     and isinstance(call.args[0], ast.Name) and patterns.last_name(call.func) in IMPORTERS]
            bound = _bound_once(_plain_bindings(fn)) if loads else {}
            keys += [key for call in loads if isinstance(bound.get(call.args[0].id), ast.Attribute)
                     for key in [configured_key(ast.Call(func=call.func, args=[bound[call.args[0].id]], keywords=[]))]
                     if key]
    if not keys:
        return []
    bodies = yaml_beside(script)
    found: list[str] = []
    for key in dict.fromkeys(keys):
        found += [n for n in module_names(config_values(script, bodies, key, files[0].hydra_configs))
                  if n not in found]
    return found


def configured_key(call: ast.Call) -> tuple:
    """The config key path `import_module(cfg.TRAINER.FILE)` loads a module by: ("TRAINER",
    "FILE"); () for any other call."""
    if not (call.args and isinstance(call.args[0], ast.Attribute) and
            (call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")) in IMPORTERS):
        return ()
    return tuple((patterns.dotted(call.args[0]) or "").split(".")[1:])


_CLASS_BASES = re.compile(r"^class\s+\w+\s*\(([^)]*)\)", re.MULTILINE)


def _base_imports(source: SourceFile) -> list[tuple[str, ast.AST]]:
    """The module names (as _imported_names gives them) of the imports that bind a name a class
    of the file derives from (`from src import trainer` for `class X(trainer.BaseTrainer)`)."""
    body = source.text if source.text is not None else "\n".join(source.lines)
    heads = {part.strip().split(".")[0].split("[")[0] for found in _CLASS_BASES.findall(body or "")
             for part in found.split(",")}
    heads.discard("")
    binding = [node for node in source.imports
               if any((a.asname or a.name.split(".")[0]) in heads for a in node.names)]
    module = source.module or source.path.stem
    return [(n.rstrip("."), w) for n, w in _imported_names(binding, module, source.path.name == "__init__.py")
            if not n.endswith(".")]


def _package_exports(source: SourceFile) -> list[tuple[str, ast.AST]]:
    """The modules a package's `__init__.py` takes names from by relative imports (`from .model
    import PCC as Model`), as _imported_names gives them; [] for a module file."""
    if source.path.name != "__init__.py":
        return []
    relative = [node for node in source.imports if isinstance(node, ast.ImportFrom) and node.level]
    module = source.module or source.path.parent.name
    return [(n, w) for n, w in _imported_names(relative, module, True) if not n.endswith(".")]


def _config_module(name: str, roots: list[Path], seen: set, texts: Optional[dict[Path, str]]) -> Optional[SourceFile]:
    """The local module a config's dotted path names (`pkg.mod.Class`: pkg/mod.py), parsed as a
    quiet module would be; None when it is no local file, or one already read."""
    for module in (name, name.rpartition(".")[0]):
        found = _candidates(module, roots) if module else None
        if found is None or "site-packages" in found.parts:
            continue
        if found in seen:
            return None
        seen.add(found)
        try:
            return _found(found, module, texts)
        except UsageError:
            return None
    return None


def _unread(queue: list[SourceFile], roots: list[Path], where_is: dict, seen: set) -> list[str]:
    """The local modules the files left in the queue import that were never read, by name."""
    unread: dict[Path, str] = {}
    for current in queue:
        module = current.module or current.path.stem
        for name, _where in _imported_names(current.imports, module, current.path.name == "__init__.py"):
            if name.endswith("."):
                continue  # a package above an imported module: said with the module
            if name not in where_is:
                where_is[name] = _candidates(name, roots)
            found = where_is[name]
            if found is not None and found not in seen and "site-packages" not in found.parts:
                unread.setdefault(found, name)
    return list(unread.values())


# importlib.import_module(name), __import__(name), imp.load_source(name, path) (the neuralbody
# family's `imp.load_source(cfg.renderer_module, cfg.renderer_path).Renderer(net)`: the module
# of that name, found as a name is)
IMPORTERS = ("import_module", "__import__", "load_source")


def names_importer(source: SourceFile) -> bool:
    """The file's text names a loader of modules by name (IMPORTERS): a superset of the files
    that build what a config names."""
    text = source.text if source.text is not None else "\n".join(source.lines)
    return any(word in text for word in IMPORTERS)


def dynamic_spec(call: ast.Call, bound: Optional[dict] = None) -> Optional[tuple[str, Optional[str]]]:
    """What `importlib.import_module(...)` loads, as the source spells it: (name, None) when
    constant (`"lib.train.train_script"`); (prefix, suffix) of an f-string with one varying part
    (`f"pkg.trainers.{config.trainer}_trainer"`: a plugin a config chooses, any module of that
    package that fits); None when the name is not spelled. bound: the names the call's function
    binds once (`module_name = "data." + name.lower()` then `import_module(module_name)`)."""
    if not call.args or (call.func.attr if isinstance(call.func, ast.Attribute)
                         else getattr(call.func, "id", "")) not in IMPORTERS:
        return None
    given = call.args[0]
    if isinstance(given, ast.Name) and bound and given.id in bound:
        given = bound[given.id]
    spec = patterns.name_pattern(given)
    if spec is None or spec[1] is None:
        return spec
    prefix, suffix = spec
    # (`f"app.{name}.train"`, a varying package segment, is not followed: read, V-JEPA's apps bring
    # samplers returned two helpers down whose set_epoch is not matched yet: false DDP804s)
    return spec if "." in prefix and "." not in suffix else None


def fits(spec: tuple[str, Optional[str]], name: str) -> bool:
    """A module name `spec` (dynamic_spec) may load: one module of the prefix's package."""
    prefix, suffix = spec
    if suffix is None:
        return name == prefix
    package = prefix.rpartition(".")[0]
    return name.rpartition(".")[0] == package and name.startswith(prefix) and name.endswith(suffix) \
        and len(name) > len(prefix) + len(suffix)


def dynamic_names(call: ast.Call, roots: list[Path], bound: Optional[dict] = None) -> list[str]:
    """The local modules such a call may load, found on disk (either side of a name spelled
    `f"pkg.trainer.{name}" if "general" in name else f"pkg.apps.{task}.{name}"`)."""
    given = call.args[0] if call.args else None
    if isinstance(given, ast.Name) and bound and given.id in bound:
        given = bound[given.id]
    if isinstance(given, ast.IfExp):
        return list(dict.fromkeys(name for side in (given.body, given.orelse)
                                  for name in dynamic_names(ast.Call(func=call.func, args=[side], keywords=[]), roots)))
    spec = dynamic_spec(call, bound)
    if spec is None:
        return []
    if spec[1] is None:
        return [spec[0]]
    package = spec[0].rpartition(".")[0]
    for root in roots:
        folder = os.path.join(str(root), package.replace(".", os.sep))
        if os.path.isdir(folder):
            names = sorted(f"{package}.{n[:-3]}" for n in os.listdir(folder) if n.endswith(".py"))
            return [n for n in names if fits(spec, n)]
    return []


def _dynamic_imports(source: SourceFile, roots: list[Path]) -> list[tuple[str, ast.AST]]:
    """(module name, the call) for each module the file loads by name at run time."""
    if source.tree is None:
        if not any(word in (source.text or "") for word in IMPORTERS):
            return []
        try:
            read(source)  # a quiet module that loads modules by name: its calls need the tree
        except UsageError:
            return []  # not Python: said when resolution asks for it
    found = [(name, call) for call in source.of(ast.Call) for name in dynamic_names(call, roots)]
    found += [(name, call) for call in source.of(ast.Call) for name in _own_package_modules(source, call)]
    by_name = [call for call in source.of(ast.Call) if call.args and isinstance(call.args[0], ast.Name)
               and (call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")) in IMPORTERS]
    for fn in source.of(ast.FunctionDef) if by_name else ():  # a name the function binds once, then loads
        plain = _plain_bindings(fn)
        bound = _bound_once(plain)
        bound.update(_given_literally(source, fn, bound))
        if bound:
            found += [(name, call) for call in walk(fn) if isinstance(call, ast.Call) and call.args
                      and isinstance(call.args[0], ast.Name) and call.args[0].id in bound
                      for name in dynamic_names(call, roots, bound)]
        # (a name bound to a module's spelled name on each side of an if/elif: FedDrive's
        # `main_module = 'fed_setting.main'` / `'centr_setting.main'`, then import_module(main_module))
        spelled = _bound_to_constants(plain)
        found += [(name, call) for call in walk(fn) if isinstance(call, ast.Call) and call.args
                  and isinstance(call.args[0], ast.Name) and call.args[0].id in spelled
                  for value in spelled[call.args[0].id]
                  for name in dynamic_names(call, roots, {call.args[0].id: value})]
    return found


def _bound_to_constants(plain: dict) -> dict:
    """Of _plain_bindings, the names bound several times, each time to a spelled string."""
    return {name: given for name, given in plain.items() if len(given) > 1
            and all(isinstance(v, ast.Constant) and isinstance(v.value, str) for v in given)}


def loads_own_package(call: ast.Call) -> bool:
    """`import_module(f"{__name__}.{module_name}")`: a module of the package this runs in, by a
    name known at run time (in a package's `__init__.py`: any module of its folder)."""
    given = call.args[0] if call.args else None
    if not isinstance(given, ast.JoinedStr) or patterns.last_name(call.func) not in IMPORTERS:
        return False
    parts = given.values
    return len(parts) == 3 and isinstance(parts[0], ast.FormattedValue) and isinstance(parts[0].value, ast.Name) \
        and parts[0].value.id == "__name__" and isinstance(parts[1], ast.Constant) and parts[1].value == "." \
        and isinstance(parts[2], ast.FormattedValue)


def _own_package_modules(source: SourceFile, call: ast.Call) -> list[str]:
    """A package's `__init__.py` that loads each module of its own folder
    (`import_module(f"{__name__}.{module_name}")` over `iter_modules([package_dir])`, then puts
    their classes in its namespace: OpenGait's model registry): those modules, by name."""
    if source.path.name != "__init__.py" or not source.module or not loads_own_package(call):
        return []
    try:
        names = sorted(n[:-3] for n in os.listdir(source.path.parent) if n.endswith(".py") and n != "__init__.py")
    except OSError:
        return []
    return [f"{source.module}.{n}" for n in names]


def _given_literally(source: SourceFile, fn: ast.FunctionDef, bound: dict) -> dict:
    """The parameters of fn every call of it in the same file hands one string constant
    (`build(args, "opensphere")` into `def build(args, module): import_module(module)`)."""
    params = [a.arg for a in fn.args.args]
    found: dict = {}
    calls = [c for c in source.of(ast.Call) if isinstance(c.func, ast.Name) and c.func.id == fn.name]
    for index, name in enumerate(params):
        if name in bound or not calls:
            continue
        given = set()
        for call in calls:
            value = call.args[index] if index < len(call.args) else next(
                (k.value for k in call.keywords if k.arg == name), None)
            given.add(value.value if isinstance(value, ast.Constant) and isinstance(value.value, str) else None)
        if len(given) == 1 and None not in given:
            found[name] = ast.Constant(given.pop())
    return found


# `@hydra.main(config_path="../configs", ...)` and a `_target_: pkg.mod.Class` line of a config.
_HYDRA_MAIN = re.compile(r"""hydra\.main\([^)]*?config_path\s*=\s*["']([^"']+)["']""", re.DOTALL)
# (or `config_path=os.path.join(os.getcwd(), "cfg/real")`: a folder of the working directory)
_HYDRA_MAIN_CWD = re.compile(
    r"""hydra\.main\([^)]*?config_path\s*=\s*os\.path\.join\(\s*os\.getcwd\(\)\s*,\s*["']([^"']+)["']\s*\)""",
    re.DOTALL)
_TARGET = re.compile(r"""^\s*_target_\s*:\s*["']?([A-Za-z_][\w.]*)["']?\s*$""", re.MULTILINE)
# (or Hydra's compose API: `with hydra.initialize(config_path="conf"):` then `hydra.compose(...)`,
# its folder given as a constant or as the default of a `--config_path` option the launch keeps;
# both relative to the script's folder, as Hydra reads them from the calling file)
_HYDRA_INIT = re.compile(r"""hydra\.initialize\([^)]*?config_path\s*=\s*["']([^"']+)["']""", re.DOTALL)
_CONFIG_PATH_OPTION = re.compile(
    r"""add_argument\(\s*["']--config[_-]path["'][^)]*?default\s*=\s*["']([^"']+)["']""", re.DOTALL)
# the config the compose API (or the decorator) names: `config_name="train"`, or the default of a
# `--config_name` option; its sibling configs at the folder's top are other runs, not this one's
_CONFIG_NAME = re.compile(r"""(?:hydra\.main|hydra\.compose|^@[\w.]+)\([^)]*?config_name\s*=\s*["']([^"']+)["']""",
                          re.DOTALL | re.MULTILINE)
_CONFIG_DECORATOR = re.compile(r"""^@[\w.]+\([^)]*?config_path\s*=\s*["']([^"']+)["']""", re.DOTALL | re.MULTILINE)
_CONFIG_NAME_OPTION = re.compile(
    r"""add_argument\(\s*["']--config[_-]name["'][^)]*?default\s*=\s*["']([^"']+)["']""", re.DOTALL)


MAX_KEYED_TARGETS = 16  # the classes one config key may name across a config tree
_TOP_KEY = re.compile(r"^([A-Za-z_][\w-]*)\s*:")
_TOP_SCALAR = re.compile(r"""^([A-Za-z_]\w*)\s*:\s*["']?([A-Za-z_][\w.]*)["']?\s*$""", re.MULTILINE)
_TARGET_REF = re.compile(r"""^\s*_target_\s*:\s*["']?\$\{([A-Za-z_]\w*)\}["']?\s*$""")


def _keyed_targets(body: str, group: str) -> list[tuple[str, str]]:
    """(key, dotted target) for each `_target_` of a Hydra config: a target at the file's top
    is keyed by its config group (the folder it lies in; none for the primary config), one
    nested under a top-level key by that key."""
    found = []
    key = ""
    # (`_target_: ${target}` with `target: pkg.Agent` at the top: OmegaConf's interpolation)
    scalars = dict(_TOP_SCALAR.findall(body)) if "${" in body else {}
    for line in body.splitlines():
        top = _TOP_KEY.match(line)
        if top:
            key = top.group(1)
        target = _TARGET.match(line)
        named = target.group(1) if target else ""
        if not named and (ref := _TARGET_REF.match(line)):
            named = scalars.get(ref.group(1), "")
        if "." in named:
            nested = line[:1].isspace()
            held = key if nested else group
            if held and held != "_target_":
                found.append((held, named))
    return found


def _decorator_config_folder(script: SourceFile) -> Optional[Path]:
    """The folder of a `@hydra.main(config_path=...)` spelt from the script's own path:
    `str(Path(__file__).parent.joinpath("a", "b"))`, `Path(__file__).parent / "a"`,
    `os.path.join(os.path.dirname(os.path.abspath(__file__)), "a")` (syspath reads the spelling).
    None otherwise."""
    for node in script.tree.body if script.tree is not None else ():
        if node.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef):
            continue
        for deco in node.decorator_list:
            if deco.__class__ is ast.Call and (patterns.dotted(deco.func) or "").rpartition(".")[::2] in (
                    ("hydra", "main"), ("", "main")):
                given = next((k.value for k in deco.keywords if k.arg == "config_path"), None)
                spelt = path_value(given, script.path, Path.cwd()) if given is not None else None
                if spelt is not None:
                    return Path(spelt)
    return None


def _hydra_imports(script: SourceFile) -> list[tuple[str, ast.AST]]:
    """The modules a Hydra script builds objects from: `hydra.utils.instantiate(cfg.model)`
    reads `_target_: egomimic.pl_utils.pl_model.ModelWrapper` from the configs under the
    `config_path` of its `@hydra.main`, so the class's module runs (and its hooks are the
    framework's to call) though nothing imports it. (module name, the script's tree) pairs;
    the names are kept on the script (hydra_targets) for the reachability."""
    text = script.text if script.text is not None else "\n".join(script.lines)
    if "instantiate" not in text and "get_class" not in text and not _beside_instantiates(script):
        return []  # (`hydra.utils.get_class(cfg._target_)(cfg)` builds it too)
    found = _HYDRA_MAIN.search(text)
    if found is None and "hydra" in text:
        # a decorator of the project's own around hydra.main (`@main_torch_distributed(
        # config_path="conf", config_name="config")`, arcworld's, which starts the ranks too)
        found = _CONFIG_DECORATOR.search(text)
    if found is None and "hydra.initialize(" in text:
        found = _HYDRA_INIT.search(text) or _CONFIG_PATH_OPTION.search(text)
    at_cwd = _HYDRA_MAIN_CWD.search(text) if found is None else None
    # (or a folder spelt from the script's own path: `config_path=str(pathlib.Path(__file__).
    # parent.joinpath("pkg", "config"))`, diffusion_policy's train.py and its many forks)
    beside = _decorator_config_folder(script) if found is None and at_cwd is None else None
    if found is None and at_cwd is None and beside is None:
        return []
    folder = (script.path.parent / found.group(1)).resolve() if found is not None else \
        (Path.cwd() / at_cwd.group(1)).resolve() if at_cwd is not None else \
        beside.resolve()
    if not folder.is_dir():
        return []
    targets: list[str] = []
    named = _CONFIG_NAME.search(text) or (_CONFIG_NAME_OPTION.search(text) if "hydra.initialize(" in text else None)
    # (`config_name="default.yaml"` or `"default"`: Hydra adds the suffix where it is missing)
    chosen = folder / (named.group(1) if named.group(1).endswith((".yaml", ".yml")) else f"{named.group(1)}.yaml") \
        if named is not None else None
    if chosen is not None and not chosen.is_file():
        chosen = None  # (looked up once: a name that is no file of the folder filters nothing)
    for config in config_files(folder):
        if chosen is not None and config.parent == folder and config != chosen:
            continue  # (another run's top-level config: the groups below the folder stay in)
        try:
            if config.stat().st_size > MAX_CONFIG_BYTES or not config.is_file():
                continue
            body = config.read_text(errors="replace")
        except OSError:
            continue
        targets.extend(t for t in _TARGET.findall(body) if t not in targets and "." in t)
        script.hydra_configs.append(str(config))
        group = config.parent.name if config.parent != folder else ""
        for key, target in _keyed_targets(body, group):
            if target not in targets:
                targets.append(target)  # (one an interpolation names: `_target_: ${target}`)
            held = script.hydra_keyed.setdefault(key, [])
            if target not in held and len(held) < MAX_KEYED_TARGETS:
                held.append(target)
    script.hydra_targets = targets
    where = script.tree if script.tree is not None else ast.Module(body=[], type_ignores=[])
    modules = []
    for target in targets:
        module = target.rsplit(".", 1)[0]
        if module not in modules:
            modules.append(module)
    return [(m, where) for m in modules]


def _lazy_config_imports(script: SourceFile) -> list[tuple[str, ast.AST]]:
    """The modules a LazyConfig script builds objects from (`cfg = LazyConfig.load(args.config)`,
    then `instantiate(cfg.dataset)`): the classes the Python configs beside it name with
    `L(Target)(...)`, keyed by the config entry (sources.SourceFile.hydra_keyed, as a Hydra
    `_target_` is) and live as Hydra's targets are."""
    text = script.text if script.text is not None else "\n".join(script.lines)
    if "LazyConfig" not in text or script.path is None:
        return []
    modules = []
    for key, target in lazy_call_targets(script.path, script.hydra_configs):
        if target not in script.hydra_targets:
            script.hydra_targets.append(target)
        held = script.hydra_keyed.setdefault(key, [])
        if target not in held and len(held) < MAX_KEYED_TARGETS:
            held.append(target)
        module = target.rsplit(".", 1)[0]
        if module not in modules:
            modules.append(module)
    return [(m, script.tree if script.tree is not None else ast.Module(body=[], type_ignores=[])) for m in modules]


def _beside_instantiates(script: SourceFile) -> bool:
    """A module beside the script that it imports (`from utils import *`, BP-Net's Trainer)
    calls Hydra's `instantiate`: the script's configs name what that module builds. Only
    where the script itself is a Hydra app, and only its own folder's modules, each read
    up to MAX_CONFIG_BYTES."""
    if script.tree is None or "hydra" not in "\n".join(script.lines[:200]):
        return False
    for name in sorted(imported_heads(script.tree))[:50]:
        path = script.path.parent / f"{name}.py"
        try:
            if path.is_file() and path.stat().st_size <= MAX_CONFIG_BYTES and \
                    "instantiate(" in path.read_text(errors="replace"):
                return True
        except OSError:
            continue
    return False


def _plain_bindings(fn: ast.AST) -> dict:
    """The names every binding of which in the function is a plain `name = value`, to those
    values in order (a loop target, a tuple unpacking or an augmented assignment keeps a name out)."""
    stores: dict = {}
    values: dict = {}
    for node in walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            stores[node.id] = stores.get(node.id, 0) + 1
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            values.setdefault(node.targets[0].id, []).append(node.value)
    return {name: given for name, given in values.items() if len(given) == stores.get(name)}


def _bound_once(plain: dict) -> dict:
    """Of _plain_bindings, the names bound exactly once, to their value."""
    return {name: given[0] for name, given in plain.items() if len(given) == 1}


def _path_setters(script: SourceFile, roots: list[Path], texts: Optional[dict[Path, str]]) -> list[Path]:
    """`import _init_path` at the script's top: a local module run for its effect of putting
    folders on sys.path (`sys.path.insert(0, '../')`) before the script's other imports; the
    folders it adds are import roots too."""
    found: list[Path] = []
    for stmt in script.tree.body if script.tree is not None else []:
        # `import _init_path`, and `from config import cfg` (SMPLer-X's config object puts the
        # trainer's folder on sys.path in a method the script calls)
        names = [a.name for a in stmt.names] if isinstance(stmt, ast.Import) else \
            [stmt.module] if isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level else []
        for name in names:
            where = _candidates(name, roots)
            if where is None or where.suffix != ".py" or "site-packages" in where.parts:
                continue
            found += _roots_added_by(where, texts)
    return found


def _roots_added_by(module: Path, texts: Optional[dict[Path, str]]) -> list[Path]:
    """The folders a module run for its effect puts on sys.path; none where it does not parse."""
    try:
        tree = _tree(module, _text(module, texts))
    except UsageError:
        return []
    return added_roots(tree, module, Path.cwd().resolve())


def _package_setters(script: SourceFile, path: Path, texts: Optional[dict[Path, str]]) -> list[Path]:
    """A script with relative imports runs as a module of its package (`python -m romp.train`),
    so Python first runs the `__init__.py` of each package above it: the folders those put on
    sys.path, themselves or through a sibling they import for that (ROMP's `from . import
    _init_paths_`, which inserts `lib/`), are import roots too."""
    tree = script.tree
    if tree is None or not any(isinstance(n, ast.ImportFrom) and n.level for n in tree.body):
        return []
    cwd = Path.cwd().resolve()
    found: list[Path] = []
    folder = path.parent
    while (folder / "__init__.py").is_file() and folder != cwd and cwd in folder.parents:
        init = folder / "__init__.py"
        try:
            init_tree = _tree(init, _text(init, texts))
        except UsageError:
            break  # (Python would stop there too)
        found += added_roots(init_tree, init, cwd)
        for stmt in init_tree.body:
            if not (isinstance(stmt, ast.ImportFrom) and stmt.level == 1):
                continue
            for name in ([stmt.module] if stmt.module else [a.name for a in stmt.names]):
                module = folder / (name.replace(".", "/") + ".py")
                if module.is_file():
                    found += _roots_added_by(module, texts)
        folder = folder.parent
    return found


def _own_package_roots(script: SourceFile, path: Path) -> list[Path]:
    """A script inside a folder it imports by name (src/training/main.py: `from training.train
    import evaluate`, run with the README's `PYTHONPATH=$PWD/src`): the folder above that one
    is where the import is found. Only a folder that holds the imported module, at most three
    levels above the script."""
    tree = script.tree
    if tree is None:
        return []
    wanted = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            wanted.setdefault(node.module.partition(".")[0], []).append(node.module.split("."))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                wanted.setdefault(alias.name.partition(".")[0], []).append(alias.name.split("."))
    found = []
    for folder in [path.parent, *list(path.parents)[1:3]]:
        for parts in wanted.get(folder.name, ()):
            inner = folder.joinpath(*parts[1:])
            if len(parts) == 1 or inner.with_suffix(".py").is_file() or (inner / "__init__.py").is_file() \
                    or inner.is_dir():
                found.append(folder.parent)
                break
    return found


def _nested_local(source: SourceFile, module: str, is_package: bool, roots: list[Path]) -> bool:
    """A scanned module imports a local module inside a block or a function: the files are found
    in the order of the parsed tree's walk (breadth first), so such a module is parsed."""
    nested = [n for n in source.imports if n.col_offset > 0]
    return any((found := _candidates(name, roots)) is not None and "site-packages" not in found.parts
               for name, _ in _imported_names(nested, module, is_package) if not name.endswith("."))


def _not_read(exc: UsageError, importer: SourceFile, where: ast.AST) -> str:
    """"models/x.py:15: not valid Python: ...; imported at train.py:12 only when `args.arch ==
    'x'`; not read"."""
    if importer.tree is None:  # a quiet importer: its tree tells the condition
        try:
            read(importer)
        except UsageError:
            return f"{exc}; imported at {importer.display}:{getattr(where, 'lineno', '?')}; not read"
        where = next((n for n in importer.imports if n.lineno == where.lineno), where)
    condition = ""
    for node in importer.nodes:
        if isinstance(node, (ast.If, ast.Try)):
            inside = [n for part in (node.body, getattr(node, "orelse", [])) for stmt in part for n in walk(stmt)]
            if any(n is where for n in inside):
                # (an import on the `else:` side runs where the test is false: DSTC9's `else: from
                # baseline import main` beside `if "--generate" in sys.argv:`)
                other = isinstance(node, ast.If) and any(n is where for stmt in node.orelse for n in walk(stmt))
                condition = (f" only when `{ast.unparse(node.test)}` is false" if other else
                             f" only when `{ast.unparse(node.test)}`" if isinstance(node, ast.If)
                             else " inside a try")
    return f"{exc}; imported at {importer.display}:{getattr(where, 'lineno', '?')}{condition}; not read"


UNREAD_SCAN_MAX = 400  # files: a look for where a job's code lives, not a second lint


def setup_in_unread(script: Path, read: set, words: tuple[str, ...]) -> Optional["Location"]:
    """The first local module next to the script (its folder and below, then the working
    directory's) that the lint did not read and whose text calls one of `words` (a process-group
    set-up): where a trainer loaded by a name chosen at run time lives. Bounded: at most
    UNREAD_SCAN_MAX files, no installed packages, no hidden or virtual-environment folders."""
    from ddpdoctor.core.findings import Location

    seen = 0
    for root in dict.fromkeys([script.parent, Path.cwd().resolve()]):
        for folder, dirs, names in os.walk(root):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in ("site-packages", "node_modules")
                             and not os.path.isfile(os.path.join(folder, d, "pyvenv.cfg")))
            for name in sorted(names):
                if not name.endswith(".py"):
                    continue
                path = Path(folder, name)
                if path in read:
                    continue
                seen += 1
                if seen > UNREAD_SCAN_MAX:
                    return None
                try:
                    text = _text(path)
                    if not any(f"{word}(" in text for word in words):
                        continue  # most files: no parse
                    tree = _tree(path, text)
                except UsageError:
                    continue  # unreadable, or not Python: nothing that runs
                for node in walk(tree):  # a call, not a comment or a string that says it
                    if isinstance(node, ast.Call) and patterns.last_name(node.func) in words:
                        return Location(display_path(path), node.lineno)
    return None
