"""Cause before consequence, over the evidence: the first fact that no other fact explains.

Primary facts are those a rank or the host caused by itself: an exception that is not a peer's
doing, an NCCL error, the OOM killer's kill, a rank that died by a signal with no traceback and no
sign it was aborted (a rank its own watchdog aborted dies by SIGABRT: that is a consequence). The
first cause is the earliest primary fact (by its time where the line had one, else by where it was
read); facts of the same kind and wording on other ranks are part of it. Everything else a dead job
left (watchdog timeouts, peers' "connection reset", torchrun's summary) is a consequence.
"""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.postmortem.evidence import ChildFailure, Evidence, Fact, NcclWarn, OomKill, RankError, WatchdogTimeout

CAUSE, CONSEQUENCE = "cause", "consequence"
_ABORTS = {int(signal.SIGABRT), int(signal.SIGTERM), int(signal.SIGINT), int(signal.SIGHUP)}
_BENIGN_NCCL = ("remote",)


@dataclass
class Verdict:
    cause: list[Fact] = field(default_factory=list)

    @property
    def known(self) -> bool:
        return bool(self.cause)

    @property
    def ranks(self) -> list[int]:
        return sorted({f.rank for f in self.cause if f.rank is not None})

    def holds(self, fact: Fact) -> bool:
        """The fact is one of the cause's: by identity, through a set made once (a log of 20,000
        NCCL lines compared field by field, pair by pair, ran for minutes)."""
        ids = self.__dict__.get("_ids")
        if ids is None or len(ids) != len(self.cause):
            ids = self.__dict__["_ids"] = {id(f) for f in self.cause}
        return id(fact) in ids


def aborted_ranks(ev: Evidence) -> set[int]:
    """Ranks that show they were stopped by a peer's failure (a watchdog timeout, a peer's error)."""
    out = {w.rank for w in ev.timeouts if w.rank is not None}
    out |= {e.rank for e in ev.errors if e.collateral and e.rank is not None}
    return out


def killed_by_oom(ev: Evidence) -> dict[int, OomKill]:
    """rank -> the OOM killer's kill of its process, where a pid names the rank."""
    out = {}
    for kill in ev.ooms:
        rank = ev.rank_of_pid(kill.pid)
        if rank is not None:
            kill.rank = rank
            out[rank] = kill
    return out


def signal_deaths(ev: Evidence) -> list[ChildFailure]:
    """Ranks torchelastic saw die by a signal that left no traceback and were not aborted."""
    with_errors = {e.rank for e in ev.errors if e.rank is not None}
    aborted = aborted_ranks(ev)
    oom = killed_by_oom(ev)
    out = []
    for child in ev.children:
        if child.exitcode is None or child.exitcode >= 0 or child.rank is None:
            continue
        if child.rank in with_errors or child.rank in aborted or child.rank in oom:
            continue
        if -child.exitcode in _ABORTS:
            continue
        out.append(child)
    return out


def primary(ev: Evidence) -> list[Fact]:
    facts: list[Fact] = [e for e in ev.errors if not e.collateral]
    facts += [w for w in ev.nccl if w.kind not in _BENIGN_NCCL]
    killed_by_oom(ev)
    facts += list(ev.ooms)
    facts += signal_deaths(ev)
    return facts


def _key(fact: Fact) -> tuple:
    return (fact.t is None, fact.t or 0.0, fact.order)


def signature(fact: Fact) -> tuple:
    if isinstance(fact, RankError):
        return ("error", fact.kind, fact.exc_type, re.sub(r"\d+", "N", fact.summary()),
                str(fact.site) if fact.site else "")
    if isinstance(fact, NcclWarn):
        return ("nccl", fact.kind)
    if isinstance(fact, OomKill):
        return ("oom",)
    if isinstance(fact, ChildFailure):
        return ("signal", fact.exitcode)
    return (type(fact).__name__,)


def verdict(ev: Evidence) -> Verdict:
    """The first cause (memoised on the evidence: every check asks)."""
    cached = getattr(ev, "_verdict", None)
    if cached is not None:
        return cached
    facts = sorted(primary(ev), key=_key)
    result = Verdict()
    if facts:
        first = signature(facts[0])
        result.cause = [f for f in facts if signature(f) == first]
        # An NCCL WARN and the exception it raised on the same rank are one cause.
        ranks = {f.rank for f in result.cause}
        if first[0] == "error" and first[1] == "nccl" or first[0] == "nccl":
            result.cause += [f for f in facts if not result.holds(f) and f.rank in ranks
                             and (isinstance(f, NcclWarn) or isinstance(f, RankError) and f.kind == "nccl")]
    ev._verdict = result  # type: ignore[attr-defined]
    return result


def role(ev: Evidence, facts: Iterable[Fact]) -> str:
    found = verdict(ev)
    return CAUSE if any(found.holds(f) for f in facts) else CONSEQUENCE


def problem(ev: Evidence, facts: list[Fact], message: str, hint: str,
            severity: Optional[Severity] = None, extra: Optional[dict[str, Any]] = None,
            role_: Optional[str] = None) -> Problem:
    """A finding over facts: its ranks, its role and the lines it rests on (file:line: text)."""
    ranks = sorted({f.rank for f in facts if f.rank is not None})
    the_role = role_ or role(ev, facts)
    site = next((f.site for f in facts if isinstance(f, (RankError, WatchdogTimeout)) and f.site), None)
    evidence: dict[str, Any] = {"role": the_role, "source": "post-mortem",
                                "lines": [f.where.shown() for f in facts[:20]]}
    if len(facts) > 20:
        evidence["lines_left_out"] = len(facts) - 20
    evidence.update(extra or {})
    if the_role == CONSEQUENCE and severity is None:
        severity = Severity.WARNING
    return Problem(message=message, hint=hint, ranks=ranks, location=site, evidence=evidence,
                   severity=severity)


def grouped(facts: list[Fact]) -> list[list[Fact]]:
    """Facts of the same signature together, in the order their first one happened."""
    groups: dict[tuple, list[Fact]] = {}
    for fact in sorted(facts, key=_key):
        groups.setdefault(signature(fact), []).append(fact)
    return list(groups.values())


def when(facts: list[Fact]) -> str:
    """" (at 2024-05-01 12:00:00 UTC)" of the first fact with a time, or ""."""
    import time as _time

    stamps = [f.t for f in facts if f.t is not None]
    if not stamps:
        return ""
    return " (at " + _time.strftime("%Y-%m-%d %H:%M:%S UTC", _time.gmtime(min(stamps))) + ")"


def who(group: list[Fact], nobody: str) -> str:
    """"rank 3" / "ranks 1-7" of the facts, or `nobody` when no line named a rank."""
    from ddpdoctor.probe.words.wording import rank_list

    ranks = sorted({f.rank for f in group if f.rank is not None})
    return rank_list(ranks) if ranks else nobody


def none_found(ev: Evidence):
    """What an evidence check returns when it found nothing: nothing, or Skipped when nothing at
    all was read (the report is then incomplete through DDP503, not passed by every check)."""
    from ddpdoctor.core.registry import Skipped

    return [] if not ev.empty else Skipped("no evidence was read")
