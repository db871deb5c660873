"""Which boundary paths the probe reached - epoch ends, evaluation, checkpoint save and load -
and, for those it did not, whether the script has one and how to reach it.

Run time: EpochEnd records (batches.py) and Boundary records (inrank/boundaries.py). Source: a
small AST scan of the script for `.eval()`, `torch.no_grad()` / `inference_mode()`,
`torch.save` / `torch.load` (and `save_checkpoint` / `load_checkpoint` calls), and for the
`if step % interval == 0:` branches that hold an evaluation or a checkpoint, so that the report
says "not reached" (with the line) apart from "none in the script", and how to reach a
step-interval evaluation within the probe's steps: the script's own flag after `--`.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field
from typing import Optional

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.run_model.loaded_run import RunModel

KINDS = ("eval", "save", "load")
_WORDS = {"eval": "evaluation", "save": "checkpoint save", "load": "checkpoint load"}
_BOUNDARY_NAMES = re.compile(r"eval|valid|estimate_loss|save|checkpoint|test", re.IGNORECASE)


@dataclass
class Occurrence:
    """A boundary call in the script's source."""

    kind: str  # "eval" | "save" | "load"
    line: int
    text: str  # "model.eval()", "torch.save", ...


@dataclass
class IntervalBranch:
    """`if <counter> % <interval> == 0:` holding a boundary call or a call to a function named
    like one (evaluate, save_checkpoint, estimate_loss)."""

    line: int
    end: int
    counter: str
    interval: str  # the divisor as written: "eval_interval", "args.eval_every", "100"
    flag: Optional[str]  # the script's own option for it, when argparse defines one


@dataclass
class BoundarySummary:
    epoch_ends: int  # training epochs that ended on one rank (the most of any rank)
    truncated: bool  # epochs were cut by --steps-per-epoch
    loaders: bool  # the script iterated a DataLoader
    counts: dict[str, int]  # kind -> Boundary records (most on one rank)
    sites: dict[str, tm.Site]  # kind -> first site
    no_grad: int
    occurrences: list[Occurrence] = field(default_factory=list)
    intervals: list[IntervalBranch] = field(default_factory=list)
    script: Optional[str] = None

    def to_dict(self, executed: Optional[set[int]]) -> dict:
        return {
            "epoch_ends": self.epoch_ends,
            "epochs_truncated": self.truncated,
            **{kind: self.counts.get(kind, 0) for kind in KINDS},
            "no_grad": self.no_grad,
            "not_reached": [{"kind": o.kind, "line": o.line, "text": o.text}
                            for o in self.occurrences if executed is not None and o.line not in executed
                            and not self.counts.get(o.kind)],
            "interval_branches": [{"line": b.line, "interval": b.interval, "flag": b.flag,
                                   "reached": executed is None or b.line + 1 in executed or
                                   any(n in executed for n in range(b.line + 1, b.end + 1))}
                                  for b in self.intervals],
        }


def _call_name(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Attribute):
        base = func.value.id if isinstance(func.value, ast.Name) else ""
        return f"{base}.{func.attr}" if base else f".{func.attr}"
    if isinstance(func, ast.Name):
        return func.id
    return ""


def _kind_of(name: str) -> Optional[str]:
    if name.endswith(".eval") or name in ("torch.no_grad", "torch.inference_mode"):
        return "eval"
    if name in ("torch.save", "save_checkpoint") or name.endswith(".save_checkpoint"):
        return "save"
    if name in ("torch.load", "load_checkpoint") or name.endswith(".load_checkpoint"):
        return "load"
    return None


def _expr_text(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001 - a display string only
        return "?"


def _flags(tree: ast.AST) -> dict[str, str]:
    """argparse dests -> the option string that sets them (`--eval-interval`)."""
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _call_name(node).endswith(".add_argument"):
            options = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
                       and a.value.startswith("--")]
            dest = next((k.value.value for k in node.keywords if k.arg == "dest"
                         and isinstance(k.value, ast.Constant)), None)
            for option in options:
                found[dest or option[2:].replace("-", "_")] = option
    return found


def scan_source(path: str) -> tuple[list[Occurrence], list[IntervalBranch]]:
    """Boundary calls and step-interval branches of one script; empty when it cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            tree = ast.parse(handle.read(), filename=path)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return [], []
    occurrences = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = _call_name(node)
            kind = _kind_of(name)
            if kind is not None:
                text = f"{name.lstrip('.')}()" if kind == "eval" and name.endswith(".eval") else name.lstrip(".")
                if name.endswith(".eval") and isinstance(node.func, ast.Attribute):
                    text = f"{_expr_text(node.func.value)}.eval()"
                occurrences.append(Occurrence(kind, node.lineno, text))
    flags = _flags(tree)
    intervals = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.If):
            continue
        mods = [n for n in ast.walk(node.test) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod)]
        if not mods:
            continue
        calls = [_call_name(c) for stmt in node.body for c in ast.walk(stmt) if isinstance(c, ast.Call)]
        if not any(_kind_of(c) or _BOUNDARY_NAMES.search(c.split(".")[-1]) for c in calls if c):
            continue
        divisor = mods[0].right
        interval = _expr_text(divisor)
        key = divisor.attr if isinstance(divisor, ast.Attribute) else (divisor.id if isinstance(divisor, ast.Name) else "")
        end = getattr(node.body[-1], "end_lineno", None) or node.body[-1].lineno
        intervals.append(IntervalBranch(node.lineno, end, _expr_text(mods[0].left), interval,
                                        flags.get(key) if key else None))
    occurrences.sort(key=lambda o: o.line)
    intervals.sort(key=lambda b: b.line)
    return occurrences, intervals


def summarize(run: RunModel, script: Optional[str]) -> BoundarySummary:
    epoch_ends, truncated, loaders = 0, False, False
    counts: dict[str, int] = {}
    sites: dict[str, tm.Site] = {}
    no_grad = 0
    for rank_run in run.ranks.values():
        loaders = loaders or bool(rank_run.of(tm.Loader))
        began = {(l.loader_id, l.epoch): l for l in rank_run.of(tm.Loader)}
        step_times = [s.t for s in rank_run.of(tm.Step)]
        epochs: set[int] = set()  # the step each trained epoch began at
        for end in rank_run.of(tm.EpochEnd):
            start = began.get((end.loader_id, end.epoch))
            # A training epoch: an optimizer step ran between its first batch and its end. An
            # evaluation pass between training epochs has none.
            if start is not None and any(start.t < t <= end.t for t in step_times):
                # Keyed by where it began: a DataLoader built anew each epoch counts each epoch,
                # loaders iterated side by side (zip) count once.
                epochs.add(start.step)
                truncated = truncated or end.truncated
        epoch_ends = max(epoch_ends, len(epochs))
        rank_counts: dict[str, int] = {}
        for record in rank_run.of(tm.Boundary):
            if record.what == "no_grad":
                continue
            rank_counts[record.what] = rank_counts.get(record.what, 0) + 1
            if record.what not in sites and record.site is not None:
                sites[record.what] = record.site
        no_grad = max(no_grad, sum(1 for r in rank_run.of(tm.Boundary) if r.what == "no_grad"))
        for kind, count in rank_counts.items():
            counts[kind] = max(counts.get(kind, 0), count)
    occurrences, intervals = scan_source(script) if script else ([], [])
    return BoundarySummary(epoch_ends, truncated, loaders, counts, sites, no_grad, occurrences,
                           intervals, script)


def _short(site: tm.Site) -> str:
    return f"{os.path.basename(site.file)}:{site.line}"


def line(summary: BoundarySummary, executed: Optional[set[int]], steps_per_epoch: int,
         max_steps: int) -> str:
    """"boundaries: epoch end ✓ (3 epochs, ...), evaluation ✓ (...), checkpoint save ✓ (...),
    checkpoint load — none in the script"."""
    parts = []
    if summary.epoch_ends:
        cut = f", each cut at {steps_per_epoch} batches by --steps-per-epoch" if summary.truncated else ""
        parts.append(f"epoch end ✓ ({summary.epoch_ends} epoch{'s' if summary.epoch_ends != 1 else ''}{cut})")
    elif summary.loaders:
        parts.append(f"epoch end — not reached (no training epoch ended within {max_steps or '∞'} steps; "
                     f"--steps-per-epoch {steps_per_epoch or 'N'} ends them sooner)")
    else:
        parts.append("epoch end — no DataLoader epochs (the script draws its own batches)")
    name = os.path.basename(summary.script) if summary.script else "the script"
    for kind in KINDS:
        word = _WORDS[kind]
        count = summary.counts.get(kind, 0)
        if count:
            where = f"{_short(summary.sites[kind])}, " if kind in summary.sites else ""
            parts.append(f"{word} ✓ ({where}{count}×)")
            continue
        if kind == "eval" and summary.no_grad:
            parts.append(f"{word} ✓ (torch.no_grad() blocks, {summary.no_grad}×; no model.eval())")
            continue
        found = [o for o in summary.occurrences if o.kind == kind]
        if not found:
            parts.append(f"{word} — none in {name}")
        elif executed is None:
            parts.append(f"{word} — not reached ({found[0].text} at {name}:{found[0].line})")
        else:
            missed = [o for o in found if o.line not in executed]
            shown = missed[0] if missed else found[0]
            parts.append(f"{word} — not reached ({shown.text} at {name}:{shown.line} never ran)")
    return "boundaries: " + ", ".join(parts)


def interval_hints(summary: BoundarySummary, executed: Optional[set[int]], script_arg: str,
                   steps: int) -> list[str]:
    """How to reach a step-interval evaluation or checkpoint the probe's steps did not reach."""
    hints = []
    name = os.path.basename(summary.script) if summary.script else "the script"
    for branch in summary.intervals:
        body_lines = range(branch.line + 1, branch.end + 1)
        if executed is None or any(n in executed for n in body_lines):
            continue
        if branch.flag:
            how = (f"pass the script's own arguments after `--`: `ddpdoctor probe {script_arg} -- "
                   f"{branch.flag} 2`")
        else:
            how = (f"make {branch.interval} smaller than {steps or 'the probe'} steps for the probe "
                   f"(if the script reads it from the command line: `ddpdoctor probe {script_arg} -- "
                   f"--{branch.interval.split('.')[-1]}=2`), or raise --max-steps past it")
        hints.append(f"the branch at {name}:{branch.line} (`{branch.counter} % {branch.interval} == 0`: "
                     f"evaluation or checkpointing) never ran in {steps} steps; to reach it, {how}")
    return hints
