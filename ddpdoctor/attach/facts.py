"""What attach observed of each rank: the facts the judging reads (and what a node sends node 0).

Plain data, JSON both ways, so that a node's observations cross the network as they are.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Optional

from ddpdoctor.probe.run_model.outcome import Frame

# The line a node's observation is printed on (ddpdoctor.attach.node) and found by (nodes.py).
NODE_MARKER = "DDPDOCTOR-ATTACH-NODE "


@dataclass
class RankObservation:
    """One rank over the sampled seconds."""

    rank: int
    pid: int
    host: str
    stacks: list[tuple[Frame, ...]] = field(default_factory=list)  # innermost first, time order
    error: str = ""  # why there are no stacks
    refused: bool = False  # ptrace refused
    exited: bool = False  # ended while sampled
    proc: dict[str, Any] = field(default_factory=dict)  # procstate.ProcDelta.to_dict()
    rank_known: bool = True

    @property
    def io_calls(self) -> Optional[int]:
        return self.proc.get("io_calls")

    @property
    def main_cpu_share(self) -> Optional[float]:
        return self.proc.get("main_cpu_share")

    def to_dict(self) -> dict[str, Any]:
        return {"rank": self.rank, "pid": self.pid, "host": self.host, "error": self.error,
                "refused": self.refused, "exited": self.exited, "proc": self.proc,
                "rank_known": self.rank_known,
                "stacks": [[[f.func, f.file, f.line] for f in s] for s in self.stacks]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RankObservation":
        stacks = [tuple(Frame(str(f[0]), str(f[1]), int(f[2])) for f in s)
                  for s in data.get("stacks") or []]
        return cls(int(data["rank"]), int(data["pid"]), str(data.get("host", "")), stacks,
                   str(data.get("error", "")), bool(data.get("refused")), bool(data.get("exited")),
                   dict(data.get("proc") or {}), bool(data.get("rank_known", True)))


@dataclass
class Observation:
    """Every rank of a job, over one sampling window."""

    job: str
    world_size: Optional[int]
    duration_s: float
    ranks: list[RankObservation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    nodes: int = 1
    lost_nodes: list[str] = field(default_factory=list)  # nodes that gave no observation

    @property
    def unobserved(self) -> list[int]:
        """Ranks of the world that no node observed."""
        if not self.world_size:
            return []
        return sorted(set(range(self.world_size)) - {r.rank for r in self.ranks})

    def to_dict(self) -> dict[str, Any]:
        return {"job": self.job, "world_size": self.world_size, "duration_s": self.duration_s,
                "ranks": [r.to_dict() for r in self.ranks], "notes": self.notes, "nodes": self.nodes}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Observation":
        return cls(str(data.get("job", "")), data.get("world_size"), float(data.get("duration_s", 0)),
                   [RankObservation.from_dict(r) for r in data.get("ranks") or []],
                   list(data.get("notes") or []), int(data.get("nodes", 1)))


def rank_cwd(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return ""
