"""Which lines of the user's script (and its local modules) ran: "PASS" means "PASS for what ran".

A line tracer limited to the user's files: the global trace function (sys.settrace, and
threading.settrace for threads started later) decides once per code object whether it is the
user's - a file under the script's directory (under the working directory for `-m`), outside
torch, ddpdoctor, the standard library and installed packages - and returns the line tracer only
for those; every other frame runs untraced. A code object whose lines have all been seen is not
traced again.

Even so, a trace function makes every Python frame slower (measured ~8-10% CPU per step on the
benchmark MLPs, docs/coverage.md), which would distort the timing checks. So the tracer runs
- for the first FULL_STEPS optimizer steps (the training loop's body), then sleeps;
- again from each boundary path until the next optimizer step: a DataLoader's end of epoch or
  start (a new epoch, an evaluation loop), Module.eval(), a no_grad block of the user's,
  torch.save / torch.load (inrank/boundaries.py calls wake()). Waking attaches the line tracer
  to the user's frames already on the stack, so the rest of the running function is seen.
Lines that ran only while it slept (a `if step % 10 == 0: print(...)` branch with no boundary
in it) are not seen: the report says "not seen", and how many steps were traced.
DDPDOCTOR_COVERAGE=full traces every step; =0 turns it off.

The lines seen are written as Coverage records: every FLUSH_S seconds when new lines appeared
(a daemon thread, so a job that hangs or is killed keeps what ran before), and at the rank's end.
A script that installed its own tracer (a debugger, coverage.py) keeps it: then nothing is traced
and a Note says so. DataLoader worker processes trace too, but their lines stay in the worker:
lines that ran only there (Dataset.__getitem__ with num_workers > 0) count as not seen.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
import time
from typing import Any, Optional

from ddpdoctor.core.paths import is_user_file
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.inrank import hooks, identity, recorder

ENV_COVERAGE = "DDPDOCTOR_COVERAGE"  # "0": no line tracer; "full": trace every step
FLUSH_S = 2.0
MAX_FILES = 200

_root = ""  # files under this directory are the user's
_state: dict[Any, Optional[set]] = {}  # code object -> its lines not seen yet (None: not traced)
_files: dict[str, Optional[str]] = {}  # co_filename -> absolute path of a user file, or None
_seen: dict[str, set] = {}  # absolute path -> lines seen
_new: list = []  # (path, line) seen since the last flush
_lock = threading.Lock()
_active = [False]
_tracing = [False]  # the trace function is set now
_full = [False]  # DDPDOCTOR_COVERAGE=full: trace every step (slower; timings distorted)
_steps = [0]  # optimizer steps seen (the first optimizer's count, as steps.py counts them)
_traced_steps = [0]  # optimizer steps that ran with the tracer on, wholly or partly
FULL_STEPS = 2  # the first steps are traced whole: the training loop's body
WAKES_PER_KEY = 3
_wakes: dict = {}


def _user_file(filename: str) -> Optional[str]:
    try:
        return _files[filename]
    except KeyError:
        pass
    path = None
    if not filename.startswith("<") and filename.endswith(".py") and len(_files) < 10000:
        absolute = os.path.abspath(filename)
        if absolute.startswith(_root) and is_user_file(absolute):
            if len({p for p in _files.values() if p}) < MAX_FILES:
                path = absolute
    _files[filename] = path
    return path


# Instructions that never raise a line event of their own: a function's prologue at its `def` line.
_PROLOGUE = {"RESUME", "MAKE_CELL", "COPY_FREE_VARS", "RETURN_GENERATOR", "POP_TOP", "CACHE",
             "EXTENDED_ARG"}


def _executable_lines(code: Any) -> set:
    """The lines of this code object (not its nested ones) that a line event can report."""
    import dis

    ops: dict[int, set] = {}
    line = None
    for instruction in dis.get_instructions(code):
        if sys.version_info >= (3, 13):
            line = instruction.line_number
        elif instruction.starts_line is not None:
            line = instruction.starts_line
        if line is not None:
            ops.setdefault(line, set()).add(instruction.opname)
    return {line for line, names in ops.items() if not names <= _PROLOGUE}


def _decide(code: Any) -> Optional[set]:
    path = _user_file(code.co_filename)
    lines = None
    if path is not None:
        seen = _seen.setdefault(path, set())
        lines = _executable_lines(code) - seen
        if not lines:
            lines = None  # everything it has already ran (another code object on the same lines)
    if len(_state) < 200000:
        _state[code] = lines
    return lines


def _global(frame: Any, event: str, arg: Any) -> Any:
    code = frame.f_code
    try:
        lines = _state[code]
    except KeyError:
        lines = _decide(code)
    return None if lines is None else _line


def _mark(code: Any, line: int, lines: set) -> bool:
    """Line `line` of `code` ran; True when that was the last of its lines not seen yet."""
    if line not in lines:
        return False
    lines.discard(line)
    path = _files.get(code.co_filename)
    if path is not None:
        seen = _seen[path]
        if line not in seen:
            seen.add(line)
            _new.append((path, line))
    if not lines:
        _state[code] = None
        return True
    return False


def _line(frame: Any, event: str, arg: Any) -> Any:
    if event != "line":
        return _line
    lines = _state.get(frame.f_code)
    if lines is None or _mark(frame.f_code, frame.f_lineno, lines):
        return None  # all of this code object's lines ran: stop tracing this frame
    return _line


def wake(key: Any = None) -> None:
    """Trace again (a boundary path began: an epoch ended, eval(), torch.save, ...), from the
    user's frames on this thread's stack on, until the next optimizer step. Cheap when on.
    With a key (a boundary's kind and call site): at most WAKES_PER_KEY times per key."""
    if _active[0] and not _tracing[0]:
        if key is not None:
            count = _wakes.get(key, 0)
            if count >= WAKES_PER_KEY:
                return
            _wakes[key] = count + 1
        try:
            _tracing[0] = True
            frame = sys._getframe(1)
            sys.settrace(_global)
            threading.settrace(_global)
            while frame is not None:
                code = frame.f_code
                lines = _state[code] if code in _state else _decide(code)
                if lines is not None:
                    _mark(code, frame.f_lineno, lines)  # the line running now (the call into here)
                    if frame.f_trace is None:
                        frame.f_trace = _line
                frame = frame.f_back
        except Exception:  # noqa: BLE001 - never into the script
            pass


class paused:
    """`with coverage.paused(): library_call()`: no tracing on this thread for the call.
    For calls known to run no line of the user's (DDP's constructor: ~0.5 s of torch imports and
    checks that a tracer would see call by call); the user's frames keep their line tracers and
    resume when it returns."""

    def __enter__(self) -> None:
        self.was = _tracing[0] and sys.gettrace() is not None
        if self.was:
            sys.settrace(None)

    def __exit__(self, *exc: Any) -> None:
        if self.was:
            sys.settrace(_global)


def _sleep() -> None:
    if _tracing[0]:
        _tracing[0] = False
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]


def _after_step(optimizer: Any, args: Any, kwargs: Any) -> None:
    _steps[0] += 1
    if _tracing[0]:
        _traced_steps[0] += 1
        if not _full[0] and _steps[0] >= FULL_STEPS:
            _sleep()


def _watch_loaders() -> None:
    """An epoch's end (the loader's StopIteration, also --steps-per-epoch's cut) and a loader's
    start (a new epoch, an evaluation loop) wake the tracer."""

    def __iter__(call: Any, self: Any) -> Any:
        wake()
        return call(self)

    def __next__(call: Any, self: Any) -> Any:
        try:
            return call(self)
        except StopIteration:
            wake()
            raise

    hooks.register("DataLoader.__iter__", "coverage", __iter__)
    hooks.register("DataLoader iterator.__next__", "coverage", __next__)


def _root_dir() -> str:
    try:
        target, _ = json.loads(os.environ.get(identity.ENV_TARGET, "[]"))
    except ValueError:
        target = ""
    if target and os.path.isfile(target):
        return os.path.dirname(os.path.abspath(target)) + os.sep
    return os.getcwd().rstrip(os.sep) + os.sep  # `-m package.module`: the working directory


def flush(final: bool = False) -> None:
    """Write the lines seen since the previous flush as one Coverage record."""
    with _lock:
        if not _new and not final:
            return
        taken = _new[:]
        del _new[:len(taken)]
    by_file: dict[str, list[int]] = {}
    for path, line in taken:
        by_file.setdefault(path, []).append(line)
    rec = recorder.get()
    rec.write(tm.Coverage(time.time(), {p: sorted(v) for p, v in by_file.items()}, rec.step, final,
                          None if _full[0] else _traced_steps[0]))


def _flusher() -> None:
    while True:
        time.sleep(FLUSH_S)
        if _active[0]:
            try:
                flush()
            except Exception:  # noqa: BLE001 - a lost record beats a broken rank
                pass


def _at_exit() -> None:
    if _active[0]:
        _sleep()
        _active[0] = False
        flush(final=True)


def _after_fork() -> None:
    # A DataLoader worker (or a forked rank) has no flusher thread; its lines stay with it.
    _active[0] = False


def _pause_during_imports() -> None:
    """Importing a library runs thousands of its functions, each a call the tracer would be
    asked about (~0.5 s per rank for torch's lazy imports at start-up): no tracing inside an
    import of a package that is not the user's (decided once per top-level name, from where it
    would load). The user's own modules (relative imports, files under the script's folder) are
    still traced."""
    import builtins

    original = builtins.__import__

    library: dict[str, bool] = {}  # top-level name -> not one of the user's files

    def is_library(name: str) -> bool:
        top = name.partition(".")[0]
        known = library.get(top)
        if known is None:
            try:
                import importlib.util

                spec = importlib.util.find_spec(top)
                origin = (spec.origin or "") if spec is not None else ""
                known = not (origin and _user_file(origin))
            except Exception:  # noqa: BLE001 - unsure: trace it
                known = False
            library[top] = known
        return known

    def __import__(name, globals=None, locals=None, fromlist=(), level=0):  # noqa: A001
        if (level or not _tracing[0] or sys.gettrace() is None or name in sys.modules
                or not is_library(name)):
            return original(name, globals, locals, fromlist, level)
        with paused():
            return original(name, globals, locals, fromlist, level)

    builtins.__import__ = __import__


def install() -> None:
    global _root
    if os.environ.get(ENV_COVERAGE) == "0" or sys.version_info < (3, 10):
        return  # asked not to; or no code.co_lines() to know a function's lines (Python 3.9)
    if sys.gettrace() is not None:
        recorder.get().note_once("coverage", "line coverage not measured: the script's process "
                                 "already has a trace function (a debugger or coverage.py)")
        return
    _root = _root_dir()
    _active[0] = True
    _full[0] = os.environ.get(ENV_COVERAGE) == "full"
    from torch.optim.optimizer import register_optimizer_step_post_hook

    register_optimizer_step_post_hook(_after_step)
    _watch_loaders()
    _pause_during_imports()
    _tracing[0] = True
    sys.settrace(_global)
    threading.settrace(_global)
    threading.Thread(target=_flusher, name="ddpdoctor-coverage", daemon=True).start()
    atexit.register(_at_exit)
    os.register_at_fork(after_in_child=_after_fork)
