"""Is the job still making progress, and if not, is it stuck or only busy?

Progress is judged from the growth of the ranks' telemetry files. The stall timeout adapts to
the job: five times the longest gap between two optimizer steps seen so far, never below the
floor. A fixed --stall-timeout overrides it.

A quiet spell is not a hang by itself: a script preparing its data, evaluating or uploading a
checkpoint writes nothing for minutes. During a quiet spell the Lookout looks at the ranks
every few seconds (their stacks, their main thread's CPU, the collective their telemetry says
they are in) and run_model/looks.judge() reads it: blocked (a rank waits in a collective its peers
have not reached, or every rank waits) ends the job once the spell is longer than the stall
timeout; busy lets it run on, up to --timeout. Each look is appended to watch.jsonl, which the
live view shows and the report reads for where the time outside steps went.
"""

from __future__ import annotations

import os
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import psutil

from ddpdoctor.core import defaults
from ddpdoctor.core.paths import note_own_dir
from ddpdoctor.probe.records import jsonl
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.run_model.busy_or_blocked import JobLook, Judgement, Pending, RankLook, collective_text, judge
from ddpdoctor.probe.run_model.outcome import RankStack
from ddpdoctor.probe.run_model.stack_text import relative_to
from ddpdoctor.probe.run_model.stack_view import StackView
from ddpdoctor.probe.records.rank_files import RankFileTail, RankLine
from ddpdoctor.probe.records.rundir import WATCH_FILE, is_rank_telemetry, rank_of

STALL_FLOOR_S = defaults.STALL_FLOOR_S
# Before any rank has written a record, the ranks are importing torch and the script: slow on a
# loaded machine, and not yet anything a stall diagnosis could say much about.
STARTUP_FLOOR_S = 30.0
STEP_GAP_FACTOR = 5.0
# A quiet spell is looked at from this long on (a normal step writes records far more often),
# then every LOOK_EVERY_S, less often as the spell grows long (one py-spy dump per rank a look).
LOOK_AFTER_S = 2.0
LOOK_EVERY_S = 2.0
LOOK_EVERY_MAX_S = 10.0
# Records that change what a rank is doing; the others (batches, buckets, grads) only count as
# progress and are not decoded.
FOLLOWED = {"start", "init_enter", "init", "collective", "collective_done", "loader", "batch",
            "step", "end", "crash"}


@dataclass
class RankState:
    """One rank, from its records."""

    rank: int
    host: str = ""
    pid: Optional[int] = None
    started: bool = False
    in_init: Optional[tm.InitEnter] = None
    in_loader: bool = False
    steps: int = 0
    step_t: Optional[float] = None  # wall time of its last step
    collectives: int = 0
    open_collectives: dict = field(default_factory=dict)  # (group, seq) -> tm.Collective
    ended: Optional[str] = None  # End reason
    crashed: Optional[str] = None  # exception type
    seen: Optional[float] = None  # monotonic time its last line was read

    def apply(self, line: RankLine) -> None:
        if line.kind == "batch":  # the loader yielded: out of the DataLoader (no record built: long)
            self.in_loader = False
            return
        record = tm.from_dict(line.data)
        if record is None:
            return
        if isinstance(record, tm.Start):
            self.host, self.pid, self.started = record.host, record.pid, True
            note_own_dir(record.ddpdoctor_dir)  # its frames are ours in the stacks taken of it
        elif isinstance(record, tm.InitEnter):
            self.in_init = record
        elif isinstance(record, tm.Init):
            self.in_init = None
        elif isinstance(record, tm.Collective):
            self.collectives += 1
            self.open_collectives[(record.group, record.seq)] = record
        elif isinstance(record, tm.CollectiveDone):
            self.open_collectives.pop((record.group, record.seq), None)
        elif isinstance(record, tm.Loader):
            self.in_loader = True
        elif isinstance(record, tm.Step):
            self.steps = max(self.steps, record.step)
            self.step_t = record.t
            self.in_loader = False
        elif isinstance(record, tm.Crash):
            self.crashed = record.exc_type
        elif isinstance(record, tm.End):
            self.ended = record.reason
            self.open_collectives.clear()

    def pending(self) -> Optional[Pending]:
        """The wait its records say it is in: the latest collective not returned, else
        init_process_group not returned."""
        if self.open_collectives:
            record = next(reversed(self.open_collectives.values()))
            return Pending(collective_text(record.op, record.bucket), record.site, record.t)
        if self.in_init is not None:
            return Pending("init_process_group", self.in_init.site, self.in_init.t)
        return None

    def phase(self) -> str:
        if self.crashed:
            return f"crashed ({self.crashed})"
        if self.ended:
            return "finished" + (" (step limit)" if self.ended == "max_steps" else "")
        if self.open_collectives:
            return f"in collective {next(reversed(self.open_collectives.values())).op}"
        if self.in_init is not None:
            return "in init_process_group"
        if self.in_loader:
            return "in DataLoader"
        return "in script" if self.started else "starting"


class ProgressWatch:
    """Reads what the ranks append to their files: progress, steps, and each rank's state."""

    def __init__(self, run_dir: str, fixed_timeout_s: Optional[float]) -> None:
        self.run_dir = Path(run_dir)
        self.fixed = fixed_timeout_s
        self.tails: dict[str, RankFileTail] = {}  # by file name
        self.last_progress = time.monotonic()
        self.last_step_time: dict[int, float] = {}
        self.longest_step_gap = 0.0
        self.steps = 0
        self.ranks: dict[int, RankState] = {}
        self._rank_by_name: dict[str, int] = {}
        # Ranks of other nodes, whose records node 0's gather decoded and checked already
        # (forwarded()): read from this inbox, not again from the files the gather writes.
        # Filled from the gather's thread, drained here (deque and set: one step each under
        # the GIL, so the live view's thread may own this watch).
        self.inbox: deque = deque()
        self.forwarded_ranks: set[int] = set()
        # Ranks whose next step gap holds a pause the Lookout judged busy past the stall timeout
        # (an evaluation, an upload): not a step, so it does not stretch the adaptive timeout.
        self.paused: set[int] = set()

    @property
    def timeout_s(self) -> float:
        if self.fixed is not None:
            return self.fixed if self.heard else max(self.fixed, STARTUP_FLOOR_S)
        if not self.heard:
            return STARTUP_FLOOR_S
        return max(STALL_FLOOR_S, STEP_GAP_FACTOR * self.longest_step_gap)

    @property
    def heard(self) -> bool:
        """Some rank has written a record (a file followed, or a forwarded record)."""
        return bool(self.tails or self.forwarded_ranks)

    def forwarded(self, rank: int, records: list[dict]) -> None:
        """Records of a rank on another node, checked by node 0's gather (node_wire.check_records),
        before it appends them to that rank's file: the next poll takes them from here."""
        self.forwarded_ranks.add(rank)
        self.inbox.append((rank, records))

    def poll(self) -> bool:
        """Read what the ranks appended since the last poll. True if anything was."""
        progressed = False
        while self.inbox:
            rank, records = self.inbox.popleft()
            for record in records:
                self._saw(rank, RankLine(record["kind"], record))
            progressed = True
        for name in self._rank_file_names():
            rank = self._rank_by_name.get(name)
            if rank is None:
                if not is_rank_telemetry(name):
                    continue
                rank = self._rank_by_name[name] = rank_of(name)
            if rank in self.forwarded_ranks:
                continue
            tail = self.tails.get(name) or RankFileTail(self.run_dir / name)
            if not tail.grew():
                continue
            lines = tail.records()
            if rank in self.forwarded_ranks:
                continue  # the gather began writing it meanwhile: those lines come by the inbox
            self.tails[name] = tail
            progressed = True
            for line in lines:
                self._saw(rank, line)
        if progressed:
            self.last_progress = time.monotonic()
        return progressed

    def _rank_file_names(self) -> list[str]:
        """The run dir's file names (names, not paths: at 1,024 ranks hashing a Path per file
        per poll was a tenth of node 0's watchdog)."""
        try:
            with os.scandir(self.run_dir) as entries:
                return [entry.name for entry in entries]
        except OSError:
            return []

    def _saw(self, rank: int, line: RankLine) -> None:
        """One whole telemetry line of one rank."""
        if line.kind == "step":
            self._saw_step(rank, line.data)
        state = self.ranks.get(rank)
        if state is None:
            state = self.ranks[rank] = RankState(rank)
        state.seen = time.monotonic()
        if line.kind in FOLLOWED:
            state.apply(line)

    def _saw_step(self, rank: int, record: dict) -> None:
        previous = self.last_step_time.get(rank)
        now = float(record.get("t", 0.0))
        if previous is not None and rank not in self.paused:
            self.longest_step_gap = max(self.longest_step_gap, now - previous)
        self.paused.discard(rank)
        self.last_step_time[rank] = now
        self.steps = max(self.steps, int(record.get("step", 0)))

    def quiet_for(self) -> float:
        return time.monotonic() - self.last_progress


def _main_thread_cpu(processes: dict) -> dict[int, float]:
    """rank -> CPU seconds its main thread has used (the thread that runs the script: helper
    threads of gloo, NCCL or a DataLoader tick while the script waits)."""
    found = {}
    for rank, proc in processes.items():
        try:
            threads = {t.id: t for t in proc.threads()}
            main = threads.get(proc.pid)
            if main is not None:
                found[rank] = main.user_time + main.system_time
            else:
                times = proc.cpu_times()
                found[rank] = times.user + times.system
        except Exception:  # noqa: BLE001 - psutil.Error, or the process just ended
            continue
    return found


def job_cpu_seconds(root_pid: Optional[int]) -> Optional[float]:
    """CPU-seconds used so far by the launcher and every live process under it, including what
    each has reaped (torchrun's agent counts the ranks it collected). None: no launcher to read."""
    if root_pid is None:
        return None
    try:
        root = psutil.Process(root_pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return None
    total = 0.0
    for proc in procs:
        try:
            times = proc.cpu_times()
        except psutil.Error:
            continue  # ended between the listing and the read
        total += times.user + times.system + times.children_user + times.children_system
    return total


class Lookout:
    """Looks at the ranks during quiet spells and judges them busy or blocked.

    `take_stacks()` -> (RankStack list, note): every rank's stack (py-spy, else faulthandler;
    node 0 of a multi-node job asks the other nodes too); `local_stacks()` the same for this
    node's ranks only, for the looks before the stall timeout (no network round per look).
    `processes()` -> rank -> psutil process, for this node's ranks' CPU time. `job_cpu()` -> the
    CPU-seconds the launcher and its processes used so far (job_cpu_seconds), read while no rank
    has been seen: start-up or a launch that waits; `script_is_launcher` under --launcher none.
    Created when the job is launched."""

    def __init__(self, run_dir: str, watch: ProgressWatch,
                 take_stacks: Callable[[], tuple[list, str]], processes: Callable[[], dict],
                 local_stacks: Optional[Callable[[], tuple[list, str]]] = None,
                 job_cpu: Callable[[], Optional[float]] = lambda: None,
                 script_is_launcher: bool = False) -> None:
        self.watch = watch
        self.take_stacks = take_stacks
        self.local_stacks = local_stacks or take_stacks
        self.everywhere = local_stacks is None  # one node: every look sees every rank
        self.processes = processes
        self.blocked_spell: Optional[float] = None  # the spell a full look judged blocked
        self.file = Path(run_dir) / WATCH_FILE
        self.spell: Optional[float] = None  # the quiet spell being looked at (its last_progress)
        self.looked_at = 0.0  # monotonic
        self.judged_late = False  # this spell had a look past the stall timeout
        self.before: dict[int, tuple] = {}  # rank -> (stack signature, cpu s, monotonic) of the last look
        self.judgement: Optional[Judgement] = None
        self.stacks: list[RankStack] = []
        self.note = ""
        self.job_cpu = job_cpu
        self.script_is_launcher = script_is_launcher
        self.job_cpu_before = (0.0, time.monotonic())  # the launcher had used nothing at its start

    def due(self) -> bool:
        """Time for a look: the job is quiet long enough, and the last look is old enough (or
        the spell just passed the stall timeout and must be judged now)."""
        quiet = self.watch.quiet_for()
        if self.spell != self.watch.last_progress:
            self.spell, self.before, self.judged_late = self.watch.last_progress, {}, False
        timeout = self.watch.timeout_s
        if quiet < min(LOOK_AFTER_S, timeout / 2):
            return False
        if quiet >= timeout and not self.judged_late:
            return True
        if self.blocked_spell == self.watch.last_progress:
            return False  # already seen blocked: stalled() calls it at the timeout, no new look
        every = min(LOOK_EVERY_MAX_S, max(LOOK_EVERY_S, quiet / 5, timeout / 4))
        return time.monotonic() - self.looked_at >= every

    def stalled(self) -> bool:
        """The spell is past the stall timeout and a look at every rank in it already saw a
        rank blocked: nothing has moved since, so that look is the verdict (no second round of
        stacks, which costs seconds on a loaded machine)."""
        return (self.blocked_spell is not None and self.blocked_spell == self.watch.last_progress
                and self.watch.quiet_for() >= self.watch.timeout_s)

    def look(self, taken: Optional[tuple[list, str]] = None) -> Judgement:
        """Take (or use) every rank's stack and CPU, judge, and append the look to watch.jsonl."""
        late = self.watch.quiet_for() >= self.watch.timeout_s
        spell = self.watch.last_progress
        full = late or self.everywhere or taken is not None
        if taken is None:
            taken = self.take_stacks() if full else self.local_stacks()
        stacks, note = taken
        cpu = _main_thread_cpu(self.processes())
        now = time.monotonic()
        self.judged_late = self.judged_late or late
        by_rank = {s.rank: s for s in stacks}
        looks = []
        for rank in sorted(set(self.watch.ranks) | set(by_rank)):
            state = self.watch.ranks.get(rank) or RankState(rank)
            stack = by_rank.get(rank)
            view = (StackView(rank, relative_to(stack.frames, _CWD), stack.method, stack.idle,
                              stack.text) if stack is not None and stack.frames else None)
            signature = view.signature if view is not None else None
            earlier = self.before.get(rank)
            moved = share = None
            if earlier is not None:
                if signature is not None and earlier[0] is not None:
                    moved = signature != earlier[0]
                if rank in cpu and earlier[1] is not None and now > earlier[2]:
                    share = (cpu[rank] - earlier[1]) / (now - earlier[2])
            self.before[rank] = (signature, cpu.get(rank), now)
            looks.append(RankLook(rank, bool(state.ended or state.crashed), state.pending(), view,
                                  moved, share))
        job = JobLook(self._job_cpu_share(now), self.script_is_launcher) if not looks else None
        self.judgement = judge(looks, job)
        self.blocked_spell = spell if full and self.judgement.blocked else None
        if late and not self.judgement.blocked:
            self.watch.paused.update(look.rank for look in looks)
        self.stacks, self.note, self.looked_at = stacks, note, now
        self._append(looks, self.judgement, job)
        return self.judgement

    def _job_cpu_share(self, now: float) -> Optional[float]:
        """CPUs the job's processes used since the previous reading (the launch, the first time)."""
        used = self.job_cpu()
        if used is None:
            return None
        before, then = self.job_cpu_before
        self.job_cpu_before = (used, now)
        return max(0.0, used - before) / (now - then) if now > then else None

    def _append(self, looks: list[RankLook], judgement: Judgement, job: Optional[JobLook]) -> None:
        """One line per look (one os.write on an O_APPEND descriptor, like the ranks' files)."""
        record = {"t": round(time.time(), 3), "quiet_s": round(self.watch.quiet_for(), 2),
                  "stall_timeout_s": self.watch.timeout_s, **judgement.to_dict(),
                  "ranks": {str(look.rank): _look_dict(look) for look in looks},
                  "job_cpu": None if job is None or job.cpu is None else round(job.cpu, 3)}
        try:
            fd = os.open(self.file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, jsonl.encode(record))
            finally:
                os.close(fd)
        except OSError:
            pass  # the run dir is gone or full: the supervisor's health check says so

    def at_timeout(self, taken: tuple[list, str]) -> str:
        """--timeout ended the job: "timeout" when it was still training (a step within the
        stall timeout) or blocked, as a hang; "timeout_busy" when its ranks were busy in their
        own code and never blocked (the verdict is then incomplete, not a hang)."""
        judgement = self.look(taken)
        wall_now = time.time()
        recent = [s.step_t for s in self.watch.ranks.values() if s.step_t is not None]
        if recent and wall_now - max(recent) < self.watch.timeout_s:
            return "timeout"
        return "timeout" if judgement.blocked else "timeout_busy"


_CWD = os.getcwd()  # where the job runs: its files named relative to it, as its telemetry names them


def _look_dict(look: RankLook) -> dict:
    user = look.stack.user_frame if look.stack is not None else None
    return {"where": look.where(), "waiting": look.waiting, "done": look.done,
            "file": user.file if user else None, "line": user.line if user else None,
            "func": user.func if user else None,
            "idle": look.stack.idle if look.stack is not None else None,
            "cpu": None if look.cpu_share is None else round(look.cpu_share, 3),
            "pending": None if look.pending is None else f"{look.pending.what}"
            + (f" at {look.pending.site}" if look.pending.site else "")}
