"""`probe --cpu`: run a script written for CUDA and NCCL on the CPU with gloo, unchanged.

CI runners rarely have GPUs, and a GPU script cannot even start on one (notes §9): NCCL is not
built in, `torch.cuda.set_device` has no backend, `.cuda()` asserts. This shim remaps, inside each
rank and before the script runs:

- init_process_group / new_group: an NCCL backend (or none) becomes gloo; a CUDA `device_id` is
  dropped;
- torch.cuda: is_available() is True (the script takes its GPU path), device_count() is the local
  world size, set_device / synchronize are no-ops, device queries answer for a CPU "device",
  Events are wall-clock stand-ins;
- torch.accelerator, the device-agnostic API (is_available, device_count, current_accelerator,
  set_device_index, current_device_index, synchronize, device_index, the memory queries): the
  same answers, with a 'cuda' accelerator, so `torch.device(f"{acc}:{rank}")` names a CUDA
  device that the remaps below move to the CPU. Only the script is told so: a call from torch's
  own code (the optimizer's graph-capture check, the DataLoader's pinning thread, c10d) gets the
  real answer, no accelerator, and keeps its CPU path;
- CUDA devices become the CPU wherever a script names one: `.cuda()`, `.to(...)` on tensors and
  modules (strings, ints, torch.device), `device=` of the tensor factories and `Tensor.new_*`,
  `torch.load(map_location=...)`, `pin_memory()`;
- DDP: `device_ids` and `output_device` are dropped (a CPU module takes neither);
- AMP: GradScaler and autocast for CUDA are disabled pass-throughs, so the run is fp32.

Each remap says once per rank, in a Note, that the script hit it and where, so the report tells
what the CPU run stood in for; UNCOVERED says what it cannot stand in for. The shim is installed
before the other instruments, so they wrap it and record what the script asked for (the backend
'nccl', DDP's device_ids) while torch receives the CPU version.

Every patched function is on the user's hot path (`.to()` above all): the common case is a couple
of type checks, and the call site is looked up only on a remap's first hit.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
import time
import types
from typing import Any, Callable, Optional

import torch
import torch.distributed.distributed_c10d as c10d
from torch.nn.parallel import DistributedDataParallel as DDP

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.inrank import hooks, recorder

PREFIX = "--cpu: "
UNCOVERED = (PREFIX + "CUDA and NCCL ran on the CPU and gloo, remapped as the notes below say. Not "
             "covered: AMP (autocast and GradScaler are off, the run is fp32); tensors report "
             "is_cuda False and device 'cpu' (code branching on them takes its CPU branch); "
             "torch.device(<int>), torch.Generator(device='cuda'), CUDA streams and graphs "
             "(torch.accelerator.current_stream/set_stream/Graph included), "
             "torch.version.cuda and torch.backends.cudnn (they still say CPU build), "
             "NCCL-only options, custom CUDA kernels; timings (DDP6xx) are CPU timings")
DEVICE_NAME = "CPU (ddpdoctor probe --cpu)"
FACTORIES = (
    "zeros", "ones", "empty", "full", "rand", "randn", "randint", "randperm", "arange", "range",
    "linspace", "logspace", "eye", "tensor", "as_tensor", "empty_strided", "zeros_like",
    "ones_like", "empty_like", "full_like", "rand_like", "randn_like", "randint_like",
)
NEW_METHODS = ("new_tensor", "new_zeros", "new_ones", "new_empty", "new_full")
MOVED = "tensors and modules moved to CUDA (.cuda(), .to(...)) stayed on the CPU"

_hit: set[str] = set()
_device = {"index": 0}  # torch.cuda.current_device(): the local rank until set_device says otherwise
_asked: set[str] = set()
_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep


def _answered(call: str, answer: Any) -> Any:
    """Record once per rank which device question the script asked and what it was told (for
    the report of a script that still stopped before training); return the answer."""
    if call not in _asked:
        _asked.add(call)
        try:
            recorder.get().write(tm.DeviceQuery(time.time(), call, repr(answer), recorder.user_site(3)))
        except Exception:  # noqa: BLE001 - a record lost never breaks the script
            pass
    return answer


def _from_torch(depth: int = 2) -> bool:
    """The caller `depth` frames up is torch's own code (which must keep seeing the CPU)."""
    return sys._getframe(depth).f_code.co_filename.startswith(_TORCH_DIR)


def _note(key: str, text: str) -> None:
    """Say once per rank that the script hit this remap, with its first call site."""
    if key in _hit:
        return
    _hit.add(key)
    site = recorder.user_site(2)  # walks out past torch and ddpdoctor to the script's line
    recorder.get().note_once("cpu:" + key, PREFIX + text + (f" (first at {site})" if site else ""))


def _is_cuda(device: Any) -> bool:
    """A CUDA device in any spelling torch accepts: 'cuda', 'cuda:1', torch.device, a bare int."""
    if type(device) is str:
        return device.startswith("cuda")
    if type(device) is torch.device:
        return device.type == "cuda"
    return type(device) is int


# -- process groups ------------------------------------------------------------------------

def _cpu_backend(arguments: dict, what: str) -> None:
    """Rewrite a bound call's backend and device_id in place."""
    backend = arguments.get("backend")
    if backend is None or "nccl" in str(backend).lower():
        arguments["backend"] = "gloo"
        if backend is not None:
            _note(what, f"{what}({str(backend)!r}) ran on gloo")
    if arguments.get("device_id") is not None:
        _note(what + ":device_id", f"{what}(device_id=<CUDA device>) ran without a device")
        arguments["device_id"] = None


def _patch_process_groups() -> None:
    init_signature = inspect.signature(hooks.original("init_process_group"))

    def init_process_group(call: Callable, *args: Any, **kwargs: Any) -> Any:
        bound = hooks.bind(init_signature, args, kwargs)
        if bound is None:
            return call(*args, **kwargs)
        _cpu_backend(bound.arguments, "init_process_group")
        return call(*bound.args, **bound.kwargs)

    group_signature = inspect.signature(hooks.original("new_group"))

    def new_group(call: Callable, *args: Any, **kwargs: Any) -> Any:
        bound = hooks.bind(group_signature, args, kwargs)
        if bound is None:
            return call(*args, **kwargs)
        if bound.arguments.get("backend") is not None or bound.arguments.get("device_id") is not None:
            _cpu_backend(bound.arguments, "new_group")
        return call(*bound.args, **bound.kwargs)

    hooks.register("init_process_group", "cpu_shim", init_process_group)
    hooks.register("new_group", "cpu_shim", new_group)


# -- torch.cuda ----------------------------------------------------------------------------

class Event:
    """torch.cuda.Event on the CPU: record() takes the wall clock, elapsed_time() is in ms."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False, external: bool = False) -> None:
        _note("event", "torch.cuda.Event timings are wall-clock times on the CPU")
        self._at: Optional[float] = None

    def record(self, stream: Any = None) -> None:
        self._at = time.perf_counter()

    def wait(self, stream: Any = None) -> None:
        pass

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end_event: "Event") -> float:
        if self._at is None or end_event._at is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return (end_event._at - self._at) * 1000.0


class CudaDevice:
    """torch.cuda.device: `with torch.cuda.device(i):` selects nothing on the CPU."""

    def __init__(self, device: Any) -> None:
        self.idx = _index(device)  # torch.cuda.device has it too

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> bool:
        return False


def _index(device: Any) -> int:
    if isinstance(device, torch.device):
        return device.index or 0
    if isinstance(device, str):
        return int(device.split(":", 1)[1]) if ":" in device else _device["index"]
    return int(device) if device is not None else _device["index"]


def _properties(device: Any = None) -> types.SimpleNamespace:
    _note("query", "torch.cuda device queries answer for the CPU")
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        memory = 0
    return types.SimpleNamespace(name=DEVICE_NAME, total_memory=memory, major=8, minor=0,
                                 multi_processor_count=os.cpu_count() or 1, is_integrated=False,
                                 is_multi_gpu_board=False, uuid="cpu")


def _patch_cuda(local_world_size: int) -> None:
    cuda = torch.cuda

    def is_available() -> bool:
        return _answered("torch.cuda.is_available()", True)

    def device_count() -> int:
        return _answered("torch.cuda.device_count()", local_world_size)

    def set_device(device: Any) -> None:
        _note("set_device", "torch.cuda.set_device() selects nothing on the CPU")
        _device["index"] = _index(device)

    def current_device() -> int:
        return _answered("torch.cuda.current_device()", _device["index"])

    def synchronize(device: Any = None) -> None:
        _note("synchronize", "torch.cuda.synchronize() returns at once on the CPU")

    def get_device_name(device: Any = None) -> str:
        return _answered("torch.cuda.get_device_name()", _properties(device).name)

    def get_device_capability(device: Any = None) -> tuple[int, int]:
        props = _properties(device)
        return props.major, props.minor

    def is_bf16_supported(including_emulation: bool = True) -> bool:
        return True

    def mem_get_info(device: Any = None) -> tuple[int, int]:
        total = _properties(device).total_memory
        return total, total

    def nothing(*args: Any, **kwargs: Any) -> None:
        return None

    replacements: dict[str, Any] = {
        "is_available": is_available, "device_count": device_count, "set_device": set_device,
        "current_device": current_device, "synchronize": synchronize,
        "get_device_name": get_device_name, "get_device_properties": _properties,
        "get_device_capability": get_device_capability, "is_bf16_supported": is_bf16_supported,
        "mem_get_info": mem_get_info, "reset_peak_memory_stats": nothing,
        "reset_max_memory_allocated": nothing, "reset_accumulated_memory_stats": nothing,
        "ipc_collect": nothing, "device": CudaDevice, "Event": Event,
    }
    for name, value in replacements.items():
        setattr(cuda, name, value)


# -- torch.accelerator ---------------------------------------------------------------------

CUDA = torch.device("cuda")


def _patch_accelerator(local_world_size: int) -> None:
    """torch.accelerator answers as torch.cuda does above, with a 'cuda' accelerator, to the
    script only: torch's own callers get the original (no accelerator on this build)."""
    acc = torch.accelerator
    original = {name: getattr(acc, name) for name in dir(acc) if not name.startswith("_")}

    def for_script(name: str, stand_in: Callable) -> Callable:
        real = original[name]

        @functools.wraps(real)
        def answer(*args: Any, **kwargs: Any) -> Any:
            if _from_torch():
                return real(*args, **kwargs)
            return stand_in(*args, **kwargs)

        return answer

    def is_available() -> bool:
        if "acc" not in _hit:
            _note("acc", f"torch.accelerator answers for the CPU as a 'cuda' accelerator: is_available() "
                  f"True, device_count() {local_world_size} (the local ranks)")
        return _answered("torch.accelerator.is_available()", True)

    def device_count() -> int:
        if "acc" not in _hit:
            is_available()
        return _answered("torch.accelerator.device_count()", local_world_size)

    def current_accelerator(check_available: bool = False) -> torch.device:
        if "acc" not in _hit:
            is_available()
        return _answered("torch.accelerator.current_accelerator()", CUDA)

    def set_device_index(device: Any, /) -> None:
        _note("acc_set", "torch.accelerator.set_device_index() selects nothing on the CPU")
        index = _index(device)
        if index >= 0:  # torch: a negative index is a no-op
            _device["index"] = index

    def current_device_index() -> int:
        return _answered("torch.accelerator.current_device_index()", _device["index"])

    def synchronize(device: Any = None, /) -> None:
        _note("acc_sync", "torch.accelerator.synchronize() returns at once on the CPU")

    def device_index(device: Any, /) -> CudaDevice:
        return CudaDevice(device if device is not None else _device["index"])

    def get_memory_info(device_index: Any = None, /) -> tuple[int, int]:
        total = _properties(device_index).total_memory
        return total, total

    def zero(*args: Any, **kwargs: Any) -> int:
        return 0

    def nothing(*args: Any, **kwargs: Any) -> None:
        return None

    def no_stats(*args: Any, **kwargs: Any) -> dict:
        return {}

    stand_ins: dict[str, Callable] = {
        "is_available": is_available, "device_count": device_count,
        "current_accelerator": current_accelerator, "set_device_index": set_device_index,
        "set_device_idx": set_device_index, "current_device_index": current_device_index,
        "current_device_idx": current_device_index, "synchronize": synchronize,
        "device_index": device_index, "get_memory_info": get_memory_info,
        "memory_allocated": zero, "max_memory_allocated": zero, "memory_reserved": zero,
        "max_memory_reserved": zero, "memory_stats": no_stats, "empty_cache": nothing,
        "empty_host_cache": nothing, "reset_peak_memory_stats": nothing,
        "reset_accumulated_memory_stats": nothing,
    }
    for name, stand_in in stand_ins.items():
        if name in original:
            setattr(acc, name, for_script(name, stand_in))


# -- devices in tensors, modules, factories, torch.load -----------------------------------

def _patch_moves() -> None:
    tensor_to, module_to = torch.Tensor.to, torch.nn.Module.to

    def cpu_to(original: Callable) -> Callable:
        @functools.wraps(original)
        def to(self: Any, *args: Any, **kwargs: Any) -> Any:
            if args and _is_cuda(args[0]):
                if "move" not in _hit:
                    _note("move", MOVED)
                args = ("cpu", *args[1:])
            elif "device" in kwargs and _is_cuda(kwargs["device"]):
                if "move" not in _hit:
                    _note("move", MOVED)
                kwargs["device"] = "cpu"
            return original(self, *args, **kwargs)

        return to

    def stays(original: Callable, key: str, text: str) -> Callable:
        @functools.wraps(original)
        def on_cpu(self: Any, *args: Any, **kwargs: Any) -> Any:
            if key not in _hit:
                _note(key, text)
            return self

        return on_cpu

    torch.Tensor.to = cpu_to(tensor_to)
    torch.nn.Module.to = cpu_to(module_to)
    torch.Tensor.cuda = stays(torch.Tensor.cuda, "move", MOVED)
    torch.nn.Module.cuda = stays(torch.nn.Module.cuda, "move", MOVED)
    torch.Tensor.pin_memory = stays(torch.Tensor.pin_memory, "pin_memory",
                                    "pin_memory() is a no-op on the CPU")

    def cpu_factory(name: str, original: Callable) -> Callable:
        @functools.wraps(original)
        def factory(*args: Any, **kwargs: Any) -> Any:
            if "device" in kwargs and _is_cuda(kwargs["device"]):
                if "factory" not in _hit:
                    _note("factory", f"tensors created on a CUDA device (torch.{name}(device=...) "
                          "and the like) are CPU tensors")
                kwargs["device"] = "cpu"
            return original(*args, **kwargs)

        return factory

    for name in FACTORIES:
        original = getattr(torch, name, None)
        if original is not None:
            setattr(torch, name, cpu_factory(name, original))
    for name in NEW_METHODS:
        original = getattr(torch.Tensor, name, None)
        if original is not None:
            setattr(torch.Tensor, name, cpu_factory(f"Tensor.{name}", original))

    def load(call: Callable, f: Any, map_location: Any = None, *args: Any, **kwargs: Any) -> Any:
        # None too: a checkpoint saved on a GPU holds CUDA storages, which only load onto the CPU.
        if map_location is not None and not _is_cpu(map_location):
            _note("load", "torch.load(map_location=...) loaded the checkpoint onto the CPU")
        return call(f, "cpu", *args, **kwargs)

    hooks.register("torch.load", "cpu_shim", load)


def _is_cpu(map_location: Any) -> bool:
    if isinstance(map_location, str):
        return map_location == "cpu"
    return isinstance(map_location, torch.device) and map_location.type == "cpu"


# -- DDP and AMP ---------------------------------------------------------------------------

def _rewriting(original: Callable, rewrite: Callable[[dict], None]) -> Callable:
    """A hook that lets `rewrite` edit the call's bound arguments before torch sees them."""
    signature = inspect.signature(original)

    def __init__(call: Callable, self: Any, *args: Any, **kwargs: Any) -> None:
        bound = hooks.bind(signature, (self, *args), kwargs)
        if bound is None:
            return call(self, *args, **kwargs)
        rewrite(bound.arguments)
        call(*bound.args, **bound.kwargs)

    return __init__


def _drop_arguments(cls: type, rewrite: Callable[[dict], None]) -> None:
    """Wrap cls.__init__, which no other instrument hooks, with _rewriting."""
    original = cls.__init__
    hook = _rewriting(original, rewrite)

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        hook(original, self, *args, **kwargs)

    cls.__init__ = __init__


def _ddp_on_cpu(arguments: dict) -> None:
    given = [k for k in ("device_ids", "output_device") if arguments.pop(k, None) is not None]
    if given:
        _note("ddp", f"DDP's {' and '.join(given)} dropped: DDP wraps a CPU module")


def _scaler_on_cpu(arguments: dict) -> None:
    if _is_cuda(arguments.get("device", "cuda")):
        arguments["device"], arguments["enabled"] = "cpu", False
        _note("scaler", "GradScaler is disabled: scale() and step() pass through unscaled")


def _autocast_on_cpu(arguments: dict) -> None:
    if arguments.get("device_type") == "cuda":
        arguments["device_type"], arguments["enabled"] = "cpu", False
        dtype = arguments.get("dtype")
        spelled = f", dtype={str(dtype).replace('torch.', '')}" if dtype is not None else ""
        _note("autocast", f"autocast('cuda'{spelled}) is disabled: the forward runs in fp32")


def install() -> None:
    """Apply every remap in this rank (`probe --cpu`), before the other instruments."""
    _device["index"] = int(os.environ.get("LOCAL_RANK", "0"))
    _patch_process_groups()
    _patch_cuda(int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
    _patch_accelerator(int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
    _patch_moves()
    hooks.register("DDP.__init__", "cpu_shim", _rewriting(hooks.original("DDP.__init__"), _ddp_on_cpu))
    _drop_arguments(torch.amp.grad_scaler.GradScaler, _scaler_on_cpu)
    _drop_arguments(torch.amp.autocast_mode.autocast, _autocast_on_cpu)
    recorder.get().note_once("cpu:uncovered", UNCOVERED)
