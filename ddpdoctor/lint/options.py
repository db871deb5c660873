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
    for source in files:
        for node in source.of(ast.Call):
            if last_name(node.func) != "add_argument" or not node.args or \
                    not isinstance(node.args[0], ast.Constant) or not isinstance(node.args[0].value, str):
                continue
            dest, default = keyword(node, "dest"), keyword(node, "default")
            name = dest.value if isinstance(dest, ast.Constant) else node.args[0].value.lstrip("-").replace("-", "_")
            value = default.value if isinstance(default, ast.Constant) else None
            required = keyword(node, "required")
            if isinstance(required, ast.Constant) and required.value is True:
                continue  # (`required=True`: every run gives it, whatever `default=` says)
            action = keyword(node, "action")
            switch = default is None and isinstance(action, ast.Constant) and action.value in ("store_true", "store_false")
            if switch:
                value = action.value == "store_false"  # a switch's default: the opposite of what giving it stores
            if default is not None or switch:
                defaults[name] = None if name in defaults and defaults[name] != value else value
    return defaults


def declared_options(files: list) -> dict[str, str]:
    """Every option the files declare, by its dest name, with its action where it is a switch
    (`store_true` / `store_false`, which a launch gives without a value), else ""."""
    found: dict[str, str] = {}
    for source in files:
        for node in source.of(ast.Call):
            if last_name(node.func) != "add_argument" or not node.args or \
                    not isinstance(node.args[0], ast.Constant) or not isinstance(node.args[0].value, str) or \
                    not node.args[0].value.startswith("--"):
                continue
            dest = keyword(node, "dest")
            name = dest.value if isinstance(dest, ast.Constant) and isinstance(dest.value, str) else \
                node.args[0].value.lstrip("-").replace("-", "_")
            action = keyword(node, "action")
            found[name] = action.value if isinstance(action, ast.Constant) and \
                action.value in ("store_true", "store_false") else ""
    return found
