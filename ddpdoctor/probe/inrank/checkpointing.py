"""Activation checkpointing (torch.utils.checkpoint): which variant runs, and where (DDP406).

A reentrant checkpoint runs its own backward pass inside the outer one, so a parameter used in
two checkpointed segments (or in one segment and outside it) gets its gradient hook fired twice
in one iteration: DDP marks it ready twice. Recording the call sites lets DDP406 name the cause
beside the parameter. Once per call site and variant; after the first calls, nothing but a
counter compare per call.
"""

from __future__ import annotations

import functools
import time
from typing import Any

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.inrank import recorder

_LOOKED_AT_CALLS = 512  # calls whose site is looked up; later ones only pass through
_seen: set = set()
_calls = [0]


def _function_name(function: Any) -> str:
    owner = getattr(function, "__self__", None)
    if owner is not None and not isinstance(owner, type):
        return f"{type(owner).__name__}.{getattr(function, '__name__', 'forward')}"
    if hasattr(function, "forward") and not hasattr(function, "__code__"):
        return type(function).__name__  # an nn.Module passed as the function
    return getattr(function, "__qualname__", None) or getattr(function, "__name__", type(function).__name__)


def _note(function: Any, use_reentrant: Any, depth: int) -> None:
    _calls[0] += 1
    reentrant = True if use_reentrant is None else bool(use_reentrant)
    site = recorder.user_site(depth + 1)
    key = (site.file, site.line) if site is not None else None, reentrant
    if key in _seen or len(_seen) >= 64:
        return
    _seen.add(key)
    rec = recorder.get()
    rec.write(tm.ActivationCheckpoint(time.time(), reentrant, use_reentrant is not None,
                                      _function_name(function), rec.step, site))


def install() -> None:
    import torch.utils.checkpoint as checkpoint_module

    original = checkpoint_module.checkpoint
    original_sequential = checkpoint_module.checkpoint_sequential

    @functools.wraps(original)
    def checkpoint(function: Any, *args: Any, use_reentrant: Any = None, **kwargs: Any) -> Any:
        if _calls[0] < _LOOKED_AT_CALLS:
            try:
                _note(function, use_reentrant, 2)
            except Exception as exc:  # noqa: BLE001 - never break the user's forward
                recorder.get().note_once("checkpoint", f"activation checkpoint instrument failed: {exc!r}")
        return original(function, *args, use_reentrant=use_reentrant, **kwargs)

    @functools.wraps(original_sequential)
    def checkpoint_sequential(functions: Any, segments: Any, input: Any, use_reentrant: Any = None,
                              **kwargs: Any) -> Any:
        if _calls[0] < _LOOKED_AT_CALLS:
            try:
                _note(functions, use_reentrant, 2)
            except Exception as exc:  # noqa: BLE001
                recorder.get().note_once("checkpoint", f"activation checkpoint instrument failed: {exc!r}")
        return original_sequential(functions, segments, input, use_reentrant=use_reentrant, **kwargs)

    checkpoint_module.checkpoint = checkpoint
    checkpoint_module.checkpoint_sequential = checkpoint_sequential
