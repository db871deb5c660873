"""Before a job starts: no report path may destroy a file that ddpdoctor did not write.

`ddpdoctor probe --json train.py train.py` (the report's name forgotten) once replaced the
user's script with the JSON report. Every output path (--json, --junit, --trace) is checked
here, before a run dir exists or a rank starts, and refused with one line and exit 2 when it is:

- the script, one of the script's arguments, or an input ddpdoctor reads (a host list, facts);
- inside the run dir (telemetry and logs live there);
- another output of the same command;
- a directory, or in a folder ddpdoctor cannot write;
- an existing file that is not an earlier ddpdoctor output of the same kind, recognised by its
  content. `--force` lifts this last rule only: the script and the run dir are never overwritten.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Iterable, Optional, Sequence

from ddpdoctor.core.errors import UsageError

# How much of an existing file is read to recognise it: a report's head says what it is.
_SNIFF_BYTES = 64 * 1024


@dataclass(frozen=True)
class OutputPath:
    flag: str  # "--json", "--junit", "--trace"
    path: str
    kind: str  # "json" | "junit" | "trace"


def _real(path: str) -> str:
    return os.path.realpath(os.path.abspath(os.path.expanduser(path)))


def _head(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            return handle.read(_SNIFF_BYTES).decode("utf-8", "replace")
    except OSError:
        return ""


def _json_object(path: str) -> Optional[dict]:
    try:
        with open(path, "rb") as handle:
            if os.fstat(handle.fileno()).st_size > 256 * 1024 * 1024:
                return None  # no report of ours is this large; do not load it to find out
            data = json.loads(handle.read().decode("utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def written_by_ddpdoctor(path: str, kind: str) -> bool:
    """True when `path` holds an earlier ddpdoctor output of this kind."""
    if kind == "junit":
        head = _head(path).lstrip()
        return head.startswith("<?xml") and '<testsuite name="ddpdoctor.' in head[:2000]
    data = _json_object(path)
    if data is None:
        return False
    if kind == "json":
        return data.get("tool") == "ddpdoctor" and "findings" in data
    if kind == "trace":
        other = data.get("otherData")
        return isinstance(other, dict) and other.get("tool") == "ddpdoctor" and "traceEvents" in data
    return False


def _arg_paths(args: Sequence[str]) -> list[str]:
    """Every word of the script's command line that could name a file, `--out=x` split too."""
    words = []
    for arg in args:
        words.append(arg)
        if arg.startswith("-") and "=" in arg:
            words.append(arg.split("=", 1)[1])
    return [w for w in words if w and w != "-"]


def _writable_folder(path: str) -> Optional[str]:
    """None when a file can be created at `path`; otherwise why not."""
    folder = os.path.dirname(os.path.abspath(path)) or "."
    probe = folder
    while not os.path.exists(probe):  # write_atomic creates missing folders: judge the first that exists
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    if not os.path.isdir(probe):
        return f"{probe} is a file, not a folder"
    if not os.access(probe, os.W_OK | os.X_OK):
        return f"cannot write in {probe}"
    return None


def check_outputs(outputs: Iterable[OutputPath], *, inputs: Sequence[str] = (),
                  script_args: Sequence[str] = (), run_dir: Optional[str] = None,
                  force: bool = False) -> None:
    """Refuse (UsageError) any output path that would destroy a file ddpdoctor did not write."""
    wanted = [o for o in outputs if o.path and o.path != "-"]
    protected = {_real(p): f"the input {p}" for p in inputs if p}
    for word in _arg_paths(script_args):
        protected.setdefault(_real(word), f"the script's argument {word}")
    run_root = _real(run_dir) if run_dir else None
    seen: dict[str, str] = {}
    for out in wanted:
        real = _real(out.path)
        where = f"{out.flag} {out.path}"
        if real in protected:
            raise UsageError(f"{where}: that is {protected[real]}; refusing to overwrite it with the "
                             f"report (give the report its own file name)")
        if real in seen:
            raise UsageError(f"{where}: {seen[real]} writes the same file; give each report its own path")
        seen[real] = out.flag
        if run_root and (real == run_root or real.startswith(run_root + os.sep)):
            raise UsageError(f"{where}: inside the run dir {run_dir}, which holds the job's telemetry; "
                             f"write the report elsewhere")
        if os.path.isdir(real):
            raise UsageError(f"{where}: is a directory; give a file path")
        problem = _writable_folder(real)
        if problem:
            raise UsageError(f"{where}: {problem}")
        if os.path.lexists(real):
            if not os.path.isfile(real):
                raise UsageError(f"{where}: exists and is not a regular file")
            if not os.access(real, os.W_OK):
                raise UsageError(f"{where}: exists and is not writable")
            if not written_by_ddpdoctor(real, out.kind) and not force:
                raise UsageError(f"{where}: exists and is not an earlier ddpdoctor {out.kind} report; "
                                 f"refusing to overwrite it (choose another path, or --force)")
