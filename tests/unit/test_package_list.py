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


def test_numpy_is_a_runtime_dependency_so_ranks_do_not_warn_failed_to_initialize_numpy():
    # torch imports NumPy where it is installed and warns in every rank where it is not; a test
    # extra alone leaves a plain `pip install .` warning on the first probe.
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    assert any(d.split(">")[0].split("=")[0].split("<")[0].strip() == "numpy" for d in deps)
