"""pyproject.toml lists its packages by hand (checks/ is installed as ddpdoctor.checks): a new
package folder missing from the list installs from a checkout but not from the wheel."""

from __future__ import annotations

from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

REPO = Path(__file__).resolve().parents[2]


def test_every_package_folder_is_listed_in_pyproject():
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = set()
    for root, prefix in ((REPO / "ddpdoctor", "ddpdoctor"), (REPO / "checks", "ddpdoctor.checks")):
        for init in root.rglob("__init__.py"):
            parts = init.parent.relative_to(root).parts
            found.add(".".join((prefix, *parts)))
    assert found - listed == set(), "add these to [tool.setuptools] packages"
