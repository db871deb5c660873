"""How far a timing measurement is from its check's threshold, in units of its own noise.

A timing check (DDP601-605) compares a median over the judged steps with a threshold. The same
command on the same machine gives a slightly different median each run; where the measurement
sits within that noise of the threshold, one run reports and the next does not. So every timing
check states its margin: (measured - threshold) / noise, where the noise is the uncertainty of
the medians it compares, from the per-step samples it already has: two standard errors of a
median (2 x 1.2533 x their robust step-to-step spread / sqrt(steps)) and the gap between the
medians of the run's two halves, in quadrature (median_noise): the run-to-run spread of a
median of that many steps, as far as one run can tell. Beyond one unit over the threshold the verdict stands on the numbers; over it by less, the
check reports "borderline" at info severity (under the threshold is clean), with the numbers, so a CI gate never flips on
noise alone.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any, Iterable, Optional

from ddpdoctor.core.findings import Location, Problem, Severity
from ddpdoctor.probe.analysis.perf import ms, spread

FIRES, BORDERLINE, CLEAN = "fires", "borderline", "clean"


def median_noise(samples: list[float]) -> float:
    """How far the median of `samples` may move in another run: two standard errors of a
    median (2 x 1.2533 x spread / sqrt(n)) and the gap between the medians of the first and
    the second half of the run, added in quadrature. The standard error assumes steps
    independent of each other; on a shared machine the load changes over seconds, and a run
    whose halves disagree shows that drift, which the next run will see differently. The two
    are separate sources a next run meets together, so their variances add. Against twice the
    run-to-run standard deviation of the median on a shared machine, the larger of the two
    alone (as before) averaged 0.51x, the quadrature sum 0.61x (docs/performance.md, "Verdict
    stability"): the rest is the load of the next run, which this run's steps do not show
    (0.0 below 4 samples)."""
    if not samples:
        return 0.0
    noise = 2 * 1.2533 * spread(samples) / math.sqrt(len(samples))
    if len(samples) >= 8:
        half = len(samples) // 2
        drift = statistics.median(samples[:half]) - statistics.median(samples[half:])
        noise = math.sqrt(noise * noise + drift * drift)
    return noise


def combined(*noises: float) -> float:
    """The noise of a difference of independent medians."""
    return math.sqrt(sum(n * n for n in noises))


@dataclass
class Margin:
    """One condition of a check: `measured` against `threshold` (seconds), `noise` one unit.

    `above`: the condition holds when measured exceeds threshold (False: when it stays below,
    as an efficiency under a floor)."""

    label: str
    measured: float
    threshold: float
    noise: float
    above: bool = True

    @property
    def distance(self) -> float:
        """Seconds beyond the threshold, positive where the condition holds."""
        gap = self.measured - self.threshold
        return gap if self.above else -gap

    @property
    def units(self) -> float:
        """The distance in units of the noise (+-inf with no measurable noise)."""
        if self.noise > 0:
            return self.distance / self.noise
        return math.copysign(math.inf, self.distance) if self.distance else 0.0

    @property
    def verdict(self) -> str:
        if self.above and self.measured <= 0:
            return CLEAN  # nothing to gain is near no threshold, whatever the noise
        if self.units > 1:
            return FIRES
        # The band lies only on the reporting side: under the threshold is clean, so a healthy
        # run near a threshold it does not cross gets no note; over it by less than the noise is
        # borderline (info), which never flips a gate.
        return BORDERLINE if self.units > 0 else CLEAN

    def words(self) -> str:
        side = "above" if self.distance >= 0 else "below"
        if not self.above:
            side = "below" if self.distance >= 0 else "above"
        units = ("no measurable noise" if math.isinf(self.units) else
                 f"{abs(self.units):.1f}x the noise of the medians ({ms(self.noise)})")
        return (f"{self.label} {ms(self.measured)}, {ms(abs(self.measured - self.threshold))} "
                f"{side} its threshold of {ms(self.threshold)}: {units}")

    def evidence(self) -> dict[str, Any]:
        units = self.units
        return {"margin": None if math.isinf(units) else round(units, 2),
                "margin_ms": round(self.distance * 1e3, 3),
                "threshold_ms": round(self.threshold * 1e3, 3),
                "noise_ms": round(self.noise * 1e3, 3)}


def binding(margins: Iterable[Margin]) -> Margin:
    """The condition closest to failing: every condition must hold for the check to fire, so
    the smallest margin decides the verdict."""
    return min(margins, key=lambda m: m.units)


def judge(margin: Margin, matters: bool = True) -> str:
    """The verdict of `margin`; `matters`: the check's other test (perf.matters: the gain is also
    above the noise of the step time itself). A margin clear of its noise whose gain is not
    clear of the step's noise is still borderline."""
    verdict = margin.verdict
    return BORDERLINE if verdict == FIRES and not matters else verdict


def borderline(check: str, margin: Margin, hint: str, ranks: Iterable[int] = (),
               location: Optional[Location] = None, evidence: Optional[dict] = None) -> Problem:
    """The info finding of a measurement within the noise of its threshold."""
    return Problem(
        message=(f"borderline, not judged: {check}; {margin.words()}. Within the noise of this "
                 "run another run can land on either side; run longer (--max-steps) on a quieter "
                 "machine to settle it"),
        hint=hint,
        ranks=list(ranks),
        location=location,
        evidence={"borderline": True, **margin.evidence(), **(evidence or {})},
        severity=Severity.INFO,
    )


def common_steps(perfs: dict) -> list[list]:
    """The judged steps every rank recorded, each as its ranks' StepSamples (perf.RankPerf)."""
    by_step: dict[int, list] = {}
    for rank_perf in perfs.values():
        for sample in rank_perf.steps:
            by_step.setdefault(sample.step, []).append(sample)
    return [samples for _, samples in sorted(by_step.items()) if len(samples) == len(perfs)]
