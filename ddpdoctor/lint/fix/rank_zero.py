"""The global-rank-0 tests a file already writes (`if rank == 0:`, `if dist.get_rank() == 0:`,
`if master_process:`), which a fix reuses so the edit reads like the user's own code; and
`dist.get_rank() == 0` where the file has none, naming torch.distributed as the file imports it."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from ddpdoctor.lint.fix.syntax import NoFix, Parsed, names_read
from ddpdoctor.lint.nodes import walk
from ddpdoctor.lint.patterns import dotted, is_const, last_name

GLOBAL_RANK = re.compile(r"^(?:global_|world_|ddp_|dist_|my_|proc_)?rank$|^process_index$", re.IGNORECASE)
MAIN = re.compile(r"^(?:is_)?(?:global_)?(?:master|main)(?:_process|_rank|_proc)?$|^master_process$"
                  r"|^is_(?:global_)?(?:rank_?)?zero$|^is_world_process_zero$|^is_global_zero$", re.IGNORECASE)


@dataclass(frozen=True)
class ZeroTest:
    """A test true on global rank 0 only, as text, and its negation."""

    zero: str
    nonzero: str
    node: ast.AST | None = None  # where the file writes it (None: made up)


def is_global_rank(node: ast.AST) -> bool:
    """`rank`, `args.rank`, `self.global_rank`, `dist.get_rank()` (not a local or node rank)."""
    if isinstance(node, ast.Call):
        return last_name(node.func) == "get_rank" and not node.args and not node.keywords
    name = dotted(node)
    return bool(name) and bool(GLOBAL_RANK.match(name.rsplit(".", 1)[-1]))


def as_zero_test(parsed: Parsed, node: ast.AST) -> ZeroTest | None:
    """The test as a ZeroTest when it is one, in the file's own spelling."""
    segment = parsed.source.segment
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq):
        left, right = node.left, node.comparators[0]
        if is_const(left, 0):
            left, right = right, left
        if is_const(right, 0) and is_global_rank(left):
            return ZeroTest(segment(node), f"{segment(left)} != 0", node)
    flag = node.func if isinstance(node, ast.Call) else node
    name = dotted(flag)
    if name and MAIN.match(name.rsplit(".", 1)[-1]):
        if isinstance(node, ast.Call) and not all(isinstance(a, (ast.Name, ast.Attribute)) for a in node.args):
            return None
        return ZeroTest(segment(node), f"not {segment(node)}", node)
    return None


def zero_tests(parsed: Parsed, at: ast.stmt) -> list[ZeroTest]:
    """The global-rank-0 tests the file writes that can be read at `at`, those of its own
    function first; then `<dist>.get_rank() == 0` when torch.distributed is imported."""
    found: list[ZeroTest] = []
    home = parsed.scope(at)
    tests = [n.test for n in walk(parsed.tree) if isinstance(n, (ast.If, ast.IfExp, ast.While))]
    atoms = []
    for test in tests:
        atoms.extend(n for n in walk(test) if isinstance(n, (ast.Compare, ast.Name, ast.Attribute, ast.Call)))
    atoms.sort(key=lambda n: (parsed.scope(n) is not home, n.lineno))
    for atom in atoms:
        made = as_zero_test(parsed, atom)
        if made is None or any(f.zero == made.zero for f in found):
            continue
        reads = names_read(atom)
        if "self" in reads and parsed.scope(atom) is not home and not _same_class(parsed, atom, at):
            continue
        if parsed.visible(reads, at):
            found.append(made)
    alias = parsed.module_alias("torch.distributed")
    if alias and not any(f.zero == f"{alias}.get_rank() == 0" for f in found):
        found.append(ZeroTest(f"{alias}.get_rank() == 0", f"{alias}.get_rank() != 0"))
    if not found:
        raise NoFix("the file has no global-rank-0 test to reuse and does not import torch.distributed "
                    "(a fix would add an import)")
    return found


def _same_class(parsed: Parsed, a: ast.AST, b: ast.AST) -> bool:
    def klass(node):
        return next((up for up in parsed.ancestors(node) if isinstance(up, ast.ClassDef)), None)
    return klass(a) is not None and klass(a) is klass(b)
