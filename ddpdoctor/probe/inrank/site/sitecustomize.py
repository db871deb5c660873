"""Put on PYTHONPATH by `ddpdoctor probe --launcher none`, so that it runs at the start of every
Python process of the job. It first runs the sitecustomize it shadows (if any), then, only in a
process started by multiprocessing (spawn or forkserver: a fresh interpreter that inherits none
of the parent's patches), installs the probe's instruments. Everywhere else it does nothing.
"""

import os
import sys


def _chain_to_shadowed() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        if not entry or os.path.abspath(entry) == here:
            continue
        candidate = os.path.join(entry, "sitecustomize.py")
        if os.path.isfile(candidate):
            import importlib.util

            spec = importlib.util.spec_from_file_location("_shadowed_sitecustomize", candidate)
            if spec and spec.loader:
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
            return


def _started_by_multiprocessing() -> bool:
    return "--multiprocessing-fork" in sys.argv or any(
        "forkserver" in arg for arg in getattr(sys, "orig_argv", []))


def _started_by_framework_launcher() -> bool:
    """A rank a framework started as a fresh `python train.py` (Lightning's own launcher with
    devices=N): it carries the LOCAL_RANK its launcher gave it, and is not the probe's bootstrap."""
    bootstrap = os.path.join("probe", "inrank", "bootstrap.py")
    return ("LOCAL_RANK" in os.environ and not any(
        "ddpdoctor.probe.inrank.bootstrap" in arg or arg.endswith(bootstrap)
        for arg in getattr(sys, "orig_argv", [])))


def _own_first() -> None:
    """The ddpdoctor this file belongs to first on sys.path while its instruments are imported:
    a child started with `python -c` has the working directory there, where a checkout's own
    ./ddpdoctor would shadow it. (core/paths.OWN_ROOT, which cannot be imported yet.)"""
    # site/ -> inrank/ -> probe/ -> ddpdoctor/ -> the folder holding it (four levels stopped at
    # the package itself, which put nothing importable first)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
    if "ddpdoctor" not in sys.modules:
        sys.path.insert(0, root)
        try:
            import ddpdoctor.probe.inrank  # noqa: F401 - binds ddpdoctor to this copy from now on
        finally:
            sys.path.remove(root)


_chain_to_shadowed()
if os.environ.get("DDPDOCTOR_RUN_DIR") and os.environ.get("DDPDOCTOR_LAUNCHER") == "none":
    try:
        if _started_by_multiprocessing() or _started_by_framework_launcher():
            _own_first()
        if _started_by_multiprocessing():
            from ddpdoctor.probe.inrank.bootstrap import install_in_child

            install_in_child()
        elif _started_by_framework_launcher():
            from ddpdoctor.probe.inrank.bootstrap import install_in_launched_script

            install_in_launched_script()
    except Exception as exc:  # noqa: BLE001 - never stop the user's process from starting
        sys.stderr.write(f"ddpdoctor: instruments not installed in pid {os.getpid()}: {exc!r}\n")
