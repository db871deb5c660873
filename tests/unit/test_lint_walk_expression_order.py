"""The walk goes through an expression's nodes with a loop over a stack, not a call per node
(issue 38, cold analysis time): the calls must still be met in the order a recursive walk meets
them (each call before the calls in its arguments, left to right), and a conditional expression
or an `and` must still put its rank test over its own part only."""

from __future__ import annotations

import ast

from ddpdoctor.lint.program import Program
from ddpdoctor.lint.sources import load_program

SCRIPT = """\
import torch.distributed as dist


def f(*a):
    return a


def g(x):
    return x


def h(x):
    return x


def k(x):
    return x


out = f(g(1), h(k(2)), -3 + 4)
picked = g(1) if dist.get_rank() == 0 else h(2)
dist.get_rank() == 0 and dist.barrier()
k(5)
"""


def _program(tmp_path, monkeypatch) -> Program:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(SCRIPT)
    return Program(load_program("train.py", []))


def _name(call: ast.Call) -> str:
    return ast.unparse(call.func)


def test_calls_in_an_expression_are_met_outer_first_then_left_to_right(tmp_path, monkeypatch):
    top = _program(tmp_path, monkeypatch).modules[0].body
    names = [_name(call) for call, _, _ in top.calls]
    assert names[:4] == ["f", "g", "h", "k"]
    assert names == ["f", "g", "h", "k", "dist.get_rank", "g", "h", "dist.get_rank", "dist.barrier", "k"]


def test_a_conditional_expression_guards_each_side_with_its_own_branch(tmp_path, monkeypatch):
    top = _program(tmp_path, monkeypatch).modules[0].body
    guarded = {(_name(call), call.lineno): guards for call, guards, _ in top.calls}
    (body,) = guarded[("g", 21)]
    (orelse,) = guarded[("h", 21)]
    assert (body.side, orelse.side) == ("body", "else")
    assert body.branch == orelse.branch != 0
    assert guarded[("dist.get_rank", 21)] == ()  # the test itself runs on every rank


def test_an_and_guards_what_follows_a_rank_test_and_nothing_after_the_expression(tmp_path, monkeypatch):
    top = _program(tmp_path, monkeypatch).modules[0].body
    guarded = {(_name(call), call.lineno): guards for call, guards, _ in top.calls}
    (guard,) = guarded[("dist.barrier", 22)]
    assert guard.side == "body" and guard.line == 22
    assert guarded[("dist.get_rank", 22)] == ()
    assert guarded[("k", 23)] == ()
    barrier = [e for e in top.events if e.kind == "collective"]
    assert [e.line for e in barrier] == [22] and barrier[0].guards == (guard,)
