"""Boundary paths: evaluation and checkpointing, where many real hangs live (issue 16).

Records, as `Boundary` records, that the rank ran
- "eval": `Module.eval()` (the outermost call; a framework's own eval() counts once training
  has begun, so that a model put in eval mode by `from_pretrained` is not "evaluation");
- "no_grad": a `torch.no_grad()` / `torch.inference_mode()` block opened by the user's own code
  (with or as a decorator), not by torch or a library;
- "save" / "load": `torch.save` / `torch.load`, whoever calls them.
Epoch ends are already in the DataLoader's EpochEnd records. Each kind is recorded at most
MAX_PER_KIND times per rank: an eval() called every step costs a counter after that.
Nothing here may raise into the script.
"""

from __future__ import annotations

import functools
import sys
import time
from typing import Any, Callable

import torch

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.inrank import coverage, hooks, recorder

MAX_PER_KIND = 200
_counts: dict[str, int] = {}


def _record(what: str, depth: int) -> None:
    count = _counts.get(what, 0)
    if count >= MAX_PER_KIND:
        return
    _counts[what] = count + 1
    rec = recorder.get()
    site = recorder.user_site(depth + 1)
    # A boundary path: the line tracer sees what follows (inrank/coverage.py), the first few
    # times per call site (a no_grad block run every step must not keep it awake).
    coverage.wake((what, site.file, site.line) if site is not None else what)
    rec.write(tm.Boundary(time.time(), what, rec.step, site))


def _is_user(code: Any) -> bool:
    return recorder._user_path(code) is not None


def _opened_by_user(frame: Any) -> bool:
    """The no_grad block was opened by the user's code: a `with` in it, or the decorator on
    one of its functions (then the caller is torch's _contextlib wrapper around that function)."""
    if frame is None:
        return False
    if _is_user(frame.f_code):
        return True
    if frame.f_code.co_filename.endswith("_contextlib.py"):
        func = frame.f_locals.get("func")
        code = getattr(func, "__code__", None)
        return code is not None and _is_user(code)
    return False


def install() -> None:
    original_eval = torch.nn.Module.eval

    @functools.wraps(original_eval)
    def eval(self: torch.nn.Module) -> Any:  # noqa: A001 - the method's own name
        if _counts.get("eval", 0) < MAX_PER_KIND:
            try:
                if _is_user(sys._getframe(1).f_code) or recorder.get().step > 0:
                    _record("eval", 2)
            except Exception:  # noqa: BLE001 - never break the user's model
                pass
        return original_eval(self)

    torch.nn.Module.eval = eval

    for cls in (torch.no_grad, torch.inference_mode):
        original_enter = cls.__enter__

        def enter(self: Any, _original: Any = original_enter) -> Any:
            if _counts.get("no_grad", 0) < MAX_PER_KIND:
                try:
                    if _opened_by_user(sys._getframe(1)):
                        _record("no_grad", 2)
                except Exception:  # noqa: BLE001
                    pass
            return _original(self)

        functools.update_wrapper(enter, original_enter)
        cls.__enter__ = enter

    def save(call: Callable, *args: Any, **kwargs: Any) -> Any:
        _record("save", 2)
        return call(*args, **kwargs)

    def load(call: Callable, *args: Any, **kwargs: Any) -> Any:
        _record("load", 2)
        return call(*args, **kwargs)

    hooks.register("torch.save", "boundaries", save)
    hooks.register("torch.load", "boundaries", load)
