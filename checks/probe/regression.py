"""DDP607: slower than the baseline report given with --baseline (step time, exposed
communication, all-reduce calls, bytes, bus bandwidth)."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Incomplete, Skipped, check
from ddpdoctor.core.torch_names import GB, bus_factor
from ddpdoctor.probe.analysis import perf_tables, regression
from ddpdoctor.probe.analysis.perf.units import megabytes
from ddpdoctor.probe.run_model.loaded_run import RunModel


def _value(change: regression.Change, value: float) -> str:
    if change.unit == "ms":
        return f"{value:.1f} ms" if value < 100 else f"{value:.0f} ms"
    if change.unit == "bytes":
        return megabytes(value)
    return f"{value:g}"


def _busbw(metrics: dict) -> float | None:
    busy, size = metrics.get("comm_busy_ms"), metrics.get("gradient_bytes_per_backward")
    if not isinstance(busy, (int, float)) or not isinstance(size, (int, float)) or busy <= 0:
        return None
    world = metrics.get("world_size") or 2
    return size / (busy / 1e3) / GB * bus_factor(world)


@check("DDP607", "Slower than the baseline report", Severity.ERROR)
def regression_gate(run: RunModel) -> list[Problem] | Skipped | Incomplete:
    """
    What it detects:
        Given an earlier JSON report of the same probe (`ddpdoctor probe --baseline
        previous.json train.py`), a regression in any of:
        - the median step time, the communication not hidden behind backward, or the gradient
          communication per backward (which is bus bandwidth: the same bytes in more time):
          worse by more than three standard errors of the difference of the two medians, each
          from that run's spread (a robust standard deviation over its judged steps) and its
          number of steps. The tolerance is the noise the two runs measured, not a fixed
          percentage: a steady job is held to a tight line, a noisy one to a loose one;
        - the gradient all-reduces per step, or the gradient bytes per step: any increase
          (these do not vary from run to run: a new bucket layout, a model that grew, an
          accumulation loop that lost its no_sync).
        The report's "Against the baseline" table lists every metric, and each gradient
        bucket's bus bandwidth then and now. A run that recorded no judged steps cannot pass
        the gate: the verdict is incomplete.

    Why it hurts:
        A change that makes every step 10% slower makes every training run 10% longer and
        costlier, and nobody notices it in a log. Bytes and calls per step change only when
        the model, the DDP settings or the training loop changed: a sign that the change did
        more than intended.

    How to fix:
        Commit a report of a good run and gate on it in CI:

            ddpdoctor probe train.py --json perf-baseline.json          # once, on main
            ddpdoctor probe train.py --baseline perf-baseline.json      # every change

        When the finding names calls or bytes, look at what changed in the DDP arguments
        (bucket_cap_mb), the model, or the accumulation loop. When it names only times, run
        both again: a regression that stays is real; refresh the baseline when the slowdown
        is intended.
    """
    baseline = run.regression_baseline
    if baseline is None:
        return Skipped("no --baseline report to compare with")
    now = perf_tables.metrics(run)
    if "step_ms_median" not in now:
        return Incomplete("this run recorded too few steps to compare with the baseline")
    if baseline.world_size and baseline.world_size != run.world_size:
        return Incomplete(f"the baseline ran {baseline.world_size} ranks and this run "
                          f"{run.world_size}: their numbers do not compare")
    before = baseline.metrics
    problems = []
    for change in regression.compare(before, now):
        if not change.regressed:
            continue
        worse = change.now - change.before
        relative = f" (+{worse / change.before:.0%})" if change.before > 0 else ""
        if change.unit == "ms":
            margin = (f"more than the {change.tolerance:.1f} ms that the step-to-step noise of "
                      "the two runs allows")
        else:
            margin = "these do not vary between runs of the same code"
        extra = ""
        if change.metric == "comm_busy_ms":
            old_bw, new_bw = _busbw(before), _busbw(now)
            if old_bw and new_bw:
                extra = f"; bus bandwidth {old_bw:.2f} -> {new_bw:.2f} GB/s"
        problems.append(Problem(
            message=(f"{change.words}: {_value(change, change.before)} in the baseline "
                     f"({baseline.source}), {_value(change, change.now)} now{relative}{extra}: "
                     f"{margin}"),
            hint=("compare the bucket and phase tables of both reports; if calls or bytes "
                  "grew, check bucket_cap_mb, the model and the accumulation loop; if the "
                  "slowdown is intended, refresh the baseline report"),
            ranks=[],
            evidence={"baseline": baseline.source, **change.to_dict()},
        ))
    return problems
