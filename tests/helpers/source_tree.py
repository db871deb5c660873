"""The repository's own Python files, parsed once per test session: several unit tests scan the
whole package (import layers, one judge per code, names and defaults once), and parsing ~600
files is most of what each of them costs."""

from __future__ import annotations

import ast
import functools
from pathlib import Path


@functools.lru_cache(maxsize=None)
def parsed(path: Path) -> ast.Module:
    """`path` parsed; callers only read the tree (it is shared)."""
    return ast.parse(path.read_text(encoding="utf-8"))
