"""The in-job baseline for bucket bandwidth (DDP602): raw all-reduces at the bucket sizes seen.

Run once, after the probe's last step (steps.finish with reason "max_steps"): every rank is past
the same optimizer step, that step's bucket all-reduces have completed, and the rank is about to
leave, so a few extra collectives on the DDP model's own group meet no other collective. The
same bytes over the same group on the same machine and network, with nothing else running, are
what a bucket all-reduce could have achieved; the report compares them like with like.

Every decision that changes how many collectives a rank makes (whether to measure at all, how
many iterations per size, when to stop) is taken from values all-reduced with MAX first, so all
ranks take it alike and none is left waiting. Each wait has a deadline: ddpdoctor must never be
the thing that hangs.
"""

from __future__ import annotations

import datetime
import time
from typing import Any, Callable

import torch

from ddpdoctor.probe import telemetry as tm
from ddpdoctor.probe.inrank import collectives, recorder

BUDGET_S = 1.0  # all sizes of all models together
MAX_SIZES = 6  # distinct bucket sizes measured, those carrying the most bytes first
MAX_BYTES = 512 * 1024 * 1024  # a larger bucket is not copied for the baseline
WARMUP = 2  # untimed all-reduces per size; the second one's time plans the timed ones
MIN_TIMED, MAX_TIMED = 3, 20
WAIT_S = 10.0  # the longest any one baseline all-reduce may take


class _Abandon(Exception):
    """A baseline all-reduce failed or passed its deadline: measure nothing more."""


def _timed_all_reduce(all_reduce: Callable, tensor: torch.Tensor, group: Any,
                      op: Any = None) -> tuple[float, float]:
    """(start, seconds from the call to the completion callback): the bucket hook's clock (notes §1)."""
    ends: list[float] = []
    start = time.time()
    kwargs = {"group": group, "async_op": True}
    if op is not None:
        kwargs["op"] = op
    work = all_reduce(tensor, **kwargs)
    work.get_future().then(lambda _fut: ends.append(time.time()))
    try:
        work.wait(timeout=datetime.timedelta(seconds=WAIT_S))
    except Exception as exc:  # noqa: BLE001 - a peer gone or a deadline passed
        raise _Abandon(f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}") from None
    done = time.time()
    # The callback runs on gloo's thread; it has normally fired when wait returns.
    return start, (ends[0] if ends else done) - start


def _agree(all_reduce: Callable, group: Any, values: list[float]) -> list[float]:
    """The maximum of each value over the group's ranks: every rank gets the same numbers."""
    import torch.distributed as dist

    tensor = torch.tensor(values, dtype=torch.float64)
    _timed_all_reduce(all_reduce, tensor, group, dist.ReduceOp.MAX)
    return tensor.tolist()


def _sizes(state: Any) -> list[int]:
    """Distinct bucket sizes of the current layout, those carrying the most bytes first."""
    counts: dict[int, int] = {}
    for nbytes in state.layouts.values():
        if 0 < nbytes <= MAX_BYTES:
            counts[nbytes] = counts.get(nbytes, 0) + 1
    chosen = sorted(counts, key=lambda n: (-n * counts[n], n))[:MAX_SIZES]
    return sorted(chosen)


def _measure_model(state: Any, all_reduce: Callable, deadline: float) -> None:
    rec = recorder.get()
    group = state.model.process_group
    sizes = _sizes(state)
    signature = float(sum((i + 1) * n for i, n in enumerate(sizes)) % (1 << 40))
    # Same step, same sizes on every rank, or no baseline at all (then on every rank alike).
    agreed = _agree(all_reduce, group, [rec.step, -rec.step, len(sizes), -len(sizes),
                                        signature, -signature])
    if agreed[0] != -agreed[1] or agreed[2] != -agreed[3] or agreed[4] != -agreed[5]:
        rec.note_once("baseline", "no bandwidth baseline: ranks disagreed on the step or the "
                      "bucket sizes at the end of the probe")
        return
    for position, nbytes in enumerate(sizes):
        if position and -_agree(all_reduce, group, [time.time() - deadline])[0] <= 0:
            return  # out of budget on some rank: the sizes left go without a baseline
        tensor = torch.ones(max(1, nbytes // 4), dtype=torch.float32)
        warm = [_timed_all_reduce(all_reduce, tensor, group)[1] for _ in range(WARMUP)]
        slowest, remaining = _agree(all_reduce, group, [warm[-1], time.time() - deadline])
        remaining = -remaining  # the least time left on any rank
        share = remaining / (len(sizes) - position)
        count = int(min(MAX_TIMED, share / max(slowest, 1e-6)))
        if count < MIN_TIMED:
            if remaining < MIN_TIMED * slowest:
                return  # out of budget: the sizes left go without a baseline
            count = MIN_TIMED
        timed = [_timed_all_reduce(all_reduce, tensor, group) for _ in range(count)]
        rec.write(tm.BaselineTiming(time.time(), state.id, nbytes, "float32", WARMUP,
                                    [round(t, 7) for _, t in timed], [s for s, _ in timed]))


def measure(states: list[Any], budget_s: float = BUDGET_S) -> None:
    """Measure the baseline for every DDP model whose buckets were timed. Never raises."""
    rec = recorder.get()
    deadline = time.time() + budget_s
    all_reduce = collectives.original("all_reduce")
    for state in states:
        if state.world < 2 or not state.layouts or getattr(state.model, "process_group", None) is None:
            continue
        try:
            _measure_model(state, all_reduce, deadline)
        except _Abandon as exc:
            rec.note_once("baseline", f"bandwidth baseline abandoned: {exc}")
            return
        except Exception as exc:  # noqa: BLE001 - the user's job is done; the report must still come
            rec.note_once("baseline", f"ddpdoctor bug: bandwidth baseline failed ({exc!r})")
            return

