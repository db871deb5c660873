"""DDP805's fix (plain DDP): the micro-steps that do not step the optimizer run their forward and
backward inside `model.no_sync()`, the last one (or the one that steps) in `nullcontext()`:

    for micro_step in range(accum):                     for i, (x, y) in enumerate(loader):
        with (model.no_sync() if micro_step < accum - 1      with (contextlib.nullcontext() if (i + 1) % k == 0
              else contextlib.nullcontext()):                      else model.no_sync()):
            ...forward, backward...                              ...forward, backward...
                                                             if (i + 1) % k == 0:
                                                                 opt.step()

Only those two shapes: where the loop or its test is anything else, no fix, and the line says why."""

from __future__ import annotations

import ast

from ddpdoctor.core.findings import Finding
from ddpdoctor.lint.fix.edits import Edit
from ddpdoctor.lint.fix.syntax import NoFix, Parsed, Proposal, names_read, simple_target
from ddpdoctor.lint.nodes import walk
from ddpdoctor.lint.patterns import dotted, last_name

CODE = "DDP805"
DDP_CLASSES = {"DistributedDataParallel"}
PURE_CALLS = {"len", "min", "max", "int", "abs", "round", "bool"}


def propose(finding: Finding, parsed: Parsed) -> list[Proposal]:
    evidence = finding.evidence
    if evidence.get("framework") == "accelerate":
        raise NoFix("an Accelerate script: `with accelerator.accumulate(model):` is its way (plain DDP only)")
    if evidence.get("pattern") == "sync_flag_after_forward":
        raise NoFix("the sync flag is set after the forward: moving it before is a reorder of the user's "
                    "statements, not a mechanical edit")
    loop = _loop(evidence.get("loop"), parsed)
    model = _model(parsed, loop)
    nullcontext, imports = _nullcontext(parsed)
    if evidence.get("pattern") == "micro_step_loop":
        wrapped, context = _micro_step(parsed, loop, model, nullcontext)
    else:
        wrapped, context = _conditional(parsed, loop, model, nullcontext, evidence.get("step"))
    first, last = wrapped[0], wrapped[-1]
    lead = parsed.indent(first)
    for stmt in wrapped:
        parsed.indent(stmt)
    at = parsed.source.line_start(first.lineno)
    edits = [Edit(at, at, f"{lead}with {context}:{parsed.source.newline()}")]
    edits += parsed.reindent(first.lineno, last.end_lineno, parsed.indent_unit()) + imports
    return [(edits, f"skip the gradient all-reduce on the micro-steps that do not step: `with {context}:`")]


def _loop(where, parsed: Parsed) -> ast.For:
    file, _, line = str(where or "").rpartition(":")
    loops = [n for n in walk(parsed.tree) if isinstance(n, ast.For) and str(n.lineno) == line] \
        if file == parsed.display else []
    if len(loops) != 1:
        raise NoFix("the accumulation loop is not a `for` loop of this file")
    return loops[0]


def _model(parsed: Parsed, loop: ast.For) -> str:
    """The DDP model the loop's forward calls, by the name it was assigned to."""
    ddp_names = set(DDP_CLASSES)
    for stmt in parsed.top_imports():
        if isinstance(stmt, ast.ImportFrom):
            ddp_names.update(a.asname or a.name for a in stmt.names if a.name in DDP_CLASSES)
    models = set()
    for node in walk(parsed.tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and \
                last_name(node.value.func) in ddp_names:
            models.update(t for t in map(simple_target, node.targets) if t)
    called = {dotted(n.func) for s in loop.body for n in walk(s) if isinstance(n, ast.Call)} & models
    if len(called) != 1:
        raise NoFix("the DDP model's forward is not called in the loop's body (it runs in a helper, or "
                    "the model is not assigned from DistributedDataParallel(...) in this file)"
                    if not called else "the loop calls several DDP models")
    return called.pop()


def _nullcontext(parsed: Parsed) -> tuple[str, list[Edit]]:
    name = parsed.imported_as("nullcontext", ("contextlib",))
    if name:
        return f"{name}()", []
    alias = parsed.module_alias("contextlib")
    if alias:
        return f"{alias}.nullcontext()", []
    if "contextlib" in parsed.bound_in(parsed.tree, 10 ** 9):
        raise NoFix("the file binds the name contextlib to something else")
    return "contextlib.nullcontext()", [parsed.add_import("import contextlib")]


def _micro_step(parsed: Parsed, loop: ast.For, model: str, nullcontext: str):
    it = loop.iter
    if not (isinstance(loop.target, ast.Name) and isinstance(it, ast.Call) and last_name(it.func) == "range"
            and len(it.args) == 1 and not it.keywords):
        raise NoFix("the micro-step loop is not `for i in range(K):`: which micro-step is the last is not plain")
    count = parsed.source.segment(it.args[0])
    if not isinstance(it.args[0], (ast.Name, ast.Attribute, ast.Constant)):
        count = f"({count})"
    context = f"({model}.no_sync() if {loop.target.id} < {count} - 1 else {nullcontext})"
    if loop.body[0].lineno == loop.lineno:
        raise NoFix("the micro-step loop keeps its body on the `for` line")
    return loop.body, context


def _conditional(parsed: Parsed, loop: ast.For, model: str, nullcontext: str, step):
    _, _, line = str(step or "").rpartition(":")
    ifs = [i for i, s in enumerate(loop.body) if isinstance(s, ast.If)
           and line.isdigit() and s.lineno <= int(line) <= s.end_lineno]
    if len(ifs) != 1:
        raise NoFix("the optimizer step is not under an `if` directly in the loop's body")
    index = ifs[0]
    test = loop.body[index].test
    forward = [i for i, s in enumerate(loop.body[:index])
               if any(isinstance(n, ast.Call) and dotted(n.func) == model for n in walk(s))]
    backward = [i for i, s in enumerate(loop.body[:index])
                if any(isinstance(n, ast.Call) and last_name(n.func) == "backward" for n in walk(s))]
    if not forward or not backward or backward[-1] < forward[0]:
        raise NoFix("the forward and the backward are not statements of the loop's body before the step's `if`")
    wrapped = loop.body[forward[0]:backward[-1] + 1]
    calls = {last_name(n.func) for n in walk(test) if isinstance(n, ast.Call)}
    if calls - PURE_CALLS:
        raise NoFix(f"the step's test `{parsed.source.segment(test)}` calls functions: evaluating it earlier "
                    "may not give the same answer")
    assigned = {n.id for s in loop.body[forward[0]:index] for n in walk(s)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    if names_read(test) & assigned:
        raise NoFix(f"the step's test `{parsed.source.segment(test)}` reads "
                    f"{', '.join(sorted(names_read(test) & assigned))}, set after the forward: "
                    "its answer is not known before it")
    context = f"({nullcontext} if {parsed.source.segment(test)} else {model}.no_sync())"
    return wrapped, context
