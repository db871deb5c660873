"""Quiet local modules (none of the words the whole-program passes look for) are parsed only when
resolution asks for a name they define (issue 38: a model zoo's files were most of a large
package's parse time); what a reached one holds is still found, and the cache still keys on it."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from ddpdoctor.lint import sources
from ddpdoctor.lint.driver import gather, lint_results
from ddpdoctor.lint.program import Program
from ddpdoctor.lint.sources import load_program, scan_imports
from tests.unit.test_lint_cache import own_cache  # noqa: F401 (a cache of each test's own)

SCRIPT = """\
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
import helpers
dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 1))
"""  # 6 lines

# a long quiet module: a model file's size, and none of the loud words
PADDING = "".join(f"\ndef block_{i}(x):\n    return x * {i} + 1\n" for i in range(80))
HELPERS = """\
import torch


def store(net):
    torch.save(net.state_dict(), "model.pt")


def tidy(net):
    return net
""" + PADDING


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # files shown relative to it


def write(tmp_path: Path, tail: str, helpers: str = HELPERS) -> Path:
    (tmp_path / "helpers.py").write_text(helpers)
    script = tmp_path / "train.py"
    script.write_text(SCRIPT + textwrap.dedent(tail))
    return script


def program(script: Path) -> Program:
    return Program(load_program(str(script), []))


def test_a_quiet_module_is_found_but_not_parsed_while_nothing_asks_for_its_names(tmp_path):
    script = write(tmp_path, "helpers_are = 'imported, never called'\n")
    built = program(script)
    (helper,) = [f for f in built.sources if f.module == "helpers"]
    assert sources.quiet(HELPERS) and len(HELPERS) >= sources.QUIET_MIN_CHARS
    assert helper.tree is None and helper not in built.files
    facts = gather(str(script))
    assert facts.files == ["train.py", "helpers.py"]  # still listed among the files found


def test_a_quiet_module_whose_function_the_script_calls_is_read(tmp_path):
    built = program(write(tmp_path, "helpers.tidy(model)\n"))
    (helper,) = [f for f in built.sources if f.module == "helpers"]
    assert helper.tree is not None and helper in built.files
    tidy = built.by_name["helpers"].functions["tidy"]
    assert tidy in built.reachable
    # bound as if read from the start: the call's argument reached the parameter
    assert [ast.unparse(value) for value, _ in tidy.arguments["net"]] == ["model"]


def test_a_save_in_a_quiet_helper_reached_through_a_call_is_still_found(tmp_path):
    script = write(tmp_path, "helpers.store(model)\n")
    found = [f for r in lint_results(gather(str(script)), set()) for f in r.findings]
    assert [(f.code, f.location.file, f.location.line) for f in found if f.code == "DDP806"] == \
        [("DDP806", "helpers.py", 5)]
    quiet_twin = write(tmp_path, "helpers.tidy(model)\n")  # the same helpers, the save never called
    found = [f for r in lint_results(gather(str(quiet_twin)), set()) for f in r.findings]
    assert [f for f in found if f.code == "DDP806"] == []


def test_an_edit_to_a_module_read_late_invalidates_the_cache(tmp_path):
    script = write(tmp_path, "helpers.tidy(model)\n")
    assert not gather(str(script)).cached
    assert gather(str(script)).cached
    (tmp_path / "helpers.py").write_text(HELPERS.replace("return net", "return store(net)"))
    again = gather(str(script))
    assert not again.cached and len(again.saves) == 1  # the save is now reached through tidy


def test_an_edit_to_a_module_never_parsed_invalidates_the_cache(tmp_path):
    script = write(tmp_path, "x = 1\n")
    assert [f for f in Program(load_program(str(script), [])).sources if f.tree is None]  # never parsed
    assert not gather(str(script)).cached
    assert gather(str(script)).cached
    (tmp_path / "helpers.py").write_text(HELPERS + "\nimport torch.distributed as dist\n")
    assert not gather(str(script)).cached


def test_lint_fix_reads_a_quiet_module_as_its_unwritten_edit_says(tmp_path):
    from ddpdoctor.lint.fix.plan import lint_texts
    script = write(tmp_path, "helpers.tidy(model)\n")
    edited = {(tmp_path / "helpers.py").resolve(): HELPERS.replace("return net", "return store(net)")}
    found, read = lint_texts(str(script), edited, set())
    assert [(f.code, f.location.file) for f in found if f.code == "DDP806"] == [("DDP806", "helpers.py")]
    assert set(read) == {"train.py", "helpers.py"}
    found, _ = lint_texts(str(script), {}, set())  # the file on disk: no save reached
    assert [f for f in found if f.code == "DDP806"] == []


def test_a_module_with_a_loud_word_is_parsed_when_found(tmp_path):
    loud = HELPERS.replace("return net", "return net if dist.get_rank() else None")
    built = program(write(tmp_path, "x = 1\n", helpers=loud))
    (helper,) = [f for f in built.sources if f.module == "helpers"]
    assert helper.tree is not None and helper in built.files


def test_the_import_scan_gives_the_statements_the_parse_gives_or_none_when_unsure():
    text = textwrap.dedent('''\
        """A docstring that mentions import x
        and the word import
        """
        import os, sys as system
        from . import sibling
        from .pkg.mod import (a,
                              b as c)
        if True:
            from x import \\
                y
        def f():
            import json  # inside a function: still an import of the file
        importlib = 1
        # import commented
        ''')
    got = scan_imports(text)
    real = [n for n in ast.walk(ast.parse(text)) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert sorted(ast.dump(n, include_attributes=True) for n in got) == \
        sorted(ast.dump(n, include_attributes=True) for n in real)
    assert scan_imports("try: import x\nexcept ImportError: pass\n") is None  # after a colon: unsure
    assert scan_imports('s = """\nimport x\n"""\n') is None  # inside a string: unsure
