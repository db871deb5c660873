"""DDP809 on state a signal handler sets (rank_state.py reads the other shapes).

    stop = {"now": False}
    def on_preempt(signum, frame):
        stop["now"] = True
    signal.signal(signal.SIGUSR2, on_preempt)
    for step in range(steps):
        train_step()                       # every rank all-reduces
        if stop["now"]:                    # each rank's own view of the signal
            save_checkpoint(); break

The launcher (SLURM's `--signal`, a preemption notice) signals every rank's process, but each
runs its handler between two of its own bytecodes: the ranks see the flag at different steps,
and the first to see it saves collectively or leaves while the others run the next step. A flag
handed to a collective in the testing function (all-reduced first) is shared and not read here.
"""

from __future__ import annotations

import ast
from typing import Any

from ddpdoctor.core.findings import Location
from ddpdoctor.lint import rank_state
from ddpdoctor.lint.defaults import off_at_launch, open_part_off
from ddpdoctor.lint.nodes import walk
from ddpdoctor.lint.patterns import env_key, text

Builder = Any  # ddpdoctor.lint.facts.FactBuilder (facts imports this module, not the reverse)
Function = Any


def gather(builder: Builder, ddp: bool) -> list[rank_state.RankLocalDecision]:
    handlers = _handlers(builder)  # (asked once: each is a scan of every reached call)
    written = _handler_state(handlers)
    fields = _handler_fields(handlers)
    env = _handler_env(handlers)
    if not written and not fields and not env:
        return []
    found = []
    getters = _getters(builder, written)
    for fn in builder.functions:
        if fn.node is None:
            continue
        top = isinstance(fn.node, ast.Module)  # there the module's own names are the flag
        mine = {name: handler for (module, name), handler in written.items() if module == id(fn.module)
                and (top or (name not in fn.bindings and name not in fn.params))}
        # (and one imported from the handler's module: `from .ddp_utils import EXIT`)
        mine.update({name: handler for name, handler in _imported_flags(builder, fn.module, written).items()
                     if top or (name not in fn.bindings and name not in fn.params)})
        # and a parameter every call hands the flag (`train_epoch(..., stop_event=_stop_event)`)
        mine.update(_handed(fn, written))
        held = _object_reads(builder, fn, fields) if fields else {}
        # (and a call of a function that returns the flag: `if self.shutdown_checker():` of
        # `shutdown_checker=is_shutdown_requested`, which returns `_SHUTDOWN_REQUESTED.is_set()`)
        asked = _getter_calls(builder, fn, getters) if getters else {}
        held.update(asked)
        if env:
            held.update(_env_reads(builder, fn, env))
        if not held and (not mine or not any(n.__class__ is ast.Name and n.id in mine for n in fn.own)):
            continue
        shared = rank_state._shared(builder, fn)
        for item in rank_state._statements(builder.program, fn, fn.node.body, (), (), False):
            stmt = item.node
            if not isinstance(stmt, (ast.If, ast.While)) or item.guards:
                continue
            read = [n.id for n in walk(stmt.test) if isinstance(n, ast.Name) and n.id in mine and n.id not in shared]
            # (or an object's field the handler method sets, read as `handler.should_stop()`)
            for n in walk(stmt.test):
                if id(n) in held and text(n) not in shared:
                    mine.setdefault(text(n), held[id(n)])
                    read.append(text(n))
            if not read:
                continue
            effect = rank_state._effect(builder, fn, stmt, item, ddp)
            if effect is None:
                continue
            handler, line = mine[read[0]]
            found.append(rank_state.RankLocalDecision(
                Location(fn.file.display, stmt.lineno), text(stmt.test), effect[0], read[0], "signal_state",
                effect[1], Location(handler.file.display, line), handler.label,
                "each rank sees the signal at its own step"))
    return found


def _getters(builder: Builder, written: dict) -> dict[int, tuple[Function, int]]:
    """id(function) -> the handler, for each local function whose every return reads a flag a
    handler of its module sets (`def is_shutdown_requested(): return _SHUTDOWN_REQUESTED.is_set()`)."""
    found = {}
    # (of the program, not only the reached: one handed on by reference is called through the
    # attribute that holds it, which the walk does not follow)
    for fn in builder.program.functions:
        if fn.node is None or isinstance(fn.node, ast.Module) or fn.cls is not None:
            continue
        returns = [r.value for r in fn.own_of(ast.Return)]
        flags = [next((written[(id(fn.module), n.id)] for n in walk(r) if n.__class__ is ast.Name
                       and (id(fn.module), n.id) in written and n.id not in fn.bindings), None)
                 if r is not None else None for r in returns]
        if flags and all(flags):
            found[id(fn)] = flags[0]
    return found


def _getter_calls(builder: Builder, fn: Function, getters: dict) -> dict[int, tuple[Function, int]]:
    """id(call) -> the handler, for each call in fn that reaches only flag getters (_getters):
    by name, or through what an attribute holds (`self.shutdown_checker()`)."""
    program = builder.program
    found = {}
    for call in fn.own_calls:
        targets = program.resolve(call.func, fn)[0]
        if not targets and call.func.__class__ is ast.Attribute:
            # (a field set from a constructor's parameter: what the constructions hand it)
            targets = [t for value, scope in program.values_of(call.func, fn, 3) if value is not call.func
                       for t in program.reference(value, scope)]
        if targets and all(id(t) in getters for t in targets):
            found[id(call)] = getters[id(targets[0])]
    return found


def _imported_flags(builder: Builder, module: Any, written: dict) -> dict:
    """name -> the handler, for each name the module imports from another module of the program
    whose handler sets it (`from .ddp_utils import EXIT`, the Event a SIGUSR1 handler there sets)."""
    kept = module.__dict__.setdefault("_imported_signal_flags", {})
    if id(written) in kept:
        return kept[id(written)][1]
    found = {}
    for name, full in module.imports.items():
        owner, _, attr = full.rpartition(".")
        source = builder.program._module(owner) if owner else None
        if source is not None and (id(source), attr) in written:
            found[name] = written[(id(source), attr)]
    kept[id(written)] = (written, found)  # (the dict itself kept: its id is never reused meanwhile)
    return found


def _handed(fn: Function, written: dict) -> dict:
    """fn's parameters that every call of fn hands a signal flag of the caller's module by name
    (not rebound in fn): the flag, read under the parameter's name."""
    found = {}
    for param in fn.params:
        given = fn.arguments.get(param, [])
        if not given or fn.bindings.get(param):
            continue
        flags = [written.get((id(caller.module), value.id)) if value.__class__ is ast.Name else None
                 for value, caller in given]
        if all(flags):
            found[param] = flags[0]
    return found


def _handler_state(handlers: list) -> dict[tuple[int, str], tuple[Function, int]]:
    """(id(module), name) -> (handler, line) for each module-level name a signal handler of the
    reached code sets: `flag["stop"] = True`, `state.stop = True`, `global stop; stop = True`."""
    out: dict = {}
    for handler in handlers:
        declared = {n for node in handler.own if isinstance(node, ast.Global) for n in node.names}
        for node in handler.own_of(ast.Assign, ast.AugAssign):
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                base = target
                while isinstance(base, (ast.Subscript, ast.Attribute)):
                    base = base.value
                if not isinstance(base, ast.Name) or base.id == "self" or _env_set(target):
                    continue  # (`os.environ["K"] = ...`: the variable K, _handler_env's, not `os`)
                if base is target and base.id not in declared:
                    continue  # a plain local of the handler
                out.setdefault((id(handler.module), base.id), (handler, node.lineno))
        # `_stop_event.set()` of a module-level `threading.Event()` (MeshGraphNets' shutdown flag)
        for call in handler.own_calls:
            func = call.func
            if func.__class__ is ast.Attribute and func.attr == "set" and not call.args and \
                    func.value.__class__ is ast.Name and func.value.id not in handler.bindings and \
                    func.value.id not in handler.params and func.value.id != "self":
                out.setdefault((id(handler.module), func.value.id), (handler, call.lineno))
    return out


def _env_set(target: ast.AST) -> bool:
    """`os.environ["K"]` (or `environ["K"]`) as an assignment's target."""
    return target.__class__ is ast.Subscript and env_key(target) is not None


def _handler_env(handlers: list) -> dict[str, tuple[Function, int]]:
    """Environment variable -> (handler, line) for each one a signal handler sets
    (`os.environ["SIGNAL_RECEIVED"] = "True"`, DINO4Cells' SLURM handler): the process's own,
    read anywhere in it."""
    out: dict = {}
    for handler in handlers:
        for node in handler.own_of(ast.Assign):
            for target in node.targets:
                if _env_set(target):
                    out.setdefault(env_key(target), (handler, node.lineno))
    return out


def _env_reads(builder: Builder, fn: Function, env: dict) -> dict[int, tuple[Function, int]]:
    """id(node) -> the handler, for each read in fn of an environment variable a handler sets."""
    found = {}
    for node in fn.own:
        if node.__class__ is ast.Subscript or node.__class__ is ast.Call:
            key = env_key(node)
            if key in env:
                found[id(node)] = env[key]
    return found


def _handler_fields(handlers: list) -> dict[tuple[int, str], tuple[Function, int]]:
    """(id(class), field) -> (handler, line) for each field a handler that is a method sets
    (`signal.signal(sig, self._handle_signal)` whose method sets `self._shutdown_requested =
    True`): every instance's flag, as each rank's process sees it."""
    out: dict = {}
    for handler in handlers:
        if handler.cls is None:
            continue
        for node in handler.own_of(ast.Assign, ast.AugAssign):
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                    out.setdefault((id(handler.cls), target.attr), (handler, node.lineno))
    return out


def _object_reads(builder: Builder, fn: Function, fields: dict) -> dict[int, tuple[Function, int]]:
    """id(node) -> the handler, for each read in fn of such a field through an instance of its
    class: `obj._flag`, or a method or property of the class that returns it
    (`obj.should_shutdown()`, `obj.shutdown_requested`)."""
    program = builder.program
    found: dict = {}
    for node in fn.own:
        if node.__class__ is not ast.Attribute or node.value.__class__ is not ast.Name or node.value.id == "self":
            continue
        klass = program.class_of(node.value, fn)
        if klass is None:
            continue
        hit = fields.get((id(klass), node.attr))
        method = program.method(klass, node.attr) if hit is None else None
        if method is not None and method.node is not None:
            returns = [r.value for r in method.own_of(ast.Return) if r.value is not None]
            keys = [(id(klass), r.attr) for r in returns if isinstance(r, ast.Attribute)
                    and isinstance(r.value, ast.Name) and r.value.id == "self"]
            if returns and len(keys) == len(returns) and all(k in fields for k in keys):
                hit = fields[keys[0]]
        if hit is not None:
            found[id(node)] = hit
    return found


def _handlers(builder: Builder) -> list[Function]:
    """The local functions the reached code installs with `signal.signal(sig, handler)`, also
    through a helper that passes its parameter on (`init_signal_handler(on_preempt)`)."""
    program = builder.program
    found: list = []
    # (not one installed under a test the run as launched makes false: `if
    # cfg.cluster.use_custom_requeue and main_node: signal.signal(SIGTERM, handler)` with every
    # shipped config setting it false)
    off = {id(call) for fn, call, guards, _ in builder.calls()
           if program.qualify(call.func, fn) == "signal.signal" and (
               off_at_launch(fn.__dict__.get("_call_conds", {}).get(id(call), ()), program)
               or any(open_part_off(guard, program) for guard in guards))}
    for fn in builder.functions:
        for call in fn.own_calls:
            if program.qualify(call.func, fn) != "signal.signal" or len(call.args) < 2 or id(call) in off:
                continue
            arg = call.args[1]
            refs = program.reference(arg, fn)
            if not refs and isinstance(arg, ast.Name) and arg.id in fn.params:
                for value, caller in fn.arguments.get(arg.id, []):
                    refs = refs + program.reference(value, caller)
            found.extend(r for r in refs if r not in found)
    return found
