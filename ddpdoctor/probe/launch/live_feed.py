"""What the live view shows, read while the job runs: where each rank is, and the script's output.

Everything comes from files the job already writes in the run dir, so the view costs the ranks
nothing and shows every node's ranks wherever their rank-<R>.jsonl lands (multi-node: node 0's
run dir holds them all, the host in each rank's Start record):
- rank-<R>.jsonl, tailed by the watchdog's own reader (ProgressWatch, which follows each
  rank's phase), which also gives the stall timeout the countdown runs to; while the launcher
  supervises the job, its own ProgressWatch (follow()), not a second reader of the same files;
- watch.jsonl, the watchdog's looks at the ranks in a quiet spell: where ranks that wait on
  nobody are (shown instead of a countdown: slow is not stuck);
- job.log, the job's output as joblog.py wrote it (secrets already replaced, each rank's lines
  prefixed `[rankN]: ` by torchrun's --tee), printed as it grows.

One thread polls both a few times a second and hands a Board to the view (report/live.py).
`showing(options, run_dir)` wraps the job: the one hook in probe/driver.py.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
import time
from collections import deque
from pathlib import Path
from typing import Iterator, Optional

from ddpdoctor.probe.records import jsonl
from ddpdoctor.probe.records.rundir import LOG_FILE
from ddpdoctor.probe.records.rundir import WATCH_FILE
from ddpdoctor.probe.launch.watchdog import ProgressWatch, RankState
from ddpdoctor.probe.launch.spec import JobSpec
from ddpdoctor.report import live

# At most this many script lines printed per poll; a script printing faster than that has the
# rest summed up in one line (job.log keeps every one).
MAX_LINES_PER_POLL = 200
RATE_WINDOW_S = 10.0
RANK_PREFIX = re.compile(r"^(\[rank\d+\]: )")
# torch's C++ INFO log lines (glog format, maybe after torch's own "[rankN]:"). The probe turns
# them on (TORCH_CPP_LOG_LEVEL=INFO, TORCH_DISTRIBUTED_DEBUG=DETAIL: launcher.py) for its own
# diagnosis; the user did not ask for them, and they would drown the script's own lines.
CPP_INFO = re.compile(r"^(\[rank\d+\]:)?\[I\d{4} \d\d:\d\d:\d\d\.\d+ ")
# The lines DDP's C++ logger writes under its INFO line ("DDP Initialized with:", "Avg forward
# compute time: ..."): one "key: value" each, or empty.
CPP_INFO_MORE = re.compile(r"^\s*(Avg [\w ./]+|Gradient comm\. hook|[a-z_]+):( .*)?$|^\s*$")
# Lines only DDP's INFO logger writes: dropped even when a line of the rank's other stream (its
# stdout, teed apart from its stderr) came between them and their INFO line.
DDP_LOGGER_LINE = re.compile(r"^\s*(Avg (forward|backward) [\w ./]+ time|Gradient comm\. hook): ")


class ScriptOutput:
    """The script's lines from job.log, without the C++ INFO logs the probe itself turned on
    (unless the user asked for them with TORCH_CPP_LOG_LEVEL). job.log keeps every line."""

    def __init__(self, keep_cpp_info: bool, ranks_only: bool = False) -> None:
        self.keep_cpp_info = keep_cpp_info
        # Under torchrun every line of the script carries its rank's prefix; the unprefixed rest
        # is torchrun's own (its warnings, and its traceback when ddpdoctor ends a hung job):
        # kept in job.log, not shown live.
        self.ranks_only = ranks_only
        self._in_info: set[str] = set()  # prefixes ("[rank1]: ", "") inside a multi-line INFO entry

    def shown(self, lines: list[str]) -> list[str]:
        if self.ranks_only:
            lines = [line for line in lines if RANK_PREFIX.match(line)]
        if self.keep_cpp_info:
            return lines
        out = []
        for line in lines:
            match = RANK_PREFIX.match(line)
            prefix = match.group(1) if match else ""
            body = line[len(prefix):]
            if CPP_INFO.match(body):
                self._in_info.add(prefix)
                continue
            if DDP_LOGGER_LINE.match(body):
                continue
            if prefix in self._in_info:
                if CPP_INFO_MORE.match(body):
                    continue
                self._in_info.discard(prefix)
            out.append(line)
        return out


# The watchdog's reader of the ranks' files follows each rank's phase too (RankState); the view
# shows what it reads.
RankWatch = ProgressWatch


class WatchTail:
    """The watchdog's latest look at the ranks in a quiet spell (watch.jsonl's last line)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.latest: Optional[dict] = None

    def read(self) -> Optional[dict]:
        try:
            size = self.path.stat().st_size
            if size > self.offset:
                with open(self.path, "rb") as handle:
                    handle.seek(max(self.offset, size - 65536))
                    lines = handle.read(size - handle.tell()).split(b"\n")
                self.offset = size
                for line in reversed(lines):
                    look = jsonl.decode(line)
                    if look is not None:
                        self.latest = look
                        break
        except OSError:
            pass
        return self.latest


class LogTail:
    """The whole lines job.log gained since the last read."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.partial = b""

    def read(self) -> list[str]:
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                data = handle.read(1 << 20)
        except OSError:
            return []
        self.offset += len(data)
        data = self.partial + data
        lines = data.split(b"\n")
        self.partial = lines.pop()
        return [line.decode("utf-8", "replace") for line in lines]

    def rest(self) -> list[str]:
        """At the end: what is left, the last line too even without its newline."""
        lines = self.read()
        while True:  # a chatty job may have left more than one read's worth
            more = self.read()
            if not more:
                break
            lines += more
        if self.partial:
            lines.append(self.partial.decode("utf-8", "replace"))
            self.partial = b""
        return lines


class LiveFeed:
    """Polls the run dir from one thread and keeps the view up to date until stopped."""

    def __init__(self, options: JobSpec, run_dir: str, view, show_script: bool = True,
                 launcher: str = "torchrun") -> None:
        self.options = options
        self.watch = RankWatch(run_dir, options.stall_timeout_s)
        self.own_watch = True  # polled here; False once it shows the launcher's (follow())
        self.log = LogTail(Path(run_dir) / LOG_FILE)
        self.looks = WatchTail(Path(run_dir) / WATCH_FILE)
        self.view = view
        self.show_script = show_script
        self.script = ScriptOutput(keep_cpp_info="TORCH_CPP_LOG_LEVEL" in os.environ,
                                   ranks_only=launcher == "torchrun")
        self.began = time.monotonic()
        self.samples: deque = deque()  # (monotonic, job steps)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ddpdoctor-live", daemon=True)
        self.failed = False

    def follow(self, watch: ProgressWatch) -> None:
        """Show the launcher's watchdog, which its thread polls, instead of reading every rank's
        records a second time here (at 1,024 ranks a fifth of node 0's CPU, which the gather
        needs to keep up)."""
        self.watch, self.own_watch = watch, False

    def start(self) -> "LiveFeed":
        self.view.start()
        self._thread.start()
        return self

    def board(self) -> live.Board:
        now = time.monotonic()
        # A copy: the launcher's thread may add a rank to the watchdog it shares with this one.
        ranks = self.watch.ranks.copy()
        timeout = self.watch.timeout_s
        quiet = self.watch.quiet_for()
        # The watchdog's latest look, if it was taken in this quiet spell: where each rank
        # stands, and whether any waits on the others.
        look = self.looks.read()
        if look is not None and look.get("t", 0.0) < time.time() - quiet - 0.5:
            look = None
        seen = (look or {}).get("ranks") or {}
        # The countdown to a stall verdict runs only while a rank waits on the others (its
        # records or the look say so): ranks busy in their own code are not judged stalled.
        waiting = any(s.pending() is not None and not (s.ended or s.crashed)
                      for s in ranks.values()) or bool((look or {}).get("waiting"))
        # Node 0 (or a single node) expects every rank; another node of a multi-node job knows
        # only its own, which it sees as their records come.
        expected = range(self.options.world_size) if self.options.node_rank == 0 else ()
        rows = []
        for rank in sorted({*expected, *ranks}):
            state = ranks.get(rank) or RankState(rank)
            age = now - state.seen if state.seen is not None else None
            phase = state.phase()
            where = (seen.get(str(rank)) or {}).get("where")
            if where and phase in ("in script", "starting") and not seen[str(rank)].get("waiting"):
                phase = f"in {where}"
            if (waiting and age is not None and age >= timeout and not (state.ended or state.crashed)
                    and not (self.options.nnodes > 1 and self.options.node_rank != 0)):
                phase = f"stalled ({phase})"
            rows.append(live.RankRow(rank, state.host, state.pid, phase, state.steps,
                                     state.collectives, age, bool(state.ended or state.crashed)))
        busy = None
        if look is not None and not waiting and look.get("places"):
            busy = ("; ".join(f"{live.ranks_text(p['ranks'])} {p['where']}" for p in look["places"])
                    + f" for {live.duration(quiet)}, no collective pending")
        board = live.Board(now - self.began, rows, self.options.max_steps, None,
                           quiet, timeout, Path(self.options.script).name,
                           judged_on_node0=self.options.nnodes > 1 and self.options.node_rank != 0,
                           waiting=waiting, busy=busy)
        # The rate over the last RATE_WINDOW_S seconds, counted from the first step (start-up
        # is not training).
        if board.job_steps > 0:
            self.samples.append((now, board.job_steps))
            while len(self.samples) > 2 and now - self.samples[1][0] >= RATE_WINDOW_S:
                self.samples.popleft()
            first_t, first_steps = self.samples[0]
            if now - first_t > 0.5:
                board.step_rate = (board.job_steps - first_steps) / (now - first_t)
        return board

    def _script_lines(self, lines: list[str]) -> None:
        if not self.show_script or not lines:
            return
        lines = self.script.shown(lines)
        if len(lines) > MAX_LINES_PER_POLL:
            skipped = len(lines) - MAX_LINES_PER_POLL
            lines = lines[:MAX_LINES_PER_POLL] + [f"[ddpdoctor]: ... {skipped} more lines in job.log"]
        self.view.script_lines(lines)

    def tick(self) -> None:
        if self.own_watch:
            self.watch.poll()
        self._script_lines(self.log.read())
        try:
            board = self.board()
        except RuntimeError:
            # A rank's open collectives changed while this thread read them (the launcher's
            # thread polls a followed watchdog): the next frame reads them again.
            if self.own_watch:
                raise
            return
        self.view.update(board)

    def _run(self) -> None:
        while not self._stop.wait(1.0 / live.REFRESH_PER_S):
            try:
                self.tick()
            except Exception:  # noqa: BLE001 - a drawing bug must never cost the user the probe
                self.failed = True
                break

    def stop(self) -> None:
        """After the job: the last lines and the final table, then the terminal is the report's."""
        self._stop.set()
        self._thread.join(5.0)
        board = None
        if not self.failed and not self._thread.is_alive():
            try:
                if self.own_watch:
                    self.watch.poll()
                self._script_lines(self.log.rest())
                board = self.board()
            except Exception:  # noqa: BLE001 - as in _run
                board = None
        self.view.stop(board)


@contextlib.contextmanager
def showing(options: JobSpec, run_dir: str, launcher: str = "torchrun") -> Iterator[Optional[LiveFeed]]:
    """Show the job while it runs, as options.live says (the CLI asks; the Python API does not)."""
    view = live.view_for(options.live, sys.stderr)
    if view is None:
        yield None
        return
    feed = LiveFeed(options, run_dir, view, show_script=not options.quiet_script,
                    launcher=launcher)
    feed.start()
    try:
        yield feed
    finally:
        feed.stop()
