"""Command-line options' defaults as the source declares them (`add_argument("--x", default=0)`,
absl's `flags.DEFINE_integer("x", 0, ...)`, a python-fire function's parameters).

What a script does when run without flags: the value a rule may reason about on the default path.
"""

from __future__ import annotations

import ast

from ddpdoctor.lint.patterns import keyword, last_name


def option_defaults(files: list) -> dict[str, object]:
    """Each option's constant default by its dest name; None where two declarations disagree
    or the default is not a constant (unknown). Options without a default are left out."""
    defaults: dict[str, object] = {}
    for name, _, default, required, action in _declarations(files):
        value = default.value if isinstance(default, ast.Constant) else None
        if required:
            continue  # (`required=True`: every run gives it, whatever `default=` says)
        if default is None and action:
            value = action == "store_false"  # a switch's default: the opposite of what giving it stores
        if default is not None or action:
            defaults[name] = None if name in defaults and defaults[name] != value else value
    return defaults


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


def _declarations(files: list):
    """(dest, option strings, the default's node or None, required, switch action) of each
    option the files declare: each `add_argument` call (the dest is `dest=`, else the first
    long option's name, as argparse names it: `-a, --accum-iter` is accum_iter), and each
    parameter of a function handed to python-fire (`fire.Fire(main)`: `--gradient_accumulation_steps 4`
    sets `main`'s parameter; a boolean one is given bare, `--with_tracking`)."""
    for source in files:
        # (kept on each file: the options are asked for again each time the program reads one
        # more file, and a scan of every call of every file each time cost a 176-file package
        # a tenth of its lint)
        found = source.__dict__.get("_option_declarations")
        if found is None:
            found = source.__dict__["_option_declarations"] = list(_declared_in(source))
        yield from found


def _declared_in(source):
    """_declarations of one file."""
    for node in source.of(ast.Call):
        name = last_name(node.func)
        if name == "Fire" and node.args:
            yield from _fire_parameters(source, node.args[0])
            continue
        if name in ABSL_DEFINES and len(node.args) >= 2 and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            # absl's `flags.DEFINE_integer("num_workers", 0, "...")`, read as `FLAGS.num_workers`
            yield node.args[0].value, [f"--{node.args[0].value}"], node.args[1], False, ""
            continue
        if name not in ("add_argument", "add", "add_arg") or not node.args or \
                not isinstance(node.args[0], ast.Constant) or not isinstance(node.args[0].value, str):
            continue
        if name != "add_argument" and not node.args[0].value.startswith("-"):
            continue  # (configargparse's `p.add("--debug", ...)`, its alias; not a set's `add("x")`)
        flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        dest = keyword(node, "dest")
        first = next((f for f in flags if f.startswith("--")), flags[0])
        name = dest.value if isinstance(dest, ast.Constant) and isinstance(dest.value, str) else \
            first.lstrip("-").replace("-", "_")
        required = keyword(node, "required")
        yield name, flags, keyword(node, "default"), \
            isinstance(required, ast.Constant) and required.value is True, _switch(node)


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
