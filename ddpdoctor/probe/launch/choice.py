"""torchrun, or let the script start its own ranks? Decided from the script's source.

Wrapping a script that calls mp.spawn in torchrun starts N copies that each spawn N more. Such
scripts (the pytorch/examples ImageNet style) compute their rank themselves and never read
LOCAL_RANK/RANK; torchrun-style scripts do. Auto picks `none` only when the source spawns and
never reads those variables; anything else keeps torchrun, the safe default.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from typing import Optional

from ddpdoctor.core.errors import UsageError

SPAWNS = re.compile(r"\b(?:mp|multiprocessing|torch\.multiprocessing)\s*\.\s*(?:spawn|start_processes)\s*\(|"
                    r"\bstart_processes\s*\(|(?<![\w.])spawn\s*\(\s*\w+\s*,\s*(?:nprocs|args)")
READS_RANK_ENV = re.compile(r"""["'](?:LOCAL_RANK|RANK|LOCAL_WORLD_SIZE|TORCHELASTIC_RUN_ID)["']""")
# Frameworks with launchers of their own. Lightning's Trainer starts its ranks itself when run
# with plain python (devices=N), but takes them from torchrun when torchrun started it (it
# reads TORCHELASTIC_RUN_ID), so torchrun is the launcher that puts the instruments in every
# rank. `accelerate launch` is torchrun underneath, with the same environment.
LIGHTNING = re.compile(r"^\s*(?:import|from)\s+(?:lightning|pytorch_lightning)\b", re.M)
ACCELERATE = re.compile(r"^\s*(?:import|from)\s+(?:accelerate|transformers)\b", re.M)


def module_source_path(name: str) -> str:
    """The file `python -m NAME` would run, found the way python does (cwd first)."""
    sys.path.insert(0, os.getcwd())
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError) as exc:
        raise UsageError(f"-m {name}: {exc}") from None
    finally:
        sys.path.pop(0)
    if spec is None:
        raise UsageError(f"-m {name}: no module named {name!r} (from {os.getcwd()})")
    if spec.submodule_search_locations:  # a package: python -m runs its __main__
        main = importlib.util.find_spec(f"{name}.__main__")
        if main is None or not main.origin:
            raise UsageError(f"-m {name}: {name} is a package without __main__")
        return main.origin
    if not spec.origin or not os.path.isfile(spec.origin):
        raise UsageError(f"-m {name}: no source file to run")
    return spec.origin


def choose(requested: str, script: str, module: bool) -> tuple[str, str]:
    """(launcher, why) for `--launcher auto|torchrun|none`."""
    if requested == "torchrun":
        return "torchrun", "asked for with --launcher torchrun"
    if requested == "none":
        return "none", "asked for with --launcher none: the script starts its own ranks"
    path: Optional[str] = module_source_path(script) if module else script
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            source = handle.read()
    except OSError:
        return "torchrun", "torchrun (the source could not be read to decide)"
    if LIGHTNING.search(source):
        return "torchrun", ("torchrun: a Lightning Trainer takes its ranks from torchrun instead of "
                            "starting its own processes (as `python train.py` with devices=N "
                            "would); devices must match --nproc-per-node")
    if ACCELERATE.search(source) and not SPAWNS.search(source):
        return "torchrun", ("torchrun: what `accelerate launch` runs underneath (its config file is "
                            "not read: give --nproc-per-node and --nnodes here)")
    if SPAWNS.search(source) and not READS_RANK_ENV.search(source):
        return "none", ("launcher none: the script starts its own processes (mp.spawn) and never "
                        "reads LOCAL_RANK/RANK, so torchrun would start N copies of N ranks")
    return "torchrun", "torchrun: the script reads its rank from the environment"
