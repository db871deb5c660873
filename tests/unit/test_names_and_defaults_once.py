"""torch.distributed's names (core/torch_names.py) and the tool's defaults (core/defaults.py) are
said once: no module spells a second list of collective names, the rendezvous port, the bus
factor or GB again, and the CLI and the Python API take their defaults from the one module.
Read from the source (AST), so comments and docstrings may still mention them."""

from __future__ import annotations

import ast
import functools
import inspect
from pathlib import Path

from ddpdoctor.core import defaults, torch_names
from tests.helpers.source_tree import parsed, walked

REPO = Path(__file__).resolve().parents[2]
NAMES_HOME = REPO / "ddpdoctor" / "core" / "torch_names.py"
DEFAULTS_HOME = REPO / "ddpdoctor" / "core" / "defaults.py"
# torch's own names, every set of them: a literal holding several is a second list.
TORCH_NAMES = set(torch_names.COLLECTIVES + torch_names.SINGLE_TENSOR_FORMS + torch_names.LEGACY_COLLECTIVES
                  + torch_names.GROUP_CREATION + torch_names.SETUP_WAITS + torch_names.BLOCKING_P2P
                  + torch_names.ASYNC_P2P + torch_names.P2P_BATCH)
# A framework's own method list (Lightning's, Fabric's, Accelerate's) shares up to four names
# with torch (all_gather, barrier, reduce, broadcast); a copy of one of torch's lists shares more.
MOST_SHARED = 4


@functools.cache
def _sources() -> dict[Path, ast.AST]:
    """Every module's tree, parsed when a test first asks (3.6 CPU-s: not at collection, which
    every xdist worker and the serial run repeat)."""
    found = {}
    for root in (REPO / "ddpdoctor", REPO / "checks"):
        for path in root.rglob("*.py"):
            found[path] = parsed(path)
    return found


def _where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(REPO)}:{node.lineno}"


def test_no_module_but_torch_names_spells_a_list_of_torch_collectives():
    copies = []
    for path, tree in _sources().items():
        if path == NAMES_HOME:
            continue
        for node in walked(path):
            if isinstance(node, (ast.Set, ast.List, ast.Tuple)):
                names = {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
                if len(names & TORCH_NAMES) > MOST_SHARED:
                    copies.append(f"{_where(path, node)}: {sorted(names & TORCH_NAMES)}")
    assert copies == []


def test_the_finder_of_a_second_list_finds_one():
    tree = ast.parse('X = {"all_reduce", "broadcast", "barrier", "gather", "scatter"}')
    literal = next(n for n in ast.walk(tree) if isinstance(n, ast.Set))
    assert len({e.value for e in literal.elts} & TORCH_NAMES) > MOST_SHARED


def _is_bus_factor(node: ast.AST) -> bool:
    """`2 * (n - 1) / n` however the operands are named."""
    return (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)
            and isinstance(node.left, ast.BinOp) and isinstance(node.left.op, ast.Mult)
            and any(isinstance(side, ast.Constant) and side.value == 2 for side in (node.left.left, node.left.right))
            and any(isinstance(side, ast.BinOp) and isinstance(side.op, ast.Sub)
                    and isinstance(side.right, ast.Constant) and side.right.value == 1
                    for side in (node.left.left, node.left.right)))


def test_the_bus_factor_and_gb_are_computed_in_torch_names_only():
    found = []
    for path, tree in _sources().items():
        if path == NAMES_HOME:
            continue
        for node in walked(path):
            if _is_bus_factor(node):
                found.append(f"{_where(path, node)}: 2(n-1)/n")
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "GB" for t in node.targets):
                found.append(f"{_where(path, node)}: GB =")
    assert found == []
    assert _is_bus_factor(ast.parse("2 * (world - 1) / world", mode="eval").body)
    assert torch_names.bus_factor(8) == 1.75 and torch_names.bus_factor(1) == 0.0


def test_the_rendezvous_port_is_a_number_in_defaults_only():
    found = [_where(path, node) for path, tree in _sources().items() if path != DEFAULTS_HOME
             for node in walked(path) if isinstance(node, ast.Constant) and node.value == defaults.MASTER_PORT]
    assert found == []


def _number_defaults(path: Path) -> list[str]:
    """Numbers written as a default in the signatures of a CLI module or the Python API, and as
    the default of a typer.Option: each should be a name from core/defaults.py."""
    found = []
    for node in walked(path):
        values = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            values = node.args.defaults + [d for d in node.args.kw_defaults if d is not None]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "Option" and node.args:
            values = [node.args[0]]
        for value in values:
            if (isinstance(value, ast.Constant) and isinstance(value.value, (int, float))
                    and not isinstance(value.value, bool)):
                found.append(f"{_where(path, value)}: {value.value!r}")
    return found


def test_the_cli_and_the_api_write_no_number_of_their_own_as_a_default():
    modules = [REPO / "ddpdoctor" / "api.py", REPO / "ddpdoctor" / "cli" / "probe.py",
               REPO / "ddpdoctor" / "cli" / "preflight.py"]
    assert [line for path in modules for line in _number_defaults(path)] == []


def test_the_options_the_cli_and_the_api_agree_on_every_probe_default():
    from ddpdoctor.api import run_probe
    from ddpdoctor.cli.probe import probe_command
    from ddpdoctor.probe.options import ProbeOptions

    options = ProbeOptions("train.py")
    api = inspect.signature(run_probe).parameters
    cli = {name: p.default.default for name, p in inspect.signature(probe_command).parameters.items()}
    assert (options.nproc_per_node, api["nproc"].default) == (defaults.NPROC_PER_NODE,) * 2
    for field, api_name, cli_name, value in (
            ("max_steps", "max_steps", "max_steps", defaults.MAX_STEPS),
            ("steps_per_epoch", "steps_per_epoch", "steps_per_epoch", defaults.STEPS_PER_EPOCH),
            ("timeout_s", "timeout", "timeout", defaults.TIMEOUT_S),
            ("log_limit_mb", "log_limit", "log_limit", defaults.LOG_LIMIT_MB)):
        assert (getattr(options, field), api[api_name].default, cli[cli_name]) == (value,) * 3, field
