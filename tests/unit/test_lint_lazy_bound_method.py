"""A method handed on bound (`call_later(runner.go)`) whose class lives in a quiet module read
late, after the walk first asked for the program's method names: the names must include the
late module's methods, as a program that had read every module at once would (issue 38)."""

from __future__ import annotations

from ddpdoctor.lint.program import Program
from ddpdoctor.lint.sources import load_program
from tests.unit.test_lint_lazy_parse import PADDING

HELPERS = """\
class Runner:
    def go(self):
        return 1
""" + PADDING  # long and quiet: parsed only when the walk asks for `helpers.Runner`

SCRIPT = """\
import helpers


def call_later(f):
    f()


class Options:
    pass


options = Options()
call_later(options.lr)  # the first attribute handed on: the method names are gathered here
runner = helpers.Runner()  # helpers is read now
call_later(runner.go)
"""


def test_a_bound_method_of_a_class_read_late_is_handed_on(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "helpers.py").write_text(HELPERS)
    (tmp_path / "train.py").write_text(SCRIPT)
    program = Program(load_program("train.py", []))
    top = program.modules[0].body
    handed = [t.qualname for e in top.events if e.kind == "ref" for t in e.targets]
    assert handed == ["Runner.go"]
