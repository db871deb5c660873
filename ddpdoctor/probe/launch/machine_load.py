"""How busy this machine was with work other than the job while the job ran.

A timing verdict (DDP601-605) is judged from the job's own steps, and the noise a run can see
in them does not include the load of the next run: on a shared machine another test suite or
job moves a median more than the steps of one run show (docs/performance.md, "Verdict
stability"). What the probe can record is how much CPU other processes took during this run:
the machine's busy time (/proc/stat) minus what the job itself used (this process and every
process of the job it reaped: the launcher waits for its ranks, ddpdoctor for the launcher and
for any rank it had to end). It is said beside the timing verdicts, so a reader can tell a
measurement taken on a quiet machine from one taken under load.

Linux only (/proc/stat); elsewhere, or when it cannot be read, nothing is recorded and nothing
is said. Two reads of /proc/stat and of getrusage per job: no cost to the job.
"""

from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass
from typing import Optional

from ddpdoctor.probe.run_model.outcome import MachineLoad

PROC_STAT = "/proc/stat"


@dataclass(frozen=True)
class Sample:
    at: float  # time.monotonic()
    cpus: int  # the cpuN lines of /proc/stat
    busy_s: float  # CPU-seconds the whole machine spent busy since boot (not idle, not iowait)
    own_s: float  # CPU-seconds of this process and its reaped children


def parse_stat(text: str, ticks_per_s: float) -> tuple[int, float]:
    """(cpus, busy CPU-seconds since boot) from /proc/stat's text."""
    cpus, busy = 0, 0.0
    for line in text.splitlines():
        if line.startswith("cpu "):
            fields = [float(v) for v in line.split()[1:]]
            # user nice system idle iowait irq softirq steal [guest guest_nice: within user]
            busy = (sum(fields[:8]) - fields[3] - (fields[4] if len(fields) > 4 else 0.0)) / ticks_per_s
        elif line.startswith("cpu") and line[3:4].isdigit():
            cpus += 1
    return cpus, busy


def sample() -> Optional[Sample]:
    try:
        with open(PROC_STAT, encoding="ascii") as f:
            text = f.read()
        cpus, busy = parse_stat(text, float(os.sysconf("SC_CLK_TCK")))
    except (OSError, ValueError, IndexError):
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
