"""Decisions every rank takes on a value that only some ranks hold (DDP809's facts).

Two shapes, both a classic hang: the ranks leave a loop (or skip a step) at different times and
the ones still inside wait in the next collective for ever.

- Rank-local state: a variable assigned only under a rank test (rank 0 updates an early-stopping
  counter from its validation loss), then read by a test on every rank that breaks, continues,
  returns or runs a collective (`if stale > patience: break`).
- A rank-local tensor's value: `if not torch.isfinite(loss): continue` (or a comparison of its
  `.item()`) decides on each rank's own loss, before the backward (gradient all-reduce) or a
  collective the others then run.

Read per function, in statement order, from the Program's syntax (program.py) and its rank tests
(ranks.py); what counts as collective work (a collective, a DDP forward, a backward of a DDP
model) comes from patterns.py and the FactBuilder, so this module holds the reasoning only.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace
from typing import Any, Iterator, Optional

from ddpdoctor.core.findings import Location
from ddpdoctor.lint import no_sync, reaching
from ddpdoctor.lint.defaults import declared_off, settled as defaults_settled
from ddpdoctor.lint.fact_builder import _compared_false, _single_process, compared, never_true, pinned_constants
from ddpdoctor.lint.nodes import blocks_around, children, key_presence as _key_presence, walk
from ddpdoctor.lint.ranks import counts_every_pass, received_names
from ddpdoctor.lint.walker import (TERMINATORS, _negation_text, _never_returns, clean_exit, exits as _exits, is_main_block, rank_return_in_try,
                                   side_conds)
from ddpdoctor.lint.patterns import (_self_field, DDP_BACKWARD, DDP_FORWARD, FSDP_FORWARD, SCALAR_DRAWS, RankTest, engine_subclass, grad_off, last_name,
                                     no_grad_forward, through_grad_off, dotted, is_const, keyword, loader_call,
                                     loss_round_the_wrapper, text, _loss_of, OPTIONS_HOLDER, fresh_model)

Builder = Any  # ddpdoctor.lint.facts.FactBuilder (facts imports this module, not the reverse)
Function = Any
# Tests on a tensor's value, each rank's own unless it was all-reduced first.
VALUE_TESTS = {"isfinite", "isnan", "isinf", "isneginf", "isposinf"}


@dataclass
class RankLocalDecision:
    """A test every rank runs on a value some ranks do not share, and what it decides."""

    location: Location  # the if / while
    decision: str  # its test, as written
    action: str  # "break" | "continue" | "return" | "runs dist.all_reduce()" ...
    value: str  # the rank-local variable, or the tensor expression tested
    kind: str  # "rank_state" | "tensor_value"
    work: str  # the collective work the other ranks go on to (what hangs)
    assigned: Optional[Location] = None  # rank_state: where it is set under the rank test
    guard: str = ""  # rank_state: that rank test
    assumption: str = ""  # "" when proven; else what must hold (a warning that says so)
    stepped: bool = False  # rank_state: every rank steps it, and the rank test steps it further
    # rank_exit: the test is a rank test joined with a value the source does not settle (`if
    # iter < resumed and rank == 0: continue`), the decision DDP809 tells (not a plain rank branch)
    open_test: bool = False
    # the statement that leaves (`continue` / `break` / `return` / `raise` / `sys.exit()`), where it
    # stands on a line of its own below the test: the other place a reviewer points at
    exit_line: Optional[int] = None
    # the values the rank test's other parts hold at, where a config or a default settles them
    # in place of an assumption (RankTest.given: "`a.b` set to `True` in run.yml, ..."): said
    given: str = ""
    # shard_metric: what gives each rank its own part of the evaluation's data
    shard: str = "a DistributedSampler"


@dataclass
class _Stmt:
    node: ast.stmt
    guards: tuple[RankTest, ...]
    loops: tuple[ast.AST, ...]  # enclosing loops, innermost last
    conditional: bool  # under a test that is not a rank test
    tensor: Optional[ast.AST] = None  # the innermost plain test around it on a tensor's value


def gather(builder: Builder, ddp: bool) -> list[RankLocalDecision]:
    found: list[RankLocalDecision] = []
    by_class: dict[Any, list[tuple[Function, list[_Stmt]]]] = {}
    everyone: list[tuple[Function, list[_Stmt]]] = []
    for fn in builder.functions:
        if fn.node is None:
            continue
        stmts = statements(builder.program, fn)
        everyone.append((fn, stmts))
        before = len(found)
        state = _rank_state(builder, fn, stmts, ddp)
        found.extend(state)
        decided = {d.location for d in state}  # a counter rank 0 keeps: said once, as state
        # one decision, one finding: where a rank test leaves the loop, that is the reason, not
        # the tensor value tested beside it (`if loss.item() < t and rank == 0: break`)
        exits = [d for d in _rank_exits(builder, fn, stmts, ddp) + _rank_process_exits(builder, fn, stmts, ddp)
                 if d.location not in decided]
        decided |= {d.location for d in exits}
        found.extend(d for d in _tensor_values(builder, fn, stmts, ddp) if d.location not in decided)
        found.extend(exits)
        decided |= {d.location for d in found}
        found.extend(d for d in _clock_values(builder, fn, stmts, ddp) if d.location not in decided)
        found.extend(_exception_skips(builder, fn, stmts, ddp))
        found.extend(_lightning_skips(builder, fn, stmts))
        if len(found) > before and builder.off_at_launch_only(fn):
            # `elif args.attack_choice == "AA": adversary.run_standard_evaluation(...)` with
            # --attack_choice at "PGD": no run as launched reaches what fn decides
            del found[before:]
        elif len(found) > before:
            # (or a test around the decision in fn itself: `if patience > 0:` handed an option
            # no launch gives, -1 by default)
            at = {s.lineno: s for s in fn.own_of(ast.If, ast.While)}
            found[before:] = [d for d in found[before:] if d.location.line not in at
                              or not off_on_every_way(builder, fn, at[d.location.line])]
        if fn.cls is not None and fn.parent is None:
            by_class.setdefault(fn.cls, []).append((fn, stmts))
        _exit_lines(fn, [d for d in found if d.exit_line is None])
    held = _held_sets(builder, everyone, by_class) if by_class else {}
    for klass, methods in by_class.items():
        # (a holder's test already told as its own name's state - `solver.stop` - said once)
        decided = {d.location for d in found}
        found.extend(d for d in _attribute_state(builder, methods, ddp, everyone, held.get(klass, ()))
                     if d.location not in decided)
    return sorted(found, key=lambda d: (d.location.file, d.location.line or 0))


def one_per_cause(builder: Builder, decisions: list) -> list:
    """The decisions less those another one already explains: a test inside the `if` block of
    another in the same function (`if np.isnan(loss.item()): nan += 1; if nan > 100: raise ...
    else: continue`), or in a helper every call of which sits in such a block (`if EXIT.is_set():
    ...; requeue_job(); return`, requeue_job testing REQUEUE, which the same signal sets): the
    inner test runs only where the outer one already parted the ranks - one finding, at the
    outer one. (A `while` decision's body is the loop it keeps running: its tests part the ranks
    anew each pass.)"""
    ifs = {(fn.file.display, node.lineno): (fn, node.end_lineno) for fn in builder.functions
           if fn.node is not None for node in fn.own if node.__class__ is ast.If}
    blocks = [(ifs[key][0], key[1], ifs[key][1]) for d in decisions
              if (key := (d.location.file, d.location.line)) in ifs]
    if not blocks:
        return decisions

    def explained(d) -> bool:
        at = ifs.get((d.location.file, d.location.line))
        line = d.location.line or 0
        if any(fn.file.display == d.location.file and start < line <= end for fn, start, end in blocks):
            return True
        sites = builder.callers().get(at[0], []) if at is not None else []
        return bool(sites) and at[0].node.__class__ is not ast.Module and all(
            any(fn is caller and fn is not at[0] and start < event.line <= end for fn, start, end in blocks)
            for caller, event in sites)
    return [d for d in decisions if not explained(d)]


def _exit_lines(fn: Function, decisions: list[RankLocalDecision]) -> None:
    """Each decision at one of fn's `if`s gets the line of the statement its side leaves by."""
    ifs = {node.lineno: node for node in fn.own if node.__class__ is ast.If}
    for d in decisions:
        node = ifs.get(d.location.line) if d.location.file == fn.file.display else None
        if node is None:
            continue
        leaving = next((stmt for stmt in node.body if _exits(stmt) or isinstance(stmt, TERMINATORS)), None)
        if leaving is not None and leaving.lineno != node.lineno:
            d.exit_line = leaving.lineno


def _self_attrs(stmt: ast.stmt) -> list[str]:
    """`stale` for `self.stale = ...` / `self.stale += 1` / `self.best, self.stale = ...`; and
    `cache` for `self.cache["best_epoch"] = epoch` (a record the object keeps its state in)."""
    found = []
    for n in _assigned(stmt):
        if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant):
            n = n.value
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self":
            found.append(n.attr)
    # `self.top_k.append(...)` / `.pop(-1)`: a list the object keeps, changed in place
    if stmt.__class__ is ast.Expr and stmt.value.__class__ is ast.Call and \
            stmt.value.func.__class__ is ast.Attribute and stmt.value.func.attr in LIST_CHANGES:
        held = stmt.value.func.value
        if held.__class__ is ast.Attribute and held.value.__class__ is ast.Name and held.value.id == "self":
            found.append(held.attr)
    return found


# Methods that change a list, a dict or a set in place (an object's record kept as one).
LIST_CHANGES = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "update", "add", "popitem"})


def _held_sets(builder: Builder, everyone: list, classes: dict) -> dict:
    """For each class, the fields functions outside it set on an instance they hold (`rs.iter_num
    = ckpt["iter_num"]` in a builder handed the run's state `rs: RunState`): (fn, statement,
    field), each target's class asked once."""
    found: dict = {}
    for fn, stmts in everyone:
        if fn.cls is not None and fn.cls in classes:
            continue  # (a method's own `self.x`; another instance's field there is rare)
        for item in stmts:
            for target in _assigned(item.node):
                if target.__class__ is ast.Subscript and target.slice.__class__ is ast.Constant:
                    target = target.value
                if target.__class__ is ast.Attribute and target.value.__class__ is ast.Name and \
                        target.value.id != "self":
                    klass = builder.program.class_of(target.value, fn)
                    if klass is not None and klass in classes:
                        found.setdefault(klass, []).append((fn, item, target.attr))
    return found


def _attribute_state(builder: Builder, methods: list, ddp: bool, everyone: list = (),
                     held: list = ()) -> list[RankLocalDecision]:
    """The same for an object's state: `self.stale` updated only under a rank test, or in a
    method only ever called under one (`if rank == 0: self.validate()`), then tested in a
    method every rank runs (`if self.stale > self.patience: break`), or by a caller holding the
    object (`if trainer.should_stop(patience): break`, should_stop's answer reading the counter
    its save() steps past `if not is_main_process(): return`)."""
    assigned: dict[str, list[tuple[Function, _Stmt, bool]]] = {}
    for fn, stmts in methods:
        only = builder.only_guarded(fn) is True
        for item in stmts:
            for attr in _self_attrs(item.node):
                assigned.setdefault(attr, []).append((fn, item, _ranked(item) or only))
    for fn, item, attr in held:
        assigned.setdefault(attr, []).append((fn, item, _ranked(item) or builder.only_guarded(fn) is True))
    if not any(r for items in assigned.values() for _, _, r in items):
        return []  # (no field set only under a rank test: most classes; the collectives need no look)
    shared: set[str] = set()
    for fn, _ in methods:
        handed: set[str] = set()
        for node in fn.own_of(ast.Call):
            if builder.program.collective(node, fn):
                for arg in [*node.args, *(k.value for k in node.keywords)]:
                    shared.update(n.attr for n in walk(arg) if isinstance(n, ast.Attribute))
                    if isinstance(arg, ast.Name) and arg.id != "self":
                        # `box = [self.stop if self.is_rank_zero else None]`, then
                        # `dist.broadcast_object_list(box, 0)`: the field the list carries
                        handed.add(arg.id)
                        shared.update(_carried_fields(v) for _, v in fn.bindings.get(arg.id, ()))
        if handed:
            # `self.stop = box[0]` after the broadcast: the field takes the value every rank got
            # (ljm565's NMT trainer)
            shared.update(t.attr for node in fn.own if isinstance(node, ast.Assign)
                          and isinstance(node.value, ast.Subscript) and isinstance(node.value.value, ast.Name)
                          and node.value.value.id in handed
                          for t in node.targets if isinstance(t, ast.Attribute)
                          and isinstance(t.value, ast.Name) and t.value.id == "self")
        shared.discard("")
    owned = {fn for fn, _ in methods}
    local = {}
    flagged = set()  # set only to a constant under a further test: whether that test ever holds
    for attr, items in assigned.items():
        ranked = [(f, i) for f, i, r in items if r]
        if attr in shared or not ranked:
            continue
        # (`x += 1` on every rank keeps what rank 0 alone set apart: `rs.iter_num += 1` after a
        # resume only rank 0 read)
        if all(_constant(_attr_value(i.node, attr)) or _restored(_attr_value(i.node, attr), f, builder.program)
               or i.node.__class__ is ast.AugAssign for f, i, r in items if not r):
            local[attr] = ranked[0]
            if all(i.conditional and isinstance(i.node, ast.Assign) and _constant(_attr_value(i.node, attr))
                   for _, i in ranked) and not all(_set_at_a_count(f, i.node) for f, i in ranked):
                # (ParaGen's `self._early_stopping = True` past a patience the config sets; not a
                # flag set where a counter its method steps reaches its bound, `self.counter += 1;
                # if self.counter >= self.patience: self.early_stop = True`: a run that stops
                # improving sets it, as _counted_stop reads the same stopper)
                flagged.add(attr)
    found = []
    said: set = set()
    # the reads on every rank's way first (a test under a plain `if` only where it is reached)
    klass = methods[0][0].cls if methods else None
    holders = [(fn, stmts) for fn, stmts in everyone if fn not in owned] if local and klass is not None else []
    # (and of those a test that leaves - `if rs.iter_num > n: break` - before one that gates a
    # collective: leaving parts the ranks whatever the values)
    callers = builder.callers()

    def beside_setter(fn, item) -> bool:
        # (a read in the setter's own function, or in one that calls it directly: the loop where
        # the flag changes, which the rank that set it leaves first - not an outer loop's test)
        setters = [local[n.attr][0] for n in walk(item.node.test) if n.__class__ is ast.Attribute and n.attr in local]
        return any(s is fn or any(c is fn for c, _ in callers.get(s, [])) for s in setters)

    def first(pair: tuple) -> tuple:
        fn, item = pair
        return item.conditional, _if_depth(fn, item.node) if item.conditional else 0, not _leaves(item.node), \
            not beside_setter(fn, item)

    def tests(pairs: list) -> Iterator[tuple]:
        # (only an unguarded if / while can decide: the sort then orders tens, not thousands)
        return ((fn, item) for fn, stmts in pairs if builder.only_guarded(fn) is not True for item in stmts
                if item.node.__class__ in (ast.If, ast.While) and not item.guards)

    reads = sorted(tests(methods if local else ()), key=first) + sorted(tests(holders), key=first)
    for fn, item in reads:
        stmt = item.node
        if fn not in owned:
            read = _held_object_reads(builder, fn, stmt.test, klass, local, owned)
        else:
            read = [n.attr for n in walk(stmt.test) if isinstance(n, ast.Attribute) and n.attr in local
                    and isinstance(n.value, ast.Name) and n.value.id == "self"]
        if not read and fn in owned:
            # `if self.stop_early(epoch): break` where that method's answer reads the state
            read = [attr for call in walk(stmt.test) if isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name)
                    and call.func.value.id == "self"
                    for method in builder.program.resolve(call.func, fn)[0] if method.node is not None
                    and method in owned
                    for attr in _answer_reads(method, local)]
        if not read:
            continue
        effect = _effect(builder, fn, stmt, item, ddp, parted=True) or \
            _nested_effect(builder, fn, stmt, item, ddp, parted=True, told=frozenset(local))
        if effect is None:
            continue
        setter_fn, setter = local[read[0]]
        if fn not in owned and not setter.guards and any(
                caller is fn and not e.guards for caller, e in builder.callers().get(setter_fn, [])):
            # `early_stopping(val_loss, model, path)` then `if early_stopping.early_stop: break`
            # on every rank: this holder steps the state itself on each rank, whatever another
            # trainer does with its own instance under a rank test
            continue
        tests = list(setter.guards) or [g.test for _, e in builder.callers().get(setter_fn, [])
                                         for g in e.guards[-1:]]
        guard = tests[-1].text if tests else setter_fn.rank_only or ""
        if not guard:
            # the setter's way in is no rank test one can name (a sampler built on the
            # one-process side of `if distributed:`): never set on some ranks alone
            continue
        assumption = tests[-1].assumption if tests else ""
        notes = [a for a in (assumption, f"the test at line {stmt.lineno} is reached on every rank"
                             if item.conditional else "",
                             f"the assignment at line {setter.node.lineno} runs (it is under a further test)"
                             if read[0] in flagged else "",
                             # (a forward with gradients off: see _decision)
                             NO_GRAD_ASSUMPTION if no_grad_forward(effect[1]) else "") if a]
        if setter.node in said:
            continue  # one flag, one finding: the loop that reads it unconditionally first
        said.add(setter.node)
        # (the field as the setter writes it: `self.stop`, or a holder's `rs.iter_num`)
        shown = next((text(n) for n in _assigned(setter.node) if n.__class__ is ast.Attribute and n.attr == read[0]),
                     f"self.{read[0]}")
        found.append(RankLocalDecision(
            Location(fn.file.display, stmt.lineno), text(stmt.test), effect[0], shown,
            "rank_state", effect[1], Location(setter_fn.file.display, setter.node.lineno), guard,
            ", and ".join(notes), given=tests[-1].given if tests else ""))
    return found


def _if_depth(fn: Function, stmt: ast.stmt) -> int:
    """How many `if`s (not the script's main block) enclose the statement in fn: of two tests
    that read the state, the one fewer switches stand before is reached on more runs."""
    depths = fn.__dict__.get("_if_depths")
    if depths is None:
        depths = fn.__dict__["_if_depths"] = {}
        todo = [(fn.node.body, 0)]
        while todo:
            body, depth = todo.pop()
            for node in body:
                if not isinstance(node, (ast.If, ast.While)):
                    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                        todo.extend((block, depth) for block in _blocks_of(node))
                    continue
                depths[id(node)] = depth
                inner = depth + (1 if isinstance(node, ast.If) and not is_main_block(node) else 0)
                todo.extend(((node.body, inner), (node.orelse, inner)))
    return depths.get(id(stmt), 0)


def _blocks_of(node: ast.stmt) -> list:
    """The statement lists a compound statement holds (a loop's, a `with`'s, a `try`'s)."""
    blocks = [getattr(node, name) for name in ("body", "orelse", "finalbody") if isinstance(getattr(node, name, None), list)]
    blocks += [handler.body for handler in getattr(node, "handlers", ())]
    blocks += [case.body for case in getattr(node, "cases", ())]
    return blocks


def _leaves(stmt: ast.stmt) -> bool:
    """An `if` whose body ends by leaving (break, continue, return, raise)."""
    return stmt.__class__ is ast.If and bool(stmt.body) and isinstance(stmt.body[-1], TERMINATORS)


def _carried_fields(value: ast.AST) -> str:
    """The `self.<field>` a one-item list or tuple carries (`[self.stop]`, `[self.stop if
    self.is_rank_zero else None]`: the field, not the test that picks it); "" otherwise."""
    if not (isinstance(value, (ast.List, ast.Tuple)) and len(value.elts) == 1):
        return ""
    item = value.elts[0]
    if isinstance(item, ast.IfExp):
        item = item.body
    return item.attr if isinstance(item, ast.Attribute) and isinstance(item.value, ast.Name) \
        and item.value.id == "self" else ""


def _held_object_reads(builder: Builder, fn: Function, test: ast.AST, klass, local: dict, owned: set) -> list[str]:
    """The object's rank-local fields a caller's test reads on an instance it holds: directly
    (`trainer.stale > p`) or through a method's answer (`trainer.should_stop(p)`)."""
    program = builder.program
    found = []
    for node in walk(test):
        if node.__class__ is ast.Attribute and node.value.__class__ is ast.Name and node.attr in local and \
                program.class_of(node.value, fn) is klass:
            found.append(node.attr)
        elif node.__class__ is ast.Call and node.func.__class__ is ast.Attribute and \
                node.func.value.__class__ is ast.Name and program.class_of(node.func.value, fn) is klass:
            found.extend(attr for method in program.resolve(node.func, fn)[0]
                         if method.node is not None and method in owned for attr in _answer_reads(method, local))
    return list(dict.fromkeys(found))


def _ranked(item: _Stmt) -> bool:
    """Under a rank test that not every rank passes: not `if rank in ranks:` inside `for ranks
    in groups:` (each rank takes it on the pass over its own group, vLLM-style parallel state)."""
    return any(not _own_group_pass(guard, item.loops) for guard in item.guards)


def _own_group_pass(guard: RankTest, loops: tuple) -> bool:
    found = _MEMBERSHIP.match(guard.text)
    return found is not None and any(
        isinstance(loop, (ast.For, ast.AsyncFor)) and isinstance(loop.target, ast.Name)
        and loop.target.id == found.group(1) for loop in loops)


# `self.rank in ranks`: a rank's membership of the group a loop is at
_MEMBERSHIP = re.compile(r"^[\w.\[\]'\"()]+ in (\w+)$")


def _answer_reads(method: Function, local: dict) -> list[str]:
    """The object's state fields a method's answer rests on: read by its tests or its returns."""
    parts = [n.test for n in method.own if isinstance(n, (ast.If, ast.While))] + \
        [n.value for n in method.own_of(ast.Return) if n.value is not None]
    return list(dict.fromkeys(n.attr for part in parts for n in walk(part) if isinstance(n, ast.Attribute)
                              and n.attr in local and isinstance(n.value, ast.Name) and n.value.id == "self"))


# what reads a saved file back (torch's, json's, pickle's, numpy's `load`; yaml's safe one)
_LOADS = frozenset({"load", "safe_load", "full_load"})


def _restored(value: Optional[ast.AST], fn: Function, program=None, depth: int = 2) -> bool:
    """`state["trainer"]["early_stopping"]` read from a state dict the method is handed or
    loads (`_restore(self, state_dict)`, `torch.load(path)`): every rank resumes from the same
    checkpoint, so the value is the same on every rank (ParaGen's trainer state). With the
    program, also `start + 1` of such a value, and `start = load_model(net, opt, resume)`, a
    local helper every return of which is a constant or such a value (`return 0` when not
    resuming, `return ckpt["iter_step"]`)."""
    for _ in range(3):
        while isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Constant):
            value = value.value
        if isinstance(value, ast.Call) and last_name(value.func) in _LOADS:
            return True  # (`torch.load(path)`, `json.load(f)`, `yaml.safe_load(f)`: a saved file)
        if program is not None and value.__class__ is ast.BinOp:
            return all(_constant(side) or _restored(side, fn, program, depth)
                       for side in (value.left, value.right))
        if program is not None and depth > 0 and value.__class__ is ast.Call:
            target = program.callee(value.func, fn)
            return program.is_function(target) and target.node.__class__ is not ast.Module and \
                bool(target.returned) and all(_constant(r) or _restored(r, target, program, depth - 1)
                                              for r in target.returned)
        if not isinstance(value, ast.Name):
            return False
        if value.id in fn.params and value.id != "self" and "state" in value.id.lower():
            return True
        bound = fn.bindings.get(value.id, [])
        if len(bound) != 1:
            return False
        value = bound[0][1]
    return False


def rank_advanced(program, fn: Function, name: str) -> str:
    """`epoch` started alike on every rank (a constant, a setting, a resumed checkpoint's) and
    advanced inside fn's loops only under a rank test (`if not rank: epoch += 1`): that test's
    text; "" otherwise (a loop's own variable, an advance every rank makes)."""
    if any(isinstance(n, (ast.For, ast.AsyncFor)) and any(t.__class__ is ast.Name and t.id == name
                                                          for t in walk(n.target)) for n in fn.own):
        return ""
    items = [i for i in statements(program, fn) if name in _targets(i.node)]
    moved = [i for i in items if i.loops]
    if not moved or not all(_ranked(i) for i in moved):
        return ""
    if any(i.loops or i.guards or not (_constant(getattr(i.node, "value", None)) or _resumed(fn, i, name))
           for i in items if i not in moved):
        return ""
    return moved[0].guards[-1].text


def _resumed(fn: Function, item: _Stmt, name: str) -> bool:
    """Every rank sets the name once, before any loop, from a checkpoint it loads (`model, opt,
    epoch, step = checkpoint.load(path, model, opt)`, one item of the call's tuple): the same
    file, the same value on every rank - a start, as a constant is."""
    if item.loops:
        return False
    value = _value_of(item.node, name)
    if value is None and isinstance(item.node, ast.Assign) and isinstance(item.node.value, ast.Call) and any(
            isinstance(t, (ast.Tuple, ast.List)) and any(isinstance(e, ast.Name) and e.id == name for e in t.elts)
            for t in item.node.targets):
        value = item.node.value  # unpacked from the loading call
    return _restored(value, fn)


def _attr_value(stmt: ast.stmt, attr: str) -> Optional[ast.AST]:
    """What a statement assigns to `self.attr`: its value, or the item of a tuple unpacked
    into a tuple (`self.model, self.stop = model, False`: ParaGen's trainer)."""
    value = getattr(stmt, "value", None)
    if isinstance(stmt, ast.Assign) and isinstance(value, (ast.Tuple, ast.List)):
        for target in stmt.targets:
            if isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == len(value.elts):
                for item, part in zip(target.elts, value.elts):
                    if isinstance(item, ast.Attribute) and item.attr == attr and \
                            isinstance(item.value, ast.Name) and item.value.id == "self":
                        return part
    return value


def off_on_every_way(builder: Builder, fn: Function, stmt: ast.AST) -> bool:
    """The decision sits under a test on a parameter that every way into fn makes false as
    launched (`if early_stopping_patience > 0:` handed `args.early_stopping_patience`, -1 by
    default and given by no launch): no run as launched decides there."""
    path = reaching._path_to(fn.node, stmt) or ()
    tests = [(owner.test, side == "body") for _, _, owner, side in path if isinstance(owner, ast.If)]
    ways = builder.callers().get(fn, [])
    if not tests or not ways or isinstance(fn.node, ast.Module):
        return False
    for test, body in tests:
        said = text(test) if body else f"not ({text(test)})"
        if all(isinstance(event.node, ast.Call) and _compared_false(fn, said, event.node, (), (), builder.program)
               for _, event in ways):
            return True
    return False


def statements(program, fn: Function) -> list:
    """fn's statements with the rank tests around each (_Stmt.guards), made once per function
    (DDP809's passes and the saves' read them)."""
    made = fn.__dict__.get("_rank_statements")
    if made is None:
        made = fn.__dict__["_rank_statements"] = list(_statements(program, fn, fn.node.body, (), (), False))
    return made


def _statements(program, fn: Function, body: list, guards: tuple, loops: tuple,
                conditional: bool, tensor: Optional[ast.AST] = None) -> Iterator[_Stmt]:
    """Every statement of a body, with the rank tests, loops and plain tests around it; after
    `if rank != 0: return` the rest runs under the negated test (as program.Walker reads it)."""
    for index, stmt in enumerate(body):
        yield _Stmt(stmt, guards, loops, conditional, tensor)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(fn.node, ast.Module) and fn.file is not program.files[0] and is_main_block(stmt):
            continue  # an imported module's own `if __name__ == "__main__":` (a loss's self-test) never runs
        if isinstance(stmt, (ast.If, ast.While)):
            test = program.ranks.guard(stmt.test, fn)
            inner = loops + (stmt,) if isinstance(stmt, ast.While) else loops
            if test is None:
                on_value = stmt.test if isinstance(stmt, ast.If) and (
                    _tensor_tested(stmt.test) or _item_valued(program, fn, stmt.test)) else tensor
                # a side that runs only where the run is not distributed (`if args.distributed:
                # ... else: <one process's early stop>`, T5-CL): no ranks there to disagree
                # (the script's `if __name__ == "__main__":` is no test: the run itself)
                if not program.ranks.single_process(stmt.test, fn):
                    # (`while True:`'s body is entered, as the script's main block is: no test)
                    entered = is_main_block(stmt) or (stmt.__class__ is ast.While and stmt.test.__class__ is ast.Constant
                                                      and stmt.test.value is True)
                    yield from _statements(program, fn, stmt.body, guards, inner, conditional or not entered, on_value)
                if not (stmt.orelse and program.ranks.single_process(ast.UnaryOp(ast.Not(), stmt.test), fn)):
                    yield from _statements(program, fn, stmt.orelse, guards, loops, True, on_value)
            else:
                yield from _statements(program, fn, stmt.body, guards + (test,), inner, conditional, tensor)
                # `if gpu == 0 and not valid: ... elif valid: cfg = load(...)`: where the elif's test
                # holds, the first test's other part fails on every rank - every rank takes the elif
                # (hpa's train_net), not the ranks the rank test leaves out
                otherwise = guards if _elif_excludes(stmt) else guards + (test.negated(),)
                yield from _statements(program, fn, stmt.orelse, otherwise, loops, conditional, tensor)
                leaving = (ast.Return, ast.Continue, ast.Break)
                if isinstance(stmt, ast.If) and not stmt.orelse and stmt.body and \
                        isinstance(stmt.body[-1], leaving):
                    yield from _statements(program, fn, body[index + 1:], guards + (test.negated(),),
                                           loops, conditional, tensor)
                    return
                if isinstance(stmt, ast.If) and stmt.orelse and stmt.body and \
                        isinstance(stmt.body[-1], leaving) != isinstance(stmt.orelse[-1], leaving):
                    # `if rank == 0: ... else: continue`: the rest runs where the other side holds
                    on = test if isinstance(stmt.orelse[-1], leaving) else test.negated()
                    yield from _statements(program, fn, body[index + 1:], guards + (on,), loops, conditional, tensor)
                    return
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            yield from _statements(program, fn, stmt.body, guards, loops + (stmt,), conditional, tensor)
            yield from _statements(program, fn, stmt.orelse, guards, loops, conditional, tensor)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            yield from _statements(program, fn, stmt.body, guards, loops, conditional, tensor)
        elif isinstance(stmt, ast.Try):
            for part in (stmt.body, *(h.body for h in stmt.handlers), stmt.orelse, stmt.finalbody):
                yield from _statements(program, fn, part, guards, loops, conditional, tensor)
            leave = rank_return_in_try(program, fn, stmt)
            if leave is not None:  # `try: if not is_main(): return / except: pass` (as the Walker)
                yield from _statements(program, fn, body[index + 1:], guards + (leave[0].negated(),),
                                       loops, conditional, tensor)
                return


def _elif_excludes(stmt: ast.AST) -> bool:
    """`if <rank test> and P: ... elif not P:` - the elif's test is the negation of a part of the
    first test's `and`, so where it holds that test fails whatever the rank."""
    if not (isinstance(stmt, ast.If) and len(stmt.orelse) == 1 and isinstance(stmt.orelse[0], ast.If)
            and isinstance(stmt.test, ast.BoolOp) and isinstance(stmt.test.op, ast.And)):
        return False
    other = stmt.orelse[0].test
    return any(_negation(part, other) for part in stmt.test.values)


def _negation(a: ast.AST, b: ast.AST) -> bool:
    """b says the opposite of a: `not X` / `X`, or `X == c` / `X != c` (as written)."""
    if _negation_text(a) == text(b, 10_000) or _negation_text(b) == text(a, 10_000):
        return True
    if isinstance(a, ast.Compare) and isinstance(b, ast.Compare) and len(a.ops) == len(b.ops) == 1 and \
            {type(a.ops[0]), type(b.ops[0])} == {ast.Eq, ast.NotEq}:
        return text(a.left) == text(b.left) and text(a.comparators[0]) == text(b.comparators[0])
    return False


def _assigned(stmt: ast.stmt) -> list[ast.AST]:
    """The targets a statement assigns, tuples unpacked (`a, b = ...`, `a += 1`)."""
    if isinstance(stmt, ast.Assign):
        nodes = stmt.targets
    elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)) and stmt.value is not None:
        nodes = [stmt.target]
    else:
        return []
    return [sub for node in nodes for sub in (node.elts if isinstance(node, (ast.Tuple, ast.List)) else [node])]


def _value_of(stmt: ast.stmt, name: str) -> Optional[ast.AST]:
    """What a statement assigns to `name`: its value, or the item of a tuple unpacked into a
    tuple (`a, name = x, y`); None for an augmented assignment or an unpacked call."""
    if not isinstance(stmt, (ast.Assign, ast.AnnAssign)) or stmt.value is None:
        return None
    for target in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]):
        if (isinstance(target, ast.Name) and target.id == name) or _field(target) == name:
            return stmt.value
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(stmt.value, (ast.Tuple, ast.List)) and \
                len(target.elts) == len(stmt.value.elts):
            for item, value in zip(target.elts, stmt.value.elts):
                if isinstance(item, ast.Name) and item.id == name:
                    return value
    return None


def _setting(builder: Builder, value: Optional[ast.AST], fn: Function) -> bool:
    """`cfg.TRAIN.BEGIN_EPOCH`, `args.start_epoch`: an attribute chain off a name, read the same
    on every rank (parsed options, a config), unless it is the rank itself."""
    node = value
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(value, ast.Attribute) and isinstance(node, ast.Name) and node.id != "self" and \
        not builder.program.ranks.is_rank(value, fn)


def _from_the_options(builder: Builder, fn: Function, item: _Stmt) -> bool:
    """`scheduler, num_epochs = create_scheduler(args, optimizer)` once, outside any loop: an
    answer worked out from the run's options (timm's schedule length from `args.epochs`), the
    same on every rank; not a call handed the rank, nor one in a loop (each pass's own data)."""
    stmt, value = item.node, getattr(item.node, "value", None)
    if item.loops or not isinstance(stmt, ast.Assign) or value.__class__ is not ast.Call:
        return False
    handed = [*value.args, *(k.value for k in value.keywords)]
    return any(a.__class__ is ast.Name and OPTIONS_HOLDER.match(a.id) for a in handed) and \
        not any(builder.program.ranks.is_rank(a, fn) for a in handed)


def _targets(stmt: ast.stmt) -> list[str]:
    """The plain names a statement assigns."""
    return [n.id for n in _assigned(stmt) if isinstance(n, ast.Name)]


def _field(node: ast.AST) -> str:
    """`opt.train_epoch_count`: a field of a local options object (not `self.x`: a class's own
    state is read by _attribute_state), as the key the rank state keeps it under; "" otherwise."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id != "self":
        return f"{node.value.id}.{node.attr}"
    return ""


def _fields_set_by_call(builder: Builder, fn: Function, stmt: ast.stmt) -> list[str]:
    """`model.early_stopping(loss)` as a statement, where the local method sets `self.early_stop
    = True`: the fields of `model` the call may set, keyed as _field keys them ("model.early_stop")."""
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return []
    func = stmt.value.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id != "self"):
        return []
    keys = []
    for target in builder.program.resolve(func, fn)[0]:
        if target.cls is None or target.node is None or isinstance(target.node, ast.Module):
            continue
        for node in target.own:
            for assigned in (node.targets if isinstance(node, ast.Assign) else
                             [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []):
                if isinstance(assigned, ast.Attribute) and isinstance(assigned.value, ast.Name) and \
                        assigned.value.id == "self":
                    keys.append(f"{func.value.id}.{assigned.attr}")
    return list(dict.fromkeys(keys))


def _state_targets(stmt: ast.stmt) -> list[str]:
    """The plain names and the options' fields a statement assigns (`opt.train_epoch_count =
    visualizer.load_data()` on rank 0, then every rank's `range(opt.train_epoch_count, n)`)."""
    return _targets(stmt) + [key for n in _assigned(stmt) for key in [_field(n)] if key] + _grown(stmt)


def _grown(stmt: ast.stmt) -> list[str]:
    """`losses.append(loss.item())` as a statement: the local list it changes in place (kept only
    where the loss was finite, its length is what this rank's batches gave)."""
    if stmt.__class__ is ast.Expr and stmt.value.__class__ is ast.Call:
        func = stmt.value.func
        if func.__class__ is ast.Attribute and func.attr in ("append", "extend") and func.value.__class__ is ast.Name:
            return [func.value.id]
    return []


def _constant(value: ast.AST) -> bool:
    """`0`, `-1`, `float("inf")`, `None`, `False`: an initial value, the same on every rank."""
    if isinstance(value, ast.Constant):
        return True
    if isinstance(value, ast.UnaryOp) and isinstance(value.operand, ast.Constant):
        return True
    if isinstance(value, ast.Call) and last_name(value.func) in ("float", "int") and value.args \
            and all(isinstance(a, ast.Constant) for a in value.args):
        return True
    if isinstance(value, ast.Call) and last_name(value.func) in ("tensor", "zeros", "ones", "full") \
            and value.args and all(_constant(a) for a in value.args) \
            and all(_constant(k.value) or k.arg in ("device", "dtype") for k in value.keywords):
        return True  # `torch.tensor(0)`, `torch.zeros(1, device=device)`: the same on every rank
    if isinstance(value, ast.Attribute) and value.attr in ("inf", "nan"):
        return True
    if isinstance(value, ast.Dict):  # `stats = {"epoch": 0}`: an initial record, alike everywhere
        return all(k is not None and _constant(k) for k in value.keys) and all(_constant(v) for v in value.values)
    # (`self.top_k = []`: an empty record, alike everywhere)
    return isinstance(value, (ast.Tuple, ast.List, ast.Set)) and all(_constant(e) for e in value.elts)


# Collectives whose result only one rank holds (the destination): they make nothing the same.
ONE_RANK_RESULT = frozenset({"reduce", "gather", "gather_object"})


def _hands_back_shared(program, fn: Function) -> bool:
    """fn makes some value every process's through a collective that returns it (Accelerate's
    `total = accelerator.reduce(total)` before `return (total / n).item()`): what such a helper
    returns is not taken as the rank's own number."""
    return any(_returned_to_all(c, program.collective(c, fn) or "") for c in fn.own_calls)


def _one_rank_result(call: ast.Call, op: str) -> bool:
    """torch.distributed's reduce / gather leave the result on the destination rank alone."""
    return last_name(call.func) in ONE_RANK_RESULT and not _returned_to_all(call, op)


def _returned_to_all(call: ast.Call, op: str) -> bool:
    """Accelerate's `reduce`, `gather` and `gather_for_metrics` return the result to every
    process (an all-reduce, an all-gather of a copy): what the call returns is every rank's,
    not what it is handed (`n = acc.gather(torch.tensor([len(batch)]))` shares n, not batch)."""
    return last_name(call.func) in ONE_RANK_RESULT | {"gather_for_metrics"} and \
        op.startswith(("accelerator.", "accelerate "))


def _shared(builder: Builder, fn: Function) -> frozenset:
    return shared_names(builder.program, fn)


def _grad_norm_of(value: ast.Call) -> bool:
    """`clip_grad_norm_(...)`, or `.item()` / `float()` / `.cpu()` of one."""
    read = _read_off(value)
    return read.__class__ is ast.Call and (last_name(read.func) or "").startswith("clip_grad_norm")


def shared_names(program, fn: Function, forwards: bool = True) -> frozenset:
    """Names handed to a collective anywhere in fn (`dist.broadcast_object_list([stop])`,
    `dist.all_reduce(flag)`): their value is made the same on every rank there. Made once per
    function (several DDP809 passes ask). forwards=False: not what is handed to a DDP forward or
    backward, whose batch stays each rank's own (PSED's `X_val.size(0)` in its validation sum);
    the tensor tests keep those names as a trail's end (a loss computed past one is no proof)."""
    key = "_shared_names" if forwards else "_shared_names_no_forwards"
    found = fn.__dict__.get(key)
    if found is not None:
        return found
    names: set[str] = set()
    # `grad_norm = clip_grad_norm_(model.parameters(), ...)`: the norm of gradients DDP's
    # backward all-reduced, the same on every rank
    # (also read off it: `norm = clip_grad_norm_(...).item()`, `float(clip_grad_norm_(...))`)
    names.update(name for name, values in fn.bindings.items()
                 if any(isinstance(v, ast.Call) and _grad_norm_of(v) for _, v in values))
    for node in fn.own_calls:  # fn.own's calls in its order: 136,000 tests fewer on open_clip
        op = program.collective(node, fn)
        if op:
            if _one_rank_result(node, op):
                continue  # `dist.reduce(val, dst=0)`: only rank 0 holds the sum; the others keep their own
            if _returned_to_all(node, op):
                # (a name bound to the result alone: `loss = accelerator.reduce(loss)` after a test on
                # the rank's own loss leaves that test the rank's; the set here is not by flow)
                names.update(name for name, values in fn.bindings.items()
                             if values and all(_read_off(v) is node for _, v in values))
                continue
            if not forwards and op.startswith((DDP_FORWARD, DDP_BACKWARD, FSDP_FORWARD)):
                continue
            if op.startswith("DistributedDataParallel("):
                continue  # the constructor makes the parameters alike, not what the module computes
            if last_name(node.func) in ("log", "log_dict") and any(k.arg == "sync_dist" for k in node.keywords):
                # Lightning's `self.log("loss", loss, sync_dist=True)` reduces a copy for the logger:
                # `loss` stays this rank's own (ISSM-SAR's NaN skip beside its logged loss)
                continue
            if _into_a_temporary(node):
                # `dist.all_reduce(torch.tensor(avg_loss, device=d))`: the sum lands in a tensor
                # made for the call and dropped; `avg_loss` stays this rank's own (equicat)
                continue
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                names.update(n.id for n in walk(arg) if isinstance(n, ast.Name))
        elif node.args:
            # `val_loss = reduce_mean(val_loss)` of a local helper that all-reduces what it is
            # handed: what it returns is every rank's; what it is handed too where the helper
            # all-reduces the very tensor (in place), not a tensor it makes of a number
            # (cramming's `communicate_flags(training_allowed, ...)` shares its own copies)
            mode = sharing_helper(program, node, fn)
            if mode == "in place":
                names.update(n.id for arg in node.args for n in walk(arg) if isinstance(n, ast.Name))
            if mode:
                names.update(name for name, values in fn.bindings.items() if any(v is node for _, v in values))
    names |= _round_tripped(fn, names)
    found = fn.__dict__[key] = frozenset(names)
    return found


# Collectives that write their result into the tensor they are handed.
_IN_PLACE = frozenset({"all_reduce", "broadcast", "reduce"})
# Calls that make a new tensor of a number.
_TENSOR_MAKERS = frozenset({"tensor", "as_tensor", "Tensor", "FloatTensor", "LongTensor", "DoubleTensor"})


def _into_a_temporary(node: ast.Call) -> bool:
    """An in-place collective handed a tensor made in the call's own argument (`torch.tensor(x)`):
    its result is dropped with the temporary, nothing the function holds is made alike."""
    if last_name(node.func) not in _IN_PLACE or not node.args:
        return False
    first = node.args[0]
    return first.__class__ is ast.Call and last_name(first.func) in _TENSOR_MAKERS


def _read_off(value: ast.AST, hops: int = 3) -> ast.AST:
    """The call a number is read off (`acc.reduce(t, "sum").item()`, `float(x.cpu())`,
    `clip_grad_norm_(...).item()`): the value itself where it is no such reading."""
    for _ in range(hops):
        if value.__class__ is ast.Call and value.func.__class__ is ast.Attribute and \
                value.func.attr in ("item", "cpu", "detach", "tolist") and not value.args:
            value = value.func.value
        elif value.__class__ is ast.Call and value.func.__class__ is ast.Name and \
                value.func.id in ("float", "int") and len(value.args) == 1:
            value = value.args[0]
        else:
            break
    return value


def _round_tripped(fn: Function, shared: set) -> set:
    """A flag sent through a collective and read back: `signal = torch.tensor(1.0 if stop else
    0.0)`, `dist.broadcast(signal, src=0)`, `if signal.item() == 1.0: stop = True` - the flag is
    what the shared tensor made of it says, on every rank (RARE-UNet's early stop)."""
    made_of = {name: {n.id for _, v in fn.bindings.get(name, ()) for n in walk(v) if n.__class__ is ast.Name}
               for name in shared}
    found = set()
    for node in fn.own_of(ast.If):
        tested = {n.id for n in walk(node.test) if n.__class__ is ast.Name} & shared
        if not tested:
            continue
        for stmt in node.body:
            if stmt.__class__ is ast.Assign and len(stmt.targets) == 1 and stmt.targets[0].__class__ is ast.Name \
                    and stmt.value.__class__ is ast.Constant and \
                    any(stmt.targets[0].id in made_of.get(name, ()) for name in tested):
                found.add(stmt.targets[0].id)
    return found


def _read_back(program, fn: Function, shared: frozenset) -> dict[str, list[int]]:
    """Lines where a name is bound anew to what a shared tensor says (`skip = flag_t.item() > 0`
    after `dist.all_reduce(flag_t, op=MAX)`), in the block every distributed run takes (no `if`
    around it, or only tests that hold wherever the run is distributed: `if dist.is_initialized():`,
    whose other side is one process): a test below that line reads every rank's verdict. Kept
    per function."""
    found = fn.__dict__.get("_read_back")
    if found is not None:
        return found
    found = fn.__dict__["_read_back"] = {}
    if not shared or fn.node is None:
        return found
    for node in fn.own_of(ast.Assign):
        if len(node.targets) != 1 or node.targets[0].__class__ is not ast.Name:
            continue
        read = {n.id for n in walk(node.value) if n.__class__ is ast.Name}
        if not read or not read <= shared or node.targets[0].id in read:
            continue
        if not any(c.lineno < node.lineno and program.collective(c, fn) and read & {
                n.id for a in c.args for n in walk(a) if n.__class__ is ast.Name} for c in fn.own_calls):
            continue  # (read before the collective shared it: still the rank's own)
        around = [owner for _, _, owner, field in reaching._path_to(fn.node, node) or ()
                  if owner.__class__ is ast.If and not (field == "body" and program.ranks.distributed_run(owner.test, fn))]
        if not around:
            found.setdefault(node.targets[0].id, []).append(node.lineno)
    return found


def sharing_helper(program, call: ast.Call, fn: Function) -> str:
    """How a local function the call goes to makes a value every rank's: "in place" where its own
    body runs a collective that shares one (all_reduce, all_gather, broadcast; not a reduce to
    one rank) on one of its parameters, "returned" where on what it makes of one and returns a
    value (or in place on the very name it returns); "" where neither."""
    modes = [_shares_its_params(program, target) for target in program.resolve(call.func, fn)[0]
             if target.node is not None and not isinstance(target.node, ast.Module)]
    return "in place" if "in place" in modes else "returned" if "returned" in modes else ""


def _shares_its_params(program, target: Function) -> str:
    """sharing_helper's answer for one function, worked out once (every call into it asks)."""
    found = target.__dict__.get("_shares_params")
    if found is not None:
        return found
    found = ""
    collectives = [inner for inner in target.own_calls if program.collective(inner, target)]
    if collectives:
        own = set(target.params)
        made = set(own)
        # (and the names a tuple or a loop unpacks from them: `values, sizes = read(obj)`, `for k,
        # value in values.items()` - torchdrug's comm.cat, which all-reduces a buffer it fills)
        unpacked = [(stmt.targets[0], stmt.value) for stmt in target.own_of(ast.Assign)
                    if len(stmt.targets) == 1 and stmt.targets[0].__class__ in (ast.Tuple, ast.List)] + \
            [(loop.target, loop.iter) for loop in target.own_of(ast.For)]
        for _ in range(4):  # and what is made of them (`t = torch.tensor(value)`, then all_reduce(t))
            made |= {name for name, values in target.bindings.items()
                     if any(isinstance(n, ast.Name) and n.id in made for _, v in values for n in walk(v))}
            made |= {n.id for into, value in unpacked if any(m.__class__ is ast.Name and m.id in made for m in walk(value))
                     for n in walk(into) if n.__class__ is ast.Name}
        returns = any(isinstance(n, ast.Return) and n.value is not None for n in walk(target.node))
        # (`loss = model(*batch)`, `dist.broadcast(loss, src=0)`, `return loss`: the name it returns
        # was made alike in place, whatever it was made of)
        returned = {n.value.id for n in walk(target.node) if n.__class__ is ast.Return and n.value.__class__ is ast.Name}
        for inner in collectives:
            op = program.collective(inner, target)
            if _one_rank_result(inner, op) or \
                    op.startswith((DDP_FORWARD, DDP_BACKWARD, "DistributedDataParallel(")):
                continue
            handed = {n.id for arg in [*inner.args, *(k.value for k in inner.keywords)] for n in walk(arg)
                      if isinstance(n, ast.Name)}
            if handed & own and not any(target.bindings.get(name) for name in handed & own) \
                    and not _returned_to_all(inner, op):  # (Accelerate's reduce works on a copy)
                found = "in place"
                break
            if handed & made and returns:
                found = "returned"
            elif handed & returned and last_name(inner.func) in _IN_PLACE:
                found = "returned"
    target.__dict__["_shares_params"] = found
    return found


def _rank_state(builder: Builder, fn: Function, stmts: list[_Stmt], ddp: bool) -> list[RankLocalDecision]:
    assigned: dict[str, list[_Stmt]] = {}
    loop_targets: set[str] = set()
    for item in stmts:
        for name in _state_targets(item.node) + _fields_set_by_call(builder, fn, item.node):
            assigned.setdefault(name, []).append(item)
        if isinstance(item.node, (ast.For, ast.AsyncFor)):
            loop_targets.update(n.id for n in walk(item.node.target) if isinstance(n, ast.Name))
    shared = _shared(builder, fn)
    for name, items in assigned.items():
        # `start = load_step(path, 0)` where load_step returns what it sets under a rank test
        # (rank 0 reads the saved step): the caller's name is as rank-local as the helper's
        items[:] = [_through_helper(builder, fn, i, name) or _field_through_method(builder, fn, i, name)
                    or (None if _both_sides_alike(fn, i) else _under_value_test(i, shared)) or i for i in items]
    local: dict[str, _Stmt] = {}
    ranked_of: dict[str, list[_Stmt]] = {}  # every assignment of a local name under a rank test
    relative: set[str] = set()  # also stepped on every rank: the rank's own value carries on
    ahead: set[str] = set()  # stepped on every rank, and further under a rank test
    for name, items in assigned.items():
        if name in shared or name in loop_targets:
            continue
        # (`if torch.isnan(loss): step += 1; continue`: the skip is the first cause, told on its
        # own; the count it leaves behind is its consequence, not a second finding)
        ranked = [i for i in items if _ranked(i) and not _converted(builder, fn, i.node, name)
                  and not _value_skip(fn, i)]
        if not ranked:  # no rank test sets it: nothing below applies (and unparse is dear)
            continue
        if _received_side(builder.program, fn, ranked, name) or _handed_back(builder.program, fn, ranked, name):
            continue
        others = [i for i in items if not i.guards]
        # every rank binds it again after the last rank-only binding, outside any loop (rank 0
        # builds the config and pickles it; after the barrier each rank loads `cfg =
        # pickle.load(f)`): the value every rank goes on with is that one
        if ranked and not any(i.loops for i in ranked) and any(
                isinstance(i.node, (ast.Assign, ast.AnnAssign)) and not i.loops and not i.conditional
                and i.node.lineno > max(r.node.lineno for r in ranked) for i in others):
            continue
        # a rank test that assigns what every rank assigned before (`epochs = opt.epochs` again,
        # after a logger may have changed opt): the same source, not a rank's own value
        every = {text(v) for i in others for v in [_value_of(i.node, name)] if v is not None}
        ranked = [i for i in ranked if not (isinstance(i.node, ast.Assign) and
                                            text(_value_of(i.node, name) or i.node) in every)]
        # every rank's own assignments are initial constants or settings (`cfg.TRAIN.BEGIN_EPOCH`);
        # the updates happen under a rank test
        if ranked and all(_constant(getattr(i.node, "value", None)) or _field_constant(builder, fn, i, name) or
                          _setting(builder, _value_of(i.node, name), fn) or _resumed(fn, i, name)
                          or _from_the_options(builder, fn, i) for i in others):
            local[name] = ranked[0]
            ranked_of[name] = ranked
        # or every rank starts it outside any loop and only steps it (`epoch += 1`), while a
        # rank test sets it outright (`epoch = swa.start` on rank 0): the offset never goes away
        elif ranked and others and any(isinstance(i.node, ast.Assign) for i in ranked) and all(
                isinstance(i.node, ast.AugAssign) or not i.loops for i in others) and any(
                isinstance(i.node, ast.AugAssign) for i in others):
            local[name] = next(i for i in ranked if isinstance(i.node, ast.Assign))
            ranked_of[name] = ranked
            relative.add(name)
        # or every rank steps it and a rank test steps it further (`it += len(x)` in training,
        # again in rank 0's validation): that rank's count runs ahead, pass after pass
        elif ranked and others and all(isinstance(i.node, ast.AugAssign) and i.loops for i in ranked) and any(
                isinstance(i.node, ast.AugAssign) for i in others):
            local[name] = ranked[0]
            ranked_of[name] = ranked
            ahead.add(name)
    if not local:
        return []
    made_from = _derived(assigned, local, ranked_of, shared, loop_targets)
    found = []
    for item in stmts:
        stmt = item.node
        if not isinstance(stmt, (ast.If, ast.While, ast.For, ast.AsyncFor)) or item.guards:
            continue
        decided = stmt.iter if isinstance(stmt, (ast.For, ast.AsyncFor)) else stmt.test
        read = [n.id for n in walk(decided) if isinstance(n, ast.Name) and n.id in local] + \
            [key for n in walk(decided) if isinstance(n, ast.Attribute) for key in [_field(n)] if key in local]
        if not read:
            continue
        name = read[0]
        setter = local[name]
        if _read_beside_its_rank_test(builder, fn, decided, ranked_of[name]):
            continue  # `if rank == 0 and val_set is not None:`: read only where it was set (DDP801's branch)
        rereads = isinstance(stmt, ast.While) and any(n is setter.node for n in walk(stmt))
        if setter.node.lineno > stmt.lineno and not item.loops and not rereads:
            continue  # set after the read, and no loop brings it back
        if not item.loops and _apart(fn, setter.node, stmt):
            continue  # set in one branch of an if/elif chain, read in a later branch: never both
        if isinstance(stmt, (ast.For, ast.AsyncFor)):
            # `for epoch in range(begin_epoch + 1, end)`: the bound set on rank 0 alone (a resumed
            # checkpoint's epoch) gives the ranks different numbers of passes of the work inside
            work = _work(builder, fn, list(stmt.body), ddp) or \
                (_backward_in(builder, fn, list(stmt.body), 2) if ddp else "")
            if work and any(isinstance(n, ast.Call) and last_name(n.func) == "range" for n in walk(stmt.iter)):
                # a bound rank 0 sets only on some runs (`if os.path.exists(ckpt):` a resume)
                # splits the ranks on those runs: said, a warning
                extra = (f"rank 0 takes the assignment at line {setter.node.lineno} (under a further test)"
                         if all(i.conditional for i in ranked_of[name]) else "")
                found.append(_decision(fn, stmt, text(stmt.iter), "runs a different number of passes",
                                       name, setter, work, relative, item, extra))
            continue
        if _none_kept(fn, decided, name, ranked_of[name]):
            continue
        if _settled_apart(builder, fn, decided, name):
            continue
        if all(_set_only_when_off(builder, fn, i.node) for i in ranked_of[name]):
            continue  # (`if args.early_stop_epoch > 1:` around rank 0's setting, -1 as launched)
        effect = _effect(builder, fn, stmt, item, ddp) or \
            _nested_effect(builder, fn, stmt, item, ddp, told=frozenset(k.rpartition(".")[2] for k in local))
        if effect is None and rereads:
            # `while epoch < max_epochs:` - the rank whose value is ahead leaves the loop
            work = _work(builder, fn, list(stmt.body), ddp)
            effect = ("leaves the loop", work) if work else None
        if effect is None:
            continue
        action, work = effect
        gate = _setting_gate(builder, fn, decided, name)
        if gate is False:
            continue  # read only beside a setting the launch turns off
        # (a name made from the rank-local one is told by that one: it is what rank 0 alone sets)
        found.append(_decision(fn, stmt, text(stmt.test), action, made_from.get(name, name), setter, work,
                               relative, item,
                               f"`{gate}` holds (a setting the test reads `{name}` beside)" if gate else ""))
        found[-1].stepped = name in ahead
    return found


def _read_beside_its_rank_test(builder: Builder, fn: Function, decided: ast.AST, ranked: list) -> bool:
    """The test joins, with `and`, the very rank test every rank-only assignment sits under
    (`val_set` set under `rank == 0`, read as `rank == 0 and val_set is not None`): the value is
    read only on the ranks that set it, and the other ranks' side is the rank test's own - a
    rank branch, told as one, not a disagreement on the value."""
    if not (isinstance(decided, ast.BoolOp) and isinstance(decided.op, ast.And)):
        return False
    tests = [builder.program.ranks.guard(part, fn) for part in decided.values]
    held = {(t.key, t.polarity, t.scope) for t in tests if t is not None}
    return bool(held) and all(item.guards and (item.guards[-1].key, item.guards[-1].polarity,
                                               item.guards[-1].scope) in held for item in ranked)


# builtins that read a value and share nothing
_PLAIN_READS = frozenset({"len", "min", "max", "sum", "sorted", "list", "tuple", "set", "float", "int", "bool",
                          "all", "any", "abs", "round", "reversed", "enumerate", "zip", "range"})


def _derived(assigned: dict, local: dict, ranked_of: dict, shared, loop_targets: set) -> dict:
    """Names every rank binds only from a rank-local one (`recent = [m["wer"] for m in
    all_metrics[-k:]]` where rank 0 alone appends to all_metrics): as rank-local as their
    source, set where it is (a few steps of such copies). Returns {derived name: the rank-local
    name it is made from}."""
    made_from: dict = {}
    # (from a list rank 0 alone grows - its metrics history - not from a value a rank test picks:
    # a rank's own subgroup index, a checkpoint each side loads its own way, are the design)
    grown = {name for name in local if all(_grown(i.node) for i in ranked_of[name])}
    for _ in range(3):
        more = False
        for name, items in assigned.items():
            if name in local or name in shared or name in loop_targets or not items:
                continue
            sources = []
            for item in items:
                value = _value_of(item.node, name) if isinstance(item.node, (ast.Assign, ast.AnnAssign)) else None
                # (only a plain reading of it: `[m["wer"] for m in kept]`, `len(kept)` - a call of
                # anything else may share it, `from_zero(own)` broadcasting rank 0's)
                read = [n.id for n in walk(value) if n.__class__ is ast.Name and n.id in grown] \
                    if value is not None and not item.guards and all(
                        c.func.__class__ is ast.Name and c.func.id in _PLAIN_READS
                        for c in walk(value) if c.__class__ is ast.Call) else []
                if not read:
                    break
                sources.append(read[0])
            else:
                local[name] = local[sources[0]]
                ranked_of[name] = ranked_of[sources[0]]
                made_from[name] = made_from.get(sources[0], sources[0])
                grown.add(name)
                more = True
        if not more:
            break
    return made_from


def _setting_gate(builder: Builder, fn: Function, test: ast.AST, name: str):
    """`step >= steps or (config.EARLY_STOPPING and stop)`, `not config.EARLY_STOPPING or not
    stop`: the rank-local name decides only where a setting beside it (in the same `and` / `or`)
    lets it. The setting's text where the launch does not settle it (a warning that says so),
    False where it settles it off (the name decides nothing), None where nothing gates the read."""
    for node in walk(test):
        if node.__class__ is not ast.BoolOp:
            continue
        holding = [v for v in node.values if any(n.__class__ is ast.Name and n.id == name or _field(n) == name
                                                 for n in walk(v))]
        if len(holding) != 1 or holding[0].__class__ is ast.BoolOp:
            continue  # (the innermost `and` / `or` around the read answers)
        for other in node.values:
            plain = other.operand if other.__class__ is ast.UnaryOp and other.op.__class__ is ast.Not else other
            if other is holding[0] or not (_setting(builder, plain, fn) or (
                    plain.__class__ is ast.Name and plain.id.isupper())):
                continue
            # the value that lets the read decide: true beside `and`, false beside `or`
            lets = node.op.__class__ is ast.And
            held = defaults_settled(other, builder.program)
            if held is None:
                return text(other) if lets else f"not {text(other)}" if other is plain else text(plain)
            if held is not lets:
                return False
        return None
    return None



def _received_side(program, fn: Function, ranked: list, name: str) -> bool:
    """A side of the rank test takes the value from another rank (`if is_first: n = len(batch)`
    / `else: dist.recv(count, src=rank - 1); n = int(count.item())`, a pipeline stage's
    micro-batch count): the test decides where the value comes from, not that it differs."""
    received = received_names(program, fn)
    return bool(received) and any(value_inputs(value) & received for item in ranked
                                  for value in [_value_of(item.node, name)] if value is not None)


def _handed_back(program, fn: Function, ranked: list, name: str) -> bool:
    """Every rank-only assignment is `args = record(args)`, a local helper that returns the very
    object it is handed (after writing a log of it, or setting a field): the name still holds
    what every rank holds (NGramSwin's `if rank == 0: args = record_args_after_build(args)`)."""
    for item in ranked:
        value = _value_of(item.node, name)
        if not (isinstance(value, ast.Call) and any(isinstance(a, ast.Name) and a.id == name for a in value.args)):
            return False
        index = next(i for i, a in enumerate(value.args) if isinstance(a, ast.Name) and a.id == name)
        targets = [t for t in program.resolve(value.func, fn)[0] if t.node is not None and not isinstance(t.node, ast.Module)]
        if not targets or not all(_returns_param(t, index) for t in targets):
            return False
    return True


def _returns_param(target: Function, index: int) -> bool:
    """Every return of the function gives back its parameter at that position."""
    params = [p for p in target.params if p not in ("self", "cls")] if target.cls is not None else target.params
    if index >= len(params):
        return False
    returns = [n for n in target.own if n.__class__ is ast.Return]
    return bool(returns) and all(isinstance(r.value, ast.Name) and r.value.id == params[index] for r in returns)


def _none_kept(fn: Function, decided: ast.AST, name: str, ranked: list) -> bool:
    """The decision tests only whether the name is None (`if val_loader is not None:`) and each
    rank-only assignment wraps the value itself inside `if <name> is not None:` (`val_loader =
    tqdm(val_loader, ...)` on rank 0, for its progress bar): not None before, not None after, on
    every rank alike. Also where the test reads the name only so, beside other parts (`if
    pretrain_path is None and checkpoint_path is None:`), a guard holds it as one part of an `and`
    (`if pretrain_path is not None and world_rank < tp:`), and the new value is built from it
    by an operator or an f-string (`pretrain_path = pretrain_path + "_rank_" + str(rank)`)."""
    reads = [n for n in walk(decided) if isinstance(n, ast.Name) and n.id == name]
    tests = [n for n in walk(decided) if isinstance(n, ast.Compare) and len(n.ops) == 1
             and isinstance(n.ops[0], (ast.Is, ast.IsNot)) and isinstance(n.left, ast.Name) and n.left.id == name
             and is_const(n.comparators[0], None)]
    if not reads or len(tests) != len(reads):
        return False
    said = f"{name} is not None"
    guards = [node for node in fn.own_of(ast.If) if text(node.test) == said or (
        isinstance(node.test, ast.BoolOp) and isinstance(node.test.op, ast.And)
        and any(text(v) == said for v in node.test.values))]
    return all(isinstance(i.node, ast.Assign) and _kept_not_none(i.node.value, name)
               and any(i.node is n for g in guards for stmt in g.body for n in walk(stmt)) for i in ranked)


def _kept_not_none(value: ast.AST, name: str) -> bool:
    """A value made from the name that is never None: a call handed it (`tqdm(loader)`), or an
    operator or f-string over it."""
    if isinstance(value, ast.Call):
        return any(isinstance(a, ast.Name) and a.id == name for a in value.args)
    return isinstance(value, (ast.BinOp, ast.JoinedStr)) and \
        any(isinstance(n, ast.Name) and n.id == name for n in walk(value))


def _apart(fn: Function, setter: ast.stmt, read: ast.stmt) -> bool:
    """The setter sits in the body of an `if` and the read in its `else:` / `elif` (or the other
    way round): one run takes one side, so the read never sees that assignment."""
    for node in fn.own_of(ast.If):
        if node.orelse:
            body = any(n is setter for stmt in node.body for n in walk(stmt))
            other = any(n is read for stmt in node.orelse for n in walk(stmt))
            if body and other:
                return True
    return False


def _converted(builder: Builder, fn: Function, stmt: ast.stmt, name: str) -> bool:
    """`config = TrainingConfig(**config)` on one rank: the same settings in another class
    (ALIGNN turns a dict into its config on rank 0), not a value of that rank's own."""
    value = _value_of(stmt, name) if isinstance(stmt, ast.Assign) else None
    if not isinstance(value, ast.Call) or any(k.arg is not None for k in value.keywords):
        return False
    # its one argument is the name itself: `C(config)`, `C(*config)` or `C(**config)`
    given = [a.value if isinstance(a, ast.Starred) else a for a in value.args] + [k.value for k in value.keywords]
    return len(given) == 1 and isinstance(given[0], ast.Name) and given[0].id == name and \
        builder.program.is_class(builder.program.callee(value.func, fn))


def _tensor_tested(test: ast.AST) -> bool:
    """A test on a tensor's value, as _tensor_values reads one (`not torch.isfinite(loss)`,
    `loss.item() > limit`)."""
    return any(isinstance(c, ast.Call) and (
        (last_name(c.func) in VALUE_TESTS and (c.args or isinstance(c.func, ast.Attribute)))
        or (isinstance(c.func, ast.Attribute) and c.func.attr == "item" and not c.args
            and any(isinstance(cmp, ast.Compare) for cmp in walk(test))))
        for c in walk(test))


def _item_valued(program, fn: Function, test: ast.AST) -> bool:
    """A comparison on a number this rank computed from its own tensors' `.item()` (a
    validation loss summed over its shard, ppln's early stopping) that no collective shared; or
    a flag set under such a comparison (`if val_loss < best: improved = True`, then `if not
    improved:`: propulate's tutorial)."""
    if isinstance(test, ast.Compare):
        if all(isinstance(op, (ast.Is, ast.IsNot)) for op in test.ops):
            return False  # `checkpoint is not None`: whether it was set, not what a batch gave
        # (`len(losses) > 0` reads how many were kept, not what they were: value_inputs skips it)
        return bool(value_inputs(test) & _item_names(program, fn)) or any(
            isinstance(c, ast.Call) and _returns_item(program, c, fn) for c in walk(test))  # `if evaluate(m) > x:`
    flag = test.operand if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) else test
    if isinstance(flag, ast.Attribute) and isinstance(flag.value, ast.Name) and flag.value.id != "self":
        return _set_by_item_call(program, fn, flag)
    return isinstance(flag, ast.Name) and flag.id in _item_flags(program, fn)


def _set_by_item_call(program, fn: Function, flag: ast.Attribute) -> bool:
    """`stopper(epoch_loss)` (or `stopper.step(val)`) with this rank's own number, then `if
    stopper.stop:` where that method sets `self.stop` under a test on what it was handed: the
    object's flag says what this rank's number did."""
    if not isinstance(flag.value, ast.Name) or flag.value.id == "self":
        return False
    owner, attr = flag.value.id, flag.attr
    items = _item_names(program, fn)
    if not items:
        return False
    for call in fn.own_calls:
        func = call.func
        if not ((isinstance(func, ast.Name) and func.id == owner) or (
                isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == owner)):
            continue
        given = [i for i, arg in enumerate(call.args) if value_inputs(arg) & items]
        if not given:
            continue
        for method in program.resolve(func, fn)[0]:
            params = [p for p in method.params if p != "self"]
            handed = {params[i] for i in given if i < len(params)}
            if method.node is None or not handed:
                continue
            # (and what the method works out from it: `score = -val_loss`, then tests on score)
            for _ in range(3):
                more = {t for node in method.own if isinstance(node, (ast.Assign, ast.AugAssign))
                        and {n.id for n in walk(node.value) if isinstance(n, ast.Name)} & handed
                        for t in _targets(node)} - handed
                if not more:
                    break
                handed |= more
            # the fields it sets under a test on what it was handed (`if self.is_better(current,
            # self.best): self.num_bad_epochs = 0 / else: += 1`)
            decided = {t.attr for node in method.own_of(ast.If)
                       if {n.id for n in walk(node.test) if isinstance(n, ast.Name)} & handed
                       for stmt in walk(node) if isinstance(stmt, (ast.Assign, ast.AugAssign))
                       for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target])
                       if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"}
            if attr in decided or _property_reads(program, method, attr) & decided:
                return True
    return False


def _property_reads(program, method: Function, attr: str) -> set:
    """The `self.<field>`s a property of the method's class returns from (`@property def stop(self):
    return self.num_bad_epochs > self.patience`, world-models' EarlyStopping): what reading
    `obj.stop` reads."""
    if method.cls is None:
        return set()
    prop = program.method(method.cls, attr)
    if prop is None or prop.node is None or not any(
            last_name(d) == "property" for d in getattr(prop.node, "decorator_list", ())):
        return set()
    return {n.attr for ret in prop.own_of(ast.Return) if ret.value is not None for n in walk(ret.value)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"}


def _item_flags(program, fn: Function) -> frozenset:
    """Names fn only ever sets to constants, at least once under a comparison on one of its
    `.item()` numbers: a flag that says what this rank's own number did."""
    found = fn.__dict__.get("_item_flags")
    if found is not None:
        return found
    items = _item_names(program, fn)
    flags: set = set()
    if items:
        constants: dict[str, bool] = {}
        for node in fn.own_of(ast.Assign, ast.AugAssign, ast.AnnAssign):
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                for name in _targets(node):
                    constants[name] = constants.get(name, True) and isinstance(node, ast.Assign) and \
                        isinstance(_value_of(node, name), ast.Constant)
        for node in fn.own_of(ast.If):
            if isinstance(node.test, ast.Compare) and \
                    {n.id for n in walk(node.test) if isinstance(n, ast.Name)} & items:
                flags.update(name for part in (node.body, node.orelse) for stmt in part
                             for name in _targets(stmt) if constants.get(name))
    found = fn.__dict__["_item_flags"] = frozenset(flags - shared_names(program, fn, forwards=False))
    return found


def _read_from_file(program, node: ast.AST, fn: Function) -> bool:
    """`checkpoint["step"]` of `checkpoint = torch.load(path)`: a number every rank reads from the
    same file (the resumed step), not one its own batches made."""
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    if not isinstance(node, ast.Name):
        return False
    bound = [v for _, v, scope in program.lookup(node.id, fn) if scope is fn]
    return bool(bound) and all(isinstance(v, ast.Call) and program.qualify(v.func, fn) == "torch.load" for v in bound)


def _item_names(program, fn: Function) -> frozenset:
    """The names fn binds from `.item()` of a tensor no collective in fn is handed (directly or
    through other such names: `total += loss.item()`, `val_loss = total / n`)."""
    found = fn.__dict__.get("_item_names")
    if found is not None:
        return found
    shared = shared_names(program, fn, forwards=False)
    pairs = []
    unpacked: set = set()  # names a tuple from an item-returning helper gives an item to
    for node in fn.own:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            pairs.append((node.targets[0].id, node.value, True))
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            pairs.append((node.target.id, node.value, False))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("append", "extend") and isinstance(node.func.value, ast.Name) and node.args:
            pairs.append((node.func.value.id, node.args[0], False))  # `losses.append(loss.item())`
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple) \
                and isinstance(node.value, ast.Call):
            # `val, n = self.evaluate()` where evaluate returns `(total / n, n)`: the item at its place
            elts = node.targets[0].elts
            unpacked.update(target.id for index, target in enumerate(elts) if isinstance(target, ast.Name)
                            and _returns_item(program, node.value, fn, (index, len(elts))))
    # `val = total.item() / world` after `dist.all_reduce(total)`: from there on the name holds
    # the shared value, whatever it summed before
    settled = {name for name, value, plain in pairs if plain and
               {n.id for n in walk(value) if isinstance(n, ast.Name)} & shared}
    names: set = unpacked - shared
    # the bindings that gave each name its item: a read that none of them reaches (`step =
    # state.pop("step")` before the loop; `state = dict(loss=loss.item())` in it, gns's resumed
    # step) is fed nothing; None: given whatever binding reaches (the unpacked ones)
    took: dict[str, Optional[set]] = {name: None for name in names}
    conds = fn.__dict__.get("_call_conds", {})
    done: set[int] = set()
    for _ in range(3):
        grown = False
        for name, value, plain in pairs:
            if id(value) in done or name in shared or name in settled:
                continue
            used = {n.id for n in walk(value) if isinstance(n, ast.Name)}
            if used & shared:
                continue
            # (what only sizes a value does not feed it: `cfg = add_total_steps(cfg,
            # step_per_epoch=len(ds_train))` of a dataset built with an item-drawn seed)
            fed = any(_fed(fn, u, value, took[u]) for u in value_inputs(value) & names)
            items = any(isinstance(c, ast.Call) and (isinstance(c.func, ast.Attribute) and c.func.attr == "item"
                                                     and not c.args and not _read_from_file(program, c.func.value, fn)
                                                     or _returns_item(program, c, fn))
                        # (not on the one-process side: `if world_size > 1: all_reduce(t); v +=
                        # t.item() / world` / `else: v += loss.item()`, the else runs in no rank)
                        and not _single_process(conds.get(id(c), ()))
                        for c in walk(value))
            if items or fed:
                done.add(id(value))
                # (an item added in place - `losses.append(loss.item())`, `total += ...` - is in
                # the name whichever binding of it a read meets: no flow question to ask)
                if not plain:
                    took[name] = None
                elif name not in names or took.get(name) is not None:
                    took[name] = (took.get(name) or set()) | {id(value)}
                names.add(name)
                grown = True
        if not grown:
            break
    found = fn.__dict__["_item_names"] = frozenset(names)
    return found


def _fed(fn: Function, name: str, value: ast.AST, given: Optional[set]) -> bool:
    """Some binding that gave `name` its item reaches the read of it in value (the flow's
    answer, reaching.reaching_values; where it cannot tell, every binding may)."""
    if given is None:
        return True
    reads = [n for n in walk(value) if n.__class__ is ast.Name and n.id == name]
    flow = reaching.reaching_values(fn.node, name, reads[0]) if reads else None
    return flow is None or any(id(v) in given for v in flow)


def _returns_item(program, call: ast.Call, fn: Function, place: Optional[tuple] = None) -> bool:
    """A local helper every return of which is a tensor's `.item()` (`def val_step(x, m): return
    m(x).mean().item()`): this rank's own number, unless the helper hands it to a collective.
    place: (index, width) of the item asked of a helper that returns a tuple. `self.validate()`
    in a base class also runs the override of each subclass the run builds (lgatr's tagger
    replaces the base's all-reduced loss with its own shard's)."""
    targets = list(program.resolve(call.func, fn)[0])
    if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) and \
            call.func.value.id == "self" and fn.cls is not None:
        for sub in program._descendants(fn.cls):
            if sub in program.built_classes:
                override = program.method(sub, call.func.attr)
                if override is not None and override not in targets:
                    targets.append(override)
    for target in targets:
        memo = target.__dict__.setdefault("_returns_item", {})
        known = memo.get(place)
        if known is None:
            returns = [r for r in getattr(target, "returned", ()) if r is not None]
            if place is not None:
                returns = [r.elts[place[0]] if isinstance(r, ast.Tuple) and len(r.elts) == place[1] else None
                           for r in returns]
            memo[place] = False  # (a helper reaching itself adds nothing)
            known = bool(returns) and all(r is not None and _item_valued_return(program, r, target)
                                          for r in returns) \
                and not shared_names(program, target, forwards=False) and not _hands_back_shared(program, target)
            memo[place] = known
        if known:
            return True
    return False


# what turns a list of a rank's own numbers into one number of its own
_REDUCTIONS = frozenset({"mean", "sum", "average", "median", "float", "max", "min", "fsum"})


def _item_valued_return(program, value: ast.AST, fn: Function) -> bool:
    """A returned value that is this rank's own number: `x.item()`, a name fn sums from such
    numbers (`return total / n`), or a dict holding one (`return {"avg": total / n}`)."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "item":
        return True
    if isinstance(value, ast.Dict):
        return any(v is not None and _item_valued_return(program, v, fn) for v in value.values)
    if isinstance(value, ast.Call) and last_name(value.func) in _REDUCTIONS and value.args:
        return _item_valued_return(program, value.args[0], fn)  # `return np.mean(kls)` of `kls.append(x.item())`
    if isinstance(value, ast.Call) and not isinstance(fn.node, ast.Module):
        return _returns_item(program, value, fn)  # `return self.evaluate()`: what that helper returns
    if isinstance(value, (ast.Name, ast.BinOp)) and not isinstance(fn.node, ast.Module):
        return bool({n.id for n in walk(value) if isinstance(n, ast.Name)} & _item_names(program, fn))
    return False


def _value_skip(fn: Function, item: _Stmt) -> bool:
    """item sits under a test on a rank's own tensor whose branch leaves the pass (`if
    torch.isnan(loss): step += 1; continue`): that decision is a DDP809 of its own."""
    if item.tensor is None or not item.guards or not item.guards[0].key.startswith("value:"):
        return False
    return any(node.__class__ is ast.If and node.test is item.tensor and node.body
               and node.body[-1].__class__ in (ast.Continue, ast.Break, ast.Return)
               and any(n is item.node for stmt in node.body for n in walk(stmt)) for node in fn.own)


def _both_sides_alike(fn: Function, item: _Stmt) -> bool:
    """The assignment is written the same on both sides of the value test it sits under (`if
    loss.item() != 0.0: ...; step += 1` / `else: step += 1`, the stereo trainer's count): the
    test decides nothing of it."""
    if item.tensor is None:
        return False
    said = text(item.node)
    for node in fn.own_of(ast.If):
        if node.test is item.tensor and node.orelse:
            sides = [side for side in (node.body, node.orelse) if any(s is item.node for s in side)]
            if sides:
                other = node.orelse if sides[0] is node.body else node.body
                return any(s.__class__ is item.node.__class__ and text(s) == said for s in other)
    return False


def _under_value_test(item: _Stmt, shared: set) -> Optional[_Stmt]:
    """An assignment under a test on a rank's own tensor (`if not torch.isfinite(loss):
    keep_going = False`), read as one under a rank test that says what it rests on: each rank
    tests its own batch's value. None where it is no such assignment, or the value was
    all-reduced first."""
    if item.guards or item.tensor is None or \
            {n.id for n in walk(item.tensor) if isinstance(n, ast.Name)} & shared:
        return None
    test = RankTest(text(item.tensor), f"value:{text(item.tensor)}", "other",
                    assumption="the value differs between ranks (each rank's own batch)")
    return _Stmt(item.node, (test,), item.loops, True, item.tensor)


def _through_helper(builder: Builder, fn: Function, item: _Stmt, name: str) -> Optional[_Stmt]:
    """The assignment read as one under the rank test of the local helper it calls, where that
    helper returns a name it sets only under a rank test (from a parameter or a constant
    otherwise); None when it is no such call. `model, stats = setup(cfg)`: the item of the
    tuple the helper returns at the name's place."""
    value, place = _value_of(item.node, name), None
    if value is None and isinstance(item.node, ast.Assign) and len(item.node.targets) == 1 and \
            isinstance(item.node.targets[0], ast.Tuple) and isinstance(item.node.value, ast.Call):
        names = [t.id if isinstance(t, ast.Name) else None for t in item.node.targets[0].elts]
        if names.count(name) == 1 and not any(isinstance(t, ast.Starred) for t in item.node.targets[0].elts):
            value, place = item.node.value, (names.index(name), len(names))
    if item.guards or not isinstance(value, ast.Call):
        return None
    for helper in builder.program.resolve(value.func, fn)[0]:
        test = _returns_rank_local(builder, helper, place)
        if test is not None:
            return _Stmt(item.node, (test,), item.loops, True)
    return None


def _field_through_method(builder: Builder, fn: Function, item: _Stmt, name: str) -> Optional[_Stmt]:
    """`solver.validate(args)` on every rank, where validate sets `self.stop` only under a rank
    test (`if args.gpu == 0: self.stop = self.es.step(score)`; a constant elsewhere in it): the
    call sets `solver.stop` as that rank test does. None when it is no such call."""
    if item.guards:
        return None
    for sets in _method_sets(builder, fn, item, name):
        ranked = [i for i in sets if i.guards]
        if ranked and all(_constant(getattr(i.node, "value", None)) for i in sets if not i.guards):
            return _Stmt(item.node, (ranked[0].guards[-1],), item.loops, True)
    return None


def _field_constant(builder: Builder, fn: Function, item: _Stmt, name: str) -> bool:
    """`solver.setup(args)`, whose method sets `self.stop = False` and nothing else of it: an
    initial constant, the same on every rank."""
    found = list(_method_sets(builder, fn, item, name))
    return bool(found) and all(sets and all(not i.guards and _constant(getattr(i.node, "value", None)) for i in sets)
                               for sets in found)


def _method_sets(builder: Builder, fn: Function, item: _Stmt, name: str):
    """For each method a call statement `obj.m(...)` reaches, its statements assigning the field
    `name` ("obj.attr") names (`self.attr = ...`), with the rank tests around them."""
    node = item.node
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
        return
    func = node.value.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
            and name.startswith(func.value.id + ".")):
        return
    attr = name[len(func.value.id) + 1:]
    for method in builder.program.resolve(func, fn)[0]:
        if method.node is None or isinstance(method.node, ast.Module):
            continue
        stmts = _statements(builder.program, method, method.node.body, (), (), False)
        yield [i for i in stmts if any(isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                                       and t.value.id == "self" and t.attr == attr for t in _assigned(i.node))]


def _returns_rank_local(builder: Builder, helper: Function, place: Optional[tuple] = None) -> Optional[RankTest]:
    """place: (index, width) of the item asked of a helper that returns a tuple."""
    cache = builder.__dict__.setdefault("_rank_local_returns", {})
    key = (helper, place)
    if key in cache:
        return cache[key]
    cache[key] = None
    if helper.node is None or isinstance(helper.node, ast.Module):
        return None
    returns = [n.value for n in walk(helper.node) if isinstance(n, ast.Return)]
    if place is not None:
        index, width = place
        returns = [r.elts[index] if isinstance(r, ast.Tuple) and len(r.elts) == width else None for r in returns]
    names = {r.id for r in returns if isinstance(r, ast.Name)}
    if len(names) != 1 or len(returns) != sum(isinstance(r, ast.Name) for r in returns):
        return None
    returned = names.pop()
    if returned in shared_names(builder.program, helper):
        return None  # broadcast from the rank that set it before it is returned
    stmts = list(_statements(builder.program, helper, helper.node.body, (), (), False))
    sets = [i for i in stmts if returned in _targets(i.node)]
    ranked = [i for i in sets if i.guards]
    if ranked and all(_constant(getattr(i.node, "value", None)) for i in sets if not i.guards) and \
            (returned in helper.params or any(not i.guards for i in sets)):
        cache[key] = ranked[0].guards[-1]
    return cache[key]


def _parents_of(fn: Function) -> dict:
    """id(node) -> the node holding it, over fn's body (made once per function)."""
    parents = fn.__dict__.get("_parents")
    if parents is None:
        parents = fn.__dict__["_parents"] = {id(child): node for node in walk(fn.node)
                                             for child in children(node)}
    return parents


def _tested_where_set(fn: Function, test: ast.stmt, setter: ast.stmt) -> bool:
    """Every plain `if` / `while` around the test is around the assignment too (`if not
    self.evaluate_only:` holding the epoch loop, its rank-0 counter and the test of it): the
    test is reached on whatever ranks reach the counter's loop, nothing more to assume."""
    parents = _parents_of(fn)
    def enclosing(start: ast.AST) -> list:
        found, node = [], parents.get(id(start))
        while node is not None and node is not fn.node:
            if isinstance(node, (ast.If, ast.While)):
                found.append(node)
            node = parents.get(id(node))
        return found

    around = enclosing(test)
    # (or an `if` of the same test around the assignment: `if j > 0 and j % k == 0:` holds the
    # rank-0 append to the metrics, and again, later in the pass, the test that reads them)
    tests = {ast.dump(block.test) for block in enclosing(setter) if isinstance(block, ast.If)}
    return all(any(n is setter for n in walk(block))
               or (isinstance(block, ast.If) and ast.dump(block.test) in tests and block.orelse == [])
               for block in around)


def _set_only_when_off(builder: Builder, fn: Function, setter: ast.stmt) -> bool:
    """The rank-only assignment sits on a side of an `if` the options as launched never take
    (`if args.early_stop_epoch is not None and args.early_stop_epoch > 1:` around rank 0's
    `early_stop_flag = True`, --early_stop_epoch -1 in every launch: LucaOne's tasks): the value
    stays what every rank started with."""
    parents = _parents_of(fn)
    node, below = parents.get(id(setter)), setter
    while node is not None and node is not fn.node:
        if node.__class__ is ast.If:
            inside = any(part is below for part in node.body)
            held = defaults_settled(node.test, builder.program)
            if held is not None and held != inside and (inside or any(part is below for part in node.orelse)):
                return True
        node, below = parents.get(id(node)), node
    return False


def _settled_apart(builder: Builder, fn: Function, test: ast.AST, name: str) -> bool:
    """`if COMPUTE_FLOPS and not done and is_global_zero:` - a test of `a and b and ...` with a
    part no way through the function makes true (a local bound only to False): no rank takes
    the branch, whatever the rank-local value holds. (A rank test among the parts settles
    nothing: `if rank == 0 and stale >= patience: break` is rank 0's own count deciding.)"""
    if not (isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And)):
        return False
    callers = builder.callers()
    for part in test.values:
        if any(isinstance(n, ast.Name) and n.id == name or _field(n) == name for n in walk(part)):
            continue  # the rank-local value itself
        if never_true(callers, fn, text(part), True, builder.program):
            return True
    return False


# what a decision resting on a forward with gradients off assumes (NO_GRAD_FORWARD)
NO_GRAD_ASSUMPTION = "a training step comes between that forward and the last one"


def _decision(fn: Function, stmt: ast.stmt, test: str, action: str, name: str, setter: _Stmt, work: str,
              relative: set, item: _Stmt, extra: str = "") -> RankLocalDecision:
    rank_test = setter.guards[-1]
    notes = [extra] if extra else []
    if name in relative:
        notes.append(f"the value set under `{rank_test.text}` differs from the one the other ranks step")
    if rank_test.assumption:
        notes.append(rank_test.assumption)
    if item.conditional and not _tested_where_set(fn, stmt, setter.node):
        notes.append(f"the test at line {stmt.lineno} is reached on every rank")
    if no_grad_forward(work):
        # (a forward with gradients off broadcasts buffers only as the first after a training
        # step: one broadcast, which may pair with the others' next forward)
        notes.append(NO_GRAD_ASSUMPTION)
    return RankLocalDecision(
        Location(fn.file.display, stmt.lineno), test, action, name, "rank_state", work,
        Location(fn.file.display, setter.node.lineno), rank_test.text, ", and ".join(notes), given=rank_test.given)


def _rank_exits(builder: Builder, fn: Function, stmts: list[_Stmt], ddp: bool) -> list[RankLocalDecision]:
    """A `break` taken under a rank test inside a loop whose other work every rank runs: rank 0
    leaves the epoch loop (an early stop on its own validation) while the others go on into the
    next pass's collectives and wait there."""
    found = []
    guards_of = {id(item.node): item.guards for item in stmts}
    for item in stmts:
        stmt = item.node
        # the first rank test inside the loop: the loop itself runs on the same ranks as before it
        if not isinstance(stmt, ast.If) or not item.loops or \
                guards_of.get(id(item.loops[-1]), ()) != item.guards:
            continue
        test = builder.program.ranks.guard(stmt.test, fn)
        if test is None and _round_robin(builder.program, stmt.test, fn):
            # `if i % world != rank: continue`: each rank keeps its own share of the passes
            test = RankTest(text(stmt.test), "round-robin", "other")
        # rank 0 leaves the loop, or the whole training function, or skips the rest of the pass
        leaving = (ast.Break, ast.Return, ast.Continue)
        if test is None:
            continue
        if any(never_true(builder.callers(), fn, part, True, builder.program) for part in test.open):
            # `if rank == 0 and get_predictions: return` where every call leaves get_predictions
            # at its default False: no rank takes it
            continue
        leave, other = _break_in(stmt.body, None, leaving), _break_in(stmt.orelse, None, leaving)
        if leave is not None and other is not None:
            continue  # both sides leave
        if stmt.orelse and (leave is None) != (other is None) and \
                _crashes_out(stmt.orelse if leave is not None else stmt.body):
            continue  # `if keep and rank == 0: continue / else: raise ...`: the others end, none goes on
        if leave is None and other is not None:
            # `if distributed and local_rank != 0: pass / else: ...; if stopper.early_stop:
            # break` (aLLM4TS): the `else:` is the side rank 0 alone takes
            leave, test = other, test.negated()
        if leave is None:
            continue
        if leave[0] is None and isinstance(leave[1], ast.Continue) and not stmt.orelse and \
                stmt.body[-1] is leave[1]:
            # `if not is_main_process(): continue` then, for the rest of the pass, rank 0's own
            # early stop: `if stale > patience: break` (GLNet's inspector) - that break is a rank
            # exit under the negated test, the others go on into the next pass's training
            later = _rest_exit(builder, fn, stmt, item, test, ddp)
            if later is not None:
                found.append(later)
                continue
        leaves = [leave]
        if other is None and leave[0] is not None:
            # `if rank == 0: if loss > 1e6: break ... if stale == patience: break` (LSTF): of
            # rank 0's exits, the early stop counted to its bound is the one the run is written
            # to take (the other rests on what the loss does): said as the reason
            loop = item.loops[-1]
            inner = [c for c in _breaks_in(stmt.body, None, leaving) if c[0] is not None]
            leave = next((c for c in inner if _counted_stop(builder.program, c[0].test, fn, loop)), leave)
            # (and each other exit rank 0 decides on a test of its own - a wall-clock limit beside
            # the early stop - is a decision of its own, told apart)
            leaves, told = [leave], {id(leave[0])}
            for other_exit in inner:
                if id(other_exit[0]) not in told:
                    told.add(id(other_exit[0]))
                    leaves.append(other_exit)
        for leave in leaves:
            around = leave[0]
            if around is not None and other is None and isinstance(stmt.test, ast.BoolOp) and \
                    isinstance(stmt.test.op, ast.Or) and any(
                        text(part) == text(around.test) and builder.program.ranks.guard(part, fn) is None
                        for part in stmt.test.values):
                # `if (rank == 0 and step % k == 0) or step >= last:` ... `if step >= last: break`:
                # where the exit's own test holds, so does the outer one's other side, on every rank
                continue
            if around is not None and _single_part(builder, around.test):
                continue  # `if RANK in {-1, 0}:` ... `if RANK == -1 and stopper(fitness): break`
            if around is not None and builder._dead_side(fn, side_conds(
                    around.test, any(n is leave[1] for part in around.body for n in walk(part)))):
                continue  # `if self.accelerator: set_trigger() else: break` with an Accelerator built in
            if around is not None and _never_counted_past(builder.program, around, leave[1], fn):
                continue  # `epoch_not_improving = 0`, never stepped, then `if epoch_not_improving > 100: break`
            loop = item.loops[-1]
            top = next(s for s in loop.body if s is stmt or any(n is stmt for n in walk(s)))
            after = loop.body[loop.body.index(top) + 1:]
            if around is not None and _left_already(loop.body[:loop.body.index(top)], around.test):
                continue  # `if step > n or args.dry_run: break` earlier in the pass: never true here
            # what every rank does in the loop besides this branch: the ones that stay run it alone
            # (after a `continue`, only the rest of the pass: FullSubNet's validation-only debug run
            # on rank 0 skips the training epoch the others run)
            skipping = isinstance(leave[1], ast.Continue)
            shared_out = skipping and test.polarity == "other"
            rest = after if skipping else [s for s in loop.body if s is not stmt and not any(n is stmt for n in walk(s))]
            if shared_out:
                # `if i % world != rank: continue` (nanoGPT's HellaSwag): each rank skips the others'
                # share, fine for the work after the loop; a collective inside the pass runs once per
                # item a rank keeps, and the ranks keep different counts unless the items divide evenly
                work = next((op for op in _collectives_in(builder, fn, rest)), "")
            else:
                work = _work(builder, fn, rest, ddp) or (_backward_in(builder, fn, rest, 2) if ddp else "")
            if not work:
                continue
            where = around if around is not None else stmt
            notes = [test.assumption] if test.assumption and not _counted_to_its_bound(builder, fn, loop, stmt.test) else []
            if shared_out:
                notes.append(f"the passes of `{text(loop.iter, 50) if isinstance(loop, ast.For) else 'the loop'}` "
                             "do not divide evenly among the ranks")
            if "new_group" in work and not skipping:
                # `for ranks in groups: g = new_group(ranks); if rank in ranks: mine = g; break`:
                # the ranks of an early group stop creating the later ones, which torch documents
                # every process must create, in the same order. Since torch 2.1 new_group waits for
                # no other rank (unless TORCH_DIST_INIT_BARRIER=1), so this parts later, not here.
                notes.append("a group created later (or TORCH_DIST_INIT_BARRIER=1) needs every process in "
                             "dist.new_group(), as torch documents")
            if around is not None and not _counted_stop(builder.program, around.test, fn, loop):
                notes.append(_side_said(around, leave[1]))
            # `if args.early_stopping: stopper(loss); if stopper.early_stop: break` with the option a
            # store_true: the exit is on a run the user asks for by name (spkver's trainer)
            switch = next((t for t in _tests_on_the_way(stmt, leave[1])
                           if declared_off(text(t), builder.program)), None)
            if switch is None and around is not None:
                # `if args.stop_early: consec += 1 (or = 0)` ... `if consec == patience: break`: the
                # count the exit tests moves only on such a run (FSCT's trainer)
                switch = _counted_under_switch(builder, loop, around.test)
            if switch is not None:
                notes.append(f"`{text(switch)}` is set")
            if not skipping and not (_work(builder, fn, after, ddp) or (_backward_in(builder, fn, after, 2) if ddp else "")) \
                    and _few_passes(builder, fn, loop):
                # All the work the others stay for comes before the exit: they wait only in a next
                # pass, and a loop over a few configured items (SSD's test sets) often has one.
                notes.append(f"the loop over `{text(loop.iter, 50)}` runs more than once")
            found.append(RankLocalDecision(
                Location(fn.file.display, where.lineno), text(where.test),
                {ast.Return: "return", ast.Continue: "continue", ast.Expr: "exit"}.get(type(leave[1]), "break"),
                test.text, "rank_exit", work,
                guard=test.text, assumption=", and ".join(notes), open_test=bool(test.open) or around is not None))
    return found


def _rank_process_exits(builder: Builder, fn: Function, stmts: list[_Stmt], ddp: bool) -> list[RankLocalDecision]:
    """The program ended under a rank test outside any loop (`if accelerator.is_local_main_process
    and os.path.exists(out): exit(0)`) while the rest of the function runs collective work on
    every rank: the ranks that stay wait there for the one that left (a rank exiting 0 ends
    nothing else: torchrun waits for the others). A loop's exits are _rank_exits'."""
    found = []
    way: Optional[_EveryWay] = None
    for item in stmts:
        stmt = item.node
        if not isinstance(stmt, ast.If) or item.loops or item.guards:
            continue
        # (not `os._exit`: Python's docs keep it for the child of a fork(), not the rank itself;
        # and a plain `return` out of the function, where the test is more than a rank test:
        # `if remaining_steps <= 0 and is_main(): return` on a resume - rank 0's decision, which
        # the collectives after it follow, where `if rank != 0: return` is DDP801's place)
        leave = next((c for c in _breaks_in(stmt.body, None, (ast.Return,)) if (
            _exits(c[1]) and not text(c[1].value.func).endswith("_exit")) or c[1].__class__ is ast.Return), None)
        if leave is None or any(_exits(c[1]) or c[1].__class__ is ast.Return
                                for c in _breaks_in(stmt.orelse, None, (ast.Return,))):
            continue
        way = way or _EveryWay(builder, fn, ddp)
        at = way.position.get(id(stmt))
        if at is None:
            continue  # (only a test reached on every rank, at the function's own level)
        test = builder.program.ranks.guard(stmt.test, fn)
        if test is None or test.polarity == "other" or \
                any(never_true(builder.callers(), fn, part, True, builder.program) for part in test.open):
            continue
        returns = leave[1].__class__ is ast.Return
        if returns and not (test.open and test.polarity == "zero"
                            and (leave[1].value is None or leave[1].value.__class__ is ast.Constant)):
            continue  # (`if rank != 0 and not cfg.every_rank: return`, rank 0 on alone: DDP801's place)
        # `if not experiments and is_main: sys.exit(0)`: where the list is empty, the loops over
        # it that hold the later work run nothing on the ranks that stay either
        idle = {n for name in _emptied(stmt.test) for n in way.loops_over(name, at)}
        if idle:
            work = next((op for op, node in _works(builder, fn, way.after(at), ddp) if id(node) not in idle), "")
        else:
            work = way.work_after(at)
        if not work:
            continue
        around = leave[0]
        notes = [test.assumption] if test.assumption else []
        if around is not None:
            notes.append(_side_said(around, leave[1]))
        found.append(RankLocalDecision(
            Location(fn.file.display, stmt.lineno), text(stmt.test), "end" if returns else "exit", test.text,
            "rank_exit", work, guard=test.text, assumption=", and ".join(notes),
            open_test=bool(test.open) or around is not None))
    return found


def _emptied(test: ast.AST) -> set[str]:
    """The names a test says are empty where it holds: `not xs`, `len(xs) == 0`, `xs == []`,
    also as parts of an `and`."""
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    out = set()
    for part in parts:
        if isinstance(part, ast.UnaryOp) and isinstance(part.op, ast.Not) and isinstance(part.operand, ast.Name):
            out.add(part.operand.id)
        elif isinstance(part, ast.Compare) and len(part.ops) == 1 and isinstance(part.ops[0], ast.Eq):
            left, right = part.left, part.comparators[0]
            if isinstance(left, ast.Call) and last_name(left.func) == "len" and len(left.args) == 1 and \
                    isinstance(left.args[0], ast.Name) and is_const(right, 0):
                out.add(left.args[0].id)
            elif isinstance(left, ast.Name) and isinstance(right, ast.List) and not right.elts:
                out.add(left.id)
    return out


class _EveryWay:
    """A function's statements in the order they run, entering only the blocks every run enters
    (a script's `if __name__ == "__main__":`, a `with`, a `try`'s own body; each block's own
    statement first, then what it holds), with the first collective work from each position on:
    worked out once per function, so a thousand exits cost one pass, not a thousand."""

    def __init__(self, builder: Builder, fn: Function, ddp: bool) -> None:
        self.builder, self.fn, self.ddp = builder, fn, ddp
        self.order: list[ast.stmt] = []
        self._flatten(getattr(fn.node, "body", []))
        self.position = {id(stmt): at for at, stmt in enumerate(self.order)}
        self._next: Optional[list[str]] = None
        self._loops: dict[str, list[tuple[int, set[int]]]] = {}

    def _flatten(self, body: list) -> None:
        for stmt in body:
            self.order.append(stmt)
            if is_main_block(stmt) or isinstance(stmt, (ast.With, ast.AsyncWith, ast.Try)):
                self._flatten(stmt.body)

    def after(self, at: int) -> list:
        return self.order[at + 1:]

    def work_after(self, at: int) -> str:
        """The first collective work (or, with a DDP model, backward) after position `at`."""
        if self._next is None:
            found, self._next = "", [""] * (len(self.order) + 1)
            for index in range(len(self.order) - 1, -1, -1):
                one = [self.order[index]]
                own = _work(self.builder, self.fn, one, self.ddp) or (
                    _backward_in(self.builder, self.fn, one, 2) if self.ddp else "")
                found = own or found
                self._next[index] = found
        return self._next[at + 1]

    def loops_over(self, name: str, at: int) -> set[int]:
        """The nodes of the loops over `name` after position `at` (all they hold)."""
        if name not in self._loops:
            self._loops[name] = [(index, {id(n) for n in walk(loop)}) for index, stmt in enumerate(self.order)
                                 for loop in walk(stmt) if isinstance(loop, (ast.For, ast.AsyncFor))
                                 and isinstance(loop.iter, ast.Name) and loop.iter.id == name]
        return {n for index, nodes in self._loops[name] if index > at for n in nodes}


def _counted_stop(program, test: ast.AST, fn: Function, loop: Optional[ast.AST] = None) -> bool:
    """An early stop counted to its bound: `stopper.early_stop` of an object whose own method sets
    that flag True once a counter it steps reaches a bound (`self.counter += 1; if self.counter >=
    self.patience: self.early_stop = True`), or a patience the loop counts down (below). A stop
    the code is written to take - a run that stops improving takes it - not an assumption."""
    if test.__class__ is ast.Compare:
        # `if patience == 0: break` of a patience the loop itself counts down on each pass without
        # improvement and resets when it improves (a step count compared with a configured total,
        # `iteration == config.train_steps`, is never reset: whether a run gets there stays the
        # assumption it was)
        if loop is None:
            return False
        # (stepped by a constant: `total += loss.item()`, reset each epoch, sums a loss, not passes)
        stepped = {n.target.id for n in walk(loop) if n.__class__ is ast.AugAssign and n.target.__class__ is ast.Name
                   and n.value.__class__ is ast.Constant}
        # (and `bad_epochs = bad_epochs + 1`, the step spelt out)
        stepped |= {n.targets[0].id for n in walk(loop) if n.__class__ is ast.Assign and len(n.targets) == 1
                    and n.targets[0].__class__ is ast.Name and n.value.__class__ is ast.BinOp
                    and n.value.op.__class__ in (ast.Add, ast.Sub) and n.value.left.__class__ is ast.Name
                    and n.value.left.id == n.targets[0].id and n.value.right.__class__ is ast.Constant}
        reset = {t.id for n in walk(loop) if n.__class__ is ast.Assign for target in n.targets
                 for t in (target.elts if target.__class__ in (ast.Tuple, ast.List) else [target])
                 if t.__class__ is ast.Name}
        if any(part.__class__ is ast.Name and part.id in stepped & reset for part in (test.left, *test.comparators)):
            return True
        # `epoch - best_epoch > patience` where the loop's own variable is `epoch` and the pass that
        # improves sets `best_epoch = epoch` (TASVARM's executor): the same count, written as a gap
        gap = test.left
        counter = loop.target.id if loop.__class__ in (ast.For, ast.AsyncFor) and \
            loop.target.__class__ is ast.Name else None
        return counter is not None and gap.__class__ is ast.BinOp and gap.op.__class__ is ast.Sub and \
            gap.left.__class__ is ast.Name and gap.left.id == counter and gap.right.__class__ is ast.Name and \
            test.ops[0].__class__ in (ast.Gt, ast.GtE) and any(
                n.__class__ is ast.Assign and n.value.__class__ is ast.Name and n.value.id == counter
                and any(t.__class__ is ast.Name and t.id == gap.right.id for t in n.targets) for n in walk(loop))
    # `stopper.early_stop(score)`: a method that returns True once the counter it steps reaches
    # its bound (`self.counter += 1; if self.counter >= self.patience: return True`)
    asked = test.func if test.__class__ is ast.Call and test.func.__class__ is ast.Attribute else test
    # (the stopper a name holds, or a field of the trainer, `self.early_stopping.early_stop`)
    if not (asked.__class__ is ast.Attribute and (asked.value.__class__ is ast.Name or _self_field(asked.value))):
        return False
    klass = program.class_of(asked.value, fn)
    if klass is None:
        # an early stopper of a library that counts to its patience by its documented contract
        return asked is test and any(
            v.__class__ is ast.Call and COUNTING_STOPPERS.get(program.qualify(v.func, scope) or "") == test.attr
            for v, scope in program.values_of(asked.value, fn, 1))
    if asked is not test:
        method = program.method(klass, asked.attr)
        return method is not None and _returns_true_at_a_count(method)
    return any(_set_at_a_count(method, s) for method in klass.methods.values() for s in method.own_of(ast.Assign)
               if is_const(s.value, True) and any(t.__class__ is ast.Attribute and t.attr == test.attr for t in s.targets))


# Library early stoppers whose flag turns True once a counter of passes without improvement
# reaches the patience they were built with: (the class, as imported) -> the flag.
# early-stopping-pytorch (Bjarten's, on PyPI as `early-stopping-pytorch`): `__call__(val_loss,
# model)` steps `self.counter` and sets `self.early_stop = True` at `counter >= patience`.
COUNTING_STOPPERS = {
    "early_stopping_pytorch.EarlyStopping": "early_stop",
    "early_stopping_pytorch.early_stopping.EarlyStopping": "early_stop",
}


def _set_at_a_count(method: Function, setter: ast.stmt) -> bool:
    """The assignment sits in the body of an `if` of the method that tests a field the method
    steps itself (`self.counter += 1`, then `if self.counter >= self.patience: <setter>`)."""
    stepped = _stepped_fields(method)
    return bool(stepped) and any(
        any(s is setter for s in node.body) and any(
            t.__class__ is ast.Attribute and t.attr in stepped for t in walk(node.test))
        for node in method.own_of(ast.If))


def _stepped_fields(method: Function) -> set:
    """The fields of self the method steps (`self.counter += 1`)."""
    return {n.target.attr for n in method.own if n.__class__ is ast.AugAssign
            and n.target.__class__ is ast.Attribute and n.target.value.__class__ is ast.Name
            and n.target.value.id == "self"}


def _returns_true_at_a_count(method: Function) -> bool:
    """The method returns True only under a test of a field it steps itself, and nowhere else
    (`else: self.counter += 1; if self.counter >= self.patience: return True`)."""
    stepped = _stepped_fields(method)
    if not stepped:
        return False
    trues = [n for n in method.own_of(ast.Return) if n.value is not None and is_const(n.value, True)]
    counted = [n for n in method.own_of(ast.If) if any(
        t.__class__ is ast.Attribute and t.attr in stepped for t in walk(n.test))]
    return bool(trues) and all(any(r is s for c in counted for part in c.body for s in walk(part)) for r in trues)


def _never_counted_past(program, around: ast.If, leave: ast.AST, fn: Function) -> bool:
    """`if stale > patience_limit: break` of a counter set once to a number and never moved (its
    author forgot `stale += 1`): the test has the same answer on every pass, and it is false
    where the exit is."""
    test = around.test
    if not (test.__class__ is ast.Compare and len(test.ops) == 1 and test.left.__class__ is ast.Name
            and test.comparators[0].__class__ is ast.Constant):
        return False
    values = pinned_constants(program, fn, test.left.id)
    truth = compared(test.ops[0], values, [test.comparators[0].value]) if values else None
    inside = any(n is leave for part in around.body for n in walk(part))
    return truth is not None and truth != inside


def _side_said(around: ast.If, leave: ast.AST) -> str:
    """What the exit's own test says where it leaves: `x` holds there, or (an exit on the
    `else:` side, `if cont_train: ... else: break`) `x` is false there."""
    inside = any(n is leave for part in around.body for n in walk(part))
    return f"`{text(around.test)}` {'holds' if inside else 'is false'} there"


def _counted_to_its_bound(builder: Builder, fn: Function, loop: ast.AST, test: ast.AST) -> bool:
    """`self.iters >= self.max_steps and is_main_process` where every pass of the loop steps
    `self.iters` up (in the loop or in a method it calls, not under a test): besides the rank,
    the test is how the run ends, so it holds sooner or later - no assumption (Seed-VC's
    rank-0 `exit()` at the last step). An early stop's counter, stepped only when the metric
    stalls, is no such count."""
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    counters, met = [], False
    for part in parts:
        if builder.program.ranks.guard(part, fn) is not None:
            continue  # the rank part
        if isinstance(part, ast.Compare) and len(part.ops) == 1 and isinstance(part.ops[0], ast.Eq) and \
                dotted(part.left) and counts_every_pass(loop, dotted(part.left)):
            # `current_iter == max_iter - 5` of `current_iter = epoch * n + i + 1` in `for i, b in
            # enumerate(loader)`, `epoch_log == args.epochs` of `epoch_log = epoch + 1`: a count
            # that takes every value on its way meets its bound as surely as `>=` does (MSeg)
            met = True
            continue
        if not (isinstance(part, ast.Compare) and len(part.ops) == 1 and isinstance(part.ops[0], (ast.GtE, ast.Gt))
                and dotted(part.left)):
            return False
        counters.append(dotted(part.left))
    if not counters:
        return met
    bodies = [list(loop.body)]
    for node in (n for stmt in loop.body if not isinstance(stmt, ast.If) for n in walk(stmt)):
        if isinstance(node, ast.Call):
            bodies.extend(list(t.node.body) for t in builder.program.resolve(node.func, fn)[0]
                          if builder.program.is_function(t) and not isinstance(t.node, ast.Module))
    return all(any(_steps_up(stmts, counter) for stmts in bodies) for counter in counters)


def _steps_up(stmts: list, counter: str) -> bool:
    """`counter += 1` among the statements, not under a test (inside a `with` or `try` it is,
    and inside the loop over the batches each pass runs: urban_seg's `while True:` around
    `for image, label in loader: ...; step += 1`)."""
    for stmt in stmts:
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, ast.Add) and dotted(stmt.target) == counter:
            return True
        if isinstance(stmt, (ast.With, ast.AsyncWith, ast.Try, ast.For, ast.AsyncFor)) and _steps_up(stmt.body, counter):
            return True
    return False


def _rest_exit(builder: Builder, fn: Function, stmt: ast.If, item: _Stmt, test: RankTest,
               ddp: bool) -> Optional[RankLocalDecision]:
    """The break (or return) out of the loop in what follows `if <rank test>: continue` in the
    same pass: only the ranks the test leaves in the pass take it."""
    loop = item.loops[-1]
    top = next((s for s in loop.body if s is stmt or any(n is stmt for n in walk(s))), None)
    if top is not stmt:
        return None  # (the test is nested: what follows it in the pass is not simply the rest)
    index = loop.body.index(top)
    exit_ = _break_in(loop.body[index + 1:], None, (ast.Break, ast.Return))
    if exit_ is None:
        return None
    around, leave = exit_
    if around is not None and _single_part(builder, around.test):
        return None
    before = loop.body[:index]
    work = _work(builder, fn, before, ddp) or (_backward_in(builder, fn, before, 2) if ddp else "")
    if not work:
        return None
    kept = test.negated()
    inner = test.text[4:] if test.text.startswith("not ") else ""
    if inner.startswith("(") and inner.endswith(")"):
        inner = inner[1:-1]
    if inner and "(" not in inner.rstrip("()"):
        kept = replace(kept, text=inner)  # `not is_main_process()` kept out: `is_main_process()`
    where = around if around is not None else stmt
    notes = [test.assumption] if test.assumption else []
    if around is not None:
        notes.append(_side_said(around, leave))
    return RankLocalDecision(
        Location(fn.file.display, where.lineno), text(where.test) if around is not None else kept.text,
        "return" if isinstance(leave, ast.Return) else "break", kept.text, "rank_exit", work,
        guard=kept.text, assumption=", and ".join(notes), open_test=around is not None)


def _left_already(before: list, test: ast.AST) -> bool:
    """An earlier statement of the same pass leaves the loop on every rank wherever `test` holds
    (`if step >= 500 or args.dry_run: break`): a later test of it can only be false (human-policy)."""
    wanted = text(test)
    for stmt in before:
        if isinstance(stmt, ast.If) and stmt.body and isinstance(stmt.body[-1], (ast.Break, ast.Return)):
            parts = stmt.test.values if isinstance(stmt.test, ast.BoolOp) and isinstance(stmt.test.op, ast.Or) \
                else [stmt.test]
            if any(text(p) == wanted for p in parts):
                return True
    return False


def _few_passes(builder: Builder, fn: Function, loop: ast.AST) -> bool:
    """A `for` over a few items known before it starts (a literal, a dict's items, a `zip` of
    lists), not over batches: `for name, data in zip(cfg.TEST, datasets)`. A zip with a loader
    in it, a range or a while loop may run many passes."""
    if not isinstance(loop, ast.For):
        return False
    source = loop.iter
    if isinstance(source, ast.Call) and last_name(source.func) == "enumerate" and source.args:
        source = source.args[0]
    if isinstance(source, (ast.List, ast.Tuple, ast.Set)):
        return True
    if not isinstance(source, ast.Call) or not isinstance(source.func, (ast.Name, ast.Attribute)):
        return False
    if isinstance(source.func, ast.Attribute) and source.func.attr in ("items", "keys", "values") \
            and not source.args:
        return True
    if last_name(source.func) != "zip" or not isinstance(source.func, ast.Name):
        return False
    program = builder.program
    for part in source.args:
        if isinstance(part, (ast.List, ast.Tuple)):
            continue
        if not isinstance(part, (ast.Name, ast.Attribute)):
            return False  # `zip(cycle(a), b)`, `zip(loader_a, iter(b))`: not known to be short
        if any(isinstance(value, ast.Call) and loader_call(program, value, scope)
               for value, scope in program.values_of(part, fn, 2)):
            return False
    return True


def reduced_by(builder: Builder) -> str:
    """What reduces the gradients in a backward, as a finding words it: an FSDP model's
    reduce-scatter where the script builds one and no DDP model (worked out once)."""
    found = builder.__dict__.get("_reduced_by")
    if found is None:
        fsdp = not builder.wraps_ddp() and builder.builds_fsdp()
        found = builder.__dict__["_reduced_by"] = \
            "FSDP reduce-scatters the gradients" if fsdp else "DDP all-reduces the gradients"
    return found


def _backward_in(builder: Builder, fn: Function, stmts: list, depth: int) -> str:
    """A backward somewhere in these statements or the local functions they call (a few
    levels): with a DDP model, the gradient all-reduce the ranks still in the loop run."""
    for stmt in stmts:
        for node in walk(stmt):
            if not isinstance(node, ast.Call):
                continue
            if last_name(node.func) == "backward" and not module_method(builder.program, fn) and \
                    not _round_backward(builder.program, node, fn) and not no_sync.backward_unsynced(fn, node) \
                    and not _plain_backward(builder.program, node, fn):
                return f"{text(node.func, 40)}() in {fn.label} ({reduced_by(builder)})"
            if depth > 0:
                for target in builder.program.resolve(node.func, fn)[0]:
                    found = _backward_in(builder, target, list(target.node.body), depth - 1)
                    if found:
                        return found
    return ""


def _plain_backward(program, call: ast.Call, fn: Function, depth: int = 3) -> bool:
    """The backward of a loss whose forward, as fn computes it, is a model's built plain and no
    DDP model's (SentEval's probe classifier fitted on each rank's embeddings: `output =
    self.model(Xbatch)` with `self.model = nn.Sequential(...)`, `loss = self.loss_fn(output, y)`):
    nothing to all-reduce. The data it is handed (parameters) is read as data."""
    if not isinstance(call.func, ast.Attribute) or fn.node is None or isinstance(fn.node, ast.Module):
        return False
    todo, seen, plain = [(_loss_of(call.func.value), depth)], set(), False
    while todo:
        expr, left = todo.pop()
        for sub in walk(expr):
            if sub.__class__ is ast.Call:
                if program.ddp_model(sub, fn) is not None:
                    return False
                if (sub.func.__class__ is ast.Name or _self_field(sub.func)) and fresh_model(program, sub.func, fn):
                    plain = True
            elif sub.__class__ is ast.Name and sub.ctx.__class__ is ast.Load and left > 0 and sub.id not in seen:
                seen.add(sub.id)
                todo.extend((v, left - 1) for v in reaching.reaching_values(fn.node, sub.id, sub) or ())
    return plain


def _round_backward(program, call: ast.Call, fn: Function) -> bool:
    """The backward of a loss the module computed round the wrapper (`model.module.forward_train(b)`):
    it backs through no DDP hook, nothing the other ranks wait in."""
    return isinstance(call.func, ast.Attribute) and loss_round_the_wrapper(program, _loss_of(call.func.value), fn)


def module_method(program, fn: Function) -> bool:
    """fn is a method of a torch Module subclass: a backward there fits the module on its own
    (lab4d's `mlp_init` matching its priors before training), not through a DDP wrapper, which
    calls only forward. A backward traced through a DDP model is a collective all the same."""
    klass = fn.cls
    if klass is None:
        return False
    known = klass.__dict__.get("_torch_module")
    if known is None:
        known = klass.__dict__["_torch_module"] = any(
            b.rsplit(".", 1)[-1] in ("Module", "LightningModule") for k in (klass, *program.bases(klass)) for b in k.bases)
    return known


def _single_part(builder: Builder, test: ast.AST) -> bool:
    """A part of an `and` (or the whole test) holds only where no process group is set up
    (`RANK == -1`, `not args.distributed`), as the walk's tests are judged: the branch never runs
    in a distributed run."""
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    return _single_process(tuple((text(part, 10_000), True) for part in parts), builder._switches(),
                           builder.wraps_ddp())


def _counted_under_switch(builder: Builder, loop: ast.AST, test: ast.AST) -> Optional[ast.AST]:
    """The store_true option's test under which alone the loop sets the names an exit's test
    reads (`if args.stop_early: if worse: stale += 1 else: stale = 0`): None where some setting
    of them in the loop sits under no such test, or the loop sets none of them."""
    names = {n.id for n in walk(test) if n.__class__ is ast.Name}
    # (not a bound the pass sets to one constant, `patience = 5`: it counts nothing)
    given: dict = {}
    for node in walk(loop):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if target.__class__ is ast.Name and target.id in names:
                    given.setdefault(target.id, set()).add(
                        repr(node.value.value) if isinstance(node, ast.Assign) and node.value.__class__ is ast.Constant
                        else "?")
    names -= {name for name, values in given.items() if len(values) == 1 and "?" not in values}
    if not names:
        return None
    switches: list = []

    def down(body: list, tests: tuple) -> bool:
        for each in body:
            if isinstance(each, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            targets = each.targets if isinstance(each, ast.Assign) else \
                [each.target] if isinstance(each, (ast.AugAssign, ast.AnnAssign)) else []
            if any(n.__class__ is ast.Name and n.id in names for t in targets for n in walk(t)):
                switch = next((t for t in tests if declared_off(text(t), builder.program)), None)
                if switch is None:
                    return False
                switches.append(switch)
            inner = tests + (each.test,) if isinstance(each, ast.If) else tests
            for field in ("body", "orelse", "handlers", "finalbody"):
                part = getattr(each, field, None)
                if isinstance(part, list) and part and isinstance(part[0], (ast.stmt, ast.excepthandler)):
                    if not down(part if field != "handlers" else [s for h in part for s in h.body],
                                inner if field == "body" else tests):
                        return False
        return True

    return switches[0] if down(loop.body, ()) and switches else None


def _tests_on_the_way(stmt: ast.If, leave: ast.stmt) -> list[ast.AST]:
    """The tests of the plain `if`s inside stmt that the way down to leave passes through."""
    found: list = []

    def down(body: list) -> bool:
        for each in body:
            if each is leave:
                return True
            if isinstance(each, ast.If):
                for side in (each.body, each.orelse):
                    if down(side):
                        if side is each.body:
                            found.insert(0, each.test)
                        return True
            elif isinstance(each, (ast.With, ast.AsyncWith, ast.Try)):
                parts = [each.body] if not isinstance(each, ast.Try) else \
                    [each.body, *(h.body for h in each.handlers), each.orelse, each.finalbody]
                if any(down(part) for part in parts):
                    return True
        return False

    down(stmt.body)
    down(stmt.orelse)
    return found


def _break_in(body: list, around: Optional[ast.If] = None, leaves: tuple = (ast.Break,)) -> Optional[tuple]:
    """(the innermost plain `if` around it, the `break`) for the first break of the enclosing
    loop in body - not one of a nested loop's; leaves=(Break, Return): a `return` out of it too."""
    return next(_breaks_in(body, around, leaves), None)


def _breaks_in(body: list, around: Optional[ast.If] = None, leaves: tuple = (ast.Break,)) -> Iterator[tuple]:
    """Each (innermost plain `if` around it, exit) of _break_in's kind in body, in source order."""
    for stmt in body:
        if isinstance(stmt, leaves) or (ast.Return in leaves and _exits(stmt)):
            yield around, stmt
            return  # (what follows it in the block never runs)
        parts: list = []
        if isinstance(stmt, ast.If):
            parts = [(stmt.body, stmt), (stmt.orelse, stmt)]
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            parts = [(stmt.body, around)]
        elif isinstance(stmt, ast.Try):
            parts = [(p, around) for p in (stmt.body, *(h.body for h in stmt.handlers), stmt.orelse, stmt.finalbody)]
        for part, inner in parts:
            yield from _breaks_in(part, inner, leaves)


def _tensor_values(builder: Builder, fn: Function, stmts: list[_Stmt], ddp: bool) -> list[RankLocalDecision]:
    found = []
    shared = _shared(builder, fn)
    for item in stmts:
        stmt = item.node
        # (past `if resuming and rank == 0: continue` every rank runs on wherever `resuming` is
        # false: its own loss test there still parts them; DDP809 reports the rank's skip apart)
        if not isinstance(stmt, ast.If) or not all(g.everyone for g in item.guards):
            continue
        apart = shared  # what the ranks hold alike, for this test
        decided = None  # what decides a None test (none_decided_by), where one is read
        tested = [c for c in walk(stmt.test) if isinstance(c, ast.Call) and last_name(c.func) in VALUE_TESTS
                  and (c.args or isinstance(c.func, ast.Attribute))]
        # `if loss.item() > limit: continue`: a comparison on a rank's own number
        # or handed to a check of one's own (`if is_valid_number(loss.data.item()):`)
        tested += [c for cmp in walk(stmt.test) if isinstance(cmp, (ast.Compare, ast.Call)) for c in walk(cmp)
                   if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "item"
                   and not c.args and (cmp.__class__ is ast.Compare or c in cmp.args)]
        summed = False
        if tested:
            call = tested[0]
            value = call.args[0] if call.args else call.func.value
            # `if not math.isnan(tot_loss):` of the rank's own sum of `loss.item()`s: decided like a
            # rank test, a collective inside the branch as well as after it
            summed = isinstance(value, ast.Name) and value.id in _item_names(builder.program, fn)
        elif (isinstance(stmt.test, ast.Compare) or (isinstance(stmt.test, ast.Attribute) and _set_by_item_call(
                builder.program, fn, stmt.test))) and _item_valued(builder.program, fn, stmt.test):
            # (`if stopper.stop:` of an object handed this rank's own number: its verdict on it)
            summed = True
            # `if stats["avg"] <= min(history):` on the rank's own epoch average (a helper's sum
            # of its `loss.item()`s, never all-reduced): the ranks' numbers part ways
            value = stmt.test
        elif item.loops:
            if _key_presence(stmt.test):
                continue  # `if "main" in out.keys():` asks which keys the code put there, not a value
            if _loader_ran_out(builder.program, fn, stmt.test):
                continue  # `nxt = next(it, None)` ... `if nxt is None: break`: the loader's end
            # (the batch a rank hands its DDP forward is still its own: only what a collective
            # was handed is shared, for a test on the batch itself)
            if none_batch_alike(builder.program, fn, item.loops[-1], stmt.test):
                continue  # `if batch is None: continue` over a default-collated DataLoader: never taken
            decided = none_decided_by(item.loops[-1], stmt.test, builder.program, fn)
            value = _from_the_forward(decided, item.loops[-1], shared) or \
                _from_a_sharded_forward(builder.program, fn, decided, item.loops[-1])
            if value is None:
                # (the batch a rank hands its DDP forward is still its own: only what a
                # collective was handed is shared, for a test on the batch itself)
                apart = shared_names(builder.program, fn, forwards=False)
                value = _from_the_loop_batch(decided, item.loops[-1], apart)
                if value is not None:
                    tested = [stmt.test]  # (the skip is the decision, as a step helper's return is)
            if value is None and _checked_by_helper(builder, fn, stmt.test, item):
                value = stmt.test.operand if isinstance(stmt.test, ast.UnaryOp) else stmt.test
            if value is None:
                continue
        elif _step_helper(builder, fn) and isinstance(_unwrapped_bool(stmt.test), ast.Compare) and \
                any(isinstance(b, (ast.Return, ast.Raise)) or _exit_call(b) for b in stmt.body):
            # `def step(net, x, t): valid = t > 0; if valid.sum() == 0: return 0.0` then the
            # forward and backward, called once per batch: the same test a loop body would make,
            # on the batch its caller hands it (also as `if bool(loss == 0): return`)
            compare = _unwrapped_bool(stmt.test)
            value = _from_the_forward(compare, fn.node, shared) or _from_the_batch(fn, compare, shared) or \
                _backpropagated_param(fn, compare, shared)
            if value is None:
                continue
            tested = [stmt.test]  # (its return leaves the helper: the skip is the decision)
        else:
            continue
        names = {n.id for n in walk(value) if isinstance(n, ast.Name)}
        if names & apart and not _reduced_only_after(builder.program, fn, names & apart, stmt):
            continue  # all-reduced first: the same decision on every rank
        if names - {"self"} and all(_reduced_here(builder.program, fn, name, stmt) for name in names - {"self"}):
            # `policy_kl = accelerator.reduce(policy_kl, "mean")` just above the test, the name
            # bound to the rank's own value elsewhere in the loop: at the test it is every rank's
            continue
        if any(at < stmt.lineno for name in names for at in _read_back(builder.program, fn, shared).get(name, ())):
            continue  # the flag read back from the shared tensor before the test
        if names and any(isinstance(c, ast.Call) and {n.id for a in c.args for n in walk(a) if isinstance(n, ast.Name)}
                         & names and sharing_helper(builder.program, c, fn) == "returned" for c in walk(stmt.test)):
            # `if not detector.check_loss(loss, step):` whose check all-reduces a flag made of the
            # value and answers from the reduced flag: the verdict is every rank's
            continue
        # a comparison of the value itself (`if loss < 1e6:`, `if mask_loss.nelement() > 0:`):
        # a number each rank's batch decides, as `loss.item() > limit` is (not `loss.requires_grad`);
        # or a check helper's verdict on it (`valid, err = check_loss(loss, loss.item())`, then
        # `if valid:`)
        compared = bool(tested) or any(isinstance(n, ast.Compare) for n in walk(stmt.test)) or \
            _checked_by_helper(builder, fn, stmt.test, item)
        # (a number summed from the rank's own `.item()`s decides like a rank test: a collective on
        # one side of it waits for ranks that took the other)
        effect = _effect(builder, fn, stmt, item, ddp, after_only=not summed, returns=bool(tested), valued=compared)
        if effect is None:
            continue
        action, work = effect
        if action == "return" and _returns_a_loss(fn, stmt, shared) and \
                not _skips_a_collective(builder, fn, stmt):
            continue
        # (what decides a None test is shown as the test: `post_loss is not None`, not the tests
        # of the `if`s that bind it)
        shown = stmt.test if value is decided and decided is not stmt.test else value
        found.append(RankLocalDecision(
            Location(fn.file.display, stmt.lineno), text(stmt.test), action, text(shown), "tensor_value", work,
            assumption="the value differs between ranks (each rank's own batch)"))
    return found


def _reduced_here(program, fn: Function, name: str, stmt: ast.If) -> bool:
    """Every binding of name that reaches the test is what a collective returns to every rank
    (`x = accelerator.reduce(x, "mean")`, also read off it with `.item()`)."""
    if fn.node is None or fn.node.__class__ is ast.Module:
        return False
    held = reaching.reaching_values(fn.node, name, stmt.test)
    if not held:
        return False
    for value in held:
        call = _read_off(value)
        op = program.collective(call, fn) if call.__class__ is ast.Call else None
        if not op or not _returned_to_all(call, op):
            return False
    return True


def _reduced_only_after(program, fn: Function, names: set, stmt: ast.If) -> bool:
    """Every collective fn hands these names comes after the test, and each name is bound anew
    before it in the same block (`avg_loss = torch.tensor(running / n)`, `if torch.isnan(avg_loss):
    return`, then `dist.all_reduce(avg_loss)`): at the test the value is still the rank's own."""
    handed = [c for c in fn.own_calls if program.collective(c, fn) is not None
              and {n.id for a in c.args for n in walk(a) if isinstance(n, ast.Name)} & names]
    if not handed or any(c.lineno <= stmt.lineno for c in handed):
        return False
    bound = {t.id for node in fn.own_of(ast.Assign) if node.lineno < stmt.lineno
             for t in node.targets if isinstance(t, ast.Name)}
    return names <= bound


def _lightning_skips(builder: Builder, fn: Function, stmts: list[_Stmt]) -> list[RankLocalDecision]:
    """`def training_step(self, batch, i): ... if not torch.isfinite(loss): return None` in a
    LightningModule (automatic optimization): Lightning skips the backward of a step whose
    training_step returns None, on that rank alone; the others run theirs and wait in DDP's
    gradient all-reduce (Lightning documents None as unsupported on several devices). A test on
    the step's own loss, or on a value computed from what builds it (`val = loss.detach()`,
    `if val > 1.5 * self.ema:`), is each rank's own batch's."""
    program = builder.program
    if fn.name != "training_step" or fn.cls is None or fn.parent is not None or not program.uses_lightning():
        return []
    if not any(b.endswith("LightningModule") for b in program.library_bases(fn.cls)):
        return []
    manual = any(isinstance(n, ast.Assign) and any(text(t) == "self.automatic_optimization" for t in n.targets)
                 and isinstance(n.value, ast.Constant) and n.value.value is False
                 for method in fn.cls.methods.values() for n in method.own)
    # manual optimization: the step calls `self.manual_backward(loss)` itself, and a rank that
    # returns before it (`if torch.isnan(g_loss): return None`, ISSM-SAR's GAN step) skips the
    # backward whose gradients DDP all-reduces
    backwards = [c for c in fn.own_calls if manual and last_name(c.func) == "manual_backward" and c.args]
    if manual and not backwards:
        return []
    returns = [n for n in fn.own if isinstance(n, ast.Return)]
    losses = [c.args[0] for c in backwards] if manual else [r.value for r in returns if r.value is not None and not (
        isinstance(r.value, ast.Constant) and r.value.value is None)]
    if not losses:
        return []
    shared = _shared(builder, fn)
    sources, produced, _ = _loop_dataflow(fn.node)
    behind_loss = _ancestry(set().union(*(value_inputs(v) for v in losses)), sources, shared) & produced
    found = []
    for item in stmts:
        stmt = item.node
        if not isinstance(stmt, ast.If) or item.guards or item.loops:
            continue
        skips = [side for side in (stmt.body, stmt.orelse) if side and isinstance(side[-1], ast.Return) and (
            manual or side[-1].value is None or (isinstance(side[-1].value, ast.Constant) and side[-1].value.value is None))]
        # (or the backward itself on one side of the test alone: `if loss != 0:
        # self.manual_backward(loss); opt.step()` - a rank whose loss is 0 skips it)
        sides = [any(any(n is c for c in backwards) for s in side for n in walk(s))
                 for side in (stmt.body, stmt.orelse)] if manual and not skips else [False, False]
        sided = sides[0] != sides[1]
        if not sided and (not skips or (manual and not any(c.lineno > (stmt.end_lineno or stmt.lineno)
                                                          for c in backwards))):
            continue
        tested = next((c for c in walk(stmt.test) if isinstance(c, ast.Call) and last_name(c.func) in VALUE_TESTS
                       and c.args), None)
        value = tested.args[0] if tested is not None else next(
            (n for n in walk(stmt.test) if isinstance(n, ast.Name) and (n.id in produced or (
                sided and any(n.id == getattr(loss, "id", None) for loss in losses)))
             and _ancestry({n.id}, sources, shared) & behind_loss), None)
        if value is None and fn.params:
            # `if batch.edge_index.numel() == 0: return`: what the rank's own batch holds
            value = next((c for c in walk(stmt.test) if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                          and c.func.attr in VALUE_REDUCTIONS and fn.params[0] in
                          _ancestry(value_inputs(c.func.value) or {""}, sources, shared)), None)
        if value is None or {n.id for n in walk(value) if isinstance(n, ast.Name)} & shared:
            continue
        found.append(RankLocalDecision(
            Location(fn.file.display, stmt.lineno), text(stmt.test),
            "runs self.manual_backward() on one side" if sided else "return" if manual else "return None",
            text(value), "tensor_value",
            "the step's self.manual_backward() (DDP's gradient all-reduce)" if manual else
            "Lightning's backward of this step (DDP's gradient all-reduce)",
            assumption="the value differs between ranks (each rank's own batch)"))
    return found


# Each process's own clock: two ranks cross a time limit at different passes.
CLOCKS = frozenset({"time.time", "time.perf_counter", "time.monotonic", "time.time_ns", "time.perf_counter_ns",
                    "time.monotonic_ns", "datetime.datetime.now", "datetime.now", "timeit.default_timer"})


# Each process's own random stream: seeded per rank, or drawn a different number of times on
# some ranks (rank 0's extra draws in its evaluation), it gives each rank its own number.
DRAWS = SCALAR_DRAWS


def _clock_values(builder: Builder, fn: Function, stmts: list[_Stmt], ddp: bool) -> list[RankLocalDecision]:
    """`if time.time() > last_log + 0.25: log_and_all_reduce()` (PufferLib's trainer), `if
    time.time() - start > budget: break`: a test on the process's own clock decides a collective
    or a leave on every rank; each rank crosses the time at its own pass. Likewise a draw of
    the process's own random stream (`if random.random() < p:` before a discriminator's
    backward, EnCodec's trainer)."""
    return _own_values(builder, fn, stmts, ddp, CLOCKS, "clock_value",
                       "each rank's own clock crosses the limit at a different pass") + \
        _own_values(builder, fn, stmts, ddp, DRAWS, "random_draw",
                    "each rank draws its own number (the ranks' random states differ)")


_NUMERIC = frozenset({"int", "float", "round", "abs", "min", "max", "total_seconds"})  # (a timedelta in seconds)


def _own_values(builder: Builder, fn: Function, stmts: list[_Stmt], ddp: bool, sources: frozenset, kind: str,
                assumption: str) -> list[RankLocalDecision]:
    program = builder.program
    reads = lambda node: _reads(program, node, fn, sources)
    # less what a collective shares (`dist.broadcast(flag, 0)` after the draw: EnCodec's fix),
    # and a parameter (`if seed is not None: return seed` before `seed = randint(...)`: the
    # caller's value there)
    shared = _shared(builder, fn)
    owned: dict = {}
    # and names computed from them by arithmetic (`now = time.time(); since = now - last`), not
    # what a call makes of them (a logger named after the start time is no clock)
    derived = lambda v: v is not None and any(isinstance(n, ast.Name) and n.id in owned for n in walk(v)) and all(
        last_name(c.func) in _NUMERIC for c in walk(v) if isinstance(c, ast.Call))
    for _ in range(3):
        grown = {name: values for name, values in fn.bindings.items()
                 if values and name not in owned and name not in fn.params and name not in shared
                 and all(reads(v) or derived(v) for _, v in values)}
        if not grown:
            break
        owned.update(grown)
    found = []
    for item in stmts:
        stmt = item.node
        if not isinstance(stmt, (ast.If, ast.While)) or item.guards:
            continue
        # a name read after it was drawn (or in the loop that draws it again)
        drawn = [n for n in walk(stmt.test) if isinstance(n, ast.Name) and n.id in owned and any(
            getattr(v, "lineno", stmt.lineno) < stmt.lineno or item.loops for _, v in owned[n.id])]
        if not (reads(stmt.test) or drawn):
            continue
        # what a side runs on every rank: a block under a rank test inside it is that rank's
        # own (EvoDiff's `if rank == 0:` checkpoint under the clock test), judged as such elsewhere
        sides = {field: [s for s in getattr(stmt, field) if not (
            isinstance(s, ast.If) and program.ranks.guard(s.test, fn) is not None)] for field in ("body", "orelse")}
        effect = _effect(builder, fn, _with_sides(stmt, sides), item, ddp)
        if effect is None:
            continue
        source = next((c for c in walk(stmt.test) if isinstance(c, ast.Call) and
                       (program.qualify(c.func, fn) or "") in sources), None)
        value = text(source) if source is not None else drawn[0].id
        found.append(RankLocalDecision(
            Location(fn.file.display, stmt.lineno), text(stmt.test), effect[0], value, kind, effect[1],
            assumption=assumption))
    return found


def _with_sides(stmt: ast.stmt, sides: dict) -> ast.stmt:
    """A copy of an if / while with other statements on its sides (the tree is only read)."""
    copy = ast.If(test=stmt.test, body=sides["body"], orelse=sides["orelse"]) if isinstance(stmt, ast.If) else \
        ast.While(test=stmt.test, body=sides["body"], orelse=sides["orelse"])
    return ast.copy_location(copy, stmt)


# Exceptions every rank meets alike (the data ran out, the user stopped the job), not one rank's batch.
ALIKE_EXCEPTIONS = frozenset({"StopIteration", "StopAsyncIteration", "KeyboardInterrupt", "SystemExit",
                              "GeneratorExit"})


# ... and by their name: the data ran out on every rank (torchtitan's DataloaderExhaustedError)
ALIKE_NAME = re.compile(r"Exhaust|EndOf|OutOfData|NotImplemented", re.IGNORECASE)


def _exception_skips(builder: Builder, fn: Function, stmts: list[_Stmt], ddp: bool) -> list[RankLocalDecision]:
    """`try: loss = model(batch); loss.backward() except NoValidAnchorsError: continue` in a
    training loop (NeMo Automodel's DFlash recipe, an out-of-memory skip): the rank whose batch
    raises leaves the pass while the others wait in the backward's all-reduce it skipped."""
    found = []
    for item in stmts:
        stmt = item.node
        if not isinstance(stmt, ast.Try) or item.guards or not item.loops:
            continue
        # the batch's own work: its backward (DDP's all-reduce) or a DDP forward, not a collective
        # a set-up or a log line runs (a configuration error is raised alike on every rank)
        work = (_backward_in(builder, fn, list(stmt.body), 3) if ddp else "") or next(
            (f"the DDP forward {text(c.func, 40)}()" for n in stmt.body for c in walk(n)
             if isinstance(c, ast.Call) and _forward_works(builder.program, c, fn)), "")
        if not work:
            continue
        for handler in stmt.handlers:
            names = {last_name(n) for n in ([handler.type] if not isinstance(handler.type, ast.Tuple)
                                            else handler.type.elts) if n is not None}
            leaves = _ends(handler.body)
            # (a catch-all - bare, Exception - guards against crashes of any kind, the same
            # code's on every rank; the skip a batch decides names what it catches)
            if not names or names & {"Exception", "BaseException"} or names & ALIKE_EXCEPTIONS or \
                    any(ALIKE_NAME.search(n) for n in names) or \
                    leaves not in ("continue", "break", "return") or \
                    any(isinstance(n, ast.Raise) for n in handler.body) or _work(builder, fn, handler.body, ddp):
                continue
            caught = ", ".join(sorted(names)) or "any exception"
            found.append(RankLocalDecision(
                Location(fn.file.display, handler.lineno), f"except {caught}", leaves, caught, "exception", work,
                assumption=f"{caught} is raised on some ranks only (each rank's own batch)"))
    return found


def _reads(program, node: Optional[ast.AST], fn: Function, sources: frozenset = CLOCKS) -> bool:
    return node is not None and any(isinstance(c, ast.Call) and (program.qualify(c.func, fn) or "") in sources
                                    for c in walk(node))


# What a value's shape or type says: the same on every rank whatever the batch's values.
_SHAPE_ONLY = {"shape", "size", "ndim", "dim", "dtype", "device", "numel", "len",
               "isinstance", "type"}  # `isinstance(loss, float)`: which code path made it


def value_inputs(value: ast.AST) -> frozenset[str]:
    """The names a value is computed from, not counting what only sizes or types it. Kept on the
    node (asked 30,000 times of a long script's few thousand expressions; trees never change)."""
    found = value.__dict__.get("_inputs")
    if found is not None:
        return found
    names: set[str] = set()
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Attribute) and node.attr in _SHAPE_ONLY:
            continue
        if isinstance(node, ast.Call) and last_name(node.func) in _SHAPE_ONLY:
            continue
        if isinstance(node, ast.Name):
            names.add(node.id)
        stack.extend(children(node))
    found = value.__dict__["_inputs"] = frozenset(names)
    return found


_DATAFLOW: dict[int, tuple] = {}


def _loop_dataflow(loop: ast.AST) -> tuple[dict, set, list]:
    """A loop's bindings (name -> values), the names bound to a call's result (a forward's
    outputs) and what it backpropagates: read once per loop, however many tests it holds."""
    hit = _DATAFLOW.get(id(loop))
    if hit is not None and hit[0] is loop:
        return hit[1]
    sources: dict[str, list[ast.AST]] = {}
    produced: set[str] = set()
    losses: list[ast.AST] = []
    for node in walk(loop):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            for target in _assigned(node):
                # the names it binds: `a, b = ...` binds a and b; `self.seq_len = batch.size(1)`
                # binds no name (taking `self` for it made every `self.x` read a forward's output)
                for name in _bound_names(target):
                    sources.setdefault(name, []).append(node.value)
                    if isinstance(node.value, ast.Call):
                        produced.add(name)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "backward":
            losses.append(node.func.value)
            losses.extend(node.args[:1])
    if len(_DATAFLOW) > 4096:
        _DATAFLOW.clear()
    _DATAFLOW[id(loop)] = (loop, (sources, produced, losses))
    return sources, produced, losses


def _bound_names(target: ast.AST) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for elt in target.elts for name in _bound_names(elt)]
    if isinstance(target, ast.Starred):
        return _bound_names(target.value)
    return []


def _checked_by_helper(builder: Builder, fn: Function, test: ast.AST, item: _Stmt) -> bool:
    """The test is a name (or `not` one) the loop binds from a call of a local function handed
    a value's own number (`.item()`, or a name bound to one): a check helper's verdict."""
    name = test.operand if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) else test
    if not isinstance(name, ast.Name) or not item.loops:
        return False
    cache = fn.__dict__.setdefault("_checked_by_helper", {})
    key = (id(item.loops[-1]), name.id)
    if key not in cache:
        cache[key] = _checked_in_loop(builder, fn, item.loops[-1], name.id)
    return cache[key]


def _checked_in_loop(builder: Builder, fn: Function, loop: ast.AST, wanted: str) -> bool:
    shared = _shared(builder, fn)
    own = lambda v: isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr == "item" \
        and not ({n.id for n in walk(v.func.value) if isinstance(n, ast.Name)} & shared)
    bound: dict = {}
    assigns = [n for n in walk(loop) if isinstance(n, ast.Assign)]
    for n in assigns:
        for t in n.targets:
            if isinstance(t, ast.Name):
                bound.setdefault(t.id, []).append(n.value)
    # a rank's own number: every binding in the loop is `.item()` of a value no collective reduced
    # (or a constant where the check failed: deepspeech's `loss_value = 0` after a skip)
    items = {k for k, values in bound.items()
             if all(own(v) or _constant(v) for v in values) and any(own(v) for v in values)}
    for node in assigns:
        if isinstance(node.value, ast.Call) and any(
                isinstance(t, ast.Name) and t.id == wanted or isinstance(t, ast.Tuple) and any(
                    isinstance(e, ast.Name) and e.id == wanted for e in t.elts) for t in node.targets):
            targets = builder.program.resolve(node.value.func, fn)[0]
            if targets and any(own(a) or (isinstance(a, ast.Name) and a.id in items) for a in node.value.args):
                return True
    return False


def _deepspeed_engine(program, node: ast.AST, fn: Function) -> bool:
    """The name holds the engine `deepspeed.initialize(...)` returns first
    (`engine, opt, _, _ = deepspeed.initialize(...)`, or `... = deepspeed.initialize(...)[0]`);
    also a field the class binds so (`self.model, self.optimizer, _, _ = deepspeed.initialize(...)`
    in the constructor, then `self.model.backward(loss)` in the epoch method)."""
    if _self_field(node) and fn.cls is not None:
        return any(isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Tuple)
                   and stmt.targets[0].elts and _self_field(stmt.targets[0].elts[0])
                   and stmt.targets[0].elts[0].attr == node.attr and isinstance(stmt.value, ast.Call)
                   and (program.qualify(stmt.value.func, method) or "") == "deepspeed.initialize"
                   for method in fn.cls.methods.values() if method is not None and method.node is not None
                   for stmt in method.own)
    if not isinstance(node, ast.Name):
        return False
    for stmt in fn.own:
        if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
            continue
        target, value = stmt.targets[0], stmt.value
        if isinstance(target, ast.Tuple) and target.elts and isinstance(target.elts[0], ast.Name) \
                and target.elts[0].id == node.id and isinstance(value, ast.Call):
            return (program.qualify(value.func, fn) or "") == "deepspeed.initialize"
        if isinstance(target, ast.Name) and target.id == node.id and isinstance(value, ast.Subscript) \
                and isinstance(value.value, ast.Call) and isinstance(value.slice, ast.Constant) and value.slice.value == 0:
            return (program.qualify(value.value.func, fn) or "") == "deepspeed.initialize"
    return False


def _ancestry(roots: set[str], sources: dict, shared: set[str]) -> set[str]:
    """The names the roots are computed from, through the bindings `sources` holds (bounded);
    a name handed to a collective (shared) is the same on every rank and ends the trail."""
    seen, todo = set(), list(roots)
    while todo and len(seen) < 200:
        name = todo.pop()
        if name in seen or name in shared:
            continue
        seen.add(name)
        for value in sources.get(name, []):
            todo.extend(value_inputs(value) - seen)
    return seen


# Reductions of a tensor's values: a test on one asks what the batch holds, not how big it is.
VALUE_REDUCTIONS = {"sum", "any", "all", "count_nonzero", "nonzero", "numel", "max", "min", "mean", "item"}


def _from_the_batch(fn: Function, test: ast.AST, shared: set[str]) -> Optional[ast.AST]:
    """A step helper's test on a reduction of values computed from what it is handed (`valid =
    (target > 0) & (target < limit)`; `if valid.sum() == 0: return`): the batch its caller hands
    it, each rank's own. Not one on the model or the optimizer it is handed (called, or asked
    for its parameters), and not one on a size alone."""
    if not any(isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr in VALUE_REDUCTIONS
               for c in walk(test)):
        return None
    sources, _, losses = _loop_dataflow(fn.node)
    if not losses:
        return None
    objects = {c.func.value.id for c in fn.own_calls if isinstance(c.func, ast.Attribute)
               and isinstance(c.func.value, ast.Name) and c.func.attr in ("parameters", "step", "zero_grad", "train",
                                                                          "eval", "named_parameters")}
    objects |= {c.func.id for c in fn.own_calls if isinstance(c.func, ast.Name)}
    read = value_inputs(test)
    handed = (_ancestry(read, sources, shared) & set(fn.params)) - objects
    return test if handed else None


def _from_the_loop_batch(test: ast.AST, loop: ast.AST, shared: set[str]) -> Optional[ast.AST]:
    """A test on a reduction of values the loop computes from the batch it iterates (`for i,
    batch in enumerate(loader): x = prep(batch); if (x["masks"].sum(-1) < 100).sum() > 0:
    continue` before its backward, viser's): each rank's own batch decides, as in a step helper
    (_from_the_batch). Not a test on the counter enumerate adds, nor on a size alone."""
    if not isinstance(loop, (ast.For, ast.AsyncFor)) or not any(
            isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr in VALUE_REDUCTIONS
            for c in walk(test)) and not _dimensions_tested(test):
        return None
    target = loop.target
    if isinstance(loop.iter, ast.Call) and last_name(loop.iter.func) == "enumerate" and \
            isinstance(target, ast.Tuple) and target.elts:
        target = ast.Tuple(elts=target.elts[1:], ctx=ast.Store())
    batch = set(_bound_names(target))
    sources, _, losses = _loop_dataflow(loop)
    if not losses or not batch:
        return None
    inputs = value_inputs(test) | _dimensions_of(test)
    return test if _ancestry(inputs, sources, shared) & batch else None


def _dimensions_of(test: ast.AST) -> frozenset:
    """The names whose number of dimensions the test compares (value_inputs leaves shapes out)."""
    if not _dimensions_tested(test):
        return frozenset()
    return frozenset(n.id for c in walk(test) if (c.__class__ is ast.Attribute and c.attr == "ndim") or
                     (c.__class__ is ast.Call and c.func.__class__ is ast.Attribute and c.func.attr == "dim")
                     for n in walk(c) if n.__class__ is ast.Name)


def _dimensions_tested(test: ast.AST) -> bool:
    """A comparison of a tensor's number of dimensions (`if not batch["pos_pairs"].ndim == 2:`,
    `x.dim() < 2`): no batch size sets it, only what the items hold (an empty match collates
    to fewer dimensions), so each rank's own items decide."""
    return any(c.__class__ is ast.Compare and any(
        (n.__class__ is ast.Attribute and n.attr == "ndim") or
        (n.__class__ is ast.Call and n.func.__class__ is ast.Attribute and n.func.attr == "dim" and not n.args)
        for part in (c.left, *c.comparators) for n in walk(part)) for c in walk(test))


def _unwrapped_bool(test: ast.AST) -> ast.AST:
    """`bool(x)` tests what x tests; so do `x.any()`, `x.all()`, `x.item()` and `x.data` of a
    comparison (`if (loss != loss).data.any():`, a NaN test)."""
    while True:
        if test.__class__ is ast.Call and test.func.__class__ is ast.Name and test.func.id == "bool" \
                and len(test.args) == 1 and not test.keywords:
            test = test.args[0]
        elif test.__class__ is ast.Call and test.func.__class__ is ast.Attribute and \
                test.func.attr in ("any", "all", "item") and not test.args and not test.keywords:
            test = test.func.value
        elif test.__class__ is ast.Attribute and test.attr == "data":
            test = test.value
        else:
            return test


def _backpropagated_param(fn: Function, test: ast.AST, shared) -> Optional[ast.AST]:
    """A parameter the test reads that fn itself backpropagates (`def optimize(self, loss): if
    (loss != loss).any(): exit()` ... `loss.backward()`): the loss its caller computed from the
    rank's own batch. None where there is none (or it was shared)."""
    _, _, losses = _loop_dataflow(fn.node)
    backpropagated = {n.id for v in losses for n in walk(v) if n.__class__ is ast.Name}
    return next((n for n in walk(test) if n.__class__ is ast.Name and n.id in fn.params
                 and n.id in backpropagated and n.id not in shared), None)


def _exit_call(stmt: ast.stmt) -> bool:
    """`exit()`, `sys.exit(1)`, `quit()` as a statement: the process leaves there."""
    call = stmt.value if stmt.__class__ is ast.Expr else None
    return call.__class__ is ast.Call and (last_name(call.func) or "") in ("exit", "quit", "_exit")


def _step_helper(builder: Builder, fn: Function) -> bool:
    """fn runs a backward of its own and every call into it sits in a loop (a per-batch step
    helper); not a method a framework calls (its callers are not in the source). A call that
    picks among several functions (a registry's `PIPELINE[cfg.train_func](...)`, also an
    evaluation's pick) need not be in a loop, where one that is reaches fn."""
    if fn.node is None or isinstance(fn.node, ast.Module) or fn.name.startswith(("on_", "training_step")):
        return False
    return _per_batch(builder, fn, 2) and any(
        isinstance(c.func, ast.Attribute) and c.func.attr == "backward" for c in fn.own_calls)


def _per_batch(builder: Builder, fn: Function, depth: int) -> bool:
    """Every call into fn sits in a loop (or picks fn among several), one at least in a loop; or
    is made, outside any loop, by a function that is itself called so (`trainer.iter()` once a
    batch, whose body calls `self.optimize(loss)`)."""
    sites = builder.callers().get(fn, [])
    if not sites or not all(event.kind == "call" for _, event in sites):
        return False
    looped = lambda event: event.loops > 0 or len(event.targets) > 1
    if all(looped(event) for _, event in sites) and any(event.loops > 0 for _, event in sites):
        return True
    return depth > 1 and all(event.loops > 0 or (caller is not fn and caller.node is not None
                                               and not isinstance(caller.node, ast.Module)
                                               and _per_batch(builder, caller, depth - 1))
                             for caller, event in sites)


def _none_tested(test: ast.AST) -> Optional[ast.AST]:
    """What `x is None` / `x is not None` / `not x` tests (x), or None for another test."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return test.operand
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Is, ast.IsNot)) \
            and is_const(test.comparators[0], None):
        return test.left
    return None


def _loader_ran_out(program, fn: Function, test: ast.AST) -> bool:
    """`if nxt is None:` (or `is not None`, `not nxt`) where every binding of nxt in fn is
    `next(it, None)`: the None is the iterator's end, which ranks reading equal shards meet at
    the same pass, not a number of their own batch."""
    name = _none_tested(test)
    if name is None:
        return False
    if not isinstance(name, ast.Name):
        return False
    # (the binding the flow brings to the test: `nxt = sorted(nxt, ...)` after it is another
    # value; in a loop's body, the nearest binding above the test in its own block holds there)
    bound = reaching.reaching_values(fn.node, name.id, name) if fn.node is not None else None
    if bound is None:
        above = _binding_above(fn, test, name.id)
        bound = [above] if above is not None else None
    if bound is None:
        bound = [v for _, v, scope in program.lookup(name.id, fn) if scope is fn]
    return bool(bound) and all(isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "next"
                               and len(v.args) == 2 and is_const(v.args[1], None) for v in bound)


def _prefetcher_ran_out(program, fn: Function, loop: ast.AST, test: ast.AST) -> bool:
    """`for i, data in enumerate(loader): input, labels = data; if input is None: break` where the
    loop reads an object of the script's own class that catches the StopIteration of the loader
    it wraps and hands out None (or a list of None) instead - a CUDA prefetcher's end of data:
    ranks reading equal shards meet it at the same pass, like `next(it, None)`'s."""
    name = _none_tested(test)
    if name is None:
        return False
    if name.__class__ is not ast.Name or loop.__class__ not in (ast.For, ast.AsyncFor) or fn.node is None:
        return False
    # the loop's own names, and what the body unpacks from them (`input, lengths, labels = data`)
    drawn = {n.id for n in walk(loop.target) if n.__class__ is ast.Name}
    for node in walk(loop):
        if node.__class__ is ast.Assign and node.value.__class__ is ast.Name and node.value.id in drawn:
            drawn |= {n.id for t in node.targets for n in walk(t) if n.__class__ is ast.Name}
    if name.id not in drawn:
        return False
    source = loop.iter
    for _ in range(4):
        while source.__class__ is ast.Call and last_name(source.func) in ("enumerate", "tqdm", "iter") and source.args:
            source = source.args[0]
        if source.__class__ is not ast.Name:
            break
        bound = reaching.reaching_values(fn.node, source.id, loop)
        if not bound or len(bound) != 1:
            return False
        source = bound[0]
    if source.__class__ is not ast.Call:
        return False
    klass = program.callee(source.func, fn)
    return program.is_class(klass) and ("__next__" in klass.methods or "next" in klass.methods) and any(
        _hands_none_at_the_end(handler) for method in klass.methods.values()
        for handler in method.own_of(ast.ExceptHandler))


def _hands_none_at_the_end(handler: ast.ExceptHandler) -> bool:
    """`except StopIteration: self.batch = None` (or `[None for _ in self.batch]`, `return None`):
    the end of the wrapped loader becomes a None item, not the end of the loop."""
    caught = handler.type
    if caught is None or not any(last_name(n) == "StopIteration" for n in walk(caught)):
        return False
    return not any(n.__class__ is ast.Raise for n in walk(handler)) and \
        any(is_const(n, None) for n in walk(handler))


def _binding_above(fn: Function, test: ast.AST, name: str) -> Optional[ast.AST]:
    """The value of the last plain `name = ...` before the `if` whose test this is, in the same
    block (nothing between them rebinds it: that statement is the last one to run before it)."""
    for node in walk(fn.node):
        for block in (getattr(node, "body", None), getattr(node, "orelse", None)):
            if not isinstance(block, list):
                continue
            for index, stmt in enumerate(block):
                if isinstance(stmt, ast.If) and stmt.test is test:
                    for earlier in reversed(block[:index]):
                        if isinstance(earlier, ast.Assign) and len(earlier.targets) == 1 and \
                                isinstance(earlier.targets[0], ast.Name) and earlier.targets[0].id == name:
                            return earlier.value
                        if any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
                               for n in walk(earlier)):
                            return None  # bound some other way (a loop target, inside a block)
                    return None
    return None


def _skips_a_collective(builder: Builder, fn: Function, stmt: ast.If) -> bool:
    """What follows the test in fn runs a collective of its own (an all_gather into a feature
    queue), not only a DDP forward: a rank that returns early skips it, whatever it returns."""
    return any(not op.startswith((DDP_FORWARD, DDP_BACKWARD, FSDP_FORWARD, "the DDP forward"))
               for op, _ in _works(builder, fn, _continuation(fn.node.body, stmt), False))


def _returns_a_loss(fn: Function, stmt: ast.If, shared: set[str]) -> bool:
    """The side of stmt that returns early hands back a value made from the same results as the
    function's own last return (`zero = s_pred.sum() * 0.0; return zero + zero, ...` beside
    `return total, ...`): the caller backpropagates it as it would the loss, through the same
    forward, so no rank skips DDP's gradient all-reduce. A constant or a fresh tensor
    (`return 0.0`, `torch.tensor(0.)`) reads none of them: that is a skip."""
    early = [n for side in (stmt.body, stmt.orelse) if side and isinstance(side[-1], ast.Return) for n in side[-1:]]
    normal = [n for n in fn.node.body[-1:] if isinstance(n, ast.Return) and n.value is not None]
    if not early or not normal or any(isinstance(c, ast.Call) and last_name(c.func) == "backward"
                                      for part in _continuation(fn.node.body, stmt) for c in walk(part)):
        return False  # (a backward of its own below the test: the early return skips it)
    sources, _, _ = _loop_dataflow(fn.node)

    def first(ret: ast.Return) -> Optional[ast.AST]:
        value = ret.value
        return value.elts[0] if isinstance(value, ast.Tuple) and value.elts else value

    # (the function's own names: a module both read, `torch.tensor(0.)` beside `torch.cat(...)`,
    # is no result they share)
    local = set(fn.params) | set(fn.kwonly) | set(fn.bindings)
    behind = _ancestry(value_inputs(first(normal[0])), sources, shared) & local
    behind = {n for n in behind if not _counted_only(n, sources)}
    for ret in early:
        value = first(ret) if ret.value is not None else None
        if value is None or not (_ancestry(value_inputs(value), sources, shared) & behind):
            return False
    return True


def _from_the_forward(test: ast.AST, loop: ast.AST, shared: set[str]) -> Optional[ast.AST]:
    """The name a test reads that the loop computes from the same call results as the loss it
    backpropagates (`approx_kl` from `logratio` from the model's `newlogprob`, beside `loss`):
    each rank's own batch decides it. None when no such name (or no backward in the loop); a
    name handed to a collective (shared) is the same on every rank and ends the trail."""
    sources, produced, losses = _loop_dataflow(loop)
    if not losses:
        return None
    # (the loss backpropagated is the rank's own even where the name is all-reduced afterwards for
    # the log, `loss = reduce_value(loss)` below the backward: CorrAdaptor's loop)
    backpropagated = set().union(*(value_inputs(v) for v in losses))
    behind_loss = _ancestry(backpropagated, sources, shared - backpropagated) & produced
    read = value_inputs(test)
    for name in (n for n in walk(test) if isinstance(n, ast.Name) and n.id in read and n.id in sources):
        if any(not _counted_only(n, sources) for n in _ancestry({name.id}, sources, shared) & behind_loss):
            return name
    return None


def _from_a_sharded_forward(program, fn: Function, test: ast.AST, loop: ast.AST) -> Optional[ast.AST]:
    """The name a test reads that the loop computes from the outputs of an FSDP model's forward
    in that loop (a generation loop's `unfinished = unfinished & (token != eos)` from the logits
    of `model(...)`, then `if not unfinished.any(): break`): each rank's own samples decide, and
    every pass's forward all-gathers - the rank that stops first strands the others in their next
    forward (what Hugging Face's `generate(synced_gpus=True)` exists for). None where no such name."""
    sources, _, _ = _loop_dataflow(loop)
    # (what the forward is handed stays each rank's own: `model(input_ids=next_token)`)
    shared = shared_names(program, fn, forwards=False)
    forwarded = {name for name, values in sources.items() for value in values
                 for call in walk(value) if isinstance(call, ast.Call)
                 and (program.collective(call, fn) or "").startswith(FSDP_FORWARD)}
    if not forwarded:
        return None
    read = value_inputs(test)
    for name in (n for n in walk(test) if isinstance(n, ast.Name) and n.id in read and n.id in sources):
        if _ancestry({name.id}, sources, shared) & forwarded:
            return name
    return None


def _counted_only(name: str, sources: dict) -> bool:
    """The loop makes the name from numbers alone: constants, and names it makes the same way
    (`step += 1`, `cfg = stage_at(step)`), reading no data from outside the loop - a batch, a
    rollout buffer, `self`'s state. The same on every rank (a forward's input, not its output)."""
    seen, todo = set(), [name]
    while todo and len(seen) < 200:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        if current not in sources:
            return False  # read from outside the loop's own bindings: may be each rank's data
        for value in sources[current]:
            todo.extend(_data_inputs(value))
    return not todo


def _data_inputs(value: ast.AST) -> set[str]:
    """The names a value reads as data: value_inputs less the functions it calls (`stage_at` of
    `stage_at(step)`, `torch` of `torch.tensor(x)`)."""
    names: set[str] = set()
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Call):
            stack.extend(node.args)
            stack.extend(k.value for k in node.keywords)
            if isinstance(node.func, ast.Attribute) and not isinstance(node.func.value, ast.Name):
                stack.append(node.func.value)  # `x.float().mean()`: x is read
            elif isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) and \
                    node.func.value.id[:1].islower() and node.func.value.id not in _MODULE_LIKE:
                stack.append(node.func.value)  # `loss.item()`: loss is read (not `torch.` / `np.`)
            continue
        if isinstance(node, ast.Name):
            names.add(node.id)
        stack.extend(children(node))
    return names


# Names a call's receiver is a module by, not data (`torch.tensor(x)`, `np.mean(x)`, `math.exp(x)`).
_MODULE_LIKE = frozenset({"torch", "np", "numpy", "math", "F", "nn", "dist", "random", "time", "os", "json"})


def _effect(builder: Builder, fn: Function, stmt: ast.stmt, item: _Stmt, ddp: bool,
            after_only: bool = False, returns: bool = False, valued: bool = False,
            parted: bool = False) -> Optional[tuple[str, str]]:
    """What a test on every rank decides that ranks must agree on: (the action, the collective
    work the ranks then disagree about); None when nothing collective depends on it.
    after_only: only what the branch skips counts (a tensor test: not a branch's own work);
    returns: a `return` counts too (a test on a value's own number, `np.isnan(loss.item())`);
    parted: an object's rank-local state decides, so the ranks part only at the test (see below)."""
    branches = [stmt.body, stmt.orelse]
    for branch in branches:
        own = _ends(branch)
        if own is None and branch and _helper_exits_cleanly(builder.program, branch[-1], fn):
            own = "exit"  # (DINO4Cells' `trigger_job_requeue()`, whose body ends in `exit(0)`)
        if own is None:
            continue
        if own in ("break", "continue", "exit") and item.loops:
            # a break (or the process's exit): the others go on into the next pass; a continue:
            # into the rest of this one
            loop = item.loops[-1]
            work = _work(builder, fn, list(loop.body) if own != "continue" else _after(loop.body, stmt), ddp)
            if work and own == "break" and no_grad_forward(work) and _forwarded_before(builder, fn, loop, stmt, ddp):
                continue
            if work and own == "continue" and _no_grad_forwards(builder, fn, loop, ddp):
                # (`if torch.isnan(images).any(): continue` in a no-grad validation loop: DDP
                # broadcasts the buffers once, in a rank's first forward after training; the rank
                # that skips a batch still makes that one broadcast at its next forward, and the
                # forwards after it meet no one)
                continue
            if work and not (own == "continue" and _pairs(builder, fn, branch, work, ddp)):
                return own, work
        if own in ("return", "exit") and not after_only:
            # (`if valid_iters == 0: return 0.0` right before the function's own `return total /
            # valid_iters`, outside any loop: both ways leave at once with a plain number, and
            # nothing the ranks share is skipped)
            # Outside a loop, the ranks part only from the test on: the side's own work against
            # what the others go on to (trainer_fm's validate: rank 0 alone scores a reference
            # clip on the plain module and returns; the others return the mean loss at once -
            # the validation loop both ran before the test decides nothing)
            # (a tensor's test keeps the whole body: the value it returns - a fresh zero that never
            # passed the DDP forward - is what the caller's backward runs on)
            apart = parted and not item.loops and not isinstance(fn.node, ast.Module)
            scope = [] if own == "return" and not item.loops and _plain_last_return(fn, stmt, branch) \
                else list(branch) + _continuation(fn.node.body, stmt) if apart else list(fn.node.body)
            work = _work(builder, fn, scope, ddp)
            if work:
                return own, work
        if own in ("return", "exit") and after_only and returns and not isinstance(fn.node, ast.Module):
            # a step helper's `if np.isnan(loss_val): return` before its backward: the rank
            # that returns skips what follows in this call, the others run it (so does the
            # rank that exits there: `if (loss != loss).any(): exit()`)
            work = _work(builder, fn, _continuation(fn.node.body, stmt), ddp)
            if work and not _pairs(builder, fn, branch, work, ddp):
                return own, work
    caught = _caught_raise(fn, stmt) if isinstance(stmt, ast.If) and after_only else None
    above = _caught_above(builder, fn, stmt, ddp) if isinstance(stmt, ast.If) and after_only and valued \
        and caught is None else ""
    if above:
        # (`if torch.isnan(pred).any(): raise ValueError` in a loss helper, the trainer's `except:`
        # round the epoch restarting it: the rank skips its backward, the others wait in theirs)
        return "raise", above
    if isinstance(stmt, ast.If) and after_only and valued and caught is None:
        # `if not math.isfinite(loss.item()): torch.save({"inputs": all_gather(x), ...}); sys.exit(1)`:
        # the rank that fails stops the job - after a collective of its own the others, busy in
        # their backward, never join (a dump on the way out that waits for them all)
        for side in (stmt.body, stmt.orelse):
            if side and (isinstance(side[-1], ast.Raise) or (_exits(side[-1]) and _ends(side) is None)):
                mine = _work(builder, fn, side[:-1], ddp)
                if mine:
                    return f"runs {mine} before it stops the job", mine
            elif side and side[-1].__class__ is ast.Expr and side[-1].value.__class__ is ast.Call and \
                    _never_returns(builder.program, side[-1].value, fn):
                # (`self.clean_and_exit()`, a helper of the script's own that waits in a barrier
                # and then exits: its collective is this side's, on the way out - lossy-vae)
                mine = _work(builder, fn, side, ddp)
                if mine:
                    return f"runs {mine} before it stops the job", mine
    if caught is not None:
        # `try: ... if np.isnan(loss.item()): raise NanError; loss.backward() ... except NanError:
        # print(...)` (TransMVSNet): the rank that raises skips the rest of the try's body alone
        work = _work(builder, fn, _after(caught.body, stmt), ddp)
        if work:
            return "raise", work
    if isinstance(stmt, ast.If) and not after_only:
        mine, other = _work(builder, fn, stmt.body, ddp), _work(builder, fn, stmt.orelse, ddp)
        if mine and not other:
            return f"runs {mine}", mine
        if other and not mine:  # `if best_kept: pass / else: save()` ending in a barrier
            return f"runs {other} where it is false", other
    if isinstance(stmt, ast.If) and after_only and valued:
        # `if not torch.isnan(loss): loss.backward() ... else: log("skip")`: the backward (DDP's
        # gradient all-reduce) on one side only is the skip a `continue` before it would be
        # (a test on the value's own number only: `if loss.requires_grad:` is alike everywhere);
        # so is a hand-written gradient all-reduce there (`if ok(loss.item()): sync_grads(net)`)
        sides = [_work(builder, fn, side, ddp) for side in (stmt.body, stmt.orelse)]
        steps = [any(isinstance(n, ast.Call) and last_name(n.func) == "backward" for s in side for n in walk(s))
                 for side in (stmt.body, stmt.orelse)]
        for (mine, other), step, side in zip((sides, sides[::-1]), steps, (stmt.body, stmt.orelse)):
            # a hand-written one counts where the side is a training step (its own backward) and
            # the test a value's own check (`ok(loss.item())`), not a count's (`n.item() == 0`
            # before a metric's all_reduce) nor a key's (`"acc" in out`)
            if mine and not other and (("all-reduces the gradients" in mine and ddp) or
                                       (returns and step and not mine.startswith("the DDP forward"))):
                leaves = _ends(side)
                rest = _continuation(fn.node.body, stmt) if leaves == "return" and not isinstance(fn.node, ast.Module) \
                    else _after(item.loops[-1].body, stmt) if leaves == "continue" and item.loops else None
                if rest is not None and _pairs(builder, fn, side, _work(builder, fn, rest, ddp), ddp):
                    continue  # it leaves after the work the others run past the test: once each
                return f"runs {mine}", mine
    return None


def _pairs(builder: Builder, fn: Function, branch: list[ast.stmt], skipped: str, ddp: bool) -> bool:
    """The side that leaves runs, before it leaves, the very work it skips (pragmatiq's fixed
    step: `if not torch.isfinite(loss): self._backward(zero_loss); return False` before
    `self._backward(loss)`): the rank that leaves still takes part in it, once, as the others do."""
    mine = _work(builder, fn, [s for s in branch if not isinstance(s, (ast.Return, ast.Continue))], ddp)
    # (the same words, or a backward each - `(loss * 0).backward()` beside `loss.backward()`: one
    # gradient reduction either way, as reduced_by words it)
    return bool(mine) and (mine == skipped or (reduced_by(builder) in mine and reduced_by(builder) in skipped))


_BROAD_CATCH = frozenset({"Exception", "BaseException"})
_EXITS_RAISED = frozenset({"SystemExit", "KeyboardInterrupt", "GeneratorExit"})


def _raised_name(stmt: ast.If) -> Optional[str]:
    """The exception's name one side of stmt ends by raising, or None."""
    return next((last_name(n.exc.func if isinstance(n.exc, ast.Call) else n.exc)
                 for side in (stmt.body, stmt.orelse) if side and isinstance(side[-1], ast.Raise)
                 for n in side[-1:] if n.exc is not None), None)


def _caught_raise(fn: Function, stmt: ast.If) -> Optional[ast.Try]:
    """The `try:` of fn around stmt whose handler catches what one side of stmt raises (by the
    exception's name) and goes on without raising again: the raise is a skip, not a crash."""
    raised = _raised_name(stmt)
    return _swallowing_try(fn, stmt, raised) if raised else None


def _swallowing_try(fn: Function, inner: ast.AST, raised: str) -> Optional[ast.Try]:
    """The `try:` of fn around inner (a statement, or a call raising on the way up) whose handler
    catches `raised` and has a way through that does not raise again."""
    for node in walk(fn.node):
        if isinstance(node, ast.Try) and any(n is inner for part in node.body for n in walk(part)):
            for handler in node.handlers:
                names = {last_name(t) for t in ([handler.type] if not isinstance(handler.type, ast.Tuple)
                                                 else handler.type.elts) if t is not None}
                # (`except Exception:` and a bare `except:` catch whatever the test raises -
                # `raise FloatingPointError(...)` on a non-finite loss - but a process exit)
                broad = handler.type is None or bool(names & _BROAD_CATCH)
                if (raised in names or (broad and raised not in _EXITS_RAISED)) and not _always_raises(handler.body):
                    return node
    return None


def _always_raises(block: list) -> bool:
    """Every way through the block raises (a `raise` in it, or an `if` raising on both sides):
    a handler `if fail_safe: restart() else: raise` goes on where its test holds."""
    return any(isinstance(s, ast.Raise) or (isinstance(s, ast.If) and _always_raises(s.body)
                                            and _always_raises(s.orelse)) for s in block)


# How many callers up a raise is followed to the handler that swallows it (a tracker's NaN check
# in its loss, caught by the trainer's `except:` around the epoch: four calls up in pytracking)
_RAISE_CALLERS = 6


def _caught_above(builder: Builder, fn: Function, stmt: ast.If, ddp: bool) -> str:
    """The collective work a rank skips where stmt's raise, uncaught in fn, is swallowed by a
    handler some caller wraps round the call (`except:` printing and restarting the epoch): what
    runs after the call at each level up to that try - the rank's backward in the step loop that
    called the loss - or "" where no caller a few levels up swallows it (the raise then ends
    the job: no divergence)."""
    raised = _raised_name(stmt)
    if not raised or isinstance(fn.node, ast.Module):
        return ""
    work = _work(builder, fn, _continuation(fn.node.body, stmt), ddp)
    todo, seen = [(fn, work, 0)], {fn}
    while todo:
        callee, work, depth = todo.pop()
        if depth >= _RAISE_CALLERS:
            continue
        for caller, event in builder.callers().get(callee, [])[:4]:
            if event.kind != "call" or caller.node is None:
                continue
            held = _swallowing_try(caller, event.node, raised)
            if held is not None:
                found = work or _work(builder, caller, _after(held.body, _statement_of(held.body, event.node)), ddp)
                if found:
                    return found
                continue
            if caller in seen or isinstance(caller.node, ast.Module):
                continue
            seen.add(caller)
            here = _statement_of(caller.node.body, event.node)
            todo.append((caller, work or (_work(builder, caller, _continuation(caller.node.body, here), ddp)
                                          if here is not None else ""), depth + 1))
    return ""


def _statement_of(body: list, node: ast.AST) -> Optional[ast.stmt]:
    """The innermost statement under body holding node."""
    way = blocks_around(body, node)
    return way[-1][0][way[-1][1]] if way else None


def _helper_exits_cleanly(program, stmt: ast.stmt, fn: Function) -> bool:
    """stmt calls local functions only, each of which ends the process with status 0 on every
    way through it (its last statement `exit(0)` / `sys.exit()`, no `return`): a clean exit
    through a helper, as _ends reads one written in the branch."""
    if not (stmt.__class__ is ast.Expr and stmt.value.__class__ is ast.Call and
            _never_returns(program, stmt.value, fn)):
        return False
    return all(_ends([t.node.body[-1]]) == "exit" for t in program.resolve(stmt.value.func, fn)[0])


def _nested_effect(builder: Builder, fn: Function, stmt: ast.stmt, item: _Stmt, ddp: bool,
                   parted: bool = False, told: frozenset = frozenset()) -> Optional[tuple[str, str]]:
    """The leave a rank-local test holds a further test above: `if val >= best: stale += 1;
    if stale >= patience: break` (best lowered by rank 0 alone). The rank whose test goes the
    other way never reaches the inner leave - its counter is reset in the `else:` - so the
    ranks part there; told at the outer test, whose value is the rank-local one. (Inner tests
    only within this pass: a nested loop's break leaves that loop, not this one.)"""
    if not isinstance(stmt, ast.If):
        return None

    def down(body: list) -> Iterator[ast.If]:
        for node in body:
            if isinstance(node, ast.If):
                yield node
                yield from down(node.body)
                yield from down(node.orelse)
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                yield from down(node.body)

    # (not an `elif`: a test of its own, read as one where it reads the value)
    orelse = [] if len(stmt.orelse) == 1 and isinstance(stmt.orelse[0], ast.If) else stmt.orelse
    for inner in (*down(stmt.body), *down(orelse)):
        if told & {n.id if n.__class__ is ast.Name else n.attr for n in walk(inner.test)
                   if n.__class__ is ast.Name or n.__class__ is ast.Attribute}:
            continue  # (an inner test on a rank-local value of its own: told at that test)
        effect = _effect(builder, fn, inner, item, ddp, parted=parted)
        if effect is not None:
            return effect
    return None


def _ends(branch: list) -> Optional[str]:
    """How a branch leaves the pass: break / continue / return, or a clean exit of the process
    (`sys.exit()`, `exit(0)`: the launcher waits for the other ranks, which go on alone; a raise,
    or an exit with an error code, crashes the rank and the launcher ends the job: not a divergence)."""
    for stmt in branch:
        if isinstance(stmt, ast.Break):
            return "break"
        if isinstance(stmt, ast.Continue):
            return "continue"
        if isinstance(stmt, ast.Return):
            return "return"
        if _exits(stmt) and all(is_const(a, 0, None) for a in stmt.value.args) and not stmt.value.keywords:
            return "exit"
        if clean_exit(stmt):
            return "exit"
        if stmt.__class__ is ast.If and stmt.orelse:
            # `if keep_going and rank == 0: continue / else: sys.exit(1)`: no way falls out of the
            # `if`; the way that leaves cleanly is how the branch leaves (the other ends the rank)
            ways = [_ends(side) or ("crash" if _crashes_out(side) else None) for side in (stmt.body, stmt.orelse)]
            if None not in ways and set(ways) != {"crash"}:
                return next(way for way in ways if way != "crash")
    return None


def _crashes_out(branch: list) -> bool:
    """The branch ends in a raise or an exit with an error code: the rank fails and the launcher
    ends the job."""
    last = branch[-1] if branch else None
    return last is not None and ((isinstance(last, ast.Raise) and not clean_exit(last)) or (
        _exits(last) and not (all(is_const(a, 0, None) for a in last.value.args) and not last.value.keywords)))


def _plain_last_return(fn: Function, stmt: ast.stmt, branch: list) -> bool:
    """The branch returns a constant and all that follows stmt in fn is one `return` computed
    without a call (`return total / kept`): the two ways differ only in a plain number."""
    if isinstance(fn.node, ast.Module) or not any(n is stmt for n in walk(fn.node)):
        return False
    early = branch[-1] if branch and isinstance(branch[-1], ast.Return) else None
    rest = _continuation(fn.node.body, stmt)
    return early is not None and (early.value is None or isinstance(early.value, ast.Constant)) and \
        len(rest) == 1 and isinstance(rest[0], ast.Return) and not any(isinstance(n, ast.Call) for n in walk(rest[0]))


def _continuation(body: list, stmt: ast.stmt) -> list:
    """What runs after stmt until the function returns: the statements after it in its own block,
    then after each block around it (`if args.fp16: with autocast(): ...; if nan: return` skips
    the backward below the `with`)."""
    for index, top in enumerate(body):
        if top is stmt:
            return body[index + 1:]
        if any(n is stmt for n in walk(top)):
            blocks = [getattr(top, f, None) for f in ("body", "orelse", "finalbody")]
            blocks += [h.body for h in getattr(top, "handlers", ())] + [c.body for c in getattr(top, "cases", ())]
            for block in blocks:
                if block and any(n is stmt for s in block for n in walk(s)):
                    return _continuation(block, stmt) + body[index + 1:]
            return body[index + 1:]
    return []


def _after(body: list, stmt: ast.stmt) -> list:
    """The statements of a loop body that run after stmt in the same pass (stmt may be nested):
    the rest of its own block, then of each block around it (a `continue` inside `with
    model.no_sync():` skips the backward below it in the same `with`: flowprogen)."""
    for index, top in enumerate(body):
        if top is stmt:
            return body[index + 1:]
        if any(n is stmt for n in walk(top)):
            inner: list = []
            if isinstance(top, (ast.With, ast.AsyncWith, ast.If, ast.Try)):
                for field in ("body", "orelse", "finalbody"):
                    block = getattr(top, field, None) or []
                    if any(n is stmt for part in block for n in walk(part)):
                        inner = _after(block, stmt)
                        break
            return inner + body[index + 1:]
    return []


def _forward_works(program, call: ast.Call, fn: Function) -> bool:
    """A DDP model's forward that can meet the other ranks: with gradients on (its backward
    all-reduces; the reducer's first rebuild broadcasts bucket order). With gradients off and no
    buffers to broadcast (`broadcast_buffers=False`, or none visible) DDP runs the module alone:
    a rank's extra `with torch.no_grad(): hint = model(x)` waits for no one (a buffered one is
    program.collective's, NO_GRAD_FORWARD)."""
    return program.ddp_model(call, fn) is not None and not grad_off(program, call, fn)


def _round_robin(program, test: ast.AST, fn: Function) -> bool:
    """`i % world != rank` (either way round): the passes a rank skips are the others' share."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.NotEq)):
        return False
    left, right = test.left, test.comparators[0]
    for share, rank in ((left, right), (right, left)):
        if isinstance(share, ast.BinOp) and isinstance(share.op, ast.Mod) and program.ranks.is_rank(rank, fn):
            return True
    return False


def _collectives_in(builder: Builder, fn: Function, stmts: list) -> Iterator[str]:
    """The torch.distributed collectives some statements run, themselves or a few local calls
    down (not a model's forward or backward: the passes a rank keeps are its own training)."""
    program = builder.program
    for stmt in stmts:
        for node in walk(stmt):
            if not isinstance(node, ast.Call):
                continue
            op = program.collective(node, fn)
            if op and op.startswith("dist."):
                yield op
            for target in program.resolve(node.func, fn)[0]:
                for reached in builder.reach(target):
                    if reached[0].startswith("dist."):
                        yield f"{reached[0]} (in {target.label})"


def _work(builder: Builder, fn: Function, stmts: list, ddp: bool) -> str:
    """The first collective work in some statements: a collective (through local calls too), a
    DDP model's forward, a backward where a DDP model exists (its gradients are all-reduced)."""
    return next(_works(builder, fn, stmts, ddp), ("", None))[0]


def _no_grad_forwards(builder: Builder, fn: Function, loop: ast.AST, ddp: bool) -> list:
    """The collective work of the loop's body, (op, call) each, where every one is a DDP forward
    with gradients off; [] otherwise."""
    works = list(_works(builder, fn, list(loop.body), ddp))
    return works if all(no_grad_forward(op) for op, _ in works) else []


def _forwarded_before(builder: Builder, fn: Function, loop: ast.AST, stmt: ast.stmt, ddp: bool) -> bool:
    """Every collective work of the loop's body is a DDP forward with gradients off, and one of
    them comes before the test in each pass (`for batch in eval_loader: try: loss = model(batch)
    ... except: errors += 1; if errors > 10: break`): DDP broadcasts the buffers once, in the
    first forward after a training step, which the breaking rank has run like the others; the
    forwards it then skips meet no one."""
    return any(node.lineno < stmt.lineno for _, node in _no_grad_forwards(builder, fn, loop, ddp))


def _works(builder: Builder, fn: Function, stmts: list, ddp: bool):
    """Each collective work in some statements (what _work reads), with the call that leads to it."""
    program = builder.program
    conds_of = fn.__dict__.get("_call_conds", {})
    for stmt in stmts:
        for node in walk(stmt):
            if not isinstance(node, ast.Call):
                continue
            conds = conds_of.get(id(node))
            if conds and builder._dead_side(fn, conds):
                # `if self.save_mode: self._save_checkpoint(...)` with every construction passing
                # save_mode=False: the barrier inside never runs (OmegaNet's early stopper)
                continue
            op = program.collective(node, fn)
            if op:
                yield op, node
                continue
            name = last_name(node.func) or ""
            if name == "backward" and ddp and not module_method(program, fn) and not _round_backward(program, node, fn) \
                    and not no_sync.backward_unsynced(fn, node):
                yield f"{text(node.func, 40)}() ({reduced_by(builder)})", node
                continue
            if name == "backward" and node.args and isinstance(node.func, ast.Attribute) and \
                    (_deepspeed_engine(program, node.func.value, fn) or engine_subclass(program, node.func.value, fn)):
                yield f"{text(node.func, 40)}() (the DeepSpeed engine reduces the gradients)", node
                continue
            if _forward_works(program, node, fn):
                yield f"the DDP forward {text(node.func, 40)}()", node
                continue
            targets, _ = program.resolve(node.func, fn)
            for target in targets:
                reached = builder.reach(target)
                if reached:
                    # (`@torch.no_grad() def _eval(): loss = self._forward(batch)`: the helper's DDP
                    # forward runs with gradients off, as the call into it does)
                    yield f"{through_grad_off(program, reached[0][0], node, fn)} (in {target.label})", node
                    break
                if ddp and builder._backward(node, fn):
                    yield f"the backward in {target.label} ({reduced_by(builder)})", node
                    break
                if ddp and target.node is not None and not isinstance(target.node, ast.Module):
                    # a trainer's step a few helpers down (ParaGen: `_safe_step` -> `_step` ->
                    # `_backward_loss` -> `loss.backward()`)
                    deeper = _backward_in(builder, target, list(target.node.body), 3)
                    if deeper:
                        yield deeper, node
                        break


def none_decided_by(loop: ast.AST, test: ast.AST, program=None, fn: Optional[Function] = None) -> ast.AST:
    """What decides `x is None` (`is not None`): where the loop binds x to None itself on one side
    of an `if` (`if compute_gradients: labels = batch[:, 1:]` / `else: labels = None`), which side
    ran - that `if`'s test - not the batch the other side read (a slice of a tensor is never
    None). With the program, also where a step helper the loop calls does so for what it returns
    (`loss, aux = self.train_on_batch(x)`, whose `aux = None` sits under `if cfg.aux.active:` and
    an iteration count: the config and the count decide, alike on every rank). Each part of an
    `and`/`or`/`not` is read so. The test itself otherwise."""
    if isinstance(test, ast.BoolOp):
        parts = [none_decided_by(loop, v, program, fn) for v in test.values]
        return test if all(a is b for a, b in zip(parts, test.values)) else ast.BoolOp(op=test.op, values=parts)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        part = none_decided_by(loop, test.operand, program, fn)
        return test if part is test.operand else ast.UnaryOp(op=test.op, operand=part)
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Is, ast.IsNot))
            and isinstance(test.left, ast.Name) and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value is None):
        return test
    name = test.left.id
    sides = _none_sides(loop, name)
    if not sides and program is not None and fn is not None:
        sides = _none_sides_returned(program, fn, loop, name)
    return ast.Tuple(elts=sides, ctx=ast.Load()) if sides else test


def _none_sides(scope: ast.AST, name: str) -> list[ast.AST]:
    """The tests of the `if`s in scope with a side that binds name to None."""
    sides = []
    for node in walk(scope):
        if isinstance(node, ast.If):
            for side in (node.body, node.orelse):
                if any(isinstance(s, ast.Assign) and isinstance(s.value, ast.Constant) and s.value.value is None
                       and any(isinstance(t, ast.Name) and t.id == name for t in s.targets) for s in side):
                    sides.append(node.test)
    return sides


def _none_sides_returned(program, fn: Function, loop: ast.AST, name: str) -> list[ast.AST]:
    """For name bound in the loop from a helper's return (`a, name = self.step(x)`): the tests
    under which every helper it resolves to binds the returned name to None; none unless each
    return hands a plain name there and each such name is bound to None under an `if`."""
    for node in walk(loop):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.Call)):
            continue
        target = node.targets[0]
        if isinstance(target, ast.Name) and target.id == name:
            index = None
        elif isinstance(target, ast.Tuple) and any(isinstance(t, ast.Name) and t.id == name for t in target.elts):
            index = next(i for i, t in enumerate(target.elts) if isinstance(t, ast.Name) and t.id == name)
        else:
            continue
        helpers = [t for t in program.resolve(node.value.func, fn)[0]
                   if t.node is not None and isinstance(t.node, (ast.FunctionDef, ast.AsyncFunctionDef))]
        if len(helpers) > 3:
            return []  # (every helper must say so: a wide fan-out is not read through)
        sides = []
        for helper in helpers:
            returned = set()
            for ret in (n for n in walk(helper.node) if isinstance(n, ast.Return)):
                value = ret.value
                if index is not None:
                    value = (value.elts[index] if isinstance(value, ast.Tuple) and len(value.elts) == len(target.elts)
                             else None)
                if not isinstance(value, ast.Name):
                    return []
                returned.add(value.id)
            found = [side for returned_name in returned for side in _none_sides(helper.node, returned_name)]
            if not found:
                return []
            sides.extend(found)
        return sides
    return []


def none_batch_alike(program, fn: Function, loop: ast.AST, test: ast.AST) -> bool:
    """A None test on the loop's batch that every rank answers alike: never true (a default
    collate) or true at the loader's end, which ranks reading equal shards meet at the same pass
    (a prefetcher's None): the home both readers of batch tests ask (rank_state, batch_flags)."""
    return never_none_batch(program, fn, loop, test) or _prefetcher_ran_out(program, fn, loop, test)


def never_none_batch(program, fn: Function, loop: ast.AST, test: ast.AST) -> bool:
    """`for i, batch in enumerate(tqdm(loader)): if batch is None: continue` where every
    DataLoader the loop reads is built without a collate_fn of its own: torch's default collate
    never yields None, so the test is never true on any rank (a custom collate_fn that drops a
    bad sample may; the test then is the rank's own batch's)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Is, ast.IsNot))
            and isinstance(test.left, ast.Name) and is_const(test.comparators[0], None)):
        return False
    if not isinstance(loop, (ast.For, ast.AsyncFor)) or test.left.id not in {
            n.id for n in walk(loop.target) if isinstance(n, ast.Name)}:
        return False
    source, fn_here, loaders = loop.iter, fn, []
    for _ in range(4):
        while isinstance(source, ast.Call) and last_name(source.func) in ("enumerate", "tqdm", "iter") and source.args:
            source = source.args[0]
        if isinstance(source, ast.Call):
            break
        values = [(part, scope) for v, scope in program.values_of(source, fn_here, 1) if v is not source
                  for part in ((v.body, v.orelse) if isinstance(v, ast.IfExp) else (v,))]
        if not values:
            return False
        calls = [(v, scope) for v, scope in values if isinstance(v, ast.Call)]
        if len(calls) != len(values):
            # `pbar = tqdm(loader) if rank == 0 else loader`: each binding followed once more
            return all(never_none_batch(program, scope, ast.For(target=loop.target, iter=v, body=[], orelse=[]), test)
                       for v, scope in values) if len(values) <= 4 else False
        if all(last_name(v.func) in ("enumerate", "tqdm", "iter") for v, _ in calls) and len(calls) == 1:
            source, fn_here = calls[0]
            continue
        loaders = calls
        break
    else:
        return False
    if isinstance(source, ast.Call) and not loaders:
        loaders = [(source, fn_here)]
    return bool(loaders) and all(
        last_name(v.func) == "DataLoader" and keyword(v, "collate_fn") is None
        and not any(k.arg is None for k in v.keywords) for v, _ in loaders)
