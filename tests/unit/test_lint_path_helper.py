"""`import _init_paths` where the module puts a folder on sys.path through a helper of its own
(`def add_path(path): sys.path.insert(0, path)`, then `add_path(osp.join(this_dir, '..', 'lib'))`):
the folder is an import root, so the modules the script imports from it are read and judged.
A helper that adds something else (not its parameter) adds no root."""

from __future__ import annotations

import textwrap

from ddpdoctor.lint.driver import gather, lint_results

INIT_PATHS = """
import os.path as osp
import sys


def add_path(path):
    if path not in sys.path:
        sys.path.insert(0, path)


this_dir = osp.dirname(__file__)
add_path(osp.join(this_dir, '..', 'lib'))
"""
FUNCTION = """
import torch.distributed as dist


def train_one_epoch(rank):
    if rank == 0:
        dist.barrier()
"""
SCRIPT = """
import _init_paths
import torch.distributed as dist
from core.function import train_one_epoch

dist.init_process_group("gloo")
train_one_epoch(dist.get_rank())
"""


def _lint(tmp_path, init_paths: str):
    for name, body in {"tools/_init_paths.py": init_paths, "lib/core/__init__.py": "",
                       "lib/core/function.py": FUNCTION, "tools/train.py": SCRIPT}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(body))
    facts = gather(str(tmp_path / "tools" / "train.py"))
    return [(f.code, f.location.file.rsplit("/", 1)[-1]) for r in lint_results(facts, set()) for f in r.findings], facts


def test_a_folder_an_imported_module_adds_through_its_own_helper_is_read(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    found, facts = _lint(tmp_path, INIT_PATHS)
    assert found == [("DDP801", "function.py")]
    assert any(f.endswith("lib/core/function.py") for f in facts.files)


def test_a_helper_that_puts_something_else_on_sys_path_adds_no_root(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    other = INIT_PATHS.replace("sys.path.insert(0, path)", "sys.path.insert(0, '/nowhere')")
    found, facts = _lint(tmp_path, other)
    assert found == [] and not any(f.endswith("function.py") for f in facts.files)
