"""Which statements of the user's script (and its local modules) ran on some rank: the share,
and the blocks never seen with their line ranges (inrank/coverage.py records the lines).

Statements come from the source's AST: a simple statement ran when a line of it ran; a compound
one (if/for/def/class/with/try) when its header ran or anything inside it did. Docstrings and
global/nonlocal declarations are not statements here (they run no code). A block is a run of
sibling statements none of which ran: "150-156 in Trainer._resume (7 statements)".
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from typing import Optional

from ddpdoctor.core.paths import display_path
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.run_model.loaded_run import RunModel

MAX_SOURCE_BYTES = 4 * 1024 * 1024


@dataclass
class Block:
    """Sibling statements, none of which ran."""

    start: int
    end: int
    statements: int
    where: str  # the enclosing function or class ("" at module level)

    def to_list(self) -> list:
        return [self.start, self.end, self.statements, self.where]


@dataclass
class FileCoverage:
    path: str  # absolute
    statements: int
    ran: int
    blocks: list[Block] = field(default_factory=list)

    @property
    def share(self) -> float:
        return self.ran / self.statements if self.statements else 1.0


@dataclass
class CoverageSummary:
    files: list[FileCoverage]  # the script first
    executed: dict[str, set[int]]  # absolute path -> lines seen on any rank
    traced_steps: Optional[int]  # steps that ran with the tracer on (None: every step, "full")
    steps: int
    worker_loaders: int  # DataLoaders with num_workers > 0: their workers' lines are not seen


def executed_lines(run: RunModel) -> dict[str, set[int]]:
    """Every line any rank (or the script's main process) reported, by absolute path."""
    lines: dict[str, set[int]] = {}
    sources = list(run.ranks.values()) + ([run.main] if run.main is not None else [])
    for rank_run in sources:
        for record in rank_run.of(tm.Coverage):
            for path, numbers in (record.lines or {}).items():
                lines.setdefault(path, set()).update(numbers)
    return lines


def _header_end(stmt: ast.stmt) -> int:
    """The last line of a compound statement's header: the line before its first child."""
    children = [c for name in ("body", "orelse", "finalbody", "handlers", "cases")
                for c in (getattr(stmt, name, None) or []) if hasattr(c, "lineno")]
    if not children:
        return getattr(stmt, "end_lineno", None) or stmt.lineno
    return max(stmt.lineno, min(c.lineno for c in children) - 1)


def _first_line(stmt: ast.stmt) -> int:
    decorators = getattr(stmt, "decorator_list", None) or []
    return min([stmt.lineno] + [d.lineno for d in decorators])


def _bodies(stmt: ast.AST) -> list[list[ast.stmt]]:
    bodies = []
    for name in ("body", "orelse", "finalbody"):
        value = getattr(stmt, name, None)
        if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
            bodies.append(value)
    for handler in getattr(stmt, "handlers", None) or []:
        bodies.append(handler.body)
    for case in getattr(stmt, "cases", None) or []:
        bodies.append(case.body)
    return bodies


def _countable(body: list[ast.stmt], owner: ast.AST) -> list[ast.stmt]:
    kept = []
    for index, stmt in enumerate(body):
        if isinstance(stmt, (ast.Global, ast.Nonlocal)):
            continue
        docstring = (index == 0 and isinstance(owner, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                     and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
                     and isinstance(stmt.value.value, str))
        if not docstring:
            kept.append(stmt)
    return kept


class _Walker:
    def __init__(self, lines: set[int]) -> None:
        self.lines = lines
        self.total = 0
        self.ran = 0
        self.blocks: list[Block] = []

    def ran_stmt(self, stmt: ast.stmt) -> bool:
        end = _header_end(stmt) if _bodies(stmt) else (getattr(stmt, "end_lineno", None) or stmt.lineno)
        if any(n in self.lines for n in range(_first_line(stmt), end + 1)):
            return True
        return any(self.ran_stmt(child) for body in _bodies(stmt) for child in _countable(body, stmt))

    def count(self, stmt: ast.stmt) -> int:
        return 1 + sum(self.count(child) for body in _bodies(stmt) for child in _countable(body, stmt))

    def walk(self, body: list[ast.stmt], owner: ast.AST, where: str) -> None:
        pending: Optional[Block] = None
        for stmt in _countable(body, owner):
            if not self.ran_stmt(stmt):
                size = self.count(stmt)
                self.total += size
                end = getattr(stmt, "end_lineno", None) or stmt.lineno
                if pending is None:
                    pending = Block(_first_line(stmt), end, size, where)
                else:
                    pending.end, pending.statements = end, pending.statements + size
                continue
            if pending is not None:
                self.blocks.append(pending)
                pending = None
            self.total += 1
            self.ran += 1
            inner = where
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = f"{where}.{stmt.name}" if where else stmt.name
            for child_body in _bodies(stmt):
                self.walk(child_body, stmt, inner)
        if pending is not None:
            self.blocks.append(pending)


def file_coverage(path: str, lines: set[int]) -> Optional[FileCoverage]:
    """The statements of one file and which ran; None when it cannot be read or parsed."""
    try:
        if os.path.getsize(path) > MAX_SOURCE_BYTES:
            return None
        with open(path, encoding="utf-8", errors="replace") as handle:
            tree = ast.parse(handle.read(), filename=path)
        walker = _Walker(lines)
        walker.walk(tree.body, tree, "")
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # nested deeper than the interpreter's limits: no coverage, not a crash
    walker.blocks.sort(key=lambda b: b.start)
    return FileCoverage(path, walker.total, walker.ran, walker.blocks)


def script_path(run: RunModel) -> Optional[str]:
    """The script's absolute path as the ranks recorded it (their Start record), else meta's."""
    for rank_run in run.ranks.values():
        start = rank_run.first(tm.Start)
        if start is not None and start.script and os.path.isfile(start.script):
            return os.path.abspath(start.script)
    if not run.meta.module and os.path.isfile(run.meta.script):
        return os.path.abspath(run.meta.script)
    return None


def summarize(run: RunModel) -> Optional[CoverageSummary]:
    """None when no rank traced lines (coverage off, an old run, a script with its own tracer)."""
    executed = executed_lines(run)
    if not executed:
        return None
    script = script_path(run)
    order = sorted(executed, key=lambda p: (not (script and os.path.abspath(p) == script), p))
    files = [f for f in (file_coverage(p, executed[p]) for p in order) if f is not None]
    finals = [r for rr in run.ranks.values() for r in rr.of(tm.Coverage) if r.final]
    traced = [r.traced_steps for r in finals]
    traced_steps = None if finals and all(t is None for t in traced) else max((t for t in traced if t is not None), default=0)
    workers = {(rank, loader.loader_id) for rank, rr in run.ranks.items() for loader in rr.of(tm.Loader)
               if loader.num_workers > 0}
    steps = max((r.steps for r in run.ranks.values()), default=0)
    return CoverageSummary(files, executed, traced_steps, steps, len(workers))


MAX_BLOCKS_IN_NOTE = 3
MAX_TABLE_ROWS = 15


def report_parts(run: RunModel) -> tuple[list[str], dict, list]:
    """What the probe reached, for the report: notes (the boundary line, step-interval hints,
    the coverage summary), metrics ("boundaries", "coverage") and a table of the blocks not seen
    when there are more than fit in a note. Empty where nothing was recorded."""
    from ddpdoctor.probe.analysis import boundaries
    from ddpdoctor.report.model import Table

    notes: list[str] = []
    metrics: dict = {}
    tables: list = []
    summary = summarize(run)
    script = script_path(run)
    executed = None
    if summary is not None and script is not None:
        executed = next((lines for path, lines in summary.executed.items()
                         if os.path.abspath(path) == script), set())
    steps = max((r.steps for r in run.ranks.values()), default=0)
    if steps:
        reach = boundaries.summarize(run, script)
        notes.append(boundaries.line(reach, executed, run.meta.steps_per_epoch, run.meta.max_steps))
        script_arg = run.meta.script if not run.meta.module else f"-m {run.meta.script}"
        notes.extend(boundaries.interval_hints(reach, executed, script_arg, steps))
        metrics["boundaries"] = reach.to_dict(executed)
    if summary is None or not summary.files:
        return notes, metrics, tables
    for index, file in enumerate(summary.files):
        if index > 0 and not file.blocks:
            continue  # a local module that ran whole needs no line
        shown = ", ".join(_block_text(b) for b in file.blocks[:MAX_BLOCKS_IN_NOTE])
        more = len(file.blocks) - MAX_BLOCKS_IN_NOTE
        tail = f"; not seen: {shown}" if file.blocks else ""
        if more > 0:
            tail += f" and {more} more block{'s' if more != 1 else ''} (table below)"
        notes.append(f"coverage: {display_path(file.path)}: {file.ran} of {file.statements} statements ran "
                     f"on some rank ({file.share:.0%}){tail}")
    why = []
    if summary.traced_steps is not None:
        why.append(f"lines traced in the first 2 steps and from each epoch end, evaluation or "
                   f"checkpoint to the next step ({summary.traced_steps} of {summary.steps} steps): "
                   "a branch that ran only in between (`if step % 10 == 0: print(...)`) counts as "
                   "not seen; DDPDOCTOR_COVERAGE=full traces every step (slower)")
    if any((r.last(tm.End) is not None and r.last(tm.End).reason == "max_steps") for r in run.ranks.values()):
        why.append("the probe stopped the ranks at --max-steps, so code after the training loop did not run")
    if summary.worker_loaders:
        why.append("lines that ran only in DataLoader worker processes (num_workers > 0) are not seen")
    if why:
        notes.append("coverage: " + "; ".join(why))
    rows = [[display_path(f.path), f"{b.start}-{b.end}" if b.end != b.start else str(b.start), b.statements,
             b.where or "(module)"]
            for f in summary.files for b in f.blocks]
    if any(len(f.blocks) > MAX_BLOCKS_IN_NOTE for f in summary.files):
        tables.append(Table("Code the probe did not see (no rank ran it)", ["file", "lines", "statements", "in"],
                            rows[:MAX_TABLE_ROWS] + ([[f"... {len(rows) - MAX_TABLE_ROWS} more", "", "", ""]]
                                                     if len(rows) > MAX_TABLE_ROWS else [])))
    metrics["coverage"] = {
        "mode": "full" if summary.traced_steps is None else "boundaries",
        "traced_steps": summary.traced_steps,
        "steps": summary.steps,
        "files": [{"file": display_path(f.path), "statements": f.statements, "ran": f.ran,
                   "share": round(f.share, 4), "not_seen": [b.to_list() for b in f.blocks]}
                  for f in summary.files],
    }
    return notes, metrics, tables


def _block_text(block: Block) -> str:
    lines = f"{block.start}-{block.end}" if block.end != block.start else f"{block.start}"
    where = f" in {block.where}" if block.where else ""
    return f"{lines}{where} ({block.statements} statement{'s' if block.statements != 1 else ''})"
