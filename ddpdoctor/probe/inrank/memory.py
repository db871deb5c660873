"""Per-rank memory: what each rank holds (parameters, gradients, optimizer state, activations)
and its peak, measured at a few moments, never per step (tm.Memory says which).

- At install: the resident set of the interpreter and torch, before the script runs (the part of
  every rank's memory that is not the job's).
- After each optimizer's first step: the bytes of the parameters it trains (with the DDP models'
  own), their gradients, and its state tensors (Adam's moments, ...), walked once. Sharded
  tensors count as this rank's shard: a DTensor (FSDP2) by its local tensor, an FSDP
  FlatParameter by its local shard, with its unsharded size beside it.
- The training step after the first one: the tensors autograd saves for backward, counted through
  saved-tensor hooks pushed only for that step (only when no other hooks are active and nothing
  was compiled; the in-place check autograd makes without hooks is kept).
- At steps 2, 4, 8, ... and at the end: the peak so far. On CPU the process's VmHWM / VmRSS from
  /proc/self/status (30-60 µs per read; on other steps the hooks cost under 1 µs); on a GPU the
  caching allocator's statistics for the parameters' device.

Never raises into the script: a failure is said once, in a Note.
"""

from __future__ import annotations

import atexit
import sys
import time
from typing import Any, Iterable, Optional

import torch
from torch.optim.optimizer import (register_optimizer_step_post_hook,
                                   register_optimizer_step_pre_hook)

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.inrank import recorder

_state: dict[str, Any] = {
    "optimizers": [],  # every optimizer that has stepped (strong refs: a few objects)
    "measured": set(),  # id() of the optimizers measured after their first step
    "peaks_at": set(),  # steps whose peak was recorded
    "device": None,  # torch.device of the parameters (None: not known yet)
    "window": None,  # the activation window while open
    "window_done": False,
    "ended": False,
}


# -- process and allocator numbers ---------------------------------------------------------------

def _proc_status() -> tuple[Optional[int], Optional[int]]:
    """(VmRSS, VmHWM) of this process in bytes, from /proc/self/status."""
    rss = hwm = None
    try:
        with open("/proc/self/status", "rb") as handle:
            for line in handle:
                if line.startswith(b"VmRSS:"):
                    rss = int(line.split()[1]) * 1024
                elif line.startswith(b"VmHWM:"):
                    hwm = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    if hwm is None:
        try:
            import resource

            hwm = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
        except (ImportError, OSError, ValueError):
            pass
    return rss, hwm


def _device_numbers() -> tuple[str, Optional[int], Optional[int], Optional[int]]:
    """(device, current, peak, reserved): the allocator's on a GPU, the process's on CPU."""
    device = _state["device"]
    if device is not None and device.type == "cuda":
        try:
            return (str(device), int(torch.cuda.memory_allocated(device)),
                    int(torch.cuda.max_memory_allocated(device)),
                    int(torch.cuda.memory_reserved(device)))
        except Exception:  # noqa: BLE001 - fall back to the process's numbers
            pass
    rss, hwm = _proc_status()
    return "cpu", rss, hwm, None


# -- tensor bytes --------------------------------------------------------------------------------

def _local(tensor: torch.Tensor) -> torch.Tensor:
    """The part of a tensor this rank stores: a DTensor's local shard, else the tensor."""
    return getattr(tensor, "_local_tensor", tensor)


def _bytes(tensor: Any) -> int:
    try:
        local = _local(tensor)
        return int(local.numel()) * int(local.element_size())
    except Exception:  # noqa: BLE001 - an exotic subclass: not counted
        return 0


def _full_bytes(param: Any) -> int:
    """The parameter's unsharded size: FSDP's FlatParameter keeps it; a DTensor's shape is global."""
    unsharded = getattr(param, "_unpadded_unsharded_size", None)
    if unsharded is not None:
        try:
            return int(torch.Size(unsharded).numel()) * int(param.element_size())
        except Exception:  # noqa: BLE001
            pass
    try:
        return int(param.numel()) * int(param.element_size())
    except Exception:  # noqa: BLE001
        return _bytes(param)


def _sharding(params: Iterable[Any], optimizers: Iterable[Any]) -> str:
    if any(type(o).__name__ == "ZeroRedundancyOptimizer" for o in optimizers):
        return "zero"
    for p in params:
        if hasattr(p, "_local_tensor"):
            return "fsdp2"
        if hasattr(p, "_unpadded_unsharded_size") or getattr(p, "_fsdp_flattened", False):
            return "fsdp"
    return ""


def _trained_params() -> list[Any]:
    """The parameters of every optimizer that stepped and of every DDP model, each once."""
    from ddpdoctor.probe.inrank import ddp

    seen: dict[int, Any] = {}
    for optimizer in _state["optimizers"]:
        for group in getattr(optimizer, "param_groups", []):
            for p in group.get("params", []):
                seen.setdefault(id(p), p)
    for state in ddp.all_states():
        for p in state.model.module.parameters():
            seen.setdefault(id(p), p)
    return list(seen.values())


def _optimizer_bytes() -> int:
    seen: set[int] = set()
    total = 0
    for optimizer in _state["optimizers"]:
        for per_param in list(getattr(optimizer, "state", {}).values()):
            values = per_param.values() if isinstance(per_param, dict) else ()
            for value in list(values):
                if isinstance(value, torch.Tensor) and id(value) not in seen:
                    seen.add(id(value))
                    total += _bytes(value)
    return total


def _note(key: str, text: str) -> None:
    try:
        recorder.get().note_once(key, text)
    except Exception:  # noqa: BLE001
        pass


def _write(moment: str, **fields: Any) -> None:
    rec = recorder.get()
    device, current, peak, reserved = _device_numbers()
    rec.write(tm.Memory(time.time(), rec.step, moment, device, current, peak,
                        reserved=reserved, **fields))


def _measure_held() -> None:
    """Parameters, gradients and optimizer state, after an optimizer's first step."""
    params = _trained_params()
    if _state["device"] is None:
        for p in params:
            device = _local(p).device
            if device.type != "meta":
                _state["device"] = device
                break
    grads = 0
    for p in params:
        grad = getattr(p, "grad", None)
        if grad is not None:
            grads += _bytes(grad)
    _write("step", params=sum(_bytes(p) for p in params),
           params_full=sum(_full_bytes(p) for p in params), grads=grads,
           optimizer=_optimizer_bytes(), sharding=_sharding(params, _state["optimizers"]))


# -- activations: one training step under saved-tensor hooks -------------------------------------

class _Window:
    """Counts the storages autograd saves for backward while pushed (one step)."""

    def __init__(self, param_ptrs: set[int]) -> None:
        self.param_ptrs = param_ptrs
        self.saved: dict[int, int] = {}
        self.pushed = False

    def pack(self, tensor: torch.Tensor) -> Any:
        try:
            base = tensor._base
            is_param = tensor.requires_grad and (
                tensor.is_leaf or (base is not None and base.is_leaf and base.requires_grad))
            if not is_param:
                try:
                    storage = tensor.untyped_storage()
                    key, size = storage.data_ptr(), storage.nbytes()
                except Exception:  # noqa: BLE001 - a subclass without storage: its own bytes
                    key, size = id(tensor), _bytes(tensor)
                if key not in self.param_ptrs and key not in self.saved:
                    self.saved[key] = size
        except Exception:  # noqa: BLE001 - counting must never break the step
            pass
        # detach: the packed value must not hold the tensor itself (reference cycle); the version
        # is kept because autograd skips its in-place check for tensors saved through hooks.
        return tensor.detach(), tensor._version

    @staticmethod
    def unpack(packed: Any) -> torch.Tensor:
        tensor, version = packed
        if tensor._version != version:
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: its version is {tensor._version}; expected version {version} "
                "instead (raised by ddpdoctor's memory probe in place of autograd's own check)")
        return tensor


def _compiled_anything() -> bool:
    dynamo = sys.modules.get("torch._dynamo")
    if dynamo is None:
        return False
    try:
        counters = dynamo.utils.counters
        return any(counters.get(key) for key in ("frames", "stats", "aot_autograd"))
    except Exception:  # noqa: BLE001 - unsure: treat as compiled
        return True


def _open_window(params: list[Any]) -> None:
    autograd = torch._C._autograd
    if (_compiled_anything() or not autograd._saved_tensors_hooks_is_enabled()
            or autograd._top_saved_tensors_default_hooks(False) is not None):
        _state["window_done"] = True  # the script's own hooks (or a compiled graph) come first
        return
    ptrs = set()
    for p in params:
        try:
            ptrs.add(_local(p).untyped_storage().data_ptr())
        except Exception:  # noqa: BLE001
            pass
    window = _Window(ptrs)
    autograd._push_saved_tensors_default_hooks(window.pack, window.unpack)
    window.pushed = True
    _state["window"] = window


def _close_window() -> None:
    """Pop the hooks if they are on top (a context of the script's that opened inside the step
    and is still open keeps them below it: tried again at the next step boundary)."""
    window: Optional[_Window] = _state["window"]
    if window is None or not window.pushed:
        return
    autograd = torch._C._autograd
    top = autograd._top_saved_tensors_default_hooks(False)
    if top is None or getattr(top[0], "__self__", None) is not window:
        return
    autograd._pop_saved_tensors_default_hooks()
    window.pushed = False
    _state["window"] = None
    _state["window_done"] = True
    _write("activations", activations=sum(window.saved.values()))


# -- hooks ---------------------------------------------------------------------------------------

def _end_window() -> None:
    """At a step boundary after the window saw a training step's tensors. (Not before: with a
    closure, optimizer.step(closure) as Lightning calls it, the forward and backward run inside
    the step, after its pre-hook.)"""
    window: Optional[_Window] = _state["window"]
    if window is not None and window.saved:
        try:
            _close_window()
        except Exception as exc:  # noqa: BLE001
            _note("memory-window", f"memory probe: activations not measured ({exc!r})")


def _before_step(optimizer: Any, args: Any, kwargs: Any) -> None:
    if _state["window"] is not None:
        _end_window()


def _after_step(optimizer: Any, args: Any, kwargs: Any) -> None:
    if _state["window"] is not None:
        _end_window()
    try:
        if id(optimizer) not in _state["measured"]:
            _state["measured"].add(id(optimizer))
            _state["optimizers"].append(optimizer)
            _measure_held()
            if not _state["window_done"] and _state["window"] is None:
                _open_window(_trained_params())
            return
        step = recorder.get().step
        if step >= 2 and step & (step - 1) == 0 and step not in _state["peaks_at"]:
            _state["peaks_at"].add(step)  # powers of two: a handful of reads per run
            _write("step")
    except Exception as exc:  # noqa: BLE001 - the user's training goes on
        _note("memory", f"memory probe failed: {exc!r}")


def end() -> None:
    """The closing reading (once): at the rank's finish, before the probe's own closing work;
    at exit where finish never ran."""
    if _state["ended"]:
        return
    _state["ended"] = True
    try:
        _write("end")
    except Exception:  # noqa: BLE001 - the process is ending
        pass


def install() -> None:
    _write("start")
    register_optimizer_step_pre_hook(_before_step)
    register_optimizer_step_post_hook(_after_step)
    atexit.register(end)
