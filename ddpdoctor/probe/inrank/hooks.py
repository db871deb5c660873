"""One patch per torch entry point, dispatching to the instruments that hook it, in a declared
order (as pytest declares its hooks once and each plugin says when it runs): no two instruments
patch the same function in turn, and no install order or comment decides who runs first.

A hook is `hook(call, *args, **kwargs)`: it does its work around `call(*args, **kwargs)` (the
next hook inward; the original last), may hand it other arguments (--cpu's map_location), and
returns what the call returned. ORDER lists, per entry point, the instruments that may hook it,
outermost first: the first sees the script's own arguments and runs its "after" part last.

A hook that raises is a ddpdoctor bug, never the script's problem: it is switched off for the
rest of the run, said once in a Note, and the call goes on without it; the original runs exactly
once either way. What the call itself raises (the script's error, StopIteration at an epoch's
end) passes through unchanged, as does what an entry point declares its hooks raise on purpose
(the --steps-per-epoch cut ends an epoch with StopIteration).

Standard library only here; torch's objects are found by name when an entry point is first hooked.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any, Callable, Optional

# Per entry point: where it lives (module:attribute path; every alias is patched with the same
# function), the instruments that hook it outermost first, and the exceptions hooks raise on
# purpose. Why this order:
# - torch.save/torch.load: the boundary instrument records and wakes the line tracer first; the
#   --cpu shim is innermost, so everything above records what the script asked for
#   (map_location) while torch receives the CPU version.
# - DataLoader.__iter__: the line tracer wakes first; worker_seeds numbers the loader's epoch as
#   the DataLoader instrument is about to (batches keeps a loader's number once it has one) and
#   sets the workers' init function while the iterator starts them.
# - the loader iterator's __next__: the line tracer sees an epoch's end after the DataLoader
#   instrument cut it.
# - init_process_group, new_group, DDP.__init__: as for torch.load, the --cpu shim is innermost.
ORDER: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[type, ...]]] = {
    "torch.save": (("torch:save", "torch.serialization:save"), ("boundaries", "usage"), ()),
    "torch.load": (("torch:load", "torch.serialization:load"), ("boundaries", "cpu_shim"), ()),
    "DataLoader.__iter__": (("torch.utils.data:DataLoader.__iter__",),
                            ("coverage", "worker_seeds", "batches"), ()),
    "DataLoader iterator.__next__": (("torch.utils.data.dataloader:_BaseDataLoaderIter.__next__",),
                                     ("coverage", "batches"), (StopIteration,)),
    "init_process_group": (("torch.distributed:init_process_group",
                            "torch.distributed.distributed_c10d:init_process_group"),
                           ("process_group", "cpu_shim"), ()),
    "new_group": (("torch.distributed:new_group", "torch.distributed.distributed_c10d:new_group"),
                  ("process_group", "cpu_shim"), ()),
    "DDP.__init__": (("torch.nn.parallel:DistributedDataParallel.__init__",), ("ddp", "cpu_shim"), ()),
}

Hook = Callable[..., Any]
_MISSING = object()


def _note_failure(entry: str, instrument: str, exc: BaseException) -> None:
    try:
        from ddpdoctor.probe.inrank import recorder

        recorder.get().note_once(f"hook-{instrument}-{entry}", f"ddpdoctor bug: the {instrument} "
                                 f"instrument failed in {entry} ({exc!r}) and is off from here on")
    except Exception:  # noqa: BLE001 - a note about a bug must not be a second one
        pass


# Told when a hook fails (tests replace it to watch).
on_failure: Callable[[str, str, BaseException], None] = _note_failure


def _resolve(target: str) -> tuple[Any, str]:
    module, _, path = target.partition(":")
    owner: Any = importlib.import_module(module)
    *parents, attribute = path.split(".")
    for name in parents:
        owner = getattr(owner, name)
    return owner, attribute


class EntryPoint:
    """One patched function and the hooks registered for it."""

    def __init__(self, name: str, targets: tuple, order: tuple[str, ...],
                 passes: tuple[type, ...] = (), resolve: Callable[[Any], tuple[Any, str]] = _resolve):
        self.name, self.targets, self.order, self.passes = name, tuple(targets), tuple(order), tuple(passes)
        self._resolve = resolve
        self.hooks: dict[str, Hook] = {}
        self.disabled: set[str] = set()
        self.original: Optional[Callable] = None
        self.chain: Optional[Callable] = None
        self._saved: list[tuple[Any, str, Any]] = []

    def add(self, instrument: str, hook: Hook) -> None:
        """Hook `instrument` into this entry point, at its declared place."""
        if instrument not in self.order:
            raise ValueError(f"{instrument} is not declared for {self.name} (hooks.ORDER)")
        if self.original is None:
            self._patch()
        self.hooks[instrument] = hook
        self._build()

    def _patch(self) -> None:
        places = [self._resolve(target) for target in self.targets]
        owner, attribute = places[0]
        self.original = original = getattr(owner, attribute)
        self._saved = [(o, a, o.__dict__.get(a, _MISSING) if isinstance(o, type) else getattr(o, a))
                       for o, a in places]
        self.chain = original
        entry = self

        def dispatch(*args: Any, **kwargs: Any) -> Any:
            return entry.chain(*args, **kwargs)

        functools.update_wrapper(dispatch, original)  # inspect.signature reads the original's
        # A stack or a call site names what the script called, not this module's function.
        name = getattr(original, "__name__", attribute)
        names = {"co_name": name}
        if hasattr(dispatch.__code__, "co_qualname"):  # Python 3.11 on
            names["co_qualname"] = getattr(original, "__qualname__", name)
        dispatch.__code__ = dispatch.__code__.replace(**names)
        dispatch.__ddpdoctor_entry__ = self.name
        for place_owner, place_attribute in places:
            setattr(place_owner, place_attribute, dispatch)

    def _build(self) -> None:
        call = self.original
        for instrument in reversed(self.order):
            hook = self.hooks.get(instrument)
            if hook is not None and instrument not in self.disabled:
                call = self._step(instrument, hook, call)
        self.chain = call

    def _step(self, instrument: str, hook: Hook, inner: Callable) -> Callable:
        passes = self.passes

        def step(*args: Any, **kwargs: Any) -> Any:
            ran = raised = result = None  # the inner call's outcome, once it ran

            def call(*a: Any, **k: Any) -> Any:
                nonlocal ran, raised, result
                if ran:
                    raise RuntimeError("a hook called through twice")
                ran = True
                try:
                    result = inner(*a, **k)
                except BaseException as exc:
                    raised = exc
                    raise
                return result

            try:
                return hook(call, *args, **kwargs)
            except passes:
                raise
            except Exception as exc:
                if raised is exc:
                    raise  # the call's own exception, on its way to the script
                self.fail(instrument, exc)
                if not ran:
                    return inner(*args, **kwargs)
                if raised is not None:
                    raise raised from None
                return result

        return step

    def fail(self, instrument: str, exc: BaseException) -> None:
        """Switch a failed hook off for the rest of the run, and say so once."""
        if instrument in self.disabled:
            return
        self.disabled.add(instrument)
        self._build()
        on_failure(self.name, instrument, exc)

    def unpatch(self) -> None:
        """Put the original back everywhere it was patched, and forget the hooks."""
        for owner, attribute, value in self._saved:
            if value is _MISSING:
                delattr(owner, attribute)
            else:
                setattr(owner, attribute, value)
        self._saved, self.hooks, self.disabled = [], {}, set()
        self.original = self.chain = None


ENTRY_POINTS: dict[str, EntryPoint] = {name: EntryPoint(name, targets, order, passes)
                                       for name, (targets, order, passes) in ORDER.items()}


def register(entry: str, instrument: str, hook: Hook) -> None:
    """Hook `instrument` into a declared entry point (ORDER)."""
    ENTRY_POINTS[entry].add(instrument, hook)


def bind(signature: Any, args: tuple, kwargs: dict) -> Any:
    """The call's arguments bound to torch's signature (inspect.BoundArguments), or None when
    they do not fit: the hook then passes the call on as it came and torch says what is wrong,
    as it would unprobed (not a ddpdoctor bug, so no hook is switched off for it)."""
    try:
        return signature.bind(*args, **kwargs)
    except TypeError:
        return None


def original(entry: str) -> Callable:
    """The unpatched function, for the probe's own calls."""
    point = ENTRY_POINTS[entry]
    if point.original is not None:
        return point.original
    owner, attribute = point._resolve(point.targets[0])
    return getattr(owner, attribute)
