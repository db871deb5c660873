"""Project settings from `[tool.ddpdoctor]` in pyproject.toml: defaults that flags override.

    [tool.ddpdoctor]              # every command that has the flag
    fail-on = "warning"
    ignore = ["DDP602"]
    cpu = true

    [tool.ddpdoctor.probe]        # `ddpdoctor probe` only
    max-steps = 30
    timeout = 600

    [tool.ddpdoctor.preflight]    # `ddpdoctor preflight`
    nodes = "hosts.txt"
    timeout = 5

Keys are the commands' flags without the leading dashes, and mean the same. A key in
[tool.ddpdoctor] applies to every command that has the flag (`timeout`, which means something
else for each, must go in a command's table); a command's table wins over it, and a flag given
on the command line wins over both.

The file is the nearest pyproject.toml, from the working directory up, that has a
[tool.ddpdoctor] table (as ruff finds its own); paths in it are relative to its directory. An
unknown key or a value of the wrong type is bad input: one line naming the file and the key,
exit 2.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from ddpdoctor.core.errors import UsageError

FILE = "pyproject.toml"
COMMANDS = ("probe", "preflight", "report")

# key -> type: int, float, bool, str, "path" (relative to the file), "codes" (a list of check
# codes, or one string "DDP601,DDP602"), or a tuple of the allowed strings.
SEVERITIES = ("error", "warning", "info")
SHARED: dict[str, Any] = {"fail-on": SEVERITIES, "ignore": "codes"}
# Keys with one meaning per command, which [tool.ddpdoctor] itself cannot hold.
AMBIGUOUS = {"timeout"}  # probe: the whole job; preflight: each node
KEYS: dict[str, dict[str, Any]] = {
    "probe": {
        **SHARED, "nproc-per-node": int, "nnodes": int, "max-steps": int, "steps-per-epoch": int,
        "stall-timeout": float, "timeout": float, "cpu": bool, "launcher": ("auto", "torchrun", "none"),
        "run-dir": "path", "master-addr": str, "master-port": int, "rdzv-endpoint": str,
        "gather-port": int, "log-limit": float, "quiet-script": bool,
    },
    "preflight": {
        **SHARED, "nodes": "path", "nproc-per-node": int, "world-size": int, "master-addr": str,
        "master-port": int, "backend": ("auto", "nccl", "gloo"),
        "via": ("auto", "local", "ssh", "store"), "ssh-user": str, "ssh-port": int, "remote-python": str,
        "timeout": float, "fanout": int, "collective": bool,
    },
    "report": dict(SHARED),  # re-judging a probe's run dir gates like the probe did
}
# Flags that say what one run does or where its outputs go, not how the project runs: never in
# the file (tests/integration/test_config.py checks that every other flag has its key).
PER_RUN = {"json", "junit", "github", "verbose", "quiet", "force", "trace", "scaling", "baseline",
           "verify-fix", "node-rank", "facts", "ssh-option",
           # Editing the user's files is asked for each time, never a project default.
           "fix", "patch",
           # A secret never belongs in a file checked into the project: flag or environment only.
           "gather-token"}


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
    top = {k: v for k, v in table.items() if k not in COMMANDS}
    for key in top:
        if key in AMBIGUOUS:
            raise UsageError(f"{path}: [tool.ddpdoctor] {key} means something else for each "
                             "command: put it under [tool.ddpdoctor.probe] or [tool.ddpdoctor.preflight]")
        if not any(key in KEYS[c] for c in COMMANDS):
            raise _unknown(path, "tool.ddpdoctor", key, {k for c in COMMANDS for k in KEYS[c]} - AMBIGUOUS)
    commands = {}
    for command in COMMANDS:
        section = table.get(command, {})
        if not isinstance(section, dict):
            raise UsageError(f"{path}: {command} in [tool.ddpdoctor] must be a table "
                             f"([tool.ddpdoctor.{command}])")
        for key in section:
            if key not in KEYS[command]:
                raise _unknown(path, f"tool.ddpdoctor.{command}", key, set(KEYS[command]))
        settings = {f"[tool.ddpdoctor] {k}": (k, v) for k, v in top.items() if k in KEYS[command]}
        settings.update({f"[tool.ddpdoctor.{command}] {k}": (k, v) for k, v in section.items()})
        commands[command] = {key.replace("-", "_"): _check(f"{path}: {where}", KEYS[command][key], value, path)
                             for where, (key, value) in settings.items()}
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


def _unknown(path: Path, table: str, key: str, known: set[str]) -> UsageError:
    dashed = key.replace("_", "-")
    if dashed != key and dashed in known:
        return UsageError(f"{path}: [{table}] {key}: keys are spelled like the flags, {dashed!r}")
    return UsageError(f"{path}: [{table}] unknown key {key!r}; known: {', '.join(sorted(known))}")


def _check(where: str, kind: Any, value: Any, path: Path) -> Any:
    """The value as the command's parameter takes it, or a UsageError naming file and key."""

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
        from ddpdoctor.core.findings import parse_codes
        from ddpdoctor.core.registry import all_checks

        unknown = sorted(parse_codes(value) - {spec.code for spec in all_checks()})
        if unknown:
            raise UsageError(f"{where}: unknown check code(s) {', '.join(unknown)}")
        return list(value)
    if not isinstance(value, str) or value.strip().lower() not in kind:
        raise wrong("one of " + ", ".join(repr(k) for k in kind))
    return value.strip().lower()
