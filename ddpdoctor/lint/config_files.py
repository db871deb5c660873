"""Configuration files beside a script that the launch reads and its source does not show:
Hydra's config tree (sources.py reads its `_target_`s) and Accelerate's launch configs.
Bounded: a folder that holds data instead of configs is not walked through."""

from __future__ import annotations

import os
import re
from pathlib import Path

MAX_CONFIGS = 400  # config files read for Hydra targets (a config tree larger than this is data)
MAX_CONFIG_BYTES = 256_000


# An Accelerate launch config's engine (`accelerate launch --config_file configs/x.yaml`):
# the file the launch names sits in the project, the script's source does not say it
_LAUNCH_ENGINE = re.compile(r"^\s*distributed_type:\s*['\"]?(DEEPSPEED|FSDP)\b", re.MULTILINE)


def launch_engines(script: Path, read: list) -> set[str]:
    """"DeepSpeed" / "FSDP" for each Accelerate config file under the script's folder (or the
    working directory, where the script lies beneath it) that picks that engine. Bounded as the
    Hydra config search is (config_files). read: gets each launch config's path, which the lint
    cache digests (an edited `distributed_type` is a miss, not a stale verdict)."""
    found: set[str] = set()
    folders = [script.parent]
    here = Path.cwd().resolve()
    if here != script.parent and here in script.parents:
        folders.append(here)
    for folder in folders:
        for config in config_files(folder):
            try:
                if not config.is_file() or config.stat().st_size > MAX_CONFIG_BYTES:
                    continue
                body = config.read_text(errors="replace")
            except OSError:
                continue
            if "distributed_type" in body and str(config) not in read:
                read.append(str(config))
            for engine in _LAUNCH_ENGINE.findall(body):
                found.add("DeepSpeed" if engine == "DEEPSPEED" else "FSDP")
    return found


def config_files(folder: Path) -> list[Path]:
    """The YAML files under a config folder, in a stable order: at most MAX_CONFIGS, looking at
    no more than 50 times as many entries (a config_path that names a data tree is not walked)."""
    found: list[Path] = []
    seen = 0
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        seen += len(dirs) + len(files)
        found.extend(Path(root) / f for f in sorted(files) if f.endswith((".yaml", ".yml")))
        if len(found) >= MAX_CONFIGS or seen >= 50 * MAX_CONFIGS:
            break
    return found[:MAX_CONFIGS]
