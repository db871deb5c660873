"""DDP807's fix where the size comes from `bincount` and the file names its class count:
`torch.bincount(x)` -> `torch.bincount(x, minlength=NUM_CLASSES)`, a size the data cannot change.
Other sources (unique, nonzero, boolean masks, filtered lists) change what the tensor holds when
made fixed-size: no fix, the line says so."""

from __future__ import annotations

import ast
import re

from ddpdoctor.core.findings import Finding
from ddpdoctor.lint.fix.edits import Edit
from ddpdoctor.lint.fix.syntax import NoFix, Parsed, Proposal, names_read
from ddpdoctor.lint.nodes import walk
from ddpdoctor.lint.patterns import dotted, keyword

CODE = "DDP807"
CLASS_COUNT = re.compile(r"^(?:num_?|n_?|number_of_)(?:classes|class|labels|categories)$", re.IGNORECASE)


def propose(finding: Finding, parsed: Parsed) -> list[Proposal]:
    source = str(finding.evidence.get("source") or "")
    file, _, line = str(finding.evidence.get("source_location") or "").rpartition(":")
    if "bincount" not in source:
        raise NoFix(f"the size comes from `{source.split(' ')[0]}`: a fixed size changes what the tensor holds "
                    "(agree on the size with all_reduce(MAX) and pad, by hand)")
    if file != parsed.display or not line.isdigit():
        raise NoFix("the bincount is in another file than the collective")
    calls = [c for c in parsed.calls_on_line(int(line), {"bincount"}) if keyword(c, "minlength") is None]
    if len(calls) != 1:
        raise NoFix(f"line {line} does not hold exactly one bincount(...) without minlength")
    call = calls[0]
    if len(call.args) > 2 or any(k.arg is None for k in call.keywords) or \
            any(isinstance(a, ast.Starred) for a in call.args):
        raise NoFix("the bincount call passes its arguments by *args / **kwargs or positionally past weights")
    count = _class_count(parsed, call)
    last = (call.args + call.keywords)[-1]
    at = parsed.source.span(last)[1]
    return [([Edit(at, at, f", minlength={count}")], f"count with bincount(..., minlength={count})")]


def _class_count(parsed: Parsed, call: ast.Call) -> str:
    """The one class count the file names that can be read at the call (`NUM_CLASSES`,
    `args.num_classes`, `self.n_classes`)."""
    stmt = parsed.statement(call)
    found = []
    for node in walk(parsed.tree):
        if not isinstance(node, (ast.Name, ast.Attribute)):
            continue
        name = dotted(node)
        if not name or name.count(".") > 1 or not CLASS_COUNT.match(name.rsplit(".", 1)[-1]):
            continue
        reads = names_read(node)
        if name not in found and parsed.visible(reads - ({"self"} if _method(parsed, stmt) else set()), stmt):
            found.append(name)
    if len(found) != 1:
        raise NoFix("the file names no class count readable at the bincount (NUM_CLASSES, args.num_classes)"
                    if not found else f"several class counts could be meant ({', '.join(found[:3])})")
    return found[0]


def _method(parsed: Parsed, node: ast.AST) -> bool:
    scope = parsed.scope(node)
    return isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
        any(isinstance(up, ast.ClassDef) for up in parsed.ancestors(scope))
