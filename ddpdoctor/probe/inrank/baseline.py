"""The in-job baseline for bucket bandwidth (DDP602): raw all-reduces at the bucket sizes seen.

Run once per probe, at an optimizer-step boundary: right after step AT_STEP (the first step the
DDP6xx checks judge: buckets rebuilt in gradient order), or after the probe's last step if
--max-steps comes first. Every rank is then past the same optimizer step, that step's bucket
all-reduces have completed (DDP waits for them before backward returns), so a few extra
collectives on the DDP model's own group meet no other collective. Measuring at a step boundary
rather than at the end means that a script which ends by itself (and may have destroyed its
process group by then) still gets a baseline. The same bytes over the same group on the same
machine and network, with nothing else running, are what a bucket all-reduce could have
achieved; the report compares them like with like.

Besides the bucket sizes, two points that describe the group itself (analysis/perf/cost_fit.py CallCost):
a latency point (one float: nearly all fixed cost) and a bandwidth point (all the gradient bytes
in one all-reduce, at least 2 MiB and at most DDP's default bucket cap: what merged buckets
would cost). Together
they give the latency/bandwidth knee of this job: below it an all-reduce is mostly fixed cost.

Timed as the buckets are (device_timing.py): the completion callback's CPU time on gloo/CPU,
CUDA events on a GPU (waited for here, off the hot path, with the same deadline). Where the
buckets' device time is not measured, neither is the baseline: no rank measures one.

Measured again after the last step, when the first measurement left a bucket size near the
knee (within a factor of KNEE_BAND of it): DDP603 and DDP604 take a categorical decision there
(below the knee a bucket is latency-bound), and a knee moved by the load of one moment would
decide it by luck. The second measurement, at another moment of the run, adds its samples to
the first (analysis/perf/cost_fit.py pools them); a run whose buckets are far from the knee
spends nothing on it but one agreement all-reduce of one float.

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

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.inrank import collectives, device_timing, recorder

BUDGET_S = 1.0  # all sizes of all models together
AT_STEP = 4  # measured right after this optimizer step (perf.BASELINE_STEP: the first one judged)
MAX_SIZES = 6  # distinct bucket sizes measured, those carrying the most bytes first
LATENCY_BYTES = 4  # the latency point: one float32
# The bandwidth point: all gradient bytes, at least 2 MiB (smaller, a loaded machine's jitter
# hides what the bytes cost), at most DDP's default cap.
BANDWIDTH_MIN, BANDWIDTH_CAP = 2 * 1024 * 1024, 25 * 1024 * 1024
MAX_BYTES = 512 * 1024 * 1024  # a larger bucket is not copied for the baseline
WARMUP = 2  # untimed all-reduces per size; the second one's time plans the timed ones
MIN_TIMED, MAX_TIMED = 3, 20
WAIT_S = 10.0  # the longest any one baseline all-reduce may take
KNEE_BAND = 2.0  # a bucket within this factor of the knee is measured again after the last step
# The knee as analysis/perf/cost_fit.py fits it: a size below this tells no bandwidth.
MIN_BANDWIDTH_BYTES = 1024 * 1024


class _Abandon(Exception):
    """A baseline all-reduce failed or passed its deadline: measure nothing more."""


def _timed_all_reduce(all_reduce: Callable, tensor: torch.Tensor, group: Any,
                      op: Any = None, timer: Any = None) -> tuple[float, float]:
    """(start, seconds from the call to the completion callback): the bucket hook's clock (notes §1).
    With a `timer` (CUDA), from an event before the call to one recorded in the callback."""
    ends: list[Any] = []
    start_event = timer.record() if timer is not None else None
    start = time.time()
    kwargs = {"group": group, "async_op": True}
    if op is not None:
        kwargs["op"] = op
    work = all_reduce(tensor, **kwargs)
    if timer is None:
        work.get_future().then(lambda _fut: ends.append(time.time()))
    else:
        work.get_future().then(lambda _fut: ends.append(timer.record()))
    try:
        work.wait(timeout=datetime.timedelta(seconds=WAIT_S))
    except Exception as exc:  # noqa: BLE001 - a peer gone or a deadline passed
        raise _Abandon(f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}") from None
    done = time.time()
    if timer is None:
        # The callback runs on gloo's thread; it has normally fired when wait returns.
        return start, (ends[0] if ends else done) - start
    return _device_interval(timer, start_event, ends[0] if ends else None)


def _device_interval(timer: Any, start_event: Any, end_event: Any) -> tuple[float, float]:
    """(start, seconds) of a CUDA-timed all-reduce, once its end event completed (polled, with
    the same deadline as a wait: never a blocking synchronize)."""
    if start_event is None or end_event is None:
        raise _Abandon(timer.failed or "no CUDA event recorded")
    deadline = time.time() + WAIT_S
    try:
        while not end_event.query():
            if time.time() > deadline:
                raise _Abandon(f"an all-reduce did not complete on the device within {WAIT_S:g} s")
            time.sleep(0.0001)
        begin, end = timer.wall(start_event), timer.wall(end_event)
    except _Abandon:
        raise
    except Exception as exc:  # noqa: BLE001 - CUDA events failed: no baseline, no untrue number
        raise _Abandon(f"CUDA events failed ({type(exc).__name__})") from None
    return begin, end - begin


def _agree(all_reduce: Callable, group: Any, values: list[float],
           device: Any = "cpu") -> list[float]:
    """The maximum of each value over the group's ranks: every rank gets the same numbers."""
    import torch.distributed as dist

    # On the buckets' device: NCCL reduces CUDA tensors only (tolist() then waits for it).
    tensor = torch.tensor(values, dtype=torch.float64, device=device)
    _timed_all_reduce(all_reduce, tensor, group, dist.ReduceOp.MAX)
    return tensor.tolist()


def _sizes(state: Any) -> list[int]:
    """Distinct bucket sizes of the current layout, those carrying the most bytes first."""
    counts: dict[int, int] = {}
    for nbytes in state.layouts.values():
        if 0 < nbytes <= MAX_BYTES:
            counts[nbytes] = counts.get(nbytes, 0) + 1
    chosen = set(sorted(counts, key=lambda n: (-n * counts[n], n))[:MAX_SIZES])
    total = sum(n for n in state.layouts.values() if n > 0)
    chosen.add(LATENCY_BYTES)
    if total > LATENCY_BYTES:
        chosen.add(min(max(total, BANDWIDTH_MIN), BANDWIDTH_CAP))
    # Smallest first: the latency point is the cheapest and the one every estimate needs.
    return sorted(chosen)


def _lower_quartile(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.25 * len(ordered)))]


def knee(measured: dict[int, list[float]]) -> float:
    """The latency/bandwidth knee of one rank's baseline (bytes; 0.0 where it tells none), fitted
    as analysis/perf/cost_fit.py fits it: the lower quartiles of the latency point and of the
    largest size, when that size is at least MIN_BANDWIDTH_BYTES and 1.5x slower."""
    if LATENCY_BYTES not in measured or not measured[LATENCY_BYTES]:
        return 0.0
    latency = _lower_quartile(measured[LATENCY_BYTES])
    largest = max(measured)
    if largest < MIN_BANDWIDTH_BYTES or not measured[largest]:
        return 0.0
    seconds = _lower_quartile(measured[largest])
    if seconds <= 1.5 * latency:
        return 0.0
    return latency * largest / (seconds - latency)


def near_knee(measured: dict[int, list[float]], bucket_sizes: list[int]) -> bool:
    """Whether a bucket size lies within a factor of KNEE_BAND of the knee `measured` shows."""
    point = knee(measured)
    return point > 0 and any(point / KNEE_BAND <= n <= point * KNEE_BAND for n in bucket_sizes if n > 0)


def _measure_model(state: Any, all_reduce: Callable, deadline: float, repeat: bool = False) -> None:
    """Measure one model's baseline; `repeat`: the second measurement after the last step."""
    rec = recorder.get()
    measured: dict[int, list[float]] = {}
    group = state.model.process_group
    sizes = _sizes(state)
    signature = float(sum((i + 1) * n for i, n in enumerate(sizes)) % (1 << 40))
    device = torch.device(state.clock_device or "cpu")
    timer = state.timer
    if timer is not None and timer.failed:
        state.check_timer()
        timer = None
    # Timed the buckets' way, or not at all: 1 where this rank can (cpu or cuda-events).
    timed = 1.0 if state.clock in (device_timing.CPU, device_timing.CUDA_EVENTS) else 0.0
    # Same step, same sizes on every rank, or no baseline at all (then on every rank alike).
    agreed = _agree(all_reduce, group, [rec.step, -rec.step, len(sizes), -len(sizes),
                                        signature, -signature, timed, -timed], device)
    if agreed[0] != -agreed[1] or agreed[2] != -agreed[3] or agreed[4] != -agreed[5]:
        rec.note_once("baseline", "no bandwidth baseline: ranks disagreed on the step or the "
                      "bucket sizes at the end of the probe")
        return
    if agreed[6] != -agreed[7] or not agreed[6]:
        rec.note_once("baseline", "no bandwidth baseline: device time not measured on "
                      f"{'this rank' if not timed else 'another rank'}, as for the buckets")
        return
    for position, nbytes in enumerate(sizes):
        if position and -_agree(all_reduce, group, [time.time() - deadline], device)[0] <= 0:
            _out_of_budget(rec, len(sizes) - position)
            return  # out of budget on some rank: the sizes left go without a baseline
        tensor = torch.ones(max(1, nbytes // 4), dtype=torch.float32, device=device)
        warm = [_timed_all_reduce(all_reduce, tensor, group, timer=timer)[1] for _ in range(WARMUP)]
        slowest, remaining = _agree(all_reduce, group, [warm[-1], time.time() - deadline], device)
        remaining = -remaining  # the least time left on any rank
        share = remaining / (len(sizes) - position)
        count = int(min(MAX_TIMED, share / max(slowest, 1e-6)))
        if count < MIN_TIMED:
            if remaining < MIN_TIMED * slowest:
                _out_of_budget(rec, len(sizes) - position)
                return  # out of budget: the sizes left go without a baseline
            count = MIN_TIMED
        times = [_timed_all_reduce(all_reduce, tensor, group, timer=timer) for _ in range(count)]
        rec.write(tm.BaselineTiming(time.time(), state.id, nbytes, "float32", WARMUP,
                                    [round(t, 7) for _, t in times], [s for s, _ in times],
                                    state.clock))
        measured[nbytes] = [t for _, t in times]
    if not repeat:
        # Every size measured: measure again after the last step if any rank saw a bucket near
        # the knee (agreed, so every rank makes the same collectives then).
        near = 1.0 if near_knee(measured, list(state.layouts.values())) else 0.0
        if _agree(all_reduce, group, [near], device)[0] > 0:
            _again.append(state)


def _out_of_budget(rec: Any, left: int) -> None:
    """Say why bucket sizes have no baseline: its time ran out (a loaded machine's all-reduces
    are slow), not that it was never asked for."""
    rec.note_once("baseline-budget", f"no bandwidth baseline for {left} bucket size{'s' if left > 1 else ''}: "
                  f"the baseline's {BUDGET_S:g} s budget ran out (all-reduces slower than usual: a loaded "
                  "machine); their 'baseline' cells stay empty")


_done = {"measured": False}
_again: list[Any] = []  # the models whose buckets lie near the knee: measured again at the end


def due(step: int) -> bool:
    """Whether the baseline is still to be measured after optimizer step `step` (the same answer
    on every rank: they all pass the same steps)."""
    return not _done["measured"] and step >= AT_STEP


def measure(states: list[Any], budget_s: float = BUDGET_S) -> bool:
    """Measure the baseline for every DDP model whose buckets were timed, once per process;
    True when this call measured it. Never raises."""
    eligible = [state for state in states if state.world >= 2 and state.layouts
                and getattr(state.model, "process_group", None) is not None]
    if _done["measured"] or not eligible:
        return False  # no timed buckets yet (every rank alike): perhaps after a later step
    _done["measured"] = True
    rec = recorder.get()
    deadline = time.time() + budget_s
    all_reduce = collectives.original("all_reduce")
    for state in eligible:
        try:
            _measure_model(state, all_reduce, deadline)
        except _Abandon as exc:
            rec.note_once("baseline", f"bandwidth baseline abandoned: {exc}")
            _again.clear()
            break
        except Exception as exc:  # noqa: BLE001 - the user's job must go on, the report must still come
            rec.note_once("baseline", f"ddpdoctor bug: bandwidth baseline failed ({exc!r})")
            _again.clear()
            break
    return True


def measure_again(budget_s: float = BUDGET_S) -> None:
    """After the last step (--max-steps: every rank past the same step, nothing outstanding):
    measure again the models whose first baseline left a bucket near the knee. The same on every
    rank (agreed when it was decided). Never raises."""
    states, _again[:] = list(_again), []
    if not states:
        return
    rec = recorder.get()
    deadline = time.time() + budget_s
    all_reduce = collectives.original("all_reduce")
    for state in states:
        try:
            _measure_model(state, all_reduce, deadline, repeat=True)
        except _Abandon as exc:
            rec.note_once("baseline-again", f"second bandwidth baseline abandoned: {exc}")
            return
        except Exception as exc:  # noqa: BLE001 - the user's job must go on, the report must still come
            rec.note_once("baseline-again", f"ddpdoctor bug: second bandwidth baseline failed ({exc!r})")
            return
