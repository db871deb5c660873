"""The lint's results kept across runs: linting the same, unchanged files again (a pre-commit
hook, `probe` after `lint`, CI re-runs) costs a read and a digest of each file, not an analysis.

One entry per (script, working directory) under $XDG_CACHE_HOME/ddpdoctor/lint
(~/.cache/ddpdoctor/lint), as JSON: data, never code (a pickled entry planted there would run
on the next lint: CI caches are restored from other branches). An entry holds the facts, the
digest of every file they were read from, and what it was made by (the lint's version and a
digest of its own source); it is used only when all of these match now, and when its MAC,
made with a key that never lies in the cache directory ($XDG_STATE_HOME/ddpdoctor), is right:
an entry copied under another script's name, or written by someone without the key, is a miss.
A cache directory that others can write to is not used (one note per run). A cache that cannot
be read or written is skipped: it only ever saves time, never decides a verdict.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import hmac
import json
import os
import stat
import sys
import typing
from pathlib import Path
from typing import Any, Optional

from ddpdoctor.core.errors import UsageError
from ddpdoctor.core.files import write_atomic
from ddpdoctor.core.version import __version__
from ddpdoctor.lint import bypass, data_sized, rank_state, trainer_data, worker_seeds
from ddpdoctor.lint.config_files import launch_listing
from ddpdoctor.lint.facts import LintFacts
from ddpdoctor.lint.sources import read_source

FORMAT = 6  # 2: JSON entries (never pickle); 3: LintFacts.rank_local; 4: LintFacts.trainer_shards; 5: launches;
# 6: LintFacts.bypassed
KEEP = 500  # entries; the oldest go first (one per script and working directory)
MAX_ENTRY = 32 * 1024 * 1024  # bytes: a larger file is not an entry this lint wrote
# untyped list fields and the record type they hold
ELEMENTS = {(LintFacts, "data_sized"): data_sized.DataSizedCollective,
            (LintFacts, "unranked_seeds"): worker_seeds.UnrankedSeed,
            (LintFacts, "rank_local"): rank_state.RankLocalDecision,
            (LintFacts, "trainer_shards"): trainer_data.TrainerShard,
            (LintFacts, "bypassed"): bypass.BypassedBackward}

_said: set[str] = set()  # notes already given in this process (said once, not per script)


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ddpdoctor" / "lint"


def _key_file() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "ddpdoctor" / "lint-cache.key"


def _enabled() -> bool:
    return os.environ.get("DDPDOCTOR_LINT_CACHE", "1") not in ("0", "off", "no")


@functools.lru_cache(maxsize=1)
def _code_digest() -> str:
    """The lint's own source (the modules that make the facts): facts made by any other build of
    it are not reused, whatever its version says."""
    digest = hashlib.blake2b(__version__.encode() + sys.version.encode(), digest_size=16)
    here = Path(__file__).parent
    for path in sorted(here.glob("*.py")) + [here.parent / "core" / "findings.py"]:
        try:
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
        except OSError:
            digest.update(path.name.encode() + b"\0?")
    return digest.hexdigest()


def _unsafe(path: Path) -> Optional[str]:
    """Why a directory of ours cannot be trusted with entries, or None: another user owns it, or
    others may write to it (sticky or not: they could still plant new entries)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{path} cannot be read: {exc.strerror or exc}"
    if not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a directory"
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return f"{path} is owned by another user (uid {st.st_uid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"{path} is writable by others (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def _safe_dir(notes: Optional[list[str]]) -> bool:
    folder = cache_dir()
    for path in (folder.parent, folder):
        why = _unsafe(path)
        if why:
            note = f"lint cache not used: {why}"
            if notes is not None and note not in _said:
                _said.add(note)
                notes.append(note)
            return False
    return True


def _key(create: bool) -> Optional[bytes]:
    """This user's MAC key (32 random bytes, mode 600), made on first use."""
    path = _key_file()
    try:
        if _unsafe(path.parent):
            return None
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        if not create:
            return None
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(os.urandom(32))
        except OSError:
            return None
        return _key(create=False)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        if (not stat.S_ISREG(st.st_mode) or st.st_mode & 0o077
                or (hasattr(os, "getuid") and st.st_uid != os.getuid())):
            return None
        data = handle.read(64)
    return data if len(data) == 32 else None


def _entry(script: str) -> Path:
    key = "\0".join([os.path.abspath(script), os.getcwd()])
    return cache_dir() / (hashlib.sha256(key.encode()).hexdigest()[:40] + ".json")


def digest_of(path: str) -> Optional[str]:
    """The digest of a regular file's bytes (None: gone, unreadable, not a file, too large)."""
    try:
        return hashlib.blake2b(read_source(Path(path)), digest_size=16).hexdigest()
    except UsageError:
        return None


def _mac(key: bytes, body: str) -> str:
    return hmac.new(key, body.encode(), hashlib.sha256).hexdigest()


def load(script: str, notes: Optional[list[str]] = None) -> Optional[LintFacts]:
    """The facts stored for this script when none of its files changed since; else None.
    `notes` receives, once per run, why the cache is not used."""
    if not _enabled() or not _safe_dir(notes):
        return None
    key = _key(create=False)
    if key is None:
        return None
    try:
        fd = os.open(_entry(script), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as handle:
            st = os.fstat(handle.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_ENTRY:
                return None
            raw = handle.read(MAX_ENTRY + 1).decode("utf-8")
        outer = json.loads(raw)
        if not isinstance(outer, dict) or not isinstance(outer.get("body"), str) or not isinstance(outer.get("mac"), str):
            return None
        if not hmac.compare_digest(_mac(key, outer["body"]), outer["mac"]):
            return None
        stored = json.loads(outer["body"])
        if (not isinstance(stored, dict) or stored.get("format") != FORMAT
                or stored.get("code") != _code_digest() or stored.get("script") != os.path.abspath(script)
                or stored.get("cwd") != os.getcwd() or stored.get("launches") != launch_listing(Path(script))):
            return None
        files = stored.get("files")
        if not isinstance(files, list) or not files:
            return None
        for item in files:
            if (not isinstance(item, list) or len(item) != 2 or not isinstance(item[0], str)
                    or digest_of(item[0]) != item[1]):
                return None
        return _decode(LintFacts, stored.get("facts"))
    except Exception:  # noqa: BLE001 - missing, unreadable, malformed, nested too deep: a miss
        return None


def store(script: str, facts: LintFacts, paths: list[str]) -> None:
    """Keep the facts with the digests of the files they were read from (best effort)."""
    if not _enabled() or not _safe_dir(None):
        return
    files = [[p, digest_of(p)] for p in dict.fromkeys([os.path.abspath(script), *paths])]
    if any(d is None for _, d in files):
        return
    key = _key(create=True)
    if key is None:
        return
    target = _entry(script)
    try:
        cache_dir().mkdir(parents=True, exist_ok=True, mode=0o700)
        if not _safe_dir(None):
            return
        body = json.dumps({"format": FORMAT, "code": _code_digest(), "script": os.path.abspath(script),
                           "cwd": os.getcwd(), "files": files, "launches": launch_listing(Path(script)),
                           "facts": dataclasses.asdict(facts)},
                          separators=(",", ":"))
        write_atomic(target, json.dumps({"body": body, "mac": _mac(key, body)}), mode=0o600)
        entries = sorted(target.parent.glob("*.json"), key=lambda p: p.stat().st_mtime)
        for old in entries[:-KEEP]:
            old.unlink()
    except Exception:  # noqa: BLE001 - read-only home, full disk: skip silently
        return


class _Bad(ValueError):
    """An entry whose shape is not the facts' shape."""


@functools.lru_cache(maxsize=None)
def _shape(kind: type) -> tuple[dict, frozenset]:
    """A fact dataclass's field types and names, read once per class (get_type_hints evaluates
    every annotation's string again on each call: most of a warm run's decoding time)."""
    return typing.get_type_hints(kind), frozenset(f.name for f in dataclasses.fields(kind))


def _decode(kind: Any, value: Any, owner: Any = None, name: str = "") -> Any:
    """Rebuild `kind` from JSON, checking every value's type on the way (nothing but the
    declared dataclasses, lists, tuples, strings and numbers can come out)."""
    if dataclasses.is_dataclass(kind):
        if not isinstance(value, dict):
            raise _Bad(kind.__name__)
        hints, fields = _shape(kind)
        if set(value) - fields:
            raise _Bad(kind.__name__)
        return kind(**{k: _decode(hints[k], v, kind, k) for k, v in value.items()})
    origin = typing.get_origin(kind)
    args = typing.get_args(kind)
    if origin is typing.Union:
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _decode(inner[0], value, owner, name)
    if kind is list or origin is list:
        if not isinstance(value, list):
            raise _Bad(name)
        element = args[0] if args else ELEMENTS.get((owner, name))
        if element is None:
            raise _Bad(name)
        return [_decode(element, v, owner, name) for v in value]
    if origin is tuple and args and Ellipsis not in args:
        # a typed record (`tuple[Location, Location]`): each place by its own type
        if not isinstance(value, list) or len(value) != len(args):
            raise _Bad(name)
        return tuple(_decode(a, v, owner, name) for a, v in zip(args, value))
    if kind is tuple or origin is tuple:
        # Location.called_from: (file, line, callee) triples
        if not isinstance(value, list):
            raise _Bad(name)
        out = []
        for v in value:
            if (not isinstance(v, list) or len(v) != 3 or not isinstance(v[0], str)
                    or not isinstance(v[1], (int, type(None))) or not isinstance(v[2], str)):
                raise _Bad(name)
            out.append(tuple(v))
        return tuple(out)
    if kind is bool:
        if not isinstance(value, bool):
            raise _Bad(name)
        return value
    if kind is int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise _Bad(name)
        return value
    if kind is float:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise _Bad(name)
        return float(value)
    if kind is str:
        if not isinstance(value, str):
            raise _Bad(name)
        return value
    raise _Bad(f"{name}: {kind!r}")
