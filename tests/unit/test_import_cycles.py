"""The package's modules, and its packages (folders), import each other without a cycle: the
layout's layers (core, report, cli, preflight, probe's records / launch / inrank / run_model /
analysis) only lean one way; docs/architecture.md draws that graph and names every module.
Function-level imports count too: a cycle hidden in a function is still a cycle a reader has to
untangle."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from tests.helpers.source_tree import walked

REPO = Path(__file__).resolve().parents[2]


def _modules() -> dict[str, Path]:
    found = {}
    for root, prefix in ((REPO / "ddpdoctor", "ddpdoctor"), (REPO / "checks", "ddpdoctor.checks")):
        for path in root.rglob("*.py"):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([prefix, *parts])] = path
    return found


@functools.lru_cache(maxsize=None)
def _import_nodes(path: Path) -> tuple[ast.AST, ...]:
    """A module's import statements, parsed once for every test of this file."""
    return tuple(n for n in walked(path) if isinstance(n, (ast.Import, ast.ImportFrom)))


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    edges = set()
    for node in _import_nodes(path):
        if isinstance(node, ast.Import):
            edges.update(a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                if full in modules:
                    edges.add(full)
                elif base in modules:
                    edges.add(base)
    edges.discard(name)
    return edges


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    cycles, state, stack = [], {}, []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return cycles


def test_no_module_imports_itself_back_through_others():
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    assert _cycles(graph) == []


def _folder(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def package_graph() -> dict[str, set[str]]:
    """Folders as nodes: an import (at the top or inside a function) of any module of folder X by
    a module of folder Y != X is an edge Y -> X. A package and its sub-package are two nodes."""
    modules = _modules()
    folders = {name: _folder(name, path) for name, path in modules.items()}
    graph: dict[str, set[str]] = {folder: set() for folder in folders.values()}
    for name, path in modules.items():
        graph[folders[name]].update(folders[e] for e in _imports(name, path, modules) if folders[e] != folders[name])
    return graph


def test_no_package_imports_itself_back_through_others():
    # No module cycle is not enough: probe/ holding both the record schema every layer reads and
    # the driver that imports every layer made probe/ <-> analysis/, launch/, run_model/ a
    # cycle of folders without one of modules. A layer is a folder, and layers lean one way.
    assert _cycles(package_graph()) == []


def test_the_package_cycle_finder_sees_a_cycle_through_a_function_level_import(tmp_path):
    for rel, text in {"a/__init__.py": "", "a/x.py": "def f():\n    from a.b import y\n",
                      "a/b/__init__.py": "", "a/b/y.py": "from a import x\n"}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    modules = {"a": tmp_path / "a/__init__.py", "a.x": tmp_path / "a/x.py",
               "a.b": tmp_path / "a/b/__init__.py", "a.b.y": tmp_path / "a/b/y.py"}
    folders = {name: _folder(name, path) for name, path in modules.items()}
    graph = {f: {folders[e] for e in _imports(m, modules[m], modules) if folders[e] != f}
             for m, f in folders.items() if m in ("a.x", "a.b.y")}
    assert graph == {"a": {"a.b"}, "a.b": {"a"}} and _cycles(graph) == [["a", "a.b", "a"]]


# What code inside the user's ranks may import: itself, the telemetry format, the JSON-lines
# codec, the run dir's file names, secret redaction, torch's names and the defaults. Never the launcher side or the
# analysis: they pull in psutil, rich and the checks, which cost every rank start-up time and
# could fail inside the script.
INRANK_MAY_IMPORT = ("ddpdoctor.probe.inrank", "ddpdoctor.probe.records.telemetry", "ddpdoctor.probe.records.jsonl",
                     "ddpdoctor.core.torch_names", "ddpdoctor.core.defaults",
                     "ddpdoctor.probe.records.rundir",
                     "ddpdoctor.core.redact", "ddpdoctor.core.version", "ddpdoctor.core.paths",
                     "ddpdoctor.core.deprecated")
INRANK_PACKAGES = ("ddpdoctor", "ddpdoctor.probe")  # __init__ files, which import nothing heavy


def test_code_inside_ranks_imports_nothing_from_the_parent_side():
    modules = _modules()
    allowed = lambda e: e in INRANK_PACKAGES or any(e == a or e.startswith(a + ".") for a in INRANK_MAY_IMPORT)
    wrong = {m: sorted(e for e in _imports(m, path, modules) if not allowed(e))
             for m, path in modules.items() if m.startswith("ddpdoctor.probe.inrank")}
    assert {m: es for m, es in wrong.items() if es} == {}


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]


def _reaches(start: str, graph: dict[str, set[str]]) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_the_launcher_side_and_the_run_model_never_import_the_analysis():
    # launch/ makes the run model (Outcome, stacks, the watchdog's looks) and analysis/ reads it:
    # both depend on probe/run_model/, neither on the other, not even through a third module
    # (launch/ reads a spec.JobSpec, not options.py, which reads the --baseline report).
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    analysis = lambda found: sorted(e for e in found if e.startswith("ddpdoctor.probe.analysis"))
    wrong = {m: analysis(_reaches(m, graph)) for m in modules
             if m.startswith(("ddpdoctor.probe.launch", "ddpdoctor.probe.run_model"))}
    assert {m: es for m, es in wrong.items() if es} == {}


def test_the_analysis_never_imports_the_launcher_side():
    # The other half of the rule: analysis/ reads a run dir through run_model/ and judges it
    # without a job (`ddpdoctor report`), so it never imports launch/.
    modules = _modules()
    wrong = {m: sorted(e for e in _imports(m, path, modules) if e.startswith("ddpdoctor.probe.launch"))
             for m, path in modules.items() if m.startswith("ddpdoctor.probe.analysis")}
    assert {m: es for m, es in wrong.items() if es} == {}


# docs/architecture.md, drawn from the code: its "Who depends on whom" block is the package graph
# above, edge for edge, and its table has a row per package naming each of its modules.
ARCHITECTURE = REPO / "docs" / "architecture.md"


def _short(folder: str) -> str:
    """ddpdoctor.probe.records -> probe/records; ddpdoctor.checks.probe -> checks/probe."""
    return folder if folder == "ddpdoctor" else folder.removeprefix("ddpdoctor.").replace(".", "/")


def _drawn_graph() -> dict[str, set[str]]:
    block = ARCHITECTURE.read_text(encoding="utf-8").split("## Who depends on whom", 1)[1].split("```")[1]
    drawn = {}
    for line in block.splitlines():
        found = re.match(r"^(\S+)\s+─►\s*(.*)$", line)
        if found:
            deps = found.group(2).strip()
            drawn[found.group(1)] = set() if deps == "nothing" else {d.strip() for d in deps.split(",")}
    return drawn


def _drawing(graph: dict[str, set[str]]) -> str:
    order: list[str] = []

    def place(node: str) -> None:
        if node not in order:
            for dep in sorted(graph[node]):
                place(dep)
            order.append(node)

    for node in sorted(graph):
        place(node)
    width = max(len(_short(n)) for n in order) + 2
    return "\n".join(f"{_short(n):{width}}─► " + (", ".join(_short(d) for d in sorted(graph[n], key=order.index))
                                                or "nothing") for n in order)


def test_the_architecture_page_draws_the_package_graph_as_it_is():
    graph = {_short(node): {_short(dep) for dep in deps} for node, deps in package_graph().items()}
    assert _drawn_graph() == graph, "docs/architecture.md's drawing, as the imports are now:\n" + _drawing(package_graph())


def test_every_module_is_named_in_its_packages_row_of_the_architecture_page():
    rows = {}
    for line in ARCHITECTURE.read_text(encoding="utf-8").splitlines():
        found = re.match(r"^\| `([\w/]+/)` \| (.*) \|$", line)
        if found:
            rows[found.group(1)] = found.group(2)
    missing = []
    for path in _modules().values():
        rel = path.relative_to(REPO)
        if rel.parts[0] == "checks" and len(rel.parts) > 2:
            continue  # one module per check: docs/checks.md lists them
        folder = rel.parent.as_posix() + "/"
        if folder not in rows:
            missing.append(f"{folder} (no row)")
        elif path.name != "__init__.py" and not re.search(rf"`{re.escape(path.stem)}(\.py)?[`.( ]", rows[folder]):
            missing.append(str(rel))
    assert sorted(set(missing)) == []

