"""A script that pins one visible GPU in its own code and starts a process per GPU it sees.

`os.environ["CUDA_VISIBLE_DEVICES"] = "0"` at the script's top level (or in its `__main__`
block), unconditionally, then `mp.spawn(worker, nprocs=torch.cuda.device_count())` (or one
`mp.Process` per `range(torch.cuda.device_count())`): CUDA sees one device, so the script starts
one process as shipped, whatever the machine holds. The distributed code is still wrong on
several processes - the pin is one edit away - so DDP802 and DDP803 say so as a warning, as for
a launch that starts one process (config_files.one_process_launch)."""

from __future__ import annotations

import ast
import re
from typing import Optional

from ddpdoctor.lint.patterns import is_const, keyword, last_name, text

_ONE_DEVICE = re.compile(r"\s*\d+\s*")  # "0", " 3": one device (not "0,1", not "")
DEVICE_COUNT = "torch.cuda.device_count"


def pinned_one_process(program) -> str:
    """"file:line: <the pin>" where the entry script pins one visible GPU and the ranks it
    starts are counted by torch.cuda.device_count(); "" otherwise. Once per program."""
    memo = program.__dict__.get("_pinned_one_process")
    if memo is None:
        memo = program.__dict__["_pinned_one_process"] = _pinned(program)
    return memo


def _pinned(program) -> str:
    script = next((f for f in program.files if not f.module), None)
    if script is None or script.tree is None:
        return ""
    pin = next((s for s in _unconditional_top(script.tree.body) if _pins_one(s)), None)
    if pin is None:
        return ""
    for fn in program.functions:
        if fn.file is not script:
            continue
        for call in fn.own_calls:
            count = _ranks_started(program, call, fn)
            if count is not None and _counts_devices(program, count, fn):
                return f"{script.display}:{pin.lineno}: `{text(pin, 80)}`"
    return ""


def _unconditional_top(body: list) -> list:
    """The module's statements that run on every import as the script, and those of its
    `if __name__ == "__main__":` block (not under any other test)."""
    found = []
    for stmt in body:
        if isinstance(stmt, ast.If) and "__name__" in text(stmt.test) and "__main__" in text(stmt.test):
            found.extend(stmt.body)
        else:
            found.append(stmt)
    return found


def _pins_one(stmt: ast.AST) -> bool:
    """`os.environ["CUDA_VISIBLE_DEVICES"] = "0"`: one device, as a constant."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Subscript)):
        return False
    target = stmt.targets[0]
    return text(target.value) in ("os.environ", "environ") and is_const(target.slice, "CUDA_VISIBLE_DEVICES") \
        and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str) \
        and _ONE_DEVICE.fullmatch(stmt.value.value) is not None


def _ranks_started(program, call: ast.Call, fn) -> Optional[ast.AST]:
    """The count of processes a start of ranks gives: `mp.spawn(fn, args, nprocs)`'s nprocs, or
    N of the `for i in range(N):` loop around an `mp.Process(...)`; None for another call."""
    full = program.qualify(call.func, fn) or ""
    name = last_name(call.func)
    if name in ("spawn", "start_processes") and "multiprocessing" in full:
        return keyword(call, "nprocs") if keyword(call, "nprocs") is not None else (
            call.args[2] if len(call.args) > 2 else None)
    if name == "Process" and "multiprocessing" in full:
        for node in fn.own:
            if isinstance(node, ast.For) and isinstance(node.iter, ast.Call) and last_name(node.iter.func) == "range" \
                    and len(node.iter.args) == 1 and any(n is call for s in node.body for n in ast.walk(s)):
                return node.iter.args[0]
    return None


def _counts_devices(program, node: ast.AST, fn, depth: int = 2) -> bool:
    """The value is `torch.cuda.device_count()`: there, or bound to the name (or to the same
    subscript, `args["world_size"] = torch.cuda.device_count()`) in fn."""
    if isinstance(node, ast.Call):
        return (program.qualify(node.func, fn) or "") == DEVICE_COUNT
    if depth <= 0:
        return False
    said = text(node)
    values = [v for v, _ in program.values_of(node, fn)] if isinstance(node, ast.Name) else []
    values += [n.value for n in fn.own if isinstance(n, ast.Assign) and len(n.targets) == 1
               and not isinstance(n.targets[0], ast.Name) and text(n.targets[0]) == said]
    values = [v for v in values if v is not node]
    return bool(values) and all(_counts_devices(program, v, fn, depth - 1) for v in values)
