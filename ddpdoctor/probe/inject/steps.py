"""Optimizer steps: the probe's clock, and where it stops the job after --max-steps.

Every rank stops right after the same optimizer step: that step's gradient all-reduces have all
completed by then, so no rank is left waiting for another.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from torch.optim.optimizer import register_optimizer_step_post_hook

from ddpdoctor.probe import telemetry as tm
from ddpdoctor.probe.inject import ddp, recorder

_counts: dict[int, int] = {}


def finish(reason: str) -> None:
    """Write the closing records of this rank."""
    rec = recorder.get()
    for state in ddp.all_states():
        state.flush_grads()
        try:
            state.record_params()
        except Exception as exc:  # noqa: BLE001 - a report without fingerprints beats none
            rec.note_once("params", f"could not fingerprint parameters: {exc!r}")
    rec.write(tm.End(time.time(), reason, rec.step))


def install(max_steps: int) -> None:
    def after_step(optimizer: Any, args: Any, kwargs: Any) -> None:
        rec = recorder.get()
        _counts[id(optimizer)] = _counts.get(id(optimizer), 0) + 1
        step = max(_counts.values())
        if step == rec.step:
            return  # a second optimizer (a GAN's) stepping within the same training step
        rec.step = step
        backward_iterations = rounds = 0
        for state in ddp.all_states():
            state.flush_grads()
            b, r = state.take_counts()
            backward_iterations += b
            rounds += r
        rec.write(tm.Step(time.time(), step, backward_iterations, rounds))
        if max_steps and step >= max_steps:
            finish("max_steps")
            sys.stdout.flush()
            sys.stderr.flush()
            # Leave now: every rank is past the same step, with no collective outstanding.
            # Interpreter teardown could block in gloo or in DataLoader workers; _exit cannot.
            os._exit(0)

    register_optimizer_step_post_hook(after_step)
