"""ddpdoctor's own folder has one home, core/paths.OWN_ROOT; the two in-rank places that must
find it before ddpdoctor is importable (bootstrap.py run by its path, the injected
sitecustomize.py) compute the same folder from their own file."""

import ast
import os
from pathlib import Path

import ddpdoctor
from ddpdoctor.core import paths
from ddpdoctor.probe.inrank import bootstrap
from tests.helpers.source_tree import walked

SITECUSTOMIZE = Path(bootstrap.__file__).parent / "site" / "sitecustomize.py"


def _root_expressions(path: Path) -> list[ast.expr]:
    """The values assigned to `root` or `sys.path[0]` from `__file__` in the module."""
    found = []
    for node in walked(path):
        if (isinstance(node, ast.Assign) and "__file__" in ast.unparse(node.value)
                and ast.unparse(node.targets[0]) in ("root", "sys.path[0]")):
            found.append(node.value)
    return found


def test_the_own_root_is_the_folder_that_holds_the_imported_package():
    assert paths.OWN_ROOT == os.path.dirname(os.path.dirname(os.path.abspath(ddpdoctor.__file__)))


def test_the_pre_import_places_find_the_same_folder_as_the_home():
    for path in (Path(bootstrap.__file__), SITECUSTOMIZE):
        expressions = _root_expressions(path)
        assert len(expressions) == 1, path
        value = eval(compile(ast.Expression(expressions[0]), str(path), "eval"), {"os": os, "__file__": str(path)})
        assert value == paths.OWN_ROOT, path
