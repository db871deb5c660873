"""Which training framework drives this rank, and where the user configured it.

HF Trainer, Lightning and Accelerate build the DDP model, the sampler and the collectives
themselves, so the line a finding should name is the one where the user configured the
framework (TrainingArguments(...), Trainer(...), Accelerator(...), prepare(...), self.log(...,
sync_dist=True)), not the DDP(...) call inside the library. These instruments record those
lines, once per call site, when the framework's module is imported (a post-import hook: nothing
is imported early, nothing runs per step except LightningModule.log's one set lookup).

Never raises into the script: every hook is guarded and says once, in a Note, if it failed.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.util
import sys
import threading
import time
from typing import Any, Callable, Optional

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.inrank import recorder

_seen: set = set()  # (event, site file, site line): each configuring call recorded once
_seen_lock = threading.Lock()


def _version(package: str) -> str:
    module = sys.modules.get(package)
    return str(getattr(module, "__version__", "") or "")


def _record(name: str, package: str, event: str, settings: dict, depth: int = 2,
            site: Optional[tm.Site] = None) -> None:
    site = site if site is not None else recorder.user_site(depth)
    key = (name, event, site.file if site else "", site.line if site else 0)
    with _seen_lock:
        if key in _seen:
            return
        _seen.add(key)
    rec = recorder.get()
    rec.write(tm.FrameworkUse(time.time(), name, _version(package), event, settings, site, rec.step))


def _plain(value: Any) -> Any:
    """A setting as JSON can hold it: numbers, strings, booleans, None; anything else by name."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value[:8]]
    return type(value).__name__ if not hasattr(value, "value") else str(getattr(value, "value"))


def _guarded(label: str, fn: Callable[[], None]) -> None:
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the user's job must run whatever we fail to see
        recorder.get().note_once(f"framework-{label}", f"framework instrument {label} failed: {exc!r}")


def _after_init(cls: Any, what: Callable[[Any], None]) -> None:
    """Run what(self) after cls.__init__ (guarded), once per class."""
    original = cls.__init__
    if getattr(original, "__ddpdoctor__", False):
        return

    @functools.wraps(original)
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        _guarded(cls.__name__, lambda: what(self))

    __init__.__ddpdoctor__ = True
    cls.__init__ = __init__


# -- Hugging Face transformers -------------------------------------------------------------------

def _hook_training_args(module: Any) -> None:
    cls = getattr(module, "TrainingArguments", None)
    if cls is None:
        return
    original = cls.__post_init__

    @functools.wraps(original)
    def __post_init__(self: Any, *args: Any, **kwargs: Any) -> None:
        # Before the original: it may form the process group, and its site is the same line.
        site = recorder.user_site(2)
        try:
            return original(self, *args, **kwargs)
        finally:
            _guarded("TrainingArguments", lambda: _record("transformers", "transformers",
                                                          "TrainingArguments", {
                "ddp_find_unused_parameters": _plain(getattr(self, "ddp_find_unused_parameters", None)),
                "gradient_checkpointing": _plain(getattr(self, "gradient_checkpointing", None)),
                "fsdp": _plain(getattr(self, "fsdp", None)) or None,
                "deepspeed": bool(getattr(self, "deepspeed", None)),
                "gradient_accumulation_steps": _plain(getattr(self, "gradient_accumulation_steps", None)),
            }, site=site))

    cls.__post_init__ = __post_init__


# -- Lightning ---------------------------------------------------------------------------------

def _hook_lightning_trainer(package: str) -> Callable[[Any], None]:
    def hook(module: Any) -> None:
        cls = getattr(module, "Trainer", None)
        if cls is None:
            return

        def what(trainer: Any) -> None:
            strategy = getattr(trainer, "strategy", None)
            ddp_kwargs = getattr(strategy, "_ddp_kwargs", None) or {}
            connector = getattr(trainer, "_accelerator_connector", None)
            _record("lightning", package, "Trainer", {
                "strategy": type(strategy).__name__ if strategy is not None else None,
                "find_unused_parameters": _plain(ddp_kwargs.get("find_unused_parameters")),
                "use_distributed_sampler": _plain(getattr(connector, "use_distributed_sampler", None)),
                "accumulate_grad_batches": _plain(getattr(trainer, "accumulate_grad_batches", None)),
            }, depth=2)

        _after_init(cls, what)
    return hook


def _hook_lightning_module(package: str) -> Callable[[Any], None]:
    def hook(module: Any) -> None:
        cls = getattr(module, "LightningModule", None)
        if cls is None or getattr(cls.log, "__ddpdoctor__", False):
            return
        original = cls.log
        logged: set = set()  # (name, caller code, line): the per-call cost is this lookup

        @functools.wraps(original)
        def log(self: Any, name: str, value: Any, *args: Any, **kwargs: Any) -> Any:
            if kwargs.get("sync_dist"):
                caller = sys._getframe(1)
                key = (name, caller.f_code, caller.f_lineno)
                if key not in logged:
                    logged.add(key)
                    _guarded("LightningModule.log", lambda: _record(
                        "lightning", package, "log_sync_dist", {"name": str(name)}, depth=2))
            return original(self, name, value, *args, **kwargs)

        log.__ddpdoctor__ = True
        cls.log = log
    return hook


# -- Accelerate ----------------------------------------------------------------------------------

def _hook_accelerator(module: Any) -> None:
    cls = getattr(module, "Accelerator", None)
    if cls is None:
        return

    def what(accelerator: Any) -> None:
        handlers = getattr(accelerator, "ddp_handler", None)
        _record("accelerate", "accelerate", "Accelerator", {
            "distributed_type": _plain(getattr(accelerator, "distributed_type", None)),
            "find_unused_parameters": _plain(getattr(handlers, "find_unused_parameters", None)),
            "gradient_accumulation_steps": _plain(getattr(accelerator, "gradient_accumulation_steps", None)),
        }, depth=2)

    _after_init(cls, what)
    original_prepare = cls.prepare
    if getattr(original_prepare, "__ddpdoctor__", False):
        return

    @functools.wraps(original_prepare)
    def prepare(self: Any, *args: Any, **kwargs: Any) -> Any:
        def what() -> None:
            from torch.utils.data import DataLoader

            kinds = [type(a).__name__ for a in args]
            _record("accelerate", "accelerate", "prepare", {
                "objects": kinds[:16],
                "dataloaders": sum(isinstance(a, DataLoader) for a in args),
            }, depth=2)
        _guarded("Accelerator.prepare", what)
        return original_prepare(self, *args, **kwargs)

    prepare.__ddpdoctor__ = True
    cls.prepare = prepare


# -- FSDP and FSDP2 ------------------------------------------------------------------------------

def _hook_fsdp(module: Any) -> None:
    cls = getattr(module, "FullyShardedDataParallel", None)
    if cls is not None:
        def what(fsdp: Any) -> None:
            _record("fsdp", "torch", "FullyShardedDataParallel", {
                "sharding_strategy": _plain(getattr(fsdp, "sharding_strategy", None)),
            }, depth=2)
        _after_init(cls, what)
    original = getattr(module, "fully_shard", None)
    if original is None or getattr(original, "__ddpdoctor__", False):
        return

    @functools.wraps(original)
    def fully_shard(*args: Any, **kwargs: Any) -> Any:
        _guarded("fully_shard", lambda: _record("fsdp2", "torch", "fully_shard", {}, depth=2))
        return original(*args, **kwargs)

    fully_shard.__ddpdoctor__ = True
    module.fully_shard = fully_shard


HOOKS: dict[str, Callable[[Any], None]] = {
    "transformers.training_args": _hook_training_args,
    "lightning.pytorch.trainer.trainer": _hook_lightning_trainer("lightning"),
    "pytorch_lightning.trainer.trainer": _hook_lightning_trainer("pytorch_lightning"),
    "lightning.pytorch.core.module": _hook_lightning_module("lightning"),
    "pytorch_lightning.core.module": _hook_lightning_module("pytorch_lightning"),
    "accelerate.accelerator": _hook_accelerator,
    "torch.distributed.fsdp": _hook_fsdp,
}


class _PostImport(importlib.abc.MetaPathFinder):
    """Runs HOOKS[name](module) right after `name` is imported, wherever the import came from.

    The module is found by the other finders and loaded by its own loader, unchanged; only that
    loader's exec_module is followed by the hook."""

    def __init__(self) -> None:
        self._finding: set[str] = set()

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        hook = HOOKS.get(fullname)
        if hook is None or fullname in self._finding:
            return None
        self._finding.add(fullname)
        try:
            spec = importlib.util.find_spec(fullname)
        except (ImportError, ValueError):
            return None
        finally:
            self._finding.discard(fullname)
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        original = loader.exec_module

        def exec_module(module: Any) -> None:
            original(module)
            _guarded(fullname, lambda: hook(module))

        loader.exec_module = exec_module
        return spec


def install() -> None:
    """Hook the frameworks' modules: those imported already now, the others when imported."""
    for name, hook in HOOKS.items():
        module = sys.modules.get(name)
        if module is not None:
            _guarded(name, lambda: hook(module))
    sys.meta_path.insert(0, _PostImport())


def in_stack() -> Optional[str]:
    """The outermost framework package in the current stack ("transformers", "lightning",
    "accelerate", "deepspeed"), or None: the framework that drove this call."""
    found = None
    frame = sys._getframe(1)
    while frame is not None:
        top = str(frame.f_globals.get("__name__", "")).split(".", 1)[0]
        if top in _PACKAGES:
            found = top
        frame = frame.f_back
    return found


_PACKAGES = {"transformers", "lightning", "pytorch_lightning", "lightning_fabric", "accelerate",
             "deepspeed"}


def record_driver(event: str) -> None:
    """At init_process_group / DDP construction: which framework (if any) made the call."""
    try:
        package = in_stack()
        if package is None:
            return
        name = {"pytorch_lightning": "lightning", "lightning_fabric": "lightning"}.get(package, package)
        _record(name, package, event, {}, depth=2)
    except Exception as exc:  # noqa: BLE001 - never into the user's job
        recorder.get().note_once("framework-driver", f"framework detection failed: {exc!r}")
