"""What attach observed of each rank: the facts the judging reads (and what a node sends node 0).

Plain data, JSON both ways, so that a node's observations cross the network as they are. What
comes back from a node is a peer's word: `from_dict` believes it only after checking every field
for type and range, bounds every count (ranks, samples, frames, notes) and cleans every string
of control characters, as the probe's gather port does (probe/launch/node_wire.py, whose checks
it uses); anything else is a BadMessage, and node 0 counts that node as giving no observation.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Optional

from ddpdoctor.probe.launch.node_wire import (MAX_NPROC, BadMessage, clean, float_in,
                                              instance_of, int_in, optional, text_upto)
from ddpdoctor.probe.run_model.outcome import Frame

# The line a node's observation is printed on (ddpdoctor.attach.node) and found by (nodes.py).
NODE_MARKER = "DDPDOCTOR-ATTACH-NODE "

MAX_FRAMES = 512  # a deeper stack is cut to its innermost frames, where the rank waits
MAX_NOTES = 64
MAX_WORLD = 1 << 20
# procstate.ProcDelta.to_dict() and driver.observe's io_quiet_s, quiet_cpu_share: the /proc facts
# the judge reads.
# A key not listed (a newer node) is dropped, never passed on.
_PROC = {"pid": int_in(0, 2 ** 31), "seconds": float_in(0.0, 1e6), "alive": instance_of(bool),
         "state": text_upto(16), "threads": optional(int_in(0, 10 ** 7)),
         "cpu_share": optional(float_in(0.0, 1e5)), "main_cpu_share": optional(float_in(0.0, 1e5)),
         "io_calls": optional(int_in(0, 2 ** 63)), "io_quiet_s": optional(float_in(0.0, 1e6)),
         "quiet_cpu_share": optional(float_in(0.0, 1e5)), "gpu": optional(instance_of(bool)),
         "exited_after_s": optional(float_in(0.0, 1e6)), "exit_status": optional(text_upto(64))}
_FRAME = (text_upto(4096), text_upto(4096), int_in(0, 10 ** 8))  # func, file, line


def most_samples(duration_s: float, rate: int) -> int:
    """The most stacks one rank can have been sampled for in a window (py-spy takes `rate` a
    second; a node rounds the window up to whole seconds)."""
    return int(rate * (int(duration_s) + 1) * 1.5) + 16


def _need(ok: bool, what: str) -> None:
    if not ok:
        raise BadMessage(what)


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
    local_rank: Optional[int] = None  # torchrun's LOCAL_RANK: which node can own the rank

    @property
    def io_calls(self) -> Optional[int]:
        return self.proc.get("io_calls")

    @property
    def main_cpu_share(self) -> Optional[float]:
        return self.proc.get("main_cpu_share")

    def to_dict(self) -> dict[str, Any]:
        return {"rank": self.rank, "pid": self.pid, "host": self.host, "error": self.error,
                "refused": self.refused, "exited": self.exited, "proc": self.proc,
                "rank_known": self.rank_known, "local_rank": self.local_rank,
                "stacks": [[[f.func, f.file, f.line] for f in s] for s in self.stacks]}

    @classmethod
    def from_dict(cls, data: Any, max_stacks: int) -> "RankObservation":
        """A node's observation of one rank, checked (BadMessage otherwise)."""
        _need(isinstance(data, dict), "a rank's observation is not an object")
        rank, pid = data.get("rank"), data.get("pid")
        _need(int_in(0, MAX_WORLD)(rank) and int_in(0, 2 ** 31)(pid), "a rank or pid is not a number in range")
        raw = data.get("stacks") or []
        _need(isinstance(raw, list) and len(raw) <= max_stacks,
              f"rank {rank}: more than {max_stacks} stacks for the window sampled")
        stacks = []
        for stack in raw:
            _need(isinstance(stack, list), f"rank {rank}: a stack is not a list")
            frames = []
            for frame in stack[:MAX_FRAMES]:
                _need(isinstance(frame, list) and len(frame) == 3
                      and all(ok(v) for ok, v in zip(_FRAME, frame)),
                      f"rank {rank}: a frame is not [function, file, line]")
                frames.append(Frame(clean(frame[0]), clean(frame[1]), frame[2]))
            stacks.append(tuple(frames))
        proc = data.get("proc") or {}
        _need(isinstance(proc, dict), f"rank {rank}: proc is not an object")
        for key, ok in _PROC.items():
            _need(key not in proc or ok(proc[key]), f"rank {rank}: proc's {key} is out of range")
        texts = [data.get("host", ""), data.get("error", "")]
        flags = [data.get("refused", False), data.get("exited", False), data.get("rank_known", True)]
        _need(all(text_upto(4096)(t) for t in texts) and all(type(f) is bool for f in flags),
              f"rank {rank}: host, error or a flag is malformed")
        local = data.get("local_rank")
        _need(optional(int_in(0, MAX_NPROC))(local), f"rank {rank}: local_rank is not a number in range")
        return cls(rank, pid, clean(texts[0], 255), stacks, clean(texts[1], 4096), *flags[:2],
                   {k: proc[k] for k in _PROC if k in proc}, flags[2], local)


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
    # The Flight Recorder dumps attach's pipe fetched (attach/flight.DumpSet): read here, never
    # sent by a node.
    flight: Optional[Any] = None

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
    def from_dict(cls, data: Any, max_stacks: int) -> "Observation":
        """A node's observation, checked and bounded (BadMessage otherwise): at most MAX_NPROC
        ranks, `max_stacks` stacks each (most_samples), MAX_NOTES notes."""
        _need(isinstance(data, dict), "the observation is not an object")
        ranks, notes = data.get("ranks") or [], data.get("notes") or []
        _need(isinstance(ranks, list) and len(ranks) <= MAX_NPROC,
              f"ranks is not a list of at most {MAX_NPROC}")
        _need(isinstance(notes, list) and len(notes) <= MAX_NOTES
              and all(text_upto(4096)(n) for n in notes), f"notes are not at most {MAX_NOTES} texts")
        _need(text_upto(255)(data.get("job", "")) and optional(int_in(1, MAX_WORLD))(data.get("world_size"))
              and float_in(0.0, 1e6)(data.get("duration_s", 0.0)) and int_in(1, 1 << 16)(data.get("nodes", 1)),
              "job, world_size, duration_s or nodes is malformed")
        world = data.get("world_size")
        observed = [RankObservation.from_dict(r, max_stacks) for r in ranks]
        _need(world is None or all(r.rank < world for r in observed),
              f"a rank beyond the world size of {world}")
        return cls(clean(data.get("job", ""), 255), world, float(data.get("duration_s", 0.0)), observed,
                   [clean(n, 4096) for n in notes], data.get("nodes", 1))


def rank_cwd(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return ""
