"""Run ddpdoctor as a user would while watching every process it and its job start, so that a
test can say: it exited with this code, within this deadline, and not one process is left.

A process belongs to the run if it descends from the ddpdoctor process, or if its environment
names the run dir (DDPDOCTOR_RUN_DIR: every process of the job inherits it, including DataLoader
workers orphaned by a killed rank). The watcher polls both while ddpdoctor runs; after it exits,
each process seen (pid and start time, so a reused pid is not blamed) must be gone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import psutil

from ddpdoctor.probe.run_model.outcome import rank_file

REPO = Path(__file__).resolve().parents[2]
POLL_S = 0.15


@dataclass(frozen=True)
class Seen:
    pid: int
    created: float
    cmdline: str

    def still_running(self) -> bool:
        try:
            proc = psutil.Process(self.pid)
            return proc.create_time() == self.created and proc.status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False


@dataclass
class Finished:
    code: int
    stdout: str
    stderr: str
    wall_s: float  # from start to ddpdoctor's exit
    seen: list[Seen]

    @property
    def stderr_lines(self) -> list[str]:
        return self.stderr.strip().splitlines()


class WatchedRun:
    """`ddpdoctor ARGS` started now; `finish()` waits for it and asserts that nothing is left."""

    def __init__(self, *args: str, run_dir: Optional[Path], env: Optional[dict] = None,
                 cwd: Optional[Path] = None, wrapper: Optional[list[str]] = None) -> None:
        merged = dict(os.environ)
        merged.setdefault("COLUMNS", "200")
        merged.update(env or {})
        self.run_dir = str(Path(run_dir).resolve()) if run_dir else None
        self.started = time.monotonic()
        self._born = time.time() - 1.0  # a process started before this is never the run's
        # `python -m ddpdoctor`, not the console script: the tests that change PATH must not lose
        # ddpdoctor itself with it. Its own session: a signal meant for it reaches it alone.
        # `wrapper` (e.g. `unshare -m sh -c '...; exec "$@"' sh`) must exec ddpdoctor in the end.
        argv = [*(wrapper or []), sys.executable, "-m", "ddpdoctor", *args]
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=merged, cwd=str(cwd or REPO), start_new_session=True)
        self.seen: dict[tuple[int, float], Seen] = {}
        self._strangers: set[tuple[int, float]] = set()
        self._stop = threading.Event()
        self._watcher = threading.Thread(target=self._watch, daemon=True)
        self._watcher.start()

    def _note(self, proc: psutil.Process) -> None:
        # The command line is read again at every look: a process caught between fork and exec
        # (torchrun starting a rank) shows its parent's command line first, and a rank seen only
        # then was never counted as a rank (a loaded machine widens that window). An empty one
        # is kept out: a process in the middle of exiting (its memory released, not yet a
        # zombie, which psutil refuses) shows none, and a rank seen last then lost its name (a
        # SIGTERM test counted 4 of its 6 processes).
        try:
            key = (proc.pid, proc.create_time())
            cmdline = " ".join(proc.cmdline())[:200]
            if key not in self.seen or (cmdline and self.seen[key].cmdline != cmdline):
                self.seen[key] = Seen(proc.pid, key[1], cmdline)
        except psutil.Error:
            pass

    def _poll(self) -> None:
        try:
            root = psutil.Process(self.proc.pid)
            for child in root.children(recursive=True):
                self._note(child)
        except psutil.Error:
            pass
        if not self.run_dir:
            return
        for proc in psutil.process_iter():
            try:
                key = (proc.pid, proc.create_time())
                if key in self.seen or key in self._strangers or proc.pid == self.proc.pid:
                    continue
                if proc.environ().get("DDPDOCTOR_RUN_DIR") == self.run_dir:
                    self._note(proc)
                elif proc.create_time() < self._born:
                    self._strangers.add(key)  # older than this run: never one of its processes
            except psutil.Error:
                continue

    def _watch(self) -> None:
        while not self._stop.is_set():
            self._poll()
            self._stop.wait(POLL_S)

    def _alive(self) -> bool:
        return self.proc.poll() is None

    def wait_for(self, what: str, predicate, timeout: float) -> None:
        """Wait until `predicate()` holds (e.g. the job has trained a step); fail if ddpdoctor
        exits first or `timeout` passes."""
        deadline = time.monotonic() + timeout
        while not predicate():
            if not self._alive():
                out, err = self.proc.communicate()
                raise AssertionError(f"ddpdoctor exited ({self.proc.returncode}) before {what}:\n{err}")
            if time.monotonic() > deadline:
                self.kill()
                raise AssertionError(f"no {what} within {timeout:g} s")
            time.sleep(0.1)

    def steps_done(self, rank: int = 0) -> int:
        path = rank_file(self.run_dir or "", rank)
        try:
            return path.read_text(errors="replace").count('"kind":"step"')
        except OSError:
            return 0

    def send(self, sig: int) -> None:
        os.kill(self.proc.pid, sig)

    def kill(self) -> None:
        """For a failing test: end ddpdoctor and everything seen, so one failure does not leak."""
        self._poll()
        for seen in [*self.seen.values()]:
            if seen.still_running():
                try:
                    os.kill(seen.pid, signal.SIGKILL)
                except OSError:
                    pass
        if self._alive():
            self.proc.kill()
        self.proc.communicate()
        self._stop.set()

    def finish(self, deadline_s: float, settle_s: float = 0.0) -> Finished:
        """Wait for ddpdoctor to exit within `deadline_s` of its start; then assert that every
        process seen is gone. ddpdoctor reaps its job before it exits, so by default nothing may
        be running at that moment; `settle_s` gives a killed ddpdoctor's job the time its
        parent-death signals take."""
        remaining = deadline_s - (time.monotonic() - self.started)
        try:
            out, err = self.proc.communicate(timeout=max(0.1, remaining))
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"ddpdoctor did not exit within {deadline_s:g} s") from None
        wall = time.monotonic() - self.started
        self._poll()
        self._stop.set()
        self._watcher.join(timeout=5)
        left = self.leftovers(settle_s)
        assert not left, f"processes left running after ddpdoctor exited: {left}\nstderr:\n{err}"
        return Finished(self.proc.returncode, out, err, wall, list(self.seen.values()))

    def leftovers(self, settle_s: float) -> list[Seen]:
        deadline = time.monotonic() + settle_s
        while True:
            left = [s for s in self.seen.values() if s.still_running()]
            if self.run_dir:  # late arrivals the watcher had no time to see
                for proc in psutil.process_iter():
                    try:
                        if proc.environ().get("DDPDOCTOR_RUN_DIR") == self.run_dir:
                            left.append(Seen(proc.pid, proc.create_time(), " ".join(proc.cmdline())[:200]))
                    except psutil.Error:
                        continue
            if not left or time.monotonic() > deadline:
                return sorted(set(left), key=lambda s: s.pid)
            time.sleep(0.1)


def run_watched(*args: str, run_dir: Optional[Path], deadline_s: float, **kwargs) -> Finished:
    return WatchedRun(*args, run_dir=run_dir, **kwargs).finish(deadline_s)
