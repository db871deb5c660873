"""lint/nodes.py takes a list field whole, without a test per item, except the few list fields
that may hold None or names (nodes._LOOSE): the walks still give exactly ast.walk's nodes, and
own_nodes exactly a stack walk's, on code that has each of those fields."""

import ast

from ddpdoctor.lint import nodes

LOOSE_FIELDS = '''
counter = 0
def f(a, *, flag, other=1):
    global counter
    merged = {**a, "k": 1}
    def inner():
        nonlocal merged
        return merged
    match a:
        case Point(x, y=2, z=w):
            return {**merged}
    return [lambda q: q, {k: v for k, v in a.items()}]
'''


def _reference_own(root, stop=nodes._SCOPES):
    """The stack walk own_nodes replaced: one isinstance test per child."""
    out, stack = [], list(ast.iter_child_nodes(root))
    while stack:
        node = stack.pop()
        out.append(node)
        if isinstance(node, stop):
            continue
        stack.extend(ast.iter_child_nodes(node))
    return [n for n in out if not isinstance(n, ast.expr_context)]


def test_walk_keeps_none_keys_and_name_lists_out():
    tree = ast.parse(LOOSE_FIELDS)
    expected = [n for n in ast.walk(tree) if not isinstance(n, ast.expr_context)]
    got = nodes.walk(tree)
    assert len(got) == len(expected) and all(a is b for a, b in zip(got, expected))
    assert all(isinstance(n, ast.AST) for n in got)


def test_own_nodes_equal_the_stack_walk_per_function():
    tree = ast.parse(LOOSE_FIELDS)
    for root in [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.Lambda)))]:
        got, expected = nodes.own_nodes(root), _reference_own(root)
        assert len(got) == len(expected) and all(a is b for a, b in zip(got, expected)), root


def test_loose_fields_are_the_only_lists_with_other_items():
    tree = ast.parse(LOOSE_FIELDS)
    seen = set()
    for node in ast.walk(tree):
        for name, value in ast.iter_fields(node):
            if isinstance(value, list) and any(not isinstance(i, ast.AST) for i in value):
                seen.add((node.__class__, name))
    assert seen == {(ast.Dict, "keys"), (ast.arguments, "kw_defaults"), (ast.Global, "names"),
                    (ast.Nonlocal, "names"), (ast.MatchClass, "kwd_attrs")}
    assert seen == nodes._LOOSE
