"""Asking a live NCCL rank for its Flight Recorder dump, where the job was started for it.

A rank started with TORCH_NCCL_DEBUG_INFO_PIPE_FILE=STEM (and a Flight Recorder buffer) listens
on the named pipe STEM<rank>.pipe; writing to it makes the rank write its dump to
TORCH_NCCL_DEBUG_INFO_TEMP_FILE<rank> (TORCH_FR_DUMP_TEMP_FILE in newer torch; default
/tmp/nccl_trace_rank_<rank>). This is the job's own debug interface: it does not pause the rank.
Gloo ranks have no such pipe. Written against torch's source; there is no GPU where it was
built, so it is untested against a live NCCL job.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from typing import Optional

from ddpdoctor.attach import procstate
from ddpdoctor.attach.discover import Job

DEFAULT_DUMP_STEM = "/tmp/nccl_trace_rank_"
WAIT_S = 10.0


def _pipe(env: dict, rank: int) -> Optional[str]:
    stem = env.get("TORCH_NCCL_DEBUG_INFO_PIPE_FILE") or env.get("TORCH_FR_DEBUG_INFO_PIPE_FILE")
    return f"{stem}{rank}.pipe" if stem else None


def _dump_path(env: dict, rank: int) -> str:
    stem = (env.get("TORCH_FR_DUMP_TEMP_FILE") or env.get("TORCH_NCCL_DEBUG_INFO_TEMP_FILE")
            or DEFAULT_DUMP_STEM)
    return f"{stem}{rank}"


def request_dumps(job: Job) -> tuple[dict[int, str], str]:
    """Ask every rank that has a dump pipe for its dump; rank -> the dump file it wrote, and a
    note (what was asked, or why nothing could be)."""
    asked: dict[int, str] = {}
    since = time.time()
    for proc in job.ranks:
        pipe = _pipe(proc.flight_env, proc.rank)
        if pipe is None:
            continue
        try:
            if not stat.S_ISFIFO(os.stat(pipe).st_mode):
                continue
            # Non-blocking: a pipe nobody reads (the rank's watchdog is gone) fails at once (ENXIO).
            fd = os.open(pipe, os.O_WRONLY | os.O_NONBLOCK)
            try:
                os.write(fd, b"1\n")
            finally:
                os.close(fd)
            asked[proc.rank] = _dump_path(proc.flight_env, proc.rank)
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.ENXIO, errno.EACCES, errno.EPERM):
                raise
    if not asked:
        return {}, ""
    deadline = time.monotonic() + WAIT_S
    written: dict[int, str] = {}
    while True:
        for rank, path in asked.items():
            try:
                if rank not in written and os.stat(path).st_mtime >= since - 1:
                    written[rank] = path
            except OSError:
                continue
        if len(written) == len(asked) or time.monotonic() >= deadline:
            break  # not one more wait once every rank wrote
        time.sleep(0.1)
    note = (f"Flight Recorder: asked {len(asked)} rank(s) for a dump through their pipe, "
            f"{len(written)} wrote one")
    return written, note


def job_without_pipe_note(job: Job, uses_nccl: bool) -> str:
    """What attach cannot see on an NCCL job started without the dump pipe."""
    if not uses_nccl or any(_pipe(r.flight_env, r.rank) for r in job.ranks):
        return ""
    return ("NCCL job without TORCH_NCCL_DEBUG_INFO_PIPE_FILE: a rank stuck in an NCCL collective "
            "shows its Python stack at the next synchronisation (.item(), optimizer.step()), not at "
            "the collective, and its Flight Recorder cannot be asked for; start jobs with the "
            "settings `ddpdoctor env` prints")


def uses_nccl(pid: int) -> bool:
    """libnccl is mapped into the rank (needs the same permission as py-spy)."""
    return procstate.maps_mention(pid, "libnccl") is True
