"""The lint's results kept across runs: linting the same, unchanged files again (a pre-commit
hook, `probe` after `lint`, CI re-runs) costs a stat and a read of each file, not an analysis.

One entry per (script, working directory, ddpdoctor and Python version) under
$XDG_CACHE_HOME/ddpdoctor/lint (~/.cache/ddpdoctor/lint): the facts, and every file read with its
mtime, size and a digest of its bytes. Any file changed, moved or gone: the entry is not used.
Parsed syntax trees are not cached: loading a pickled tree costs more than parsing the source
again (measured: 2.2 s against 1.8 s for 200 files). A cache that cannot be read or written is
silently skipped: it only ever saves time.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
from pathlib import Path
from typing import Optional

from ddpdoctor.core.version import __version__
from ddpdoctor.lint.facts import LintFacts

FORMAT = 2  # 2: LintFacts.rank_local
KEEP = 500  # entries; the oldest go first (one per script and working directory)


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ddpdoctor" / "lint"


def _enabled() -> bool:
    return os.environ.get("DDPDOCTOR_LINT_CACHE", "1") not in ("0", "off", "no")


def _code_stamp() -> str:
    """The lint's own code: facts made by another build of it are not reused."""
    here = Path(__file__).parent
    try:
        return ",".join(f"{p.name}:{p.stat().st_mtime_ns}" for p in sorted(here.glob("*.py")))
    except OSError:
        return ""


def _entry(script: str) -> Path:
    key = "\0".join([os.path.abspath(script), os.getcwd(), __version__, sys.version, str(FORMAT),
                     _code_stamp()])
    return cache_dir() / (hashlib.sha1(key.encode()).hexdigest() + ".pickle")


def _stamp(path: str) -> Optional[tuple[str, int, int, str]]:
    try:
        st = os.stat(path)
        with open(path, "rb") as handle:
            digest = hashlib.blake2b(handle.read(), digest_size=16).hexdigest()
    except OSError:
        return None
    return path, st.st_mtime_ns, st.st_size, digest


def load(script: str) -> Optional[LintFacts]:
    """The facts stored for this script when none of its files changed since; else None."""
    if not _enabled():
        return None
    try:
        with open(_entry(script), "rb") as handle:
            stored = pickle.load(handle)
    except Exception:  # noqa: BLE001 - missing, unreadable, from another version: a miss
        return None
    if not isinstance(stored, dict) or stored.get("format") != FORMAT:
        return None
    for stamp in stored.get("files", ()):
        if _stamp(stamp[0]) != tuple(stamp):
            return None
    facts = stored.get("facts")
    return facts if isinstance(facts, LintFacts) else None


def store(script: str, facts: LintFacts, paths: list[str]) -> None:
    """Keep the facts with the stamps of the files they were read from (best effort)."""
    if not _enabled():
        return
    stamps = [_stamp(p) for p in paths]
    if any(s is None for s in stamps):
        return
    target = _entry(script)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".pickle")
        try:
            with os.fdopen(fd, "wb") as handle:
                pickle.dump({"format": FORMAT, "files": stamps, "facts": facts}, handle,
                            protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        entries = sorted(target.parent.glob("*.pickle"), key=lambda p: p.stat().st_mtime)
        for old in entries[:-KEEP]:
            old.unlink()
    except Exception:  # noqa: BLE001 - read-only home, full disk, unpicklable: skip silently
        return
