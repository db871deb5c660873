"""The package's modules import each other without a cycle: the layout's layers (core, report,
cli, preflight, probe's launch / inrank / analysis) only lean one way. Function-level imports
count too: a cycle hidden in a function is still a cycle a reader has to untangle."""

from __future__ import annotations

import ast
from pathlib import Path

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


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    edges = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
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
# codec, the run dir's file names and secret redaction. Never the launcher side or the
# analysis: they pull in psutil, rich and the checks, which cost every rank start-up time and
# could fail inside the script.
INRANK_MAY_IMPORT = ("ddpdoctor.probe.inrank", "ddpdoctor.probe.records.telemetry", "ddpdoctor.probe.records.jsonl",
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
    # both depend on probe/run_model/, neither on the other. run_model/ not even through a third
    # module; launch/ not itself (it reaches regression.py only through options.py's --baseline).
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    analysis = lambda found: sorted(e for e in found if e.startswith("ddpdoctor.probe.analysis"))
    wrong = {m: analysis(graph[m]) for m in modules if m.startswith("ddpdoctor.probe.launch")}
    wrong.update({m: analysis(_reaches(m, graph)) for m in modules if m.startswith("ddpdoctor.probe.run_model")})
    assert {m: es for m, es in wrong.items() if es} == {}


def test_the_analysis_never_imports_the_launcher_side():
    # The other half of the rule: analysis/ reads a run dir through run_model/ and judges it
    # without a job (`ddpdoctor report`), so it never imports launch/.
    modules = _modules()
    wrong = {m: sorted(e for e in _imports(m, path, modules) if e.startswith("ddpdoctor.probe.launch"))
             for m, path in modules.items() if m.startswith("ddpdoctor.probe.analysis")}
    assert {m: es for m, es in wrong.items() if es} == {}
