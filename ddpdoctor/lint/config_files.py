"""Configuration files beside a script that the launch reads and its source does not show:
Hydra's config tree (sources.py reads its `_target_`s), detectron2-style LazyConfig Python configs
(their `L(Target)(...)` entries) and Accelerate's launch configs.
Bounded: a folder that holds data instead of configs is not walked through."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import shlex
from typing import Optional
from pathlib import Path

try:  # (Python 3.11's; before it, the tomli package where installed: without either no TOML config is read)
    import tomllib
except ImportError:  # pragma: no cover - Python < 3.11
    try:
        import tomli as tomllib
    except ImportError:
        tomllib = None

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


def launch_engine_only(script: Path, read: list) -> Optional[str]:
    """"DeepSpeed" / "FSDP" where the Accelerate launch configs beside the script (each YAML
    that sets `distributed_type`) all pick that one engine; None where there is none, or one
    of them picks another (a MULTI_GPU config beside a DeepSpeed one: either may be run)."""
    kinds = {kind for _, kind, _ in _launch_configs(script, read)}
    return kinds.pop() if len(kinds) == 1 and kinds <= {"DeepSpeed", "FSDP"} else None


def engine_launched(script: Path, read: list) -> Optional[str]:
    """The engine ("DeepSpeed" / "FSDP") of the Accelerate config that every launch written
    beside the script names (`accelerate launch --config_file configs/gpu.yaml train.py`), where
    they all name configs that pick it; None where no launch names one, or they disagree. What
    the launch proves, where launch_engine_only says what the configs lying there would pick."""
    each = _launch_engines(script, read)
    return each[0] if each and len(set(each)) == 1 and each[0] in ("DeepSpeed", "FSDP") else None


def launched_plain(script: Path, read: list) -> bool:
    """Every `accelerate launch` written beside the script names a config that picks neither
    DeepSpeed nor FSDP (`distributed_type: MULTI_GPU`); False where there is none, or one names
    no readable config."""
    each = _launch_engines(script, read)
    return bool(each) and all(kind is not None and kind not in ("DeepSpeed", "FSDP") for kind in each)


def engines_named(script: Path, read: list) -> set[str]:
    """The engines ("DeepSpeed" / "FSDP") the Accelerate launches written beside the script name,
    each launch by its config or flag (`accelerate launch --config_file ../configs/fsdp.yaml`):
    a documented launch of one engine among others of another still runs under it. A launch on
    the user's default config names none. read: as engine_launched."""
    return {engine for engine in _launch_engines(script, read) if engine in ("DeepSpeed", "FSDP")}


def _launch_engines(script: Path, read: list) -> list[Optional[str]]:
    """The engine each `accelerate launch` written beside the script runs under: the
    distributed_type of the config it names (beside the script, or at the path it gives), or the
    `--use_fsdp` / `--use_deepspeed` flag; None for a launch on the user's default config or one
    naming a file that cannot be read."""
    configs = {Path(config).name: (kind, body) for config, kind, body in _launch_configs(script, read)}
    each: list[Optional[str]] = []
    for launch, given, flag in _accelerate_launches(script):
        if str(launch) not in read:
            read.append(str(launch))
        found = _named_config(launch, given, configs, read) if given is not None else None
        each.append(flag if given is None else found[0] if found is not None else None)
    return each


def lazy_call_targets(script: Path, read: list) -> list[tuple[str, str]]:
    """(key, dotted target) for each top-level `key = L(Target)(...)` of the Python configs
    beside the script that detectron2's LazyConfig reads (`from detectron2.config import
    LazyCall as L`, or a project's own LazyCall): `instantiate(cfg.dataset)` builds the class
    the config's `dataset` names. Only the syntax is read (the configs are never run), each
    file bounded as the YAML search is. read: gets each such config's path (the cache digests it)."""
    found: list[tuple[str, str]] = []
    for config, body in _beside(script, (".py",), MAX_CONFIGS, MAX_CONFIG_BYTES):
        if "LazyCall" not in body or config.resolve() == script.resolve():
            continue
        try:
            tree = ast.parse(body)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        imported: dict[str, str] = {}
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                imported.update({a.asname or a.name: f"{node.module}.{a.name}" for a in node.names})
            elif isinstance(node, ast.Import):
                imported.update({a.asname or a.name.split(".")[0]: a.name if a.asname else a.name.split(".")[0]
                                 for a in node.names})
        makers = {name for name, full in imported.items() if full.rpartition(".")[2] == "LazyCall"}
        before = len(found)
        for node in tree.body:
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
                continue
            value = node.value  # `L(Target)(...)`: a call of a call of the maker
            if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Call)
                    and isinstance(value.func.func, ast.Name) and value.func.func.id in makers
                    and len(value.func.args) == 1):
                continue
            target = value.func.args[0]
            head = target
            while isinstance(head, ast.Attribute):
                head = head.value
            if not isinstance(head, ast.Name) or head.id not in imported:
                continue
            rest = ast.unparse(target)[len(head.id):]
            found.append((node.targets[0].id, imported[head.id] + rest))
        if len(found) > before and str(config) not in read:
            read.append(str(config))
    return found


def deepspeed_json_stages(script: Path, read: list) -> set:
    """The ZeRO stage each DeepSpeed JSON config beside the script sets (`"zero_optimization":
    {"stage": 0}`), None for one that says none or cannot be read ("auto", broken JSON); bounded
    as the YAML search is. read: gets each such file's path (the lint cache digests it)."""
    stages: set = set()
    for config, body in _beside(script, (".json",), MAX_CONFIGS, MAX_CONFIG_BYTES):
        if "zero_optimization" not in body:
            continue
        if str(config) not in read:
            read.append(str(config))
        try:
            data = json.loads(body)
        except (ValueError, RecursionError):  # (a config nested past the parser's depth is no config)
            stages.add(None)
            continue
        zero = data.get("zero_optimization") if isinstance(data, dict) else None
        stage = zero.get("stage") if isinstance(zero, dict) else None
        stages.add(stage if type(stage) is int else None)
    return stages


def launched_zero_stage(script: Path, read: list) -> Optional[int]:
    """The DeepSpeed ZeRO stage (`zero_stage: 3` under its `deepspeed_config:`) of the Accelerate
    config every launch beside the script names, where each picks DeepSpeed and they agree;
    None where a launch names no config or one that says no stage (a `deepspeed_config_file`
    it points to is not read), or `zero3_save_16bit_model: false` (the Trainer's save_model then
    raises rather than gathering). What the launch proves, as engine_launched."""
    configs = {Path(config).name: (kind, body) for config, kind, body in _launch_configs(script, read)}
    stages: set = set()
    for launch, given, _ in _accelerate_launches(script):
        if str(launch) not in read:
            read.append(str(launch))
        found = _named_config(launch, given, configs, read) if given is not None else None
        if found is None or found[0] != "DeepSpeed":
            return None
        stage = re.search(r"^\s*zero_stage:\s*['\"]?(\d)", found[1], re.MULTILINE)
        off = re.search(r"^\s*zero3_save_16bit_model:\s*(?:false|False)\b", found[1], re.MULTILINE)
        stages.add(int(stage.group(1)) if stage and not off else None)
    return stages.pop() if len(stages) == 1 else None


def _accelerate_launches(script: Path):
    """(the launch file, the file name its `--config_file` gives or None, the engine a
    `--use_fsdp` / `--use_deepspeed` flag picks or None) for each `accelerate launch` of the
    script written beside it."""
    runs = re.compile(re.escape(script.name))
    for launch, body in _launch_texts(script):
        for command in _commands(body):
            if not runs.search(command) or not re.search(r"\baccelerate\s+launch\b", command):
                continue
            given = re.search(r"--config[_-]file[= ]+[\"']?([^\s\"']+)", command)
            flag = re.search(r"--use[_-](fsdp|deepspeed)\b", command)
            yield (launch, given.group(1) if given is not None else None,
                   None if flag is None else "FSDP" if flag.group(1) == "fsdp" else "DeepSpeed")


def _named_config(launch: Path, given: str, configs: dict, read: list) -> Optional[tuple[str, str]]:
    """(engine or distributed_type, text) of the Accelerate config a launch names: one lying
    beside the script by its file name, else the file at the path as written, from the launch
    file's folder (where its commands run: `--config_file ../../../config/fsdp.yaml`) or the
    working directory; read alone and bounded (MAX_CONFIG_BYTES). None where it is neither."""
    name = Path(given).name
    if name in configs:
        return configs[name]
    if "$" in given or not given.endswith((".yaml", ".yml")):
        return None  # (a shell variable, or no YAML: not a file the lint can read)
    for base in (launch.parent, Path.cwd()):
        found = _read_config(base / given, read)  # (looked at, found or not: the cache digests it)
        if found is None:
            continue
        kind = _DISTRIBUTED_TYPE.search(found[1])
        if kind is None:
            return None
        return _engine_name(kind.group(1)), found[1]
    return None


def _launch_configs(script: Path, read: list) -> list[tuple[Path, str, str]]:
    """(path, engine or the distributed_type as written, its text) of each Accelerate launch
    config (a YAML that sets `distributed_type`) beside the script. read: gets each (the cache
    digests it)."""
    found = []
    for config, body in _beside(script, (".yaml", ".yml"), MAX_CONFIGS, MAX_CONFIG_BYTES):
        kind = _DISTRIBUTED_TYPE.search(body)
        if kind is None:
            continue
        if str(config) not in read:
            read.append(str(config))
        found.append((config, _engine_name(kind.group(1)), body))
    return found


_DISTRIBUTED_TYPE = re.compile(r"^\s*distributed_type:\s*['\"]?(\w+)", re.MULTILINE)


def _engine_name(kind: str) -> str:
    """"DeepSpeed" / "FSDP" for a config's `distributed_type` naming one, else as written."""
    return {"DEEPSPEED": "DeepSpeed", "FSDP": "FSDP"}.get(kind.upper(), kind)


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
# a node count a Python launcher writes into a launch command (a declared `--nnodes` option, its
# name followed by a quote, is not one)
_PY_NODES = re.compile(r"--(?:nnodes|num[_-]nodes)[= ]+(?P<count>[^\s\"'\\,)]+)")
MAX_LAUNCH_SCRIPTS = 100
MAX_LAUNCH_BYTES = 64_000


# A config value that names a class or function by its dotted path (`name:
# dataset.data_val.PolypObjDataset`, `target: ldm.data.Faces`), as a by-name loader reads it
_DOTTED_VALUE = re.compile(r"""^[ \t]*-?[ \t]*[\w-]+[ \t]*:[ \t]*["']?([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)["']?[ \t]*(?:#.*)?$""",
                           re.MULTILINE)
# (a TOML config's `path = "trainer_dual_opt.Trainer"` under `[trainer]`, DiariZen's recipes)
_DOTTED_TOML_VALUE = re.compile(r"""^[ \t]*[\w-]+[ \t]*=[ \t]*["']([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)["'][ \t]*(?:#.*)?$""",
                                re.MULTILINE)
MAX_NAMED = 64


def named_in_configs(script: Path, read: list) -> list[str]:
    """The dotted paths the YAML (and TOML) configs beside the script name (at most MAX_NAMED): the
    modules a loader by name (`get_obj_from_str(config["target"])`) may import. read: gets each
    config that names one (the lint cache digests it)."""
    found: list[str] = []
    for config, body in _beside(script, (".yaml", ".yml", ".toml"), MAX_CONFIGS, MAX_CONFIG_BYTES):
        pattern = _DOTTED_TOML_VALUE if config.suffix == ".toml" else _DOTTED_VALUE
        names = [n for n in pattern.findall(body) if not n[0].isdigit()]
        if names and str(config) not in read:
            read.append(str(config))
        found.extend(n for n in names if n not in found)
        if len(found) >= MAX_NAMED:
            break
    return found[:MAX_NAMED]


def named_values(script: Path, names: set, read: list) -> set:
    """Which of `names` (class names) a YAML config beside the script gives as a value of its
    own (`trainer_type: E2TTSTrainer`), or a JSON one (pytorch-template's `"type":
    "ResNeXt50Model",`): the ones the launch may pick by a configured name. read: gets each
    config that names one (the lint cache digests it)."""
    wanted = sorted(n for n in names if n.isidentifier())
    if not wanted:
        return set()
    either = "|".join(map(re.escape, wanted))
    value = re.compile(r":[ \t]*['\"]?(%s)['\"]?[ \t]*(?:#.*)?$" % either, re.MULTILINE)
    quoted = re.compile(r'":[ \t]*"(%s)"[ \t]*,?[ \t]*$' % either, re.MULTILINE)
    found: set = set()
    for config, body in _beside(script, (".yaml", ".yml", ".json"), MAX_CONFIGS, MAX_CONFIG_BYTES):
        hits = set((quoted if config.suffix == ".json" else value).findall(body))
        if hits and str(config) not in read:
            read.append(str(config))
        found |= hits
    return found


def module_names(values: Optional[set]) -> list[str]:
    """The values a config gives a key, read as the module names an `import_module` of that key
    may load (`FILE: hoi_trainer`): every one a dotted identifier, at most 8 of them; [] where
    any is something else."""
    if not values or len(values) > 8 or not all(
            isinstance(v, str) and all(part.isidentifier() for part in v.split(".")) for v in values):
        return []
    return sorted(values)


def yaml_beside(script: Path) -> list[tuple[Path, str]]:
    """(path, text) of the YAML files beside the script, bounded as the Hydra search is, and of
    the TOML ones (a config read with tomllib: RegFormer's `task='Pretraining'`): read once by a
    caller that asks several keys (Program.config_file_values)."""
    return list(_beside(script, (".yaml", ".yml", ".toml"), MAX_CONFIGS, MAX_CONFIG_BYTES))


def config_values(script: Path, bodies: list, path: tuple, read: list, lists: bool = False) -> Optional[set]:
    """The values the YAML configs beside the script (bodies: yaml_beside's) give a nested key
    (`DATASET: / TYPE: imagenet` for ("DATASET", "TYPE"), a yacs config's override file): what
    a launch that merges one of them may hold there. None where some config gives it a value
    this does not read as a plain scalar (an anchor, a flow mapping, `${...}`): not known.
    read: gets each config that sets it; where none does, the folders looked in (a config added
    later is read, not a stale answer from the lint cache). lists: the elements of the list each
    config gives the key instead (`models: [particle_net]`: what a loop over it may hold)."""
    found: set = set()
    nested = _list_elements if lists else _nested_values
    for config, body in bodies:
        if path[-1] not in body:
            continue
        toml = config.suffix == ".toml"
        values = _toml_values(body, path, lists) if toml else nested(body, path)
        if not toml and values is not None and len(path) > 1 and config.parent.name == path[0] and \
                _package_of(body) in (None, "_group_", path[0]):
            # a Hydra config group's option (`conf/train/biencoder_default.yaml` holds what
            # `cfg.train` is when the defaults list picks it): its keys sit under the group's name
            more = nested(body, path[1:])
            values = None if more is None else values | more
        if values is None:
            return None
        if values:
            found |= values
            if str(config) not in read:
                read.append(str(config))
    if not found:
        read.extend(str(folder) for folder in _folders(script) if str(folder) not in read)
    return found


def _toml_values(body: str, path: tuple, lists: bool = False) -> Optional[set]:
    """The value a TOML config gives a nested key (a table per level: `[DATASET]` / `TYPE =
    "imagenet"`), as a set of one; empty where it sets none or does not parse (a file that is no
    config of ours); None where the value is no scalar (a table, an array): not known. lists:
    the elements of the array it gives the key (None where it is no array of scalars)."""
    if tomllib is None:
        return set()
    try:
        held = tomllib.loads(body)
    except (ValueError, RecursionError):  # (TOMLDecodeError is a ValueError)
        return set()
    for key in path:
        if not isinstance(held, dict) or key not in held:
            return set()
        held = held[key]
    if lists:
        scalar = isinstance(held, list) and all(isinstance(v, (str, int, float, bool)) for v in held)
        return set(held) if scalar else None
    return {held} if isinstance(held, (str, int, float, bool)) else None


def _package_of(body: str) -> Optional[str]:
    """A Hydra file's `# @package _group_` header: where its keys go (None: no header)."""
    found = _PACKAGE.search(body)
    return found.group(1) if found else None


_PACKAGE = re.compile(r"^#\s*@package\s+(\S+)", re.M)


_YAML_KEY = re.compile(r"^(?P<indent>[ ]*)(?P<key>[A-Za-z_][\w-]*)[ \t]*:(?:[ \t]+(?P<value>[^#]*?))?[ \t]*(?:#.*)?$")
# A value that is no plain scalar: an alias or anchor, a flow collection, a block scalar, a tag,
# an interpolation (OmegaConf's `${...}`, a shell's `$X`)
_NOT_PLAIN = re.compile(r"^[*&\[{|>!]|\$")


def _nested_values(body: str, path: tuple) -> Optional[set]:
    """The scalar values of a block-style YAML mapping at a nested key path (indentation read
    line by line); None where the key is given something else there, or named inside a flow
    mapping (`DATASET: {TYPE: imagenet}`): not known."""
    found: set = set()
    for _, _, where, value in _keyed_lines(body.splitlines()):
        if value and (where == path or (where == path[:len(where)] and value.startswith("{") and path[-1] in value)):
            if _NOT_PLAIN.search(value):
                return None
            found.add(_literal(value.strip("'\"")))
    return found


def key_values_anywhere(bodies: list, key: str, read: list) -> Optional[set]:
    """The scalar values the YAML configs (bodies: yaml_beside's) give a key at any depth
    (`grad_acc_steps: 1` under each of `denoiser.training`, `actor_critic.training`): what a
    sub-config handed to a function (`cfg.grad_acc_steps` of `cfg = self.cfg.denoiser.training`)
    may hold, whichever section it is. None where one gives it something else; empty where none
    sets it. read: gets each config that sets it (the lint cache digests them, as config_values')."""
    found: set = set()
    for config, body in bodies:
        if config.suffix == ".toml" or key not in body:
            continue
        for _, _, where, value in _keyed_lines(body.splitlines()):
            if where[-1] != key:
                continue
            if str(config) not in read:
                read.append(str(config))
            if not value or _NOT_PLAIN.search(value) or value.startswith(("{", "[")):
                return None
            found.add(_literal(value.strip("'\"")))
    return found


def _keyed_lines(lines: list):
    """(line number, indent, key path, value) of each `key: value` line of a block-style YAML
    mapping, the path the keys of the mappings it sits in (read by indentation)."""
    held: list[tuple[int, str]] = []  # (indent, key) of the mappings the line sits in
    for number, line in enumerate(lines):
        match = _YAML_KEY.match(line)
        if match is None:
            continue
        indent, key, value = len(match.group("indent")), match.group("key"), (match.group("value") or "").strip()
        while held and held[-1][0] >= indent:
            held.pop()
        yield number, indent, tuple(k for _, k in held) + (key,), value
        if not value:
            held.append((indent, key))


def _list_elements(body: str, path: tuple) -> Optional[set]:
    """The elements of the YAML lists a config gives a nested key, flow (`models: [a, 'b']`) or
    block (`- a` lines below the key); empty where it sets none; None where it gives the key
    anything else (a scalar, a list of mappings, an anchor, `${...}`): not known."""
    found: set = set()
    lines = body.splitlines()
    for number, indent, where, value in _keyed_lines(lines):
        if where == path:
            items = _flow_items(value) if value else _block_items(lines, number + 1, indent)
            if items is None:
                return None
            found |= items
    return found


_FLOW_LIST = re.compile(r"^\[([^\[\]{}]*)\]$")
_BLOCK_ITEM = re.compile(r"^(?P<indent>[ ]*)-[ \t]+(?P<value>[^#]*?)[ \t]*(?:#.*)?$")


def _plain_item(text: str) -> Optional[object]:
    """One list element as the code reads it; None where it is no plain scalar (a mapping, an
    alias, an interpolation, a nested collection)."""
    text = text.strip()
    if not text or _NOT_PLAIN.search(text) or re.search(r":(\s|$)", text):
        return None
    return _literal(text.strip("'\""))


def _flow_items(value: str) -> Optional[set]:
    """The elements of `[a, 'b', 3]` (plain scalars only); None for anything else."""
    match = _FLOW_LIST.match(value)
    if match is None:
        return None
    parts = [p for p in match.group(1).split(",") if p.strip()]
    items = [_plain_item(p) for p in parts]
    return None if any(i is None for i in items) else set(items)


def _block_items(lines: list, start: int, indent: int) -> Optional[set]:
    """The elements of a block list below a key at `indent` (`- a` lines, at that indent or
    deeper; blank and comment lines between them skipped); None where the key holds no such
    list (a nested mapping, a null) or an element is no plain scalar."""
    items: set = set()
    for line in lines[start:start + MAX_LIST_LINES]:
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = _BLOCK_ITEM.match(line)
        if match is None or len(match.group("indent")) < indent:
            return items or None
        item = _plain_item(match.group("value"))
        if item is None:
            return None
        items.add(item)
    # (the file ends in the list, or the list is longer than read: not known then)
    return (items or None) if start + MAX_LIST_LINES >= len(lines) else None


MAX_LIST_LINES = 200  # lines of a block list read below its key


# YAML's spellings of null (a plain `None` is the text "None")
_YAML_NULLS = ("null", "Null", "NULL", "~")
# The options that name the run's config file (`--config config/s3dis/swin3d.yaml`)
_CONFIG_OPTIONS = ("config", "cfg", "config_file", "cfg_file", "config_path")
# ... and those that name a file of parameters merged into the options (`--params_file
# configs/generation/params.json`, then `vars(args).update(json.load(f))`: DSTC9's baseline)
_PARAMS_OPTIONS = ("params_file", "param_file", "params_path", "hparams", "hparams_file",
                   "hparams_path", "config_json", "json_config")
MAX_JSON_DEPTH = 8  # nesting read for a JSON parameters file's plain values


def named_config(script: Path, defaults: dict, read: list) -> Optional[tuple[Path, str]]:
    """(path, text) of the YAML config the run's `--config` names (as launched, else its
    default: defaults), or None. read: gets every place looked at, the file read and the ones
    missing or too large before it (the cache digests them: a config that appears or shrinks
    later is a miss, not a stale answer; a missing one keeps the answer out of the cache)."""
    for option in _CONFIG_OPTIONS:
        named = defaults.get(option)
        if not isinstance(named, str) or not named.endswith((".yaml", ".yml")):
            continue
        for base in (Path.cwd(), script.parent):
            found = _read_config(base / named, read)
            if found is not None:
                return found
    return None


def named_configs_values(script: Path, given: dict, path: tuple, read: list) -> Optional[tuple[set, bool]]:
    """What the YAML configs every launch names give a nested key (`--config-file
    config/cub.yaml` in each command of tools/train.sh, a yacs project's `merge_from_file`):
    (the values the files set there, whether some file leaves the key out - the code's default
    holds there). None where some launch names none (its declared default runs), a name is no
    readable file, or a file inherits (`_BASE_`: what the base sets is not read here). given:
    each option's value as launched (Contested's set where the launches differ). The files are
    looked for from the working directory and the script's folder and the two above it (a
    launch in tools/ runs from the project's root)."""
    bases = [Path.cwd(), script.parent, *list(script.parent.parents)[:2]]
    for option in _CONFIG_OPTIONS:
        named = given.get(option)
        names = sorted(named, key=str) if isinstance(named, frozenset) else [named]
        if not names or not all(isinstance(n, str) and n.endswith((".yaml", ".yml")) for n in names):
            continue
        found: set = set()
        lacking = False
        for one in names:
            body = next((hit[1] for base in bases for hit in [_read_config(base / one, read)] if hit is not None), None)
            if body is None or "_BASE_" in body:
                return None
            values = _nested_values(body, path) if path[-1] in body else set()
            if values is None:
                return None  # (a value not read as a plain scalar: not known)
            found |= values
            lacking = lacking or not values
        return found, lacking
    return None


def launched_parameters(script: Path, given: dict, read: list) -> tuple[dict, dict]:
    """The plain values of the parameter files the run names (`--params_file p.json`, or a
    `--config` JSON: _PARAMS_OPTIONS / _CONFIG_OPTIONS) as (settled, contested). given: each
    option's value as launched, a set of values (config_files.Contested's) where the launches
    differ: each file one of them names is read, and a key they all give one value is settled,
    one they give different values is contested with every value. A key some file leaves out,
    or a name that is no readable file, leaves the answer out (not known on that launch). A
    file json.load refuses (a trailing comma: VLN-SIG's pretrain_rxr.json) stops its launch
    before any training: the others say what the training runs with."""
    for option in _PARAMS_OPTIONS + _CONFIG_OPTIONS:
        named = given.get(option)
        names = sorted(named, key=str) if isinstance(named, frozenset) else [named]
        if not names or not all(isinstance(n, str) and n.endswith(".json") for n in names):
            continue
        bodies = [next((found[1] for base in (Path.cwd(), script.parent)
                        for found in [_read_config(base / one, read)] if found is not None), None) for one in names]
        if None in bodies:
            continue
        files = [values for values in map(json_leaf_values, bodies) if values is not None]
        if not files:
            continue
        keys = set.intersection(*(set(values) for values in files))
        held = {key: {values[key] for values in files} for key in keys}
        return ({key: v.pop() for key, v in held.items() if len(v) == 1},
                {key: frozenset(v) for key, v in held.items() if len(v) > 1})
    return {}, {}


def config_file_settings(script: Path, named: object, read: list) -> Optional[dict[str, str]]:
    """The settings of the file a configargparse option (`add_argument("-c", is_config_file=True,
    default="config/base.conf")`) names, as configargparse's default parser reads it: one
    `key = value`, `key: value` or `key value` a line, `#` and `;` comments and `[section]`
    headers skipped, each value as written (quotes taken off). None where no such file is read."""
    if not isinstance(named, str) or not named:
        return None
    found = next((f for base in (Path.cwd(), script.parent) for f in [_read_config(base / named, read)] if f), None)
    if found is None:
        return None
    settings: dict[str, str] = {}
    for line in found[1].splitlines()[:MAX_SETTING_LINES]:
        line = line.strip()
        if not line or line[0] in "#;[" or line.startswith("---") or len(line) > MAX_SETTING_CHARS:
            continue
        parsed = _SETTING_KEY.match(line)
        if parsed:
            # (the comment cut by a split, not a lazy pattern: one long line of spaces is no
            # quadratic match)
            value = re.split(r"\s#", line[parsed.end():], maxsplit=1)[0].strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            settings[parsed.group(1).replace("-", "_")] = value
    return settings


MAX_SETTING_LINES = 2000  # a configargparse file's lines read
MAX_SETTING_CHARS = 4096  # a longer line is no setting of an option
_SETTING_KEY = re.compile(r"([\w.-]+)(?:\s*[:=]|\s)")


def json_leaf_values(body: str) -> Optional[dict]:
    """The plain values (text, numbers, booleans, null) of a JSON object by their own key at any
    depth (MAX_JSON_DEPTH), as leaf_values reads a YAML file; a key given two different values
    is left out. None where the text is no JSON object."""
    try:
        top = json.loads(body)
    except (ValueError, RecursionError):
        return None  # (not JSON, or nested past the decoder's recursion: `{"a":{"a":...}}` 40,000 deep)
    if not isinstance(top, dict):
        return None
    found: dict = {}
    clashing: set = set()
    todo = [(top, 0)]
    while todo:
        node, depth = todo.pop()
        for key, value in node.items():
            if isinstance(value, dict):
                if depth < MAX_JSON_DEPTH:
                    todo.append((value, depth + 1))
            elif isinstance(value, (str, int, float, bool)) or value is None:
                if key in found and found[key] != value:
                    clashing.add(key)
                found[key] = value
    return {k: v for k, v in found.items() if k not in clashing}


def _read_config(path: Path, read: list) -> Optional[tuple[Path, str]]:
    """(path, text) of a config file no larger than MAX_CONFIG_BYTES, or None; the path goes into
    `read` either way (the lint cache digests what was looked at, found or not)."""
    if str(path) not in read:
        read.append(str(path))
    try:
        if not path.is_file() or path.stat().st_size > MAX_CONFIG_BYTES:
            return None
        return path, path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def hydra_main_config(script: Path, config_path: str, config_name: str, read: list) -> Optional[tuple[Path, str]]:
    """(path, text) of the primary config of `@hydra.main(config_path=..., config_name=...)`,
    beside the script (Hydra resolves config_path against the script's folder), or None. read:
    as named_config's."""
    name = config_name if config_name.endswith((".yaml", ".yml")) else config_name + ".yaml"
    return _read_config(script.parent / config_path / name, read)


def nested_value(body: str, keys: tuple) -> tuple[bool, object]:
    """(found, value) of one nested key path of a YAML text (`logging: / wandb_log: True` for
    ("logging", "wandb_log")): found only where the file gives it one plain value."""
    values = _nested_values(body, keys)
    if not values or len(values) != 1:
        return False, None
    value = next(iter(values))
    return (False, None) if value is UNKNOWN_VALUE else (True, None if value in _YAML_NULLS else value)


def leaf_values(body: str) -> dict[str, object]:
    """The plain values of a YAML text by their own key at any depth: a script whose options
    object is that file made into attributes (`args = load_cfg_from_cfg_file(args.config)`, then
    `args.manual_seed`) reads them as it reads options. A key the file gives two different
    values, or a value that is no plain scalar, is left out."""
    found: dict[str, object] = {}
    clashing: set = set()
    for line in body.splitlines():
        match = _YAML_KEY.match(line)
        value = (match.group("value") or "").strip() if match else ""
        if not value:
            continue
        key = match.group("key")
        if _NOT_PLAIN.search(value):
            clashing.add(key)
            continue
        held = None if value in _YAML_NULLS else _literal(value.strip("'\""))
        if key in found and found[key] != held:
            clashing.add(key)
        found[key] = held
    return {k: v for k, v in found.items() if k not in clashing}


def config_near(name: str, bases: list, read: list) -> Optional[tuple[Path, str]]:
    """(path, text) of the config file `name` from the first of the folders bases that holds it
    (_read_config: bounded, each path looked at goes into read)."""
    return next((hit for base in bases for hit in [_read_config(Path(base) / name, read)] if hit), None)


def top_level_values(body: str) -> dict[str, object]:
    """leaf_values of a YAML text's top level alone (a key written without indentation): the
    options a loop over the loaded file declares (options.yaml_loop_configs)."""
    return leaf_values("\n".join(line for line in body.splitlines() if line[:1] not in (" ", "\t", "-")))


def multi_node_launch(script: Path, read: list) -> Optional[tuple[str, int]]:
    """(file, line) of a shell launch script beside the script (under its folder, or the working
    directory where the script lies beneath it) that starts a job on several nodes, or None.
    Bounded as the config search is. read: gets the path of the script it names (the lint cache
    digests it: an edited launch is a miss, not a stale verdict)."""
    here = Path.cwd().resolve()
    for launch, body in _beside(script, _LAUNCH_SUFFIXES, MAX_LAUNCH_SCRIPTS, MAX_LAUNCH_BYTES):
        if _runs_only_others(body, script):
            continue  # a vendored sub-project's `dist.sh` starting its own train_v2.py on five nodes
        line = _multi_node_line(body)
        if line is not None:
            if str(launch) not in read:
                read.append(str(launch))
            shown = os.path.relpath(launch, here) if here in launch.parents else str(launch)
            return shown, line
    # a Python launcher beside it that writes the command (`f"--nnodes={args.machines} --node_rank={i}"`,
    # an ncluster or fabric job script): only a node count that may be above one, in its text
    # (one that names this script: any other Python file may quote such an option for its own ends)
    for launch, body in _beside(script, (".py",), MAX_LAUNCH_SCRIPTS, MAX_LAUNCH_BYTES):
        if script.name not in body or launch.resolve() == script.resolve():
            continue
        match = next((m for m in _PY_NODES.finditer(body) if _above_one(m.group("count"))), None)
        if match is not None:
            if str(launch) not in read:
                read.append(str(launch))
            shown = os.path.relpath(launch, here) if here in launch.parents else str(launch)
            return shown, body.count("\n", 0, match.start()) + 1
    # the README's command blocks: a command that runs this script on several nodes (CAR's
    # `torchrun --nproc_per_node=8 --nnodes=... --node_rank=... train.py`)
    runs = _runs(script)
    for readme, blocks in _readmes(script):
        for start, _, command in _logical_lines(blocks):
            if command.lstrip().startswith("#") or not runs.search(command) or _multi_node_line(command) is None:
                continue
            try:
                whole = readme.read_text(errors="replace")
            except OSError:
                break
            first = blocks[start:].partition("\n")[0]
            if str(readme) not in read:
                read.append(str(readme))
            shown = os.path.relpath(readme, here) if here in readme.parents else str(readme)
            return shown, whole.count("\n", 0, max(0, whole.find(first))) + 1
    # found none: a launch script added later is a miss through the cache's launch_listing
    return None


_PY_SUFFIX = re.compile(r"\.py\b")
_NAME_TAIL = re.compile(r"[\w-]{1,200}$")  # (bounded: a launch line of 5,000 digits is read in linear time)


def _runs_only_others(body: str, script: Path) -> bool:
    """The launch names Python files to run, none of them the script (by its file name or as
    `-m pkg.<stem>`): it launches another program. A launch naming none (`torchrun $@`, a
    `$SCRIPT` filled in) may run this one."""
    named = set()
    for found in _PY_SUFFIX.finditer(body):
        stem = _NAME_TAIL.search(body, max(0, found.start() - 200), found.start())
        if stem is not None:
            named.add(stem.group(0) + ".py")
    if not named or script.name in named:
        return False
    return not re.search(r"-m\s+(?:[\w.]+\.)?" + re.escape(script.stem) + r"\b", body)


# The places a launch of the script is written down: shell launch scripts, and the command
# blocks of the README (```bash ... ```) beside it
_README_NAMES = ("README.md", "readme.md", "Readme.md", "README.rst", "README", "README.txt")
MAX_LAUNCH_VALUES = 200  # commands read for the options they give


def launch_values(script: Path, declared: dict, read: list) -> dict[str, object]:
    """The option values the launches written beside the script hand it: `--accum_iter 8`,
    `--eval_first` in a command that runs this script (its file name), from the shell launch
    scripts and the README's command blocks. An option two launches give different values, or a
    value the shell fills in (`$STEPS`), is Contested: which launch runs is not known. declared:
    the long options the script declares, with their dest and switch action
    (lint/options.declared_options); only those are read. read: gets each file that launches
    the script (the cache digests it)."""
    launches: list[dict] = []  # each command that runs the script: the options it gives
    name = script.name
    # the script's file name, or its module after `-m` (`python -m pkg.train` / `accelerate
    # launch -m pkg.train` runs pkg/train.py): a command without either is not split into words
    # (its stem alone, `train`, is in every `--train_steps` of a launch folder)
    runs = _runs(script)
    texts = list(_launch_texts(script))
    for launch, body in texts:
        if not runs.search(body):
            continue
        if str(launch) not in read:
            read.append(str(launch))  # (one that launches the script: an edit is a cache miss)
        calls = None  # (the wrapper's calls in the other texts: read once per launch file)
        for command in _commands(body):
            if len(launches) >= MAX_LAUNCH_VALUES:
                break
            if not runs.search(command):
                continue
            if calls is None and launch.suffix == ".sh" and _SPREAD.search(command):
                calls = _wrapper_calls(launch, texts, read)
            for run in _forwarded(command, calls or ()):
                given = _options_after(run, name, declared)
                if given is not None and len(launches) < MAX_LAUNCH_VALUES:
                    launches.append((bool(_MULTI_PROCESS.search(run)), given))
    # the lint judges the distributed run: where some launches start several processes
    # (`torch.distributed.launch --nproc_per_node=8 train.py --num_gpu 8`), a one-process
    # launch beside them (`python train.py`) says nothing of that run's options
    launches = [given for multi, given in launches if multi or not any(m for m, _ in launches)]
    # an option every launch gives alike; one a launch leaves out takes its default there
    # (LEFT_OUT: launch_candidates fills the declared default in)
    named = {option for given in launches for option in given}
    values = {option: {given.get(option, LEFT_OUT) for given in launches} for option in named}
    found = LaunchValues({option: next(iter(held)) if len(held) == 1 and next(iter(held)) not in (UNKNOWN_VALUE, LEFT_OUT)
                          else Contested(frozenset(held)) for option, held in values.items()})
    found.count = len(launches)
    return found


# the arguments a wrapper script hands on whole: `"$@"`, `$*`, `"${POSITIONAL[@]}"`
_SPREAD = re.compile(r"\"?\$(?:@|\*|\{[A-Za-z_]\w*\[[@*]\]\})\"?")
_COMMAND_END = frozenset({"|", ";", "&&", "||", "&", ">", ">>", "2>&1"})


def _wrapper_calls(launch: Path, texts: list, read: list) -> list[str]:
    """The arguments each call of a shell wrapper written in the other launch texts hands it
    (`bash run_training.sh --data-split confgf` in the README: `--data-split confgf`), at most
    MAX_LAUNCH_VALUES of them."""
    calls: list[str] = []
    for path, body in texts:
        if launch.name not in body or path == launch:
            continue
        for outer in _commands(body):
            words = outer.split()
            at = next((i for i, w in enumerate(words) if w == launch.name or w.endswith("/" + launch.name)), None)
            if at is None:
                continue
            handed = []
            for word in words[at + 1:]:
                if word in _COMMAND_END:
                    break
                handed.append(word)
            calls.append(" ".join(handed))
            if str(path) not in read:
                read.append(str(path))
            if len(calls) >= MAX_LAUNCH_VALUES:
                return calls
    return calls


def _forwarded(command: str, calls) -> list[str]:
    """The runs of the script a shell wrapper's command makes: where it hands the script the
    wrapper's own arguments (`python train.py --out $DIR "${POSITIONAL[@]}"`), one per call of
    the wrapper written in the launch texts (_wrapper_calls), those arguments in place of the
    spread - the options the run is given. The command itself where it spreads nothing, or
    where no text calls the wrapper."""
    if not calls or not _SPREAD.search(command):
        return [command]
    return [_SPREAD.sub(lambda _: handed, command) for handed in calls]


def launch_exports(script: Path, read: list) -> dict[str, str]:
    """The environment variables every shell launch script of the script sets to one literal
    text before the command that runs it: `export ORBIT_USE_DDSTORE=0` above `srun python
    train.py`, or `USE_X=1 python train.py`. A launch that leaves a name out (the user's own
    environment decides there), gives it a value the shell fills in (`$FLAG`), or gives it
    otherwise than another launch leaves it out. Only shell scripts: a README's command blocks
    are advice, not one environment. read: gets each file that launches the script."""
    runs = _runs(script)
    launches: list[dict] = []
    for launch, body in _beside(script, _LAUNCH_SUFFIXES, MAX_LAUNCH_SCRIPTS, MAX_LAUNCH_BYTES):
        if not runs.search(body):
            continue
        if str(launch) not in read:
            read.append(str(launch))
        exported: dict[str, object] = {}
        for command in _commands(body):
            command = _SHELL_COMMENT.sub("", command).rstrip()
            held = _SHELL_EXPORT.match(command)
            if held is not None:
                exported[held.group(1)] = _exported_text(held.group(2))
            elif command.lstrip().startswith("unset "):
                for name in command.split()[1:]:
                    exported.pop(name, None)
            elif runs.search(command) and len(launches) < MAX_LAUNCH_VALUES:
                # (`USE_X=1 python train.py`: for that command alone)
                inline = dict(exported)
                for word in command.split():
                    held = _INLINE_ENV.fullmatch(word)
                    if held is None:
                        break
                    inline[held.group(1)] = _exported_text(held.group(2))
                launches.append(inline)
    if not launches:
        return {}
    found = {}
    for name in set.intersection(*(set(given) for given in launches)):
        values = {given[name] for given in launches}
        value = values.pop()
        if not values and value is not UNKNOWN_VALUE:
            found[name] = value
    return found


def _exported_text(value: str) -> object:
    """The text a shell assignment's value gives (quotes taken off), or UNKNOWN_VALUE where the
    shell fills some of it in (`$FLAG`, `$(hostname)`)."""
    if value[:1] in "\"'":
        if len(value) < 2 or value[-1:] != value[:1]:
            return UNKNOWN_VALUE  # (a quoted value with spaces, split into words)
        value = value[1:-1]
    return UNKNOWN_VALUE if "$" in value or "`" in value else value


# `export NAME=value` alone on its line (after its comment is taken off)
_SHELL_EXPORT = re.compile(r"^\s*export\s+([A-Za-z_]\w*)=(\"[^\"]*\"|'[^']*'|[^\s;&|]*)\s*$")
# a `NAME=value` word before a command's launcher
_INLINE_ENV = re.compile(r"([A-Za-z_]\w*)=(\S*)")


class LaunchValues(dict):
    """launch_values' answer: option -> value, and `count`, how many launches it read (an option
    none of them names is left at its default by every one - where there is one)."""
    count = 0


class Contested(frozenset):
    """The values the launches beside a script give one option where they do not all give the
    same (`--model unet_dm` in one, `--model unet_dm_gan` in another): which launch runs is not
    known, but a test every one of them answers alike (`args.model == "unet"`, false on each)
    is answered (defaults.settled). Holds LEFT_OUT for a launch that names no value, and
    UNKNOWN_VALUE for one the shell fills in."""


def elastic_launch_only(script: Path, read: list) -> bool:
    """Every launch written beside the script (shell launch scripts, the README's command
    blocks) that starts it on several processes does so with torchrun (`torch.distributed.run`,
    or `torch.distributed.launch --use_env`), and none hands it `--local_rank`: the launcher
    tells each process its local rank in the LOCAL_RANK variable alone, so a `--local_rank`
    option keeps its default on every rank. False where no such launch is written, or any
    other launcher (the old `torch.distributed.launch`, deepspeed) starts it. read: gets each
    file that launches the script (the cache digests it)."""
    name = script.name
    runs = _runs(script)
    elastic = False
    for launch, body in _launch_texts(script):
        if not runs.search(body):
            continue
        for command in _commands(body):
            if not runs.search(command) or not _MULTI_PROCESS.search(command) or \
                    _options_after(command, name, {}) is None:
                continue
            if str(launch) not in read:
                read.append(str(launch))
            if not _ELASTIC.search(command) or _LOCAL_RANK_GIVEN.search(command):
                return False
            elastic = True
    return elastic


def multi_process_options(script: Path, read: list) -> Optional[set]:
    """The long options (their names, dashes dropped) that the launches written beside the script
    (shell launch scripts, the README's command blocks) hand it where they start it on several
    processes; None where no such launch is written. read: gets each file that launches it."""
    name = script.name
    runs = _runs(script)
    given: Optional[set] = None
    for launch, body in _launch_texts(script):
        if not runs.search(body):
            continue
        for command in _commands(body):
            if not runs.search(command) or not _MULTI_PROCESS.search(command):
                continue
            tail = command[runs.search(command).end():]
            if str(launch) not in read:
                read.append(str(launch))
            given = (given or set()) | {m.replace("-", "_") for m in re.findall(r"(?<![\w-])--([A-Za-z][\w-]{0,60})", tail)}
    return given


def one_process_launch(script: Path, read: list, plain_one: bool = False) -> str:
    """Every launcher command written beside the script (shell launch scripts, the README's command
    blocks) that runs it starts one process (`mpiexec -n 1 python train.py`, `torchrun
    --nproc_per_node=1`, `srun -n 1`): "file: the command" of the first, "" where none is written
    or any starts more, or a number the shell fills in. The code may still be wrong on N
    processes - the launches shipped beside it never start them. plain_one: a command with no
    launcher (`python train.py`) starts one process too - a script whose ranks come from MPI
    runs as a world of one without mpiexec. read: gets each such file."""
    name = script.name
    runs = _runs(script)
    first = ""
    here = Path.cwd().resolve()
    for launch, body in _launch_texts(script):
        if not runs.search(body):
            continue
        for command in _commands(body):
            if not runs.search(command) or _options_after(command, name, {}) is None:
                continue
            head = command[:runs.search(command).start()]
            counts = _PROCESS_COUNT.findall(head)
            launcher = _MULTI_PROCESS.search(head) or re.search(r"\bmpiexec\b", head)
            if launcher and not counts and _TORCH_LAUNCHER.search(head) and not _OTHER_LAUNCHER.search(head):
                counts = ["1"]  # torchrun / torch.distributed.launch start one process per node unless told
            if not launcher and not plain_one:
                continue  # `python train.py`: it may spawn its ranks itself, or fail without a launcher
            if launcher and not counts or any(c != "1" for c in counts) or _NODES_ABOVE_ONE.search(head):
                return ""  # several processes, or a count the launch does not spell out
            if str(launch) not in read:
                read.append(str(launch))
            if not first:
                shown = os.path.relpath(launch, here) if here in launch.parents else str(launch)
                first = f"{shown}: {' '.join(command.split())[:120]}"
    return first


# a launcher's count of processes (`mpiexec -n 4`, `--nproc_per_node=8`, `--num_processes 2`,
# `srun --ntasks=4`, `deepspeed --num_gpus 2`): the number, or the shell's text for it
_PROCESS_COUNT = re.compile(r"(?:\s-n|\s-np|--np|--nproc[_-]per[_-]node|--num[_-]processes|--ntasks|--num[_-]gpus)"
                            r"(?:=|\s+)(\S+)")
_NODES_ABOVE_ONE = re.compile(r"--nnodes(?:=|\s+)(?!1\b)\S+|--num[_-]machines(?:=|\s+)(?!1\b)\S+")


# the launchers whose --nproc_per_node defaults to 1, and those whose count is their allocation's
_TORCH_LAUNCHER = re.compile(r"torch\.distributed\.(?:launch|run)\b|\btorchrun\b")
_OTHER_LAUNCHER = re.compile(r"\b(?:srun|mpirun|mpiexec|deepspeed)\b|\baccelerate\s+launch\b")


# torchrun and what it is: the local rank goes in the environment only
_ELASTIC = re.compile(r"\btorchrun\b|torch\.distributed\.run\b|torch\.distributed\.launch\b.*--use[_-]env\b")
_LOCAL_RANK_GIVEN = re.compile(r"--local[_-]rank\b")


# a command that starts the ranks itself
_MULTI_PROCESS = re.compile(r"torch\.distributed\.(?:launch|run)\b|\btorchrun\b|--nproc[_-]per[_-]node|"
                            r"\b(?:srun|mpirun|deepspeed)\b|\baccelerate\s+launch\b")
UNKNOWN_VALUE = object()  # a value the shell fills in
LEFT_OUT = object()  # a launch that does not give the option: its declared default there


def _launch_texts(script: Path):
    """(path, text) of every written launch the lint reads beside the script: the shell launch
    scripts, the README's command blocks and the commands Python launchers spell as lists."""
    yield from _beside(script, _LAUNCH_SUFFIXES, MAX_LAUNCH_SCRIPTS, MAX_LAUNCH_BYTES)
    yield from _readmes(script)
    yield from _python_launches(script)


# the first words of a command a Python launcher spells as a list of strings
_LAUNCHERS = re.compile(r"^(?:accelerate|torchrun|deepspeed|python3?|srun|mpirun|\S*/python3?)$")


def _python_launches(script: Path):
    """(path, its commands one a line) of each Python file beside the script that spells a
    launch of it as a list of strings (`["accelerate", "launch", "train.py", "--accum", "1"]`
    handed to subprocess.run): a string element as written, any other value as a shell variable
    (`$ARG`: what it holds is not known)."""
    for path, body in _beside(script, (".py",), MAX_LAUNCH_SCRIPTS, MAX_LAUNCH_BYTES):
        if script.name not in body or path.resolve() == script.resolve():
            continue
        try:
            tree = ast.parse(body)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        commands = []
        for node in ast.walk(tree):
            if not isinstance(node, (ast.List, ast.Tuple)) or len(node.elts) < 3:
                continue
            first = node.elts[0]
            if not (isinstance(first, ast.Constant) and isinstance(first.value, str) and _LAUNCHERS.match(first.value)):
                continue
            # (one command a line: a string holding a line break is one word all the same)
            words = [shlex.quote(" ".join(e.value.split())) if isinstance(e, ast.Constant) and isinstance(e.value, str)
                     else "$ARG" for e in node.elts]
            if any(script.name in w for w in words):
                commands.append(" ".join(words))
        if not commands:
            # (a launcher class building its command piece by piece, `self.cmd.extend(["--lr",
            # "1e-4", ...])` in its options method, the script's path handed to it elsewhere in
            # the file: the pieces, in order, as one command of the script - FMImaging's runners)
            pieces: dict = {}
            for node in ast.walk(tree):
                if node.__class__ is ast.Call and node.func.__class__ is ast.Attribute and node.func.attr == "extend" \
                        and len(node.args) == 1 and node.args[0].__class__ is ast.List:
                    target, elts = ast.unparse(node.func.value), node.args[0].elts
                elif node.__class__ is ast.AugAssign and node.op.__class__ is ast.Add and node.value.__class__ is ast.List:
                    target, elts = ast.unparse(node.target), node.value.elts
                else:
                    continue
                if any(e.__class__ is ast.Constant and isinstance(e.value, str) and e.value.startswith("--")
                       for e in elts):
                    pieces.setdefault(target, []).append((node.lineno, elts))
            if pieces:
                # (the lists the command and its per-run copies - `cmd_run = self.cmd.copy()` -
                # are extended with, in the file's order)
                words = [shlex.quote(" ".join(e.value.split())) if e.__class__ is ast.Constant and isinstance(e.value, str)
                         else "$ARG" for _, elts in sorted((p for held in pieces.values() for p in held),
                                                           key=lambda p: p[0]) for e in elts]
                commands.append(" ".join(["python", script.name, *words[:2000]]))
        if commands:
            yield path, "\n".join(commands[:MAX_LAUNCH_VALUES])


def launch_listing(script: Path) -> str:
    """A digest of which launch files lie beside the script, as the launch readers look for them
    (the shell scripts, the READMEs, the Python files; each by name, size and change time): the
    lint cache keeps it, so a launch script added or edited later is a miss, not a stale verdict
    (the files a reader found are digested apart, those it looked for and did not find are not)."""
    digest = hashlib.blake2b(digest_size=16)
    for folder in _folders(script):
        paths = [*_files(folder, _LAUNCH_SUFFIXES, MAX_LAUNCH_SCRIPTS), *_files(folder, (".py",), MAX_LAUNCH_SCRIPTS),
                 *(folder / name for name in _README_NAMES)]
        for path in paths:
            try:
                st = path.stat()
                digest.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode(errors="replace"))
            except OSError:
                digest.update(f"{path}\0-\n".encode(errors="replace"))
    return digest.hexdigest()


def _readmes(script: Path):
    """(path, text of its fenced command blocks) of the README next to the script, and in the
    working directory where the script lies beneath it."""
    for folder in _folders(script):
        # (looked up by name: a folder of a million samples is not listed)
        names = [folder / n for n in _README_NAMES if (folder / n).is_file()]
        for path in names[:2]:
            try:
                if not path.is_file() or path.stat().st_size > MAX_LAUNCH_BYTES * 4:
                    continue
                text = path.read_text(errors="replace")
            except OSError:
                continue
            blocks = re.findall(r"^```[^\n]*\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
            # (a command written one option a line with no backslashes, `python3 train.py` then
            # `--accum 1` on the next line: the reader runs it as one command; each line's own
            # comment first, which would otherwise end the joined command at the first one)
            yield path, _OPTION_LINE.sub(" ", _SHELL_COMMENT.sub("", "\n".join(blocks)))


# a line break before a line that starts with a long option (and not after a backslash, spaces
# between: that line continues already)
_OPTION_LINE = re.compile(r"(?<![\\ \t])[ \t]*\n(?=[ \t]*--[A-Za-z])")


def _runs(script: Path) -> re.Pattern:
    """What names the script in a launch: its file name, or its module after `-m` (`python -m
    pkg.train` / `accelerate launch -m pkg.train` runs pkg/train.py)."""
    return re.compile(re.escape(script.name) + r"|-m\s+(?:[\w.]+\.)?" + re.escape(script.stem) + r"\b")


def _commands(body: str) -> list[str]:
    """The commands of a shell text: its logical lines, less comments and blank ones, with the
    variables the text assigns before them filled in (`MODEL_FLAGS="--set_name train"`, then
    `python train.py $MODEL_FLAGS`: guided-diffusion's launches)."""
    assigned: dict[str, str] = {}
    found = []
    for _, _, command in _logical_lines(body):
        if not command.strip() or command.lstrip().startswith("#"):
            continue
        command = _expanded(command, assigned)
        held = _SHELL_ASSIGN.match(command)
        if held is not None and len(assigned) < 200:
            value = held.group(2)
            assigned[held.group(1)] = value[1:-1] if value[:1] in "\"'" and value[-1:] == value[:1] else value
        found.append(command)
    return found


def _expanded(command: str, assigned: dict) -> str:
    """`$NAME` / `${NAME}` of the assigned ones replaced by their text (bounded: 20,000 characters)."""
    if "$" not in command or not assigned:
        return command
    done = _SHELL_VAR.sub(lambda m: assigned.get(m.group(1) or m.group(2), m.group(0)), command)
    return done if len(done) <= 20_000 else command


# `NAME=value` alone on its line (`export NAME=...` too), the value quoted or one word
_SHELL_ASSIGN = re.compile(r"^\s*(?:export\s+)?([A-Za-z_]\w*)=(\"[^\"]*\"|'[^']*'|\S*)\s*$")
_SHELL_VAR = re.compile(r"\$\{([A-Za-z_]\w*)\}|\$([A-Za-z_]\w*)")


def _logical_lines(body: str) -> list[tuple[int, int, str]]:
    """(start, end, text) of each of the shell's logical lines: a line ending in a backslash
    joined with the next."""
    found, start = [], 0
    for match in re.finditer(r"(?<!\\)\n|\Z", body):
        # (a newline after a backslash, spaces between, continues the line)
        if body[start:match.start()].rstrip(" \t").endswith("\\") and match.end() < len(body):
            continue
        found.append((start, match.end(), re.sub(r"\\[ \t]*\n", " ", body[start:match.start()])))
        start = match.end()
        if start >= len(body):
            break
    return found


# a shell comment: `#` at the start of a word, to the end of the line
_SHELL_COMMENT = re.compile(r"(?:^|(?<=\s))#.*$", re.MULTILINE)


# what makes shlex's words differ from a plain split on white space
_SHELL_QUOTING = re.compile(r"[\"'\\]")


def _options_after(command: str, name: str, declared: dict) -> Optional[dict]:
    """{dest: value} of each `--option value`, `--option=value` or bare `--switch` after the
    script's name in one command; None where the command does not run the script."""
    # (a `#` starts a comment only at the start of a word, as the shell reads it: shlex's own
    # comments would end `--nproc_per_node=<#gpus>`, a README's placeholder, at its `#`)
    command = _SHELL_COMMENT.sub("", command)
    if not _SHELL_QUOTING.search(command):
        words = command.split()  # (what shlex gives without quotes or escapes, at a tenth of its cost)
    else:
        try:
            words = shlex.split(command)
        except ValueError:
            words = command.split()
    stem = name[:-3] if name.endswith(".py") else name
    at = next((i for i, w in enumerate(words) if w == name or w.endswith("/" + name)
               # the module run by `-m`: `-m train`, `-m rectified_flow.pipelines.train`
               or (i > 0 and words[i - 1] == "-m" and (w == stem or w.endswith("." + stem)))), None)
    if at is None:
        return None  # (the name inside another word: `mytrain.py`, `python -c "...train.py"`)
    given: dict = {}
    rest = words[at + 1:]
    for i, word in enumerate(rest):
        if word in ("|", ";", "&&", "||", "&", ">", ">>", "2>&1"):
            break
        if not word.startswith("--") or len(word) < 3:
            continue
        spelt, eq, value = word[2:].partition("=")
        if spelt.replace("-", "_") not in declared:
            continue
        dest, switch = declared[spelt.replace("-", "_")]
        if switch and not eq:
            given[dest] = switch == "store_true"  # a store_false switch given stores False
            continue
        if not eq:
            if i + 1 >= len(rest) or rest[i + 1].startswith("--"):
                continue
            value = rest[i + 1]
        given[dest] = _literal(value)
    return given


def _literal(value: str) -> object:
    """A launch's value as Python would hold it after argparse's `type=`: a number, a bool
    spelt out, or the text; a shell expansion is not known."""
    if "$" in value or "`" in value:
        return UNKNOWN_VALUE
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(value.lower(), value)


def _multi_node_line(body: str) -> Optional[int]:
    """The line of a launch text that starts a job on several nodes: `#SBATCH --nodes=2`, or a
    command whose `--nnodes` may be above one or that hands a node rank to a launch of more than
    one node - read with the variables the text assigns before it filled in (_commands'
    reading: `export NUM_NODES=1` then `--nnodes=$NUM_NODES --node_rank $NODE_RANK` is one node;
    `${NNODES:-1}`, a variable the caller's environment fills in, may be more). None where none."""
    sbatch = next((m for m in _NODES_LAUNCH.finditer(body) if m.group("sbatch") and _above_one(m.group("sbatch"))), None)
    assigned: dict[str, str] = {}
    for start, _, command in _logical_lines(body):
        if not command.strip():
            continue
        # (a launch written in a comment, `# multi-node: torchrun --nnodes 2 ...`, still says what
        # the code is for: read as written, no variable filled in)
        command = command if command.lstrip().startswith("#") else _expanded(command, assigned)
        held = _SHELL_ASSIGN.match(command)
        if held is not None and len(assigned) < 200:
            value = held.group(2)
            assigned[held.group(1)] = value[1:-1] if value[:1] in "\"'" and value[-1:] == value[:1] else value
            continue
        for match in _NODES_LAUNCH.finditer(command):
            if match.group("sbatch") is not None:
                continue  # (`#SBATCH --nodes=N`: read above, on the text as written)
            count = match.group("count")
            if count is not None and not _above_one(count):
                continue
            if count is None and _one_node_command(command, match):
                continue  # `--nnodes=1 --node_rank=0`: a node rank handed to a one-node launch
            line = body.count("\n", 0, start) + 1
            return line if sbatch is None else min(line, body.count("\n", 0, sbatch.start()) + 1)
    return None if sbatch is None else body.count("\n", 0, sbatch.start()) + 1


def _one_node_command(command: str, match: re.Match) -> bool:
    """The launch command holding a `--node_rank` (variables filled in) starts one node: its
    `--nnodes` is 1, or it has none and the rank is a literal 0."""
    counts = [m.group("count") for m in _NODES_LAUNCH.finditer(command) if m.group("count")]
    if counts:
        return not any(_above_one(c) for c in counts)
    return re.match(r"[= ]+[\"']?0\b", command[match.end():match.end() + 8]) is not None


def _above_one(count: str) -> bool:
    """`2`, `$NNODES`, `1:4` (an elastic range up to 4): may be more than one node; `1` not."""
    top = count.rpartition(":")[2]
    if not (top.isascii() and top.isdigit()):
        return True
    # (compared as text: a launch's count may be thousands of digits, past int()'s limit)
    digits = top.lstrip("0")
    return len(digits) > 1 or digits > "1"


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
