"""Command-line options' defaults as the source declares them (`add_argument("--x", default=0)`,
absl's `flags.DEFINE_integer("x", 0, ...)`, a python-fire function's parameters).

What a script does when run without flags: the value a rule may reason about on the default path.
"""

from __future__ import annotations

import ast
from typing import Optional

from ddpdoctor.lint.patterns import keyword, last_name


def option_defaults(files: list) -> dict[str, object]:
    """Each option's constant default by its dest name; None where two declarations disagree
    or the default is not a constant (unknown). Options without a default are left out."""
    defaults: dict[str, object] = {}
    for name, _, default, required, action in _declarations(files):
        value = _constant(default)
        if required:
            continue  # (`required=True`: every run gives it, whatever `default=` says)
        if default is None and action:
            value = action == "store_false"  # a switch's default: the opposite of what giving it stores
        if default is not None or action:
            defaults[name] = None if name in defaults and defaults[name] != value else value
    return defaults


def _constant(node: Optional[ast.AST]) -> object:
    """A default the source spells as a constant: `8`, `"adam"`, and a negative number
    (`default=-1` is `-` applied to 1 in the syntax tree); None for anything else."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and type(node.operand.value) in (int, float):
        return -node.operand.value
    return node.value if isinstance(node, ast.Constant) else None


def declared_options(files: list) -> dict[str, tuple[str, str]]:
    """Each long option a command line may spell (`accum_iter` for `--accum-iter`), with the
    dest it stores into and its action where it is a switch (`store_true` / `store_false`,
    given without a value), else ""."""
    found: dict[str, tuple[str, str]] = {}
    for name, flags, _, _, action in _declarations(files):
        for flag in flags:
            if flag.startswith("--"):
                found[flag[2:].replace("-", "_")] = (name, action)
    return found


def config_file_options(files: list) -> list[tuple[str, object]]:
    """(dest, its declared default) of configargparse's config-file options (`add_argument("-c",
    "--config", is_config_file=True, default="config/base.conf")`): the file it names sets the
    other options, over their declared defaults and under the command line."""
    found = []
    for source in files:
        for node in source.of(ast.Call):
            if last_name(node.func) in ("add_argument", "add") and node.args and any(
                    k.arg in ("is_config_file", "is_config_file_arg") and isinstance(k.value, ast.Constant)
                    and k.value.value is True for k in node.keywords):
                flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
                dest = keyword(node, "dest")
                first = next((f for f in flags if f.startswith("--")), flags[0] if flags else "")
                name = dest.value if isinstance(dest, ast.Constant) and isinstance(dest.value, str) else \
                    first.lstrip("-").replace("-", "_")
                default = keyword(node, "default")
                if name:
                    found.append((name, default.value if isinstance(default, ast.Constant) else None))
    return found


def _declarations(files: list):
    """(dest, option strings, the default's node or None, required (_required), switch action) of each
    option the files declare: each `add_argument` call (the dest is `dest=`, else the first
    long option's name, as argparse names it: `-a, --accum-iter` is accum_iter), and each
    parameter of a function handed to python-fire (`fire.Fire(main)`: `--gradient_accumulation_steps 4`
    sets `main`'s parameter; a boolean one is given bare, `--with_tracking`)."""
    helpers = None  # (the union of each file's kept answer: asked once per call)
    referenced = None  # (the names any file reads: asked once per call, where a parser sits in a function)
    for source in files:
        # (kept on each file: the options are asked for again each time the program reads one
        # more file, and a scan of every call of every file each time cost a 176-file package
        # a tenth of its lint)
        # (again where the dict-declaring helpers found, or the files a call of one reads its
        # dict from, have grown since: the script's own declarations are read before the
        # package that holds the helper)
        kept = source.__dict__.get("_option_declarations")
        if helpers is None:
            helpers = _dict_declarers(files)
        if kept is None or kept[0] != helpers or (kept[1] and kept[2] != len(files)):
            found = list(_declared_in(source, helpers, files))
            calls = any(last_name(node.func) in helpers for node in source.of(ast.Call)) if helpers else False
            kept = source.__dict__["_option_declarations"] = (helpers, calls, len(files), found)
        for *declared, holder in kept[3]:
            # (not an option of a parser function nothing calls: `def define_args():` in a
            # utilities module, beside the script's own parser - it declares another run's options)
            if holder:
                referenced = referenced if referenced is not None else _referenced(files)
                if holder not in referenced:
                    continue
            yield tuple(declared)


def _referenced(files: list) -> frozenset:
    """Every name and attribute the files read (`define_args()`, `utils.get_parser()`): the
    functions some code may call."""
    found: set = set()
    for source in files:
        found.update(node.id for node in source.of(ast.Name))
        found.update(node.attr for node in source.of(ast.Attribute))
    return frozenset(found)


def _dict_declarers(files: list) -> frozenset:
    """The names of the functions that declare an option for each key of a dict they are handed
    (guided-diffusion's `add_dict_to_argparser(parser, defaults)`: `for k, v in d.items():
    parser.add_argument(f"--{k}", default=v, ...)`)."""
    found: set = set()
    for source in files:
        found |= _dict_declarers_in(source)
    return frozenset(found)


def _dict_declarers_in(source) -> frozenset:
    """_dict_declarers of one file, kept on it (asked again as the program reads more files)."""
    kept = source.__dict__.get("_dict_declarers")
    if kept is not None:
        return kept
    found = set()
    joined = "\n".join(source.lines) if getattr(source, "tree", None) is not None else ""
    if "items()" in joined and "add_argument" in joined:
        for fn in source.of(ast.FunctionDef):
            params = [a.arg for a in fn.args.args]
            for loop in (n for n in ast.walk(fn) if isinstance(n, ast.For)):
                declared = _declaring_loop(loop)
                if declared is not None and declared[0] in params:
                    found.add(fn.name)
    kept = source.__dict__["_dict_declarers"] = frozenset(found)
    return kept


def _declaring_loop(loop: ast.For) -> Optional[tuple[str, bool]]:
    """`for k, v in d.items(): parser.add_argument(f"--{k}", ...)`, a loop that declares an
    option for each key of a dict: ("d", whether each option's `default=` is the key's value `v`);
    None for any other loop."""
    target, held = loop.target, loop.iter
    if not (isinstance(held, ast.Call) and isinstance(held.func, ast.Attribute) and held.func.attr == "items"
            and isinstance(held.func.value, ast.Name) and isinstance(target, ast.Tuple)
            and len(target.elts) == 2 and isinstance(target.elts[0], ast.Name)):
        return None
    key, value = target.elts[0].id, getattr(target.elts[1], "id", None)
    declares = [c for stmt in loop.body for c in ast.walk(stmt)
                if isinstance(c, ast.Call) and last_name(c.func) == "add_argument" and c.args
                and isinstance(c.args[0], ast.JoinedStr) and any(
                    isinstance(part, ast.FormattedValue) and isinstance(part.value, ast.Name)
                    and part.value.id == key for part in c.args[0].values)]
    if not declares:
        return None
    return held.func.value.id, any(isinstance(keyword(c, "default"), ast.Name) and keyword(c, "default").id == value
                                   for c in declares)


def _dict_items(value: ast.AST, scope: ast.AST, files: list, depth: int = 6,
                seen: Optional[set] = None) -> list[tuple[str, ast.AST]]:
    """(key, value) pairs of a dict the source spells out: `dict(lr=1e-4, ...)`, `{"lr": 1e-4}`,
    a name bound to one in scope (with the `.update(...)`s of it there), or a call of a function
    of the files read that returns one (`model_and_diffusion_defaults()`). Each name and function
    is followed once (seen): a file of a hundred `d.update(f())` costs a hundred steps, not a
    hundred to the depth."""
    seen = set() if seen is None else seen
    if depth <= 0:
        return []
    if isinstance(value, ast.Call) and last_name(value.func) == "dict" and not value.args:
        return [(k.arg, k.value) for k in value.keywords if k.arg is not None]
    if isinstance(value, ast.Dict):
        return [(k.value, v) for k, v in zip(value.keys, value.values)
                if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    if isinstance(value, ast.Name) and scope is not None and (id(scope), value.id) not in seen:
        seen.add((id(scope), value.id))
        pairs = []
        for node in ast.walk(scope):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                    and node.targets[0].id == value.id:
                pairs += _dict_items(node.value, scope, files, depth - 1, seen)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "update" \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == value.id and node.args:
                pairs += _dict_items(node.args[0], scope, files, depth - 1, seen)
        return pairs
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id not in seen:
        seen.add(value.func.id)
        for source in files:
            for fn in source.of(ast.FunctionDef) if getattr(source, "tree", None) is not None else ():
                if fn.name == value.func.id:
                    returned = [n.value for n in ast.walk(fn) if isinstance(n, ast.Return) and n.value is not None]
                    if len(returned) == 1:
                        return _dict_items(returned[0], fn, files, depth - 1, seen)
    return []


def _declared_in(source, helpers: frozenset = frozenset(), files: tuple = ()):
    """_declarations of one file. helpers: the functions that declare a dict's keys as options
    (_dict_declarers), each call of them declaring the keys of the dict it hands over."""
    for node in source.of(ast.Call):
        name = last_name(node.func)
        if name in helpers and len(node.args) >= 2:
            scope = _enclosing_def(source, node)
            for key, default in _dict_items(node.args[1], scope, list(files))[:MAX_DICT_OPTIONS]:
                yield key, [f"--{key}"], default, False, "", ""
            continue
        if name == "Fire" and node.args:
            yield from ((*declared, "") for declared in _fire_parameters(source, node.args[0]))
            continue
        if name in ABSL_DEFINES and len(node.args) >= 2 and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            # absl's `flags.DEFINE_integer("num_workers", 0, "...")`, read as `FLAGS.num_workers`
            yield node.args[0].value, [f"--{node.args[0].value}"], node.args[1], False, "", ""
            continue
        if name not in ("add_argument", "add", "add_arg", "add_option") or not node.args or \
                not isinstance(node.args[0], ast.Constant) or not isinstance(node.args[0].value, str):
            continue
        if name != "add_argument" and not node.args[0].value.startswith("-"):
            continue  # (configargparse's `p.add("--debug", ...)`, its alias, and optparse's `add_option`; not a set's `add("x")`)
        flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        dest = keyword(node, "dest")
        first = next((f for f in flags if f.startswith("--")), flags[0])
        name = dest.value if isinstance(dest, ast.Constant) and isinstance(dest.value, str) else \
            first.lstrip("-").replace("-", "_")
        # (the function holding the parser, where the file's tree is at hand: one nothing calls
        # declares no option of this run - _declarations)
        holder = _enclosing_def(source, node) if getattr(source, "tree", None) is not None else None
        yield name, flags, keyword(node, "default"), _required(node), _switch(node), \
            holder.name if isinstance(holder, (ast.FunctionDef, ast.AsyncFunctionDef)) else ""


def _required(node: ast.Call) -> str:
    """"text" for an option every run must give as one text (`required=True`, no type but str,
    no nargs, no choices: its value is what the command line spells, true wherever tested), "value"
    for another required one, "" for an option a run may leave out."""
    required = keyword(node, "required")
    if not (isinstance(required, ast.Constant) and required.value is True):
        return ""
    kind = keyword(node, "type")
    text = (kind is None or isinstance(kind, ast.Name) and kind.id == "str") and \
        keyword(node, "nargs") is None and keyword(node, "choices") is None and keyword(node, "action") is None
    return "text" if text else "value"


def required_text_options(files: list) -> frozenset:
    """The dests of the options every run gives as a text of its own (_required): a test of one
    (`if args.hf_repo:`) holds on every run."""
    return frozenset(name for name, _, _, required, _ in _declarations(files) if required == "text")


def yaml_loop_configs(files: list) -> list[tuple[object, str]]:
    """(source, file name) of each YAML file whose top-level keys a loop declares as options:
    `for k, v in cfg.items(): parser.add_argument(f"--{k}", default=v, type=type(v))`, `cfg` bound
    in the same function (or module) to a call handed the file's name as a constant
    (`yaml_config_hook("./configs/aiec.yaml")`, `yaml.safe_load(open("c.yaml"))`): each key an
    option whose default is the file's value."""
    found = []
    for source in files:
        for loop in source.of(ast.For):
            declared = _declaring_loop(loop)
            if declared is None or not declared[1]:
                continue  # (the file's values are the defaults only where `default=v`)
            held = declared[0]
            names = [c.value for node in ast.walk(_enclosing_def(source, loop))
                     if isinstance(node, ast.Assign) and len(node.targets) == 1
                     and isinstance(node.targets[0], ast.Name) and node.targets[0].id == held
                     for c in ast.walk(node.value) if isinstance(c, ast.Constant) and isinstance(c.value, str)
                     and c.value.endswith((".yaml", ".yml"))]
            if len(names) == 1:
                found.append((source, names[0]))
    return found


# the options one dict-declaring call may add (a config dict of thousands of keys is not options)
MAX_DICT_OPTIONS = 500


def _enclosing_def(source, node: ast.AST) -> ast.AST:
    """The innermost function of the file around node (or the module)."""
    best = source.tree
    for fn in source.of(ast.FunctionDef):
        if fn.lineno <= node.lineno <= (fn.end_lineno or fn.lineno) and (
                best is source.tree or fn.lineno >= best.lineno):
            best = fn
    return best


# absl.flags' declarations: the flag's name, then its default.
ABSL_DEFINES = frozenset({"DEFINE_integer", "DEFINE_string", "DEFINE_bool", "DEFINE_boolean", "DEFINE_float",
                          "DEFINE_enum"})


def _fire_parameters(source, target: ast.AST):
    """The parameters of the module-level function `fire.Fire(fn)` is handed, as options."""
    if not isinstance(target, ast.Name) or getattr(source, "tree", None) is None:
        return
    fn = next((n for n in source.tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
               and n.name == target.id), None)
    if fn is None:
        return
    arguments = fn.args
    positional = [*arguments.posonlyargs, *arguments.args]
    pairs = [*zip(positional[len(positional) - len(arguments.defaults):], arguments.defaults),
             *((a, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None)]
    for arg, default in pairs:
        switch = "store_true" if isinstance(default, ast.Constant) and isinstance(default.value, bool) else ""
        yield arg.arg, [f"--{arg.arg}"], default, False, switch


def _switch(node: ast.Call) -> str:
    action = keyword(node, "action")
    return action.value if isinstance(action, ast.Constant) and action.value in ("store_true", "store_false") else ""
