"""Configuration files beside a script that the launch reads and its source does not show:
Hydra's config tree (sources.py reads its `_target_`s) and Accelerate's launch configs.
Bounded: a folder that holds data instead of configs is not walked through."""

from __future__ import annotations

import os
import re
from typing import Optional
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
    for config, body in _beside(script, (".yaml", ".yml"), MAX_CONFIGS, MAX_CONFIG_BYTES):
        if "distributed_type" in body and str(config) not in read:
            read.append(str(config))
        for engine in _LAUNCH_ENGINE.findall(body):
            found.add("DeepSpeed" if engine == "DEEPSPEED" else "FSDP")
    return found


def config_files(folder: Path) -> list[Path]:
    """The YAML files under a config folder, in a stable order: at most MAX_CONFIGS, looking at
    no more than 50 times as many entries (a config_path that names a data tree is not walked)."""
    return _files(folder, (".yaml", ".yml"), MAX_CONFIGS)


# A launch that starts the script on several nodes: torchrun's `--nnodes` above 1 (or a variable,
# or an elastic range reaching above 1), a node rank handed to the launcher, SLURM's node count
_NODES_LAUNCH = re.compile(
    r"--(?:nnodes|num[_-]nodes)[= ]+[\"']?(?P<count>[^\s\"'\\]+)|--node[_-]rank\b|"
    r"^#SBATCH\s+(?:--nodes[= ]*|-N\s*)(?P<sbatch>\d+)", re.MULTILINE)
_LAUNCH_SUFFIXES = (".sh", ".slurm", ".sbatch", ".bash")
MAX_LAUNCH_SCRIPTS = 100
MAX_LAUNCH_BYTES = 64_000


# A config value that names a class or function by its dotted path (`name:
# dataset.data_val.PolypObjDataset`, `target: ldm.data.Faces`), as a by-name loader reads it
_DOTTED_VALUE = re.compile(r"""^[ \t]*-?[ \t]*[\w-]+[ \t]*:[ \t]*["']?([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)["']?[ \t]*(?:#.*)?$""",
                           re.MULTILINE)
MAX_NAMED = 64


def named_in_configs(script: Path, read: list) -> list[str]:
    """The dotted paths the YAML configs beside the script name (at most MAX_NAMED): the
    modules a loader by name (`get_obj_from_str(config["target"])`) may import. read: gets each
    config that names one (the lint cache digests it)."""
    found: list[str] = []
    for config, body in _beside(script, (".yaml", ".yml"), MAX_CONFIGS, MAX_CONFIG_BYTES):
        names = [n for n in _DOTTED_VALUE.findall(body) if not n[0].isdigit()]
        if names and str(config) not in read:
            read.append(str(config))
        found.extend(n for n in names if n not in found)
        if len(found) >= MAX_NAMED:
            break
    return found[:MAX_NAMED]


def multi_node_launch(script: Path, read: list) -> Optional[tuple[str, int]]:
    """(file, line) of a shell launch script beside the script (under its folder, or the working
    directory where the script lies beneath it) that starts a job on several nodes, or None.
    Bounded as the config search is. read: gets the path of the script it names (the lint cache
    digests it: an edited launch is a miss, not a stale verdict)."""
    here = Path.cwd().resolve()
    for launch, body in _beside(script, _LAUNCH_SUFFIXES, MAX_LAUNCH_SCRIPTS, MAX_LAUNCH_BYTES):
        for match in _NODES_LAUNCH.finditer(body):
            count = match.group("count") or match.group("sbatch")
            if count is not None and not _above_one(count):
                continue
            if count is None and _one_node_command(body, match):
                continue  # `--nnodes=1 --node_rank=0`: a node rank handed to a one-node launch
            if str(launch) not in read:
                read.append(str(launch))
            shown = os.path.relpath(launch, here) if here in launch.parents else str(launch)
            return shown, body.count("\n", 0, match.start()) + 1
    # found none: the folders looked in join what the answer rests on; a folder has no digest, so
    # the answer stays out of the lint cache and a launch script added later is read (as a
    # version pin looked for and not found, save_facts)
    read.extend(str(folder) for folder in _folders(script) if str(folder) not in read)
    return None


def _one_node_command(body: str, match: re.Match) -> bool:
    """The launch command holding a `--node_rank` (its lines joined where they end in a
    backslash) starts one node: its `--nnodes` is 1, or it has none and the rank is a literal 0."""
    start = body.rfind("\n", 0, match.start()) + 1
    while start > 0 and body[:start - 1].rstrip(" \t").endswith("\\"):
        start = body.rfind("\n", 0, start - 1) + 1
    end = body.find("\n", match.end())
    while end >= 0 and body[:end].rstrip(" \t").endswith("\\"):
        end = body.find("\n", end + 1)
    command = body[start:end if end >= 0 else len(body)]
    counts = [m.group("count") for m in _NODES_LAUNCH.finditer(command) if m.group("count")]
    if counts:
        return not any(_above_one(c) for c in counts)
    return re.match(r"[= ]+[\"']?0\b", body[match.end():match.end() + 8]) is not None


def _above_one(count: str) -> bool:
    """`2`, `$NNODES`, `1:4` (an elastic range up to 4): may be more than one node; `1` not."""
    top = count.rpartition(":")[2]
    return not top.isdigit() or int(top) > 1


def _beside(script: Path, suffixes: tuple, most: int, largest: int):
    """(path, text) of each file with these suffixes under the script's folder, and under the
    working directory where the script lies beneath it: the files its launch may read, bounded
    (at most `most` per folder, none larger than `largest` bytes)."""
    for folder in _folders(script):
        for path in _files(folder, suffixes, most):
            try:
                if not path.is_file() or path.stat().st_size > largest:
                    continue
                body = path.read_text(errors="replace")
            except OSError:
                continue
            yield path, body


def _folders(script: Path) -> list[Path]:
    """The script's folder, and the working directory where the script lies beneath it."""
    here = Path.cwd().resolve()
    return [script.parent] + ([here] if here != script.parent and here in script.parents else [])


def _files(folder: Path, suffixes: tuple, most: int) -> list[Path]:
    found: list[Path] = []
    seen = 0
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        seen += len(dirs) + len(files)
        found.extend(Path(root) / f for f in sorted(files) if f.endswith(suffixes))
        if len(found) >= most or seen >= 50 * most:
            break
    return found[:most]
