"""Logs in the formats a dead job leaves, written from the sources' format strings (torchrun's
rank prefix, Python tracebacks, ProcessGroupNCCL's watchdog and PG status lines, torchelastic's
ChildFailedError summary, NCCL's debug lines, the kernel's OOM killer), for the post-mortem's
tests. `interleaved` buries the lines of interest among many ranks' ordinary output."""

from __future__ import annotations

import random


def glog(rank: int, level: str = "E", second: int = 0, source: str = "ProcessGroupNCCL.cpp:632") -> str:
    return f"[rank{rank}]:[{level}1128 01:{10 + second // 60:02d}:{second % 60:02d}.123456789 {source}] "


def traceback(rank: int, exc: str, user_line: int = 57, script: str = "/home/u/train.py",
              extra: tuple = ()) -> list[str]:
    p = f"[rank{rank}]: "
    return [p + "Traceback (most recent call last):",
            p + f'  File "{script}", line 90, in <module>',
            p + "    main()",
            p + f'  File "{script}", line {user_line}, in main',
            p + "    loss = model(batch).sum()",
            p + '  File "/usr/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1751, in _wrapped_call_impl',
            p + "    return self._call_impl(*args, **kwargs)",
            p + exc, *[p + x for x in extra]]


def watchdog(rank: int, seq: int, op: str = "ALLREDUCE", timeout_ms: int = 600000, second: int = 0, pg: int = 0) -> list[str]:
    tag = f"[PG ID {pg} PG GUID {pg}(default_pg) Rank {rank}]"
    return [glog(rank, second=second) + f"[Rank {rank}] Watchdog caught collective operation timeout: "
            f"WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn=1048576, NumelOut=1048576, Timeout(ms)={timeout_ms}) "
            f"ran for {timeout_ms + 17} milliseconds before timing out.",
            glog(rank, second=second, source="ProcessGroupNCCL.cpp:2271") + f"{tag}  failure detected by watchdog at "
            f"work sequence id: {seq} PG status: last enqueued work: {seq + 2}, last completed work: {seq - 1}"]


def child_failed(failures: list[dict], root: dict) -> list[str]:
    """torchrun's summary block (errors/__init__.py's templates)."""
    def block(idx, f):
        return [f"[{idx}]:",
                f"  time      : 2026-11-28_01:{f.get('minute', 20):02d}:00",
                f"  host      : node0",
                f"  rank      : {f['rank']} (local_rank: {f['rank']})",
                f"  exitcode  : {f['exitcode']} (pid: {f['pid']})",
                f"  error_file: <N/A>",
                f"  traceback : {f.get('message', 'To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html')}"]
    lines = ["Traceback (most recent call last):",
             '  File "/usr/bin/torchrun", line 8, in <module>',
             "    sys.exit(main())",
             "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
             "=" * 40, "train.py FAILED", "-" * 40, "Failures:"]
    for idx, f in enumerate(failures, 1):
        lines += block(idx, f)
    if not failures:
        lines.append("  <NO_OTHER_FAILURES>")
    lines += ["-" * 40, "Root Cause (first observed failure):", *block(0, root), "=" * 40]
    return lines


def noise(rank: int, step: int) -> str:
    return f"[rank{rank}]: step {step} loss {1.0 / (step + 1):.4f} lr 0.001 throughput 812.3 samples/s"


def interleaved(world: int, special: dict[int, list[str]], steps: int = 200, seed: int = 0,
                tail: list[str] = ()) -> str:
    """Every rank's progress lines, shuffled a little as a shared stdout is, with each rank's
    special lines (its traceback, its timeout) at the end of its own output, in order."""
    rng = random.Random(seed)
    lines = []
    for step in range(steps):
        order = list(range(world))
        rng.shuffle(order)
        lines += [noise(r, step) for r in order]
    streams = {r: list(special.get(r, [])) for r in range(world)}
    while any(streams.values()):
        r = rng.choice([r for r, s in streams.items() if s])
        lines.append(streams[r].pop(0))
    return "\n".join(lines + list(tail)) + "\n"


def launcher_signalled(sig: int = 15, pid: int = 932, minute: int = 12) -> list[str]:
    """torchrun's agent ended from outside (torch/distributed/elastic: its warning, then the
    SignalException its own handler raises, printed without a rank prefix)."""
    return [f"W1128 01:{minute:02d}:10.046000 {pid} torch/distributed/elastic/agent/server/api.py:739] "
            f"Received {sig} death signal, shutting down workers",
            f"W1128 01:{minute:02d}:10.048000 {pid} torch/distributed/elastic/multiprocessing/api.py:1012] "
            f"Sending process {pid + 21} closing signal SIGTERM",
            "Traceback (most recent call last):",
            '  File "/usr/bin/torchrun", line 8, in <module>',
            "    sys.exit(main())",
            '  File "/usr/lib/python3.11/site-packages/torch/distributed/elastic/agent/server/api.py", line 908,'
            ' in _invoke_run',
            "    time.sleep(monitor_interval)",
            '  File "/usr/lib/python3.11/site-packages/torch/distributed/elastic/multiprocessing/api.py", line 86,'
            ' in _terminate_process_handler',
            '    raise SignalException(f"Process {os.getpid()} got signal: {sigval}", sigval=sigval)',
            f"torch.distributed.elastic.multiprocessing.api.SignalException: Process {pid} got signal: {sig}"]


def failed_stack(rank: int, user_line: int, script: str = "/home/u/train.py", second: int = 0) -> list[str]:
    """ProcessGroupNCCL's "Stack trace of the failed collective" (torch 2.5 and later): the first
    line carries the rank prefix, the frames (innermost first) do not."""
    return [glog(rank, second=second, source="ProcessGroupNCCL.cpp:733")
            + f"[Rank {rank}] Stack trace of the failed collective: ",
            "#0 all_reduce from /usr/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py:3068",
            "#1 wrapper from /usr/lib/python3.11/site-packages/torch/distributed/c10d_logger.py:83",
            f"#2 evaluate from {script}:{user_line}",
            f"#3 main from {script}:{user_line + 40}",
            ""]
