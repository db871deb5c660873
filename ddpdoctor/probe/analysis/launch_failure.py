"""How the launcher itself failed, read from what the run dir holds (outcome.json's launcher
exit, the port test and the job log's tail): for DDP104 (the rendezvous port was taken) and
DDP504 (any other launcher error), so neither reads the log its own way.

A launcher that exits non-zero is only a launch failure when no rank explains it: a rank that
crashed or exited non-zero is DDP504's ordinary case, and a job the probe ended (stall, timeout,
interrupt) exits non-zero because it was ended.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from ddpdoctor.probe.run_model.loaded_run import RunModel

# The outcome when ddpdoctor did not start the job because the rendezvous port was taken.
NOT_LAUNCHED = "not_launched"

# torch's TCPStore error (and the plain socket one) for a port another process listens on.
_IN_USE = re.compile(r"EADDRINUSE|address already in use", re.IGNORECASE)
_PORT = re.compile(r"\bport:?\s*(\d{1,5})\b", re.IGNORECASE)
# An exception's own line: "torch.distributed.DistNetworkError: ...", "RuntimeError: ...".
_ERROR_LINE = re.compile(r"^(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|Failure):\s.*\S")
# A rank's line in the job log (its output is prefixed): not the launcher's own.
_RANK_PREFIX = re.compile(r"^\[(?:rank|default)\d*\]")
_LINE_CHARS = 400


@dataclass(frozen=True)
class LaunchFailure:
    launcher_exit: Optional[int]
    first_error: str  # the launcher's first error line ("" when none was found)
    address_in_use: bool  # the error says the rendezvous port was taken
    port: Optional[int]  # that port, when known
    port_fact: Optional[dict]  # outcome.json's port test (bind_rendezvous's info), if taken


def launch_failure(run: RunModel) -> Optional[LaunchFailure]:
    """The launcher's failure when it, not a rank, is what went wrong; None otherwise."""
    outcome = run.outcome
    if outcome is None:
        return None
    fact = outcome.port_bind if isinstance(outcome.port_bind, dict) else None
    if outcome.status == NOT_LAUNCHED:
        port = _int(fact.get("port")) if fact else None
        return LaunchFailure(None, str(fact.get("detail", "")) if fact else "", True, port, fact)
    if outcome.status not in ("crashed", "completed", "launch_failed"):
        return None  # ended by the probe, or by a lost node: its exit says nothing of its own
    if outcome.launcher_exit in (None, 0) or any(c not in (None, 0) for c in outcome.exit_codes.values()):
        return None
    if any(rank_run.crash is not None for rank_run in run.ranks.values()):
        return None
    first = first_error_line(outcome.log_tail)
    port = _int(fact.get("port")) if fact else None
    line = next((ln for ln in (outcome.log_tail or "").splitlines()
                 if _IN_USE.search(ln) and not _RANK_PREFIX.match(ln.strip())), None)
    if line is not None:
        found = _PORT.search(line)
        port = _int(found.group(1)) if found else port
    return LaunchFailure(outcome.launcher_exit, first, line is not None, port, fact)


def first_error_line(log: str) -> str:
    """The first exception line the launcher itself printed (a rank's lines are prefixed)."""
    for line in (log or "").splitlines():
        text = line.strip()
        if text and not _RANK_PREFIX.match(text) and _ERROR_LINE.match(text):
            return text[:_LINE_CHARS]
    return ""


def _int(value) -> Optional[int]:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if 0 <= number <= 65535 else None
