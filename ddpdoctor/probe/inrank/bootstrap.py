"""How a probe's instruments get into the processes that run the user's code.

`python .../ddpdoctor/probe/inrank/bootstrap.py [-m] TARGET ARGS...` runs TARGET as `__main__` exactly as
`python TARGET ARGS` (or `python -m TARGET ARGS`) would: argv, sys.path[0], pickling of classes
defined in the script, DataLoader workers. It is the entry point of
- every rank under torchrun (RANK is in the environment: the rank records from the start), and
- the script's own process under `--launcher none`, where the script starts its ranks itself
  (mp.spawn): those learn their rank from init_process_group, and a spawned child gets the
  instruments from the injected sitecustomize (site/sitecustomize.py -> install_in_child).
"""

from __future__ import annotations

import faulthandler
import json
import os
import runpy
import signal
import sys

if __name__ == "__main__" and not __package__:
    # Run by its path (the launcher does): sys.path[0] is this file's folder. The root of the
    # ddpdoctor this file belongs to goes there instead, so `import ddpdoctor` is this copy
    # whatever the working directory holds; _run_target then gives the script its own folder
    # there, as `python train.py` would. (core/paths.OWN_ROOT, which cannot be imported yet.)
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from ddpdoctor.probe.records import rundir  # noqa: E402 - after the path above
from ddpdoctor.probe.inrank import identity  # noqa: E402

def _open_signal_dump(path: str):
    """faulthandler writes every thread's stack here on a fatal signal, on SIGTERM (the launcher
    tearing the job down: "what was this rank doing?") and on SIGUSR1 (the watchdog's fallback
    when py-spy may not attach). It works while the main thread is blocked inside C++."""
    handle = open(path, "a", buffering=1)
    faulthandler.enable(file=handle, all_threads=True)
    faulthandler.register(signal.SIGUSR1, file=handle, all_threads=True, chain=False)
    faulthandler.register(signal.SIGTERM, file=handle, all_threads=True, chain=True)
    return handle


def install_instruments(config) -> None:
    """Patch torch from outside. An instrument that fails to install is a ddpdoctor bug: it is
    said in a Note and the user's script still runs, never blamed for it."""
    from ddpdoctor.probe.inrank import (batches, boundaries, checkpointing, collectives, coverage,
                                        ddp, frameworks, memory, output_tail, process_group,
                                        recorder, sharding, spawned, steps, usage, worker_seeds)

    installers = [
        ("process groups", lambda: process_group.install(config.pg_timeout_s, on_rank_known=identity.become_rank)),
        ("collectives", collectives.install),
        ("DDP", lambda: ddp.install(config.checked_bucket_iterations)),
        ("DataLoader", lambda: batches.install(config.steps_per_epoch)),
        ("DataLoader random state", worker_seeds.install),
        ("optimizer steps", lambda: steps.install(config.max_steps)),
        # After the steps' hooks: those advance the step counter this one reads.
        ("memory", memory.install),
        ("torch.save and DataParallel", usage.install),
        ("spawned ranks", spawned.install),
        ("output tail", output_tail.install),
        ("frameworks", frameworks.install),
        ("activation checkpointing", checkpointing.install),
        ("DistributedSampler datasets", sharding.install),
        ("boundary paths", boundaries.install),
        ("line coverage", coverage.install),
    ]
    if config.cpu:
        # First, so that the instruments above wrap what it patches alone: they record what the
        # script asked for (backend 'nccl', DDP's device_ids) while torch receives the CPU
        # version. Where several instruments hook one entry point (torch.save, torch.load, the
        # DataLoader's __iter__ and __next__), hooks.ORDER decides, not this list.
        from ddpdoctor.probe.inrank import cpu_shim

        installers.insert(0, ("--cpu", cpu_shim.install))
    for name, install in installers:
        try:
            install()
        except Exception as exc:  # noqa: BLE001 - the edge between ddpdoctor and the user's job
            recorder.get().note_once(f"install-{name}", f"ddpdoctor bug: the {name} instrument "
                                     f"could not be installed ({exc!r}); its checks saw nothing")


def install_in_child() -> None:
    """Instruments for a process the script started (mp.spawn, multiprocessing.Process) under
    --launcher none. Called from the injected sitecustomize, before the child unpickles its
    target. The child is a rank only if it calls init_process_group."""
    from ddpdoctor.probe.inrank import recorder, spawned
    from ddpdoctor.probe.inrank.config import RankConfig
    from ddpdoctor.probe.inrank.parent_death import die_with_parent

    config = RankConfig.from_env()
    die_with_parent()
    _open_signal_dump(os.path.join(config.run_dir, rundir.pid_stack_name(os.getpid())))
    recorder.set_recorder(recorder.Recorder(None))
    install_instruments(config)
    spawned.record_process_targets()


def install_in_launched_script() -> None:
    """Instruments for a rank a framework started as a fresh `python train.py` (Lightning's
    launcher, under --launcher none): as for an mp.spawn child, and since no bootstrap wraps
    the script there, its crash and its end are recorded from sys.excepthook and atexit."""
    import atexit

    from ddpdoctor.probe.inrank import recorder, steps

    install_in_child()
    ended: list[str] = []  # finish() ran (the --max-steps stop runs it, then the atexit hooks)
    original_finish = steps.finish

    def finish(reason: str) -> None:
        ended.append(reason)
        original_finish(reason)

    steps.finish = finish
    original_hook = sys.excepthook

    def excepthook(kind, exc, tb):
        try:
            if not ended and not recorder.get().pending:
                steps.record_crash(exc)
                steps.finish("crash")
        finally:
            original_hook(kind, exc, tb)

    def at_exit() -> None:
        if not ended and not recorder.get().pending:
            steps.finish("script_exit")

    sys.excepthook = excepthook
    atexit.register(at_exit)


def _run_target(target: str, as_module: bool, args: list[str]) -> None:
    if as_module:
        sys.argv = [target, *args]
        sys.path[0] = os.getcwd()  # what `python -m` puts first
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:
        sys.argv = [target, *args]
        sys.path[0] = os.path.dirname(os.path.abspath(target))
        runpy.run_path(target, run_name="__main__")


def main() -> None:
    argv = sys.argv[1:]
    as_module = bool(argv) and argv[0] == "-m"
    if as_module:
        argv = argv[1:]
    if not argv:
        sys.stderr.write("usage: python .../ddpdoctor/probe/inrank/bootstrap.py [-m] TARGET [ARGS...]\n")
        sys.exit(2)
    target, args = argv[0], argv[1:]
    os.environ[identity.ENV_TARGET] = json.dumps([target, args])

    from ddpdoctor.probe.inrank import recorder, steps
    from ddpdoctor.probe.inrank.config import RankConfig
    from ddpdoctor.probe.inrank.parent_death import die_with_parent

    config = RankConfig.from_env()
    die_with_parent()  # the torchrun agent (or ddpdoctor) killed: this process must not run on
    if config.launcher == "torchrun":
        rank = int(os.environ.get("RANK", "0"))
        dump = _open_signal_dump(os.path.join(config.run_dir, rundir.rank_stack_name(rank)))
        rec = recorder.Recorder(os.path.join(config.run_dir, rundir.rank_telemetry_name(rank)))
        recorder.set_recorder(rec)
        rec.write(identity.start_record(rank, int(os.environ.get("LOCAL_RANK", "0")),
                                int(os.environ.get("WORLD_SIZE", "1")), config.launcher))
    else:
        dump = _open_signal_dump(os.path.join(config.run_dir, rundir.MAIN_STACK))
        rec = recorder.Recorder(None)
        recorder.set_recorder(rec)
    install_instruments(config)

    clean = False
    try:
        _run_target(target, as_module, args)
        clean = True
    except SystemExit as exc:
        if exc.code not in (None, 0):
            steps.record_crash(exc)
        else:
            clean = True
        steps.finish("script_exit")
        if not clean:
            raise
    except BaseException as exc:
        steps.record_crash(exc)
        steps.finish("crash")
        raise
    else:
        steps.finish("script_exit")
    finally:
        rec = recorder.get()
        if rec.pending and config.launcher != "torchrun":
            # The script's own process never became a rank: keep what it saw (how its
            # children ended, as mp.spawn reports it) beside the ranks' files.
            rec.bind(os.path.join(config.run_dir, rundir.MAIN_TELEMETRY))
        dump.flush()
    if clean:
        steps.exit_now(0)


if __name__ == "__main__":
    main()
