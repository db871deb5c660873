"""What the collective smoke test (DDP107) found: per pair of nodes, per all-reduce size, per rank.

Built from the events each rank printed (collective_worker.py) and from what happened to each
node's supervisor (it could not be started, it never answered). DDP107 reads this; it is part
of ClusterFacts, so a test can build one by hand.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ddpdoctor.core.torch_names import bus_factor

# What a rank was doing after its last event, for "killed at the deadline while ...".
_DOING_AFTER = {
    None: "starting Python",
    "started": "importing torch",
    "imported": "connecting to the store",
    "store": "in the pair tests (or waiting for them)",
    "pair": "in the pair tests (or waiting for them)",
    "world-init": "in the first all-reduce",
    "check": "timing all-reduces",
    "size": "timing all-reduces",
}


@dataclass
class PairResult:
    """A 2-rank all-reduce between the first processes of two nodes."""

    hosts: list[str]  # two hosts
    round: int
    bytes: int = 0
    seconds: Optional[float] = None  # per all-reduce, the slower end's measure
    busbw: Optional[float] = None  # bytes per second
    error: Optional[str] = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.seconds is not None


@dataclass
class SizeResult:
    """One all-reduce size across the whole world; seconds are the slowest rank's."""

    bytes: int
    seconds: float
    algbw: float  # bytes per second
    busbw: float  # algbw x 2(n-1)/n


@dataclass
class RankResult:
    rank: int
    host: str
    local_rank: int
    last_phase: Optional[str]
    error: Optional[str] = None  # what went wrong, in one line
    stderr: list[str] = field(default_factory=list)


@dataclass
class CollectiveOutcome:
    """The smoke test's result. status: ran | skipped (with reason)."""

    status: str
    reason: str = ""
    backend: str = "gloo"
    world_size: int = 0
    hosts: list[str] = field(default_factory=list)  # by node rank
    pairs: list[PairResult] = field(default_factory=list)
    sizes: list[SizeResult] = field(default_factory=list)
    ranks: list[RankResult] = field(default_factory=list)
    world: str = "not-run"  # ok | failed | skipped | not-run
    world_detail: str = ""
    node_failures: dict[str, str] = field(default_factory=dict)  # host -> why its ranks never ran
    seconds: float = 0.0

    @property
    def failed_ranks(self) -> list[RankResult]:
        return [r for r in self.ranks if r.error]

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict
        return asdict(self)


def skipped(reason: str, backend: str = "gloo") -> CollectiveOutcome:
    return CollectiveOutcome(status="skipped", reason=reason, backend=backend)


def from_nodes(hosts: list[str], backend: str, world_size: int, answers: dict[str, Any],
               seconds: float, rounds: list[list[list[int]]] = ()) -> CollectiveOutcome:
    """Merge every node's answer: the supervisor's JSON (a dict), or a string saying why none came.
    `rounds` is the pair schedule: a scheduled pair nobody reported on is a failed pair too."""
    out = CollectiveOutcome(status="ran", backend=backend, world_size=world_size, hosts=list(hosts),
                            seconds=round(seconds, 3))
    pair_events: dict[tuple, list[dict]] = {}
    size_events: list[dict] = []
    for host in hosts:
        answer = answers.get(host)
        if not isinstance(answer, dict):
            out.node_failures[host] = str(answer or "no answer")
            continue
        for rank in answer.get("ranks", []):
            events = rank.get("events", [])
            for event in events:
                if event.get("phase") == "pair" and isinstance(event.get("pair"), list):
                    pair_events.setdefault((event.get("round"), tuple(event["pair"])), []).append(event)
                elif event.get("phase") == "size" and rank.get("rank") == 0:
                    size_events.append(event)
            out.ranks.append(_rank_result(host, rank, events))
    for number, pairs in enumerate(rounds):
        for a, b in pairs:
            pair_events.setdefault((number, (a, b)), [])
    for (number, (a, b)), events in sorted(pair_events.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        out.pairs.append(_pair_result(hosts, number, a, b, events))
    factor = bus_factor(world_size)
    out.sizes = [SizeResult(int(e["bytes"]), float(e["seconds"]), float(e["algbw"]),
                            round(float(e["algbw"]) * factor, 1)) for e in size_events]
    out.world, out.world_detail = _world_status(out, answers)
    return out


def _rank_result(host: str, rank: dict, events: list[dict]) -> RankResult:
    last = events[-1].get("phase") if events else None
    errors = [e for e in events if e.get("error") and e.get("phase") != "pair"]
    error = None
    if errors:
        error = f"{errors[0]['phase']}: {errors[0]['error']}"
    elif last == "deadline" or rank.get("killed"):
        before = [e.get("phase") for e in events if e.get("phase") not in ("deadline",)]
        doing = _DOING_AFTER.get(before[-1] if before else None, "running")
        error = f"killed at the deadline while {doing}"
    elif last not in ("done",) and not any(e.get("skipped") for e in events) and last != "pair":
        code = rank.get("exit_code")
        error = f"exited (code {code}) after phase {last or 'none'}"
    return RankResult(int(rank.get("rank", -1)), host, int(rank.get("local_rank", 0)), last, error,
                      list(rank.get("stderr") or []))


def _pair_result(hosts: list[str], number: int, a: int, b: int, events: list[dict]) -> PairResult:
    names = [hosts[a] if a < len(hosts) else str(a), hosts[b] if b < len(hosts) else str(b)]
    # The end that saw the failure says more than the end told about it.
    errors = sorted((e["error"] for e in events if e.get("error")),
                    key=lambda text: text.startswith("the other end failed"))
    if errors:
        return PairResult(names, number, error=errors[0])
    if not events:
        return PairResult(names, number, error="neither end got to this pair test")
    if len(events) < 2:
        return PairResult(names, number, error="only one end finished this pair test")
    seconds = max(float(e["seconds"]) for e in events)
    nbytes = int(events[0].get("bytes") or 0)
    return PairResult(names, number, nbytes, seconds, round(nbytes / seconds, 1) if seconds > 0 else None)


def _world_status(out: CollectiveOutcome, answers: dict[str, Any]) -> tuple[str, str]:
    if out.node_failures:
        return "failed", "not every node ran its processes"
    skips = {e.get("skipped") for a in answers.values() if isinstance(a, dict)
             for r in a.get("ranks", []) for e in r.get("events", []) if e.get("skipped")}
    if skips:
        return "skipped", sorted(skips)[0]
    if out.failed_ranks:
        return "failed", out.failed_ranks[0].error or ""
    if not out.sizes:
        return "failed", "no all-reduce was timed"
    return "ok", ""
