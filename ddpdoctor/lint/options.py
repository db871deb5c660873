"""Command-line options' defaults as the source declares them (`add_argument("--x", default=0)`).

What a script does when run without flags: the value a rule may reason about on the default path.
"""

from __future__ import annotations

import ast

from ddpdoctor.lint.patterns import keyword, last_name


def option_defaults(files: list) -> dict[str, object]:
    """Each option's constant default by its dest name; None where two declarations disagree
    or the default is not a constant (unknown). Options without a default are left out."""
    defaults: dict[str, object] = {}
    for name, _, node in _declarations(files):
        default = keyword(node, "default")
        value = default.value if isinstance(default, ast.Constant) else None
        required = keyword(node, "required")
        if isinstance(required, ast.Constant) and required.value is True:
            continue  # (`required=True`: every run gives it, whatever `default=` says)
        action = _switch(node)
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
    for name, flags, node in _declarations(files):
        for flag in flags:
            if flag.startswith("--"):
                found[flag[2:].replace("-", "_")] = (name, _switch(node))
    return found


def _declarations(files: list):
    """(dest, option strings, the call) of each `add_argument` the files make: the dest is
    `dest=`, else the first long option's name, as argparse names it (`-a, --accum-iter`:
    accum_iter)."""
    for source in files:
        for node in source.of(ast.Call):
            if last_name(node.func) != "add_argument" or not node.args or \
                    not isinstance(node.args[0], ast.Constant) or not isinstance(node.args[0].value, str):
                continue
            flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            dest = keyword(node, "dest")
            first = next((f for f in flags if f.startswith("--")), flags[0])
            name = dest.value if isinstance(dest, ast.Constant) and isinstance(dest.value, str) else \
                first.lstrip("-").replace("-", "_")
            yield name, flags, node


def _switch(node: ast.Call) -> str:
    action = keyword(node, "action")
    return action.value if isinstance(action, ast.Constant) and action.value in ("store_true", "store_false") else ""
