"""DDP809 on a validation metric each rank computes from its own shard of the data.

`val_loss = validate(model, val_loader)`, where val_loader has a DistributedSampler and
validate() averages its batches' losses without sharing them, is each rank's own number: the
ranks read different samples, so their losses differ. An early stop on it - `stopper(val_loss)`
then `if stopper.early_stop: break`, or `if val_loss < best: ... else: bad += 1` then `if bad >
patience: break` - leaves the loop on some ranks while the others go into the next epoch and
wait in its gradient all-reduce.

Reported (a warning: it rests on the shards' metrics differing) only with all of these in sight:
- the evaluator: a local function the loop calls and binds the result of, whose `for` iterates
  one of its parameters, and that runs no collective that shares a value (all_reduce,
  all_gather, reduce, gather, broadcast, scatter), itself or through its helpers;
- the loader handed to that parameter (or the field of self it iterates, a loader the object was
  built with): built with a DistributedSampler, or handed to `accelerator.prepare` (lint/loader_facts.py);
- the decision: an `if` / `while` every rank runs (no rank test around it) whose test reads the
  metric, a name computed from it or set on a side of a test on it, or a field that a method
  handed the metric sets (`stopper(val_loss)` -> `self.early_stop = True`), and that leaves the
  loop or runs collective work on one side (rank_state._effect). A name a collective of the
  function shares (`dist.all_reduce(val_loss)`) is every rank's.
"""

from __future__ import annotations

import ast
import re
from typing import Any, Optional

from ddpdoctor.core.findings import Location
from ddpdoctor.lint import rank_state
from ddpdoctor.lint.fact_builder import argument_at, loc
from ddpdoctor.lint.nodes import children, walk
from ddpdoctor.lint.patterns import DDP_BACKWARD, DDP_FORWARD, last_name, loader_call, text

Builder = Any  # ddpdoctor.lint.facts.FactBuilder (facts imports this module, not the reverse)
Function = Any

# what a collective that makes a value every rank's says (a barrier or a DDP forward shares none)
SHARING = re.compile(r"all_reduce|all_gather|reduce|gather|broadcast|scatter")
# calls that hand on the loader they wrap: `for i, batch in enumerate(tqdm(loader))`
_WRAPPERS = frozenset({"enumerate", "tqdm", "iter", "islice", "trange"})


def gather(builder: Builder, ddp: bool, loaders: list) -> list[rank_state.RankLocalDecision]:
    # (a loader handed to accelerator.prepare is sharded by Accelerate: each process reads its own part)
    sharded = {str(f.location): "a DistributedSampler" if f.sampler == "distributed" else "split by accelerator.prepare"
               for f in loaders if f.sampler == "distributed" or f.prepared_by == "accelerate"}
    if not sharded:
        return []
    program = builder.program
    found = []
    for fn in builder.functions:
        if fn.node is None:
            continue
        stmts = rank_state.statements(program, fn)
        for index, item in enumerate(stmts):
            stmt = item.node
            if item.guards or stmt.__class__ is not ast.Assign or stmt.value.__class__ is not ast.Call:
                continue
            made = _evaluator(builder, fn, stmt.value, sharded) or \
                _inline_evaluation(builder, fn, stmts[:index], stmt.value, sharded)
            if made is None:
                continue
            names = {text(t) for target in stmt.targets for t in _names(target)}
            decision = _decision(builder, fn, stmts[index + 1:], names, ddp, made, stmt)
            if decision is not None and all(str(decision.location) != str(d.location) for d in found):
                found.append(decision)
    return found


def _names(target: ast.AST) -> list[ast.AST]:
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for t in target.elts for n in _names(t)]
    return [target] if isinstance(target, (ast.Name, ast.Attribute)) else []


def _evaluator(builder: Builder, fn: Function, call: ast.Call, sharded: dict) -> Optional[tuple[Function, str, str]]:
    """(the local function, the loader text, what shards it) where `call` runs an evaluation over
    a sharded loader that shares nothing of what it computes."""
    program = builder.program
    for target in program.resolve(call.func, fn)[0]:
        if target.node is None or isinstance(target.node, ast.Module):
            continue
        given, how = None, ""
        for it in _iterated(target):
            if it.__class__ is ast.Name:
                given = argument_at(target, call, it.id)
                how = _sharded(program, given, fn, sharded)
            else:  # `for x, y in self.val_data:` of the loader the trainer was built with
                given, how = it, _sharded(program, it, target, sharded)
            if how:
                break
        if not how:
            continue
        if not any(isinstance(n, ast.Return) and n.value is not None for n in walk(target.node)):
            continue
        ops = [op for op, _, _, _ in builder.reach(target)]
        if any(SHARING.search(op) and not op.startswith((DDP_FORWARD, DDP_BACKWARD)) for op in ops) or \
                any(op.startswith(DDP_BACKWARD) for op in ops):
            continue  # (a function that trains is no evaluation)
        return f"{target.name}()", text(given), how
    return None


# what a pass of an evaluation loop grows with its batch's results: `preds.extend(p)`, `total += n`
_GROWS = frozenset({"append", "extend"})


def _inline_evaluation(builder: Builder, fn: Function, before: list, value: ast.AST,
                       sharded: dict) -> Optional[tuple[str, str, str]]:
    """(where, the loader text, what shards it) where value reads what an earlier loop of fn over
    a sharded loader grew pass by pass from its own batches (`for batch in eval_dataloader: ...
    preds.extend(p)`, then `metric = f1_score(preds, refs)`), and that loop trains nothing: the
    evaluation written inline, each rank's number of its own shard. What the loop gathers
    (`accelerator.gather(predictions)`) is every rank's: grown from it alone, nothing is local."""
    program = builder.program
    read = {n.id for n in walk(value) if n.__class__ is ast.Name}
    if not read:
        return None
    shared = rank_state.shared_names(program, fn)
    for item in reversed(before):
        loop = item.node
        if loop.__class__ not in (ast.For, ast.AsyncFor):
            continue
        memo = fn.__dict__.setdefault("_grown_locally", {})  # (each assignment after the loop asks)
        if id(loop) not in memo:
            memo[id(loop)] = _grown_locally(program, fn, loop)
        grown = memo[id(loop)]
        if grown is None:
            return None  # (a loop that trains)
        grown, gathered = grown
        if read & gathered:
            # `predictions += accelerator.gather(logits).argmax(-1).tolist()` read by the metric:
            # computed from every rank's results, whatever ids the rank hands beside them
            return None
        if not (read & grown) - shared:
            continue
        it = loop.iter
        while it.__class__ is ast.Call and last_name(it.func) in _WRAPPERS and it.args:
            it = it.args[0]
        how = _sharded(program, it, fn, sharded) if it.__class__ in (ast.Name, ast.Attribute) else ""
        if item.guards or not how:
            return None
        return f"the loop at line {loop.lineno}", text(it), how
    return None


def _grown_locally(program, fn: Function, loop: ast.AST) -> Optional[tuple[set, set]]:
    """(the names a loop grows (`.append` / `.extend`, `+=`) from its batch's values, read in the
    loop's order: the loop's target is the rank's own, so is what is computed from it, but not what
    a collective hands back (`labels = accelerator.gather(labels)`, or a gather handed straight to
    `.append`) or shares in place (`dist.all_reduce(n)`); the names it grows from what a collective
    handed back alone). None where the loop runs a DDP backward (it trains)."""
    local = {n.id for n in walk(loop.target) if n.__class__ is ast.Name}
    grown: set = set()
    gathered: set = set()  # (names bound to what a collective handed back, then what grows from them)
    # (what a sharing call is handed is read by the collective, not into the value:
    # `preds += accelerator.gather(logits).argmax(-1).tolist()` grows every rank's logits)
    reads = lambda node: any(n.__class__ is ast.Name and n.id in local for n in _outside(node, sharing))
    shares = lambda node: any(n.__class__ is ast.Name and n.id in gathered for n in walk(node)) or \
        any(n.__class__ is ast.Call and n in sharing for n in walk(node))
    stmts = sorted((n for s in loop.body for n in walk(s) if isinstance(n, ast.stmt)),
                   key=lambda n: (n.lineno, n.col_offset))
    for stmt in stmts:
        calls = [c for c in walk(stmt) if c.__class__ is ast.Call]
        ops = [(c, program.collective(c, fn) or "") for c in calls]
        if any(op.startswith(DDP_BACKWARD) for _, op in ops):
            return None
        sharing = [c for c, op in ops if (SHARING.search(op) and not op.startswith(DDP_FORWARD))
                   or rank_state.sharing_helper(program, c, fn)]
        if stmt.__class__ in (ast.Assign, ast.AnnAssign) and stmt.value is not None:
            pairs = [(t, stmt.value) for t in (stmt.targets if stmt.__class__ is ast.Assign else [stmt.target])]
            # (`preds, refs = gather(p), gather(y)`: each name its own item)
            pairs = [pair for t, v in pairs for pair in (
                zip(t.elts, v.elts) if t.__class__ is ast.Tuple and v.__class__ is ast.Tuple
                and len(t.elts) == len(v.elts) else [(t, v)])]
            for target, value in pairs:
                targets = {n.id for n in walk(target) if n.__class__ is ast.Name}
                if value.__class__ is ast.Call and value in sharing:
                    local -= targets  # `gathered = accelerator.gather(preds)`: every rank's
                    gathered |= targets
                elif reads(value):
                    local |= targets
                    gathered -= targets
                else:
                    local -= targets
                    gathered -= targets
        elif stmt.__class__ is ast.AugAssign and stmt.target.__class__ is ast.Name and reads(stmt.value):
            grown.add(stmt.target.id)
            local.add(stmt.target.id)
        elif stmt.__class__ is ast.AugAssign and stmt.target.__class__ is ast.Name and shares(stmt.value):
            gathered.add(stmt.target.id)
        elif stmt.__class__ is ast.Expr and stmt.value.__class__ is ast.Call:
            call = stmt.value
            if call in sharing:  # `dist.all_reduce(total)`: shared in place
                local -= {a.id for a in call.args if a.__class__ is ast.Name}
            elif call.func.__class__ is ast.Attribute and call.func.attr in _GROWS and \
                    call.func.value.__class__ is ast.Name:
                # (`losses.append(accelerator.gather_for_metrics(loss))`: what is appended is
                # every rank's, however local what the gather was handed)
                if any(reads(a) for a in call.args):
                    grown.add(call.func.value.id)
                elif any(shares(a) for a in call.args):
                    gathered.add(call.func.value.id)
    return grown, gathered - grown


def _outside(node: ast.AST, sharing: list):
    """The nodes under node, not those inside a call of `sharing` (a collective's arguments)."""
    todo = [node]
    while todo:
        current = todo.pop()
        if current.__class__ is ast.Call and current in sharing:
            continue
        yield current
        todo.extend(children(current))


def _iterated(fn: Function) -> list[ast.AST]:
    """What fn's `for` loops iterate (through enumerate / tqdm, each of zip's): a parameter's
    name, or a field of self (`self.val_data`, the loader the object was built with)."""
    found = []
    for node in walk(fn.node):
        if not isinstance(node, (ast.For, ast.AsyncFor)):
            continue
        todo = [node.iter]
        while todo:
            it = todo.pop()
            if isinstance(it, ast.Call) and last_name(it.func) in _WRAPPERS and it.args:
                todo.append(it.args[0])
            elif isinstance(it, ast.Call) and last_name(it.func) == "zip":
                todo.extend(it.args)  # `for (ids, masks), labels in zip(val_in, val_out):`
            elif (isinstance(it, ast.Name) and it.id in fn.params) or (
                    isinstance(it, ast.Attribute) and isinstance(it.value, ast.Name) and it.value.id == "self"):
                found.append(it)
    return found


def _sharded(program, given: Optional[ast.AST], fn: Function, sharded: dict) -> str:
    """What shards the loader handed in ("a DistributedSampler", "split by accelerator.prepare"); ""
    when it is no loader built so."""
    if given is None:
        return ""
    values = program.values_of(given, fn, 3)
    for held, scope in list(values):
        if isinstance(held, ast.Name):  # `..., val_loader, val_sampler = prepare_loaders(args)`
            values += program.unpacked(held.id, scope)
    return next((sharded[str(loc(scope, v))] for v, scope in values if isinstance(v, ast.Call)
                 and loader_call(program, v, scope) and str(loc(scope, v)) in sharded), "")


def _decision(builder: Builder, fn: Function, after: list, names: set, ddp: bool, made: tuple,
              assign: ast.Assign) -> Optional[rank_state.RankLocalDecision]:
    program = builder.program
    shared = rank_state.shared_names(program, fn)
    tainted = {n for n in names if n not in shared}
    if not tainted:
        return None
    decided: set[int] = set()  # the statements on a side of a test on the metric
    reads = lambda node: any(text(n) in tainted for n in walk(node) if isinstance(n, (ast.Name, ast.Attribute)))
    for item in after:
        stmt = item.node
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets = {text(n) for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target])
                       for n in _names(t)}
            shares = any(isinstance(c, ast.Call) and rank_state.sharing_helper(program, c, fn)
                         for c in walk(stmt.value))
            if reads(stmt.value) and not shares:
                tainted |= targets - shared
            elif id(stmt) not in decided:  # bound again to what every rank shares (`val_loss = all_reduced(val_loss)`)
                tainted -= targets  # (not `stale = 0` on a side of a test on the metric: set by it)
        elif isinstance(stmt, ast.AugAssign) and reads(stmt.value):
            tainted |= {text(n) for n in _names(stmt.target)} - shared
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and \
                any(reads(a) for a in [*stmt.value.args, *(k.value for k in stmt.value.keywords)]):
            # `stopper(val_loss)`: the fields the method sets are the metric's now
            tainted |= _fields_set(program, fn, stmt.value)
        if not isinstance(stmt, (ast.If, ast.While)) or not reads(stmt.test):
            continue
        if isinstance(stmt, ast.If):
            # a name set on either side of a test on the metric follows it (`bad += 1`)
            decided.update(id(n) for s in stmt.body + stmt.orelse for n in walk(s))
            tainted |= {text(n) for s in stmt.body + stmt.orelse for s2 in walk(s)
                        if isinstance(s2, (ast.Assign, ast.AugAssign))
                        for t in (s2.targets if isinstance(s2, ast.Assign) else [s2.target])
                        for n in _names(t)} - shared
        if item.guards or _set_or_not(stmt.test):
            continue
        effect = rank_state._effect(builder, fn, stmt, item, ddp)
        if effect is None or rank_state.off_on_every_way(builder, fn, stmt):
            continue
        evaluator, loader, how = made
        return rank_state.RankLocalDecision(
            Location(fn.file.display, stmt.lineno), text(stmt.test), effect[0],
            ", ".join(sorted(names)), "shard_metric", effect[1], assigned=loc(fn, assign),
            guard=f"{evaluator} over {loader}",
            assumption="the ranks' shards give different numbers", shard=how)
    return None


def _set_or_not(test: ast.AST) -> bool:
    """`if best_ckpt is not None:` (or `not best_ckpt`): whether the metric ever set it, which
    the first evaluation does on every rank, not what the shard's number was."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    return isinstance(test, ast.Compare) and all(isinstance(op, (ast.Is, ast.IsNot)) for op in test.ops) and \
        any(isinstance(c, ast.Constant) and c.value is None for c in (test.left, *test.comparators))


def _fields_set(program, fn: Function, call: ast.Call) -> set[str]:
    """`stopper.early_stop` for the `self.early_stop = ...` of the method `stopper(...)` /
    `stopper.step(...)` runs."""
    receiver = call.func.value if isinstance(call.func, ast.Attribute) else call.func
    if not isinstance(receiver, (ast.Name, ast.Attribute)):
        return set()
    held = text(receiver)
    found = set()
    for method in program.resolve(call.func, fn)[0]:
        if method.cls is None or method.node is None:
            continue
        for node in walk(method.node):
            if isinstance(node, (ast.Assign, ast.AugAssign)):
                for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                        found.add(f"{held}.{t.attr}")
    return found
