"""What a fix would buy: whether a gain is worth a finding, the step time a fix is expected to
give, and what `probe --verify-fix` measured with it (run_model/verify.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ddpdoctor.probe.analysis.perf.units import estimate, ms
from ddpdoctor.probe.run_model.loaded_run import RunModel


def matters(gain: float, step: float, share: float, noise: float) -> bool:
    """Whether a fix that saves `gain` seconds of a `step`-second step is worth a finding: at
    least `share` of the step, and more than the noise of a step (step_spread)."""
    return step > 0 and gain >= share * step and gain > noise


@dataclass
class WhatIf:
    """The step time a fix is expected to give, from the measured phases; and, after
    `probe --verify-fix`, the step time measured with the fix applied."""

    step_s: float  # measured, median
    after_s: float  # estimated
    change: str  # the fix, in words
    ddp_kwargs: dict = field(default_factory=dict)  # the DDP arguments --verify-fix can change
    measured_s: Optional[float] = None  # with --verify-fix
    verify_note: str = ""  # why it could not be verified

    def words(self) -> str:
        text = f"step {ms(self.step_s)} \u2192 {estimate(self.after_s)} (est.) {self.change}"
        if self.measured_s is not None:
            error = (self.measured_s - self.after_s) / self.measured_s if self.measured_s > 0 else 0.0
            text += f"; measured with the fix (--verify-fix): {ms(self.measured_s)} ({error:+.0%} against the estimate)"
        elif self.verify_note:
            text += f"; --verify-fix: {self.verify_note}"
        return text

    def evidence(self) -> dict:
        found = {"step_ms": round(self.step_s * 1e3, 3),
                 "estimated_step_ms": round(self.after_s * 1e3, 3), "fix": self.change}
        if self.ddp_kwargs:
            found["ddp_kwargs"] = dict(self.ddp_kwargs)
        if self.measured_s is not None:
            found["verified_step_ms"] = round(self.measured_s * 1e3, 3)
        return found


def what_if(model: RunModel, code: str, step_s: float, after_s: float, change: str,
            ddp_kwargs: Optional[dict] = None) -> WhatIf:
    """A WhatIf for finding `code`, with the step time --verify-fix measured for the same DDP
    arguments, when it ran (model.verified: run_model/verify.py)."""
    found = WhatIf(step_s, max(0.0, min(after_s, step_s)), change, dict(ddp_kwargs or {}))
    for result in model.verified or []:
        if result.code == code and result.ddp_kwargs == found.ddp_kwargs:
            if result.step_s is not None:
                found.measured_s = result.step_s
            else:
                found.verify_note = result.note
    return found
