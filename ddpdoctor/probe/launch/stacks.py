"""Every rank's stack at the moment of a stall: py-spy first, faulthandler's dump as fallback.

py-spy reads a rank's memory from outside (ptrace) in ~30 ms and tells whether the thread is
idle (waiting in C++) or running Python. Where ptrace is not allowed, SIGUSR1 makes the rank's
own faulthandler (installed by the bootstrap) write its threads' stacks to rank-<R>.stack.
"""

from __future__ import annotations

import json
import os
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
from ddpdoctor.probe.records.rundir import RANK_TELEMETRY_GLOB, rank_of
from ddpdoctor.probe.records.rank_files import RankFileTail, read_all
from ddpdoctor.probe.run_model.outcome import MAX_WORKER_STACKS, RankStack, stack_file
from ddpdoctor.probe.run_model.stack_text import parse_faulthandler, pyspy_failure, pyspy_main_thread

PYSPY_TIMEOUT_S = 10.0


def rank_processes(run_dir: str, run_id: str, root_pid: Optional[int] = None) -> dict[int, psutil.Process]:
    """rank -> the rank's main process, from the pid each rank wrote in its Start record.

    Works for any launcher (torchrun sets RANK in the environment; mp.spawn children learn their
    rank from init_process_group), and never picks a DataLoader worker, which inherits RANK."""
    found: dict[int, psutil.Process] = {}
    for path in Path(run_dir).glob(RANK_TELEMETRY_GLOB):
        try:
            rank = rank_of(path.name)
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


def _from_pyspy(rank: int, pid: int, threads: list) -> RankStack:
    frames, idle = pyspy_main_thread(threads)
    text = "\n".join(f"    {f}" for f in frames)
    return RankStack(rank, pid, "py-spy", frames, idle=idle, text=text)


def _from_faulthandler(run_dir: str, ranks: dict[int, psutil.Process]) -> dict[int, RankStack]:
    tails = {}
    for rank, proc in ranks.items():
        path = stack_file(run_dir, rank)
        tails[rank] = RankFileTail(path, path.stat().st_size if path.exists() else 0)
        try:
            proc.send_signal(signal.SIGUSR1)
        except psutil.Error:
            pass
    texts = _await_dumps(tails)
    stacks = {}
    for rank, proc in ranks.items():
        frames = parse_faulthandler(texts[rank])
        stacks[rank] = RankStack(rank, proc.pid, "faulthandler" if frames else "none", frames,
                                 text="\n".join(f"    {f}" for f in frames))
    return stacks


# How long the ranks get to write their faulthandler dumps: faulthandler writes from the signal
# handler at once, unless the rank is starved of CPU; a rank that wrote nothing by then is shown
# without a stack ("none"), as before.
DUMP_WAIT_S = 2.0
DUMP_POLL_S = 0.02


def _await_dumps(tails: dict[int, RankFileTail]) -> dict[int, str]:
    """Every rank's dump text once each has written a whole one (it parses to frames and did not
    grow since the previous look), or what there is at DUMP_WAIT_S: no fixed wait, which was
    too long for a quick rank and too short for a starved one."""
    texts = {rank: "" for rank in tails}
    done: set[int] = set()
    deadline = time.monotonic() + DUMP_WAIT_S
    while True:
        for rank, tail in tails.items():
            if rank in done:
                continue
            more = tail.text()
            if not more and texts[rank] and parse_faulthandler(texts[rank]):
                done.add(rank)  # whole: it parsed, and nothing came since the last look
            texts[rank] += more
        if len(done) == len(tails) or time.monotonic() >= deadline:
            return texts
        time.sleep(DUMP_POLL_S)


# A rank's main thread in here waits for a batch from its DataLoader workers.
DATALOADER_FILE = "torch/utils/data/dataloader.py"


def _add_workers(results: dict[int, RankStack], ranks: dict[int, psutil.Process]) -> None:
    """The stacks of the DataLoader workers of every rank that waits for a batch: where a
    worker blocks is why its rank never reached the collective its peers wait in."""
    waiting = {rank: stack for rank, stack in results.items()
               if any(f.file.replace("\\", "/").endswith(DATALOADER_FILE) for f in stack.frames)}
    for rank, stack in waiting.items():
        try:
            children = ranks[rank].children()[:MAX_WORKER_STACKS]
        except psutil.Error:
            continue
        for child in children:
            threads, _ = _pyspy(child.pid)
            if threads is not None:
                stack.workers.append(_from_pyspy(rank, child.pid, threads))


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
        _add_workers(results, ranks)
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

