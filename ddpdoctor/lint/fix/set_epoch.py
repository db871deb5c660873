"""DDP804's fix: `sampler.set_epoch(epoch)` as the first line of the epoch loop's body, or the
epoch variable in place of the constant handed to set_epoch."""

from __future__ import annotations

import ast

from ddpdoctor.core.findings import Finding
from ddpdoctor.lint.fix.edits import Edit
from ddpdoctor.lint.fix.syntax import (EPOCH_NAME, NoFix, Parsed, Proposal, epoch_loop, insert_line_before,
                                      names_read)
from ddpdoctor.lint.nodes import walk
from ddpdoctor.lint.patterns import dotted

CODE = "DDP804"


def propose(finding: Finding, parsed: Parsed) -> list[Proposal]:
    """The edits and a line saying what they do; NoFix says why none."""
    name = str(finding.evidence.get("sampler") or "")
    if finding.evidence.get("constant"):
        return [_constant(finding, parsed)]
    if finding.evidence.get("once") and finding.evidence.get("sampler_line") is None:
        raise NoFix("the sampler is made in another file than its lone set_epoch call")
    # (the sampler's line where the finding points at its lone set_epoch call)
    made_at = finding.evidence.get("sampler_line") or finding.location.line
    edits = [insert(parsed, int(made_at), name)]
    return [(edits, f"call {name}.set_epoch(<epoch>) at the top of the epoch loop")]


def insert(parsed: Parsed, made_at: int, name: str) -> Edit:
    """The set_epoch line for the sampler `name` made at line `made_at`, in the one epoch loop
    that can see it."""
    try:
        expr = ast.parse(name, mode="eval").body
    except SyntaxError:
        raise NoFix(f"the sampler has no name a line can use (`{name}`)") from None
    if dotted(expr) is None:
        raise NoFix(f"the sampler has no name a line can use (`{name}`)")
    reads = names_read(expr)
    made = [n for n in walk(parsed.tree) if isinstance(n, ast.stmt) and n.lineno == made_at]
    home = parsed.scope(made[0]) if made else parsed.tree
    klass = _class_of(parsed, made[0]) if made else None
    if "self" in reads:  # an attribute: the epoch loop is in one of the class's methods
        scopes = [n for n in walk(klass) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))] if klass else []
    elif home is parsed.tree:  # a module-level name: every function of the file reads it
        scopes = [home] + [n for n in walk(parsed.tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    else:
        scopes = [home]
    found = []
    for scope in scopes:
        try:
            found.append(epoch_loop(parsed, scope, made_at if scope is home else 0, reads | {name.split(".")[0]}))
        except NoFix:
            continue
    if "self" not in reads and not found and home is not parsed.tree:
        where = getattr(home, "name", "a function")
        raise NoFix(f"`{name}` is made in {where}() and no epoch loop in {where}() reads it: the loop that "
                    "should set its epoch cannot name it (passing it there is not a mechanical edit)")
    if len(found) != 1:
        raise NoFix("no epoch loop (`for epoch in ...`) found where the sampler is in scope" if not found else
                    "several functions hold an epoch loop: which one iterates this sampler is ambiguous")
    loop = found[0]
    if loop.body[0].lineno == loop.lineno:
        raise NoFix(f"the epoch loop at line {loop.lineno} keeps its body on the `for` line")
    if not parsed.visible(reads - {"self"}, loop.body[0]):
        raise NoFix(f"`{name}` is not bound where the epoch loop at line {loop.lineno} runs")
    return insert_line_before(parsed, loop.body[0], f"{name}.set_epoch({loop.target.id})")


def _class_of(parsed: Parsed, node: ast.AST):
    for up in parsed.ancestors(node):
        if isinstance(up, ast.ClassDef):
            return up
    return None


def _constant(finding: Finding, parsed: Parsed) -> Proposal:
    calls = parsed.calls_on_line(finding.location.line, {"set_epoch"})
    if len(calls) != 1 or len(calls[0].args) != 1 or calls[0].keywords:
        raise NoFix("the set_epoch call with a constant is not a plain `x.set_epoch(<constant>)`")
    call = calls[0]
    around = [a for a in parsed.ancestors(call) if isinstance(a, ast.For)]
    loops = [a for a in around if isinstance(a.target, ast.Name) and EPOCH_NAME.search(a.target.id)] or \
        [a for a in around if isinstance(a.target, ast.Name)] * (len(around) == 1)
    if not loops:
        raise NoFix("the loop around the set_epoch call has no plain epoch variable (`for epoch in ...`)")
    epoch = loops[0].target.id
    start, end = parsed.source.span(call.args[0])
    return [Edit(start, end, epoch)], f"pass the epoch variable `{epoch}` to set_epoch"
