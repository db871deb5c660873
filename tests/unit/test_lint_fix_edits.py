"""The edit machinery of `lint --fix`: positions from the tree to offsets of the text as read,
edits applied at once, review-suggestion hunks, the unified diff. Pure, over strings."""

from __future__ import annotations

import ast

import pytest

from ddpdoctor.lint.fix.edits import Edit, EditConflict, SourceText, apply, hunks, unified_diff
from ddpdoctor.lint.fix.syntax import NoFix, Parsed


def test_offsets_count_characters_not_utf8_bytes():
    text = 's = "é"; torch.save(x, p)\n'
    call = ast.parse(text).body[1].value
    source = SourceText(text)
    assert source.segment(call) == "torch.save(x, p)"


def test_offsets_keep_crlf_line_endings_and_inserted_lines_use_them():
    text = "a = 1\r\nfor epoch in range(3):\r\n    step()\r\n"
    parsed = Parsed.of("t.py", text)
    assert parsed.source.newline() == "\r\n"
    body = parsed.tree.body[1].body[0]
    at = parsed.source.line_start(body.lineno)
    new = apply(text, [Edit(at, at, "    s.set_epoch(epoch)\r\n")])
    assert new == "a = 1\r\nfor epoch in range(3):\r\n    s.set_epoch(epoch)\r\n    step()\r\n"


def test_identical_edits_count_once_and_overlapping_ones_conflict():
    assert apply("abc", [Edit(1, 1, "X"), Edit(1, 1, "X")]) == "aXbc"
    with pytest.raises(EditConflict):
        apply("abcdef", [Edit(1, 4, "X"), Edit(2, 5, "Y")])


def test_insertions_at_one_place_keep_their_order():
    assert apply("body\n", [Edit(0, 0, "if x:\n"), Edit(0, 0, "    ")]) == "if x:\n    body\n"


def test_an_insertion_is_a_suggestion_on_the_line_it_precedes():
    text = "for e in r:\n    go()\n"
    source = SourceText(text)
    at = source.line_start(2)
    [hunk] = hunks(source, [Edit(at, at, "    s.set_epoch(e)\n")])
    assert (hunk.start_line, hunk.end_line) == (2, 2)
    assert hunk.replacement == "    s.set_epoch(e)\n    go()"


def test_far_apart_edits_are_separate_hunks():
    text = "import a\n" + "x = 1\n" * 10 + "f(y)\n"
    source = SourceText(text)
    end_import = source.line_end(1)
    call_end = len(text) - 2
    out = hunks(source, [Edit(end_import, end_import, "import b\n"), Edit(call_end, call_end, ", z")])
    assert [(h.start_line, h.end_line) for h in out] == [(2, 2), (12, 12)]
    assert out[0].replacement == "import b\nx = 1"
    assert out[1].replacement == "f(y, z)"


def test_unified_diff_names_both_sides_and_is_empty_without_change():
    assert unified_diff("t.py", "a\n", "a\n") == ""
    diff = unified_diff("t.py", "a\nb\n", "a\nc\n")
    assert diff.startswith("--- a/t.py\n+++ b/t.py\n") and "-b\n+c\n" in diff


def test_a_statement_sharing_its_line_is_not_indented_by_a_fix():
    parsed = Parsed.of("t.py", "if ok: torch.save(x, p)\n")
    save = parsed.tree.body[0].body[0]
    with pytest.raises(NoFix, match="holds more than the statement"):
        parsed.indent(save)


def test_reindent_leaves_the_inside_of_multiline_strings_alone():
    text = 'f(x, """\nkeep\n""")\n'
    parsed = Parsed.of("t.py", text)
    new = apply(text, parsed.reindent(1, 3, "    "))
    assert new == '    f(x, """\nkeep\n""")\n'


def test_the_indent_unit_is_the_files_own():
    assert Parsed.of("t.py", "def f():\n  return 1\n").indent_unit() == "  "
    assert Parsed.of("t.py", "x = 1\n").indent_unit() == "    "


def test_module_alias_is_what_the_file_imports():
    assert Parsed.of("t.py", "import torch.distributed as dist\n").module_alias("torch.distributed") == "dist"
    assert Parsed.of("t.py", "from torch import distributed as td\n").module_alias("torch.distributed") == "td"
    assert Parsed.of("t.py", "import torch\n").module_alias("torch.distributed") == "torch.distributed"
    assert Parsed.of("t.py", "import os\n").module_alias("torch.distributed") is None


def test_an_import_goes_after_the_last_top_level_import():
    text = '"""doc"""\nimport os\nimport torch\n\nx = 1\n'
    parsed = Parsed.of("t.py", text)
    assert apply(text, [parsed.add_import("import contextlib")]) == \
        '"""doc"""\nimport os\nimport torch\nimport contextlib\n\nx = 1\n'
