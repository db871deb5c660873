"""Whether a method call's receiver is provably a library's object.

`program.resolve` guesses a call's target by its method name when nothing is known of the
receiver (`trainer.save(n)` with `trainer` a parameter: the script's own `Trainer.save`). The
guess is wrong when the source shows the receiver was made by a library: `frames[0].save(...)`
over a list of PIL images, `still = Image.fromarray(a); still.save(p)`. Taken by name, such a call
made the script's checkpoint `save` look called without a rank test (a false DDP806 on
lucidrains/stylegan2-pytorch). Only what the source proves counts: a receiver nothing is known
of keeps the guess.
"""

from __future__ import annotations

import ast
from typing import Optional

from ddpdoctor.lint.nodes import walk

_ADDS = frozenset(("append", "insert", "extend"))


def library_made(program, node: ast.AST, fn, depth: int = 3, judging: frozenset = frozenset()) -> bool:
    """node's value is, on every way the source gives, made by an imported library (or a plain
    constant): never an instance of the script's own classes. judging: the calls (by id) being
    judged on the way here."""
    if depth <= 0:
        return False
    if node.__class__ is ast.Call or isinstance(node, (ast.Constant, ast.JoinedStr)):
        return _value_library_made(program, node, fn, depth, judging)
    if node.__class__ is ast.Subscript:  # `frames[0]`: an element of a container
        return _elements_library_made(program, node.value, fn, depth - 1)
    if node.__class__ is ast.Name and not program.lookup(node.id, fn):
        iterated = _iterated_over(node.id, fn)  # `for i, frame in enumerate(frames)`
        if iterated is not None:
            return _elements_library_made(program, iterated, fn, depth - 1)
    values = program.values_of(node, fn, depth)
    if node.__class__ is ast.Name and all(value is node for value, _ in values):
        # `engine, *_ = deepspeed.initialize(...)`: an element of what a library call returns
        made = _unpacked_from(node.id, fn)
        if made:
            return all(_value_library_made(program, call, fn, depth - 1, judging) for call in made)
    return bool(values) and all(value is not node and _value_library_made(program, value, scope, depth - 1, judging)
                                for value, scope in values)


def _unpacked_from(name: str, fn) -> list:
    """The calls fn unpacks into a tuple of names holding `name` (a starred rest allowed), or
    `self.<attr>` where name is written so. Indexed once per function by name: asked for every
    name whose receiver is judged (342 asks of one module's 20,000 nodes on h63H_brisknet)."""
    index = fn.__dict__.get("_unpacked_by_name")
    if index is None:
        index = fn.__dict__["_unpacked_by_name"] = {}
        for node in fn.own_of(ast.Assign):
            if len(node.targets) == 1 and isinstance(node.targets[0], (ast.Tuple, ast.List)) \
                    and node.value.__class__ is ast.Call:
                for held in {_named(t.value if isinstance(t, ast.Starred) else t) for t in node.targets[0].elts}:
                    index.setdefault(held, []).append(node.value)
    return index.get(name, [])


def _named(target: ast.AST) -> str:
    if target.__class__ is ast.Name:
        return target.id
    if target.__class__ is ast.Attribute and target.value.__class__ is ast.Name:
        return f"{target.value.id}.{target.attr}"
    return ""


def _value_library_made(program, value: ast.AST, scope, depth: int, judging: frozenset = frozenset()) -> bool:
    if isinstance(value, (ast.Constant, ast.JoinedStr)):
        return True
    if value.__class__ is not ast.Call:
        return False
    if id(value) in judging:
        return True  # `img = img.convert("L")`: made from itself, the other values decide
    if program.callee(value.func, scope) is not None:
        return False  # the script's own function or class: it may well return its own objects
    root, calls = value.func, [value]
    while root.__class__ in (ast.Attribute, ast.Call):  # `T.ToPILImage()(x)`, `img.convert("L")`
        if root.__class__ is ast.Call:
            calls.append(root)
        root = root.value if root.__class__ is ast.Attribute else root.func
    # (a keyword's attribute of a config, `GradScaler(enabled=cfg.AMP)`, is a setting, not an
    # object handed back)
    if any(_may_be_own(program, arg, scope) for call in calls
           for arg in [*call.args, *(kw.value for kw in call.keywords if kw.value.__class__ is not ast.Attribute)]):
        return False  # `accelerator.prepare(model)`, `torch.compile(model)`: hands the object back
    if root.__class__ is not ast.Name:
        return False
    if root.id in scope.module.imports and not program.lookup(root.id, scope):
        return program.symbol(root.id, scope) is None  # an import of a local module is the script's
    return library_made(program, root, scope, depth, judging | {id(value)})  # a library object's method


def _may_be_own(program, arg: ast.AST, scope) -> bool:
    """An argument that is, or may be, an instance of the script's classes: a library call given it
    may return it (a wrapper, a copy)."""
    if arg.__class__ is ast.Starred or program.class_of(arg, scope) is not None:
        return True
    if arg.__class__ in (ast.Name, ast.Attribute):
        return any(value is arg for value, _ in program.values_of(arg, scope))  # nothing known of it
    return False


def _elements_library_made(program, container: ast.AST, fn, depth: int) -> bool:
    if depth <= 0:
        return False
    values = program.values_of(container, fn, depth)
    if not values:
        return False
    for value, scope in values:
        if isinstance(value, (ast.List, ast.Tuple, ast.Set)):
            if any(e.__class__ is ast.Starred for e in value.elts):
                return False
            elements = list(value.elts)
            added = _added(container, scope)
            if added is None:
                return False
            if not all(_value_library_made(program, e, scope, depth - 1) for e in elements):
                return False
            for item, extended in added:
                ok = _elements_library_made(program, item, scope, depth - 1) if extended \
                    else library_made(program, item, scope, depth - 1)
                if not ok:
                    return False
        elif isinstance(value, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            if not _value_library_made(program, value.elt, scope, depth - 1):
                return False
        elif not _value_library_made(program, value, scope, depth - 1):
            return False  # a library call's result holds the library's objects
    return True


def _added(container: ast.AST, scope):
    """What the function adds to a list it names: [(value, extended)]; None when the list is
    changed in a way not followed (`frames += more`)."""
    if container.__class__ is not ast.Name:
        return []
    name, out = container.id, []
    for node in scope.own:
        if node.__class__ is ast.AugAssign and node.target.__class__ is ast.Name and node.target.id == name:
            return None
        if node.__class__ is ast.Call and node.func.__class__ is ast.Attribute \
                and node.func.attr in _ADDS and node.func.value.__class__ is ast.Name \
                and node.func.value.id == name and node.args:
            out.append((node.args[-1], node.func.attr == "extend"))
    return out


def _iterated_over(name: str, fn):
    """The iterable `for name in X` or `for i, name in enumerate(X)` walks in fn, if one only."""
    found = []
    for node in fn.own_of(ast.For, ast.AsyncFor):
        target, source = node.target, node.iter
        if target.__class__ is ast.Name and target.id == name:
            found.append(source)
        elif target.__class__ is ast.Tuple and len(target.elts) == 2 and target.elts[1].__class__ is ast.Name \
                and target.elts[1].id == name and source.__class__ is ast.Call \
                and source.func.__class__ is ast.Name and source.func.id == "enumerate" and source.args:
            found.append(source.args[0])
        elif _binds(target, name):
            return None  # bound some other way (`for a, b in zip(x, y)`): not followed
    return found[0] if len(found) == 1 else None


def _binds(target: ast.AST, name: str) -> bool:
    return any(n.__class__ is ast.Name and n.id == name for n in walk(target))


def sole_holder(program, klass) -> Optional[tuple]:
    """(function, name) where every object of a local class the source makes is kept: each
    `Restorer(...)` is bound to that one name of that one function, which only calls methods on
    it (never hands it on, returns, stores or captures it elsewhere), and no class derives from
    it. None where the class may be held anywhere else (a list, an attribute, a factory, a
    subclass, a name in a module not read yet). Then only that name can be its receiver: a
    `scheduler.step()` elsewhere is no call of its `step`, whatever the name guessed."""
    memo = program.__dict__.setdefault("_sole_holder", {})
    key = (id(klass), len(program.files))
    if key not in memo:
        memo[key] = _sole_holder(program, klass)
    return memo[key]


def _builds(source) -> dict:
    """A module's `x = Name(...)` / `x = mod.Name(...)` by the called name: {id(func): assign}.
    Once per module: asked for every local class a receiver may be (466 classes on
    h64D_rlalgo_dppo, each of them scanning every module's assignments)."""
    held = source.__dict__.get("_builds_by_name")
    if held is not None and held[0] is source.tree:
        return held[1]
    index: dict = {}
    source.__dict__["_builds_by_name"] = (source.tree, index)  # (a quiet module read later: built anew)
    if source.tree is not None:
        for a in source.of(ast.Assign):
            if len(a.targets) == 1 and a.targets[0].__class__ is ast.Name and a.value.__class__ is ast.Call:
                func = a.value.func
                called = func.id if func.__class__ is ast.Name else func.attr if func.__class__ is ast.Attribute else None
                if called is not None:
                    index.setdefault(called, {})[id(func)] = a
    return index


def _sole_holder(program, klass) -> Optional[tuple]:
    name = klass.name
    if program._children().get(klass):
        return None
    if name in _unread_words(program):
        return None  # a module not read yet names it
    made = []
    # (the files that spell the name, in no particular order: any one naming the class otherwise
    # answers None, and the holders are a set)
    wanted = _class_names(program)
    spelling = _files_naming(program).get(name, ()) if name in wanted else \
        [source for source in program.files if _names_in(source, frozenset({name})).get(name)]
    for source in spelling:
        refs = _names_in(source, wanted if name in wanted else frozenset({name}))[name]
        builds = _builds(source).get(name, {})
        if any(id(ref) not in builds for ref in refs):
            return None  # named otherwise: handed to a factory, a base, an annotation, a registry
        made += [(source, a) for a in builds.values()]
    # (each assignment's own file's functions only, and their assignments only: `a` is one)
    by_file = _functions_by_file(program)
    holders = {(fn, a.targets[0].id) for source, a in made for fn in by_file.get(id(source), ())
               if fn.node is not None
               and getattr(fn.node, "lineno", 1) <= a.lineno <= getattr(fn.node, "end_lineno", a.lineno)
               and any(n is a for n in fn.own_of(ast.Assign))}
    if len(holders) != 1 or len(made) == 0:
        return None
    fn, held = next(iter(holders))
    # the holder's name, and `self` in the class's own methods, only ever a receiver
    uses = [(fn.node, held)] + [(m.node, "self") for m in klass.methods.values() if m.node is not None]
    if any(_not_only_a_receiver(node, name) for node, name in uses):
        return None  # handed on, returned, stored, compared: it may be anywhere
    return fn, held


def _unread_words(program) -> frozenset:
    """Every word of the modules not read yet, together: asked for each class a receiver may be
    (515 classes over 200 files on a vendored diffusers), made once per count of files read."""
    held = program.__dict__.get("_unread_words")
    if held is None or held[0] != len(program.files):
        words = frozenset().union(*(source.words for source in program.sources if source.tree is None))
        held = program.__dict__["_unread_words"] = (len(program.files), words)
    return held[1]


def _functions_by_file(program) -> dict:
    """The functions of each file read, by id of the file: each function added once, as its
    module is read (functions are only ever added; the order within a file does not matter to
    _sole_holder, whose holders are a set)."""
    held = program.__dict__.get("_functions_by_file")
    if held is None:
        held = program.__dict__["_functions_by_file"] = ({}, set())
    index, added = held
    if len(added) != len(program.functions):
        for fn in program.functions:
            if id(fn) not in added:
                added.add(id(fn))
                index.setdefault(id(fn.file), []).append(fn)
    return index


def _class_names(program) -> frozenset:
    """Every name a local class may have: those of the classes read, and (a superset, from
    their text) those the modules not read yet define. Fixed once asked: a module read later
    only turns some of the second kind into the first."""
    found = program.__dict__.get("_class_names")
    if found is None:
        found = program.__dict__["_class_names"] = frozenset(k.name for k in program.classes).union(
            *(source.classes_named for source in program.sources if source.tree is None))
    return found


def _files_naming(program) -> dict:
    """Each class name (_class_names) a Name or attribute node spells -> the files read that
    spell it: each file's names added once, as it is read (asked for each class a receiver may
    be, which went through every file's own index before)."""
    held = program.__dict__.get("_files_naming")
    if held is None:
        held = program.__dict__["_files_naming"] = ({}, set())
    index, added = held
    if len(added) != len(program.files):
        wanted = _class_names(program)
        for source in program.files:
            if id(source) not in added:
                added.add(id(source))
                for name in _names_in(source, wanted):
                    index.setdefault(name, []).append(source)
    return index


def _names_in(source, wanted: frozenset) -> dict:
    """The Name and attribute nodes of a file, by the name they spell, for the names wanted
    (the class names: most names a file spells are locals and library calls, which no ask
    needs). Made once per file and set of names."""
    held = source.__dict__.get("_names_in")
    if held is None or held[0] is not wanted:
        found: dict = {}
        for n in source.of(ast.Name):
            if n.id in wanted:
                found.setdefault(n.id, []).append(n)
        for n in source.of(ast.Attribute):
            if n.attr in wanted:
                found.setdefault(n.attr, []).append(n)
        held = (wanted, found)
        if len(wanted) > 1:  # (a one-name ask, the exact way for a name the set lacks, is not kept)
            source.__dict__["_names_in"] = held
    return held[1]


def _not_only_a_receiver(root: ast.AST, name: str) -> bool:
    """The name is read under root other than as the object of an attribute (`name.x`)."""
    nodes = walk(root)  # (two passes over the walked nodes: a child iteration per node cost more)
    read = [n for n in nodes if n.__class__ is ast.Name and n.id == name and n.ctx.__class__ is not ast.Store]
    if not read:
        return False
    receivers = {id(n.value) for n in nodes if n.__class__ is ast.Attribute}
    return any(id(n) not in receivers for n in read)
