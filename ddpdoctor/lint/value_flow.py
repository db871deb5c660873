"""Which names of a function's own body a value flows into, and whether it reaches what the
function returns: one flow-insensitive pass over assignments, `for` targets, `append`/`extend`
and stores into items or attributes (`args.seed = x` makes `args` carry x). Used to ask "does the
rank reach this helper's result?" without following every statement's order."""

from __future__ import annotations

import ast
from typing import Callable, Optional

from ddpdoctor.lint import reaching
from ddpdoctor.lint.nodes import walk
from ddpdoctor.lint.patterns import dotted, last_name
from ddpdoctor.lint.program import Function


# (`gpu=gpu` of RelPose's datasets: the spawned process's index, where its tensors go)
PLACEMENT_KEYWORDS = frozenset({"device", "device_id", "device_ids", "output_device", "map_location", "gpu", "gpu_id"})


def placement(node: ast.AST) -> set[int]:
    """The parts of an expression that only say where tensors live (`device=cuda:{rank}`,
    `torch.device(...)`, the argument of `.to(...)` / `.cuda(...)`): the rank there places the
    same data on this rank's GPU, it does not choose which data."""
    placed = set()
    for sub in walk(node):
        if not isinstance(sub, ast.Call):
            continue
        name = dotted(sub.func) or ""
        if name in ("torch.device", "device") or last_name(sub.func) in ("to", "cuda"):
            placed.update(id(n) for arg in [*sub.args, *sub.keywords] for n in walk(arg))
            if name in ("torch.device", "device"):
                placed.add(id(sub))
        placed.update(id(n) for kw in sub.keywords if kw.arg in PLACEMENT_KEYWORDS for n in walk(kw.value))
    return placed


def root_name(target: ast.AST) -> Optional[str]:
    """The name an assignment target stores into (`x`, `x[k]`, `x.attr`)."""
    while isinstance(target, (ast.Subscript, ast.Attribute, ast.Starred)):
        target = target.value
    return target.id if isinstance(target, ast.Name) else None


def _flows(fn: Function) -> list[tuple[set[str], ast.AST]]:
    """(names bound, the value they come from) for each binding in fn's own body (computed once)."""
    found = fn.__dict__.get("_value_flows")
    if found is not None:
        return found
    found = []
    for node in fn.own:
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {root_name(n) for t in targets for n in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t])}
            found.append((names - {None}, node.value))
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            found.append(({n.id for n in walk(node.target) if isinstance(n, ast.Name)}, node.iter))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("append", "extend") and isinstance(node.func.value, ast.Name):
            found.append(({node.func.value.id}, node))
    fn.__dict__["_value_flows"] = found
    return found


def reaches_return(fn: Function, start: set[str], source: Callable[[ast.AST], bool] = lambda _: False,
                   placed: bool = False) -> bool:
    """Something fn returns is derived from the names in start, or from a value source accepts.
    placed: a name that only says where tensors live (`torch.device(f"cuda:{rank}")`) carries
    nothing on."""
    tainted = set(start)
    sourced: dict[int, bool] = {}

    def derived(value: ast.AST) -> bool:
        if id(value) not in sourced:
            sourced[id(value)] = source(value)
        skip = placement(value) if placed else ()
        return sourced[id(value)] or any(n.__class__ is ast.Name and n.id in tainted and id(n) not in skip
                                         for n in walk(value))

    flows = _flows(fn)
    changed = True
    while changed:
        changed = False
        for names, value in flows:
            if names - tainted and derived(value):
                tainted |= names
                changed = True
    return any(derived(ret) for ret in fn.returned)


def unreturned_arguments(program, node: ast.AST, fn: Function) -> set[int]:
    """The nodes of arguments, anywhere in node, handed to a local function that does not return
    anything derived from that parameter (`args = set_seed(args, local_rank)` where set_seed
    only seeds the device, `device = setup(rank)` returning `torch.device(f"cuda:{rank}")`):
    the result does not depend on such an argument, or only says where tensors live."""
    found: set[int] = set()
    for call in walk(node):
        # (also the object's own method, `self.setup_model(rank=rank)`: what it returns is its
        # body's answer too; a parameter it keeps on the object taints `self` in the flow)
        own_method = call.__class__ is ast.Call and isinstance(call.func, ast.Attribute) and \
            isinstance(call.func.value, ast.Name) and call.func.value.id == "self"
        if call.__class__ is not ast.Call or not (isinstance(call.func, ast.Name) or own_method):
            continue
        targets, _ = program.resolve(call.func, fn)
        if not own_method and len(targets) == 1 and targets[0].name == "__init__" and targets[0].cls is not None:
            found |= unread_by_constructor(targets[0], call)
            continue
        if len(targets) != 1 or (targets[0].cls is not None) != own_method \
                or not isinstance(targets[0].node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue  # one plain function of the script's own: its body is the whole answer
        target = targets[0]
        params = target.params  # (a method's without `self`, as its calls pass it)
        if any(isinstance(arg, ast.Starred) for arg in call.args) or target.node.args.vararg:
            continue
        bound = [(params[i], arg) for i, arg in enumerate(call.args) if i < len(params)]
        bound += [(kw.arg, kw.value) for kw in call.keywords if kw.arg in params]
        for param, arg in bound:
            if not reaches_return(target, {param}, placed=True):
                found.update(id(n) for n in walk(arg))
    return found


def unread_by_constructor(init: Function, call: ast.Call) -> set[int]:
    """The nodes of the arguments a local class's __init__ never reads (`Strokes(n, shard=rank,
    num_shards=world)` whose __init__ keeps neither): the object does not depend on them."""
    node = init.node
    if node.args.vararg or node.args.kwarg or any(isinstance(a, ast.Starred) for a in call.args) or \
            any(kw.arg is None for kw in call.keywords):
        return set()  # (`super().__init__(*args, **kwargs)` hands them on)
    params = [a.arg for a in node.args.args][1:] + [a.arg for a in node.args.kwonlyargs]
    read = {n.id for stmt in node.body for n in walk(stmt) if n.__class__ is ast.Name}
    if "locals" in read or "vars" in read:
        return set()
    positional = [a.arg for a in node.args.args][1:]
    bound = [(positional[i], arg) for i, arg in enumerate(call.args) if i < len(positional)]
    bound += [(kw.arg, kw.value) for kw in call.keywords if kw.arg in params]
    return {id(n) for param, arg in bound if param not in read for n in walk(arg)}


_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def outer_loop(fn: Function, call: ast.AST) -> Optional[ast.AST]:
    """The outermost loop of fn whose body holds the call, or None."""
    path = reaching._path_to(fn.node, call) or []
    return next((owner for _, _, owner, field in path if isinstance(owner, _LOOPS) and field == "body"), None)


def loop_invariant(program, fn: Function, call: ast.AST, value: ast.AST) -> Optional[ast.AST]:
    """The outermost loop of fn around call in which value holds the same on every pass, where
    value is a name or a dotted attribute of one (`args.epoch`, not `self.epoch`: a method the
    loop calls may move that): nothing in the loop binds the name or stores into the attribute,
    the name is no parameter (a caller may hand a new one each call), no function declares it
    global, and no other function of the program stores into an attribute of that name (a helper
    that sets `args.epoch = e`). None where there is no such loop or any of that may move it.
    Answered once per (loop, value): a loop may hand the same value many times."""
    parts = (dotted(value) or "").split(".") if isinstance(value, (ast.Name, ast.Attribute)) else []
    if not parts or not all(parts) or parts[0] in ("self", "cls"):
        return None
    root, attr = parts[0], (parts[-1] if len(parts) > 1 else "")
    loop = outer_loop(fn, call)
    if loop is None:
        return None
    if not attr and (root in fn.params or root in fn.kwonly) and not (
            isinstance(loop, (ast.For, ast.AsyncFor)) and any(
                isinstance(n, ast.Name) and n.id == root for n in walk(loop.iter))):
        # (a parameter may be handed anew on each call; not where it is the bound of the very
        # loop around the call, `for epoch_id in range(epoch): sampler.set_epoch(epoch)`)
        return None
    text = ".".join(parts)
    memo = loop.__dict__.setdefault("_invariant", {})
    if text not in memo:
        memo[text] = _held_in(program, fn, loop, root, attr, text)
    return loop if memo[text] else None


def _held_in(program, fn: Function, loop: ast.AST, root: str, attr: str, text: str) -> bool:
    for node in walk(loop):
        if isinstance(node, ast.Name) and node.id == root and isinstance(node.ctx, (ast.Store, ast.Del)):
            return False
        if attr and isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)) and \
                dotted(node) == text:
            return False
        if isinstance(node, (ast.Global, ast.Nonlocal)) and root in node.names:
            return False
    for other in program.functions:
        for node in other.own_of(ast.Global, ast.Nonlocal):
            if root in node.names and not attr:
                return False
        if not attr or other is fn:
            continue
        for node in other.own_of(ast.Assign, ast.AugAssign, ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Attribute) and t.attr == attr for target in targets for t in walk(target)):
                return False
    return True
