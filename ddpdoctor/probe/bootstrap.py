"""The entry point of every rank of a probe: `python -m ddpdoctor.probe.bootstrap SCRIPT ARGS...`.

It installs the instruments, then runs the user's script as `__main__` exactly as `python
SCRIPT ARGS` would (argv, sys.path[0], pickling of classes defined in the script, DataLoader
workers), and records how the script ended.
"""

from __future__ import annotations

import faulthandler
import os
import runpy
import signal
import socket
import sys
import time
import traceback


def _rank() -> int:
    return int(os.environ.get("RANK", "0"))


def _open_signal_dump(run_dir: str, rank: int):
    """faulthandler writes every thread's stack here on a fatal signal, on SIGTERM (the launcher
    tearing the job down: "what was this rank doing?") and on SIGUSR1 (the watchdog's fallback
    when py-spy may not attach). It works while the main thread is blocked inside C++."""
    handle = open(os.path.join(run_dir, f"rank-{rank}.stack"), "a", buffering=1)
    faulthandler.enable(file=handle, all_threads=True)
    faulthandler.register(signal.SIGUSR1, file=handle, all_threads=True, chain=False)
    faulthandler.register(signal.SIGTERM, file=handle, all_threads=True, chain=True)
    return handle


def main() -> None:
    if len(sys.argv) < 2:
        sys.stderr.write("usage: python -m ddpdoctor.probe.bootstrap SCRIPT [ARGS...]\n")
        sys.exit(2)
    script, args = sys.argv[1], sys.argv[2:]

    import torch

    from ddpdoctor.probe import telemetry as tm
    from ddpdoctor.probe.inject import (batches, collectives, ddp, process_group, recorder, steps,
                                        usage)
    from ddpdoctor.probe.inject.config import RankConfig

    config = RankConfig.from_env()
    from ddpdoctor.probe.teardown import die_with_parent

    die_with_parent()  # the torchrun agent killed: this rank must not run on alone
    rank = _rank()
    dump_file = _open_signal_dump(config.run_dir, rank)
    rec = recorder.Recorder(os.path.join(config.run_dir, f"rank-{rank}.jsonl"))
    recorder.set_recorder(rec)
    rec.write(tm.Start(time.time(), rank, int(os.environ.get("LOCAL_RANK", "0")),
                       int(os.environ.get("WORLD_SIZE", "1")), os.getpid(), socket.gethostname(),
                       script, args, sys.version.split()[0], torch.__version__, config.launcher))

    process_group.install(config.pg_timeout_s)
    collectives.install()
    ddp.install(config.checked_bucket_iterations)
    batches.install(config.steps_per_epoch)
    steps.install(config.max_steps)
    usage.install()

    sys.argv = [script, *args]
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (None, 0):
            _record_crash(rec, exc)
        steps.finish("script_exit")
        raise
    except BaseException as exc:
        _record_crash(rec, exc)
        steps.finish("crash")
        raise
    else:
        steps.finish("script_exit")
    finally:
        dump_file.flush()


def _record_crash(rec, exc: BaseException) -> None:
    from ddpdoctor import redact
    from ddpdoctor.probe import telemetry as tm
    from ddpdoctor.probe.inject import recorder

    text = redact.scrub("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
    rec.write(tm.Crash(time.time(), type(exc).__name__, redact.scrub(str(exc))[:4000], text[-20000:],
                       recorder.site_of_traceback(exc.__traceback__), rec.step))


if __name__ == "__main__":
    main()
