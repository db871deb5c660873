"""The major version of a library the project pins beside its script.

Some library behaviour a rule rests on changed between major versions (transformers 4.x's
`Trainer.save_model` calls `_save` only where `args.should_save` holds; 5.x calls it on every
process and tests inside). The project's own pin says which one its script runs: the first of
requirements*.txt, requirements/*.txt, pyproject.toml, setup.py, setup.cfg, environment.yml found
from the script's folder up to three folders above it. Read as text, bounded: a pin is a line
`name==4.30.2`, `name~=4.30`, `name<5` / `name<=4.x`, or `"name>=4.2,<5"`; a lower bound alone
says nothing of the major version and is no pin.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

# Files a project states its dependencies in, nearest folder first.
PIN_FILES = ("requirements.txt", "requirements-train.txt", "requirements_train.txt", "pyproject.toml",
             "setup.py", "setup.cfg", "environment.yml", "environment.yaml")
MAX_BYTES = 256 * 1024  # a dependency list; anything larger is not read
UP = 3  # folders above the script's


def pinned_major(script: Path, package: str) -> tuple[Optional[int], Optional[Path], list[Path]]:
    """(the major version `package` is pinned to, the file that says so, every file read on the
    way); (None, None, files read) when no file near the script pins it. The files read, and
    where none pins it the place a pin would first be looked for, are what a cached answer
    rests on: a pin added or changed there is a different answer."""
    return _search(script, package, _from_ops)


def pinned_floor(script: Path, package: str) -> tuple[Optional[tuple[int, int]], Optional[Path], list[Path]]:
    """(the lowest (major, minor) the project's pin of `package` allows - `==4.38.1`, `~=4.30`,
    `>=4.31,<5` - the file, every file read), as pinned_major; an upper bound alone says nothing
    of the floor. For a behaviour a library took on at a minor version (transformers' Trainer
    leaves the sharding to Accelerate from 4.30)."""
    return _search(script, package, _floor_of_ops)


def program_floor(program, package: str) -> tuple[Optional[tuple[int, int]], Optional[Path]]:
    """(pinned_floor, the file) for the program's script, read once per lint however many rules
    and loaders ask; the files read join the cache key (program's `_pin_files`)."""
    memo = program.__dict__.setdefault("_pin_floors", {})
    if package not in memo:
        floor, path, read = pinned_floor(program.sources[0].path, package)
        program.__dict__.setdefault("_pin_files", []).extend(str(p) for p in read)
        memo[package] = (floor, path)
    return memo[package]


def _search(script: Path, package: str, reader) -> tuple:
    spec = re.compile(rf"(?<![\w.-]){re.escape(package)}\s*(\[[^\]]*\])?\s*(?P<ops>(?:[<>=~!]=?\s*[\d*][\w.*]*\s*,?\s*)+)",
                      re.IGNORECASE)
    folder = script.resolve().parent
    first = folder / PIN_FILES[0]
    read: list[Path] = []
    for _ in range(UP + 1):
        for path in _candidates(folder):
            read.append(path)
            found = _read_pin(path, spec, reader)
            if found is not None:
                return found, path, read
        if folder.parent == folder:
            break
        folder = folder.parent
    return None, None, read if first in read else [*read, first]


def _candidates(folder: Path) -> list[Path]:
    found = [folder / name for name in PIN_FILES]
    sub = folder / "requirements"
    if sub.is_dir():
        try:
            found += sorted(sub.glob("*.txt"))[:16]
        except OSError:
            pass
    return [p for p in found if p.is_file()]


def _read_pin(path: Path, spec: re.Pattern, reader):
    try:
        if path.stat().st_size > MAX_BYTES:
            return None
        text = path.read_text(errors="replace")
    except OSError:
        return None
    for match in spec.finditer(text):
        found = reader(match.group("ops"))
        if found is not None:
            return found
    return None


# A version's leading numbers, a few digits each: a longer run is no version a project pins (and a
# 5,000-digit one is more than int() converts), so that pin says nothing
_NUMBER = re.compile(r"\d{1,9}(?!\d)")
_VERSION = re.compile(r"(\d{1,9})(?!\d)(?:\.(\d{1,9})(?!\d))?")


def _floor_of_ops(ops: str) -> Optional[tuple[int, int]]:
    """`==4.38.1` -> (4, 38), `~=4.30` -> (4, 30), `>=4.31,<5` -> (4, 31), `>4.30` -> (4, 30);
    `<5` -> None."""
    for op, version in re.findall(r"([<>=~!]=?)\s*([\d*][\w.*]*)", ops):
        parts = _VERSION.match(version)
        if parts is None or op not in ("==", "~=", ">=", ">"):
            continue
        return int(parts.group(1)), int(parts.group(2) or 0)
    return None


def _from_ops(ops: str) -> Optional[int]:
    """`==4.30.2` -> 4, `~=4.30` -> 4, `<5` -> 4, `<=4.40` -> 4, `>=4.2,<5.0` -> 4; `>=4.2` -> None."""
    for op, version in re.findall(r"([<>=~!]=?)\s*([\d*][\w.*]*)", ops):
        number = _NUMBER.match(version)
        if number is None:
            continue
        value = int(number.group())
        if op in ("==", "~=", "<="):
            return value
        if op == "<":
            rest = version[number.end():].strip(".")
            # `<5` / `<5.0`: below major 5; `<4.40`: within 4
            return value - 1 if not rest or set(rest) <= {"0", "."} else value
    return None
