"""How busy this machine was with work other than the job while the job ran.

A timing verdict (DDP601-605) is judged from the job's own steps, and the noise a run can see
in them does not include the load of the next run: on a shared machine another test suite or
job moves a median more than the steps of one run show (docs/performance.md, "Verdict
stability"). What the probe can record is how much CPU other processes took during this run:
the machine's busy time (psutil.cpu_times: everything but idle and iowait, steal included, the
time a hypervisor gave to other machines) minus what the job itself used (this process and
every process of the job it reaped: the launcher waits for its ranks, ddpdoctor for the
launcher and for any rank it had to end). It is said beside the timing verdicts, so a reader
can tell a measurement taken on a quiet machine from one taken under load.

Where the machine's times cannot be read, nothing is recorded and nothing is said. Two reads of
the CPU times and of getrusage per job: no cost to the job.
"""

from __future__ import annotations

import resource
import time
from dataclasses import dataclass
from typing import Any, Optional

import psutil

from ddpdoctor.probe.run_model.outcome import MachineLoad

# The fields of psutil.cpu_times() that are not idle, on any platform that has them (guest
# time is within user on Linux, so it is not added again).
BUSY_FIELDS = ("user", "nice", "system", "irq", "softirq", "steal")


@dataclass(frozen=True)
class Sample:
    at: float  # time.monotonic()
    cpus: int  # logical CPUs
    busy_s: float  # CPU-seconds the whole machine spent busy since boot (not idle, not iowait)
    own_s: float  # CPU-seconds of this process and its reaped children


def busy_seconds(times: Any) -> float:
    """CPU-seconds the whole machine spent busy, from a psutil.cpu_times() tuple."""
    fields = times._asdict()
    return sum(float(fields.get(name, 0.0)) for name in BUSY_FIELDS)


def sample() -> Optional[Sample]:
    try:
        cpus = psutil.cpu_count() or 0
        busy = busy_seconds(psutil.cpu_times())
    except (psutil.Error, OSError, ValueError):
        return None
    if cpus <= 0:
        return None
    own = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        own += usage.ru_utime + usage.ru_stime
    return Sample(time.monotonic(), cpus, busy, own)


def between(first: Optional[Sample], last: Optional[Sample]) -> Optional[MachineLoad]:
    """The load from `first` to `last`; None when either is missing or no time passed."""
    if first is None or last is None:
        return None
    seconds = last.at - first.at
    if seconds <= 0.05:
        return None
    return MachineLoad(last.cpus, seconds, max(0.0, (last.busy_s - first.busy_s) / seconds),
                       max(0.0, (last.own_s - first.own_s) / seconds))
