"""Ranks the script starts itself (--launcher none): make each record how it ended.

mp.spawn catches a rank's exception inside its own wrapper, so the probe wraps the function
handed to torch.multiprocessing.start_processes (mp.spawn calls it) with `run_rank`, which
records the crash or the end before mp.spawn sees it. A plain multiprocessing.Process target is
covered by wrapping Process.run in the child.
"""

from __future__ import annotations

import functools
import multiprocessing.process
from typing import Any, Callable

from ddpdoctor.probe.inrank import recorder, steps


def run_rank(fn: Callable, index: int, *args: Any) -> Any:
    """Module-level so that it pickles by reference into spawn children."""
    try:
        result = fn(index, *args)
    except SystemExit as exc:
        if exc.code not in (None, 0):
            _record_crash(exc)
        steps.finish("script_exit")
        raise
    except BaseException as exc:
        _record_crash(exc)
        steps.finish("crash")
        raise
    steps.finish("script_exit")
    steps.exit_now(0)  # as in the bootstrap: finalization after gloo work can abort
    return result


def _record_crash(exc: BaseException) -> None:
    rec = recorder.get()
    if rec.pending:
        # Crashed before init_process_group told it its rank: mp.spawn's process index is the
        # local rank, which is the rank on one node, the usual case for such scripts.
        from ddpdoctor.probe.inrank.identity import become_rank

        index = getattr(multiprocessing.process.current_process(), "_identity", (1,))
        become_rank(max(0, (index[0] if index else 1) - 1), 0)
    steps.record_crash(exc)


def install() -> None:
    import sys

    import torch.multiprocessing as tmp

    # `torch.multiprocessing.spawn` the attribute is the function; the module is in sys.modules.
    spawn_module = sys.modules["torch.multiprocessing.spawn"]

    original = spawn_module.start_processes
    if getattr(original, "__ddpdoctor__", False):
        return

    @functools.wraps(original)
    def start_processes(fn: Callable, *args: Any, **kwargs: Any) -> Any:
        return original(functools.partial(run_rank, fn), *args, **kwargs)

    start_processes.__ddpdoctor__ = True
    spawn_module.start_processes = start_processes
    tmp.start_processes = start_processes


def record_process_targets() -> None:
    """In a child: a plain Process target that raises is recorded (mp.spawn's are by run_rank)."""
    original_run = multiprocessing.process.BaseProcess.run

    @functools.wraps(original_run)
    def run(self: Any) -> None:
        try:
            original_run(self)
        except BaseException as exc:
            if not recorder.get().pending:
                steps.record_crash(exc)
                steps.finish("crash")
            raise

    multiprocessing.process.BaseProcess.run = run
