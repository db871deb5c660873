"""Showing a job while it runs: the probe's live table (rich Live on a terminal), plain progress
lines elsewhere (CI logs, pipes), the script's own output above them, and preflight's
hosts-answered counter.

This module only draws. What it draws comes from probe/launch/live_feed.py as a `Board`: one
`RankRow` per rank and the job's numbers, read from the telemetry files the ranks write.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import IO, Optional

from rich.console import Console, RenderableType
from rich.live import Live
from rich.text import Text

# How often a terminal view is redrawn (the issue asks for >= 2/s).
REFRESH_PER_S = 4.0
# Plain progress lines (not a terminal): at most one every this many seconds.
PLAIN_EVERY_S = 3.0
# Shown rows on a terminal: beyond this the slowest ranks are kept and the rest summed up.
MAX_ROWS = 16
# The stall countdown appears once no rank has advanced for a third of the stall timeout, and
# at least this long: a single slow step should not flash it.
COUNTDOWN_AFTER_S = 3.0
PHASE_STYLE = {"stalled": "bold red", "crashed": "bold red", "in collective": "yellow",
               "in DataLoader": "cyan", "finished": "green", "starting": "dim"}


@dataclass
class RankRow:
    """One rank, as far as its telemetry tells."""

    rank: int
    host: str = ""
    pid: Optional[int] = None
    phase: str = "starting"  # starting | in script | in collective NAME | in DataLoader | stalled ...
    steps: int = 0  # optimizer steps done
    collectives: int = 0  # collectives entered (DDP bucket all-reduces included)
    age_s: Optional[float] = None  # seconds since this rank last wrote a record (None: never)
    done: bool = False  # ended (step limit, script returned, crashed)


@dataclass
class Board:
    """The job at one moment."""

    elapsed_s: float
    rows: list[RankRow]
    max_steps: int = 0  # the probe's step limit (0: none)
    step_rate: Optional[float] = None  # the job's optimizer steps per second (slowest rank)
    quiet_s: float = 0.0  # since any rank last wrote anything
    stall_timeout_s: float = 30.0  # the watchdog's current stall timeout
    title: str = ""
    # Multi-node, on a node other than node 0: node 0 judges stalls over every rank, not us.
    judged_on_node0: bool = False
    # A rank waits on the others (a collective, init_process_group): only then can a quiet
    # spell end in a stall verdict, and the countdown runs.
    waiting: bool = True
    # Ranks busy in their own code in a quiet spell, as the watchdog last saw them: "ranks 0-1
    # in load_dataset() at train.py:41 for 32.0s, no collective pending".
    busy: Optional[str] = None

    @property
    def finished(self) -> bool:
        return bool(self.rows) and all(r.done for r in self.rows)

    @property
    def job_steps(self) -> int:
        """Steps the whole job has done: the slowest rank's."""
        return min((r.steps for r in self.rows), default=0)

    def countdown(self) -> Optional[float]:
        """Seconds left before the watchdog judges the job stalled; None while it advances."""
        if (self.finished or self.judged_on_node0 or not self.waiting
                or self.quiet_s < max(COUNTDOWN_AFTER_S, self.stall_timeout_s / 3)):
            return None
        return self.stall_timeout_s - self.quiet_s


def duration(seconds: Optional[float]) -> str:
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.1f}s"
    return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


def _steps(board: Board) -> str:
    limit = f"/{board.max_steps}" if board.max_steps else ""
    rate = f", {board.step_rate:.2f} steps/s" if board.step_rate is not None else ""
    return f"steps {board.job_steps}{limit}{rate}"


def _countdown_text(board: Board, short: bool = False) -> Optional[str]:
    left = board.countdown()
    if left is None:
        # Quiet, but nobody waits on anybody: where the ranks are, not a countdown (a progress
        # line already names the place in its phases: the short form).
        if not board.busy or board.finished:
            return None
        return f"quiet for {duration(board.quiet_s)}, no collective pending" if short else board.busy
    if left > 0:
        return f"no rank advanced for {duration(board.quiet_s)}: stall verdict in {duration(left)}"
    return (f"no rank advanced for {duration(board.quiet_s)}: taking every rank's stack "
            "to judge the stall")


def _phase_style(phase: str) -> str:
    for prefix, style in PHASE_STYLE.items():
        if phase.startswith(prefix):
            return style
    return ""


def _shown_rows(rows: list[RankRow]) -> tuple[list[RankRow], int]:
    """At most MAX_ROWS rows: the ranks furthest behind (and stalled or crashed ones) first to
    keep, shown in rank order."""
    if len(rows) <= MAX_ROWS:
        return rows, 0
    keep = sorted(rows, key=lambda r: (not r.phase.startswith(("stalled", "crashed")), r.steps, r.rank))
    kept = sorted(keep[:MAX_ROWS], key=lambda r: r.rank)
    return kept, len(rows) - MAX_ROWS


COLUMNS = (("host", "<"), ("rank", ">"), ("pid", ">"), ("phase", "<"), ("steps", ">"),
           ("collectives", ">"), ("last progress", ">"))


def render(board: Board) -> RenderableType:
    """The live table: a headline, one row per rank, and the stall countdown when it runs.
    Laid out by hand in one Text (rich's Table costs several times more per redraw, and this is
    redrawn a few times a second for the whole job)."""
    rows, hidden = _shown_rows(board.rows)
    cells = [[row.host or "?", str(row.rank), str(row.pid or "-"), row.phase, str(row.steps),
              str(row.collectives), f"{duration(row.age_s)} ago" if row.age_s is not None else "-"]
             for row in rows]
    widths = [max([len(name)] + [len(c[i]) for c in cells]) for i, (name, _) in enumerate(COLUMNS)]
    text = Text.assemble(("ddpdoctor probe", "bold"), f" {board.title}  " if board.title else "  ",
                         f"elapsed {duration(board.elapsed_s)}  ", _steps(board), "\n")
    text.append("  ".join(f"{name:{align}{w}}" for (name, align), w in zip(COLUMNS, widths)), "bold")
    for row, line in zip(rows, cells):
        text.append("\n")
        for i, ((_, align), w, cell) in enumerate(zip(COLUMNS, widths, line)):
            text.append(("  " if i else "") + f"{cell:{align}{w}}", _phase_style(row.phase) if i == 3 else "")
    if hidden:
        text.append(f"\n... {hidden} more ranks, all further along", "dim")
    countdown = _countdown_text(board)
    if countdown:
        left = board.countdown()
        text.append("\n" + countdown, "dim" if left is None else "bold red" if left <= 0 else "yellow")
    text.no_wrap = True
    text.overflow = "ellipsis"
    return text


def ranks_text(ranks: list[int]) -> str:
    """[0, 1] -> "ranks 0-1"; [3] -> "rank 3"."""
    return f"{'rank' if len(ranks) == 1 else 'ranks'} {_ranks(sorted(ranks))}"


def _ranks(ranks: list[int]) -> str:
    """0,1,2,3,7 -> '0-3,7'."""
    out, start = [], None
    for i, rank in enumerate(ranks):
        if start is None:
            start = rank
        if i + 1 == len(ranks) or ranks[i + 1] != rank + 1:
            out.append(str(start) if start == rank else f"{start}-{rank}")
            start = None
    return ",".join(out)


def progress_line(board: Board) -> str:
    """One plain line for a log: elapsed, steps, rate, where the ranks are, the countdown."""
    by_phase: dict[str, list[int]] = {}
    for row in board.rows:
        by_phase.setdefault(row.phase, []).append(row.rank)
    where = "; ".join(f"{'rank' if len(r) == 1 else 'ranks'} {_ranks(sorted(r))} {phase}"
                      for phase, r in by_phase.items())
    line = f"ddpdoctor: {duration(board.elapsed_s)}, {_steps(board)}; {where or 'no rank started yet'}"
    countdown = _countdown_text(board, short=True)
    return f"{line}; {countdown}" if countdown else line


def _script_line(line: str) -> str:
    # A progress bar redraws one line with carriage returns: its last state is the line.
    return line.rstrip("\r").rpartition("\r")[2]


class LiveView:
    """A terminal: the table redrawn in place, the script's lines printed above it."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.live = Live(console=console, auto_refresh=False, redirect_stdout=False,
                         redirect_stderr=False, transient=False)
        self.started = False

    def start(self) -> None:
        self.live.start()
        self.started = True

    def script_lines(self, lines: list[str]) -> None:
        for line in lines:
            self.live.console.print(Text.from_ansi(_script_line(line)), soft_wrap=True)

    def update(self, board: Board) -> None:
        self.live.update(render(board), refresh=True)

    def stop(self, board: Optional[Board]) -> None:
        if not self.started:
            return
        if board is not None:
            self.live.update(render(board), refresh=True)
        self.live.stop()
        self.started = False


class PlainView:
    """Not a terminal: the script's lines as they come, a progress line every few seconds, no
    cursor movement and no colour."""

    def __init__(self, stream: IO[str], every_s: float = PLAIN_EVERY_S) -> None:
        self.stream = stream
        self.every_s = every_s
        self.last = time.monotonic()

    def start(self) -> None:
        pass

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            pass  # a closed pipe must not stop the probe; the run dir keeps everything

    def script_lines(self, lines: list[str]) -> None:
        if lines:
            self._write("".join(_script_line(line) + "\n" for line in lines))

    def update(self, board: Board) -> None:
        now = time.monotonic()
        if now - self.last >= self.every_s:
            self.last = now
            self._write(progress_line(board) + "\n")

    def stop(self, board: Optional[Board]) -> None:
        pass


class HostProgress:
    """preflight on a terminal: 'hosts answered 3/10', shown once asking has taken longer than
    `after_s`, redrawn in place, gone when the answers are in. Elsewhere (a pipe, CI) silent.
    Used as preflight's `progress` (preflight/run.py) inside a `with` block."""

    def __init__(self, console: Optional[Console], after_s: float = 1.0) -> None:
        self.console = console if console is not None and console.is_terminal and \
            not console.is_dumb_terminal else None
        self.after_s = after_s
        self.total = 0
        self.answered_hosts = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def __enter__(self) -> "HostProgress":
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2.0)

    def asking(self, total: int) -> None:
        self.total = total
        if self.console is not None and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="ddpdoctor-host-progress",
                                            daemon=True)
            self._thread.start()

    def answered(self, _host: str) -> None:
        with self._lock:
            self.answered_hosts += 1

    def text(self, elapsed: float) -> Text:
        return Text(f"ddpdoctor preflight: hosts answered {self.answered_hosts}/{self.total} "
                    f"({duration(elapsed)})", style="dim")

    def _run(self) -> None:
        began = time.monotonic()
        if self._stop.wait(self.after_s):
            return
        with Live(self.text(time.monotonic() - began), console=self.console, auto_refresh=False,
                  transient=True, redirect_stdout=False, redirect_stderr=False) as shown:
            while not self._stop.wait(1.0 / REFRESH_PER_S):
                shown.update(self.text(time.monotonic() - began), refresh=True)


def view_for(mode: str, stream: IO[str]):
    """"auto": the live table on a terminal, plain lines elsewhere; "plain"; "off": None."""
    if mode == "off":
        return None
    if mode == "auto":
        console = Console(file=stream, highlight=False)
        if console.is_terminal and not console.is_dumb_terminal:
            return LiveView(console)
    return PlainView(stream)
