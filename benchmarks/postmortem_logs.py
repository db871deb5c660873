"""How fast and how small `ddpdoctor report` reads what a dead job left.

Writes, in a temporary folder, an interleaved multi-rank torchrun log of --gb gigabytes (progress
lines of --ranks ranks, a rank's traceback and the others' watchdog timeouts buried at the end)
and --dumps ranks' Flight Recorder dumps (--entries each), then runs `ddpdoctor report` on each
as a user would and prints its wall time and peak memory (the child's max RSS), and the
throughput. Goals (issue 37): 2 GB of logs in <= 20 s and <= 300 MB; 1,024 ranks' dumps in <= 10 s.

    python -m benchmarks.postmortem_logs --gb 2 --ranks 64 --dumps 1024
"""

from __future__ import annotations

import argparse
import os
import pickle
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def write_log(path: Path, gigabytes: float, ranks: int) -> int:
    """The log, written in 8 MB blocks of the same interleaved progress lines; its size."""
    lines = []
    for step in range(2000):
        for rank in range(ranks):
            lines.append(f"[rank{rank}]: step {step} loss {1.0 / (step + 1):.5f} lr 3.0e-04 "
                         f"grad_norm 1.{rank:03d} tokens/s 81234.5 mem 41.2GiB\n")
    block = "".join(lines).encode()
    target = int(gigabytes * 1024 ** 3)
    written = 0
    with open(path, "wb") as out:
        while written < target:
            out.write(block)
            written += len(block)
        tail = [f"[rank3]: Traceback (most recent call last):\n",
                f'[rank3]:   File "/home/u/train.py", line 57, in main\n',
                f"[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"]
        for rank in range(ranks):
            if rank != 3:
                tail.append(f"[rank{rank}]:[E1128 01:20:00.000000000 ProcessGroupNCCL.cpp:632] [Rank {rank}] "
                            "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1583, OpType=ALLREDUCE, "
                            "NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) ran for 600017 milliseconds "
                            "before timing out.\n")
        data = "".join(tail).encode()
        out.write(data)
        written += len(data)
    return written


def write_dumps(folder: Path, ranks: int, entries: int) -> None:
    folder.mkdir()
    config = {"0": {"name": "0", "desc": "default_pg", "ranks": str(list(range(ranks)))}}
    for rank in range(ranks):
        seqs = range(1, entries + 1) if rank != ranks - 1 else range(1, entries)
        dump = {"version": "2.10", "pg_config": config, "entries": [
            {"record_id": s, "pg_id": 0, "process_group": ("0", "default_pg"), "collective_seq_id": s,
             "p2p_seq_id": 0, "op_id": s, "profiling_name": "nccl:all_reduce", "time_created_ns": s,
             "input_sizes": [[1048576]], "input_dtypes": ["Float"], "output_sizes": [[1048576]],
             "output_dtypes": ["Float"], "state": "completed", "retired": True, "is_p2p": False,
             "frames": [{"name": "all_reduce", "filename": "/x/site-packages/torch/distributed/distributed_c10d.py", "line": 3245},
                        {"name": "train_step", "filename": "/home/u/train.py", "line": 88}]}
            for s in seqs]}
        (folder / f"nccl_trace_rank_{rank}").write_bytes(pickle.dumps(dump))


def timed(args: list[str]) -> tuple[float, float, float, int]:
    """(seconds, CPU seconds, peak MB of the child, exit code) of one `ddpdoctor` run. The CPU
    time is what a loaded machine cannot inflate: it is the figure to compare between runs."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "ddpdoctor", *args], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, check=False)
    seconds = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1, 4):
        print(done.stderr[-2000:], file=sys.stderr)
    return seconds, cpu, after.ru_maxrss / 1024, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gb", type=float, default=2.0, help="size of the log (GB)")
    parser.add_argument("--ranks", type=int, default=64, help="ranks interleaved in the log")
    parser.add_argument("--dumps", type=int, default=1024, help="ranks' Flight Recorder dumps (0: none)")
    parser.add_argument("--entries", type=int, default=200, help="entries per dump")
    parser.add_argument("--dir", default=None, help="where to write them (default: a temporary folder)")
    args = parser.parse_args()
    root = Path(args.dir or tempfile.mkdtemp(prefix="ddpdoctor-pm-bench-"))
    try:
        if args.gb > 0:
            log = root / "train.log"
            size = write_log(log, args.gb, args.ranks)
            seconds, cpu, peak, code = timed(["report", str(log), "-q"])
            print(f"log: {size / 1024 ** 3:.2f} GB, {args.ranks} ranks: {seconds:.1f} s wall, {cpu:.1f} s CPU "
                  f"({size / 1024 ** 2 / cpu:.0f} MB per CPU-second), peak {peak:.0f} MB, exit {code}")
            log.unlink()
        if args.dumps > 0:
            folder = root / "dumps"
            write_dumps(folder, args.dumps, args.entries)
            seconds, cpu, peak, code = timed(["report", str(folder), "-q"])
            print(f"Flight Recorder: {args.dumps} ranks x {args.entries} entries: {seconds:.1f} s wall, "
                  f"{cpu:.1f} s CPU, peak {peak:.0f} MB, exit {code}")
    finally:
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
