"""What a config field holds when the run does not set it: the class-body default of a
dataclass-style config (`distribute_layers: bool = False`).

A rank test often reads a config switch beside the rank (`if rank != 0 and not
cfg.distribute_layers: return`). Without knowing the switch, a finding under that test rests on
an assumption and is a warning. When the switch is a field of a local config class whose every
declaration (the class, its bases, its local subclasses) gives the same constant default, and no
code the lint reads assigns that field, the default configuration makes the test differ between
ranks: a real failure of the run as shipped, said with the default it rests on.
"""

from __future__ import annotations

import ast
import operator
import re
from typing import Any, Optional

from ddpdoctor.lint import reaching
from ddpdoctor.lint.nodes import param_defaults, parse_test, walk
from ddpdoctor.lint.config_files import UNKNOWN_VALUE, nested_value
from ddpdoctor.lint.patterns import OPTIONS_HOLDER, constructions, env_key, last_name, text

Function = Any  # ddpdoctor.lint.program.Function
Klass = Any
Program = Any


def config_truth(held: Optional[set]) -> Optional[bool]:
    """The truth every value config_settles found agrees on (`use: true` in each config), else None."""
    truths = {bool(v) for v in held} if held else set()
    return truths.pop() if len(truths) == 1 else None


def default_truth(part: ast.AST, fn: Function, program: Program) -> Optional[tuple[bool, str]]:
    """(the truth of `part` under the defaults, "`Config.field` at its default `False` (file:line)"),
    or None when the source does not settle it. `part`: `cfg.flag` or `not cfg.flag`."""
    negate = False
    while isinstance(part, ast.UnaryOp) and isinstance(part.op, ast.Not):
        negate, part = not negate, part.operand
    if isinstance(part, ast.Subscript):
        return _named_config_truth(part, program, negate)
    if not isinstance(part, ast.Attribute):
        return None
    klass = declared_class(part.value, fn, program)
    if klass is None:
        # `cfg.training.ckpt_steps` of a YAML config beside the script: what every config there
        # gives the key (`ckpt_steps: 10`), where they agree on its truth
        held = config_settles(part, program)
        truth = config_truth(held)
        if truth is None:
            return None
        shown = ", ".join(f"`{v!r}`" for v in sorted(held, key=repr))
        said = f"`{text(part)}` at {shown} in the configs beside the script"
        return (not truth) if negate else truth, said
    if _assigned(part.attr, program):
        return None
    found = _field_default(klass, part.attr, program)
    if found is None:
        return None
    value, where = found
    said = f"`{klass.name}.{part.attr}` at its default `{value!r}` ({where})"
    return (not bool(value)) if negate else bool(value), said


def _named_config_truth(part: ast.Subscript, program: Program, negate: bool) -> Optional[tuple[bool, str]]:
    """`self.args["logging"]["wandb_log"]` of a script whose options are the YAML file its
    `--config` names (`args = yaml.safe_load(f)`): the value that file gives the key path,
    where it gives one (two keys deep at least: one key alone names too little to be sure it is
    that file's)."""
    keys = []
    node = part
    while isinstance(node, ast.Subscript):
        if not (isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)):
            return None
        keys.insert(0, node.slice.value)
        node = node.value
    if len(keys) < 2:
        return None
    config = program.named_config()
    if config is None:
        return None
    found, value = nested_value(config[1], tuple(keys))
    if not found:
        return None
    said = f"`{'.'.join(keys)}` set to `{value!r}` in {config[0].name}, the config file the run's options name"
    return (not bool(value)) if negate else bool(value), said


# `args.flag`, `flag`, `args.seed is not None`: an option's own truth
OPTION_TEST = re.compile(r"^(?:[\w.]+\.)?(\w+)(?: is not None)?$")


def option_off(test_text: str, program: Program) -> bool:
    """`args.eval_first` (or `args.seed is not None`) where the command line's option of that
    name defaults to a false value (store_true, None, 0, ""): false on a launch that leaves it."""
    found = OPTION_TEST.match(test_text)
    if not found:
        return False
    defaults = program.option_defaults()
    if found.group(1) not in defaults:
        return False
    value = defaults[found.group(1)]
    if value is None and found.group(1) in required_when_distributed(program):
        return False  # (a distributed launch that leaves it unset stops with the script's own error)
    if test_text.endswith(" is not None"):
        return value is None  # (`--seed=0` given: 0 is not None, the seeding runs)
    return value in (None, False, 0, "")


def config_flag_off(test_text: str, program: Program) -> bool:
    """`if cfg.method.save_model:` where every YAML config beside the script that sets the flag
    sets it false (settled through config_truth; never the distributed switch): off on every
    shipped config, as an option off by default is on a launch that leaves it. Only a field of a
    config object's group (`cfg.<group>.<flag>`, no option of that name): a bare `self.flag` or
    `args.flag` is an object's state or an option, whose own readers judge it."""
    test = parse_test(test_text) if len(test_text) < 200 else None
    return test.__class__ is ast.Attribute and test.value.__class__ is ast.Attribute and \
        option_value(test, program) is None and settled(test, program) is False


def open_part_off(guard, program: Program) -> bool:
    """A part of a rank test's `and` that tests no rank (`cfg.cluster.use_custom_requeue and
    main_node`) is false on the run as launched: an option off by default (option_off) or a
    config group's flag every shipped config sets false (config_flag_off). No rank gets there."""
    return any(option_off(part, program) or config_flag_off(part, program) for part in guard.test.open)


# `config["seed"] is not None`, `cfg.get("seed")`: a test on one key of a dict config
KEY_TEST = re.compile(r"""^(\w+)(?:\[['"](\w+)['"]\]|\.get\(['"](\w+)['"]\))(?: is not None)?$""")


def config_key_unset(test_text: str, program: Program) -> bool:
    """`if config["seed"] is not None:` where the config is a YAML file the run names, no config
    beside the script sets `seed` (PCSR's all hold `#seed: 0`, commented out), while they do set
    other keys the code reads from that dict, and the code itself gives the key only a false
    constant (`if not config.get("seed"): config["seed"] = None`): false on every shipped config.
    An option of that name is option_off's."""
    found = KEY_TEST.match(test_text)
    if not found:
        return False
    root, key = found.group(1), found.group(2) or found.group(3)
    given = program.config_file_values((key,))
    if key in program.option_defaults() or given is None or given:
        return False  # (None: some config gives it a value this does not read - it may be set)
    others = set()
    for source in program.files:
        for node in source.of(ast.Subscript):
            if isinstance(node.value, ast.Name) and node.value.id == root and isinstance(node.slice, ast.Constant) \
                    and isinstance(node.slice.value, str) and node.slice.value != key:
                others.add(node.slice.value)
        for node in source.of(ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant) and \
                        target.slice.value == key and not (isinstance(node.value, ast.Constant) and not node.value.value):
                    return False  # (the code sets it to something that may hold)
    # (the configs beside the script are the ones it reads: they set other keys it reads there)
    return any(program.config_file_values((other,)) for other in sorted(others)[:MAX_KEYS_ASKED])


# (keys asked of the configs to tell they are the dict's: a bound on a file read once)
MAX_KEYS_ASKED = 64


def unset_config_get(value: ast.AST, program: Program) -> bool:
    """`opt.dataloader.get("noise_ratio")`, with no default, where the YAML configs beside the
    script set other keys the code reads off the same `opt.dataloader` and none sets this one,
    and no code stores it: None on every shipped config (PCME++'s noisy-correspondence switch)."""
    if not (value.__class__ is ast.Call and value.func.__class__ is ast.Attribute and value.func.attr == "get"
            and len(value.args) == 1 and not value.keywords and value.args[0].__class__ is ast.Constant
            and isinstance(value.args[0].value, str)):
        return False
    path, node = [], value.func.value
    while node.__class__ is ast.Attribute or (node.__class__ is ast.Subscript and node.slice.__class__ is ast.Constant
                                              and isinstance(node.slice.value, str)):
        path.insert(0, node.attr if node.__class__ is ast.Attribute else node.slice.value)
        node = node.value
    key = value.args[0].value
    if node.__class__ is not ast.Name or len(path) > 4:
        return False
    # (asked again for every way into a builder: each section's key answered once, the program's
    # files scanned once per answer)
    memo = program.__dict__.setdefault("_unset_config_gets", {})
    asked = (node.id if not path else "", *path, key)
    if asked not in memo:
        memo[asked] = _key_unset_in_section(program, path, node.id, key)
    return memo[asked]


def _key_unset_in_section(program: Program, path: list, root: str, key: str) -> bool:
    if program.config_file_values((*path, key)) != set():
        return False  # (None: some config gives it a value this does not read - it may be set)
    # (the other keys read off a dict of the same section: `.get("k")`, `["k"]`, `.k` of what
    # ends in `dataloader` - `self.opt.dataloader.data_path` in another module too)
    section, others = path[-1] if path else root, set()

    def of_section(held: ast.AST) -> bool:
        return last_name(held) == section or (held.__class__ is ast.Subscript and held.slice.__class__ is ast.Constant
                                              and held.slice.value == section)
    for source in program.files:
        for call in source.of(ast.Call):
            if call.func.__class__ is ast.Attribute and call.func.attr == "get" and call.args and \
                    call.args[0].__class__ is ast.Constant and isinstance(call.args[0].value, str) and \
                    call.args[0].value != key and of_section(call.func.value):
                others.add(call.args[0].value)
        for sub in source.of(ast.Subscript):
            if sub.slice.__class__ is ast.Constant and sub.slice.value == key and sub.ctx.__class__ is ast.Store:
                return False  # (the code stores it)
            if sub.slice.__class__ is ast.Constant and isinstance(sub.slice.value, str) and \
                    sub.slice.value != key and of_section(sub.value):
                others.add(sub.slice.value)
        for read in source.of(ast.Attribute):
            if read.attr == key and read.ctx.__class__ is ast.Store:
                return False
            if read.attr != key and read.attr != "get" and of_section(read.value):
                others.add(read.attr)
    return any(program.config_file_values((*path, other)) for other in sorted(others)[:MAX_KEYS_ASKED])


# The words of a test on how the run is launched (several GPUs, nodes, processes).
LAUNCH_WORDS = re.compile(r"gpus|nodes|world_size|distributed|ddp|nproc|n_gpu|num_processes", re.IGNORECASE)


def required_when_distributed(program: Program) -> frozenset:
    """The options a distributed launch cannot leave unset: the script raises where one is None
    and the run is a multi-process one (`if args.seed is None and (args.gpus > 1 or
    args.num_nodes > 1): raise ValueError("--seed must be specified")`, OpenFold). Worked out once."""
    found = program.__dict__.get("_required_options")
    if found is not None:
        return found
    names = set()
    for fn in program.functions:
        for node in fn.own_of(ast.If):
            if not node.body or not isinstance(node.body[-1], ast.Raise) or \
                    not (isinstance(node.test, ast.BoolOp) and isinstance(node.test.op, ast.And)):
                continue
            unset = [v.left.attr for v in node.test.values if isinstance(v, ast.Compare) and len(v.ops) == 1
                     and isinstance(v.ops[0], ast.Is) and isinstance(v.left, ast.Attribute)
                     and isinstance(v.comparators[0], ast.Constant) and v.comparators[0].value is None]
            launch = [v for v in node.test.values if LAUNCH_WORDS.search(ast.unparse(v))
                      and not (isinstance(v, ast.Compare) and isinstance(v.left, ast.Attribute) and v.left.attr in unset)]
            if len(unset) == 1 and launch:
                names.add(unset[0])
    found = program.__dict__["_required_options"] = frozenset(names)
    return found


def declared_off(test_text: str, program: Program) -> bool:
    """`args.val_only` where the option is declared false by default (a store_true): on, the
    run is one a launch asks for by name, whatever the launches beside the script do."""
    counted = _COUNT_ON.match(test_text)
    if counted:
        # `args.save_frequency > 0` with the option declared 0: a count that switches the work
        # on (a save every N epochs) - asked for by name, as a store_true is
        if _assigned(counted.group(1), program):
            return False
        defaults = program.declared_defaults()
        return counted.group(1) in defaults and defaults[counted.group(1)] == 0 and \
            defaults[counted.group(1)] is not False
    found = OPTION_TEST.match(test_text)
    if not found or test_text.endswith(" is not None") or _assigned(found.group(1), program):
        return False
    defaults = program.declared_defaults()
    return found.group(1) in defaults and defaults[found.group(1)] is False


# `args.save_every > 0`, `opt.eval_freq >= 1`, `args.n != 0`: a count's test that turns work on
_COUNT_ON = re.compile(r"^(?:[\w.]+\.)?(\w+) (?:> 0|>= 1|!= 0)$")


def option_value(node: ast.AST, program: Program) -> Any:
    """What `args.<option>` holds on the run as launched (its declared default, or what every
    launch beside the script gives it: Program.option_defaults) where no code the lint reads
    assigns a field of that name; None where it is not such a read or the value is not known."""
    if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id != "self"):
        return None
    defaults = program.option_defaults()
    if node.attr not in defaults:
        return None
    if _assigned(node.attr, program, node.value.id) and node.attr not in program.hand_set():
        return None  # (set elsewhere too; set by hand once parsed is the value every run has)
    return defaults[node.attr]


# Attributes every tensor has: `p.data = p.data * mask` (sparse training), `p.grad = None`
# set an option of that name only where set on the name the option is read through
TENSOR_FIELDS = frozenset({"data", "grad"})


def _declared_field(attr: str, program: Program) -> bool:
    """A local class declares a field of that name in its body (`steps: int = 1`, a dataclass's
    or a pydantic model's). (Gathered once per count of classes read.)"""
    held = program.__dict__.get("_declared_fields")
    if held is None or held[0] != len(program.classes):
        names = {t.id for klass in program.classes for node in klass.node.body
                 if node.__class__ is ast.AnnAssign or node.__class__ is ast.Assign
                 for t in (node.targets if node.__class__ is ast.Assign else [node.target]) if t.__class__ is ast.Name}
        held = program.__dict__["_declared_fields"] = (len(program.classes), names)
    return attr in held[1]


def _assigned(attr: str, program: Program, receiver: Optional[str] = None) -> bool:
    """Some code the lint reads sets an attribute of that name (`cfg.flag = True`,
    `self.cfg.flag = ...`, `setattr(cfg, "flag", ...)`): the default is not all there is.
    For a tensor's own fields (TENSOR_FIELDS), read as `<receiver>.<attr>`, only a set on
    that receiver's name counts. (The names are gathered once per set of files read: a
    177-file package was walked whole for each option asked of.)"""
    files = program.files
    held = program.__dict__.get("_assigned_attrs")
    if held is None or held[0] != len(files):
        held = program.__dict__["_assigned_attrs"] = (len(files), *_assigned_names(files))
    if attr in TENSOR_FIELDS and receiver is not None:
        return receiver in held[2].get(attr, ())
    return attr in held[1]


def _assigned_names(files) -> tuple[set[str], dict[str, set[str]]]:
    """The attribute names code sets, and for TENSOR_FIELDS the last names of what they are set on."""
    found: set[str] = set()
    receivers: dict[str, set[str]] = {}
    for source in files:
        # each file's own once: the program reads quiet modules one by one as rules ask, and
        # the union is asked again after each (53 times over a 142-file package)
        own = source.__dict__.get("_assigned_names")
        if own is None:
            own = source.__dict__["_assigned_names"] = _assigned_in(source)
        found |= own[0]
        for attr, names in own[1].items():
            receivers.setdefault(attr, set()).update(names)
    return found, receivers


def _assigned_in(source) -> tuple[set[str], dict[str, set[str]]]:
    """One file's share of _assigned_names."""
    found: set[str] = set()
    receivers: dict[str, set[str]] = {}
    for node in source.of(ast.Assign, ast.AnnAssign, ast.AugAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            for one in (target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]):
                # (not `self.root = root` of a dataset: a field of its own object, not of the
                # parsed options; `self.args.root = ...` still counts)
                if isinstance(one, ast.Attribute) and not (isinstance(one.value, ast.Name)
                                                           and one.value.id == "self"):
                    found.add(one.attr)
                    if one.attr in TENSOR_FIELDS:
                        receivers.setdefault(one.attr, set()).add(last_name(one.value) or "")
    for call in source.of(ast.Call):
        if last_name(call.func) == "setattr" and len(call.args) > 1 and \
                isinstance(call.args[1], ast.Constant) and isinstance(call.args[1].value, str):
            found.add(call.args[1].value)
            if call.args[1].value in TENSOR_FIELDS:
                receivers.setdefault(call.args[1].value, set()).add(last_name(call.args[0]) or "")
    return found, receivers


def declared_class(node: ast.AST, fn: Function, program: Program) -> Optional[Klass]:
    """The one local class `node` is an instance of (Program.class_of: built there, or declared
    `cfg: TrainConfig`), also through `self.cfg` set from such a name in a method."""
    klass = program.class_of(node, fn)
    if klass is not None:
        return klass
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        owner = program._class_of_fn(fn)
        found = [program.class_of(value, scope) for value, scope in
                 (program._attr(owner, node.attr) if owner is not None else ())]
        if found and all(k is not None and k is found[0] for k in found):
            return found[0]
    return None


def constructed_truth(part: ast.AST, fn: Function, program: Program) -> Optional[bool]:
    """The truth of `self.config.use_deepspeed` (or `not ...`) where every construction of the
    config's one local class the source shows settles the field alike: a constant keyword, an
    option read the launch settles (`PretrainConfig(use_deepspeed=args.deepspeed)` with
    --deepspeed a store_true defaulting to True), or, where the keyword is left out, the
    field's declared default. None where any does not."""
    negate = False
    while isinstance(part, ast.UnaryOp) and isinstance(part.op, ast.Not):
        negate, part = not negate, part.operand
    if not isinstance(part, ast.Attribute):
        return None
    klass = declared_class(part.value, fn, program)
    if klass is None or klass.attrs.get(part.attr):
        return None  # (set in a method too: not only what the constructions give)
    memo = program.__dict__.setdefault("_constructed_truth", {})
    key = (id(klass), part.attr)
    if key not in memo:
        truths = set()
        default = _field_default(klass, part.attr, program)
        sites = constructions(klass, program)
        for call, scope in sites:
            given = next((k.value for k in call.keywords if k.arg == part.attr), None)
            if any(k.arg is None for k in call.keywords) or call.args:
                truths.add(None)  # (`Config(**kwargs)`, positional fields: not read here)
            elif given is None:
                truths.add(None if default is None else bool(default[0]))
            elif isinstance(given, ast.Constant):
                truths.add(bool(given.value))
            else:
                truths.add(settled(given, program))
        memo[key] = truths.pop() if len(truths) == 1 and sites else None
    found = memo[key]
    return None if found is None else (not found if negate else found)


def declared_field_default(node: ast.AST, fn: Function, program: Program) -> Optional[tuple[Any, str]]:
    """The constant the one local class of `cfg` declares for the field `cfg.<field>` reads (a
    dataclass's `base_model_name: str = "bert-base"`), where no method sets it: (value, where)."""
    if not isinstance(node, ast.Attribute):
        return None
    klass = declared_class(node.value, fn, program)
    return _field_default(klass, node.attr, program) if klass is not None else None


def _field_default(klass: Klass, attr: str, program: Program) -> Optional[tuple[Any, str]]:
    """The constant every declaration of `attr` in the class's family gives, where none of them
    assigns it in a method (`self.attr = ...`, `__post_init__`) and at least one declares it."""
    family = _family(klass, program)
    values = []
    for member in family:
        if attr in member.attrs:
            return None  # set in a method: not only its default
        for stmt in member.node.body:
            value = _declared(stmt, attr)
            if value is _UNSET:
                continue
            if not (isinstance(value, ast.Constant) and isinstance(value.value, (bool, int, str, type(None)))):
                return None
            values.append((value.value, f"{member.file.display}:{stmt.lineno}"))
    if not values or len({repr(v) for v, _ in values}) != 1:
        return None
    return values[0]


_UNSET = object()


def _declared(stmt: ast.stmt, attr: str):
    """The default a class-body statement gives `attr` (`attr: bool = False`, `attr = False`,
    `attr: bool = field(default=False)`), None for a declaration without one, _UNSET otherwise."""
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == attr:
        value = stmt.value
    elif isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == attr for t in stmt.targets):
        value = stmt.value
    else:
        return _UNSET
    if isinstance(value, ast.Call) and last_name(value.func) == "field":
        value = next((kw.value for kw in value.keywords if kw.arg == "default"), None)
    return value


def _family(klass: Klass, program: Program) -> list[Klass]:
    """The class, its local bases, and every local class derived from it."""
    up = [klass, *_ancestors(klass, program)]
    return up + [c for c in program.classes if c not in up and klass in _ancestors(c, program)]


def _ancestors(klass: Klass, program: Program) -> list[Klass]:
    seen, todo = [], list(program.bases(klass))
    while todo:
        member = todo.pop()
        if member not in seen and member is not klass:
            seen.append(member)
            todo.extend(program.bases(member))
    return seen


def three_valued(test: ast.AST, leaf) -> Optional[bool]:
    """The truth of `and` / `or` / `not` over parts `leaf(part)` answers True, False or None (not
    known): what every settling of a test does once its parts are read."""
    if isinstance(test, ast.BoolOp):
        parts = [three_valued(v, leaf) for v in test.values]
        if isinstance(test.op, ast.Or):
            return True if True in parts else (False if all(p is False for p in parts) else None)
        return False if False in parts else (True if all(p is True for p in parts) else None)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = three_valued(test.operand, leaf)
        return None if inner is None else not inner
    return leaf(test)


def literal_truth(test: ast.AST) -> Optional[bool]:
    """A test's truth where its literals alone decide it (`False`, `0`, `False and x`, `True or
    x`, `not False`); None otherwise."""
    return three_valued(test, _literal_leaf)


def _literal_leaf(part: ast.AST) -> Optional[bool]:
    """A constant's truth, or a remainder compared with a value it never takes: `epoch % 10 ==
    -1` (or `== 10`) is false whatever epoch is, `!=` true (Python's `%` by a positive number
    is in [0, n))."""
    if part.__class__ is ast.Constant:
        return bool(part.value)
    if part.__class__ is ast.Compare and len(part.ops) == 1 and part.ops[0].__class__ in (ast.Eq, ast.NotEq) \
            and part.left.__class__ is ast.BinOp and part.left.op.__class__ is ast.Mod:
        modulus, value = part.left.right, part.comparators[0]
        if value.__class__ is ast.UnaryOp and value.op.__class__ is ast.USub and value.operand.__class__ is ast.Constant:
            value = ast.Constant(-value.operand.value) if type(value.operand.value) is int else value
        if modulus.__class__ is ast.Constant and type(modulus.value) is int and modulus.value > 0 and \
                value.__class__ is ast.Constant and type(value.value) is int and not 0 <= value.value < modulus.value:
            return part.ops[0].__class__ is ast.NotEq
    return None


def _reaching_constant_leaf(part: ast.Compare, fn) -> Optional[bool]:
    """`searcher == "evolution"` where every binding of `searcher` that reaches the test is a
    constant (`searcher = "bid_search"` a line above, the other choices left in the code): the
    comparison's answer for each, where they agree."""
    if len(part.ops) != 1 or part.ops[0].__class__ not in (ast.Eq, ast.NotEq, ast.In, ast.NotIn) or \
            fn.node is None or fn.node.__class__ is ast.Module:
        return None
    held = reaching.reaching_values(fn.node, part.left.id, part.left)
    if not held or not all(v.__class__ is ast.Constant for v in held):
        return None
    answers = {_compare_constant(v.value, part.ops[0], part.comparators[0]) for v in held}
    return answers.pop() if len(answers) == 1 else None


def defined_truth(test: ast.AST, program: Program, fn) -> Optional[bool]:
    """literal_truth, where a bare name that holds a function or class the program defines (no
    parameter, local or module assignment binds it otherwise) is true too: `if args.local_rank == 0
    and not evaluate:` with `evaluate` the module's own evaluation function, not a flag, never
    runs its block."""
    def leaf(part: ast.AST) -> Optional[bool]:
        if part.__class__ is ast.Compare:
            return _literal_leaf(part) if part.left.__class__ is not ast.Name else _reaching_constant_leaf(part, fn)
        if part.__class__ is not ast.Name:
            return _literal_leaf(part)
        scope, name = fn, part.id
        while scope is not None:
            if scope.bindings.get(name):
                return None
            scope = scope.parent
        body = fn.module.body
        if body is not None and body.bindings.get(name):
            return None
        held = program.symbol(name, fn)
        return True if program.is_function(held) or program.is_class(held) else None
    return three_valued(test, leaf)


def loop_config_truth(test: ast.AST, program: Program, fn) -> Optional[bool]:
    """The truth of a test on a loop's name where the loop runs over a list the YAML configs
    beside the script give (`for model in self.models:` with `self.models = config["models"]`,
    `config = yaml.safe_load(f)`, and `models: [particle_transformer]` in every config): `if
    model in ["nsub_dnn"]:` is false for every element, so no shipped config trains that model.
    None where the name is bound otherwise, or any loop over it is not such a list."""
    return three_valued(test, lambda part: _loop_config_leaf(part, program, fn))


def _loop_config_leaf(part: ast.AST, program: Program, fn) -> Optional[bool]:
    if not (part.__class__ is ast.Compare and len(part.ops) == 1 and part.left.__class__ is ast.Name
            and part.ops[0].__class__ in (ast.Eq, ast.NotEq, ast.In, ast.NotIn)):
        return None
    name = part.left.id
    if name not in fn.__dict__.get("_loop_names", ()) or fn.bindings.get(name):
        return None
    elements: set = set()
    for loop in fn.own_of(ast.For, ast.AsyncFor):
        bound = {n.id for n in walk(loop.target) if n.__class__ is ast.Name}
        if name not in bound:
            continue
        held = _config_list(loop.iter, fn, program) if loop.target.__class__ is ast.Name else None
        if not held:
            return None
        elements |= held
    answers = {_compare_constant(value, part.ops[0], part.comparators[0]) for value in elements}
    return answers.pop() if len(answers) == 1 else None


# what reads a YAML config file into a dict (the lists config_values reads are YAML's)
_YAML_READERS = ("yaml.safe_load", "yaml.load", "yaml.full_load", "omegaconf.OmegaConf.load",
                 "hyperpyyaml.load_hyperpyyaml")  # (SpeechBrain's, the YAML with its own tags)


def loaded_config_truth(test: ast.AST, program: Program, fn) -> Optional[bool]:
    """The truth of a test on a key of the dict the run's YAML config was read into, where every
    config beside the script decides it alike: `if opt['model'] in ['vsr']:` with `opt =
    option.parse(args.opt)` (the project's loader returning what `yaml.load(f)` read) and `model:
    sr` or `model: ClassSR` in every config there - no shipped config takes that side. None where
    a part is not such a read, or the code itself sets that key."""
    return three_valued(test, lambda part: _loaded_key_leaf(part, program, fn))


def _loaded_key_leaf(part: ast.AST, program: Program, fn) -> Optional[bool]:
    if not (part.__class__ is ast.Compare and len(part.ops) == 1 and part.left.__class__ is ast.Subscript
            and part.ops[0].__class__ in (ast.Eq, ast.NotEq, ast.In, ast.NotIn)):
        return None
    keys: list = []
    node = part.left
    while node.__class__ is ast.Subscript and node.slice.__class__ is ast.Constant and isinstance(node.slice.value, str):
        keys.insert(0, node.slice.value)
        node = node.value
    if not keys or node.__class__ not in (ast.Name, ast.Attribute) or keys[0] in _keys_set_in_code(program):
        return None
    loads = program.values_of(node, fn)  # (`self.cfg['task']`: what the constructor kept)
    if not loads or not all(_yaml_loaded(value, scope, program, _LOADER_DEPTH) for value, scope in loads):
        return None
    held = program.config_file_values(tuple(keys))
    if not held:
        return None
    answers = {_compare_constant(value, part.ops[0], part.comparators[0]) for value in held}
    return answers.pop() if len(answers) == 1 else None


# (how many of the project's own calls are followed back to the YAML reader: a loader, and a
# converter around it)
_LOADER_DEPTH = 3


def _yaml_loaded(value: ast.AST, scope, program: Program, depth: int) -> bool:
    """Whether a value is what a YAML reader returned: the reader's call itself, or a call of the
    project's own function whose every return is (`def parse(path): opt = yaml.load(f); ...;
    return opt`), or of a converter handing its argument back (`dict_to_nonedict(opt)`, one of
    whose returns is its parameter) around such a value."""
    if value.__class__ is ast.Name and depth > 0:
        # a name the value reaches through (`main(config)` handing the module's `config` on),
        # or a loop's name over a grid of the config
        earlier = [(v, s) for v, s in program.values_of(value, scope) if v is not value]
        if earlier:
            return all(_yaml_loaded(v, s, program, depth - 1) for v, s in earlier)
        return _grid_element(value, scope, program, depth)
    if value.__class__ is not ast.Call or depth <= 0:
        return False
    if program.qualify(value.func, scope) in _YAML_READERS:
        return True
    target = program.callee(value.func, scope)
    if target is None or not hasattr(target, "returned") or not target.returned:
        return False
    params = target.params
    if value.args and params and any(r.__class__ is ast.Name and r.id == params[0] for r in target.returned):
        # (`opt = dict_to_nonedict(opt)` binds the name it reads: the argument is the earlier value)
        earlier = [(v, s) for v, s in program.values_of(value.args[0], scope) if v is not value]
        return bool(earlier) and all(_yaml_loaded(v, s, program, depth - 1) for v, s in earlier)
    return all(all(v is not r and _yaml_loaded(v, s, program, depth - 1) for v, s in program.values_of(r, target))
               for r in target.returned)


def _grid_element(name: ast.Name, scope, program: Program, depth: int) -> bool:
    """Whether a loop's name holds one point of a hyperparameter grid over the YAML config: `for
    cnf in grid(config):` (or over a name bound to that call), where the project's `grid(kwargs)`
    returns a list comprehension of dicts built from its parameter's items (IDGL-style: the
    scalar entries copied, one element of each list-valued entry). A scalar the config sets is
    the same in every point, so a test on it reads the file as the config itself does."""
    if scope.node is None or scope.bindings.get(name.id):
        return False  # (assigned as well as looped over: not the grid's alone)
    loops = [loop for loop in scope.own_of(ast.For) if loop.target.__class__ is ast.Name and loop.target.id == name.id]
    if not loops:
        return False
    for loop in loops:
        for made, where in program.values_of(loop.iter, scope):
            grid = program.callee(made.func, where) if made.__class__ is ast.Call and made.args else None
            if not (hasattr(grid, "returned") and grid.returned and grid.params and _builds_points(grid)):
                return False
            if not all(v is not made and _yaml_loaded(v, s, program, depth - 1)
                       for v, s in program.values_of(made.args[0], where)) or \
                    not program.values_of(made.args[0], where):
                return False
    return True


def _builds_points(grid) -> bool:
    """A grid helper's every return is a list comprehension whose elements are built from its
    first parameter's `.items()`."""
    param = grid.params[0]
    for returned in grid.returned:
        if returned.__class__ is not ast.ListComp:
            return False
        if not any(n.__class__ is ast.Attribute and n.attr == "items" and n.value.__class__ is ast.Name
                   and n.value.id == param for n in walk(returned.elt)):
            return False
    return True


def branch_truth(test: ast.AST, program: Program, fn) -> Optional[bool]:
    """Which side of an `if` every run takes, where the source or the configs beside the script
    settle it: its literals and the program's own names (defined_truth), a loop's name over a
    list every config gives (loop_config_truth), a key of the dict the YAML config was read
    into (loaded_config_truth); None where nothing settles it. The walker's reading of each test
    it reaches."""
    truth = defined_truth(test, program, fn)
    if truth is None and fn.__dict__.get("_loop_names"):
        # `if model in ["nsub_dnn"]:` in a loop over the models every config lists
        truth = loop_config_truth(test, program, fn)
    if truth is None and _keyed_compare(test):
        # `if opt['model'] in ['vsr']:` on the dict the run's YAML config was read into
        truth = loaded_config_truth(test, program, fn)
    if truth is None and (fn.arguments or fn.defaulted):
        # `if attack_type == 'linf-df':` in a factory every call of which hands a constant or an
        # option the launch settles ('linf-pgd'): no run takes that side
        truth = handed_truth(test, program, fn)
    if truth is None and program.launched_environment():
        # `if use_ddstore:` on `int(os.environ.get("ORBIT_USE_DDSTORE", 0))`, which every
        # launch script exports as 0
        truth = environment_truth(test, program, fn)
    return truth


_NOT_KNOWN = object()


def handed_truth(test: ast.AST, program: Program, fn) -> Optional[bool]:
    """The truth of a comparison of fn's parameter with constants (`attack_type == 'linf-df'`),
    the parameter never bound again, where every call the program makes of fn hands it a known
    value (_handed_value): a constant, an option read the launch settles, the caller's own such
    parameter; a call that leaves it out, the parameter's constant default. None where any call
    spreads its arguments (`f(**kw)`) or hands a value not known."""
    def leaf(part: ast.AST) -> Optional[bool]:
        if part.__class__ is not ast.Compare or len(part.ops) != 1 or part.left.__class__ is not ast.Name or \
                part.ops[0].__class__ not in (ast.Eq, ast.NotEq, ast.In, ast.NotIn):
            return None
        value = _handed_value(part.left.id, fn, program, 2)
        if value is _NOT_KNOWN or program.ranks.is_rank(part.left, fn):
            # (`rank == 0` with `--rank` defaulting to 0: each process is handed its own)
            return None
        answers = {_compare_constant(v, part.ops[0], part.comparators[0]) for v in value}
        return answers.pop() if len(answers) == 1 else None
    return three_valued(test, leaf)


def _handed_value(name: str, fn, program: Program, depth: int) -> Any:
    """The set of values fn's parameter `name` holds over every call of fn, or _NOT_KNOWN."""
    if depth <= 0 or fn.node is None or fn.node.__class__ is ast.Module or fn.bindings.get(name) or \
            (name not in fn.params and name not in fn.kwonly) or fn.__dict__.get("_spread_calls"):
        return _NOT_KNOWN
    handed, left_out = fn.arguments.get(name, ()), fn.defaulted.get(name, ())
    if not handed and not left_out:
        return _NOT_KNOWN  # (no call the lint sees: an entry point, or a callback a library runs)
    if fn.name.startswith("__") or fn.name == "forward" or program.handed_elsewhere(fn.name):
        # (a library may call it too: nn.Module's __call__, a callback it is handed, a module
        # not read yet; those calls' values are not among the program's)
        return _NOT_KNOWN
    values: set = set()
    if left_out:
        default = param_defaults(fn.node).get(name)
        if not (default.__class__ is ast.Constant and isinstance(default.value, (str, int, float, bool, type(None)))):
            return _NOT_KNOWN
        values.add(default.value)
    for value, scope in handed:
        if value.__class__ is ast.Constant and isinstance(value.value, (str, int, float, bool, type(None))):
            values.add(value.value)
            continue
        if value.__class__ is ast.Name:
            inner = _handed_value(value.id, scope, program, depth - 1)
            if inner is _NOT_KNOWN:
                return _NOT_KNOWN
            values |= inner
            continue
        held = _option_read(value, program)
        if held is _NOT_KNOWN:
            return _NOT_KNOWN
        values.add(held)
    return values


def _option_read(node: ast.AST, program: Program) -> Any:
    """What an option read holds on the launched run (`args.attack`, or `self.params.attack`
    through a field named as an options holder), a plain constant; _NOT_KNOWN otherwise."""
    if node.__class__ is ast.Attribute and node.value.__class__ is ast.Attribute and \
            node.value.value.__class__ is ast.Name and node.value.value.id == "self" and \
            OPTIONS_HOLDER.match(node.value.attr):
        node = ast.Attribute(value=ast.Name(id=node.value.attr, ctx=ast.Load()), attr=node.attr, ctx=ast.Load())
    if node.__class__ is ast.Attribute and (DIST_SWITCH.search(node.attr) or LAUNCH_WORDS.search(node.attr)
                                           or _LAUNCHER.search(node.attr)):
        # (`--launcher pytorch|slurm`, `--distributed`, `--gpus`: how the job is launched, which
        # its default does not settle - a user on SLURM passes `--launcher slurm`)
        return _NOT_KNOWN
    held = option_value(node, program)
    return held if isinstance(held, (str, int, float, bool)) else _NOT_KNOWN


_LAUNCHER = re.compile(r"launcher|backend|dist_url|init_method", re.IGNORECASE)


def environment_truth(test: ast.AST, program: Program, fn) -> Optional[bool]:
    """The truth of a test on environment variables every launch script exports to one text
    (Program.launched_environment): the read itself, a conversion of it (`int(...)`,
    `.lower()`), or a name every reaching binding of which is such a read, alone or compared
    with a constant. None where some part is not such a read."""
    exported = program.launched_environment()

    def leaf(part: ast.AST) -> Optional[bool]:
        if part.__class__ is ast.Compare:
            if len(part.ops) != 1:
                return None
            value = _environment_value(part.left, exported, fn, 2)
            return None if value is _NOT_KNOWN else _compare_constant(value, part.ops[0], part.comparators[0])
        value = _environment_value(part, exported, fn, 2)
        return None if value is _NOT_KNOWN else bool(value)
    return three_valued(test, leaf)


_CONVERSIONS = {"int": int, "float": float, "str": str, "bool": bool}
_TEXT_CHANGES = {"lower": str.lower, "upper": str.upper, "strip": str.strip}


def _environment_value(node: ast.AST, exported: dict, fn, depth: int) -> Any:
    """The Python value node holds on the launched run where it reads an exported variable;
    _NOT_KNOWN otherwise (a conversion that would raise included)."""
    key = env_key(node)
    if key is not None:
        return exported.get(key, _NOT_KNOWN)
    if node.__class__ is ast.Call and not node.keywords:
        if node.func.__class__ is ast.Name and node.func.id in _CONVERSIONS and len(node.args) == 1:
            inner = _environment_value(node.args[0], exported, fn, depth)
            if inner is _NOT_KNOWN:
                return _NOT_KNOWN
            try:
                return _CONVERSIONS[node.func.id](inner)
            except (ValueError, TypeError):
                return _NOT_KNOWN
        if node.func.__class__ is ast.Attribute and node.func.attr in _TEXT_CHANGES and not node.args:
            inner = _environment_value(node.func.value, exported, fn, depth)
            return _TEXT_CHANGES[node.func.attr](inner) if isinstance(inner, str) else _NOT_KNOWN
        return _NOT_KNOWN
    if node.__class__ is ast.Name and depth > 0 and fn.node is not None:
        # (every binding that reaches the read gives the same value)
        values = [_environment_value(h, exported, fn, depth - 1)
                  for h in reaching.reaching_values(fn.node, node.id, node) or ()]
        if values and all(v is not _NOT_KNOWN and v == values[0] and type(v) is type(values[0]) for v in values):
            return values[0]
    return _NOT_KNOWN


def _keyed_compare(test: ast.AST) -> bool:
    """Whether a test (or a part of its `and` / `or`) compares a dict's key (`opt['model'] in
    [...]`): the one shape loaded_config_truth reads, told cheaply before it is asked."""
    if test.__class__ is ast.BoolOp:
        return any(_keyed_compare(v) for v in test.values)
    if test.__class__ is ast.UnaryOp:
        return _keyed_compare(test.operand)
    return test.__class__ is ast.Compare and test.left.__class__ is ast.Subscript


def settled_spans(fn, program: Program) -> tuple:
    """The (first, last) lines of the sides of fn's own `if` tests that no run takes, read as the
    walker reads a test it reaches (branch_truth): for a question asked before the walk got to fn."""
    return _untaken_spans(fn, lambda test: branch_truth(test, program, fn))


def launched_spans(fn, program: Program) -> tuple:
    """The (first, last) lines of the sides of fn's own `if` tests that the run as launched never
    takes (settled: `if args.backbone == "PathAgents":` with the option's default, or every
    launch's value, another): what a rule judging the launched run leaves out. Once per function."""
    found = fn.__dict__.get("_launched_spans")
    if found is None:
        found = fn.__dict__["_launched_spans"] = _untaken_spans(fn, lambda test: settled(test, program))
    return found


def _untaken_spans(fn, truth_of) -> tuple:
    """The (first, last) lines of the side of each of fn's own `if` tests that truth_of settles
    (True: the `else:` is never taken, False: the block)."""
    spans = []
    for branch in fn.own_of(ast.If):
        truth = truth_of(branch.test)
        skipped = None if truth is None else (branch.orelse if truth else branch.body)
        if skipped:
            spans.append((skipped[0].lineno, skipped[-1].end_lineno or skipped[-1].lineno))
    return tuple(spans)


def _keys_set_in_code(program: Program) -> frozenset:
    """The string keys the program's own code stores into some dict (`opt['dist'] = True`,
    `cfg.setdefault('model', ...)`): a config key the code may change is not the file's alone.
    Worked out once."""
    found = program.__dict__.get("_keys_set_in_code")
    if found is None:
        keys = set()
        for source in program.files:
            for node in source.of(ast.Subscript):
                if node.ctx.__class__ is ast.Store and node.slice.__class__ is ast.Constant and \
                        isinstance(node.slice.value, str):
                    keys.add(node.slice.value)
            for node in source.of(ast.Call):
                method = node.func.attr if node.func.__class__ is ast.Attribute else None
                if method == "setdefault" and node.args and node.args[0].__class__ is ast.Constant and \
                        isinstance(node.args[0].value, str):
                    keys.add(node.args[0].value)
                elif method == "update":
                    # (`opt.update(model="vsr")`, `opt.update({"model": "vsr"})`)
                    keys.update(k.arg for k in node.keywords if k.arg)
                    keys.update(k.value for arg in node.args if arg.__class__ is ast.Dict for k in arg.keys
                                if k.__class__ is ast.Constant and isinstance(k.value, str))
        found = program.__dict__["_keys_set_in_code"] = frozenset(keys)
    return found




def _config_list(node: ast.AST, fn, program: Program) -> Optional[set]:
    """The elements of the lists the YAML configs beside the script give the key a node reads
    (`config["models"]`, or a field or name bound to it), where the dict read is what a YAML
    reader returned; None where not known."""
    found: set = set()
    for value, scope in program.values_of(node, fn):
        keys: list = []
        while value.__class__ is ast.Subscript and value.slice.__class__ is ast.Constant and \
                isinstance(value.slice.value, str):
            keys.insert(0, value.slice.value)
            value = value.value
        if not keys or value.__class__ not in (ast.Name, ast.Attribute):
            return None
        if not all(v is not value and _yaml_loaded(v, s, program, _LOADER_DEPTH)
                   for v, s in program.values_of(value, scope)):
            return None
        held = program.config_file_values(tuple(keys), lists=True)
        if not held:
            return None
        found |= held
    return found or None


# a switch that says whether the run is distributed (`cfg.ddp`, `args.distributed`, `use_fsdp`)
DIST_SWITCH = re.compile(r"distributed|ddp|fsdp|deepspeed|(?:^|_)dist(?:_|$)|is_initialized|multi_?gpu", re.IGNORECASE)


def settled(test: ast.AST, program: Program) -> Optional[bool]:
    """The truth of a test on the run as launched, where the options decide it: `args.task ==
    "short_term"` with --task defaulting to "long_term", `args.flag` (store_true), `args.ckpt is
    None`, and `and` / `or` / `not` of such parts; None where some part is not an option read
    (option_value) or compares with what is not a constant."""
    return three_valued(test, lambda part: _settled_part(part, program))


def _settled_part(test: ast.AST, program: Program) -> Optional[bool]:
    """settled() of one part (no `and` / `or` / `not` at its top)."""
    if test.__class__ is ast.Constant:
        return literal_truth(test)  # `if False and args.evaluate:`, a block its author switched off
    if test.__class__ is ast.Compare and text(test) in program.ranks.init_switch_tests:
        return None  # (`if args.nodes > 1:` that sets the group up: the run judged turns it on)
    held = _launched(test.left if isinstance(test, ast.Compare) else test, program)
    if held is not None:
        # an option the launches give differently: answered where every one of them answers alike
        answers = {_answer(test, value) if value is not UNKNOWN_VALUE else None for value in held}
        if len(answers) == 1 and None not in answers:
            return answers.pop()
        if {True, False} <= answers:
            return None  # (`--nodes 4` in one launch, left at 1 in another: each way runs somewhere)
    if isinstance(test, ast.Attribute):
        value = option_value(test, program)
        if isinstance(value, (bool, int, str)) or value is None and _declared_none(test, program):
            return bool(value)
        if value is None and _required_text(test, program):
            return True  # (`if args.hf_repo:` of a `required=True` text option: every run gives one)
        # (a config flag every YAML config beside the script sets alike: `if cfg.opt.ema.use:`
        # with `ema: use: true` in the Hydra default config and no config saying otherwise)
        # (not the switch of the distributed run itself: a config shipped with `ddp: false` is
        # the one-GPU run, and the findings are about the run that turns it on)
        return config_truth(config_settles(test, program)) if value is None and not DIST_SWITCH.search(test.attr) else None
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    op, right = test.ops[0], test.comparators[0]
    held = config_candidates(test.left, program) if isinstance(test.left, ast.Attribute) else None
    if held and isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)):
        # a config field every value of which, the default's and each config file's, decides alike
        answers = {_compare_constant(value, op, right) for value in held}
        return answers.pop() if len(answers) == 1 else None
    if type(op) in _ORDER and isinstance(test.left, ast.Attribute) and option_value(test.left, program) is None:
        # a number every config sets alike, the code's default with them (`cfg.SEED_VALUE >= 0`
        # of a yacs default -1; `config.train.accumulation_steps > 1` with `accumulation_steps: 0`
        # in the YAML every config of the run bases itself on): the side no launch with them takes
        held = held or config_settles(test.left, program)
        answers = {_compare_constant(value, op, right) for value in held} if held else {None}
        return answers.pop() if len(answers) == 1 else None
    if isinstance(op, (ast.Is, ast.IsNot)) and isinstance(right, ast.Constant) and right.value is None:
        if option_value(test.left, program) is not None:
            return isinstance(op, ast.IsNot)
        return isinstance(op, ast.Is) if _declared_none(test.left, program) else None
    if isinstance(op, (ast.In, ast.NotIn)) and isinstance(test.left, ast.Constant) and \
            isinstance(test.left.value, str):
        if test.left.value.startswith("-") and text(right, 40) == "sys.argv":
            # `'--generate' in sys.argv`: a mode flag the script reads itself, absent unless given
            # (as an option left at its default; DSTC9's baseline.py picking generate or train)
            return isinstance(op, ast.NotIn)
        # `"kv" in args.root`: a substring of an option's text
        held_text = option_value(right, program)
        return (test.left.value in held_text) == isinstance(op, ast.In) if isinstance(held_text, str) else None
    value = _text_method(test.left, program) if isinstance(test.left, ast.Call) else \
        _split_part(test.left, program) if isinstance(test.left, ast.Subscript) else option_value(test.left, program)
    if value is None or not isinstance(value, (str, int, float, bool)):
        return None
    return _compare_constant(value, op, right)


_ORDER = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge}
_TEXT_METHODS = {"find": str.find, "startswith": str.startswith, "endswith": str.endswith, "count": str.count}


def _text_method(call: ast.Call, program: Program) -> Any:
    """`args.root.find("kv")`, `args.model.startswith("vit")`: a string method with constant
    arguments of an option's known text; None where any part is not known."""
    if not (isinstance(call.func, ast.Attribute) and call.func.attr in _TEXT_METHODS and call.args
            and not call.keywords and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in call.args)):
        return None
    held = option_value(call.func.value, program)
    if not isinstance(held, str):
        return None
    try:
        return _TEXT_METHODS[call.func.attr](held, *(a.value for a in call.args))
    except (TypeError, ValueError):
        return None


def _split_part(node: ast.Subscript, program: Program) -> Any:
    """`args.loss_type.split("_")[0]`: a part of an option's known text; None where not known."""
    call = node.value
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "split"
            and len(call.args) <= 1 and not call.keywords and all(isinstance(a, ast.Constant) and
                                                                  isinstance(a.value, str) and a.value for a in call.args)
            and isinstance(node.slice, ast.Constant) and type(node.slice.value) is int):
        return None
    held = option_value(call.func.value, program)
    if not isinstance(held, str):
        return None
    parts = held.split(*(a.value for a in call.args))
    return parts[node.slice.value] if -len(parts) <= node.slice.value < len(parts) else None


def _compare_constant(value, op: ast.cmpop, right: ast.AST) -> Optional[bool]:
    """`value <op> right` for a constant right side (or a list of constants for `in`)."""
    if isinstance(right, ast.Constant) and isinstance(op, (ast.Eq, ast.NotEq)):
        return (value == right.value) == isinstance(op, ast.Eq)
    if isinstance(right, ast.Constant) and isinstance(right.value, bool) and isinstance(value, bool) and \
            isinstance(op, (ast.Is, ast.IsNot)):
        return (value is right.value) == isinstance(op, ast.Is)  # `args.mixedprec is True`, a store_true
    if isinstance(right, ast.Constant) and type(op) in _ORDER and isinstance(value, (int, float)) and \
            not isinstance(value, bool) and isinstance(right.value, (int, float)) and not isinstance(right.value, bool):
        return _ORDER[type(op)](value, right.value)  # `args.root.find("kv") >= 0`, `args.epochs > 1`
    if isinstance(right, (ast.List, ast.Tuple, ast.Set)) and all(isinstance(e, ast.Constant) for e in right.elts) \
            and isinstance(op, (ast.In, ast.NotIn)):
        return (value in [e.value for e in right.elts]) == isinstance(op, ast.In)
    return None


def config_candidates(node: ast.AST, program: Program) -> Optional[set]:
    """The values a config field read through a chain (`cfg.DATASET.TYPE`, a yacs-style config)
    may hold on a launch: the one constant the program's files assign to that chain of fields
    (`CFG.DATASET.TYPE = "cifar100"`, whatever the root is called), with what the YAML configs
    beside the script set at that key (`DATASET: / TYPE: imagenet`); None where the chain is
    assigned anything but that one constant, or nowhere."""
    path = _field_path(node, program.config_roots())
    if path is None:
        one = _one_field(node, program)
        # (`config.trainer` of an OmegaConf / YAML config: no code default, no option of that
        # name; the values the config files beside the script give the key, where any does)
        return (program.config_file_values(one) or None) if one else None
    held = program.config_defaults().get(path)
    named = program.named_config_values(path) if held is not None and len(held) == 1 else None
    if named is not None:
        # (the configs every launch names: what they set, the code's default only where one
        # leaves the key out - not every YAML beside the script, which no launch may run)
        return named[0] | (set(held) if named[1] else set())
    given = program.config_file_values(path) if held is not None and len(held) == 1 else None
    return None if given is None else set(held) | given


def config_settles(node: ast.AST, program: Program) -> Optional[set]:
    """The values the YAML configs beside the script give the field a config chain reads
    (`cfg.optimizer.step`, `self.cfg.grad_accum`), where every one of them that sets it agrees
    and no code the lint reads assigns a field of that name: what a launch with any of those
    configs holds (an accumulation period of 1 in every config: nothing accumulates). None
    where it is not such a read, not known, or an option's (option_value's). A one-level read
    (`config.step_per_update`) counts where no option of that name is declared."""
    parts: list[str] = []
    keyed = 0  # (`train_config["optimizer"]["grad_acc_step"]`: a YAML file's dict, read by key)
    while isinstance(node, ast.Attribute) or (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)
                                              and isinstance(node.slice.value, str)):
        parts.insert(0, node.attr if isinstance(node, ast.Attribute) else node.slice.value)
        keyed += isinstance(node, ast.Subscript)
        node = node.value
    if not isinstance(node, ast.Name) or (keyed and (keyed != len(parts) or len(parts) < 2)):
        return None
    if node.id == "self":
        parts = parts[1:]  # `self.cfg.grad_accum`: the config the object keeps, at `grad_accum`
    elif len(parts) == 1 and (parts[0] in program.option_defaults() or _declared_field(parts[0], program)):
        # `args.x` of a declared option is option_value's; `config.step_per_update` of no
        # declared option is a key of the config the script loaded. (A field a local settings
        # class declares - `gradient_accumulation_steps: PositiveInt = Field(default=1)` - is a
        # setting of the schema, which the user's own configs set: the examples shipped are not
        # all of them.)
        return None
    if not parts or _assigned(parts[-1], program):
        return None
    found = program.config_file_values(tuple(parts))
    if not found:
        return None
    # (an option of that name merged over the config - `--grad_accum`, default None - agrees
    # where it is left unset or launched with the same value)
    options = program.option_defaults()
    if len(parts) == 1 and parts[0] in options and options[parts[0]] is not None and {options[parts[0]]} != found:
        return None
    return set(found)


def config_read(value: ast.AST, program: Program, fn) -> Optional[set]:
    """config_settles of a config read in fn, also one read off a name fn binds once to a
    section of the config (`data_config = config["data"]`, then `data_config["shuffle"]`: read as
    `config["data"]["shuffle"]`). None where not settled."""
    if value.__class__ not in (ast.Subscript, ast.Attribute):
        return None
    found = config_settles(value, program)
    if found is not None:
        return found
    if value.__class__ is ast.Subscript and value.slice.__class__ is ast.Constant and isinstance(value.slice.value, str) \
            and value.value.__class__ is ast.Name and not _assigned(value.slice.value, program) \
            and value.slice.value not in _keys_set_in_code(program):
        # `config_args["accu_steps"]` of `config_args = load_hyperpyyaml(f)`: a top-level key of
        # the dict the YAML was read into, 1 in every config beside the script
        loads = program.values_of(value.value, fn, 1)
        if loads and all(_yaml_loaded(v, scope, program, _LOADER_DEPTH) for v, scope in loads):
            held = program.config_file_values((value.slice.value,))
            return set(held) if held else None
    root = value
    while root.__class__ in (ast.Subscript, ast.Attribute):
        root = root.value
    if root.__class__ is not ast.Name:
        return None
    bound = program.values_of(root, fn, 1)
    if len(bound) != 1 or bound[0][0].__class__ not in (ast.Subscript, ast.Attribute):
        return None
    return config_settles(_rebased(value, bound[0][0]), program)


def spread_config_values(value: ast.AST, fn, program: Program, keys: tuple) -> Optional[dict]:
    """What the YAML configs beside the script set at each of `keys` in the config section a
    `**` spread hands over (`DataLoader(ds, **self.dataloader_config["train"])`, the object
    keeping the `cfg["dataloader"]` its builder is handed: the configs' `dataloader: train:`),
    key -> the set of values (empty where none sets it). None where the spread is not read as a
    section of the configs, or the code itself stores one of those keys."""
    path = config_section_keys(value, fn, program)
    if not path or any(key in _keys_set_in_code(program) for key in keys):
        return None
    found = {key: program.config_file_values((*path, key)) for key in keys}
    if any(held is None for held in found.values()) or not any(found.values()):
        return None  # (set nowhere: not known to be a section of these configs)
    return found


# (how many values are followed back from a section read to the config's root: a field, the
# parameter it was handed, the caller's own read)
_SECTION_DEPTH = 4


def config_section_keys(node: ast.AST, fn, program: Program, depth: int = _SECTION_DEPTH) -> Optional[tuple]:
    """The keys from the config's root of the section a chain reads, followed through the names,
    fields and parameters that hold it: `self.dataloader_config["train"]`, where the object
    keeps the `dataloader_config` its builder is handed as `cfg["dataloader"]`, reads
    ("dataloader", "train"). The root is a name with nothing the lint follows bound to it (the
    Hydra entry's `cfg`) or a call's result (a converter, a loader). None where a step holds a
    dict literal, or several values reaching different keys."""
    keys: list = []
    while True:
        if node.__class__ is ast.Subscript and node.slice.__class__ is ast.Constant and isinstance(node.slice.value, str):
            keys.insert(0, node.slice.value)
        elif node.__class__ is ast.Attribute and not (node.value.__class__ is ast.Name and node.value.id == "self"):
            keys.insert(0, node.attr)
        else:
            break
        node = node.value
    if node.__class__ is ast.Call:
        return tuple(keys)
    if node.__class__ not in (ast.Name, ast.Attribute):
        return None
    held = [(v, s) for v, s in program.values_of(node, fn, 1) if v is not node]
    if not held:
        return tuple(keys) if node.__class__ is ast.Name else None
    if depth <= 0:
        return None
    heads = {config_section_keys(v, s, program, depth - 1) for v, s in held[:4]}
    if len(heads) != 1 or None in heads or len(held) > 4:
        return None
    return (*heads.pop(), *keys)


def _rebased(chain: ast.AST, root: ast.AST) -> ast.AST:
    """A copy of an attribute / key chain read from `root` instead of its own first name (the
    tree itself is left as it is)."""
    if chain.__class__ is ast.Attribute:
        return ast.Attribute(value=_rebased(chain.value, root), attr=chain.attr, ctx=ast.Load())
    if chain.__class__ is ast.Subscript:
        return ast.Subscript(value=_rebased(chain.value, root), slice=chain.slice, ctx=ast.Load())
    return root


def _one_field(node: ast.AST, program: Program) -> Optional[tuple]:
    """("trainer",) of `config.trainer` where no option is declared by that name and no code
    the lint reads assigns a field of it: a key of a config loaded from a file."""
    if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id != "self"):
        return None
    if node.attr in program.option_defaults() or _assigned(node.attr, program):
        return None
    return (node.attr,)


def _field_path(node: ast.AST, roots: frozenset = frozenset()) -> Optional[tuple]:
    """("DATASET", "TYPE") of `cfg.DATASET.TYPE`: two fields or more below a plain name (not
    `self`, not one field: `args.x` is an option, option_value's), or one below a name of roots
    (`cfg.SEED_VALUE` of a yacs node, config_roots)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id == "self" or not parts or (len(parts) < 2 and node.id not in roots):
        return None
    return tuple(parts)


# Classes of yacs-style config nodes: fields set one by one at a module's top level.
_CONFIG_NODES = frozenset({"CN", "CfgNode", "ConfigDict", "EasyDict", "edict", "AttrDict"})


def config_roots(files) -> frozenset:
    """The names a module binds at its top level to a yacs-style config node (`cfg =
    CN(new_allowed=True)`, `_C = CfgNode()`), or to another such name or its clone (`cfg =
    _C.clone()`): a one-field read of them (`cfg.SEED_VALUE`) is a config field, not an option."""
    found: set = set()
    for _ in range(2):
        for source in files:
            for node in source.tree.body if source.tree is not None else ():
                if node.__class__ is not ast.Assign or len(node.targets) != 1 or node.targets[0].__class__ is not ast.Name:
                    continue
                value = node.value
                if value.__class__ is ast.Call and value.func.__class__ is ast.Attribute and value.func.attr == "clone":
                    value = value.func.value
                if (value.__class__ is ast.Call and last_name(value.func) in _CONFIG_NODES) or \
                        (value.__class__ is ast.Name and value.id in found):
                    found.add(node.targets[0].id)
    return frozenset(found)


def config_defaults(files, roots: frozenset = frozenset()) -> dict:
    """Every chain of two fields or more below a plain name that the files assign (one below a
    name of roots), by its fields: the set of constants assigned, or None where anything else
    is (`cfg.DATASET.TYPE = args.dataset`, an augmented or unpacked assignment)."""
    found: dict = {}
    for source in files:
        for node in source.of(ast.Assign, ast.AugAssign, ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in (one for t in targets for one in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t])):
                path = _field_path(target, roots)
                if path is None:
                    continue
                value = node.value if isinstance(node, ast.Assign) and target in node.targets else None
                if value.__class__ is ast.UnaryOp and value.op.__class__ is ast.USub and \
                        value.operand.__class__ is ast.Constant and type(value.operand.value) in (int, float):
                    value = ast.Constant(-value.operand.value)  # (`cfg.SEED_VALUE = -1`: no seed asked)
                if not (isinstance(value, ast.Constant) and isinstance(value.value, (str, int, float, bool))):
                    found[path] = None
                elif path not in found:
                    found[path] = {value.value}
                elif found[path] is not None:
                    found[path].add(value.value)
    return found


def _launched(node: ast.AST, program: Program) -> Optional[frozenset]:
    """The values the launches beside the script give `args.<option>` where they differ
    (Program.launch_candidates), for a read no code the lint reads assigns; None otherwise. Also
    read through the field a class keeps the options in (`self.args.test_info`)."""
    if not isinstance(node, ast.Attribute):
        return None
    holder = node.value
    if holder.__class__ is ast.Attribute and holder.value.__class__ is ast.Name and holder.value.id == "self" \
            and OPTIONS_HOLDER.match(holder.attr):
        holder = ast.Name(id=holder.attr)
    if not (isinstance(holder, ast.Name) and holder.id != "self"):
        return None
    held = program.launch_candidates().get(node.attr)
    return held if held is not None and not _assigned(node.attr, program, holder.id) else None


def _answer(test: ast.AST, value: Any) -> Optional[bool]:
    """The test (a bare `args.<option>` or one comparison of it) on one launch's value."""
    if not isinstance(test, ast.Compare):
        return bool(value)
    if len(test.ops) != 1:
        return None
    op, right = test.ops[0], test.comparators[0]
    if isinstance(op, (ast.Is, ast.IsNot)) and isinstance(right, ast.Constant) and right.value is None:
        return (value is None) == isinstance(op, ast.Is)
    return _compare_constant(value, op, right)


def _declared_none(node: ast.AST, program: Program) -> bool:
    """`args.<option>` whose declared default is None (option_value cannot tell None from unknown)."""
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id != "self" \
        and node.attr in program.option_defaults() and program.option_defaults()[node.attr] is None \
        and not _assigned(node.attr, program, node.value.id)


def _required_text(node: ast.Attribute, program: Program) -> bool:
    """`args.<option>` of an option every run gives as a text (options.required_text_options),
    never assigned in the code."""
    return isinstance(node.value, ast.Name) and node.value.id != "self" and \
        node.attr in program.required_text_options() and not _assigned(node.attr, program, node.value.id)


def off_at_launch(conds: tuple, program: Program) -> str:
    """The first of the plain tests around a statement (as the walker says them, text and
    whether a flag) that the options, as launched, make false: "" where none is. The statement
    does not run on that launch; a bug there is one of a switched-off path."""
    memo = program.__dict__.setdefault("_ruled_out_memo", {})
    for cond, _ in conds:
        found = memo.get(cond)
        if found is None:
            test = parse_test(cond) if len(cond) < 400 else None
            found = memo[cond] = test is not None and settled(test, program) is False
        if found:
            return cond
    return ""


def count_at_launch(node: ast.AST, program: Program) -> Optional[int]:
    """An int the options settle: a constant, `args.epochs` (option_value), or `+` / `-` of
    such; None where anything in it is not settled."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        left, right = count_at_launch(node.left, program), count_at_launch(node.right, program)
        if left is None or right is None:
            return None
        return left + right if isinstance(node.op, ast.Add) else left - right
    value = option_value(node, program)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _continues(body: list) -> bool:
    """A `continue` of the loop these statements are the body of (not one of a nested loop's,
    nor of a nested def's)."""
    todo = list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Continue):
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            todo.extend(node.orelse)  # (a nested loop's `else:` belongs to the outer loop)
            continue
        todo.extend(ast.iter_child_nodes(node))
    return False


def runs_once_at_launch(loop: ast.AST, program: Program) -> bool:
    """`for epoch in range(args.epochs):` / `range(1, args.epochs + 1)` / `range(start, n)`
    where the options, as launched, make one pass at most (--epochs defaulting to 1); also a
    loop whose body ends in `return` with no `continue` of its own (SPENCER's `for idx in
    range(epochs): ...; return model`, indented one level too deep): one pass, whatever the
    options say."""
    if isinstance(loop, (ast.For, ast.AsyncFor, ast.While)) and loop.body and \
            isinstance(loop.body[-1], ast.Return) and not _continues(loop.body):
        return True
    if not (isinstance(loop, (ast.For, ast.AsyncFor)) and isinstance(loop.iter, ast.Call)
            and isinstance(loop.iter.func, ast.Name) and loop.iter.func.id == "range"
            and 1 <= len(loop.iter.args) <= 2 and not loop.iter.keywords):
        return False
    bounds = [count_at_launch(a, program) for a in loop.iter.args]
    if any(b is None for b in bounds):
        return False
    start, stop = (0, bounds[0]) if len(bounds) == 1 else bounds
    return stop - start <= 1


def ruled_out_by_arguments(reached: set) -> set:
    """The reached functions every call of which sits under a test that the constant its caller
    is always handed answers the other way: `init_dist('pytorch')` into `if launcher == 'pytorch':
    ... elif launcher == 'slurm': _init_dist_slurm()` never runs the SLURM set-up (NeuFlow's
    copy of mmcv's dispatcher). A function also handed on as a value (a `ref`), or called where
    the caller's parameter has a value that is no constant, stays reached; what only ruled-out
    functions call is ruled out too."""
    callers: dict[int, list] = {}
    for fn in reached:
        for event in fn.events:
            if event.kind in ("call", "ref"):
                for target in event.targets:
                    callers.setdefault(id(target), []).append((fn, event))
    out: set = set()
    changed = True
    while changed:
        changed = False
        for fn in reached:
            if fn in out or fn.parent is not None or id(fn) not in callers:
                continue
            if all(caller in out or (event.kind == "call" and _ruled_out(caller, event.node, callers))
                   for caller, event in callers[id(fn)]):
                out.add(fn)
                changed = True
    return out


def _ruled_out(caller, call: ast.AST, callers: dict) -> bool:
    """A test around the call (as the walker keeps it: `launcher == 'slurm'`, or `not launcher ==
    'pytorch'` past an if's body) is false for every value the caller is handed for the
    parameter it compares: all of them constants, one from each call into the caller (none left
    at its default, spread or handed on as a value), the parameter never bound again."""
    into = callers.get(id(caller), ())
    if not into or any(event.kind != "call" for _, event in into):
        return False
    def leaf(part: ast.AST) -> Optional[bool]:
        if part.__class__ is not ast.Compare or len(part.ops) != 1 or part.left.__class__ is not ast.Name:
            return None
        name = part.left.id
        if name not in caller.params or caller.bindings.get(name):
            return None
        handed = caller.arguments.get(name, [])
        if len(handed) != len(into) or not all(value.__class__ is ast.Constant for value, _ in handed):
            return None
        answers = {_compare_constant(value.value, part.ops[0], part.comparators[0]) for value, _ in handed}
        return answers.pop() if len(answers) == 1 else None
    for said, _flag in caller.__dict__.get("_call_conds", {}).get(id(call), ()):
        test = parse_test(said)
        if test is not None and three_valued(test, leaf) is False:
            return True
    return False
