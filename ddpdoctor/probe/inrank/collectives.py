"""Record every torch.distributed collective a rank enters: op, shapes, dtypes, call site.

Compared across ranks afterwards, these records name the collective on which ranks diverged
(DDP501/DDP502), also after a hang or a crash: the record is written before the call blocks.
"""

from __future__ import annotations

import functools
import inspect
import sys
import threading
import time
from typing import Any, Callable, Optional

import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d

from ddpdoctor.core import torch_names as names
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.inrank import groups, recorder

# Recorded: every public collective, and torch's single-tensor forms that FSDP calls directly
# (the public ones that call them are recorded once: _inside below).
RECORDED = names.COLLECTIVES + names.SINGLE_TENSOR_FORMS

_inside = threading.local()  # object collectives call tensor ones: record only the outer call
# Exceptions already recorded as in flight at a collective (ErrorInFlight): the first
# collective each one reached is the one that matters; a few per rank at most.
_in_flight_seen: list[int] = []
MAX_ERRORS_IN_FLIGHT = 8
_seq: dict[str, int] = {}
_seq_lock = threading.Lock()


def next_seq(group_name: str) -> int:
    with _seq_lock:
        seq = _seq.get(group_name, 0)
        _seq[group_name] = seq + 1
        return seq


# The torch libraries whose own collectives are told apart from the script's (tm.Collective.via),
# by the module of the function that called the collective.
_VIA = (("torch.distributed.fsdp", "fsdp"), ("torch.distributed.optim", "zero"),
        ("torch.distributed.algorithms.ddp_comm_hooks", "comm_hook"),
        ("torch.distributed.tensor", "dtensor"))


def _via(frame: Any) -> str:
    module = frame.f_globals.get("__name__", "") if frame is not None else ""
    if module.startswith("torch.distributed."):
        for prefix, name in _VIA:
            if module.startswith(prefix):
                return name
    return ""


def _tensors(args: tuple, kwargs: dict) -> list[torch.Tensor]:
    found = []
    for value in list(args) + list(kwargs.values()):
        if isinstance(value, torch.Tensor):
            found.append(value)
        elif isinstance(value, (list, tuple)):
            found.extend(v for v in value[:64] if isinstance(v, torch.Tensor))
    return found


# The collectives whose result can carry a size agreed between ranks (DDP506 looks for one
# before a collective whose size changes): their values are read after completion when small.
EXCHANGES = frozenset(names.VALUE_EXCHANGES)
OBJECT_EXCHANGES = frozenset(names.OBJECT_EXCHANGES)
RESULT_MAX_ELEMENTS = 16  # a length, a few lengths: reading them costs next to nothing

# Results not yet readable: (is ready, read values, group, seq). Checked at the next collective,
# on the script's thread, so nothing here runs on torch's own threads.
_pending: list[tuple[Callable[[], bool], Callable[[], list], str, int]] = []


def _reduce_op(value: Any) -> str:
    """A reduce op's name: ReduceOp.MAX (a RedOpType) -> "MAX", likewise for the others."""
    name = getattr(value, "name", None)
    return name if isinstance(name, str) else str(value).rsplit(".", 1)[-1]


def _small(tensors: list[torch.Tensor]) -> bool:
    return bool(tensors) and sum(t.numel() for t in tensors) <= RESULT_MAX_ELEMENTS


def _values(tensors: list[torch.Tensor]) -> list:
    return [t.detach().reshape(-1).tolist() for t in tensors]


def _object_values(args: tuple, kwargs: dict) -> Optional[list]:
    """The object list of all_gather_object / broadcast_object_list when it holds a few numbers."""
    objects = args[0] if args else kwargs.get("object_list")
    if (isinstance(objects, list) and 0 < len(objects) <= RESULT_MAX_ELEMENTS
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in objects)):
        return [list(objects)]
    return None


def _defer(tensors: list[torch.Tensor], work: Any, group: str, seq: int) -> None:
    """Read the values once they exist, without waiting: an async work's completion, and for
    device tensors a host copy ordered after the collective on the current stream."""
    if any(t.is_cuda for t in tensors):
        if work is not None:
            return  # an async device collective: its completion is on a stream we do not own
        copies = [torch.empty(t.shape, dtype=t.dtype, pin_memory=True) for t in tensors]
        for copy, tensor in zip(copies, tensors):
            copy.copy_(tensor, non_blocking=True)
        event = torch.cuda.Event()
        event.record()
        _pending.append((event.query, lambda: _values(copies), group, seq))
    elif work is not None and hasattr(work, "is_completed"):
        _pending.append((work.is_completed, lambda: _values(tensors), group, seq))


def _flush(rec: Any) -> None:
    """Write the results that became readable since the last collective."""
    for item in list(_pending):
        ready, read, group, seq = item
        try:
            done = ready()
            if done:
                rec.write(tm.CollectiveResult(time.time(), group, seq, read()))
        except Exception:  # a broken work or event: the result is simply not known
            done = True
        if done:
            _pending.remove(item)
    del _pending[:-64]  # works the script never completed must not pile up


def _error_in_flight(rec: Any, exc: BaseException, group: str, seq: int) -> None:
    """Record the exception being handled when this collective was entered (once per exception):
    if the collective then waits for ranks that went on, it is why, and it may never leave the
    script."""
    try:
        if id(exc) in _in_flight_seen or len(_in_flight_seen) >= MAX_ERRORS_IN_FLIGHT:
            return
        _in_flight_seen.append(id(exc))
        message, text, site = recorder.describe_exception(exc, 1000, 4000)
        rec.write(tm.ErrorInFlight(time.time(), group, seq, type(exc).__name__, message, text,
                                   site, rec.step))
    except Exception:  # noqa: BLE001 - a nicety of the report: never the script's problem
        pass


def _wrap(name: str, original: Callable) -> Callable:
    params = list(inspect.signature(original).parameters)
    group_index = params.index("group") if "group" in params else None
    async_index = params.index("async_op") if "async_op" in params else None
    op_index = params.index("op") if "op" in params else None
    exchange = name in EXCHANGES
    object_exchange = name in OBJECT_EXCHANGES

    @functools.wraps(original)
    def collective(*args: Any, **kwargs: Any) -> Any:
        if getattr(_inside, "depth", 0):
            return original(*args, **kwargs)
        rec = recorder.get()
        group = kwargs.get("group")
        if group is None and group_index is not None and len(args) > group_index:
            group = args[group_index]
        group_name, group_ranks = groups.describe(group)
        tensors = _tensors(args, kwargs)
        seq = next_seq(group_name)
        if _pending:
            _flush(rec)
        reduce_op = ""
        if op_index is not None:
            op = kwargs.get("op", args[op_index] if len(args) > op_index else "SUM")
            reduce_op = _reduce_op(op)
        rec.write(tm.Collective(
            time.time(), group_name, group_ranks, seq, name,
            [list(t.shape) for t in tensors], [str(t.dtype).replace("torch.", "") for t in tensors],
            rec.step, recorder.user_site(2), via=_via(sys._getframe(1)), reduce_op=reduce_op))
        in_flight = sys.exc_info()[1]  # the cleanup barrier in `finally:`: one lookup per call
        if in_flight is not None:
            _error_in_flight(rec, in_flight, group_name, seq)
        _inside.depth = 1
        try:
            result = original(*args, **kwargs)
        finally:
            _inside.depth = 0
        is_async = kwargs.get("async_op")
        if is_async is None and async_index is not None and len(args) > async_index:
            is_async = args[async_index]
        values = None
        try:
            if exchange and _small(tensors):
                if is_async or any(t.is_cuda for t in tensors):
                    _defer(tensors, result if is_async else None, group_name, seq)
                else:
                    values = _values(tensors)
            elif object_exchange:
                values = _object_values(args, kwargs)
        except Exception:  # reading a result is a nicety: never the script's problem
            values = None
        if not is_async:
            rec.write(tm.CollectiveDone(time.time(), group_name, seq, values))
        return result

    collective.__ddpdoctor_original__ = original
    return collective


def install() -> None:
    for name in RECORDED:
        original = getattr(c10d, name, None)
        if original is None:
            continue
        wrapped = _wrap(name, original)
        setattr(c10d, name, wrapped)
        if getattr(dist, name, None) is original:
            setattr(dist, name, wrapped)


def original(name: str) -> Callable:
    """The unwrapped function, for the probe's own calls (they are recorded separately)."""
    fn = getattr(c10d, name)
    return getattr(fn, "__ddpdoctor_original__", fn)
