"""Optimizer steps: the probe's clock, and where it stops the job after --max-steps.

Every rank stops right after the same optimizer step: that step's gradient all-reduces have all
completed by then, so no rank is left waiting for another.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from torch.optim.optimizer import (register_optimizer_step_post_hook,
                                   register_optimizer_step_pre_hook)

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.inrank import baseline, ddp, device_timing, memory, recorder

_counts: dict[int, int] = {}
_marks = {"step_start": 0.0, "previous_end": 0.0}


def record_crash(exc: BaseException) -> None:
    """The exception escaping the user's code in this process, scrubbed of secrets."""
    rec = recorder.get()
    message, text, site = recorder.describe_exception(exc)
    rec.write(tm.Crash(time.time(), type(exc).__name__, message, text, site, rec.step))


def finish(reason: str) -> None:
    """Write the closing records of this rank."""
    rec = recorder.get()
    # The peak is the script's: read before our own closing work (the parameters'
    # fingerprints, the baseline's all-reduces) allocates anything (on an H200 the fingerprints'
    # int64 copies had raised the allocator's peak 19% above the script's own).
    memory.end()
    # The device timings still queued: their events have normally completed by now; a device
    # that does not finish within the deadline leaves them out (said in a note), never hangs.
    device_timing.poll_all(time.time() + device_timing.FINAL_WAIT_S)
    for state in ddp.all_states():
        state.flush_grads()
        try:
            state.record_params()
        except Exception as exc:  # noqa: BLE001 - a report without fingerprints beats none
            rec.note_once("params", f"could not fingerprint parameters: {exc!r}")
    if reason == "max_steps":
        # Every rank is past the same step with no collective outstanding: a moment an extra
        # collective is safe (DDP602's in-job bandwidth baseline, if no earlier step measured it).
        from ddpdoctor.probe.inrank import baseline

        if not baseline.measure(ddp.all_states()):
            # Measured earlier: again now, if its buckets sat near the knee then.
            baseline.measure_again()
    rec.write(tm.End(time.time(), reason, rec.step))


def exit_now(code: int = 0) -> None:
    """Leave the process without interpreter finalization, after the user's atexit handlers.

    Finalization races gloo: its worker thread can free the last work object while Python shuts
    down, which aborts the process ("terminate called without an active exception", ~1 run in
    20 after a script that returned cleanly). The user's script is done by then; nothing of
    theirs is skipped but finalization itself."""
    import atexit

    try:
        atexit._run_exitfuncs()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def install(max_steps: int) -> None:
    def before_step(optimizer: Any, args: Any, kwargs: Any) -> None:
        if _marks.get("outer") is not None:
            return  # an optimizer stepped inside another's step (ZeroRedundancyOptimizer's own)
        _marks["outer"] = id(optimizer)
        _marks["step_start"] = time.time()
        device_timing.timeline.optimizer_start()

    def after_step(optimizer: Any, args: Any, kwargs: Any) -> None:
        if _marks.get("outer") not in (None, id(optimizer)):
            # The inner optimizer of a ZeroRedundancyOptimizer: the step ends with the outer one,
            # after ZeRO broadcast each rank's updated share (stopping here would leave the ranks'
            # parameters apart).
            return
        _marks["outer"] = None
        rec = recorder.get()
        now = time.time()
        if _marks["step_start"]:
            rec.add_phase("optimizer", now - _marks["step_start"])
        _counts[id(optimizer)] = _counts.get(id(optimizer), 0) + 1
        step = max(_counts.values())
        if step == rec.step:
            return  # a second optimizer (a GAN's) stepping within the same training step
        rec.step = step
        backward_iterations = rounds = forwards = 0
        for state in ddp.all_states():
            state.flush_grads()
            b, r, f = state.take_counts()
            backward_iterations += b
            rounds += r
            forwards += f
        phases = {k: round(v, 6) for k, v in rec.phases.items()}
        if _marks["previous_end"]:
            phases["step"] = round(now - _marks["previous_end"], 6)
        phases["samples"] = rec.samples
        _marks["previous_end"] = now
        rec.phases, rec.samples = {}, 0
        rec.write(tm.Step(now, step, backward_iterations, rounds, phases, forwards))
        device_timing.timeline.close(step)  # this step's device phases, resolved later
        device_timing.poll_all()  # earlier steps' that completed (a query each, no waiting)
        last = bool(max_steps) and step >= max_steps
        if not last and baseline.due(step):
            # A step boundary every rank passes alike, with no collective outstanding: the
            # in-job baseline now, so that a script ending by itself still gets one (after the
            # last step, finish() measures it). Its time stays out of the next step's wall time.
            baseline.measure(ddp.all_states())
            _marks["previous_end"] = time.time()
        if last:
            finish("max_steps")
            # Leave now: every rank is past the same step, with no collective outstanding.
            # Interpreter teardown could block in gloo or in DataLoader workers; _exit cannot.
            exit_now(0)

    register_optimizer_step_pre_hook(before_step)
    register_optimizer_step_post_hook(after_step)
