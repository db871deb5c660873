"""The types the launcher writes into a run dir and the analysis reads back: ProbeMeta
(probe.json), Outcome (outcome.json) and the stacks it carries (RankStack, Frame). launch/ makes
them, analysis/ loads them; both import them from here, neither from the other.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional

from ddpdoctor.probe.records.rundir import rank_stack_name, rank_telemetry_name


def rank_file(run_dir: str | os.PathLike, rank: int) -> Path:
    return Path(run_dir) / rank_telemetry_name(rank)


def stack_file(run_dir: str | os.PathLike, rank: int) -> Path:
    return Path(run_dir) / rank_stack_name(rank)


@dataclass
class ProbeMeta:
    script: str
    args: list[str]
    nproc_per_node: int
    nnodes: int
    node_rank: int
    world_size: int
    max_steps: int
    steps_per_epoch: int
    stall_timeout_s: Optional[float]  # None: adaptive
    pg_timeout_s: float
    timeout_s: float
    backend: str
    launcher: str  # "torchrun" | "none"
    launcher_reason: str = ""
    cpu: bool = False
    started: float = 0.0
    module: bool = False  # script is a module name (-m)


@dataclass
class Frame:
    func: str
    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.func} ({self.file}:{self.line})"


MAX_WORKER_STACKS = 4  # DataLoader workers sampled per rank


@dataclass
class RankStack:
    """One rank's main-thread stack at the moment the watchdog saw the stall, innermost first."""

    rank: int
    pid: int
    method: str  # "py-spy" | "faulthandler" | "none"
    frames: list[Frame]
    idle: Optional[bool] = None  # py-spy: the thread was waiting (not running Python)
    text: str = ""  # the raw dump, for the report's detail
    host: str = ""  # the node it was taken on (multi-node)
    # Its DataLoader worker processes' stacks (py-spy), when the rank waited for a batch: a
    # worker that blocks is where the rank's hang comes from (launch/stacks.py, at most 4).
    workers: list["RankStack"] = field(default_factory=list)

    @classmethod
    def from_dict(cls, data: dict[str, Any], host: Optional[str] = None) -> "RankStack":
        """From outcome.json or another node's reply (whose host is the node it came from)."""
        frames = [Frame(str(f.get("func", "?")), str(f.get("file", "?")), int(f.get("line") or 0))
                  for f in data.get("frames") or []]
        workers = [cls.from_dict(w, host) for w in (data.get("workers") or [])[:MAX_WORKER_STACKS]
                   if isinstance(w, dict)]
        return cls(int(data.get("rank", -1)), int(data.get("pid", 0)), str(data.get("method", "none")),
                   frames, data.get("idle"), str(data.get("text", "")),
                   str(data.get("host", "")) if host is None else host, workers)


@dataclass
class MachineLoad:
    """This machine's CPU cores in use on average over the `seconds` the job ran: by everything,
    and by the job (ddpdoctor and the processes of the job it reaped); launch/machine_load.py."""

    cpus: int
    seconds: float
    busy_cores: float
    job_cores: float

    @property
    def other_cores(self) -> float:
        return max(0.0, self.busy_cores - self.job_cores)

    def to_dict(self) -> dict[str, Any]:
        """The report's `metrics.machine_load` (outcome.json keeps the four fields as they are)."""
        return {"cpus": self.cpus, "seconds": round(self.seconds, 3),
                "busy_cores": round(self.busy_cores, 3), "job_cores": round(self.job_cores, 3),
                "other_cores": round(self.other_cores, 3)}

    @classmethod
    def from_dict(cls, data: Any) -> Optional["MachineLoad"]:
        """From outcome.json; None for anything else (an older run dir has no such entry)."""
        try:
            return cls(int(data["cpus"]), float(data["seconds"]), float(data["busy_cores"]),
                       float(data["job_cores"]))
        except (TypeError, KeyError, ValueError):
            return None


@dataclass
class Outcome:
    # "completed" | "crashed" | "stalled" | "timeout" | "interrupted" | "launch_failed" |
    # "not_launched" (the rendezvous port was taken: see port_bind); multi-node:
    # "node_lost" (node 0 lost another node), "ended" / "node0_lost" (another node's own job)
    status: str
    wall_s: float
    exit_codes: dict[int, Optional[int]] = field(default_factory=dict)  # rank -> code (negative: signal)
    stall_s: Optional[float] = None  # seconds without progress when the watchdog fired
    stall_timeout_s: Optional[float] = None  # the stall timeout in force then
    stacks: list[RankStack] = field(default_factory=list)
    stack_note: str = ""  # e.g. "py-spy not allowed to attach; faulthandler dumps used"
    launcher_exit: Optional[int] = None
    log_tail: str = ""
    leftover_pids: list[int] = field(default_factory=list)  # processes that had to be killed
    signal: Optional[int] = None  # the signal that interrupted ddpdoctor (status "interrupted")
    # Multi-node, on node 0: one entry per node (launch/node_gather.py NodeState.to_dict()).
    nodes: list[dict[str, Any]] = field(default_factory=list)
    # When the probe began ending the job (time.time(); None: it ended by itself). Errors after
    # it are consequences of the teardown, never the cause (analysis/rank_state.py).
    ended_at: Optional[float] = None
    machine_load: Optional[MachineLoad] = None  # None: not measured (CPU times unreadable, or no job)
    # The rendezvous port ddpdoctor's launcher was to serve, tested by binding it: before launch
    # (taken: the job is not started, status "not_launched") and again after a launcher that
    # failed by itself (who holds it then). preflight/node/port_listener.py's info dict plus
    # "when" ("before" | "after"); None: not tested (torchrun --standalone picks a free port).
    port_bind: Optional[dict[str, Any]] = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["exit_codes"] = {str(k): v for k, v in self.exit_codes.items()}
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Outcome":
        data = dict(data)
        data["exit_codes"] = {int(k): v for k, v in (data.get("exit_codes") or {}).items()}
        data["stacks"] = [RankStack.from_dict(s) for s in data.get("stacks") or []]
        data["machine_load"] = MachineLoad.from_dict(data.get("machine_load"))
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})
