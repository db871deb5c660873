"""Project settings from `[tool.ddpdoctor]` in pyproject.toml: defaults that flags override.

    [tool.ddpdoctor]              # every command
    fail-on = "warning"
    ignore = ["DDP602"]

    [tool.ddpdoctor.probe]        # `ddpdoctor probe`
    nproc-per-node = 2
    max-steps = 30
    cpu = true

    [tool.ddpdoctor.preflight]    # `ddpdoctor preflight`
    nodes = "hosts.txt"
    timeout = 5

Keys are the commands' flags without the dashes, and mean the same; a command's table wins over
the shared one, a flag on the command line wins over both. The file is the nearest
pyproject.toml, from the working directory up, that has a [tool.ddpdoctor] table (as ruff finds
its own). Paths in it are relative to its directory. An unknown key or a value of the wrong type
is bad input: one line naming the file and the key, exit 2.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from ddpdoctor.errors import UsageError

FILE = "pyproject.toml"
COMMANDS = ("probe", "preflight")

# key -> type: int, float, bool, str, "path" (relative to the file), "codes" (a list of check
# codes, or one string "DDP601,DDP602"), or a tuple of the allowed strings.
SEVERITIES = ("error", "warning", "info")
SHARED: dict[str, Any] = {"fail-on": SEVERITIES, "ignore": "codes"}
KEYS: dict[str, dict[str, Any]] = {
    "probe": {
        **SHARED, "nproc-per-node": int, "nnodes": int, "max-steps": int, "steps-per-epoch": int,
        "stall-timeout": float, "timeout": float, "cpu": bool, "launcher": ("auto", "torchrun", "none"),
        "run-dir": "path",
    },
    "preflight": {
        **SHARED, "nodes": "path", "nproc-per-node": int, "world-size": int, "master-addr": str,
        "master-port": int, "backend": ("auto", "nccl", "gloo"), "via": ("auto", "local", "ssh"),
        "ssh-user": str, "ssh-port": int, "remote-python": str, "timeout": float, "fanout": int,
    },
}


@dataclass
class Config:
    """The settings found, per command, as the command's parameter names (snake_case)."""

    path: Optional[Path] = None  # None: no pyproject.toml with a [tool.ddpdoctor] table
    commands: dict[str, dict[str, Any]] = field(default_factory=dict)

    def defaults_for(self, command: str) -> dict[str, Any]:
        return dict(self.commands.get(command, {}))


def find(start: Optional[Path] = None) -> Optional[tuple[Path, dict[str, Any]]]:
    """The nearest pyproject.toml with a [tool.ddpdoctor] table, and that table."""
    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        path = directory / FILE
        try:
            text = path.read_text(encoding="utf-8")
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError):
            continue
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"{path}: cannot read it: {exc}") from None
        if "ddpdoctor" not in text:  # not ours: no need to parse it
            continue
        table = _parse(path, text).get("tool", {}).get("ddpdoctor")
        if table is not None:
            if not isinstance(table, dict):
                raise UsageError(f"{path}: [tool.ddpdoctor] must be a table")
            return path, table
    return None


def load(start: Optional[Path] = None) -> Config:
    """Read and check the project's settings; an empty Config when there are none."""
    found = find(start)
    if found is None:
        return Config()
    path, table = found
    shared = {k: v for k, v in table.items() if k not in COMMANDS}
    commands = {}
    for command in COMMANDS:
        section = table.get(command, {})
        if not isinstance(section, dict):
            raise UsageError(f"{path}: [tool.ddpdoctor] {command} must be a table ([tool.ddpdoctor.{command}])")
        settings = {}
        for key, value in shared.items():
            if key not in SHARED:
                raise UsageError(_unknown(path, "tool.ddpdoctor", key))
            settings[key] = value
        for key, value in section.items():
            if key not in KEYS[command]:
                raise UsageError(_unknown(path, f"tool.ddpdoctor.{command}", key))
            settings[key] = value
        commands[command] = {key.replace("-", "_"): _check(path, command, key, value)
                             for key, value in settings.items()}
    return Config(path, commands)


class CommandDefaults:
    """click's default_map for the `ddpdoctor` group: click asks it for a subcommand's defaults
    by the subcommand's name, and only then is pyproject.toml read, so that `ddpdoctor explain`
    works in a project whose settings are broken."""

    def __init__(self, start: Optional[Path] = None) -> None:
        self.start = start

    def get(self, name: str, default: Any = None) -> Any:
        if name not in COMMANDS:
            return default
        return load(self.start).defaults_for(name)


def _parse(path: Path, text: str) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.9 and 3.10
        try:
            import tomli as tomllib
        except ImportError:
            raise UsageError(f"{path} has [tool.ddpdoctor] settings, and reading them needs "
                             "Python 3.11 or the tomli package (pip install tomli)") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML: {exc}") from None


def _unknown(path: Path, table: str, key: str) -> str:
    known = sorted({k for keys in KEYS.values() for k in keys} if table == "tool.ddpdoctor" else
                   KEYS[table.rsplit(".", 1)[1]])
    if table == "tool.ddpdoctor" and key.replace("_", "-") in known:
        where = [c for c in COMMANDS if key.replace("_", "-") in KEYS[c]]
        return (f"{path}: [{table}] {key}: put it under [tool.ddpdoctor.{where[0]}]"
                if key not in SHARED else "")
    hint = " (keys are spelled with dashes)" if "_" in key and key.replace("_", "-") in known else ""
    return f"{path}: [{table}] unknown key {key!r}{hint}; known: {', '.join(known)}"


def _check(path: Path, command: str, key: str, value: Any) -> Any:
    """The value as the command's parameter takes it, or a UsageError naming file and key."""
    kind = KEYS[command][key]
    where = f"{path}: [tool.ddpdoctor.{command}] {key}" if key not in SHARED else f"{path}: {key}"

    def wrong(expected: str) -> UsageError:
        return UsageError(f"{where} must be {expected} (got {value!r})")

    if kind is bool:
        if not isinstance(value, bool):
            raise wrong("true or false")
        return value
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise wrong("an integer")
        return value
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise wrong("a number")
        return float(value)
    if kind is str or kind == "path":
        if not isinstance(value, str) or not value.strip():
            raise wrong("a non-empty string")
        return str(path.parent / value) if kind == "path" else value
    if kind == "codes":
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise wrong('a list of check codes like ["DDP602"]')
        return list(value)
    if isinstance(kind, tuple):
        if not isinstance(value, str) or value.strip().lower() not in kind:
            raise wrong("one of " + ", ".join(repr(k) for k in kind))
        return value.strip().lower()
    raise AssertionError(f"no type for {key}")  # a KEYS entry without a known kind
