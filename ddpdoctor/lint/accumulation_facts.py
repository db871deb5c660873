"""DDP805's facts: gradient accumulation loops (a backward every micro-step, the optimizer step
every N) and where DDP's gradient sync is left on for them."""

from __future__ import annotations

import ast
import copy
import operator
import re
from dataclasses import dataclass
from typing import Iterator, Optional

from ddpdoctor.core.findings import Location
from ddpdoctor.lint import no_sync
from ddpdoctor.lint.defaults import _assigned, _compare_constant, _declared_field, config_read, config_settles, constructed_truth, settled
from ddpdoctor.lint.fact_builder import (_cond_false, _cond_true, _fn_loops, _loops, _single_process, _truth_by_constants,
                                          argument_at, given_constants, loc)
from ddpdoctor.lint.nodes import children, walk
from ddpdoctor.lint.patterns import HANDS_THE_LOSS, _loss_of, grad_off, averages_gradients, backward_loss, launched_engine, dotted, fresh_model, is_const, keyword, last_name, loss_round_the_wrapper, opposite_sides, plain_loss, tests_around, text
from ddpdoctor.lint.program import is_property, Function, Klass, Module


OPTIMIZER_NAME = re.compile(r"opt", re.IGNORECASE)
SCHEDULER_NAME = re.compile(r"sched|warmup|lr_", re.IGNORECASE)


def _per_part(loop: ast.stmt) -> bool:
    """`for i in range(self.num_parts): backward(loss[i])`: a count the source holds in a name or
    field (not a literal, which may be 0, nor a loader), whose index picks the loss a backward
    right in the loop's body runs on: a loop over the parts of one pass."""
    if not (isinstance(loop, ast.For) and isinstance(loop.iter, ast.Call) and isinstance(loop.iter.func, ast.Name)
            and loop.iter.func.id == "range" and len(loop.iter.args) == 1 and isinstance(loop.target, ast.Name)
            and isinstance(loop.iter.args[0], (ast.Name, ast.Attribute)) and not loop.orelse):
        return False
    index = loop.target.id
    return any(isinstance(c, ast.Call) and last_name(c.func) == "backward" and any(
        isinstance(n, ast.Subscript) and any(isinstance(m, ast.Name) and m.id == index for m in walk(n.slice))
        for a in [*c.args, c.func] for n in walk(a)) for stmt in loop.body for c in walk(stmt))


def _over_optimizers(loop: ast.For) -> bool:
    """`for o in optimizers:` / `for o in optimizer.values():`: a loop over the optimizers."""
    iterable = loop.iter
    if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute) and \
            iterable.func.attr in ("values", "items") and not iterable.args:
        iterable = iterable.func.value
    return isinstance(iterable, (ast.Name, ast.Attribute)) and bool(OPTIMIZER_NAME.search(text(iterable)))


@dataclass
class AccumulationFact:
    backward: Location
    loop: Location  # the micro-step loop (or the loop whose step is conditional)
    step: Optional[Location]
    pattern: str  # "micro_step_loop" | "conditional_step" | "sync_flag_after_forward" (step: the forward)
    # | "no_sync_on_step" / "sync_flag_off_on_step" (the sync left off on a micro-step that steps)
    by: Optional[str] = None  # "accelerate": accelerator.backward() by hand, outside accumulate(); "fabric": fabric.backward()
    no_sync: Optional[bool] = None  # lint/no_sync.covered: False where it covers one configuration only
    no_sync_off_way: bool = False  # the source's no_sync is in none of the functions this loop runs
    # the command-line option the step's period comes from, where it defaults to 1 (MAE's
    # `--accum_iter`): nothing accumulates on a plain launch, so the finding rests on it
    period_option: Optional[str] = None
    # the loop's call that leads to the backward, where the finding points inside a helper: what
    # no_sync must wrap (the forward with it), not the backward's own line
    call: Optional[Location] = None
    # the loop is in the script's own code, not in a method of a framework's class (a Trainer or
    # LightningModule subclass): where the script also builds a framework's trainer, its own
    # loop with its own DDP model is still the script's to sync
    own_loop: bool = False
    # "no_sync_after_forward": where the context that holds the backward is entered
    entered: Optional[Location] = None


# The frameworks that run the training loop themselves (their classes' methods are their hooks).
_FRAMEWORK_PACKAGES = ("transformers.", "trl.", "lightning.", "pytorch_lightning.")


class AccumulationFacts:
    """Mixin of lint/facts.FactBuilder over lint/fact_builder.BuilderCore's walks: DDP805."""

    # ------------------------------------------------------------------ accumulation
    def accumulations(self) -> list[AccumulationFact]:
        found = []
        engine_steps = self._engine_steps()
        for fn in self.functions:
            loops = [node for node, _ in _fn_loops(fn)]
            if fn in engine_steps:
                loops.append(fn.node)  # its body is one pass of the engine's loop
            if not loops or self._one_process_only(fn):
                continue  # `else: train_plain(device)` beside the spawned DDP run: nothing to sync
            apart = None  # (asked once a loop of fn accumulates: the walk up and down is dear)
            reported = set()  # the stepping helpers already reported from this function
            backwards = set()  # the backwards already told: a loop over the model's parts inside
            # the micro-step loop (`for i in range(self.num_unet): backward(loss[i])`) is its pass
            for node in loops:
                fact = self._accumulation(fn, node)
                if fact is None and node is not fn.node:
                    fact = self._other_configuration(fn, node)
                    if fact is not None:
                        node = self._variants[-1]  # (its no_sync is read on the side it runs)
                step = self.__dict__.get("_fact_step", {}).get(id(fact))
                helper = self.__dict__.get("_stepping_helper", {}).get(step)
                if helper:
                    # XLM's six step loops (`clm_step`, `mlm_step`, ...) all reach one `optimize()`:
                    # one accumulation, reported at the first loop
                    if helper in reported:
                        continue
                    reported.add(helper)
                if fact is not None and apart is None:
                    apart = self._process_wraps_nothing(fn)
                if fact is not None and apart:
                    continue  # a pipeline stage's worker beside the spawned DDP one: no DDP to sync
                if fact is not None:
                    fact.own_loop = not self._framework_method(fn)
                    fact.no_sync = no_sync.covered(self.program, fn, node)
                    if fact.no_sync is None and self._switched_off_in(fn, node):
                        fact.no_sync = True
                    if fact.no_sync is None:
                        fact.no_sync_off_way = not self._syncs_on_the_way(fn, node)
                    if str(fact.backward) in backwards and _per_part(node):
                        continue
                    backwards.add(str(fact.backward))
                    found.append(fact)
        return found

    def _framework_method(self, fn: Function) -> bool:
        """fn is (inside) a method of a class deriving from a framework's (transformers' or TRL's
        Trainer, Lightning's LightningModule or callbacks): the framework runs it."""
        klass = self.program._class_of_fn(fn)
        return klass is not None and any(b.startswith(_FRAMEWORK_PACKAGES) for b in self.program.library_bases(klass))

    def _one_process_only(self, fn: Function, depth: int = 3) -> bool:
        """Every way into fn runs where the run is not distributed: each call of it sits on the
        one-process side of the switch the process group is set up under (`if n >= 2:
        mp.spawn(train_ddp) else: train_plain()`), or in a function only called so."""
        if isinstance(fn.node, ast.Module) or depth <= 0:
            return False
        if self._launcher_only(fn):
            return True  # (mp.spawn's launcher, beside its ranks: `train_plain(device)` when not --ddp)
        switches, ddp = self._switches(), self.wraps_ddp()
        if self._only_one_process_instances(fn, switches, ddp):
            return True
        sites = self.callers().get(fn, [])
        if not sites or fn in self.program.ranks.live_spawn_targets():
            return False
        return all(event.kind == "call" and (_single_process(event.conds, switches, ddp)
                                             or self._one_process_only(caller, depth - 1))
                   for caller, event in sites)

    def _only_one_process_instances(self, fn: Function, switches: frozenset, ddp: bool) -> bool:
        """fn is a method that runs only on objects built where the run is one process: every
        construction of its class, or of a subclass that keeps fn (`Trainer(cfg, model)` under
        `if world_size == 1:`), sits on the one-process side, and the subclass built for the
        distributed run (`TrainerDDP(...)` in the `else:`) replaces fn with its own (LSWT's
        `train_batch_step`, whose override sets the sync flag). Only where the source names those
        classes nowhere else (no factory, registry or alias may build them unseen)."""
        klass = fn.cls
        if klass is None or fn.parent is not None or fn.name.startswith("__"):
            return False
        built = self._constructions()
        program = self.program
        keeping = [c for c in self._built_of(klass) if program.method(c, fn.name) is fn]
        # (the constructions' sides first: most classes are built on every way, and the
        # program-wide look for names used as values is then never asked)
        if not keeping or not all(_single_process(conds, switches, ddp) for c in keeping for conds in built[c]):
            return False
        handed = self._classes_handed_on()
        if any(c.name in handed for c in keeping):
            return False
        # (and not where an override hands on to it: `super().train_batch_step(batch)`)
        return not any(caller.cls is not None and caller.cls not in keeping and program._derives(caller.cls, klass)
                       for caller, _ in self.callers().get(fn, []))

    def _classes_handed_on(self) -> set[str]:
        """The names the files read use as a value other than to build, derive from, annotate or
        test against (`trainer_cls = Trainer`, `REGISTRY["t"] = Trainer`, `return cls(...)`'s
        callers): a class named so may be built where no call names it."""
        found = self.__dict__.get("_handed_classes")
        if found is None:
            found = self.__dict__["_handed_classes"] = set()
            for source in self.program.files:
                plain = set()
                for node in source.of(ast.Call):
                    plain.add(id(node.func))
                    if last_name(node.func) in ("isinstance", "issubclass") and len(node.args) > 1:
                        plain.update(id(n) for n in walk(node.args[1]))
                for node in source.of(ast.ClassDef):
                    plain.update(id(n) for base in node.bases for n in walk(base))
                for node in source.of(ast.arg, ast.AnnAssign, ast.FunctionDef, ast.AsyncFunctionDef):
                    note = node.annotation if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else node.returns
                    if note is not None:
                        plain.update(id(n) for n in walk(note))
                found.update(node.id for node in source.of(ast.Name) if node.ctx.__class__ is ast.Load
                             and id(node) not in plain)
        return found

    def _built_of(self, klass: Klass) -> list[Klass]:
        """The classes the reached code builds by name that are klass or derive from it (asked for
        each method of a class: kept per class)."""
        memo = self.__dict__.setdefault("_built_of_memo", {})
        found = memo.get(klass)
        if found is None:
            found = memo[klass] = [c for c in self._constructions() if c is klass or self.program._derives(c, klass)]
        return found

    def _constructions(self) -> dict:
        """Each local class the reached code builds by its name -> the conditions of each such call."""
        found = self.__dict__.get("_built_by_name")
        if found is None:
            found = self.__dict__["_built_by_name"] = {}
            for caller, call, _, _ in self.calls():
                symbol = self.program._callee_symbol(call.func, caller)
                if symbol.__class__ is Klass:
                    found.setdefault(symbol, []).append(caller.__dict__.get("_call_conds", {}).get(id(call), ()))
        return found

    def _process_wraps_nothing(self, fn: Function, depth: int = 6, most: int = 400) -> bool:
        """Every way into fn starts at a spawned worker (mp.spawn's target, entered by nothing
        else) whose own calls, a few deep, never build a DDP model nor hand one to a wrapper
        (`prepare`, `initialize`): the process that runs fn has no DDP to sync (MeshGraphNets'
        pipeline-stage worker, spawned beside the DDP one by another `parallel_mode`). Unknown
        - a way in from a module's top level, or deeper than asked, or a tree past `most`
        functions - is False."""
        if isinstance(fn.node, ast.Module):
            return False
        callers = self.callers()
        spawned = set(self.program.ranks.live_spawn_targets())
        roots, seen, frontier = set(), {fn}, [fn]
        for _ in range(depth):
            up = []
            for f in frontier:
                sites = callers.get(f, [])
                if f in spawned and sites and all(event.kind == "ref" for _, event in sites):
                    roots.add(f)
                    continue
                if not sites or isinstance(f.node, ast.Module):
                    return False
                for caller, _ in sites:
                    if caller not in seen:
                        seen.add(caller)
                        up.append(caller)
            frontier = up
            if not frontier:
                break
        if frontier or not roots:
            return False
        return all(self._wraps_nothing_below(root, most) for root in roots)

    def _wraps_nothing_below(self, root: Function, most: int) -> bool:
        """No call of root's, nor of what it calls (at most `most` functions), builds a DDP model or
        hands one to a wrapper; asked once per spawned root."""
        memo = self.__dict__.setdefault("_wraps_nothing_memo", {})
        if id(root) not in memo:
            memo[id(root)] = self._walk_wraps_nothing(root, most)
        return memo[id(root)]

    def _walk_wraps_nothing(self, root: Function, most: int) -> bool:
        tree, queue = {root}, [root]
        while queue:
            f = queue.pop()
            for call in f.own_calls:
                if last_name(call.func) in WRAPPERS or self.program.ddp_call(call, f):
                    return False
            for event in f.events:
                if event.kind in ("call", "ref"):
                    for target in (*event.targets, *event.weak):
                        if target not in tree and not isinstance(target.node, ast.Module):
                            tree.add(target)
                            queue.append(target)
            for inner in f.nested.values():
                if inner not in tree:
                    tree.add(inner)
                    queue.append(inner)
            if len(tree) > most:
                return False
        return True

    def _every_time(self, test: ast.AST, fn: Function) -> bool:
        """`x % k == 0` where k is 1 on every way in: a parameter every caller leaves at 1, or an
        attribute the constructor sets from such a parameter (`self.acc_steps = acc_steps`), or a
        name only ever bound to 1 (`gradient_accumulation_steps = 1` in the script, NLX-GPT's);
        `... or step == last` holds whenever one part does."""
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
            return any(self._every_time(part, fn) for part in test.values)
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
                and is_const(test.comparators[0], 0) and isinstance(test.left, ast.BinOp)
                and isinstance(test.left.op, ast.Mod)):
            return False
        return self._one(test.left.right, fn)

    def _never_time(self, test: ast.AST, fn: Function) -> bool:
        """`x % k != 0` (or `> 0`) where k is 1 on every way in: false on every pass."""
        return isinstance(test, ast.Compare) and len(test.ops) == 1 and test.ops[0].__class__ in (ast.NotEq, ast.Gt) \
            and is_const(test.comparators[0], 0) and isinstance(test.left, ast.BinOp) \
            and isinstance(test.left.op, ast.Mod) and self._one(test.left.right, fn)

    def _one(self, k: ast.AST, fn: Function) -> bool:
        """The period k is 1 on every way in (see _every_time)."""
        if is_const(k, 1):
            return True  # `(i + 1) % 1 == 0` (an option at 1 is not: a launch may raise it, said as the assumption)
        if isinstance(k, ast.Attribute) and config_settles(k, self.program) == {1}:
            return True  # `i % cfg.optimizer.step == 0` with `step: 1` in every config beside the script
        if k.__class__ is ast.Subscript and config_read(k, self.program, fn) == {1}:
            return True  # `config_args["accu_steps"]` of the dict a YAML reader returned, 1 in every config
        if isinstance(k, ast.Attribute) and isinstance(k.value, ast.Name) and _sub_config(k.value.id, fn) and \
                not _assigned(k.attr, self.program) and self._section_key(k, fn) and \
                not _declared_field(k.attr, self.program) and self.program.config_key_anywhere(k.attr) == {1}:
            # `cfg.grad_acc_steps` of a section handed in or picked by name (DIAMOND's `cfg =
            # getattr(self._cfg, name).training`), 1 wherever a config sets it
            return True
        if isinstance(k, ast.Name) and k.id in fn.params and not fn.bindings.get(k.id):
            if given_constants(self.callers(), fn, k.id) == {1}:
                return True
            # (handed down from a runner's `self.accum_grad_iters`, a property reading
            # `self.config.run_cfg.get("accum_grad_iters", 1)` with 1 in every config)
            # (or `train_args.gradient_accumulation_steps` of `train_args = TrainArgs()` in the
            # settings module, a dataclass field declared `= 1` that no code sets)
            values = self.program.values_of(k, fn, 4)
            return bool(values) and all(v is not k and (self._config_one(v, scope) or self._property_one(v, scope)
                                                        or self._record_one(v, scope))
                                        for v, scope in values)
        if isinstance(k, ast.Name):
            if self._constant_one(k, fn) == "fixed":
                return True
            # `grad_acc_step = train_config["optimizer"]["grad_acc_step"]` with 1 in every config
            # (`accum_iter = config.basic.accum_iter` of an OmegaConf config too)
            values = self.program.values_of(k, fn, 1)
            return bool(values) and all(self._config_one(v, scope) for v, scope in values)
        if self._record_one(k, fn):
            return True
        if isinstance(k, ast.Attribute) and isinstance(k.value, ast.Name) and k.value.id == "self":
            return self._field_one(k, fn)
        return False

    def _record_one(self, k: ast.AST, fn: Function) -> bool:
        """`hparams.accum` of a settings module, or a field of a record built with its defaults or
        by a local factory, 1 on every run (see the three readers)."""
        return k.__class__ is ast.Attribute and k.value.__class__ is ast.Name and k.value.id != "self" and (
            self._module_constant_one(k, fn) or self._field_default_one(k, fn) or self._built_field_one(k, fn))

    def _built_field_one(self, k: ast.Attribute, fn: Function) -> bool:
        """`cfg.grad_accum_iters` of a record a local factory builds (`return
        BaseConfigByEpoch(..., grad_accum_iters=grad_accum_iters)`), handed 1 or its parameter
        that every call leaves at 1 (ResRep's `get_baseconfig_by_epoch(..., grad_accum_iters=1)`):
        1 on every way in."""
        values = self.program.values_of(k.value, fn, 3)
        if not values:
            return False
        for value, scope in values:
            targets = self.program.resolve(value.func, scope)[0] if value.__class__ is ast.Call else []
            if not targets or any(t.node is None or t.node.__class__ is ast.Module or t.name == "__init__"
                                  or not t.returned for t in targets):
                return False
            for target in targets:
                for returned in target.returned:
                    given = keyword(returned, k.attr) if returned.__class__ is ast.Call else None
                    if given is None:
                        return False
                    if is_const(given, 1):
                        continue
                    if not (given.__class__ is ast.Name and given.id in target.params and not target.bindings.get(given.id)
                            and given_constants(self.callers(), target, given.id) == {1}):
                        return False
        return True

    def _section_key(self, k: ast.Attribute, fn: Function) -> bool:
        """The key is no command-line option: not one the options declare or a launch gives, or,
        where only the Hydra configs give it, read off a section picked in fn (`cfg =
        getattr(self._cfg, name).training`) - not off the config handed in, whose keys a launch
        overrides (`accum_iter=20` in a script the lint does not see)."""
        if k.attr not in self.program.option_defaults():
            return True
        return k.attr not in self.program.declared_defaults() and bool(fn.bindings.get(k.value.id)) and \
            self.program.option_defaults()[k.attr] == 1 and \
            all(v == 1 for v in self.program.launch_candidates().get(k.attr, ()))

    def _property_one(self, value: ast.AST, fn: Function) -> bool:
        """`self.accum_grad_iters` of a property whose every return reads a config key with 1 for
        its default, a key every YAML config beside the script that gives it sets to 1
        (`int(self.config.run_cfg.get("accum_grad_iters", 1))`, `accum_grad_iters: 1`)."""
        if not (value.__class__ is ast.Attribute and value.value.__class__ is ast.Name and value.value.id == "self"):
            return False
        klass = self.program._class_of_fn(fn)
        method = self.program.method(klass, value.attr) if klass is not None else None
        if method is None or not is_property(method.node) or not method.returned:
            return False
        for returned in method.returned:
            read = returned.args[0] if returned.__class__ is ast.Call and last_name(returned.func) == "int" \
                and len(returned.args) == 1 else returned
            if not (read.__class__ is ast.Call and read.func.__class__ is ast.Attribute and read.func.attr == "get"
                    and len(read.args) == 2 and read.args[0].__class__ is ast.Constant
                    and isinstance(read.args[0].value, str) and is_const(read.args[1], 1)):
                return False
            if not self.program.config_key_anywhere(read.args[0].value) <= {1}:
                return False
        return True

    def _config_one(self, value: ast.AST, fn: Function) -> bool:
        """A config read that every config beside the script sets to 1: `cfg["optim"]["accum"]`,
        `config.basic.accum_iter`, `train_cfg.get("grad_accum_steps", 1)` of `train_cfg =
        cfg["training"]`, and `max(<such a read>, 1)` or `int(<such a read>)`."""
        if value.__class__ is ast.Call and value.func.__class__ is ast.Name and value.func.id == "int" and \
                len(value.args) == 1 and not value.keywords:
            value = value.args[0]  # (`int(cfg.get("accumulate_grad_batches", 1))`: the same count)
        if value.__class__ is ast.Call and last_name(value.func) == "max" and value.args and not value.keywords:
            reads = [a for a in value.args if not (a.__class__ is ast.Constant and isinstance(a.value, int)
                                                   and not isinstance(a.value, bool) and a.value <= 1)]
            return len(reads) == 1 and self._config_one(reads[0], fn)
        default = None
        if value.__class__ is ast.Call and value.func.__class__ is ast.Attribute and value.func.attr == "get" and \
                1 <= len(value.args) <= 2 and not value.keywords and value.args[0].__class__ is ast.Constant:
            # (a config without the key gets the default: it must be 1 as well)
            default = value.args[1] if len(value.args) == 2 else ast.Constant(value=None)
            value = ast.Subscript(value=value.func.value, slice=value.args[0], ctx=ast.Load())
        if value.__class__ not in (ast.Subscript, ast.Attribute):
            return False
        if default is not None and not is_const(default, 1):
            return False
        # (`train_cfg["x"]` of `train_cfg = cfg["training"]`: read from the file's root)
        return config_read(value, self.program, fn) == {1}

    def _counter_at_one(self, node: ast.If, body: list, fn: Function) -> bool:
        """`if num_iter == config.step_per_update: num_iter = 0; opt.step()`, the counter raised by
        one on every pass (`num_iter += 1` in the loop's own body) and the period 1 on every way in
        (`step_per_update: 1` in every config, Point-M2AE's runners): it reaches the period, and
        the step runs, on every pass."""
        test = node.test
        if not (test.__class__ is ast.Compare and len(test.ops) == 1 and test.ops[0].__class__ is ast.Eq):
            return False
        left, right = test.left, test.comparators[0]
        counter, period = (left, right) if left.__class__ is ast.Name else (right, left)
        if counter.__class__ is not ast.Name or not self._one(period, fn):
            return False
        raised = any(s.__class__ is ast.AugAssign and s.op.__class__ is ast.Add and s.target.__class__ is ast.Name
                     and s.target.id == counter.id and is_const(s.value, 1) for s in body)
        reset = any(s.__class__ is ast.Assign and len(s.targets) == 1 and s.targets[0].__class__ is ast.Name
                    and s.targets[0].id == counter.id and is_const(s.value, 0) for s in node.body)
        return raised and reset

    def _field_one(self, k: ast.Attribute, fn: Function) -> bool:
        """`self.acc_steps` that the constructor sets from a parameter every construction gives 1."""
        klass = self.program._class_of_fn(fn)
        values = self.program._attr(klass, k.attr) if klass is not None else []
        return bool(values) and all(
            isinstance(v, ast.Name) and v.id in owner.params and given_constants(self.callers(), owner, v.id) == {1}
            for v, owner in values)

    def _constant_one(self, name: ast.Name, fn: Function) -> Optional[str]:
        """A name only ever bound to 1 (`gradient_accumulation_steps = 1`): "fixed", or
        "overridable" where a module it is bound in rewrites its own globals at run time
        (nanoGPT's `exec(open("configurator.py").read())`, `globals().update(...)`): a launch may
        raise it there, so a finding rests on that, as on a command-line option at 1. None where
        some binding is not 1."""
        values = self.program.values_of(name, fn, 2)
        if all(v is name for v, _ in values) and not self.program.lookup(name.id, fn):
            values = self.program.star_bound(name.id, fn)  # (a settings module star-imported)
        if not values or not all(is_const(v, 1) for v, _ in values):
            return None
        modules = {id(scope.file): scope.file for _, scope in values if isinstance(scope.node, ast.Module)}
        return "overridable" if any(f.rewrites_globals for f in modules.values()) else "fixed"

    def _module_constant_one(self, k: ast.Attribute, fn: Function) -> bool:
        """`hparams.accum_size` of a local module of settings (`import hparams`) that binds
        `accum_size = 1` at its top, which no code sets again (`hparams.accum_size = ...`, a
        module rewriting its own globals): 1 on every run."""
        module = self.program.symbol(k.value.id, fn)
        if not isinstance(module, Module) or module.body is None or module.file.rewrites_globals:
            return False
        bound = module.body.bindings.get(k.attr, [])
        return bool(bound) and all(is_const(v, 1) for _, v in bound) and not _assigned(k.attr, self.program)

    def _field_default_one(self, k: ast.Attribute, fn: Function) -> bool:
        """`config.gradient_accumulation_steps` of `config = TrainingConfig()`, a local class
        (a dataclass) that declares the field `= 1`, built with no arguments, the field set
        nowhere in the source (`config.x = ...`, `setattr`): 1 on every run."""
        values = self.program.values_of(k.value, fn, 2)
        if not values or not all(isinstance(v, ast.Call) and not v.args and not v.keywords for v, _ in values):
            return False
        klass = self.program.class_of(k.value, fn)
        if klass is None or not any(
                isinstance(n, (ast.Assign, ast.AnnAssign)) and is_const(n.value, 1) and any(
                    isinstance(t, ast.Name) and t.id == k.attr
                    for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))
                for n in klass.node.body):
            return False
        stored = self._stored_fields()
        # (set somewhere - `cfg.gradient_accumulation_steps = args.accum` - or by name, `setattr`)
        return stored is not None and k.attr not in stored

    def _stored_fields(self) -> Optional[frozenset]:
        """The attribute names any file of the program assigns (`x.attr = ...`); None where some
        file sets fields by name (`setattr`). Read once per lint."""
        if "_stored" not in self.__dict__:
            names: set = set()
            for source in self.program.files:
                for node in walk(source.tree):
                    if node.__class__ is ast.Attribute and node.ctx.__class__ is not ast.Load:
                        names.add(node.attr)
                    elif node.__class__ is ast.Call and last_name(node.func) == "setattr":
                        names = None
                        break
                if names is None:
                    break
            self.__dict__["_stored"] = frozenset(names) if names is not None else None
        return self.__dict__["_stored"]

    def _option_truth(self, test: ast.AST, fn: Function) -> Optional[bool]:
        """A step's test the options settle (`(opts.mix == "accum" and (i + 1) % n == 0) or
        opts.mix in ["round-robin", "random"]` with --mix at "random": every pass steps), through
        and / or / not; None where some part is not settled. The options' part is
        defaults.settled's; a step every pass takes (`% 1 == 0`) is this rule's own."""
        if isinstance(test, ast.BoolOp):
            parts = [self._option_truth(v, fn) for v in test.values]
            if isinstance(test.op, ast.Or):
                return True if True in parts else (False if all(p is False for p in parts) else None)
            return False if False in parts else (True if all(p is True for p in parts) else None)
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            inner = self._option_truth(test.operand, fn)
            return None if inner is None else not inner
        if self._every_time(test, fn):
            return True
        if not isinstance(test, ast.Compare):
            return None  # (a bare flag is no step's test: the accumulation switch is read elsewhere)
        return settled(test, self.program)

    def _count_switch(self, test: ast.AST) -> bool:
        """`args.accum_steps > 1` (or `>= 2`, `!= 1`) of a command-line count that defaults to 1."""
        if not (test.__class__ is ast.Compare and len(test.ops) == 1 and test.left.__class__ is ast.Attribute):
            return False
        op, bound = test.ops[0].__class__, test.comparators[0]
        if not ((op is ast.Gt and is_const(bound, 1)) or (op is ast.GtE and is_const(bound, 2))
                or (op is ast.NotEq and is_const(bound, 1))):
            return False
        return self._defaults_to_one(test.left.attr)

    def _defaults_to_one(self, option: str) -> bool:
        """The command-line option is a count declared with default 1 (not the bool True); also
        one every launch gives a value the lint cannot read (`--accum-iter $ACC`)."""
        default = self.program.option_defaults().get(option)
        if option in self.program.launched_unknown():
            default = self.program.declared_defaults().get(option)
        return default == 1 and not isinstance(default, bool)

    def _runs_once(self, fn: Function, loop: ast.AST) -> bool:
        """`for _ in range(n):` over a parameter every way into fn gives 1 (passed, or its
        default where the call leaves it out): one micro-step, nothing accumulates."""
        if isinstance(loop, ast.For) and isinstance(loop.iter, ast.Name) and _star_of_a_pair(fn, loop.iter.id):
            return True  # `for i, *batch in enumerate(loader): for sample in batch:` - batch is [item]
        if isinstance(loop, ast.For) and self._one_piece(loop.iter, fn):
            return True
        if not (isinstance(loop, ast.For) and isinstance(loop.iter, ast.Call) and last_name(loop.iter.func) == "range"
                and len(loop.iter.args) == 1 and isinstance(loop.iter.args[0], (ast.Name, ast.Attribute))):
            return False
        if isinstance(loop.iter.args[0], ast.Attribute):
            # `for _ in range(self.cfg.grad_accum):` with `grad_accum: 1` in every config beside it;
            # `range(self.accum)` of a constructor every construction hands 1
            count = loop.iter.args[0]
            return config_settles(count, self.program) == {1} or (
                count.value.__class__ is ast.Name and count.value.id == "self" and self._field_one(count, fn))
        if self._constant_one(loop.iter.args[0], fn) == "fixed":
            return True  # `gradient_accumulation_steps = 1` and nothing rebinds it: one micro-step
        param = loop.iter.args[0].id
        if param not in fn.params or fn.bindings.get(param):
            return False
        return given_constants(self.callers(), fn, param) == {1}

    def _one_piece(self, pieces: ast.AST, fn: Function) -> bool:
        """The batch cut into pieces of its size over the accumulation count, or into that many
        pieces, where the count is 1 (`split_into_minibatches(x, y, BATCH_SIZE //
        ACCUMULATION_STEPS)` with `ACCUMULATION_STEPS = 1` in the settings module bGPT star-imports,
        `x.chunk(accum)`): one piece, one backward per step."""
        made = [pieces] if pieces.__class__ is ast.Call else [
            v for v, _ in self.program.values_of(pieces, fn, 1) if v.__class__ is ast.Call] \
            if pieces.__class__ is ast.Name else []
        for call in made[:4]:
            given = [*call.args, *(k.value for k in call.keywords)]
            if any(arg.__class__ is ast.BinOp and arg.op.__class__ in (ast.FloorDiv, ast.Div)
                   and self._one(arg.right, fn) for arg in given):
                return True
            # (`x.chunk(k)` or `torch.chunk(x, k)`: the count is the last argument given)
            if last_name(call.func) == "chunk" and len(given) in (1, 2) and self._one(given[-1], fn):
                return True
        return False

    def _steps_plain_models(self, steps: list, fn: Function) -> bool:
        """Every optimizer the loop steps was built over the parameters of models no DDP wraps
        (`BertAdam([p for n, p in student.named_parameters()])`, the teacher alone wrapped): the
        gradients it steps are never all-reduced, so no sync is there to skip."""
        for call, _ in steps:
            if not (isinstance(call.func, ast.Attribute) and call.func.attr == "step"):
                return False
            built = [(v, scope) for v, scope in self.program.values_of(call.func.value, fn) if isinstance(v, ast.Call)]
            if not built:
                return False
            for value, scope in built:
                owners = _parameter_owners(self.program, value, scope)
                if not owners or not all(fresh_model(self.program, o, scope) and not self._wrapped(o, scope)
                                         for o in owners):
                    return False
        return True

    def _steps_another_model(self, step: ast.Call, backward: ast.Call, fn: Function) -> bool:
        """`opt_d.step()` (or `opt_d.zero_grad()`) over `disc.parameters()` where the backward's
        loss comes from `gen(x)`: the optimizer touches none of the models whose gradients that
        backward makes (both known)."""
        if not (isinstance(step.func, ast.Attribute) and step.func.attr in ("step", "zero_grad") and
                isinstance(backward.func, ast.Attribute)):
            return False
        built = [(v, scope) for v, scope in self.program.values_of(step.func.value, fn) if isinstance(v, ast.Call)]
        if not built or any(scope is not fn for _, scope in built):
            return False  # (handed in from a caller: its names are the caller's, not comparable here)
        owners = {text(o) for v, _ in built for o in _parameter_owners(self.program, v, fn)}
        loss = _loss_of(backward.func.value)
        values = [loss, *(v for v, scope in self.program.values_of(loss, fn, 1) if scope is fn)]
        models = {text(c.func) for v in values for c in walk(v)
                  if isinstance(c, ast.Call) and self.program.ddp_model(c, fn) is not None}
        # both sides names this function binds itself (`gen = DDP(...)`, `opt_d = SGD(disc...)`)
        local = lambda name: name.isidentifier() and name in fn.bindings and name not in fn.params
        return bool(owners) and bool(models) and all(map(local, owners | models)) and not owners & models

    def _wrapped(self, owner: ast.AST, scope: Optional[Function] = None) -> bool:
        """The model's name is handed to a wrapper somewhere (`DDP(model)`, `accelerator.prepare(
        model, opt)`, `deepspeed.initialize(model=model)`): the optimizer built over its parameters
        before steps the wrapped model's too. So is the field scope keeps it in (`self.model =
        model` beside `get_optimizer(model.parameters())`, then `accelerator.prepare(self.model,
        self.optim)`: SoundStorm's trainer)."""
        names = {text(owner)}
        if scope is not None and owner.__class__ is ast.Name:
            names |= {text(t) for n in scope.own_of(ast.Assign) if n.value.__class__ is ast.Name
                      and n.value.id == owner.id for t in n.targets if t.__class__ is ast.Attribute}
        for fn, call, _, _ in self.calls():
            handed = [a for a in [*call.args, *(k.value for k in call.keywords)] if text(a) in names]
            if not handed:
                continue
            if last_name(call.func) in WRAPPERS or self.program.ddp_call(call, fn):
                return True
            # `Trainer(net, optimizer)` whose __init__ wraps its `model` parameter in DDP
            # (OpenTransformer): the parameter the model is handed to, wrapped there
            for target in self.program.resolve(call.func, fn)[0]:
                if isinstance(target.node, ast.Module):
                    continue
                params = {p for p in (*target.params, *target.kwonly) if argument_at(target, call, p) in handed}
                # and the fields it keeps them in (`self.model = model`, wrapped by a later method)
                pairs = [(t, n.value) for n in target.own if isinstance(n, ast.Assign) for t in n.targets]
                pairs += [pair for t, v in list(pairs) if isinstance(t, ast.Tuple) and isinstance(v, ast.Tuple)
                          and len(t.elts) == len(v.elts) for pair in zip(t.elts, v.elts)]
                kept = {text(t) for t, v in pairs if isinstance(t, ast.Attribute) and isinstance(v, ast.Name)
                        and v.id in params}
                klass = self.program._class_of_fn(target)
                where = [target] + ([m for m in klass.methods.values() if m is not target] if klass and kept else [])
                if params and any((last_name(inner.func) in WRAPPERS or self.program.ddp_call(inner, method))
                                  and any(text(a) in params | kept
                                          for a in [*inner.args, *(k.value for k in inner.keywords)])
                                  for method in where for inner in method.own_calls):
                    return True
        return False

    def _syncs_on_the_way(self, fn: Function, loop: ast.AST, depth: int = 5) -> bool:
        """no_sync (or require_backward_grad_sync) is used by the function holding the loop, one
        around it, or a function the loop calls (a few calls down): it may be what this loop's
        micro-steps run under. One in a helper off the loop's way (a grad-cache step elsewhere)
        syncs nothing here."""
        scope: Optional[Function] = fn
        while scope is not None:
            if any(no_sync.mentions(n) for n in scope.own):
                return True
            scope = scope.parent
        for caller, _ in self.callers().get(fn, []):
            if any(no_sync.mentions(n) for n in caller.own):
                return True  # `with model.no_sync(): train_step()` around the call
        seen: set = set()
        # (a guessed receiver counts: `backend.get_context_for_microstep_forward(...)` over several
        # backends' methods may be the one that syncs)
        todo = [(target, depth) for c in walk(loop) if isinstance(c, ast.Call)
                for found in self.program.resolve(c.func, fn) for target in found]
        while todo:
            target, left = todo.pop()
            if target in seen or left <= 0 or isinstance(target.node, ast.Module):
                continue
            seen.add(target)
            if any(no_sync.mentions(n) for n in walk(target.node)) or self._bypass_switch(target):
                return True
            todo.extend((t, left - 1) for c in target.own_calls for found in self.program.resolve(c.func, target)
                        for t in found)
        return False

    def _switched_off_in(self, fn: Function, loop: ast.AST) -> bool:
        """The loop calls a local DistributedDataParallel subclass's own sync switch
        (`model.accumulate_gradients(i < n - 1)`, PyText), resolved or by its name alone."""
        if not hasattr(self, "_switch_names"):  # the switches the program's DDP subclasses have, once
            self._switch_names = {name for k in self.program.classes for name, m in k.methods.items()
                                  if self._bypass_switch(m)}
        return bool(self._switch_names) and any(
            isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr in self._switch_names
            for c in walk(loop))

    def _bypass_switch(self, method: Function) -> bool:
        """A method of a local DistributedDataParallel subclass that sets a field its forward
        tests to call `self.module(...)` instead of DDP's own forward (PyText's
        `accumulate_gradients(True)`): the subclass's own no_sync."""
        klass = method.cls
        if klass is None or not any(b.rsplit(".", 1)[-1] == "DistributedDataParallel"
                                    for k in (klass, *self.program.bases(klass)) for b in k.bases):
            return False
        forward = klass.methods.get("forward")
        set_here = {t.attr for n in method.own if isinstance(n, ast.Assign) for t in n.targets
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"}
        if forward is None or not set_here:
            return False
        return any(isinstance(n, ast.If) and any(isinstance(a, ast.Attribute) and a.attr in set_here for a in walk(n.test))
                   and any(isinstance(c, ast.Call) and text(c.func) == "self.module" for c in walk(n))
                   for n in forward.own)

    def _engine_steps(self) -> set[Function]:
        """The process functions of an ignite `Engine(update)`: the engine calls one per batch, so
        its body is the body of a training loop (`update` accumulates when it steps every K)."""
        steps = set()
        for fn in self.functions:
            for call in fn.own_calls:
                if last_name(call.func) == "Engine" and call.args and \
                        (self.program.qualify(call.func, fn) or "").startswith("ignite."):
                    steps.update(t for t in self.program.reference(call.args[0], fn)
                                 if not isinstance(t.node, ast.Module))
        return steps

    def _unprepared_forward(self, backward: ast.Call, fn: Function) -> bool:
        """`accelerator.backward(loss)` of `loss = self.wrapper(x)` where `self.wrapper` is never
        handed to (nor bound from) `accelerator.prepare` in its class, and was built before any
        argument of its construction was prepared (`self.wrapper = Wrapper(self.model)` above
        `self.model, opt = acc.prepare(self.model, opt)`: the wrapper holds the plain module,
        audiolm's fine trainer): its forward passes no DDP wrapper, so no backward of it syncs."""
        klass = self.program._class_of_fn(fn)
        if klass is None or not backward.args:
            return False
        names = {n.id for n in walk(backward.args[0]) if n.__class__ is ast.Name}
        owners = {text(v.func) for name in names for _, v in fn.bindings.get(name, ())
                  if v.__class__ is ast.Call and v.func.__class__ is ast.Attribute
                  and v.func.value.__class__ is ast.Name and v.func.value.id == "self"}
        if len(owners) != 1:
            return False
        owner = owners.pop()
        methods = [m for k in [klass, *self.program.bases(klass)] for m in k.methods.values() if m.node is not None]
        prepared: dict[str, list] = {}  # text -> (method, line) of each prepare handing or binding it
        built = []  # (method, line, construction) of `self.<owner> = Class(...)`
        for method in methods:
            for node in method.own_of(ast.Assign):
                value = node.value
                targets = [e for t in node.targets for e in (t.elts if isinstance(t, ast.Tuple) else [t])]
                if value.__class__ is ast.Call and last_name(value.func) == "prepare":
                    for item in [*value.args, *targets]:
                        prepared.setdefault(text(item), []).append((method, node.lineno))
                elif value.__class__ is ast.Call and any(text(t) == owner for t in targets):
                    built.append((method, node.lineno, value))
            for call in method.own_calls:
                if last_name(call.func) == "prepare":
                    for item in call.args:
                        prepared.setdefault(text(item), []).append((method, call.lineno))
        if not prepared or owner in prepared or len(built) != 1:
            return False  # (no prepare in the class: the model is wrapped elsewhere, not judged here)
        method, line, made = built[0]
        given = [text(a) for a in [*made.args, *(k.value for k in made.keywords)]]
        # (an argument prepared in another method, or above the construction, may be the wrapper)
        return not any(m is not method or at < line for t in given for m, at in prepared.get(t, ()))

    def _other_configuration(self, fn: Function, loop: ast.AST) -> Optional[AccumulationFact]:
        """`if args.accum == 1: backward; step  elif args.accum > 1: backward; if (i + 1) %
        args.accum == 0: step` (ABCD-3DCNN's MAE loop): a switch between two configurations, the
        first stepping after every backward. The loop is judged again as the other side runs it
        (the switch's other side in its place), its period's default said as the assumption."""
        for index, stmt, inlined in self._switch_candidates(fn, loop):
            # (asked of every loop that accumulates nothing: the calls by name first, cheaply)
            named = {c.func.attr for side in (stmt.body, stmt.orelse) for part in side for c in walk(part)
                     if c.__class__ is ast.Call and c.func.__class__ is ast.Attribute}
            if not {"backward", "step"} <= named:
                continue
            plain = [c for c, cond in _loop_calls(stmt.body, False) if not cond]
            if not (any(self._backward(c, fn) for c in plain) and any(self._step(c, fn) for c in plain)):
                continue
            other = stmt.orelse
            if len(other) == 1 and isinstance(other[0], ast.If) and not other[0].orelse:
                other = other[0].body  # `elif args.accum > 1:`: the configuration's own side
            variant = copy.copy(loop)
            for kept in [k for k in variant.__dict__ if k.startswith("_")]:
                del variant.__dict__[kept]  # (the original's cached walks: nodes.walk keeps them on the node)
            # (a per-batch helper's switch: the helper's body stands in for its call, its other
            # side in place of the switch)
            variant.body = loop.body[:index] + inlined[0] + other + inlined[1] + loop.body[index + 1:]
            # (kept: facts and memos read a loop by its id, which a freed copy would hand on)
            self.__dict__.setdefault("_variants", []).append(variant)
            fact = self._accumulation(fn, variant)
            if fact is not None:
                return fact
        return None

    def _switch_candidates(self, fn: Function, loop: ast.AST) -> Iterator[tuple]:
        """(index in the loop's body, an `if` with an `else:`, (statements before it, after it))
        for each configuration switch the loop's pass runs: in its own body ((), ()), or at the
        top of a per-batch step helper of the same file the body calls as a statement
        (`self.train_one_iter(inps, targets)`, whose `if not self.exp.use_grad_acc: backward;
        step  else: backward; if (self.iter + 1) % k == 0: step` is Unicorn's / YOLOX-style
        trainers'): the helper's body stands in for the call, read in the loop's scope."""
        for index, stmt in enumerate(loop.body):
            if isinstance(stmt, ast.If) and stmt.orelse:
                yield index, stmt, ([], [])
                continue
            call = stmt.value if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) else None
            targets = self.program.resolve(call.func, fn)[0] if call is not None else []
            if len(targets) != 1:
                continue
            helper = targets[0]
            if helper is fn or helper.node is None or isinstance(helper.node, ast.Module) or \
                    helper.file is not fn.file or helper.cls is not fn.cls:
                continue
            body = helper.node.body
            for at, inner in enumerate(body):
                if isinstance(inner, ast.If) and inner.orelse:
                    yield index, inner, (body[:at], body[at + 1:])

    def _accumulation(self, fn: Function, loop: ast.AST) -> Optional[AccumulationFact]:
        changed = _assigned_names(loop.body + ([ast.Expr(loop.target)] if hasattr(loop, "target") else []))
        backward = self._always(loop.body, fn, self._backward, changed=changed)
        if backward is None:
            return None
        if self.switched_off(fn, backward):
            return None  # under a test no way in passes (`if self.mode == 2:` of a trainer built with --mode 1)
        if isinstance(backward.func, ast.Attribute) and backward.func.attr == "backward" and (
                plain_loss(self.program, _loss_of(backward.func.value), fn) or (
                    backward.args and HANDS_THE_LOSS.search(last_name(backward.func.value) or "")
                    and loss_round_the_wrapper(self.program, backward.args[0], fn))):
            # the loss never passes a DDP forward: its backward all-reduces nothing (also one
            # handed to `accelerator.backward(loss)` computed round the wrapper: DiffusionEdge's
            # `self.model.module.training_step(batch)`)
            return None
        # `backward; if (i + 1) % k: continue; opt.step()`: what follows a `continue` that comes
        # after the backward runs on some passes only (one before it skips both alike)
        head, tail = _split_at_skip(loop, backward)
        # a call under no test beyond the backward's own runs on every pass that backpropagates
        # (`if mode == "Train": opt.zero_grad(); ...backward(); opt.step()` around the training
        # side of a train/validate loop, RangeViT's): not a condition of the accumulation
        sides = _sides(loop)
        mine = set(sides.get(id(backward), ()))
        calls = [(c, cond and not set(sides.get(id(c), ((None, None),))) <= mine)
                 for c, cond in _loop_calls(head, False)] + list(_loop_calls(tail, True))
        # (a second model's optimizer stepping and clearing every pass - a GAN's discriminator -
        # leaves the accumulating model's step as conditional as it was)
        calls = [(c, cond) for c, cond in calls if not self._steps_another_model(c, backward, fn)]
        if any(last_name(c.func) == "zero_grad" and not _submodule_clear(c) for c, cond in calls if not cond):
            return None  # the gradients are cleared on every pass: none carry over to accumulate
        if _cleared_by_counter(loop, sides, [c for c, cond in calls if cond and last_name(c.func) == "zero_grad"],
                               [c for c, _ in calls if self._step(c, fn)]):
            # `for t in range(K): if t != K - 1: opt.zero_grad() ... loss.backward()` (PGD's
            # attack steps over one batch, bert4torch): every pass but the last clears what the
            # one before it left, so no pass's gradients carry into the next
            return None
        if _clears_first(self.program, backward, fn):
            return None  # `def train_step(): model.zero_grad(); ...backward()`: the helper clears them
        called = text(backward.func).lower()
        by = "accelerate" if "accelerator" in called else "fabric" if "fabric" in called else None
        if by == "accelerate" and self._unprepared_forward(backward, fn):
            return None  # the loss's forward runs a module no prepare() wrapped: no DDP to sync
        if by and launched_engine(self.program) == "DeepSpeed":
            # `accelerate launch --config_file gpu.yaml` whose config picks DeepSpeed alone: the
            # engine accumulates (the Accelerator's gradient_accumulation_steps) and reduces at
            # its boundary; there is no DDP to no_sync
            return None
        steps = [(c, cond or kind == "sometimes") for c, cond in calls
                 for kind in [self._step_kind(c, fn)] if kind is not None]
        if steps and self._stepped_after_in_helper(backward, fn):
            return None
        if steps and self._always(head, fn, lambda c, f, d: self._step_kind(c, f) == "always" and not (
                f is fn and self._steps_another_model(c, backward, fn)), changed=changed) is not None:
            return None  # `if scaler is None: ... opt.step() else: scaler.step(opt)`: a step every pass
        if steps and any(isinstance(node, ast.If) and (self._every_time(node.test, fn) or
                                                       self._counter_at_one(node, loop.body, fn)) and any(
                isinstance(c, ast.Call) and self._step(c, fn) for part in node.body for c in walk(part))
                for node in _own_pass(loop.body)):
            return None  # `if (it + 1) % self.acc_steps == 0: opt.step()` with acc_steps 1: every pass
        if steps and self._runs_once(fn, loop):
            return None  # `for micro in range(self.accum)` with accum 1 in every construction: one pass
        if steps and self._steps_plain_models(steps, fn):
            return None  # the optimizer steps a model no DDP wraps (a student beside a DDP teacher)
        if steps:
            if any(not cond for _, cond in steps):
                return None
            if any(self._step(c, fn) and not self._steps_another_model(c, backward, fn)
                   for c, cond in _loop_calls(_after_it(loop.body, backward), False) if not cond):
                return None  # `else: loss.backward(); opt.step()`: a step follows the backward on its own side
            if all(_cleared_beside(loop, c) or _own_backward_beside(loop, c) for c, _ in steps) and \
                    any(_cleared_beside(loop, c) for c, _ in steps):
                return None  # `if not isfinite(loss): opt.zero_grad() else: opt.step()`: a skip, not accumulation
            # (the period of any step the loop takes: `model.step()` on the DeepSpeed side, the
            # loss scaler's `update_grad=(i + 1) % update_freq == 0` on the other - EEGPT's)
            period = next((p for c, _ in steps if (p := self._period_option(fn, loop, c))), None)
            if period and self.program.launched_value(period.rpartition(".")[2]) == 1:
                return None  # `--accum_iter 1` in every launch written beside it: a step every pass
            fact = self._fact(backward, fn, loop, loc(fn, steps[0][0]), "conditional_step", by,
                              period_option=period)
            self.__dict__.setdefault("_fact_step", {})[id(fact)] = id(steps[0][0])
            return fact
        if self._runs_once(fn, loop):
            return None  # `for _ in range(accumulation_steps)` left at its default 1 by every caller
        outer = _enclosing_loop(fn.node, loop)
        if outer is not None:
            body = outer.body
        elif not isinstance(fn.node, ast.Module) and self.in_loop(fn):
            body = fn.node.body  # `def train_step(): for micro in ...: backward; opt.step()`, called in a loop
            if not any(self._step(c, fn) for c, _ in _loop_calls(body, False, skip=loop)):
                # `def accumulate(batch): for chunk: backward` with the step in the caller's loop,
                # after the call (ZeroVL's runner)
                stepped = self._step_after_call(fn)
                if stepped is not None:
                    return self._fact(backward, fn, loop, stepped, "micro_step_loop", by,
                                      period_option=self._loop_period(fn, loop))
        else:
            return None
        after = [c for c, cond in _loop_calls(body, False, skip=loop) if self._step(c, fn)
                 and c.lineno > loop.lineno]
        inner = loop
        for _ in range(2):
            # `for batch: for layer: for chunk: backward` with the step after the layer loop: the
            # chunks' backwards still accumulate until it, however many loops lie between
            if after or outer is None:
                break
            inner, outer = outer, _enclosing_loop(fn.node, outer)
            if outer is None and not isinstance(fn.node, ast.Module) and self.in_loop(fn):
                # `def train(...): for image: while chunk: backward` and the step after the
                # outermost loop, the function called once a step (GLNet's sub-batches)
                after = [c for c, cond in _loop_calls(fn.node.body, False, skip=inner) if self._step(c, fn)
                         and c.lineno > loop.lineno]
                break
            after = [c for c, cond in _loop_calls(outer.body, False, skip=inner) if self._step(c, fn)
                     and c.lineno > loop.lineno] if outer is not None else []
        if not after:
            return None
        return self._fact(backward, fn, loop, loc(fn, after[0]), "micro_step_loop", by,
                          period_option=self._loop_period(fn, loop))

    def _period_option(self, fn: Function, loop: ast.AST, step: ast.Call) -> Optional[str]:
        """`args.accum_iter` in `if (i + 1) % args.accum_iter == 0:` around the step (or in the
        switch a stepping helper is handed: `update_grad=(i + 1) % accum_iter == 0`, with
        `accum_iter = args.accum_iter`) where that option defaults to 1; None otherwise."""
        tests = [n.test for n in walk(loop) if isinstance(n, ast.If) and any(c is step for s in n.body for c in walk(s))]
        tests += [kw.value for kw in step.keywords] + list(step.args)
        for test in tests:
            for node in walk(test):
                if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod)):
                    continue
                period = node.right
                named = [period] + [v for v, _ in self.program.values_of(period, fn, 1)
                                    if isinstance(period, ast.Name)]
                for value in named:
                    option = last_name(value) if isinstance(value, ast.Attribute) else None
                    if option and self._defaults_to_one(option):
                        return text(value)
                if isinstance(period, ast.Name) and self._constant_one(period, fn) == "overridable":
                    return period.id
        return None

    def _loop_period(self, fn: Function, loop: ast.AST) -> Optional[str]:
        """`for micro_step in range(gradient_accumulation_steps):` over a module constant at 1 that
        the module's run-time configurator may raise (see _constant_one): the name, else None."""
        if isinstance(loop, ast.For) and isinstance(loop.iter, ast.Call) and last_name(loop.iter.func) == "range" \
                and len(loop.iter.args) == 1 and isinstance(loop.iter.args[0], ast.Name) and \
                self._constant_one(loop.iter.args[0], fn) == "overridable":
            return loop.iter.args[0].id
        return None

    def _step_after_call(self, fn: Function) -> Optional[Location]:
        """The optimizer step a caller's loop takes after calling fn, on every pass."""
        for caller, event in self.callers().get(fn, []):
            if not isinstance(event.node, ast.Call):
                continue
            if event.loops == 0:
                # `def run_step(batch): self.forward_backward(batch); self.optimize()`, run_step
                # itself called once a step (guided-diffusion's TrainLoop): the step after the call
                if caller.node is None or isinstance(caller.node, ast.Module) or not self.in_loop(caller):
                    continue
                calls = list(_loop_calls(caller.node.body, False))
                if any(c is event.node and not cond for c, cond in calls):
                    steps = [c for c, cond in calls if not cond and c.lineno > event.node.lineno and self._step(c, caller)]
                    if steps:
                        return loc(caller, steps[0])
                continue
            for node, _ in _loops(caller.node, 0):
                calls = list(_loop_calls(node.body, False))
                if not any(c is event.node for c, _ in calls):
                    continue
                steps = [c for c, cond in calls if not cond and c.lineno > event.node.lineno and self._step(c, caller)]
                if not steps:
                    # (GC-DPR's `if (i + 1) % accumulation == 0: optimizer.step()` after the chunked
                    # pass: at most one step per call, after all of its chunks' backwards)
                    steps = [c for stmt in node.body if isinstance(stmt, ast.If) and stmt.lineno > event.node.lineno
                             and any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) for n in walk(stmt.test))
                             for c in walk(stmt) if isinstance(c, ast.Call) and self._step(c, caller)]
                if steps:
                    return loc(caller, steps[0])
        return None

    def late_sync_flags(self) -> list[AccumulationFact]:
        """`model.require_backward_grad_sync = last` set after `model(...)` in the same loop pass:
        DDP reads the flag in the forward, so it takes effect one micro-step late."""
        found = []
        for fn in self.functions:
            for loop, _ in _fn_loops(fn):
                # one pass of this loop: not the passes of the loops inside it (each inner
                # micro-step loop is judged as its own), however deep in its branches they sit
                body = list(_own_pass(loop.body))
                for node in body:
                    if not (isinstance(node, ast.Assign) and any(
                            isinstance(t, ast.Attribute) and t.attr == "require_backward_grad_sync"
                            for t in node.targets)):
                        continue
                    owner = next(text(t.value) for t in node.targets if isinstance(t, ast.Attribute))
                    # (not a forward in a block that leaves the pass: `if eval_only and first:
                    # estimate_loss(model, val); break` above the flag ends that pass there)
                    left = _leaving_blocks(loop.body)
                    forwards = [c for c in body if isinstance(c, ast.Call) and c.lineno < node.lineno
                                and id(c) not in left and (
                                    text(c.func) == owner or self._forwards_in(c, fn, owner))]
                    if forwards:
                        found.append(AccumulationFact(loc(fn, node), loc(fn, loop), loc(fn, forwards[0]),
                                                      "sync_flag_after_forward"))
                found.extend(self._no_sync_after_forward(fn, loop, body))
                found.extend(self._no_sync_every_pass(fn, loop, body))
                if any(isinstance(n, ast.Attribute) and n.attr == "no_sync" for n in body):
                    found.extend(_no_sync_out_of_phase(fn, loop, self._step))
                if any(isinstance(n, ast.Attribute) and n.attr == "require_backward_grad_sync" for n in body):
                    found.extend(_sync_flag_out_of_phase(fn, loop, self._step))
        return found

    def _no_sync_every_pass(self, fn: Function, loop: ast.AST, body: list) -> list[AccumulationFact]:
        """`with model.no_sync():` around the whole loop, or entered on every pass around the
        forward, while the loop steps the optimizer: no forward runs with the sync on, so no
        backward all-reduces - the stepping micro-step's gradients included (a no_sync left on
        for every micro-step; a `no_sync() if ... else nullcontext()` is read by
        _no_sync_out_of_phase)."""
        # (the contexts first: most loops sit under no no_sync at all, and asking each call
        # whether it steps costs more)
        withs = [(node, model) for node in [
            *(w for w in fn.own_of(ast.With, ast.AsyncWith) if any(n is loop for n in walk(w))),
            *_every_pass_withs(loop.body)] for item in node.items
            if (model := no_sync.owner(item.context_expr)) is not None]
        if not withs:
            return []
        steps = [c for c in body if isinstance(c, ast.Call) and self._step(c, fn)]
        if not steps or any(isinstance(n, ast.Attribute) and n.attr == "require_backward_grad_sync" for n in body):
            return []
        if any(isinstance(c, ast.Call) and averages_gradients(c) for stmt in loop.body for c in walk(stmt)):
            return []  # the gradients all-reduced by hand before the step (`for p in ...: all_reduce(p.grad)`)
        for node, model in withs:
            owner = text(model)
            forwards = [c for c in body if isinstance(c, ast.Call) and (
                text(c.func) == owner or self._forwards_in(c, fn, owner))]
            inside = {id(n) for n in walk(node)}
            if forwards and all(id(c) in inside for c in forwards):
                return [AccumulationFact(loc(fn, node), loc(fn, loop), loc(fn, steps[0]), "no_sync_on_step")]
        return []

    def _no_sync_after_forward(self, fn: Function, loop: ast.AST, body: list) -> list[AccumulationFact]:
        """`loss = model(x)` then `with model.no_sync(): loss.backward()`: DDP decides in the
        forward whether the backward all-reduces, so a no_sync entered after it changes nothing."""
        found = []
        for node in body:
            if not isinstance(node, (ast.With, ast.AsyncWith)):
                continue
            # the context as written, or the value a name in the same pass holds (`ctx =
            # model.no_sync() if not last else nullcontext()`, then `with ctx:`: LLM_Train)
            held = {item.context_expr.id for item in node.items if isinstance(item.context_expr, ast.Name)}
            contexts = [item.context_expr for item in node.items] + [
                a.value for a in body if isinstance(a, ast.Assign) and a.lineno < node.lineno
                and any(isinstance(t, ast.Name) and t.id in held for t in a.targets)]
            owners = {text(c.func.value) for ctx in contexts for c in walk(ctx)
                      if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "no_sync"}
            # (Lightning Fabric's `with fabric.no_backward_sync(model, enabled=...):` is DDP's
            # no_sync of the model it is handed: the same forward decides - deepsc's trainer)
            owners |= {text(c.args[0]) for ctx in contexts for c in walk(ctx)
                       if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                       and c.func.attr == "no_backward_sync" and c.args}
            # (or a helper that returns the model's no_sync() on some passes: `with
            # maybe_no_sync(step):`, a closure of the training loop - LUKE's trainer)
            owners |= {held for ctx in contexts if isinstance(ctx, ast.Call) for held in self._no_sync_returned(ctx, fn)}
            inside = [c for stmt in node.body for c in walk(stmt) if isinstance(c, ast.Call)]
            # (on a side of a test the options never take: `if args.mode != "accum" or ...:
            # backward() else: with no_sync(): backward()` with --mode at its default)
            if owners and any(self._option_truth(test, fn) is (not side) for test, side in tests_around(loop, node)):
                continue
            for owner in owners:
                if any(text(c.func) == owner for c in inside) or not any(self._backward(c, fn) for c in inside):
                    continue  # the forward runs inside (as meant), or no backward there
                # a forward that already ran under no_sync, or on the other side of the same
                # test (`if step % k == 0: loss = model(x) else: with no_sync: loss = model(x)`,
                # the backward split alike) did not decide this backward's sync
                quiet = {id(c) for w in walk(loop) if isinstance(w, (ast.With, ast.AsyncWith))
                         and any(isinstance(a, ast.Attribute) and a.attr == "no_sync"
                                 for item in w.items for a in walk(item.context_expr))
                         for stmt in w.body for c in walk(stmt)}
                sides = _sides(loop)
                forwards = [c for c in body if isinstance(c, ast.Call) and (text(c.func) == owner
                                                                           or self._forwards_in(c, fn, owner))
                            and c.lineno < node.lineno and id(c) not in quiet
                            and not opposite_sides(sides.get(id(c), ()), sides.get(id(node), ()))]
                if forwards:
                    # (placed at the backward the context holds, the line a reviewer names; the
                    # message says where the context is entered)
                    backward = next(c for c in inside if self._backward(c, fn))
                    found.append(AccumulationFact(loc(fn, backward), loc(fn, loop), loc(fn, forwards[0]),
                                                  "no_sync_after_forward", entered=loc(fn, node)))
        return found

    def _no_sync_returned(self, call: ast.Call, fn: Function) -> set[str]:
        """The models whose no_sync() the local function `call` runs returns (`def
        maybe_no_sync(step): if ...: return model.no_sync() ... return ExitStack()`), as fn names
        them: a parameter's by the argument handed to it, a closure's free name as it is."""
        found: set[str] = set()
        for target in self.program.resolve(call.func, fn)[0]:
            if target.node is None or isinstance(target.node, ast.Module):
                continue
            for ret in target.own_of(ast.Return):
                for c in walk(ret.value) if ret.value is not None else ():
                    if not (isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "no_sync"):
                        continue
                    model = c.func.value
                    if isinstance(model, ast.Name) and (model.id in target.params or model.id in target.kwonly):
                        given = argument_at(target, call, model.id)
                        if given is not None:
                            found.add(text(given))
                    elif isinstance(model, ast.Name) and target.parent is fn:
                        found.add(model.id)  # (the enclosing function's own model)
        return found

    def _forwards_in(self, call: ast.Call, fn: Function, owner: str) -> bool:
        """The call runs the model's forward in a method of the same object (`metrics =
        self._calculate_loss(x, y)`, whose body calls `self.model(x)`), or in a helper it hands
        the model to (`loss = compute_loss(model, x)`, whose body calls its `model` parameter):
        the forward, one call down."""
        handed = [i for i, a in enumerate(call.args) if text(a) == owner]
        named = [k.arg for k in call.keywords if k.arg and text(k.value) == owner]
        if handed or named:
            for target in self.program.resolve(call.func, fn)[0]:
                if target.node is None or isinstance(target.node, ast.Module) or target.cls is not None:
                    continue
                params = [a.arg for a in target.node.args.posonlyargs + target.node.args.args]
                held = {params[i] for i in handed if i < len(params)} | set(named)
                # (with gradients on: a `@torch.no_grad()` evaluation's forward prepares no backward,
                # so it decides no sync - nanoGPT's `estimate_loss(model)` before the flag is set)
                if any(inner.func.__class__ is ast.Name and inner.func.id in held
                       and not grad_off(self.program, inner, target) for inner in target.own_calls):
                    return True
        if not owner.startswith("self.") or not (isinstance(call.func, ast.Attribute) and
                                                 isinstance(call.func.value, ast.Name) and call.func.value.id == "self"):
            return False
        return any(target.cls is fn.cls and target.node is not None and not isinstance(target.node, ast.Module)
                   and any(text(inner.func) == owner for inner in target.own_calls)
                   for target in self.program.resolve(call.func, fn)[0])

    def _always(self, body: list[ast.stmt], fn: Function, pred, depth: int = 2,
                changed: Optional[set] = None, way_in: Optional[tuple] = None) -> Optional[ast.Call]:
        """The first call matching pred that runs on every pass of body: not under an `if`,
        or under both sides of one (`if scaler is not None: scaler.scale(loss).backward()
        else: loss.backward()`), or - changed: the names the loop rebinds - under a test the
        loop never changes (`if mode == "train":` on a parameter: the same side on every pass).
        Nested loops and defs are not entered, but for a loop over the optimizers (`for o in
        optimizer.values(): o.step()`, CLAP's): each pass steps them all."""
        for stmt in body:
            if isinstance(stmt, ast.For) and _over_optimizers(stmt):
                found = self._always(stmt.body, fn, pred, depth, changed, way_in)
                if found is not None:
                    return found
                continue
            if pred == self._backward and _per_part(stmt) and not any(
                    self._step(c, fn) or last_name(c.func) == "zero_grad" for c, _ in _loop_calls(stmt.body, False)):
                # `for i in range(self.num_unet): accelerator.backward(loss[i])` (RDDM's trainer): a
                # backward per part of the model, every pass, and nothing stepped or cleared there
                found = self._always(stmt.body, fn, pred, depth, changed, way_in)
                if found is not None:
                    return found
                continue
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.For, ast.AsyncFor,
                                 ast.While)):
                continue
            if isinstance(stmt, ast.If):
                found = next((c for c in _expr_calls(stmt.test, False) if pred(c[0], fn, depth)), None)
                if found:
                    return found[0]
                # (way_in: the call into fn and the function it is in)
                decided = self._decided(fn, *way_in, stmt.test) if way_in is not None else None
                if decided is None and stmt.test.__class__ is ast.Attribute and stmt.test.attr == "requires_grad":
                    # `if loss.requires_grad: backward(loss)`: a helper shared with the evaluation
                    # (run under no_grad there) backpropagates on every training pass
                    decided = True
                if decided is None:
                    # `grad_accumu = 1` above `if grad_accumu > 1: ... else: opt.step()` (samtemp):
                    # the side the constants every way in gives settle
                    decided = _truth_by_constants(self.callers(), fn, stmt.test, self.program)
                if decided is None and self._count_switch(stmt.test):
                    # `if args.gradient_accumulation_steps > 1: <accumulate> else: <step every
                    # pass>` with the count at its default 1: the launch as written takes the
                    # plain side, a launch that sets the count the accumulating one - judged as
                    # that one, the finding resting on the count (_period_option says which)
                    decided = True
                if decided is None:
                    decided = self._option_truth(stmt.test, fn)  # (or the options, as launched)
                if decided is None and isinstance(stmt.test, (ast.Attribute, ast.UnaryOp)):
                    # (or every construction of the config it reads: `if self.config.use_deepspeed:`
                    # with `Config(use_deepspeed=args.deepspeed)`, --deepspeed on by default)
                    decided = constructed_truth(stmt.test, fn, self.program)
                if decided is not None:
                    # `if not eval_only:` of a helper the loop calls with a literal False
                    # (adaptive-span's micro-batch step): the side that call takes; both where
                    # the ways into the loop's function give both (its training and its evaluation)
                    sides = [stmt.body, stmt.orelse] if decided == "either" else [stmt.body if decided else stmt.orelse]
                    found = next((f for side in sides
                                  if (f := self._always(side, fn, pred, depth, changed, way_in)) is not None), None)
                    if found is not None:
                        return found
                    continue
                if stmt.orelse:
                    a = self._always(stmt.body, fn, pred, depth, changed, way_in)
                    b = self._always(stmt.orelse, fn, pred, depth, changed, way_in)
                    if a is not None and b is not None:
                        # `if args.fp16: scaled.backward() else: loss.backward()`: name the side the
                        # flag takes by default (a store_true option is off unless given)
                        default = self._flag_default(stmt.test)
                        if default is None:
                            default = self._given_item(stmt.test, fn)
                        return b if default is False else a
                    # `if scaler is None: engine.backward(loss); engine.step() else: <DDP path>`:
                    # the engine's side is not DDP's, the other side alone decides
                    if pred == self._backward and (a or b) is not None and any(
                            no_sync.engine_backward(c, fn) for c, _ in _loop_calls(
                                stmt.orelse if a is not None else stmt.body, False)):
                        return a or b
                    # `if train: ...backward() else: <evaluate>` on a value fixed for the whole
                    # loop (a closure's flag): the training side is the one a training loop runs
                    if pred == self._backward and changed is not None and _invariant(stmt.test, changed) \
                            and (a or b) is not None:
                        return a or b
                elif (changed is not None and _invariant(stmt.test, changed, pred == self._backward)) or \
                        (not stmt.orelse and _finite_guard(stmt.test)):
                    # (`if not (torch.isinf(loss) or torch.isnan(loss)):` around the step: every
                    # healthy pass takes it; the skip is the exception, not a period)
                    found = self._always(stmt.body, fn, pred, depth, changed, way_in)
                    if found is not None:
                        return found
                continue
            if isinstance(stmt, (ast.With, ast.AsyncWith)):
                found = next((c for item in stmt.items for c, _ in _expr_calls(item.context_expr, False)
                              if pred(c, fn, depth)), None)
                found = found or self._always(stmt.body, fn, pred, depth, changed, way_in)
                if found is not None:
                    return found
                continue
            if isinstance(stmt, ast.Try):
                found = self._always(stmt.body, fn, pred, depth, changed, way_in)
                if found is not None:
                    return found
                continue
            for call, _ in _expr_calls(stmt, False):
                if pred(call, fn, depth):
                    return call
        return None

    def _given_item(self, test: ast.AST, fn: Function) -> Optional[bool]:
        """`if cfg["fp16"]:` on a parameter every caller hands a dict literal that holds that
        key as a constant (`train({"fp16": False, ...}, loader)`): its truth."""
        if not (isinstance(test, ast.Subscript) and isinstance(test.value, ast.Name)
                and isinstance(test.slice, ast.Constant) and test.value.id in fn.params):
            return None
        truths = set()
        for value, scope in self.program._passed(test.value.id, fn):
            for held, _ in self.program.values_of(value, scope, 2):
                if not isinstance(held, ast.Dict):
                    return None
                item = next((v for k, v in zip(held.keys, held.values)
                             if isinstance(k, ast.Constant) and k.value == test.slice.value), None)
                if not isinstance(item, ast.Constant):
                    return None
                truths.add(bool(item.value))
        return truths.pop() if len(truths) == 1 else None

    def _flag_default(self, test: ast.AST) -> Optional[bool]:
        """The default of a command-line flag a test reads (`if args.fp16:`): False for
        `add_argument("--fp16", action="store_true")` without a default, True with default=True;
        None when the test is not such a flag. `args.opt == "sgd"` (or `!=`) against an option
        with a constant default: whether that default makes the comparison true."""
        compared = None
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.NotEq)) \
                and isinstance(test.comparators[0], ast.Constant):
            compared, test = test, test.left
        if not (isinstance(test, ast.Attribute) and isinstance(test.value, (ast.Name, ast.Attribute))):
            return None  # `args.fp16`, `self.args.fp16`
        flags = self.__dict__.get("_flags")
        if flags is None:
            flags = self.__dict__["_flags"] = {}
            self.__dict__["_option_defaults"] = self.program.option_defaults()
            for f in self.program.files:
                for node in f.of(ast.Call):
                    if last_name(node.func) != "add_argument" or not node.args or \
                            not isinstance(node.args[0], ast.Constant) or not isinstance(node.args[0].value, str):
                        continue
                    action, default = keyword(node, "action"), keyword(node, "default")
                    dest = keyword(node, "dest")
                    name = dest.value if isinstance(dest, ast.Constant) else node.args[0].value.lstrip("-").replace("-", "_")
                    if is_const(action, "store_true"):
                        value = False if default is None or is_const(default, False) else \
                            True if is_const(default, True) else None
                    elif action is None and isinstance(default, ast.Constant):
                        # `--fp16 default=""` (an apex opt level, empty when off): the test's truth
                        value = bool(default.value)
                    else:
                        continue
                    flags[name] = None if name in flags and flags[name] != value else value
        if compared is not None:
            default = self.__dict__["_option_defaults"].get(test.attr)
            if default is None:
                default = self._copied_option(test.attr)
            if default is None:
                return None
            same = default == compared.comparators[0].value
            return same if isinstance(compared.ops[0], ast.Eq) else not same
        return flags.get(test.attr)

    def _copied_option(self, attr: str):
        """The default of the option a config field is copied from (Swin's `if args.amp_opt_level:
        config.AMP_OPT_LEVEL = args.amp_opt_level`, the option's default "O0"): every copy into a
        field of that name reads one option, whose default is set (so a truth test on it holds).
        None otherwise."""
        defaults = self.__dict__["_option_defaults"]
        found = set()
        for f in self.program.files:
            for node in f.of(ast.Assign):
                if any(isinstance(t, ast.Attribute) and t.attr == attr for t in node.targets):
                    value = node.value
                    if isinstance(value, ast.Attribute) and value.attr in defaults:
                        found.add(value.attr)
        if len(found) != 1:
            return None
        default = defaults.get(found.pop())
        return default if default not in (None, "", False, 0) else None

    def _backward(self, call: ast.Call, fn: Function, depth: int = 2) -> bool:
        if isinstance(call.func, ast.Attribute) and call.func.attr == "backward":
            owner = (last_name(call.func.value) or "").lower()
            if no_sync.engine_backward(call, fn):
                return False
            # (Fabric's `fabric.backward(loss)` is the wrapped model's backward: DDP's all-reduce
            # under a DDP strategy, skipped only inside `fabric.no_backward_sync(model)`)
            return not any(w in owner for w in ("engine", "deepspeed"))
        return self._through(call, fn, depth, self._backward)

    def _step(self, call: ast.Call, fn: Function, depth: int = 2) -> bool:
        if isinstance(call.func, ast.Attribute) and call.func.attr == "step" and self._own_step(call, fn):
            # `grad_clipper.step(amp.master_params(optimizer))` of a local class that only clips:
            # what its own step does decides, not the optimizer it is handed
            return self._through(call, fn, depth, self._step)
        if isinstance(call.func, ast.Attribute) and call.func.attr == "step":
            owner = text(call.func.value)
            if SCHEDULER_NAME.search(owner):
                return False
            # `scaler.step(opt)` or `scaler.step(optimizer=self.optimizer)`: what it is handed
            handed = [*call.args, *(k.value for k in call.keywords if k.arg in (None, "optimizer"))]
            if OPTIMIZER_NAME.search(owner) or any(OPTIMIZER_NAME.search(text(a)) for a in handed):
                return True
            looped = {n.target.id for n in fn.own_of(ast.For) if isinstance(n.target, ast.Name)
                      and _over_optimizers(n)}
            if looped and any(isinstance(a, ast.Name) and a.id in looped for a in (call.func.value, *handed)):
                return True  # `for o in optimizer.values(): o.step()` (or `scaler.step(o)`)
            # `engine.backward(loss); engine.step()`: an engine (DeepSpeed's) that runs the
            # backward it is handed steps its own optimizer
            return any(isinstance(c.func, ast.Attribute) and c.func.attr == "backward" and c.args
                       and text(c.func.value) == owner for c in fn.own_calls)
        return self._through(call, fn, depth, self._step)

    def _own_step(self, call: ast.Call, fn: Function) -> bool:
        """`x.step(...)` where x is an instance of a class of the script's own, deriving from no
        library class (no torch optimizer, no scheduler): its step method is the script's code."""
        klass = self.program.class_of(call.func.value, fn)
        return klass is not None and "step" in klass.methods and not self.program.library_derived(klass)

    def _step_kind(self, call: ast.Call, fn: Function, depth: int = 2) -> Optional[str]:
        """"always" / "sometimes" (a helper that steps under a switch its caller sets per call:
        `loss_scaler(loss, opt, update_grad=(i + 1) % accum == 0)`, or a helper's helper that
        does: ClassyVision's `train_step()` -> `run_optimizer(loss)`) / None (no step)."""
        if not (isinstance(call.func, ast.Attribute) and call.func.attr == "step") and self._counted(call, fn, depth):
            return "sometimes"
        if self._step(call, fn):
            return "always"
        targets, _ = self.program.resolve(call.func, fn)
        for target in targets:
            if depth > 1 and target.node is not None and not isinstance(target.node, ast.Module):
                for inner in target.own_calls:
                    if self._step_kind(inner, target, depth - 1) == "sometimes":
                        # the helper that steps, for accumulations() to report it once
                        helpers = self.__dict__.setdefault("_stepping_helper", {})
                        helpers[id(call)] = helpers.get(id(inner)) or tuple(self.program.resolve(inner.func, target)[0])
                        return "sometimes"
            steps_in = lambda block, t=target: self._steps_in(block, t)
            # (an `if fp16: scaler.step(opt) else: opt.step()` steps either way: it decides nothing)
            stepping = [stmt for stmt in target.own_of(ast.If) if steps_in(stmt.body)
                        and not steps_in(stmt.orelse)]
            for stmt in stepping:
                if any(other is not stmt and any(n is other for n in walk(stmt)) for other in stepping):
                    # `if is_training: backward; if is_update: step`: the test nearest the step
                    # decides it (snowfall's get_objf), not the switch around both
                    continue
                if self._every_time(stmt.test, target):
                    return "always"  # `if it % self.acc_steps == 0:` with acc_steps left at 1
                # (`if not if_accum_grad:` of a flag the caller hands: negated)
                negated = stmt.test.__class__ is ast.UnaryOp and stmt.test.op.__class__ is ast.Not
                test = stmt.test.operand if negated else stmt.test
                switch = test.id if isinstance(test, ast.Name) else None
                if switch is None or switch not in target.params:
                    return "sometimes"
                passed = keyword(call, switch)
                index = target.params.index(switch)
                if passed is None and index < len(call.args):
                    passed = call.args[index]
                if passed.__class__ is ast.Name:
                    # (`if_accum_grad = (it % cfg.grad_accum_iters) != 0`, then handed on)
                    held = self.program.values_of(passed, fn, 1)
                    if len(held) == 1 and held[0][0] is not passed and held[0][1] is fn:
                        passed = held[0][0]
                if negated:
                    if passed is not None and (is_const(passed, False, 0, None) or self._never_time(passed, fn)):
                        return "always"  # (`it % ACCUM != 0` with ACCUM 1: never accumulates)
                    return None if is_const(passed, True) else "sometimes"
                if passed is None or is_const(passed, True) or self._every_time(passed, fn):
                    return "always"  # (`update_grad=(i + 1) % ACCUM == 0` with ACCUM 1: every call)
                return None if is_const(passed, False, 0, None) else "sometimes"
        return None

    def _steps_in(self, block: list, target: Function) -> bool:
        """A statement of the block (outside nested loops' own tests) steps an optimizer."""
        return any(self._step(c, target, 1) for part in block for c, _ in _expr_calls(part, False))

    def _counted(self, call: ast.Call, fn: Function, depth: int) -> bool:
        """The helper called (or one it calls, `depth` deep) returns early on a counter it
        advances before it steps (_counted_return_before_step)."""
        for target in self.program.resolve(call.func, fn)[0]:
            if target.node is None or isinstance(target.node, ast.Module):
                continue
            if _counted_return_before_step(target, lambda block, t=target: self._steps_in(block, t)):
                helpers = self.__dict__.setdefault("_stepping_helper", {})
                helpers.setdefault(id(call), (target,))
                return True
            if depth > 1 and any(self._counted(inner, target, depth - 1) for inner in target.own_calls):
                return True
        return False

    def _decided(self, fn: Function, call: ast.Call, caller: Function, test: ast.AST):
        """The side of a test on fn's parameters that this call into fn settles (a switch it
        passes as a constant, a string it gives another value; or its own parameter that every
        way into the caller gives one constant: adaptive-span's `eval_only`; "either" where the
        ways give both), or None."""
        cond = text(test)
        if _cond_true(fn, call, cond, ()):
            return True
        if _cond_false(fn, call, cond, True, ()):
            return False
        if test.__class__ is ast.Compare and len(test.ops) == 1 and test.left.__class__ is ast.Name and \
                test.left.id in fn.params and not fn.bindings.get(test.left.id):
            # `if mode == "train":` of `train_val_fn(..., mode="train", optimizer=...)`: the side
            # the constant this call hands (or the default it leaves) takes
            passed = argument_at(fn, call, test.left.id)
            if passed.__class__ is ast.Constant:
                answer = _compare_constant(passed.value, test.ops[0], test.comparators[0])
                if answer is not None:
                    return answer
        negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
        name = test.operand if negated else test
        if isinstance(name, ast.Name) and name.id not in fn.params:
            made = self._closure_constant(fn, call, caller, name.id)
            return None if made is None else bool(made) != negated
        if not isinstance(name, ast.Name) or name.id not in fn.params:
            return None
        passed = argument_at(fn, call, name.id)
        if not isinstance(passed, ast.Name) or passed.id not in caller.params:
            return None
        given = given_constants(self.callers(), caller, passed.id)
        if not given:
            return None
        if len({bool(v) for v in given}) != 1:
            return "either"  # a training way and an evaluating way in: each takes its side
        return bool(next(iter(given))) != negated

    def _closure_constant(self, fn: Function, call: ast.Call, caller: Function, name: str):
        """`train_step = get_step_fn(True, ...)` then `train_step(state, x)`, the nested step_fn
        testing `if train:`, a parameter of the factory it closes over: the constant the call
        that built this closure gave it (None when not such a closure or not a constant)."""
        factory = fn.parent
        if factory is None or factory.node is None or isinstance(factory.node, ast.Module) or \
                name not in factory.params or name in fn.bindings or call.func.__class__ is not ast.Name:
            return None
        found = self.program.lookup(call.func.id, caller)
        if len(found) != 1 or not isinstance(found[0][1], ast.Call):
            return None
        built, scope = found[0][1], found[0][2]
        if factory not in self.program.resolve(built.func, scope)[0]:
            return None
        given = argument_at(factory, built, name)
        return given.value if isinstance(given, ast.Constant) else None

    def _fact(self, backward: ast.Call, fn: Function, loop: ast.AST, step: Optional[Location], pattern: str,
              by: Optional[str], **more) -> AccumulationFact:
        """The fact, placed at the backward the loop's call leads to (_backward_at), naming that
        call where the two differ."""
        backward = self._default_side(loop, backward, fn)
        at, here = self._backward_at(backward, fn), loc(fn, backward)
        return AccumulationFact(at, loc(fn, loop), step, pattern, by, call=None if at == here else here, **more)

    def _default_side(self, loop: ast.AST, backward: ast.Call, fn: Function) -> ast.Call:
        """The backward on the side of `if args.fp16: scaler.scale(loss).backward() elif ...: else:
        loss.backward()` that the options' defaults take (--fp16 a store_true: the `else:`), where
        the one found first sits on a side they leave; else the one found."""
        for node in walk(loop):
            if node.__class__ is not ast.If or not any(c is backward for s in node.body for c in walk(s)):
                continue
            branch = node
            while settled(branch.test, self.program) is False:
                rest = branch.orelse
                if len(rest) == 1 and rest[0].__class__ is ast.If:
                    branch = rest[0]  # `elif`: asked in turn
                    continue
                other = next((c for s in rest for c in walk(s) if c.__class__ is ast.Call and self._backward(c, fn)),
                             None)
                return other if other is not None else backward
            if branch is not node:
                other = next((c for s in branch.body for c in walk(s) if c.__class__ is ast.Call
                              and self._backward(c, fn)), None)
                return other if other is not None else backward
            return backward
        return backward

    def _backward_at(self, call: ast.Call, fn: Function, depth: int = 2) -> Location:
        """Where the backward a loop's call leads to is: inside the helper that computes the loss
        and backpropagates it (`train_step(model, batch)` -> `(loss / k).backward()`), the line
        a reviewer names. The loop's own call where it is the backward, where the loss reaches
        the backward through a helper it is handed to (MAE's `loss_scaler(loss, optimizer,
        update_grad=...)`, XLM's `optimize(loss)`), where the helper backpropagates on two sides
        of a switch (`if scaler: scaler.scale(loss).backward() else: loss.backward()`: the call
        names both), or where no one helper holds it."""
        found = self._backward_in_helper(call, fn, depth)
        if found is None:
            return loc(fn, call)
        inner, helper = found
        # (`accelerator.backward(loss)`: the loss is what it is handed, not the Accelerator)
        loss = backward_loss(inner) or _loss_of(inner.func.value)
        while isinstance(loss, ast.BinOp):  # `(loss / accum).backward()`: the loss is the left side
            loss = loss.left
        if isinstance(loss, ast.Name) and loss.id in helper.params:
            return loc(fn, call)
        if sum(_is_backward(c) for c in walk(helper.node)) != 1:
            # (two sides of a switch, `if use_bf16: scaler.scale(loss).backward() else:
            # loss.backward()`: the side the configs settle, where they do; else the call)
            side = self._settled_backward(helper)
            return loc(helper, side) if side is not None else loc(fn, call)
        return loc(helper, inner)

    def _settled_backward(self, helper: Function) -> Optional[ast.Call]:
        """The backward of the side of the helper's one `if` holding a backward on each side
        that the run takes, where the options or every YAML config beside the script settle its
        test (`use_bfloat16 = cfg["meta"]["use_bfloat16"]`, `use_bfloat16: true`); None else."""
        backs = [c for c in walk(helper.node) if _is_backward(c)]
        if len(backs) != 2:
            return None
        for node in walk(helper.node):
            if node.__class__ is not ast.If:
                continue
            sides = [[c for s in side for c in walk(s) if any(c is b for b in backs)] for side in (node.body, node.orelse)]
            if len(sides[0]) != 1 or len(sides[1]) != 1:
                continue
            truth = settled(node.test, self.program)
            if truth is None:
                truth = self._config_flag(node.test, helper)
            return None if truth is None else (sides[0][0] if truth else sides[1][0])
        return None

    def _config_flag(self, test: ast.AST, fn: Function) -> Optional[bool]:
        """The truth of a bare name bound once to a config's key (`flag = cfg["meta"]["flag"]`, in
        fn or a function around it) where every YAML config beside the script gives that key one
        plain value; None otherwise."""
        if test.__class__ is not ast.Name:
            return None
        held = self.program.values_of(test, fn, 1)
        if len(held) != 1 or held[0][0].__class__ is not ast.Subscript:
            return None
        key = held[0][0].slice
        if key.__class__ is not ast.Constant or not isinstance(key.value, str):
            return None
        values = self.program.config_key_anywhere(key.value)
        if not values or len(values) != 1:
            return None
        value = next(iter(values))
        return bool(value) if isinstance(value, (bool, int, float, str)) else None

    def _backward_in_helper(self, call: ast.Call, fn: Function, depth: int = 2) -> Optional[tuple]:
        """(the backward, the helper holding it) where a loop's call leads to one backward in one
        helper (`depth` calls down); None where the call is the backward or no one helper holds it."""
        inner, helper = call, fn
        while depth > 0 and not _is_backward(inner):
            held = {id(found): (found, target) for target in self._helpers(inner, helper)
                    for found in [self._always(target.node.body, target, self._backward, depth - 1,
                                               _changed_in(target), (inner, helper))] if found is not None}
            if len(held) > 1 and len({id(h) for _, h in held.values()}) == len(held) and \
                    inner.func.__class__ is ast.Name and not self.program.symbol(inner.func.id, helper):
                # `train_step_fn = train_step_margin_mse` / `elif ...: = train_step_info_nce`, then
                # `train_step_fn(model, batch, ...)`: a name that holds one of several step
                # helpers, each with its backward - the first of them stands for all (the loop's
                # call is named beside it)
                held = dict([min(held.items(), key=lambda kv: (kv[1][1].file.display, kv[1][0].lineno))])
            if len(held) != 1:
                return None
            (inner, helper), depth = next(iter(held.values())), depth - 1
        if inner is call or not _is_backward(inner):
            return None
        return inner, helper

    def _stepped_after_in_helper(self, call: ast.Call, fn: Function) -> bool:
        """The helper the loop's call backpropagates in steps an optimizer right after, on every
        way (`def train_step_d(): ...; loss_d.backward(); opt_d.step()`, a GAN's discriminator
        step called each pass): that backward's gradients are used at once, none accumulate,
        whatever other step the loop takes only sometimes (the generator's, ganmouflage)."""
        found = self._backward_in_helper(call, fn)
        if found is None:
            return False
        inner, helper = found
        return any(self._step_kind(c, helper) == "always"
                   for c, cond in _loop_calls(_after_it(helper.node.body, inner), False) if not cond)

    def _helpers(self, call: ast.Call, fn: Function) -> list[Function]:
        """The functions a call may run: resolved, or the one a `partial(...)` it names wraps."""
        targets, _ = self.program.resolve(call.func, fn)
        if not targets and isinstance(call.func, ast.Name):
            # `backwards = partial(loss_backwards, fp16)`; `backwards(loss, opt)`: the wrapped helper
            for value, scope in self.program.values_of(call.func, fn, 1):
                if isinstance(value, ast.Call) and last_name(value.func) == "partial" and value.args:
                    targets += self.program.resolve(value.args[0], scope)[0]
        return [t for t in targets if t.node is not None and not isinstance(t.node, ast.Module)]

    def _through(self, call: ast.Call, fn: Function, depth: int, pred) -> bool:
        if depth <= 0:
            return False
        # a test on a name the helper neither takes nor sets (a closure's `if train:`, fixed when
        # the factory built it) takes the same side on every call
        return any(self._always(target.node.body, target, pred, depth - 1, _changed_in(target), (call, fn)) is not None
                   for target in self._helpers(call, fn))


def _counted_return_before_step(target: Function, steps_in) -> bool:
    """`self.accum_iter += 1; if self.accum_iter != k: return` ahead of the step in the helper's
    own body: the helper steps once every k calls (a counter it advances decides the return),
    an accumulation period kept inside the helper (a TTS trainer's optimizer_step)."""
    body = getattr(target.node, "body", None)
    if not isinstance(body, list):
        return False  # (a lambda's body is one expression: no early return in it)
    counted = {dotted(t) for node in target.own if isinstance(node, ast.AugAssign)
               for t in [node.target] if dotted(t)}
    if not counted:
        return False
    for index, stmt in enumerate(body):
        if steps_in([stmt]):
            return any(isinstance(node, ast.If) and node.body and isinstance(node.body[-1], ast.Return)
                       and not steps_in(node.body) and not _finite_guard(node.test)
                       and any(dotted(n) in counted for n in walk(node.test) if isinstance(n, (ast.Name, ast.Attribute)))
                       for earlier in body[:index] for node in walk(earlier))
    return False


def _is_backward(node: ast.AST) -> bool:
    """`<anything>.backward(...)`, as written."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "backward"


def _changed_in(fn: Function) -> set[str]:
    """A helper's parameters and the names its body rebinds (asked at every call into it)."""
    found = fn.__dict__.get("_changed_names")
    if found is None:
        found = fn.__dict__["_changed_names"] = _assigned_names(fn.node.body) | set(fn.params)
    return found


def _after_it(body: list[ast.stmt], node: ast.AST) -> list[ast.stmt]:
    """The statements that run after node on every way past it within body: those after it in
    its own block, then after that block's statement, out to body (nested loops not entered),
    up to the first that may leave the pass (`if (i + 1) % k: continue` before the step)."""
    for index, stmt in enumerate(body):
        if stmt is node or not any(n is node for n in walk(stmt)):
            continue
        rest = body[index + 1:]
        leaving = next((i for i, later in enumerate(rest) if any(
            isinstance(n, (ast.Continue, ast.Break, ast.Return, ast.Raise)) for n in walk(later))), None)
        if leaving is not None:
            return rest[:leaving]
        if isinstance(stmt, ast.If):
            side = stmt.body if any(n is node for part in stmt.body for n in walk(part)) else stmt.orelse
            return _after_it(side, node) + rest
        if isinstance(stmt, (ast.With, ast.AsyncWith, ast.Try)) and any(n is node for part in stmt.body for n in walk(part)):
            return _after_it(stmt.body, node) + rest
        return rest
    return []


def _submodule_clear(call: ast.Call) -> bool:
    """`net.module.teacher.zero_grad()`: the gradients of one part of a model (a frozen EMA
    teacher), not of the model the optimizer steps - the rest still accumulates. An optimizer's
    or a whole model's (`opt.zero_grad()`, `self.model.zero_grad()`) clears them all."""
    receiver = dotted(call.func.value) if isinstance(call.func, ast.Attribute) else None
    if not receiver:
        return False
    parts = receiver.split(".")
    if parts[0] == "self":
        parts = parts[1:]
    parts = [p for p in parts if p != "module"]  # (the module DDP wraps is the model itself)
    return len(parts) >= 2 and not any("optim" in p.lower() for p in parts)


def _assigned_names(body: list[ast.stmt]) -> set[str]:
    """The names a loop body (re)binds on its passes."""
    names = set()
    for stmt in body:
        for node in walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(text(node))  # `self.accumulating = ...` changes that test too
    return names


_FINITE_TESTS = {"isinf", "isnan", "isfinite"}


def _finite_guard(test: ast.AST) -> bool:
    """A test of a value's finiteness alone (`torch.isfinite(loss)`, `not (isinf(x) or isnan(x))`)."""
    calls = [n for n in walk(test) if isinstance(n, ast.Call)]
    inside = {id(n) for c in calls for n in walk(c)}
    if any(isinstance(n, (ast.Name, ast.BinOp, ast.Compare)) and id(n) not in inside for n in walk(test)):
        return False  # (`step % 2 == 0 and torch.isfinite(loss)`: a period too)
    return bool(calls) and all(last_name(c.func) in _FINITE_TESTS or last_name(c.func) in ("all", "any", "item")
                               for c in calls) and any(last_name(c.func) in _FINITE_TESTS for c in calls)


def _invariant(test: ast.AST, changed: set[str], arithmetic: bool = False) -> bool:
    """A test of names and constants only (no call), none of them rebound in the loop: it
    takes the same side on every pass (`mode == "train"`, `args.fp16`). arithmetic: and sums
    of them - around a backward, `if self.iteration % d_freq == 0:` of a counter the loop over
    micro-steps never advances; around a step such a test is the period (an Engine's
    `engine.state.iteration % 8`, advanced by the loop the source does not show)."""
    allowed = _INVARIANT_PARTS + ((ast.BinOp, ast.operator) if arithmetic else ())
    for node in walk(test):
        if isinstance(node, ast.Name):
            if node.id in changed:
                return False
        elif isinstance(node, ast.Attribute) and text(node) in changed:
            return False
        elif not isinstance(node, allowed):
            return False
    return True


_INVARIANT_PARTS = (ast.Attribute, ast.Constant, ast.Compare, ast.BoolOp, ast.UnaryOp, ast.cmpop, ast.boolop,
                    ast.unaryop, ast.expr_context)


def _enclosing_loop(root: ast.AST, target: ast.AST) -> Optional[ast.AST]:
    for node, _ in _loops(root, 0):
        for inner, _ in _loops(node, 0):
            if inner is target:
                # the nearest: no loop between node and target
                if not any(mid is not target and any(x is target for x, _ in _loops(mid, 0))
                           for mid, _ in _loops(node, 0)):
                    return node
    return None


def _split_at_skip(loop: ast.AST, after: ast.AST) -> tuple[list[ast.stmt], list[ast.stmt]]:
    """The loop's body cut at the first periodic skip (`if (i + 1) % k != 0: continue`, a test on
    a counter modulo something) that follows the statement holding `after`: (what runs on every
    pass that reached `after`, what runs on some of them). A skip on a value (`if not
    torch.isfinite(norm): continue`) is no accumulation boundary and does not cut."""
    body = loop.body
    counters = {n.id for n in walk(getattr(loop, "target", loop)) if isinstance(n, ast.Name)} | {
        n.id for stmt in body for node in walk(stmt) if isinstance(node, (ast.Assign, ast.AugAssign))
        for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        for n in walk(t) if isinstance(n, ast.Name)}
    start = next((i for i, stmt in enumerate(body) if any(n is after for n in walk(stmt))), len(body))
    for i in range(start + 1, len(body)):
        stmt = body[i]
        periodic = isinstance(stmt, ast.If) and (any(
            isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod)
            and any(isinstance(m, ast.Name) and m.id in counters for m in walk(n.left)) for n in walk(stmt.test))
            or _counts_up_to(stmt.test, counters, body))
        if periodic and _continues(stmt.body + stmt.orelse):
            return body[:i], body[i:]
    return body, []


def _counts_up_to(test: ast.AST, counters: set[str], body: list[ast.stmt]) -> bool:
    """`if k < accum: continue` where the loop does `k += 1` (and resets it after the step): a
    micro-step count, the skip a period."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Lt, ast.NotEq))
            and isinstance(test.left, ast.Name) and test.left.id in counters):
        return False
    name = test.left.id
    return any(isinstance(n, ast.AugAssign) and isinstance(n.op, ast.Add) and isinstance(n.target, ast.Name)
               and n.target.id == name for stmt in body for n in walk(stmt))


def _continues(body: list[ast.stmt]) -> bool:
    """A `continue` of the enclosing loop somewhere in body (not one of a nested loop's)."""
    for stmt in body:
        if isinstance(stmt, ast.Continue):
            return True
        if isinstance(stmt, ast.If) and _continues(stmt.body + stmt.orelse):
            return True
        if isinstance(stmt, (ast.With, ast.AsyncWith, ast.Try)) and _continues(
                stmt.body + getattr(stmt, "orelse", []) + getattr(stmt, "finalbody", [])):
            return True
    return False


def _loop_calls(body: list[ast.stmt], conditional: bool, skip: Optional[ast.AST] = None
                ) -> Iterator[tuple[ast.Call, bool]]:
    """The calls a loop body makes on each pass, with whether an `if` decides them; nested
    loops are not entered (their calls run a different number of times)."""
    for stmt in body:
        if stmt is skip or isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                             ast.For, ast.AsyncFor, ast.While)):
            continue
        if isinstance(stmt, ast.If):
            yield from _expr_calls(stmt.test, conditional)
            yield from _loop_calls(stmt.body, True, skip)
            yield from _loop_calls(stmt.orelse, True, skip)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                yield from _expr_calls(item.context_expr, conditional)
            yield from _loop_calls(stmt.body, conditional, skip)
        elif isinstance(stmt, ast.Try):
            yield from _loop_calls(stmt.body, conditional, skip)
            yield from _loop_calls(stmt.finalbody, conditional, skip)
        else:
            yield from _expr_calls(stmt, conditional)


def _expr_calls(node: ast.AST, conditional: bool) -> Iterator[tuple[ast.Call, bool]]:
    for sub in walk(node):
        if isinstance(sub, ast.Call):
            yield sub, conditional


# Calls that wrap a model for distributed training (or hand it to a framework that does).
WRAPPERS = frozenset({"DDP", "DistributedDataParallel", "FSDP", "FullyShardedDataParallel", "prepare",
                      "prepare_model", "initialize", "wrap", "setup", "distribute", "fully_shard"})


def _clears_first(program, call: ast.Call, fn: Function) -> bool:
    """The backward is reached through a local helper whose own body clears the gradients on
    every call, ahead of anything conditional (VDVAE's step: `model.zero_grad()` first, the
    optimizer step skipped on a bad gradient norm)."""
    if isinstance(call.func, ast.Attribute) and call.func.attr == "backward":
        return False
    targets = program.resolve(call.func, fn)[0]
    return bool(targets) and all(
        target.node is not None and not isinstance(target.node, ast.Module) and any(
            isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and last_name(stmt.value.func) == "zero_grad"
            for stmt in target.node.body)
        for target in targets)


def _star_of_a_pair(fn: Function, name: str) -> bool:
    """`for i, *name in enumerate(...)`: the starred rest of a pair holds one item."""
    for node in fn.own_of(ast.For, ast.AsyncFor):
        if isinstance(node.target, ast.Tuple) \
                and len(node.target.elts) == 2 and isinstance(node.target.elts[1], ast.Starred) \
                and isinstance(node.target.elts[1].value, ast.Name) and node.target.elts[1].value.id == name \
                and isinstance(node.iter, ast.Call) and last_name(node.iter.func) == "enumerate" \
                and len(node.iter.args) == 1:
            return True
    return False


def _innermost_side(loop: ast.AST, step: ast.Call) -> Optional[tuple[ast.If, list, list]]:
    """(the innermost `if` around the step, the side holding it, the other side); None where no
    `if` in the loop holds it."""
    found = None
    for node in walk(loop):  # (outer ifs come first: the last that holds the step is the innermost)
        if node.__class__ is not ast.If:
            continue
        for mine, other in ((node.body, node.orelse), (node.orelse, node.body)):
            if any(c is step for stmt in mine for c in walk(stmt)):
                found = (node, mine, other)
    return found


def _cleared_beside(loop: ast.AST, step: ast.Call) -> bool:
    """The `if` the step sits under clears the gradients on its other side (MCNet's `if not
    torch.isfinite(loss).item(): opt.zero_grad() else: opt.step()`): the pass that does not step
    throws its gradients away, so nothing is accumulated. Not a side that steps too before it
    clears (`if not amp: opt.step(); opt.zero_grad() else: scaler.step(opt); opt.zero_grad()`):
    both sides step, and the period is the `if` around them."""
    found = _innermost_side(loop, step)
    if found is None or not found[2]:
        return False
    calls = [last_name(c.func) for stmt in found[2] for c in walk(stmt) if c.__class__ is ast.Call]
    return "zero_grad" in calls and "step" not in calls


def _own_backward_beside(loop: ast.AST, step: ast.Call) -> bool:
    """The step sits on a side of an `if` that runs a backward of its own before it (a GAN's
    discriminator update beside the generator's): that side steps what it back-propagated."""
    found = _innermost_side(loop, step)
    return found is not None and any(c.__class__ is ast.Call and last_name(c.func) == "backward"
                                     and c.lineno < step.lineno for stmt in found[1] for c in walk(stmt))


def _sub_config(name: str, fn: Function) -> bool:
    """The name holds a section of a config: a parameter never bound again, or bound only to
    a field or item read off something (`cfg = getattr(self._cfg, name).training`, `section =
    getattr(self.settings, name)`)."""
    bound = fn.bindings.get(name)
    if not bound:
        return name in fn.params or name in fn.kwonly
    return all(value.__class__ in (ast.Attribute, ast.Subscript) or (
        value.__class__ is ast.Call and last_name(value.func) == "getattr" and len(value.args) == 2) for _, value in bound)


def _parameter_owners(program, value: ast.AST, fn: Function, depth: int = 4) -> list[ast.AST]:
    """The models whose `.parameters()` / `.named_parameters()` an optimizer's argument is built
    from, through the names it is assigned from in fn (`param_optimizer = list(m.named_parameters())`)."""
    owners: list = []
    todo, seen = [(value, depth)], set()
    while todo:
        expr, left = todo.pop()
        for sub in walk(expr):
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and \
                    sub.func.attr in ("parameters", "named_parameters"):
                owners.append(sub.func.value)
            elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and left > 0 and sub.id not in seen:
                seen.add(sub.id)
                todo.extend((v, left - 1) for v, scope in program.values_of(sub, fn, 1)
                            if v is not sub and scope is fn)
    return owners


def _every_pass_withs(body: list) -> list:
    """The `with` statements a loop body enters on every pass: at its top, or inside another
    `with` or a `try` body so placed (not under an `if`, not in a nested loop)."""
    found, todo = [], list(body)
    while todo:
        stmt = todo.pop()
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            found.append(stmt)
            todo.extend(stmt.body)
        elif isinstance(stmt, ast.Try):
            todo.extend(stmt.body)
    return found


def _own_pass(body: list):
    """The nodes of a loop body outside the loops (and defs) nested in it."""
    todo = list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef,
                             ast.ClassDef, ast.Lambda)):
            continue
        yield node
        todo.extend(children(node))


def _leaving_blocks(body: list) -> set[int]:
    """The ids of the nodes of a loop body's own pass that sit in an `if` side ending in
    `break` / `continue` / `return` / `raise`: a pass that runs them ends there, before anything
    written below that `if`."""
    found: set[int] = set()
    for node in _own_pass(body):
        if node.__class__ is ast.If:
            for side in (node.body, node.orelse):
                if side and side[-1].__class__ in (ast.Break, ast.Continue, ast.Return, ast.Raise):
                    found.update(id(n) for stmt in side for n in walk(stmt))
    return found


def _cleared_by_counter(loop: ast.AST, sides: dict, clears: list, steps: list) -> bool:
    """A zero_grad in the loop whose every test around it reads the loop's own counter, with no
    optimizer step beside it (`if every(step, k): opt.step(); opt.zero_grad()` is the
    accumulation's own boundary): the passes throw the gradients away by their index."""
    if not isinstance(loop, (ast.For, ast.AsyncFor)):
        return False
    counter = {n.id for n in walk(loop.target) if n.__class__ is ast.Name}
    if not counter:
        return False
    reads = re.compile(r"\b(?:%s)\b" % "|".join(map(re.escape, sorted(counter))))
    stepped = {sides.get(id(s)) for s in steps}
    return any(sides.get(id(c)) and sides[id(c)] not in stepped
               and all(reads.search(test) and "%" not in test for test, _ in sides[id(c)])
               for c in clears)


def _sides(loop: ast.AST) -> dict[int, tuple]:
    """For each node in the loop, the (test, side) of every `if` around it: ("step % k == 0", True)."""
    sides: dict[int, tuple] = {}

    def visit(node: ast.AST, around: tuple) -> None:
        sides[id(node)] = around
        if isinstance(node, ast.If):
            visit(node.test, around)
            for stmt in node.body:
                visit(stmt, around + ((text(node.test), True),))
            for stmt in node.orelse:
                visit(stmt, around + ((text(node.test), False),))
            return
        for child in children(node):
            visit(child, around)

    for stmt in loop.body:
        visit(stmt, ())
    return sides


def _no_sync_out_of_phase(fn: Function, loop: ast.AST, is_step) -> list[AccumulationFact]:
    """`model.no_sync() if i % k != 0 else nullcontext()` with the step under
    `if (i + 1) % k == 0:`: the micro-step that steps runs under no_sync, so its gradients are
    never all-reduced and the ranks step on their own. Both tests are evaluated over a few
    periods; only tests on the loop counter and one period are read."""
    if not isinstance(loop, (ast.For, ast.AsyncFor)):
        return []
    counters, steps = _counters_and_steps(fn, loop, is_step)
    found = []
    for node in walk(loop):
        if not isinstance(node, (ast.IfExp, ast.If)):
            continue
        sides = [(node.body, True), (node.orelse, False)]
        for side, when in sides:
            side = side if isinstance(side, list) else [side]
            if not any(isinstance(c, ast.Attribute) and c.attr == "no_sync" for s in side for c in walk(s)):
                continue
            for step in steps:
                # an `if` around the no_sync branch (`if k > 1:` holding both the stepping and
                # the no_sync side) does not say which micro-step steps: the inner test does
                if any(inner is node for inner in walk(step)):
                    continue
                if _overlaps(node.test, when, step.test, counters):
                    found.append(AccumulationFact(loc(fn, node), loc(fn, loop), loc(fn, step), "no_sync_on_step"))
    return found


def _counters_and_steps(fn: Function, loop: ast.AST, is_step) -> tuple[set, list]:
    """The names a `for` loop's target binds (its counter) and the `if`s in it whose body steps
    the optimizer: what the out-of-phase checks evaluate a sync test against."""
    counters = {n.id for n in walk(loop.target) if isinstance(n, ast.Name)}
    steps = [n for n in walk(loop) if isinstance(n, ast.If)
             and any(isinstance(c, ast.Call) and is_step(c, fn) for s in n.body for c in walk(s))]
    return counters, steps


def _sync_flag_out_of_phase(fn: Function, loop: ast.AST, is_step) -> list[AccumulationFact]:
    """`model.require_backward_grad_sync = (i == k - 1)` over a loop whose counter runs on past
    k, the step under `if (i + 1) % k == 0:` (nanoGPT-amd's DDP trainer): the flag is false on
    every stepping micro-step after the first period, so those gradients are never all-reduced.
    Evaluated as _no_sync_out_of_phase evaluates its tests: the flag false where the step runs."""
    if not isinstance(loop, (ast.For, ast.AsyncFor)):
        return []
    counters, steps = _counters_and_steps(fn, loop, is_step)
    return [AccumulationFact(loc(fn, node), loc(fn, loop), loc(fn, step), "sync_flag_off_on_step")
            for node in walk(loop) if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Attribute) and t.attr == "require_backward_grad_sync" for t in node.targets)
            for step in steps[:1] if _overlaps(node.value, False, step.test, counters)]


def _overlaps(sync_test: ast.AST, when: bool, step_test: ast.AST, counters: set) -> bool:
    """Some micro-step where no_sync is on (sync_test == when) and the step runs (step_test true)."""
    period = {text(n) for t in (sync_test, step_test) for n in walk(t)
              if isinstance(n, (ast.Name, ast.Attribute)) and not (isinstance(n, ast.Name) and n.id in counters)
              and not isinstance(getattr(n, "ctx", None), ast.Store)}
    period = {p for p in period if not any(p != q and q.startswith(p + ".") for q in period)}
    if len(period) > 1 or not (counters & {n.id for n in walk(sync_test) if isinstance(n, ast.Name)}):
        return False
    for k in (2, 3, 4):
        for i in range(2 * k):
            values = {**{c: i for c in counters}, **{p: k for p in period}}
            on, stepping = _value(sync_test, values), _value(step_test, values)
            if on is None or stepping is None:
                return False
            if bool(on) == when and stepping:
                return True
    return False


def _value(node: ast.AST, values: dict):
    """A small arithmetic and comparison evaluator over the given names; None when it cannot."""
    ops = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mod: operator.mod, ast.Mult: operator.mul,
           ast.FloorDiv: operator.floordiv, ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt,
           ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge}
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, bool)):
        return node.value
    if isinstance(node, (ast.Name, ast.Attribute)):
        return values.get(text(node))
    if isinstance(node, ast.BinOp) and type(node.op) in ops:
        left, right = _value(node.left, values), _value(node.right, values)
        if left is None or right is None or (isinstance(node.op, (ast.Mod, ast.FloorDiv)) and right == 0):
            return None
        return ops[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _value(node.operand, values)
        return None if inner is None else not inner
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in ops:
        left, right = _value(node.left, values), _value(node.comparators[0], values)
        return None if left is None or right is None else ops[type(node.ops[0])](left, right)
    if isinstance(node, ast.BoolOp):
        parts = [_value(v, values) for v in node.values]
        if any(p is None for p in parts):
            return None
        return all(parts) if isinstance(node.op, ast.And) else any(parts)
    return None
