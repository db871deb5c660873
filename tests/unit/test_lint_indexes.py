"""The lint's indexes built once per program give what the walks they replaced gave: a
function's own nodes in the same order, a file's nodes by class in walk order, DDP808's owner
index from the program's functions equal to the one from a walk of every node, the loops of a
body found through its statements alone. Checked over the lint's own sources (real code, many
shapes) and one file written for the corner cases (a lambda and a class inside a function)."""

import ast
from pathlib import Path

from ddpdoctor.lint import fact_builder, nodes, program, worker_seeds
from ddpdoctor.lint.sources import SourceFile

HERE = Path(__file__).resolve().parents[2]
SOURCES = [HERE / "ddpdoctor" / "lint" / name for name in ("program.py", "fact_builder.py", "loader_facts.py", "worker_seeds.py", "ranks.py")]
CORNERS = '''
import functools
from torch.utils.data import DataLoader

def outer(ds, seed):
    init = lambda wid: functools.partial(print, seed=wid)
    class Local:
        factor = seed * 2
        def method(self):
            x = DataLoader(ds, worker_init_fn=lambda w: w)
            return x
    for epoch in range(3):
        while epoch:
            with open("f") as h:
                cfg = h.read()
    else:
        cfg = None
    return DataLoader(ds, worker_init_fn=init), Local, cfg

@functools.lru_cache(maxsize=(lambda: 4)())
def decorated():
    try:
        for i in range(2):
            pass
    except ValueError:
        while True:
            break
    finally:
        async_ = [j for j in range(3)]
'''


def _trees():
    yield "corners", ast.parse(CORNERS)
    for path in SOURCES:
        yield path.name, ast.parse(path.read_text())


def _stack_walk(root, stop):
    """The walk the indexes replaced: pop the last child first, each node before its children."""
    stack = nodes.children(root)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, stop):
            stack.extend(nodes.children(node))


def test_a_functions_own_nodes_come_in_the_order_of_a_stack_walk():
    stop = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
    for name, tree in _trees():
        for root in [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))]:
            got = program._own_nodes(root)
            assert len(got) == len(list(_stack_walk(root, stop)))
            assert all(a is b for a, b in zip(got, _stack_walk(root, stop))), (name, getattr(root, "name", ""))


def test_a_modules_top_level_nodes_include_class_bodies_and_decorators_not_function_bodies():
    def reference(tree):
        stack = nodes.children(tree)
        while stack:
            node = stack.pop()
            yield node
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                stack.extend(node.decorator_list if not isinstance(node, ast.Lambda) else [])
                continue
            stack.extend(nodes.children(node))

    for name, tree in _trees():
        expected = list(reference(tree))
        got = program._module_nodes(tree)
        assert len(got) == len(expected) and all(a is b for a, b in zip(got, expected)), name


def test_nodes_of_a_class_come_in_walk_order_and_statements_are_counted_by_class():
    for name, tree in _trees():
        source = SourceFile(Path(name), name, name, tree)
        walked = nodes.walk(tree)
        for kinds in [(ast.Call,), (ast.Assign,), (ast.Import, ast.ImportFrom), (ast.FunctionDef, ast.AsyncFunctionDef),
                      (ast.Lambda,)]:
            expected = [n for n in walked if n.__class__ in kinds]
            got = source.of(*kinds)
            assert len(got) == len(expected) and all(a is b for a, b in zip(got, expected)), (name, kinds)
        assert source.statements == sum(1 for n in walked if isinstance(n, ast.stmt))


def test_loops_are_found_through_the_statements_alone_in_the_same_order():
    def reference(root, depth):
        for child in nodes.children(root):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            if isinstance(child, (ast.For, ast.AsyncFor, ast.While)):
                yield child, depth
                yield from reference(child, depth + 1)
            else:
                yield from reference(child, depth)

    seen = 0
    for name, tree in _trees():
        for root in [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.For, ast.While)))]:
            expected = list(reference(root, 0))
            got = list(fact_builder._loops(root, 0))
            seen += len(got)
            assert [(id(n), d) for n, d in got] == [(id(n), d) for n, d in expected], name
    assert seen > 20


def test_the_worker_seeding_index_from_the_programs_functions_equals_the_walk_of_every_node():
    for name, tree in _trees():
        source = SourceFile(Path(name), name, name, tree)
        prog = program.Program([source])
        walked = worker_seeds._Files([source])
        indexed = worker_seeds._Files([source], prog.functions)
        for node in source.nodes:
            if isinstance(node, worker_seeds._OWNED):
                assert walked.owner.get(id(node)) is indexed.owner.get(id(node)), (name, node, node.lineno)
        assert {k: len(v) for k, v in walked.functions.items()} == {k: len(v) for k, v in indexed.functions.items()}
        def pairs(index):
            return [(k, id(v), id(s)) for k, found in index.attr_values.items() for v, s in found]

        assert pairs(walked) == pairs(indexed)
