"""A job ended from outside: the launcher or the scheduler stopped it, no rank failed by itself.

torchelastic's agent logs `Received 15 death signal, shutting down workers` (`Signals.SIGTERM`
before Python 3.11 printed enums by name) and raises `SignalException: Process PID got signal: 15`
in the launcher itself (torch/distributed/elastic/multiprocessing/api.py: the handler is installed
in the agent, never in a rank). SLURM's step daemon prints `*** JOB N ON host CANCELLED AT T DUE TO
TIME LIMIT ***` (or `*** STEP N.M ON host CANCELLED AT T ***` for scancel). Either is how the job
ended, not why it stopped making progress: a hang that outlasts the scheduler's limit shows only
this, and a report must say so rather than call the launcher "a process a peer failed".
"""

from __future__ import annotations

import re
import signal
from typing import Optional

from ddpdoctor.postmortem.evidence import Evidence, Line, Stopped

_DEATH = re.compile(r"Received (?:Signals\.)?(\w{1,10}) death signal, shutting down workers")
_GOT = re.compile(r"got signal: (?:Signals\.)?(\w{1,10})")
_SLURM = re.compile(r"\*\*\* (?:JOB|STEP) ([\w.+]{1,40}) ON (\S{1,255}) CANCELLED AT (\S{1,40})"
                    r"(?: DUE TO ([A-Z][A-Z ]{0,40}?))? \*\*\*")
ANCHORS = (b"death signal", b"CANCELLED AT")
MAX_KEPT = 1000


def signal_name(value: str) -> str:
    """'15' or 'SIGTERM' -> 'SIGTERM (15)'; anything else as written."""
    try:
        number = int(value) if value.isdigit() else int(signal.Signals[value])
        return f"{signal.Signals(number).name} ({number})"
    except (KeyError, ValueError):
        return value


def read(text: str, where: Line, t: Optional[float], order: int, ev: Evidence) -> bool:
    match = _DEATH.search(text)
    if match:
        return _keep(ev, Stopped(None, where, t, order, by="torchrun", signal=signal_name(match.group(1))))
    match = _SLURM.search(text)
    if match:
        job, host, _, reason = match.groups()
        return _keep(ev, Stopped(None, where, t, order, by="slurm", job=job, host=host,
                                 reason=(reason or "").strip().lower()))
    return False


def from_traceback(exc_type: str, message: str, where: Line, order: int, ev: Evidence) -> bool:
    """The launcher's own SignalException: the same stop as its "death signal" line."""
    if not exc_type.endswith("SignalException"):
        return False
    match = _GOT.search(message)
    return _keep(ev, Stopped(None, where, None, order, by="torchrun",
                             signal=signal_name(match.group(1)) if match else ""))


def _keep(ev: Evidence, fact: Stopped) -> bool:
    if len(ev.stopped) < MAX_KEPT:
        ev.stopped.append(fact)
    return True


def describe(ev: Evidence) -> Optional[str]:
    """One sentence on how the job was ended from outside, or None. The first stop read, with
    its time (from a line of the same stop that had one) and how long after the first watchdog
    timeout it came."""
    if not ev.stopped:
        return None
    slurm = [s for s in ev.stopped if s.by == "slurm"]
    first = min(slurm or ev.stopped, key=lambda s: (s.t is None, s.t or 0.0, s.order))
    t = first.t if first.t is not None else next((s.t for s in ev.stopped if s.t is not None), None)
    if first.by == "slurm":
        what = (f"SLURM cancelled job {first.job} on {first.host}"
                + (f" due to {first.reason}" if first.reason else " (scancel or a signal to the step)"))
        who = ""
    else:
        what = f"torchrun got {first.signal or 'a signal'} and shut its workers down"
        who = " (from a scheduler's time limit or preemption, scancel, a kill or Ctrl-C)"
    timed = [w.t for w in ev.timeouts if w.t is not None]
    after = (f", {t - min(timed):.0f} s after the first watchdog timeout" if t is not None and timed
             and t >= min(timed) else "")
    return (f"the job was ended from outside: {what} at {first.where}{after}{who}; this is how it "
            "ended, not why it stopped")
