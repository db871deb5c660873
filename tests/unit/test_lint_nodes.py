"""lint/nodes.py walks trees as ast.walk does (less the Load/Store contexts), and gather() leaves
the cyclic collector as it found it."""

import ast
import gc
from pathlib import Path

from ddpdoctor.lint import nodes
from ddpdoctor.lint.driver import gather
from tests.helpers.source_tree import parsed, walked

HERE = Path(__file__).resolve().parents[2]
SOURCES = sorted((HERE / "ddpdoctor" / "lint").glob("*.py"))


def _no_ctx(found):
    return [n for n in found if not isinstance(n, ast.expr_context)]


def test_walk_and_children_match_ast_module():
    for path in SOURCES:  # the session's trees (tests/helpers/source_tree.py): read, never changed
        expected = _no_ctx(walked(path))
        got = nodes.walk(parsed(path))
        assert len(got) == len(expected) and all(a is b for a, b in zip(got, expected)), path
        for node in expected[:2000]:
            assert nodes.children(node) == _no_ctx(ast.iter_child_nodes(node)), (path, node)


def test_gather_restores_the_collector(monkeypatch, tmp_path):
    monkeypatch.setenv("DDPDOCTOR_LINT_CACHE", "0")
    script = tmp_path / "train.py"
    script.write_text("import torch.distributed as dist\ndist.init_process_group('gloo')\n"
                      "if dist.get_rank() == 0:\n    dist.barrier()\n")
    assert gc.isenabled()
    facts = gather(str(script))
    assert gc.isenabled() and facts.statements == 4
    gc.disable()
    try:
        gather(str(script))
        assert not gc.isenabled()
    finally:
        gc.enable()
