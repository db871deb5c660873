"""Every rank's stack at the moment of a stall: py-spy first, faulthandler's dump as fallback.

py-spy reads a rank's memory from outside (ptrace) in ~30 ms and tells whether the thread is
idle (waiting in C++) or running Python. Where ptrace is not allowed, SIGUSR1 makes the rank's
own faulthandler (installed by the bootstrap) write its threads' stacks to rank-<R>.stack.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Optional

import psutil

from ddpdoctor.probe.inrank.config import ENV_RUN_ID
from ddpdoctor.probe.rundir import RANK_TELEMETRY_GLOB
from ddpdoctor.probe.rank_files import RankFileTail, read_all
from ddpdoctor.probe.run_model.outcome import Frame, RankStack, stack_file

PYSPY_TIMEOUT_S = 10.0
FAULTHANDLER_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>.+)$')


def rank_processes(run_dir: str, run_id: str, root_pid: Optional[int] = None) -> dict[int, psutil.Process]:
    """rank -> the rank's main process, from the pid each rank wrote in its Start record.

    Works for any launcher (torchrun sets RANK in the environment; mp.spawn children learn their
    rank from init_process_group), and never picks a DataLoader worker, which inherits RANK."""
    found: dict[int, psutil.Process] = {}
    for path in Path(run_dir).glob(RANK_TELEMETRY_GLOB):
        try:
            rank = int(path.stem.split("-", 1)[1])
            start = next((line for line in read_all(path) if line.kind == "start"), None)
            if start is None:
                continue
            pid = int(start.data["pid"])
            proc = psutil.Process(pid)
            if proc.environ().get(ENV_RUN_ID) == run_id:
                found[rank] = proc
        except (ValueError, TypeError, KeyError, OSError, psutil.Error):
            continue
    return found


def _pyspy(pid: int) -> tuple[Optional[list], str]:
    exe = shutil.which("py-spy")
    if exe is None:
        return None, "py-spy is not installed"
    try:
        # RUST_BACKTRACE (set in many dev shells) would bury py-spy's reason under a backtrace.
        done = subprocess.run([exe, "dump", "--pid", str(pid), "--json"], capture_output=True,
                              text=True, timeout=PYSPY_TIMEOUT_S,
                              env={**os.environ, "RUST_BACKTRACE": "0", "RUST_LIB_BACKTRACE": "0"})
    except subprocess.TimeoutExpired:
        return None, f"py-spy did not answer within {PYSPY_TIMEOUT_S:.0f} s"
    except OSError as exc:
        return None, f"py-spy could not run: {exc.strerror}"
    if done.returncode != 0:
        return None, pyspy_failure(done.stderr or done.stdout, done.returncode)
    try:
        return json.loads(done.stdout), ""
    except ValueError:
        return None, "py-spy printed no JSON"


def pyspy_failure(text: str, code: int) -> str:
    """py-spy's reason in one line: its `Error:` line and innermost cause, never a backtrace line."""
    lines = [ln.strip() for ln in text.split("Stack backtrace:")[0].splitlines() if ln.strip()]
    error = next((ln[len("Error:"):].strip() for ln in lines if ln.startswith("Error:")), "")
    causes = [re.sub(r"^\d+:\s*", "", ln) for ln in lines if re.match(r"^\d+:\s", ln)]
    reason = (f"{error} ({causes[-1]})" if error and causes else error
              or (lines[-1] if lines else f"exit {code}"))
    if "permission denied" in text.lower():
        # Yama's ptrace_scope, a container without CAP_SYS_PTRACE, a job of another user.
        return "py-spy was not allowed to attach (permission denied)"
    return f"py-spy failed: {reason}"


_OWN_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep  # ddpdoctor/


def short_library_path(path: str) -> str:
    """.../site-packages/torch/distributed/x.py -> torch/distributed/x.py; user paths unchanged."""
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in path:
            return path.split(marker, 1)[1]
    return path


def _without_own_frames(frames: list[Frame]) -> list[Frame]:
    """Drop ddpdoctor's own frames (the bootstrap, the collective wrappers): the user should
    see torch's all_reduce called from train.py, not our wrapper in between."""
    return [Frame(f.func, short_library_path(f.file), f.line) for f in frames
            if not os.path.abspath(f.file).startswith(_OWN_DIR)
            and not f.file.startswith("<frozen runpy>")]


def _main_thread(threads: list) -> Optional[dict]:
    for thread in threads:
        if thread.get("thread_name") == "MainThread":
            return thread
    return threads[0] if threads else None


def _from_pyspy(rank: int, pid: int, threads: list) -> RankStack:
    main = _main_thread(threads) or {}
    frames = _without_own_frames(
        [Frame(f.get("name", "?"), f.get("filename", "?"), int(f.get("line") or 0))
         for f in main.get("frames", [])])
    text = "\n".join(f"    {f}" for f in frames)
    return RankStack(rank, pid, "py-spy", frames, idle=not main.get("active", True), text=text)


def parse_faulthandler(text: str) -> list[Frame]:
    """Frames of the current (main) thread's last dump in faulthandler text, innermost first."""
    blocks = re.split(r"\n(?=(?:Current thread|Thread) 0x)", text.strip())
    if not blocks or not blocks[-1]:
        return []
    # The last dump starts at its last "Current thread" block; prefer that thread.
    current = [b for b in blocks if b.startswith("Current thread")]
    block = current[-1] if current else blocks[-1]
    frames = []
    for line in block.splitlines():
        match = FAULTHANDLER_FRAME.match(line)
        if match:
            frames.append(Frame(match["func"].strip(), match["file"], int(match["line"])))
    return _without_own_frames(frames)


def _from_faulthandler(run_dir: str, ranks: dict[int, psutil.Process]) -> dict[int, RankStack]:
    tails = {}
    for rank, proc in ranks.items():
        path = stack_file(run_dir, rank)
        tails[rank] = RankFileTail(path, path.stat().st_size if path.exists() else 0)
        try:
            proc.send_signal(signal.SIGUSR1)
        except psutil.Error:
            pass
    time.sleep(0.5)
    stacks = {}
    for rank, proc in ranks.items():
        text = tails[rank].text()
        frames = parse_faulthandler(text)
        stacks[rank] = RankStack(rank, proc.pid, "faulthandler" if frames else "none", frames,
                                 text="\n".join(f"    {f}" for f in frames))
    return stacks


def capture(run_dir: str, ranks: dict[int, psutil.Process], use_pyspy: bool = True) -> tuple[list[RankStack], str]:
    """Stacks of every rank, and a note saying how they were taken when it was not py-spy."""
    if not ranks:
        return [], "no rank process was running to take a stack from"
    results: dict[int, RankStack] = {}
    failures: list[str] = []
    if use_pyspy:
        with ThreadPoolExecutor(max_workers=min(16, len(ranks))) as pool:
            answers = dict(zip(ranks, pool.map(lambda p: _pyspy(p.pid), ranks.values())))
        for rank, (threads, error) in answers.items():
            if threads is not None:
                results[rank] = _from_pyspy(rank, ranks[rank].pid, threads)
            else:
                failures.append(error)
    missing = {r: p for r, p in ranks.items() if r not in results}
    note = ""
    if missing:
        results.update(_from_faulthandler(run_dir, missing))
        reason = failures[0] if failures else "py-spy disabled"
        note = (f"{reason}; stacks of rank(s) {', '.join(map(str, sorted(missing)))} come from "
                "faulthandler (SIGUSR1), which cannot tell idle from running")
    host = socket.gethostname()
    for stack in results.values():
        stack.host = host
    return [results[r] for r in sorted(results)], note

