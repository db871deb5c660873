"""DDP806's fixes: a save every rank reaches goes under the file's global-rank-0 test; a save
under a per-node test (`local_rank == 0`, `rank % ngpus_per_node == 0`) gets the global test in
that test's place."""

from __future__ import annotations

import ast
import re

from ddpdoctor.core.findings import Finding
from ddpdoctor.lint.fix.edits import Edit, apply
from ddpdoctor.lint.fix.rank_zero import ZeroTest, is_global_rank, zero_tests
from ddpdoctor.lint.fix.syntax import NoFix, Parsed, Proposal
from ddpdoctor.lint.nodes import walk
from ddpdoctor.lint.patterns import dotted, is_const, last_name

CODE = "DDP806"
LOCAL = re.compile(r"local_?rank|LOCALID|local_process_index|get_local_rank", re.IGNORECASE)


def propose(finding: Finding, parsed: Parsed) -> list[Proposal]:
    """The edits to try, best first, each with a line saying what it does; NoFix says why none."""
    if finding.evidence.get("per_node"):
        return _per_node(finding, parsed)
    return _every_rank(finding, parsed)


def _save_call(line: int, parsed: Parsed) -> ast.Call:
    calls = [c for c in parsed.calls_on_line(line, {"save"})]
    if len(calls) != 1:
        raise NoFix(f"line {line} does not hold exactly one save call")
    return calls[0]


def _every_rank(finding: Finding, parsed: Parsed) -> list[Proposal]:
    """Each write of the finding's block (its line and the evidence's `also` lines) under the
    zero test; writes one right after the other share one `if`."""
    lines = [finding.location.line, *[n for n in finding.evidence.get("also", []) if isinstance(n, int)]]
    stmts = []
    for line in lines:
        call = _save_call(line, parsed)
        stmt = parsed.statement(call)
        if not (isinstance(stmt, ast.Expr) and stmt.value is call):
            raise NoFix("the save's value is used (`x = torch.save(...)`, `return ...`): a guard would leave it unset")
        stmts.append(stmt)
    runs: list[list] = []
    for stmt in sorted(stmts, key=lambda s: s.lineno):
        if runs and _next_to(parsed, runs[-1][-1], stmt):
            runs[-1].append(stmt)
        else:
            runs.append([stmt])
    unit = parsed.indent_unit()
    nl = parsed.source.newline()
    out = []
    for test in zero_tests(parsed, stmts[0]):
        edits = []
        for run in runs:
            at = parsed.source.line_start(run[0].lineno)
            edits += [Edit(at, at, f"{parsed.indent(run[0])}if {test.zero}:{nl}")]
            edits += parsed.reindent(run[0].lineno, run[-1].end_lineno, unit)
        out.append((edits, f"save on global rank 0 only: `if {test.zero}:`"))
    return out


def _next_to(parsed: Parsed, before: ast.stmt, after: ast.stmt) -> bool:
    """`after` is the statement right after `before` in the same block (blank or comment lines
    between them are fine)."""
    if parsed.indent(before) != parsed.indent(after):
        return False
    between = parsed.source.text.splitlines()[before.end_lineno:after.lineno - 1]
    return all(not ln.strip() or ln.strip().startswith("#") for ln in between)


def _per_node(finding: Finding, parsed: Parsed) -> list[Proposal]:
    why = str(finding.evidence.get("why") or "")
    guard = why[len("under "):] if why.startswith("under ") else why
    tests = [n.test for n in walk(parsed.tree) if isinstance(n, ast.If)
             and guard in (_unparse(n.test), f"not ({_unparse(n.test)})", f"not {_unparse(n.test)}")]
    if len(tests) != 1:
        raise NoFix(f"the per-node test `{guard}` is written {len(tests) or 'no'} time(s) in the file: "
                    "which to change is ambiguous" if tests else f"the per-node test `{guard}` was not found")
    test = tests[0]
    if any(isinstance(n, ast.Constant) and n.value == -1 for n in walk(test)) or \
            any(isinstance(n, ast.UnaryOp) and is_const(n, -1) for n in walk(test)):
        raise NoFix("the test also covers a run without a process group (rank -1): the global test "
                    "would have to keep that case")
    atoms = [n for n in walk(test) if isinstance(n, ast.Compare) and _per_node_atom(n)]
    if not atoms:  # `self.rank = int(os.environ["LOCAL_RANK"])`: the lint knew it by data flow
        atoms = [n for n in walk(test) if isinstance(n, ast.Compare) and len(n.ops) == 1
                 and any(is_global_rank(s) for s in (n.left, *n.comparators))
                 and any(is_const(s, 0) for s in (n.left, *n.comparators))]
    if not atoms:
        raise NoFix(f"no per-node comparison (`local_rank == 0`, `rank % gpus == 0`) in `{guard}`")
    out = []
    written = {parsed.source.segment(a) for a in atoms}
    for zero in zero_tests(parsed, parsed.statement(test)):
        if zero.zero in written:
            continue  # the per-node test itself, spelled like a global one
        edits = [_replace(parsed, atom, zero) for atom in atoms]
        out.append((edits, _shown(parsed, atoms, edits)))
    modulo = [_modulo_fix(parsed, a) for a in atoms]
    if all(m is not None for m in modulo):  # `rank % gpus == 0` -> `rank == 0`: the global rank is right there
        out.insert(0, (modulo, _shown(parsed, atoms, modulo)))
    return out


def _shown(parsed: Parsed, atoms: list[ast.Compare], edits: list[Edit]) -> str:
    parts = []
    for atom, edit in zip(atoms, edits):
        start, end = parsed.source.span(atom)
        after = apply(parsed.source.text, [edit])[start:end + len(edit.text) - (edit.end - edit.start)]
        parts.append(f"`{parsed.source.segment(atom)}` -> `{after}`")
    return "test the global rank, not the node's: " + "; ".join(parts)


def _unparse(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001 - odd trees; such a test is simply not matched
        return ""


def _per_node_atom(node: ast.Compare) -> bool:
    sides = [node.left, *node.comparators]
    if any(isinstance(s, ast.BinOp) and isinstance(s.op, ast.Mod) and is_global_rank(s.left) for s in sides):
        return True
    return any(LOCAL.search(dotted(s) or (last_name(s) if isinstance(s, ast.Call) else "") or "") for s in sides)


def _replace(parsed: Parsed, atom: ast.Compare, zero: ZeroTest) -> Edit:
    """`local_rank == 0` -> the zero test; `local_rank != 0` / `> 0` -> its negation."""
    if len(atom.ops) != 1:
        raise NoFix(f"`{parsed.source.segment(atom)}` chains comparisons")
    op, left, right = atom.ops[0], atom.left, atom.comparators[0]
    if is_const(left, 0):
        left, right = right, left
        op = {ast.Gt: ast.Lt(), ast.Lt: ast.Gt()}.get(type(op), op)
    if not is_const(right, 0):
        raise NoFix(f"`{parsed.source.segment(atom)}` does not compare with 0")
    start, end = parsed.source.span(atom)
    if isinstance(op, ast.Eq):
        return Edit(start, end, zero.zero)
    if isinstance(op, (ast.NotEq, ast.Gt)):
        return Edit(start, end, f"({zero.nonzero})" if zero.nonzero.startswith("not ") else zero.nonzero)
    raise NoFix(f"`{parsed.source.segment(atom)}` is not an == 0 / != 0 test")


def _modulo_fix(parsed: Parsed, atom: ast.Compare):
    """`rank % ngpus_per_node == 0` -> `rank == 0` (its left side is the global rank)."""
    sides = [atom.left, *atom.comparators]
    if len(atom.ops) != 1 or not isinstance(atom.ops[0], ast.Eq):
        return None
    mod = next((s for s in sides if isinstance(s, ast.BinOp) and isinstance(s.op, ast.Mod)), None)
    other = next((s for s in sides if s is not mod), None)
    if mod is None or not is_const(other, 0) or not is_global_rank(mod.left):
        return None
    start, end = parsed.source.span(mod)
    return Edit(start, end, parsed.source.segment(mod.left))
