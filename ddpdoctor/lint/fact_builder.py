"""What every fact gatherer of the lint starts from (lint/facts.py composes them): the functions
the entry script can run, their calls and callers, the collectives a function reaches with the
tests on the way, whether every way into a function passes a rank test, and the loops of a body.
"""

from __future__ import annotations

import ast
import functools
import re
from typing import Iterator, Optional

from ddpdoctor.core.findings import Location
from ddpdoctor.lint import reaching
from ddpdoctor.lint.defaults import DIST_SWITCH, config_read, declared_off, off_at_launch, option_value, runs_once_at_launch, three_valued, unset_config_get
from ddpdoctor.lint.nodes import blocks_around, parse_test as _test_of, walk
from ddpdoctor.lint.patterns import (DDP_BACKWARD, DDP_BUILT, DDP_FORWARD, SETUP_CALLS, fresh_model, fsdp_builder, one_process_side, plain_module, prepared_ddp, holds_no_ddp, dotted, grad_off_by, grad_switch, is_const, keyword, last_name,
                                     ddp_model, tests_around, text, through_grad_off, unwrapped_from)
from ddpdoctor.lint.program import Event, Function, Guard, Klass, Program, explicit_self
from ddpdoctor.lint.ranks import COMPARE_OPS, NEGATED_SWITCH, UNIFORM_NAME, _on_self
from ddpdoctor.lint.walker import COMMAND, exits, side_conds
from ddpdoctor.lint.value_flow import placement as _placement, unreturned_arguments


MAX_DEPTH = 6  # calls followed from a guarded block to the collective
SINGLE = re.compile(r"^not (?![\w.]*multiprocessing_distributed$)[\w.]*(?:distributed|fsdp|ddp|deepspeed|use_dist|multi_gpu)$"
                    # a flag spelled `dist` (`def build(cfg, dist):`, `opt.dist`), not `min_dist`
                    r"|^not (?:[\w.]*\.)?(?:is_|do_)?dist$"
                    # (asked of the helper too: `get_world_size() == 1`, DFM-LC's save)
                    r"|^(?!not )[\w.]*world_size(?:\(\))? == 1$"
                    # the `else:` of `if world_size > 1:` (VISTA3D), `world_size <= 1`, `< 2` (not
                    # `n_gpu > 1`: HF scripts count one process's GPUs there, DataParallel's)
                    r"|^not \(?[\w.]*world_size(?:\(\))? > 1\)?$"
                    # (not their `not`: `not args.world_size <= 1` is the distributed side)
                    r"|^(?!not )[\w.]*world_size(?:\(\))? (?:<= 1|< 2)$"
                    # the `else:` of `if dist.is_initialized():` (HydraGNN), of `if dist.is_available()
                    # and dist.is_initialized():`: no process group there
                    r"|^not \(?(?:[\w.]*is_available\(\) and )?[\w.]*is_initialized\(\)\)?$"
                    # `local_rank == -1`: launched without a launcher (DensePhrases' evaluation);
                    # `global_rank == -1`, the copy set to -1 where no group is set up
                    r"|^[\w.]*rank == -1$|^[\w.]*rank < 0$"
                    # `if ddpRank is None:` (graphPINN's epoch: the rank mp.spawn hands in, None
                    # where the caller runs it in the one process), the `else:` of `is not None`
                    r"|^[\w.]*rank is None$|^not \(?[\w.]*rank is not None\)?$"
                    # `world_size == -1`, the `else:` of `if world_size != -1:` (MIND-PR's loaders)
                    r"|^[\w.]*world_size == -1$|^not \(?[\w.]*world_size != -1\)?$|^[\w.]*world_size < [01]$"
                    # the job's GPU count at one (`config.exp.num_gpus == 1`: DiffComplete's test)
                    r"|^[\w.]*(?:num_?gpus|ngpus) == 1$|^not \(?[\w.]*(?:num_?gpus|ngpus) > 1\)?$",
                    re.IGNORECASE)
# `not use_fsdp` / `not self.deepspeed` is the single-process side only where the script has no
# other way to be distributed: beside a DistributedDataParallel model it is the DDP path
ENGINE_OFF = re.compile(r"^not [\w.]*(?:fsdp|deepspeed)$", re.IGNORECASE)
Reached = tuple  # (op, Location, chain, conds): a collective a call leads to
# the keywords a value is handed to as a random seed (a rank there picks draws, not a shard)
SEED_KEYWORDS = frozenset({"seed", "random_seed", "rng_seed", "base_seed"})
# the keywords a value is handed to as a folder the call writes in (a rank there names a
# per-rank cache or log folder: `from_pretrained(m, cache_dir=f"{out}/cache_{rank}")`, not a shard)
WRITTEN_FOLDER_KEYWORDS = frozenset({"cache_dir", "output_dir", "log_dir", "logdir", "save_dir", "tmp_dir",
                                     "checkpoint_dir", "ckpt_dir"})
_BLOCKS: dict[type, tuple[str, ...]] = {}


class BuilderCore:
    """The program's reachable functions and the walks over them that several checks' facts share."""

    def __init__(self, program: Program) -> None:
        self.program = program
        # only what the entry script can run is judged
        self.functions = [f for f in program.functions if f in program.reachable]
        self._reach: dict[Function, list[tuple[str, Location, list[str]]]] = {}
        self._callers: Optional[dict[Function, list[tuple[Function, Event]]]] = None

    # ------------------------------------------------------------------ collectives
    def reach(self, fn: Function, depth: int = MAX_DEPTH, stack: tuple = (),
              call: Optional[ast.Call] = None, entries: tuple = (), under: frozenset = frozenset()) -> list[Reached]:
        """Every collective a function may run, directly or through local calls, with the chain
        and the (non-rank) tests on the way. `call`: the call that enters fn, whose arguments
        may switch some of it off (`merge(state)` leaves `use_barriers=False`); `entries`: the
        calls that entered the functions of `stack` (None where not a call), so a value passed
        on (`_write(..., synchronize=synchronize)`) is read where it was given; `under`: the
        (key, polarity) of the rank tests the calls on the way sit under."""
        if fn in stack or depth <= 0:
            return []
        if fn in self._reach and not stack:
            return self._reach[fn]
        found = []
        paired = self._paired(fn, under)
        context = tuple(zip(stack[-len(entries):], entries)) if entries else ()
        if len(stack) > len(context):
            # (the function the outermost call of the context stands in, entered by no call
            # followed here: where a name that call hands on is bound, `for fold in ("dev",
            # "test"): evaluate(args, model, fold)`)
            context = ((stack[-len(context) - 1], None),) + context
        whiles = fn.__dict__.get("_call_whiles")
        for event in fn.events:
            if call is not None and any(_cond_false(fn, call, c, flag, context, stack[-1] if stack else None)
                                        for c, flag in event.conds):
                continue  # `if use_barriers:` left False, `if phase == "train":` entered with "val"
            if event.conds and any(_never_taken(fn, c, flag) for c, flag in event.conds):
                continue  # `sliding = False` then `if sliding: sliding_predict(model, x)`
            if call is not None and stack and event.conds and \
                    any(self._other_wrapper(fn, call, stack[-1], c) for c, flag in event.conds if not flag):
                continue  # `if isinstance(model, FSDP):` entered with a DDP model
            if call is not None and whiles and any(_never_entered(fn, loop, call) for loop in whiles.get(id(event.node), ())):
                continue  # `while wanted > made:` entered with wanted at its default -1
            if call is not None and stack and any(_set_false_before(fn, call, stack[-1], c) for c, _ in event.conds):
                continue  # `runner.distributed = False; runner.evaluate()` past `if self.distributed:`
            own_conds = event.conds if call is None else \
                tuple((c, flag) for c, flag in event.conds if not (flag and _cond_true(fn, call, c, context)))
            # (a side a local constant always takes is no assumption: `not sliding` above)
            own_conds = tuple((c, flag) for c, flag in own_conds if not _never_taken(fn, c, not flag))
            if under and _opposed(event.guards, under):
                continue  # rank 0's call into `if local_rank not in [-1, 0]: barrier()`: not on this way
            if call is not None and event.guards and _closed_by_call(fn, call, event.guards, context):
                continue  # `if local_rank == 0 and not evaluate: barrier()` entered with `evaluate=True`
            if event.kind == "collective" and id(event) not in paired:
                if event.conds and _single_process(event.conds, self._switches(), self.wraps_ddp()):
                    continue  # `if cfg.distributed: model.module(x) else: model(x)`: one process there
                if call is not None and self._unwrapped_here(fn, call, event, stack, entries):
                    continue  # `evaluate(unwrap(model))`: this way in passes the plain module
                if call is not None and stack and _field_unwrapped_on_entry(fn, call, event, stack[-1]):
                    continue  # `self.model = self.model.module; self._test_loop(loader)`: plain there
                if _on_the_unwrapped_side(event):
                    continue  # `if hasattr(gen, "module"): gen.module(x) else: gen(x)`: gen is plain there
                if call is not None and event.op.startswith((DDP_FORWARD, DDP_BACKWARD)) and \
                        self._wrapped_only_where_off(fn, call, context):
                    continue  # `linear_evaluation(..., distributed=False)`: its `if distributed: DDP(...)` is off
                op = event.op
                switch = grad_switch(self.program, event.node, fn) if call is not None and \
                    op.startswith(DDP_FORWARD) else ""
                if switch and _switched(fn, call, switch, context) is False:
                    op = grad_off_by(op, switch)  # `compute_loss(..., is_training=False)`
                found.append((op, loc(fn, event.node), [], own_conds))
            elif event.kind in ("call", "ref"):
                for target in event.targets:
                    step = f"{fn.file.display}:{event.line} {target.label}"
                    entry = event.node if event.kind == "call" else None
                    for op, where, chain, conds in self.reach(target, depth - 1, stack + (fn,), entry,
                                                              (entries + (call,))[-3:], under | _polarities(event.guards)):
                        op = through_grad_off(self.program, op, event.node, fn)
                        found.append((op, where, [step] + chain, own_conds + conds))
        if not stack:
            self._reach[fn] = found
        return found

    def _wrapped_only_where_off(self, fn: Function, call: ast.Call, context: tuple) -> bool:
        """fn wraps its own model in DDP (`if distributed: model = DDP(model)`) only under tests
        this way in leaves false, and every DDP model it runs is one of its own names: the
        model is the plain module on this way in, whatever its forwards and backward look like.
        (A model handed in as a parameter may be a DDP model built elsewhere: not settled.)"""
        builds = [e for e in fn.events if e.kind == "collective" and e.op == DDP_BUILT]
        if not builds or not all(any(_cond_false(fn, call, c, flag, context) for c, flag in e.conds)
                                 for e in builds):
            return False
        program = self.program
        for node in fn.own_calls:
            wrapped = ddp_model(program, node, fn)
            if wrapped is not None and not (node.func.__class__ is ast.Name and node.func.id not in fn.params
                                            and node.func.id not in fn.kwonly):
                return False
        return True

    def _other_wrapper(self, fn: Function, call: ast.Call, caller: Function, cond: str) -> bool:
        """`if isinstance(model, FSDP):` entered, through `call` in `caller`, with `model` a
        `DistributedDataParallel(...)` (torch's, under any import name): false on this way in."""
        test = _test_of(cond)
        if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance"
                and len(test.args) == 2 and isinstance(test.args[0], ast.Name) and test.args[0].id in fn.params):
            return False
        wanted = (self.program.qualify(test.args[1], fn) or "").rpartition(".")[2]
        given = argument_at(fn, call, test.args[0].id)
        if wanted not in _WRAPPERS or given is None:
            return False
        values = self.program.values_of(given, caller)
        if not values or not all(isinstance(v, ast.Call) for v, _ in values):
            return False
        made = {self.program.qualify(v.func, s) or "" for v, s in values}
        return all(m.startswith("torch.") and m.rpartition(".")[2] in _WRAPPERS and m.rpartition(".")[2] != wanted
                   for m in made)

    def _unwrapped_here(self, fn: Function, call: ast.Call, event, stack: tuple = (), entries: tuple = ()) -> bool:
        """A DDP forward on fn's parameter (`def evaluate(net): net(x)`) where the call entering fn
        passes the plain module for it (`model.module`, `unwrap(model)` returning
        `m.module if hasattr(m, "module") else m`): not a DDP forward on this way in. `stack`,
        `entries`: the functions on the way and the calls that entered them (reach's)."""
        node = event.node
        if not (event.op.startswith(DDP_FORWARD) and isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in fn.params and not isinstance(fn.node, ast.Module)):
            return False
        return self._handed_plain(node.func.id, fn, call, stack, entries, 3)

    def _handed_plain(self, param: str, fn: Function, call: ast.Call, stack: tuple, entries: tuple, depth: int) -> bool:
        """The call entering fn hands `param` the plain module, or hands on a parameter of its
        own that the call entering the caller does, a few calls up (`evaluate(cfg, model.module
        if distributed else model)` -> `test_one(model)` -> `step(data, model)`)."""
        caller = stack[-1] if stack else None
        args = fn.node.args
        positional = [a.arg for a in args.posonlyargs + args.args]
        offset = 1 if fn.cls is not None and positional[:1] in (["self"], ["cls"]) else 0
        value = keyword(call, param)
        index = positional.index(param) - offset if param in positional else -1
        if value is None and 0 <= index < len(call.args):
            value = call.args[index]
        if value is not None and _on_self(value) and caller is not None and \
                _rebound_to_module(caller, call, value.attr):
            return True  # `self.model = self.model.module` before `anomaly.run(model=self.model)`
        if value is not None and isinstance(value, ast.Name) and caller is not None:
            if prepared_ddp(self.program, value, caller, call.lineno) is not None:
                return False  # `model, opt = accelerator.prepare(model, opt)` above: the wrapper
            # `model = Model.from_pretrained(ckpt); evaluate(model)`: the binding just before the
            # call, in its own block, is the one passed - a fresh model, not the DDP wrapper
            bound = reaching.reaching_value(caller.node, value.id, call)
            if bound is not None and fresh_model(self.program, bound, caller):
                return True
            if isinstance(bound, ast.Call) and self._factory_unwrapped(bound, caller):
                return True  # `model_ema = get_model(cfg, local_rank=-1)`: its `if local_rank >= 0: DDP(...)` left out
            if holds_no_ddp(self.program, value, caller):
                return True  # rebound to the plain module on every way to this call
            if depth > 1 and entries and entries[-1] is not None and value.id in caller.params and \
                    not caller.bindings.get(value.id) and not isinstance(caller.node, ast.Module):
                return self._handed_plain(value.id, caller, entries[-1], stack[:-1], entries[:-1], depth - 1)
        return value is not None and plain_module(self.program, value, fn, 2)

    def _factory_unwrapped(self, call: ast.Call, caller: Function) -> bool:
        """A local factory whose every DDP construction sits under a test this call's arguments
        make false (`get_model(cfg, local_rank=-1)` into `if local_rank >= 0: model = DDP(model)`):
        what it returns on this way is the plain module."""
        targets = [t for t in self.program.resolve(call.func, caller)[0]
                   if t.node is not None and not isinstance(t.node, ast.Module)]
        built = [(t, e) for t in targets for e in t.events
                 if e.kind == "collective" and self.program.ddp_call(e.node, t)]
        return bool(built) and all(any(_cond_false(t, call, c, flag, ()) for c, flag in e.conds) for t, e in built)

    def _paired(self, fn: Function, under: frozenset = frozenset()) -> set[int]:
        """Collectives of a function that pair up across its own rank tests (yolov5's
        `if local_rank not in [-1, 0]: barrier()` ... `yield` ... `if local_rank == 0: barrier()`):
        every rank runs one of them, so a caller's rank test does not make them one-sided -
        unless that test (`under`) already took the ranks of one side away."""
        polarities: dict[tuple[str, str], set[str]] = {}
        for event in fn.events:
            if event.kind == "collective" and event.guards and not (under and _opposed(event.guards, under)):
                test = event.guards[-1].test
                polarities.setdefault((_op_kind(event.op), test.key), set()).add(test.polarity)
        return {id(e) for e in fn.events if e.kind == "collective" and e.guards
                and {"zero", "nonzero"} <= polarities.get((_op_kind(e.op), e.guards[-1].test.key), set())}

    # ------------------------------------------------------------------ helpers
    def calls(self) -> list[tuple[Function, ast.Call, tuple[Guard, ...], int]]:
        """Every call the walk met in the reached functions, in order: listed once (fifteen
        passes go through them; the walk is over, so no call is added afterwards)."""
        found = self.__dict__.get("_all_calls")
        if found is None:
            found = self.__dict__["_all_calls"] = [(fn, call, guards, loops) for fn in self.functions
                                                   for call, guards, loops in fn.calls]
        return found

    def setups(self) -> set:
        """The reached functions that set up the process group (call init_process_group)."""
        if not hasattr(self, "_setup_set"):
            self._setup_set = {fn for fn, call, _, _ in self.calls() if last_name(call.func) == "init_process_group"}
        return self._setup_set

    def asked_before_group(self, test: ast.AST, fn: Function) -> bool:
        """`dist.is_initialized()` (or a local helper returning it) asked in fn, where every way
        into fn runs before the script sets up the process group (nndepth's `dataloader.setup()`
        a few lines above `init_process_group`): false there, whatever the run."""
        if not (test.__class__ is ast.Call and group_query(self.program, test, fn)):
            return False
        return self._before_setup(fn, 4, ())

    def _before_setup(self, fn: Function, depth: int, stack: tuple) -> bool:
        """Every call into fn (a few callers up) comes, in its caller's own body and outside any
        loop, above the first call that sets up the process group there."""
        sites = self.callers().get(fn, [])
        if not sites or depth <= 0 or fn in stack:
            return False
        for caller, event in sites:
            if event.kind != "call" or event.loops or isinstance(caller.node, ast.Module):
                return False
            # (init_process_group itself, or a call into what reaches it: setups / sets_up_group)
            setup_lines = [c.lineno for c in caller.own_calls if last_name(c.func) == "init_process_group"] + \
                [e.line for e in caller.events if e.kind == "call" and any(self.sets_up_group(t) for t in e.targets)]
            if any(line <= event.line for line in setup_lines):
                return False
            if not setup_lines and not self._before_setup(caller, depth - 1, stack + (fn,)):
                return False
        return True

    def sets_up_group(self, fn: Function) -> bool:
        """fn, or what it calls, sets up the process group: a rank test around its call is
        decided before the group exists (the parent that joins as rank 0 after spawning the
        others, each of which joins through its own call), not between its members."""
        cache = self.__dict__.setdefault("_sets_up", {})
        if fn not in cache:
            cache[fn] = bool(self.setups() and reached_from([fn]) & self.setups())
        return cache[fn]

    def one_process_pick(self, fn: Function) -> bool:
        """fn runs only where the run is not distributed: the one-process side of a pick on the
        flag that says so (`run = self._epoch_ddp if self._ddp else self._epoch`), and nothing
        else calls it."""
        return fn in self.program.one_process_picks and fn not in self.callers()

    def in_another_command(self, fn: Function, depth: int = 8, stack: tuple = ()) -> str:
        """Every way into fn starts at a command-line command (`@cli.command()`) that runs no
        distributed training: no process group, DDP model, Lightning Trainer or Accelerator
        reached from it. A CLI's `preprocess` and `train` are separate runs; only the latter is
        the job of many ranks. The command's name, or "" otherwise."""
        sites = self.callers().get(fn, [])
        if not sites or depth <= 0 or fn in stack:
            return ""
        found = ""
        for caller, event in sites:
            if event.kind == "ref" and event.op == COMMAND:
                if self._distributed_reach(fn):
                    return ""
                found = found or fn.label
                continue
            alternatives = event.targets or event.weak  # a registry's entries; a method of that name
            if event.kind == "call" and len(alternatives) > 1 and not self._distributed_reach(fn) and any(
                    t is not fn and self._distributed_reach(t) for t in alternatives) and not any(
                    (last_name(c.func) or "") in DISTRIBUTED_STARTS for c, _, _ in caller.calls):
                # `TRAINERS[cfg.name](cfg)`: one of the alternatives a registry picks, where another
                # sets up the distributed run and this one (a single-process trainer) does not
                found = found or fn.label
                continue
            inner = self.in_another_command(caller, depth - 1, stack + (fn,))
            if not inner:
                return ""
            found = found or inner
        return found

    def in_exiting_branch(self, fn: Function) -> str:
        """Every call into fn sits in an `if` of its caller that ends the program right after
        (`if args.merge_lora: merge_and_save(args); sys.exit(0)`, no rank test) and reaches no
        process group, DDP model or framework: a command of its own before the training run.
        The test's text, or ""."""
        sites = self.callers().get(fn, [])
        if not sites or self._distributed_reach(fn):
            return ""
        found = ""
        for caller, event in sites:
            if event.kind != "call" or caller.node is None:
                return ""
            branch = next((n for n in walk(caller.node) if n.__class__ is ast.If and n.body
                           and any(s.__class__ is ast.Expr and s.value is event.node
                                   or (s.__class__ is ast.Assign and s.value is event.node) for s in n.body)), None)
            if branch is None or not (exits(branch.body[-1]) or isinstance(branch.body[-1], ast.Return)) \
                    or self.program.ranks.guard(branch.test, caller) is not None \
                    or any((last_name(c.func) or "") in DISTRIBUTED_STARTS or self.program.ddp_call(c, caller)
                           for s in branch.body for c in walk(s) if c.__class__ is ast.Call):
                return ""
            if isinstance(branch.body[-1], ast.Return) and not isinstance(caller.node, ast.Module) \
                    and not self._sets_up_after(caller, branch):
                return ""  # (a `return` ends only the function: what its caller does next is the run)
            found = found or text(branch.test, 60)
        return found

    def _sets_up_after(self, fn: Function, branch: ast.If) -> bool:
        """Something after `branch` in fn sets up the distributed run (the training the early
        `return` keeps the side command out of)."""
        return any((last_name(c.func) or "") in DISTRIBUTED_STARTS or self.program.ddp_call(c, fn)
                   for c, _, _ in fn.calls if getattr(c, "lineno", 0) > (branch.end_lineno or branch.lineno))

    def _distributed_reach(self, fn: Function) -> bool:
        cache = self.__dict__.setdefault("_distributed_reached", {})
        if fn not in cache:
            cache[fn] = any(
                (last_name(call.func) or "") in DISTRIBUTED_STARTS or self.program.ddp_call(call, reached)
                for reached in reached_from([fn]) for call, _, _ in reached.calls)
        return cache[fn]

    def wraps_ddp(self) -> bool:
        """Some reachable call builds a DistributedDataParallel model."""
        if not hasattr(self, "_wraps_ddp"):
            self._wraps_ddp = any(self.program.ddp_call(call, fn) for fn, call, _, _ in self.calls())
        return self._wraps_ddp

    def builds_fsdp(self) -> bool:
        """Some reachable call builds an FSDP model (FSDP1's class, FSDP2's `fully_shard`)."""
        if not hasattr(self, "_builds_fsdp"):
            self._builds_fsdp = any(fsdp_builder(self.program.qualify(call.func, fn) or "")
                                    for fn, call, _, _ in self.calls())
        return self._builds_fsdp

    def callers(self) -> dict[Function, list[tuple[Function, Event]]]:
        if self._callers is None:
            self._callers = {}
            for fn in self.functions:
                for event in fn.events:
                    if event.kind in ("call", "ref"):
                        for target in set(event.targets) | set(event.weak):
                            if target is fn:
                                continue  # a function calling itself is entered the ways its callers enter it
                            if event.kind == "ref" and _called_partial(target, event.node):
                                continue  # (`partial(f, k=v)` called in sight: the call is the way in)
                            self._callers.setdefault(target, []).append((fn, event))
            self._constructor_hooks()
        return self._callers

    def _constructor_hooks(self) -> None:
        """A library dataset's constructor runs hooks of the subclass (PyG's `Dataset.__init__`
        runs `download()` and `process()` where the files are missing, DGL's `DGLDataset` its
        `process()` and `save()`): each is called where the subclass's `__init__` calls
        `super().__init__(...)`, on whichever ranks build the dataset."""
        for fn in self.functions:
            if fn.cls is None or fn.parent is not None or fn.name not in _HOOK_NAMES or self._callers.get(fn):
                continue
            bases = self.program.library_bases(fn.cls)
            if not any(fn.name in hooks and any(b.startswith(prefix) for b in bases)
                       for prefix, hooks in CONSTRUCTOR_HOOKS):
                continue
            init = self.program.method(fn.cls, "__init__")
            # (a statement of the constructor's own body: no test of its own around it)
            for stmt in (init.node.body if init is not None and init.node is not None and init in self.functions else ()):
                node = stmt.value if stmt.__class__ is ast.Expr else None
                if node.__class__ is ast.Call and node.func.__class__ is ast.Attribute \
                        and node.func.attr == "__init__" and node.func.value.__class__ is ast.Call \
                        and last_name(node.func.value.func) == "super":
                    self._callers.setdefault(fn, []).append(
                        (init, Event("call", node, node.lineno, (), 0, targets=(fn,))))

    def switched_off(self, fn: Function, call: ast.Call) -> bool:
        """The call sits under a plain test no way into fn passes (`if not as_sets:` past the
        early return every caller takes with as_sets=True): it never runs."""
        return any(never_true(self.callers(), fn, cond, flag, self.program) or self._never_of_type(fn, cond)
                   for cond, flag in fn.__dict__.get("_call_conds", {}).get(id(call), ()))

    def _never_of_type(self, fn: Function, cond: str) -> bool:
        """`isinstance(trainer, AETrainer)` on a name every value of which is an instance the
        source builds of another local class (`trainer = GANTrainer(...)` handed through
        mp.spawn's args): false on every way in; `not isinstance(...)` the other way round."""
        negated = cond.startswith("not ")
        said = cond[4:] if negated else cond
        if not said.startswith("isinstance(") or len(said) > 200:
            return False
        try:
            test = ast.parse(said, mode="eval").body
        except SyntaxError:
            return False
        if not (isinstance(test, ast.Call) and len(test.args) == 2 and isinstance(test.args[0], ast.Name)):
            return False
        wanted = test.args[1].elts if isinstance(test.args[1], ast.Tuple) else [test.args[1]]
        names = {last_name(w) for w in wanted}
        if None in names:
            return False
        program, held = self.program, []
        for value, scope in program.values_of(test.args[0], fn, 4):
            value, scope = _handed_back(program, value, scope)
            klass = program._callee_symbol(value.func, scope) if isinstance(value, ast.Call) else None
            if not isinstance(klass, Klass):
                return False  # a value not built in sight: not settled
            held.append(klass)
        if not held:
            return False
        is_one = [klass.name in names or any(b.name in names for b in program.bases(klass)) or
                  any(n.rpartition(".")[2] in names for n in program.library_bases(klass)) for klass in held]
        return not any(is_one) if not negated else all(is_one)

    def apart_from_setups(self, fn: Function, conds: tuple) -> bool:
        """Every way to a call (its own tests and those of the calls into its function, a few
        up) takes a test that every process-group set-up's way rules out (`if args.do_prepare:
        prepare() elif args.do_train: train()` with the group set up in train alone): the call
        runs in a process that never joins a group. Where the ways into a function are not all
        known (a callback, mp.spawn's target), the tests inside it, which hold on every way, decide."""
        setups = self.__dict__.get("_setup_ways")
        if setups is None:
            # a set-up whose ways in are not all known (mp.spawn's target) keeps its own tests,
            # which hold on every way (pggan's `if args.mode == "train_multi":` inside the target)
            own = lambda e: tuple(c for c, _ in e.conds)
            setups = self.__dict__["_setup_ways"] = [
                way for f in self.functions for e in f.events if e.kind == "init"
                for way in (_ways(self.callers(), f, own(e), 3) or [frozenset(own(e))])]
            if not setups and self.program.uses_lightning():
                # no init_process_group: Lightning's Trainer starts the ranks (`if args.mode ==
                # "train": trainer.fit(...)` beside an `average` mode that only writes a file)
                tests_of = lambda f, c: tuple(t for t, _ in f.__dict__.get("_call_conds", {}).get(id(c), ()))
                setups = self.__dict__["_setup_ways"] = [
                    way for f in self.functions for c in f.own_calls
                    if last_name(c.func) == "Trainer" and (self.program.qualify(c.func, f) or "").startswith(
                        ("pytorch_lightning", "lightning", "pl."))
                    for way in (_ways(self.callers(), f, tests_of(f, c), 3) or [frozenset(tests_of(f, c))])]
        if not setups:
            return False
        own = tuple(c for c, _ in conds)  # (its own tests hold on every way, known or not)
        mine = _ways(self.callers(), fn, own, 3) or [frozenset(own)]
        return _ruled_apart(mine, setups)

    def apart_from_siblings(self, fn: Function) -> bool:
        """fn is a method that no instance joining a process group runs: the group is set up only
        in overrides of sibling classes (LayoutFormer++'s DSTrainer._setup_experiment calls
        deepspeed.init_distributed; its MultiTaskTrainer keeps the base's, which sets up nothing,
        so the loaders MultiTaskTrainer builds are the one-process run's), or on ways fn's own
        ways rule out (apart_from_setups' reading: the inference command's generator). A set-up
        in a class outside the family (a helper object the trainer holds) may run beside fn: not
        apart."""
        klass = self.program._class_of_fn(fn) if fn.cls is not None and fn.parent is None else None
        if klass is None or isinstance(fn.node, ast.Module):
            return False
        memo = self.__dict__.setdefault("_apart_siblings", {})
        if id(fn) not in memo:
            memo[id(fn)] = self._apart_from_siblings(fn, klass)
        return memo[id(fn)]

    def _apart_from_siblings(self, fn: Function, klass) -> bool:
        program, callers = self.program, self.callers()
        runners = [k for k in [klass, *program._descendants(klass)] if program.method(k, fn.name) is fn]
        lines = {k for r in runners for k in [r, *program.bases(r)]}  # what an instance running fn is
        kin = {klass, *program.bases(klass)}
        mine = None  # the tests on each way an instance running fn is built
        sibling = False
        for f in self.functions:
            for call in f.own_calls:
                if last_name(call.func) not in SETUP_CALLS:
                    continue
                owners = [program._class_of_fn(f)] if f.cls is not None and f.parent is None else \
                    [program._class_of_fn(c) if c.cls is not None and c.parent is None else None
                     for c, _ in callers.get(f, [])]
                if owners and all(o is not None and o not in lines and kin & {o, *program.bases(o)} for o in owners):
                    sibling = True  # (a sibling's override, or a helper only a sibling's methods call)
                    continue
                if mine is None:
                    # (the functions that name a class running fn - build it, or hand it out as
                    # `get_trainer(args)` does - and the tests on each way to them)
                    namers = [g for g in self.functions if g.node is not None and g.cls not in runners and any(
                        n.__class__ is ast.Name and n.id in names and program.symbol(n.id, g) in runners
                        for n in g.own)] if (names := {k.name for k in runners}) else []
                    mine = [way for g in namers for way in (_ways(callers, g, (), 5) or [frozenset()])] or [frozenset()]
                conds = tuple(c for c, _ in f.__dict__.get("_call_conds", {}).get(id(call), ()))
                theirs = _ways(callers, f, conds, 5) or [frozenset(conds)]
                if not _ruled_apart(mine, theirs):
                    return False
        return sibling

    def _switches(self) -> frozenset:
        """The switches the process group is set up under (`if opts.shard: init_process_group()`)."""
        if not hasattr(self, "_switch_set"):
            # any test, not only a plain flag: `if opt["dist"]:`, `if args.world_size > 1:`
            conds = {c for fn in self.functions for e in fn.events if e.kind == "init" for c, _ in e.conds}
            # and those a DistributedDataParallel wrapper is built under: the test that picks the
            # wrapped model picks the distributed run (`if torchrun_is_running(): return DDP(m)`,
            # the group set up under another test), so its `else:` is the one-process run's
            wrapped = {c for fn in self.functions for call, _, _ in fn.calls
                       if self.program.ddp_call(call, fn)
                       for c, _ in fn.__dict__.get("_call_conds", {}).get(id(call), ())}
            # (not a test whose other side wraps a model too: `if implicit: DDP(net) else:
            # DDP(model)` picks what is wrapped, not whether the run is distributed)
            conds |= {c for c in wrapped if _SWITCH_LIKE.search(c) and _negated(c) not in wrapped}
            # the tests each set-up runs under, by the function it is in
            own = {fn: {c for e in fn.events if e.kind == "init" for c, _ in e.conds}
                   for fn in self.functions if any(e.kind == "init" for e in fn.events)}
            # and the tests around a call of a helper that sets the group up (`if opt["dist"]:
            # init_dist("pytorch")`), a few calls up
            starters = set(own)
            open_sides = set()  # call tests on whose side the helper does set the group up
            # a count test around a call into a set-up whose own count test it contradicts
            # (`if len(gpus) > 1: spawn(run) else: run(0)`, run setting up under `if len(gpus)
            # == 1: ... else:`): that side sets nothing up, whatever the texts say
            shut: dict[str, bool] = {}  # (worked out anew each round, as the ways grow)
            # the tests on each way into a set-up, with the function each is read in
            ways = {fn: [tuple((c, fn) for c, _ in e.conds) for e in fn.events if e.kind == "init"][:MAX_SETUP_WAYS]
                    for fn in own}
            for _ in range(3):
                calls = [(fn, e) for fn in self.functions for e in fn.events  # (mp.spawn's ref too)
                         if e.kind in ("call", "ref") and starters.intersection(e.targets)]
                conds |= {c for _, e in calls for c, _ in e.conds}
                # `if num_gpus > 1: spawn(train) else: train(0)` whose train sets up only under
                # `if num_gpus > 1:`: the `else:` call sets nothing up (HiFi-GAN); `if generate:
                # Trainer(...)` and past it the training that spawns: both sides do (lightweight-gan)
                open_sides |= {c for _, e in calls for c, _ in e.conds
                               if not any(_negated(c) in own.get(t, ()) for t in e.targets)}
                shut.clear()
                for caller, e in calls:
                    held = [way for t in e.targets for way in ways.get(t, ())]
                    for c, _ in e.conds:
                        if held and all(_count_contradicted(c, caller, way) for way in held):
                            shut.setdefault(c, True)
                        else:
                            shut[c] = False
                    if not isinstance(caller.node, ast.Module):
                        mine = ways.setdefault(caller, [])
                        for way in held:
                            if len(mine) < MAX_SETUP_WAYS and not any(
                                    _count_contradicted(c, caller, way) for c, _ in e.conds):
                                joined = tuple((c, caller) for c, _ in e.conds) + way
                                if joined not in mine:
                                    mine.append(joined)
                grown = starters | {fn for fn, _ in calls if not isinstance(fn.node, ast.Module)}
                if grown == starters:
                    break
                starters = grown
            self._switch_set = Switches(conds)
            self._switch_set.open = frozenset(open_sides)
            self._switch_set.shut = frozenset(c for c, closed in shut.items() if closed)
        return self._switch_set

    def only_guarded(self, fn: Function, depth: int = 6, stack: tuple = (),
                     inside: Optional[ast.AST] = None) -> Optional[bool]:
        """True when every way into fn passes a rank test; None when nothing calls it. inside:
        a call in fn; the ways in whose constants never reach it (ruled_out) do not count."""
        # Answered once per (function, depth, call): the ways in fan out and meet again (joliGEN's
        # 87 option fields asked 43,877 times). The stack only matters where a way in goes round
        # a cycle: an answer that met one is not kept.
        memo = self.__dict__.setdefault("_guarded_memo", {})
        key = (id(fn), depth, id(inside) if inside is not None else 0)
        if key in memo:
            return memo[key]
        cycles = self.__dict__.get("_guard_cycles", 0)
        found = self._only_guarded(fn, depth, stack, inside)
        if self.__dict__.get("_guard_cycles", 0) == cycles:
            memo[key] = found
        return found

    def mirrored_side(self, caller: Function, call: ast.AST) -> bool:
        """The call sits on one side of a plain test whose other side makes the same call under a
        rank test (`if cfg["DDP"]["flag"]: if dist.get_rank() == 0: save(...)` / `else: save(...)`):
        the test is the script's own switch between its distributed way, where one rank calls,
        and its one-process way, where this call runs."""
        if not isinstance(call, ast.Call) or isinstance(caller.node, ast.Module):
            return False
        name = last_name(call.func)
        path = reaching._path_to(caller.node, call) if name else None
        owner = next(((o, f) for _, _, o, f in reversed(path or ()) if isinstance(o, ast.If)), None)
        if owner is None or self.program.ranks.guard(owner[0].test, caller) is not None:
            return False
        other = owner[0].orelse if owner[1] == "body" else owner[0].body
        return any(isinstance(sub, ast.If) and self.program.ranks.guard(sub.test, caller) is not None and any(
            isinstance(c, ast.Call) and last_name(c.func) == name for stmt in sub.body for c in walk(stmt))
            for stmt in other for sub in walk(stmt))

    def _only_guarded(self, fn: Function, depth: int, stack: tuple, inside: Optional[ast.AST]) -> Optional[bool]:
        if fn.rank_only:
            return True
        if fn.cls is not None and fn.name != "__init__" and fn.parent is None and self._built_only_guarded(fn.cls):
            return True  # `if rank == 0: callbacks.append(Saver(path))`: no other rank holds a Saver
        # (a reference - mp.spawn's target - is no call whose arguments decide fn's tests)
        sites = [(caller, event) for caller, event in self.callers().get(fn, [])
                 if event.kind != "call" or not ruled_out(fn, inside, event.node, event.guards)]
        if not sites:
            return None
        if fn in stack:
            self.__dict__["_guard_cycles"] = self.__dict__.get("_guard_cycles", 0) + 1
            return False
        if depth <= 0:
            return False
        live = 0
        for caller, event in sites:
            if rank_guards(event.guards) or _single_process(event.conds, self._switches(), self.wraps_ddp()) \
                    or self.mirrored_side(caller, event.node):
                live += 1
                continue
            if caller.node is caller.module.file.tree:
                return False
            if self.in_another_command(caller):
                continue  # a way from a command (or a registry's trainer) that never joins a group
            if caller.cls is not None and self.overridden_in_the_run(caller):
                # a base's `save()` calling the helper with no rank test, where every class the
                # run builds has its own save (tdpo's BasicTrainer under the FSDPTrainer the
                # launch picks): no way in
                continue
            way = self.only_guarded(caller, depth - 1, stack + (fn,))
            if way is None and caller.cls is not None and not caller.name.startswith(("on_", "_on_", "__")):
                continue  # a method nothing calls (sparseml's exporter's `export()`): no way in
            if not way:
                return False
            live += 1
        if not live:
            return None
        return not self._both_sides(sites, depth, stack + (fn,))

    def overridden_in_the_run(self, fn: Function) -> str:
        """_overridden_in_the_run, worked out once per function (each way into a helper asks it)."""
        memo = self.__dict__.setdefault("_overridden_memo", {})
        if id(fn) not in memo:
            memo[id(fn)] = self._overridden_in_the_run(fn)
        return memo[id(fn)]

    def _overridden_in_the_run(self, fn: Function) -> str:
        """A base class's method reached only as `self.m()`, where every class that runs this very
        method (the base, a subclass that does not override it) is built only on the one-process
        side of the set-up's switch, and a subclass overrides it (EEG-GAN: `GANTrainer.training`
        calls `self.save_checkpoint()`, the spawned ranks run a GANDDPTrainer whose own
        save_checkpoint writes on rank 0; the plain GANTrainer is the one-process run's). The
        reason, or ""."""
        klass = fn.cls
        if klass is None or isinstance(fn.node, ast.Module):
            return ""
        sites = self.callers().get(fn, [])
        switches, ddp = self._switches(), self.wraps_ddp()

        def way(event) -> str:
            node = event.node
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                return ""
            owner = node.func.value
            if isinstance(owner, ast.Name) and owner.id == "self":
                return "self"  # dispatched on the instance: the class built decides
            if isinstance(owner, ast.Name) and self.program.lookup(owner.id, fn_of(event)) and \
                    not _single_process(event.conds, switches, ddp):
                # `trainer.train()` of `trainer = TrainerDDP(...) if n_gpus > 1 else Trainer(...)`
                # (code_sample's speaker trainer): the object's class decides as well, where the
                # source shows where each class is built
                return "object"
            if isinstance(owner, ast.Call) and last_name(owner.func) == "super" and event.guards:
                return "guarded"  # an override's `if self.rank == 0: super().save_checkpoint(...)`
            return "one process" if _single_process(event.conds, switches, ddp) else ""

        owners = {id(e): caller for caller, e in sites}

        def fn_of(event) -> Function:
            return owners[id(event)]

        ways = [way(e) for _, e in sites]
        if not ways or "" in ways or not {"self", "object"} & set(ways):
            return ""
        program = self.program
        family = [klass, *program._descendants(klass)]
        overriding = [k for k in family if k is not klass and program.method(k, fn.name) is not fn]
        running = [k for k in family if program.method(k, fn.name) is fn]
        if not overriding:
            return ""
        built = 0
        for f in self.functions:
            conds_of = f.__dict__.get("_call_conds", {})
            for c in f.own_calls:
                if program.callee(c.func, f) in running:
                    if not _single_process(conds_of.get(id(c), ()), switches, ddp):
                        return ""
                    built += 1
        if not built:
            if "object" in ways or any(k in program.built_classes for k in family):
                return ""  # built some other way (a registry, a factory): not told apart here
            return f"no {klass.name} (nor a class inheriting its {fn.name}()) is built"
        return (f"{klass.name} runs {fn.name}() only where the run is one process; the distributed "
                f"run's {overriding[0].name} has its own")

    def _built_only_guarded(self, klass) -> bool:
        """Every instance of the local class (or of a local subclass) is built under a rank test:
        its methods run only on the ranks that hold one. False where the source builds none (a
        framework may), or hands the class itself on (`callbacks=[Saver]`: built elsewhere)."""
        memo = self.__dict__.setdefault("_built_guarded", {})
        if id(klass) in memo:
            return memo[id(klass)]
        memo[id(klass)] = False  # (a cycle: not known)
        builds, handed = self._class_uses()
        program = self.program
        family = [klass, *(k for k in program.classes if klass in program.bases(k))]
        sites = [site for k in family for site in builds.get(id(k), ())]
        found = bool(sites) and not any(id(k) in handed for k in family) and \
            all(_on_rank_zero(guards) or self.only_guarded(fn) is True for fn, guards in sites)
        memo[id(klass)] = found
        return found

    def _class_uses(self) -> tuple[dict, set]:
        """(class id -> the (function, guards) of each call building it, the ids of the classes
        a name hands on other than by calling it), over the reached functions, once."""
        if not hasattr(self, "_class_use"):
            program = self.program
            named = {k.name for k in program.classes}
            builds: dict[int, list] = {}
            handed: set[int] = set()
            for fn in self.functions:
                called = set()
                for call, guards, _ in fn.calls:
                    if call.func.__class__ is ast.Name and call.func.id in ("isinstance", "issubclass"):
                        # (`isinstance(x, Saver)` tests a class, hands none on)
                        called.update(id(n) for a in call.args[1:] for n in walk(a))
                    if call.func.__class__ is ast.Name and call.func.id in named:
                        called.add(id(call.func))
                        target = program._callee_symbol(call.func, fn)
                        if target.__class__ is Klass:
                            builds.setdefault(id(target), []).append((fn, guards))
                    elif call.func.__class__ is ast.Attribute and call.func.value.__class__ is ast.Name and \
                            call.func.value.id in named:
                        # `Logger.load_cpk(path, ...)`: a static method called through the class
                        # builds nothing and hands no class on
                        called.add(id(call.func.value))
                for n in fn.own_of(ast.Name):
                    if n.id in named and id(n) not in called \
                            and n.ctx.__class__ is ast.Load:
                        target = program._callee_symbol(n, fn)
                        if target.__class__ is Klass:
                            handed.add(id(target))
            self._class_use = (builds, handed)
        return self._class_use

    def _both_sides(self, sites: list, depth: int, stack: tuple) -> bool:
        """Two ways in under the two sides of one rank test, in a caller every rank runs
        (`if rank == 0: t = Trainer(logger) else: t = Trainer()`): together every rank."""
        sides: dict[tuple, set] = {}
        for caller, event in sites:
            if len(event.guards) != 1 or _single_process(event.conds, self._switches(), self.wraps_ddp()):
                continue  # (`elif not engine.distributed:` is no rank's side of a distributed run)
            if caller.node is not caller.module.file.tree and \
                    self.only_guarded(caller, depth - 1, stack) is not False:
                continue
            guard = event.guards[0]
            sides.setdefault((id(caller), guard.branch), set()).add(guard.side)
        return any(len(found) == 2 for found in sides.values())

    def off_at_launch_only(self, fn: Function) -> bool:
        """Every way into fn is a call under a test the options, as launched, make false (a
        trainer class built only under `elif config.trainer == "gan":` with the launch's config
        naming another), here or a few callers up: what fn does, the run never does."""
        # (a plain flag is not read so: `if args.do_train:` around the whole training, a
        # store_true, is the run launched, not one switched off - as save_facts reads such flags)
        return bool(self.every_way_in(fn, lambda conds, _caller: off_at_launch(
            tuple((c, f) for c, f in conds if not f), self.program))) or self._picked_off_at_launch(fn) \
            or self._called_only_where_dead(fn)

    def _called_only_where_dead(self, fn: Function) -> bool:
        """A method of a live class (every method of a class the run builds is read, for the hooks
        a framework calls) that its own class calls only inside blocks no run takes (`if
        self.cfg['task'] == 'fine_tuning_clam': self._train_finetune_epoch(...)` with `task: mcat`
        in every config: the walker skipped that side, so the call is no way in): the class names
        it itself, so it is no hook, and the run never calls it."""
        if fn.cls is None or fn.parent is not None or fn.node is None or fn in self.callers():
            return False
        named = False
        for method in fn.cls.methods.values():
            dead = method.__dict__.get("_dead_spans") if method is not None else None
            if not dead or method.node is None:
                continue
            for node in walk(method.node):
                if node.__class__ is ast.Call and node.func.__class__ is ast.Attribute and node.func.attr == fn.name \
                        and node.func.value.__class__ is ast.Name and node.func.value.id == "self":
                    if not any(start <= node.lineno <= end for start, end in dead):
                        return False  # (called on a live side too: a way in the walk did not record)
                    named = True
        return named

    def _picked_off_at_launch(self, fn: Function) -> bool:
        """Every call into fn is through a name its caller binds to fn only under a test the
        options as launched make false - a store_true flag too - and to another function where
        they hold (`if args.k400: loader_method = get_data_k400 ... else: loader_method =
        get_data_ucf`, then `loader_method(...)`): the launch picks the other one. (A flag around
        the call itself is the run the user asks for by name; a flag that picks among
        alternatives is not.)"""
        sites = self.callers().get(fn, [])
        return bool(sites) and all(event.kind == "call" and event.node.__class__ is ast.Call and
                                   self._bound_off_at_launch(caller, event.node.func, fn) for caller, event in sites)

    def _bound_off_at_launch(self, caller: Function, func: ast.AST, target: Function) -> bool:
        """The name called binds target only under tests the launch makes false, and something
        else on a side it takes (a few bindings at most: a table built by hand is not a pick)."""
        if func.__class__ is not ast.Name or isinstance(caller.node, ast.Module):
            return False
        program = self.program
        bindings = [node for node in caller.own_of(ast.Assign) if len(node.targets) == 1
                    and node.targets[0].__class__ is ast.Name and node.targets[0].id == func.id]
        if len(bindings) < 2 or len(bindings) > 20:
            return False
        off = []
        for node in bindings:
            conds = tuple(c for test, side in tests_around(caller.node, node) for c in side_conds(test, side))
            off.append(bool(conds) and bool(off_at_launch(conds, program)))
        mine = [target in program.reference(node.value, caller) for node in bindings]
        return any(mine) and all(o for o, m in zip(off, mine) if m) and any(not o for o, m in zip(off, mine) if not m)

    def never_run(self, fn: Function) -> bool:
        """Every way into fn passes a test the constants its caller gets settle false (`if not
        self.enabled: return` above the call, every construction handing `enabled=False`), here
        or a few callers up: no run ever gets there. (A test the options as launched make false
        is a run the user may ask for by name: off_at_launch_only, read per rule.)"""
        memo = self.__dict__.setdefault("_never_run", {})
        if fn not in memo:
            memo[fn] = bool(self.every_way_in(fn, self.false_test))
        return memo[fn]

    def false_test(self, conds: tuple, fn: Function) -> str:
        """The first of the tests around a statement of fn that the constants every way into fn
        hands it settle false (as never_run reads them): "" where none is."""
        for cond, flag in conds:
            test = _test_of(cond) if len(cond) < 400 else None
            if test is not None and _truth_by_constants(self.callers(), fn, test, self.program, own_attrs=True) is False:
                return cond
        return ""

    def switched_on_only(self, fn: Function) -> list[str]:
        """The switches (`args.val_only`, store_true options, declared_off) one of which every way
        into fn passes, here or a few callers up: fn runs only on a run launched with one of them
        given ([] where some way in needs none)."""
        return self.every_way_in(fn, lambda conds, _caller: next(
            (c for c, flag in conds if flag and declared_off(c, self.program)), ""))

    def every_way_in(self, fn: Function, pick, depth: int = 3, stack: tuple = ()) -> list[str]:
        """What `pick` finds (a test's text, "" for none) in the tests around each call into fn,
        or around a call into a caller of it, a few callers up; [] where some way in has none
        (or fn is not called at all). A hook a framework calls (a LightningDataModule's
        `train_dataloader`, no call in the source) is reached through its object's constructions
        (`dm = KVDataModule(...)` under `if "kv" in args.root:`)."""
        if isinstance(fn.node, ast.Module) or fn in stack or depth <= 0:
            return []
        sites = self.callers().get(fn, [])
        if not sites and fn.cls is not None and fn.name != "__init__":
            init = fn.cls.methods.get("__init__")
            return self.every_way_in(init, pick, depth - 1, stack + (fn,)) \
                if init is not None and init.node is not None else []
        found: list[str] = []
        for caller, event in sites:
            if event.kind != "call":
                return []
            here = pick(event.conds, caller)
            up = [here] if here else self.every_way_in(caller, pick, depth - 1, stack + (fn,))
            if not up:
                return []
            found.extend(up)
        return list(dict.fromkeys(found))

    def taken_anyway(self, fn: Function, conds: tuple) -> tuple:
        """conds without the `not X` sides of a distributed switch that every way into fn takes
        (X a parameter no call hands a true value: `def train(..., ddp=False)` called without ddp
        in a script that sets up the process group): that side is the distributed run's too,
        whatever its name says. (An engine's switch left off - `self.deepspeed` - is not one:
        without it the run may be one process.)"""
        if not any(c.startswith("not ") for c, _ in conds):
            return conds
        callers = self.callers()
        return tuple((c, flag) for c, flag in conds
                     if not (c.startswith("not ") and UNIFORM_NAME.search(c[4:].rpartition(".")[2])
                             and never_true(callers, fn, c[4:], True, self.program)))

    def in_loop(self, fn: Function, depth: int = 4, stack: tuple = ()) -> bool:
        """Some way into fn passes through a loop (it runs more than once)."""
        if fn in stack or depth <= 0:
            return False
        for caller, event in self.callers().get(fn, []):
            if (event.loops > 0 and not self._loops_run_once(caller, event.node)) or \
                    self.in_loop(caller, depth - 1, stack + (fn,)):
                return True
        return False

    def _loops_run_once(self, fn: Function, node: ast.AST) -> bool:
        """Every loop of fn around node makes one pass at most as launched (`for epoch in
        range(1): train(model, loader)`: a course script's single epoch), so the call runs once."""
        around = [loop for loop, _ in _fn_loops(fn) if getattr(node, "lineno", 0) and
                  loop.lineno <= node.lineno <= loop.end_lineno]
        return bool(around) and all(runs_once_at_launch(loop, self.program) for loop in around)

    def mentions_rank(self, node: ast.AST, fn: Function, depth: int = 3, strict: bool = False,
                      placed: bool = False) -> bool:
        """The expression depends on the rank. strict: a rank handed on as `rank=` to a call
        (`Dataset(..., rank=rank)`, which may only cache or log on one rank) does not count.
        placed: a device counts too (`torch.device(f"cuda:{rank}")` formatted into a file's
        name names that rank's own file; for a dataset it only places the same data)."""
        # asked again for the same value at every step out of a name rebound many times (a path
        # extended under 200 tests): answered once per (value, scope, depth)
        memo = self.__dict__.setdefault("_mentions", {})
        key = (id(node), id(fn), depth, strict, placed)
        found = memo.get(key)
        if found is None:
            found = memo[key] = self._mentions_rank(node, fn, depth, strict, placed)
        return found

    def _sampler_class(self, value: ast.AST, fn: Function) -> bool:
        """The value is the DistributedSampler class itself (not an instance): handed to a
        dataset that builds it over its own items (pytorchvideo's `video_sampler=`), either
        side of a choice (`RandomSampler if single else DistributedSampler`)."""
        held = [value] if not isinstance(value, ast.Name) else [v for v, _ in self.program.values_of(value, fn, 1)]
        sides = [s for v in held for s in ((v.body, v.orelse) if isinstance(v, ast.IfExp) else (v,))]
        return any(isinstance(s, (ast.Name, ast.Attribute)) and last_name(s) == "DistributedSampler" for s in sides)

    def _mentions_rank(self, node: ast.AST, fn: Function, depth: int, strict: bool, placed: bool) -> bool:
        ranks = self.program.ranks
        passed_on = {id(n) for sub in walk(node) if strict and isinstance(sub, ast.Call)
                     for kw in sub.keywords if kw.arg in ("rank", "local_rank", "global_rank")
                     for n in walk(kw.value)}
        if strict:
            # `Dataset(..., seed=42 + rank)`: a seed decides the random draws each rank makes, not
            # which items it holds (maskvar's dummy datasets)
            passed_on |= {id(n) for sub in walk(node) if isinstance(sub, ast.Call)
                          for kw in sub.keywords if kw.arg in SEED_KEYWORDS | WRITTEN_FOLDER_KEYWORDS
                          for n in walk(kw.value)}
        if not placed:
            passed_on |= _placement(node)
        # `torch.load(path, map_location=f"cuda:{rank}")`: where the loaded tensors go, never which
        # file or what it holds (an epoch read back from the checkpoint is no rank's own number)
        passed_on |= {id(n) for sub in walk(node) if sub.__class__ is ast.Call and last_name(sub.func) == "load"
                      for arg in [*sub.args[1:], *(k.value for k in sub.keywords if k.arg == "map_location")]
                      for n in walk(arg)}
        passed_on |= unreturned_arguments(self.program, node, fn)  # set_seed(args, rank) returns args
        if strict:
            # `local_rank == 0`, `rank in (-1, 0)`: a flag (who prints, who writes the cache:
            # VL-T5's verbose, VL-BERT's cache_db), not a number that picks a shard
            passed_on |= {id(n) for sub in walk(node) if sub.__class__ is ast.Compare
                          for part in (sub.left, *sub.comparators) for n in walk(part)}
        if strict:  # `embed(model, items, local_rank)` whose body only does `items.to(local_rank)`
            passed_on |= self._placed_by_callee(node, fn)
            # the GPU a process runs on (`torch.cuda.current_device()`, `torch.device(...)`): a
            # placement wherever it flows (DSKD's teacher holder built on it), never a shard
            passed_on |= {id(n) for sub in walk(node) if sub.__class__ is ast.Call
                          and last_name(sub.func) in ("current_device", "device") for n in walk(sub)}
        for sub in walk(node):
            if id(sub) in passed_on:
                continue  # Dataset(..., rank=rank): handed on (to cache or log on one rank), not a shard
            if isinstance(sub, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)) and ranks.is_rank(sub, fn):
                if strict and isinstance(sub, ast.Name) and all(
                        isinstance(v, ast.Call) and last_name(v.func) in ("current_device", "device")
                        for v, _ in self.program.values_of(sub, fn, 1)):
                    continue  # `device = torch.cuda.current_device()` handed on: a placement
                return True
            if isinstance(sub, ast.Call) and (last_name(sub.func) or "") in ("shard", "split_dataset_by_node"):
                return True
            if isinstance(sub, ast.Call) and any(self._sampler_class(kw.value, fn) for kw in sub.keywords):
                return True  # `Kinetics(..., video_sampler=DistributedSampler)`: the dataset samples its rank's share
        if depth <= 0:
            return False
        for sub in walk(node):
            # `config["model"]` of `config = {"model": ..., "local_rank": ...}`: that key's value
            # alone, not the dict's every entry
            if isinstance(sub, ast.Subscript) and isinstance(sub.value, (ast.Name, ast.Attribute)) and \
                    isinstance(sub.slice, ast.Constant) and isinstance(sub.slice.value, str):
                # a config read by a field's name (`config["model"]`): that field, judged by its
                # name (is_rank above: `config["local_rank"]`) or its value in a dict literal
                held = self.program.values_of(sub.value, fn, 1)
                if held and all(isinstance(v, ast.Dict) for v, _ in held):
                    # a dict literal: that key's value alone (not the read of a rank's own file,
                    # `pickle.load(open(f"train-{rank}.pkl"))["x"]`: that value is the rank's)
                    passed_on.add(id(sub.value))
                    for value, scope in held:
                        for key, item in zip(value.keys, value.values):
                            if isinstance(key, ast.Constant) and key.value == sub.slice.value and \
                                    self.mentions_rank(item, scope, depth - 1, strict, placed):
                                return True
                    # `self.info["dir"] = f"runs/rank{rank}"` in another method of the class: what
                    # that key is given there
                    if any(self.mentions_rank(item, scope, depth - 1, strict, placed)
                           for item, scope in self._stored_items(sub, fn)):
                        return True
        for sub in walk(node):
            if id(sub) in passed_on:
                continue
            if sub.__class__ is ast.Attribute and sub.value.__class__ is ast.Name and sub.value.id != "self" and \
                    (sub.value.id in fn.params or sub.value.id in fn.kwonly) and not fn.bindings.get(sub.value.id) \
                    and dotted(sub) not in fn.attr_bindings:
                # `config.model_dir` of the config the caller handed in, where it set
                # `config.model_dir = join(config.root_dir, "models")` (the root holding the rank)
                if any(value is not sub and self.mentions_rank(value, scope, depth - 1, strict, placed)
                       for value, scope in self.program.values_of(sub, fn, 3)):
                    return True
            if isinstance(sub, ast.Name) or (isinstance(sub, ast.Attribute) and dotted(sub or "") and
                                             isinstance(sub.value, ast.Name) and (
                                                 sub.value.id == "self" or dotted(sub) in fn.attr_bindings)):
                # (and `args.save_dir` of `args.save_dir = join(args.save_dir, f"ensemble_{rank}")`
                # in this function: what it was set to)
                held = [(v, fn) for v in fn.attr_bindings.get(dotted(sub), ())] \
                    if sub.__class__ is ast.Attribute and sub.value.id != "self" else self._bound_here(sub, fn)
                for value, scope in held:
                    if value is not sub and self.mentions_rank(value, scope, depth - 1, strict, placed):
                        return True
                if sub.__class__ is ast.Name:
                    # `data, n = load(path)` where load returns `(Lines(path, rank, world), n)`:
                    # that element of what the local function returns
                    for value, scope in self.program.unpacked(sub.id, fn):
                        if self.mentions_rank(value, scope, depth - 1, strict, placed):
                            return True
                    if not strict and self._rank_strided_item(sub, fn):
                        return True
            if isinstance(sub, ast.Call):  # shard_for_this_rank(ds): what the local helper returns
                targets, _ = self.program.resolve(sub.func, fn)
                for target in targets:
                    if isinstance(target.node, ast.Module) or target.name == "__init__":
                        continue
                    for ret in target.returned:
                        if self.mentions_rank(ret, target, depth - 1, strict, placed):
                            return True
        return False

    def _rank_strided_item(self, name: ast.Name, fn: Function) -> bool:
        """The name is the target of every loop of fn that binds it, each over this rank's
        stride of the items (`for i in tqdm(np.arange(rank, len(items), world_size))`, `for x in
        items[rank::world]`): an item no other rank holds, so a file named after it is this
        rank's own. Not a count of a rank's shard (`range(len(shard))`: the same numbers on
        every rank)."""
        if fn.node is None or fn.bindings.get(name.id):
            return False
        loops = [n for n in fn.own if n.__class__ in (ast.For, ast.AsyncFor)
                 and any(t.__class__ is ast.Name and t.id == name.id for t in walk(n.target))]
        return bool(loops) and all(self._rank_stride(loop.iter, fn, 2) for loop in loops)

    def _rank_stride(self, value: ast.AST, fn: Function, hops: int) -> bool:
        """The value is a rank-strided selection: `range(rank, n, world)` (`np.arange` too) with
        the rank for its start, or a slice `[rank::world]`, also through a name bound to one and
        through a one-argument wrapper (`tqdm(...)`, `enumerate(...)`, a progress helper)."""
        if value.__class__ is ast.Call:
            name = last_name(value.func) or ""
            if name in ("range", "arange") and len(value.args) >= 2:
                return self.program.ranks.is_rank(value.args[0], fn)
            if name not in ("len", "int", "sum", "min", "max", "abs") and len(value.args) == 1 and hops > 0:
                return self._rank_stride(value.args[0], fn, hops - 1)
            return False
        if value.__class__ is ast.Subscript and value.slice.__class__ is ast.Slice:
            return value.slice.lower is not None and value.slice.step is not None and \
                self.program.ranks.is_rank(value.slice.lower, fn)
        if value.__class__ is ast.Name and hops > 0:
            # (`else: indices = np.arange(len(items))` of the one-process run: no other rank)
            held = [(v, scope) for v, scope in self.program.values_of(value, fn, 1)
                    if not one_process_side(self.program, v, scope)]
            return bool(held) and all(v is not value and self._rank_stride(v, scope, hops - 1)
                                      for v, scope in held)
        return False

    def _stored_items(self, read: ast.Subscript, fn: Function) -> list:
        """(value, method) of each `self.<dict>["key"] = value` in fn's class for a read of
        `self.<dict>["key"]`."""
        owner = dotted(read.value) or ""
        klass = self.program._class_of_fn(fn) if owner.startswith("self.") else None
        if klass is None:
            return []
        return [(n.value, method) for method in klass.methods.values() if method.node is not None
                for n in method.own if n.__class__ is ast.Assign for t in n.targets
                if t.__class__ is ast.Subscript and dotted(t.value) == owner and t.slice.__class__ is ast.Constant
                and t.slice.value == read.slice.value]

    def _bound_here(self, name: ast.AST, fn: Function, depth: int = 1) -> list:
        """(value, scope) of what a name may hold where it is read: the bindings that reach it
        (reaching.py; the parameter's arguments where a way reaches the function's start),
        not one made on the other side of an `if` (`if streaming: ds = split_by_node(ds)`
        `else: DistributedSampler(ds)`); every binding where that cannot be told."""
        if isinstance(name, ast.Name):
            bound = reaching.reaching_values(fn.node, name.id, name, params=True)
            if bound is not None:
                found = [(v, fn) for v in bound if not isinstance(v, ast.arg)]
                if len(found) < len(bound):  # the parameter as the callers pass it
                    found += [(v, s) for v, s in self.program.values_of(name, fn, depth) if s is not fn]
                if all(not isinstance(v, ast.Name) or s is not fn for v, s in found):
                    return found  # (a caller's name is judged in the caller, by the recursion)
                # a plain `x = y` in the way: what y holds, as every binding would say
        return self.program.values_of(name, fn, depth)

    def _placed_by_callee(self, node: ast.AST, fn: Function) -> set[int]:
        """The arguments of local calls in node whose parameter the callee only uses to place
        tensors (`.to(local_rank)`, `.cuda(rank)`, `device=rank`) or to test who it is (`if
        local_rank == 0: log(...)`, `disable=local_rank != 0`): a device or a flag, not a shard."""
        cache = self.__dict__.setdefault("_callee_placements", {})
        if (id(node), id(fn)) in cache:
            return cache[(id(node), id(fn))]
        placed: set[int] = set()
        cache[(id(node), id(fn))] = placed
        for call in walk(node):
            if not isinstance(call, ast.Call) or not any(isinstance(a, (ast.Name, ast.Attribute, ast.Call))
                                                         for a in (*call.args, *(k.value for k in call.keywords))):
                continue
            for target in self.program.resolve(call.func, fn)[0]:
                if target.node is None or isinstance(target.node, ast.Module):
                    continue
                for param in target.params:
                    value = argument_at(target, call, param)
                    if value is None or not any(n is value for n in walk(call)):
                        continue  # a default, not this call's argument
                    if self._only_places(target, param, 2):
                        placed.update(id(n) for n in walk(value))
        return placed

    def _only_places(self, target: Function, param: str, depth: int) -> bool:
        """The callee reads its parameter only to place tensors or to test who it is, itself or
        in the local functions it hands the parameter on to as it is (`PretrainDataset(...,
        local_rank)` whose `__init__` hands `local_rank` to a method that only asks
        `if local_rank == 0:` before writing a cache): a flag, not a shard. Never read at all
        (a Dataset taking `rank, world` it ignores): no shard either."""
        memo = self.__dict__.setdefault("_only_places_memo", {})
        key = (id(target), param, depth)
        if key in memo:
            return memo[key]
        memo[key] = False  # (a parameter handed round in a circle proves nothing)
        where = _placement(target.node) | _compared_to_constants(target.node) | _progress_bar_places(target.node)
        uses = [n for n in walk(target.node) if n.__class__ is ast.Name and n.id == param
                and n.ctx.__class__ is ast.Load]
        if not uses:
            found = not _reads_locals(target.node)
        else:
            handed = {}  # id(use) -> the local call it is an argument of, as it is
            if depth > 0:
                for call in walk(target.node):
                    if call.__class__ is ast.Call:
                        for arg in (*call.args, *(kw.value for kw in call.keywords)):
                            if arg.__class__ is ast.Name and arg.id == param:
                                handed[id(arg)] = call
            found = True
            stored = {id(n.value): n.targets[0].attr for n in walk(target.node) if n.__class__ is ast.Assign
                      and len(n.targets) == 1 and _on_self(n.targets[0])} if target.cls is not None else {}
            for use in uses:
                if id(use) in where:
                    continue
                if id(use) in stored and _flag_field(target.cls, stored[id(use)]):
                    continue  # `self.rank = rank`, read only as `if self.rank == 0:` (a vocabulary's log)
                call = handed.get(id(use))
                callees = [t for t in self.program.resolve(call.func, target)[0]
                           if t.node is not None and not isinstance(t.node, ast.Module)] if call is not None else []
                given = [(t, p) for t in callees for p in t.params
                         if any(n is use for n in walk(argument_at(t, call, p) or ast.Pass()))]
                if not given or not all(self._only_places(t, p, depth - 1) for t, p in given):
                    found = False
                    break
        memo[key] = found
        return found

    def bound_name(self, fn: Function, call: ast.Call) -> str:
        for node in fn.own_of(ast.Assign, ast.AnnAssign, ast.keyword, ast.Return):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and (node.value is call or (
                    node.value.__class__ is ast.ListComp and node.value.elt is call) or (
                    # (`val_loader = cycle(DataLoader(val_ds, ...))`: the one thing the wrapper is handed)
                    node.value.__class__ is ast.Call and len(node.value.args) == 1 and node.value.args[0] is call
                    and not node.value.keywords)):
                # (`loaders = [DataLoader(ds, ...) for ds in sets]`: each is known by the list's name)
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                return last_name(targets[0]) or ""
            if node.__class__ is ast.Assign and node.value.__class__ is ast.Tuple and call in node.value.elts \
                    and node.targets[0].__class__ is ast.Tuple and len(node.targets[0].elts) == len(node.value.elts):
                # (`train_sampler, val_sampler = DistributedSampler(a), DistributedSampler(b)`:
                # each call is known by the name in its place)
                return last_name(node.targets[0].elts[node.value.elts.index(call)]) or ""
            if isinstance(node, ast.keyword) and node.value is call and node.arg:
                return node.arg
            if isinstance(node, ast.Return) and node.value is call and not isinstance(fn.node, ast.Module):
                return fn.name
        return ""


def _flag_field(klass, attr: str) -> bool:
    """Every read of `self.<attr>` in the class's methods compares it with constants (`if
    self.rank == 0:`) or with another field as it is (`self.cache_rank != self.cache_rank_only`,
    `self.cache_rank is not None`): the object keeps a flag of who it is, no shard (`i % self.world
    != self.rank` compares it with a computed number: a shard)."""
    reads, compared = 0, 0
    for method in klass.methods.values():
        if method.node is None:
            continue
        for node in walk(method.node):
            if node.__class__ is ast.Attribute and node.attr == attr and _on_self(node) and \
                    node.ctx.__class__ is ast.Load:
                reads += 1
            elif node.__class__ is ast.Compare:
                parts = [node.left, *node.comparators]
                fields = [p for p in parts if _on_self(p) and p.attr == attr]
                if len(fields) == 1 and all(p is fields[0] or p.__class__ is ast.Constant or _on_self(p)
                                            for p in parts):
                    compared += 1
    return reads == compared


def _progress_bar_places(node: ast.AST) -> set[int]:
    """The names a progress bar is told where to draw itself or whether to (`tqdm(paths,
    position=tqdm_rank)`, `disable=rank`): a rank read there picks a line of the terminal, no
    part of the data."""
    return {id(n) for call in walk(node) if call.__class__ is ast.Call and last_name(call.func) in ("tqdm", "trange")
            for kw in call.keywords if kw.arg in ("position", "disable") for n in walk(kw.value)}


def _compared_to_constants(node: ast.AST) -> set[int]:
    """The names compared with constants in node (`local_rank == 0`, `rank in [-1, 0]`): a rank
    read there decides who logs or caches, it picks no part of the data."""
    found: set[int] = set()
    for test in walk(node):
        if test.__class__ is not ast.Compare:
            continue
        parts = [test.left, *test.comparators]
        names = [p for p in parts if isinstance(p, ast.Name)]
        if len(names) == 1 and all(p is names[0] or isinstance(p, ast.Constant) or (
                isinstance(p, (ast.List, ast.Tuple, ast.Set)) and all(isinstance(e, ast.Constant) for e in p.elts))
                for p in parts):
            found.add(id(names[0]))
    return found


def _reads_locals(node: ast.AST) -> bool:
    """The function reads its names another way (`locals()`, `vars()`, `eval`)."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("locals", "vars", "eval", "exec")
               for n in walk(node))


def _statement_blocks(node: ast.AST):
    """The innermost-first statement lists of a function: each `body` / `orelse` / `finalbody`."""
    blocks = []
    for sub in walk(node):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(sub, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                blocks.append(block)
    return reversed(blocks)


def _on_rank_zero(guards: tuple) -> bool:
    """A rank test around the statement holds on rank 0 alone (`if rank == 0:`, not the other
    side of one: `if rank != 0: x = Stub() else: x = Saver()` builds on every rank)."""
    found = rank_guards(guards)
    return bool(found) and all(g.test.polarity == "zero" for g in found)  # (an else's test comes negated)


def guard_test(fn: Function, guard: Guard) -> Optional[ast.AST]:
    """The test of the `if` a guard stands for, on its body side (its text may be cut short)."""
    if guard.side != "body":
        return None
    ifs = fn.__dict__.get("_ifs_by_id")
    if ifs is None:
        ifs = fn.__dict__["_ifs_by_id"] = {id(n): n for n in fn.own if n.__class__ is ast.If}
    found = ifs.get(guard.branch)
    return found.test if found is not None else None


def loc(fn: Function, node: ast.AST) -> Location:
    return Location(fn.file.display, getattr(node, "lineno", None))


# Library dataset bases whose constructor runs hooks the subclass defines: (module prefix, hooks).
CONSTRUCTOR_HOOKS = (("torch_geometric.data.", ("download", "process")),
                     ("torch_geometric.datasets.", ("download", "process")),
                     ("dgl.data.", ("download", "process", "save")))
_HOOK_NAMES = frozenset(h for _, hooks in CONSTRUCTOR_HOOKS for h in hooks)


def _single_process(conds: tuple, switches: frozenset = frozenset(), ddp: bool = False) -> bool:
    """Under `if not args.distributed:` / `if not enable_fsdp:`, or `if not X:` where the process
    group is set up only under `if X:`: the run is not distributed there. ddp: the script wraps a
    model in DistributedDataParallel, so `not use_fsdp` / `not deepspeed` is its DDP path."""
    return any((said := _single_said(c))[0] == "single"
               or (said[1] and not (ddp and said[2]) and said[0] != "distributed")
               # (not where the group is set up on that side too: `if generate: Trainer(...)`
               # and, past its `return`, the training that sets it up again)
               or (c.startswith("not ") and (_unwrapped(c[4:]) in switches or _instance_switch(c[4:], switches))
                   and c not in getattr(switches, "open", ()))
               or (not c.startswith("not ") and c in _excluded(switches))
               for c, _ in conds)


@functools.lru_cache(maxsize=4096)
def _single_said(said: str) -> tuple:
    """(_negated_side, SINGLE matches, ENGINE_OFF matches) of a test's text, read once per text:
    every write after N early exits carries the N tests (a hostile script's 2,000)."""
    return _negated_side(said), bool(SINGLE.search(said)), bool(ENGINE_OFF.search(said))


def _negated_side(said: str) -> str:
    """A test's text on a switch named for its negation (ranks' NEGATED_SWITCH: `args.no_ddp`)
    turns the test round: "single" for `args.no_ddp` (the one-process side), "distributed" for
    `not args.no_ddp` / `not args.no_fsdp` (RelPose's `if not args.no_ddp: setup_ddp(...)`), ""
    for any other test (SINGLE read both as "not distributed")."""
    negated = said.startswith("not ")
    switch = said[4:] if negated else said
    name = switch.rpartition(".")[2]
    if not re.fullmatch(r"[\w.]+", switch) or not NEGATED_SWITCH.match(name):
        return ""
    if negated:
        return "distributed" if UNIFORM_NAME.search(name) or name.lower().endswith("fsdp") else ""
    return "single" if UNIFORM_NAME.search(name) else ""


def _unwrapped(said: str) -> str:
    """`a and b` for `(a and b)`: the text of an `else:` side's test is `not (a and b)`, while
    the switch it negates was said without the parentheses."""
    if not (said.startswith("(") and said.endswith(")")):
        return said
    depth = 0
    for i, ch in enumerate(said):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0 and i < len(said) - 1:
            return said  # `(a) and (b)`: the first parenthesis closes before the end
    return said[1:-1]


def _excluded(switches: frozenset) -> frozenset:
    """The flags a set-up's test requires false (`if world_size > 1 and not cfg.debug:
    mp.spawn(...)`): `cfg.debug` holds only where that set-up does not run (RALF's debug run is
    one process). Tests read as written: an `else:` side's text starts with `not `, not read."""
    got = getattr(switches, "_excluded", None)
    if got is None:
        found = set()
        for switch in switches:
            if switch.startswith("not ") or " and " not in switch:
                continue
            try:
                test = ast.parse(switch, mode="eval").body
            except SyntaxError:
                continue
            if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
                found.update(text(part.operand) for part in test.values
                             if isinstance(part, ast.UnaryOp) and isinstance(part.op, ast.Not)
                             and isinstance(part.operand, (ast.Name, ast.Attribute)))
        got = frozenset(found)
        try:
            switches._excluded = got  # (a Switches keeps it; a plain frozenset is asked again)
        except AttributeError:
            pass
    return got


_ONE_ATTRIBUTE = re.compile(r"^\w+\.(\w+)$")


def _instance_switch(cond: str, switches: frozenset) -> bool:
    """`engine.distributed` where a method sets the group up under `if self.distributed:`:
    the same flag read through an instance (Sigma's Engine)."""
    got = _ONE_ATTRIBUTE.match(cond)
    if cond.startswith("self.") and cond.count(".") >= 2 and cond[5:] in switches:
        return True  # `self.config.use_ddp` where `__main__` set up the group under `config.use_ddp`
    return bool(got) and not cond.startswith("self.") and f"self.{got.group(1)}" in switches


def _ways(callers: dict, fn: Function, conds: tuple, depth: int) -> Optional[list[frozenset]]:
    """The tests on each way to a call in fn: its own `conds` plus those around each call into
    fn (or reference to it handed on), `depth` calls up (at most 16 ways); above a caller whose
    own ways cannot be listed, the tests around its call alone. None where the ways are too
    many to list."""
    sites = callers.get(fn, []) if not isinstance(fn.node, ast.Module) else []
    if not sites or depth <= 0:
        return [frozenset(conds)] if isinstance(fn.node, ast.Module) or not sites else None
    ways: list[frozenset] = []
    for caller, event in sites:
        # (a function handed on - a callback, mp.spawn's target - is handed on only where the
        # tests around that reference hold: they hold on whatever way it is then called)
        here = tuple(c for c, _ in event.conds)
        # (where the caller's own ways in cannot be listed, the tests around this call still
        # hold on every way through it: fewer tests, a weaker answer, never a wrong one)
        above = _ways(callers, caller, here, depth - 1) or [frozenset(here)]
        ways.extend(way | frozenset(conds) for way in above)
        if len(ways) > 16:
            return None
    return ways


def _ruled_apart(mine: list, setups: list) -> bool:
    """Each of the ways (sets of tests) in `mine` takes a test that each set-up's way rules out."""
    return all(any(_exclusive(c, d) for c in way for d in setup) for way in mine for setup in setups)


def _exclusive(a: str, b: str) -> bool:
    """Two tests that never hold together: one the other's `not`, or one option held to values
    that never meet (`mode == 'single'` beside `args.mode == 'multi'`, pggan; `mode in ['CPU',
    'GPU']` beside `mode == 'DDP'`). The option is matched by its last name (`mode = args.mode`
    copies it)."""
    if a == f"not {b}" or b == f"not {a}":
        return True
    if a.startswith("not ") != b.startswith("not ") and _flag_name(a) is not None and \
            _flag_name(a) == _flag_name(b):
        # `use_lightning` in the constructor that keeps it, `not self.use_lightning` where it is read
        return True
    mine, theirs = _choice(a), _choice(b)
    if mine is None or theirs is None or mine[0] != theirs[0]:
        return False
    if mine[2] and theirs[2]:
        return not (mine[1] & theirs[1])
    if mine[2] != theirs[2]:
        inside, outside = (mine, theirs) if mine[2] else (theirs, mine)
        return inside[1] <= outside[1]
    return False


_FLAG = re.compile(r"^(?:not )?(?:(?:self|args|cfg|config|opt|opts)\.)?([A-Za-z_]\w*)$")


def _flag_name(cond: str) -> Optional[str]:
    """The flag a bare test reads, by its last name: `self.use_lightning`, `not args.ddp`,
    `use_lightning` (the holders a flag is copied between: self, the options)."""
    found = _FLAG.match(cond)
    return found.group(1) if found else None


@functools.lru_cache(maxsize=4096)
def _choice(cond: str) -> Optional[tuple[str, frozenset, bool]]:
    """(option, values, inside) of a test of one option against constants: `args.mode == 'multi'`,
    `mode != 'single'`, `not x == 1`, `mode in ['CPU', 'GPU']`, `mode is Mode.DDP` (an Enum's
    member, by its text); inside False for the negated forms. The option by its last name."""
    try:
        test = ast.parse(cond, mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        return None  # a test's text cut short, or nested past what the parser takes again
    negated = False
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        negated, test = True, test.operand
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, (ast.Name, ast.Attribute))):
        return None
    op, right = test.ops[0], test.comparators[0]
    # (`-1` is a minus applied to the constant 1: `local_rank != -1`, the usual launch switch)
    value = lambda n: repr(n.value) if isinstance(n, ast.Constant) else \
        repr(-n.operand.value) if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub) and \
        isinstance(n.operand, ast.Constant) and isinstance(n.operand.value, (int, float)) else \
        text(n) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) else None
    if isinstance(op, (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)):
        values = [value(right)]
        inside = isinstance(op, (ast.Eq, ast.Is))
    elif isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, (ast.List, ast.Tuple, ast.Set)):
        values = [value(e) for e in right.elts]
        inside = isinstance(op, ast.In)
    else:
        return None
    if not values or None in values:
        return None
    return last_name(test.left) or "", frozenset(values), inside != negated


# The tests a DDP wrapper's side may be the distributed run's switch by: a flag or a helper asked
# without arguments (`if use_ddp:`, `if torchrun_is_running():`), or a count of processes or
# devices (`if world_size > 1:`, `if torch.cuda.device_count() > 1:`); not a test on the data
# (`if len(data) > 64:`) or on a type (`isinstance`, `hasattr`)
_SWITCH_LIKE = re.compile(r"^[\w.]+(?:\(\))?$|world|device_count|gpus?\b|n_?proc|num_processes|distributed|ddp"
                          r"|== ['\"]parallel['\"]"  # (`config['train']['mode'] == 'parallel'`)
                          r"|rank (?:!= -1|>= 0|> -1)$",  # (`if args.local_rank != -1: model = DDP(model)`)
                          re.IGNORECASE)


class Switches(frozenset):
    """The tests the process group is set up under (_switches); `open`: those of the calls into
    a helper that sets it up on that side too; `shut`: count tests of calls into set-ups whose
    own tests on the way in contradict (_count_contradicted)."""

    open: frozenset = frozenset()
    shut: frozenset = frozenset()


# `runner.configer.get('network.distributed', default=False)` and `self.configer.get(
# 'network.distributed')` read one setting: its key, whoever holds the config
_CONFIG_GET = re.compile(r"^(not )?[\w.]*\.get\(\s*(['\"])([^'\"]+)\2")


def switch_form(cond: str) -> str:
    """A switch test's text in the form two readers of the same setting share."""
    got = _CONFIG_GET.match(cond)
    return f"{got.group(1) or ''}get:{got.group(3)}" if got else cond


_COUNTS = (*range(1, 17), 64, 1024)  # the values a count of GPUs or processes is tried at (one at least)
_OPS = COMPARE_OPS  # (ranks.py is its home)


def _count_test(cond: str, fn: Function):
    """(what is counted, a predicate on its value) for `n > 1`, `not len(gpus) == 1`, or a flag
    fn binds once to such a test (`is_mp = len(gpus) > 1`, then `not is_mp`); None otherwise."""
    test = _test_of(cond)
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    test = test.operand if negated else test
    if isinstance(test, ast.Name) and not isinstance(fn.node, ast.Module):
        bound = fn.bindings.get(test.id, [])
        test = bound[0][1] if len(bound) == 1 else None
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _OPS
            and isinstance(test.comparators[0], ast.Constant) and type(test.comparators[0].value) is int):
        return None
    op, bound_at = _OPS[type(test.ops[0])], test.comparators[0].value
    return text(test.left), (lambda n: op(n, bound_at) != negated)


MAX_SETUP_WAYS = 8  # the ways into a set-up kept for each function (each a tuple of its tests)


def _count_contradicted(cond: str, caller: Function, way: tuple) -> bool:
    """A call's count test (`not len(args.gpuid) > 1`) that a test on the way into the set-up
    contradicts (`not len(args.gpuid) == 1`, on the same count): no count passes both, so the
    group is not set up that way from this side."""
    here = _count_test(cond, caller)
    return here is not None and any(
        (there := _count_test(test, fn)) is not None and there[0] == here[0]
        and not any(here[1](n) and there[1](n) for n in _COUNTS) for test, fn in way)


def _negated(cond: str) -> str:
    return cond[4:] if cond.startswith("not ") else f"not {cond}"


def ruled_out(fn: Function, node: Optional[ast.AST], way_in: ast.AST, guards: tuple = (),
              program: Optional[Program] = None) -> bool:
    """The plain tests around `node` (a call) in fn include one on a parameter that the call
    `way_in` decides against: `if train:` entered with a constant False (its `else:` with True),
    `if model is not None:` entered with model left at its default None, `if local_rank > -1:`'s
    `else:` entered with a constant, or with an argument the caller's own rank test pins
    (`if args.local_rank == 0: save(net, args.local_rank)`; guards: that way's). With the
    program, an option read handed in (`build(args, args.valid_split)`) is its value as launched."""
    if node is None or not isinstance(way_in, ast.Call):
        return False
    if any(_never_entered(fn, loop, way_in) for loop in fn.__dict__.get("_call_whiles", {}).get(id(node), ())):
        return True
    for cond, _flag in fn.__dict__.get("_call_conds", {}).get(id(node), ()):
        if _compared_false(fn, cond, way_in, guards, program=program):
            return True
        negated = cond.startswith("not ")
        name = cond[4:] if negated else cond
        wanted = not negated
        for suffix, holds in ((" is not None", True), (" is None", False)):
            stem = name[:-len(suffix)]
            if name.endswith(suffix) and (stem.isidentifier() or (stem.startswith("self.") and stem[5:].isidentifier())):
                name, wanted = name[:-len(suffix)], holds == wanted
                break
        kept = name
        if name.startswith("self.") and name[5:].isidentifier():
            # `self.save_every = save_every` in the same function, then `if self.save_every is not None:`
            name = next((n.value.id for n in fn.own_of(ast.Assign) if len(n.targets) == 1
                         and dotted(n.targets[0]) == name and isinstance(n.value, ast.Name)
                         and n.value.id in fn.params), name)
        if not name.isidentifier():
            continue
        switched = _switched(fn, way_in, name, none_only=kept != cond and kept != cond[4:])
        if switched is not None and switched is not wanted:
            return True
    return False


def _field_unwrapped_on_entry(fn: Function, call: ast.Call, event, caller: Function) -> bool:
    """A DDP forward on the object's own field (`self.model(x)` in `_test_loop`) entered through
    a call on the same object (`self._test_loop(loader)`) that the caller makes after rebinding
    the field to the plain module (`if isinstance(self.model, DDP): self.model = self.model.module`,
    rank 0's evaluation after training): the module's forward, no collective."""
    node = event.node
    return event.op.startswith(DDP_FORWARD) and node.__class__ is ast.Call and _on_self(node.func) \
        and fn.cls is not None and fn.cls is caller.cls and _on_self(call.func) \
        and _rebound_to_module(caller, call, node.func.attr)


def _rebound_to_module(caller: Function, call: ast.Call, field: str) -> bool:
    """`self.<field> = self.<field>.module` (or an unwrap of it, alone or as the whole body of an
    `if` with no else) runs before call in a block around it in the caller."""
    def unwraps(stmt: ast.stmt) -> bool:
        if stmt.__class__ is ast.If and not stmt.orelse:
            return bool(stmt.body) and all(unwraps(s) for s in stmt.body)
        return stmt.__class__ is ast.Assign and len(stmt.targets) == 1 and _on_self(stmt.targets[0]) \
            and stmt.targets[0].attr == field and (inner := unwrapped_from(stmt.value)) is not None \
            and _on_self(inner) and inner.attr == field

    return any(unwraps(s) for block, index in blocks_around(getattr(caller.node, "body", []), call)
               for s in block[:index])


def _on_the_unwrapped_side(event) -> bool:
    """A DDP forward `gen(x)` on the side of `if hasattr(gen, "module"):` where gen has no
    `module` (or of `if isinstance(gen, DistributedDataParallel):` where it is none): the run
    without the wrapper (one process) takes it."""
    node = event.node
    if not (event.op.startswith(DDP_FORWARD) and isinstance(node, ast.Call)):
        return False
    called = dotted(node.func)
    for cond, _ in event.conds:
        test = _test_of(cond)
        if not (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and isinstance(test.operand, ast.Call)):
            continue
        inner = test.operand
        if not (isinstance(inner.func, ast.Name) and len(inner.args) == 2 and dotted(inner.args[0]) == called):
            continue
        if inner.func.id == "hasattr" and isinstance(inner.args[1], ast.Constant) and inner.args[1].value == "module":
            return True
        if inner.func.id == "isinstance" and (last_name(inner.args[1]) or "") in ("DistributedDataParallel", "DDP"):
            return True
    return False


def _set_false_before(fn: Function, way_in: ast.Call, caller: Function, cond: str) -> bool:
    """`if self.distributed:` in a method entered as `runner.evaluate()` just after the caller's
    `runner.distributed = False` (rank 0's last evaluation, one process's): false on this way.
    The caller's last constant assignment to that attribute of the receiver, above the call."""
    negated = cond.startswith("not ")
    name = cond[4:] if negated else cond
    if not (name.startswith("self.") and name[5:].isidentifier() and fn.cls is not None
            and isinstance(way_in.func, ast.Attribute)):
        return False
    return _constant_above(caller, f"{dotted(way_in.func.value)}.{name[5:]}", way_in.lineno) is negated


def set_false_above(fn: Function, call: ast.Call, cond: str) -> bool:
    """`args.multiprocessing_distributed = True` in fn above `if args.multiprocessing_distributed:
    mp.spawn(...) else: main_worker(...)`: the `else:` call's test is false where fn's own last
    constant assignment above the call says so."""
    negated = cond.startswith("not ")
    name = cond[4:] if negated else cond
    return bool(dotted_name(name)) and _constant_above(fn, name, call.lineno) is negated


def _constant_above(fn: Function, target: str, line: int) -> Optional[bool]:
    """The truth of the constant fn last assigns to `target` (a dotted name) above the line; None
    where the last assignment there is no constant, or there is none."""
    given = [n.value for n in fn.own_of(ast.Assign) if len(n.targets) == 1
             and n.lineno < line and dotted(n.targets[0]) == target]
    if not given or not isinstance(given[-1], ast.Constant):
        return None
    return bool(given[-1].value)


_DOTTED = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")


def dotted_name(said: str) -> bool:
    """`args.flag`, `self.cfg.flag`: an attribute path, no call nor operator."""
    return bool(_DOTTED.match(said))


def _never_entered(fn: Function, loop: ast.While, way_in: ast.Call) -> bool:
    """`made = 0` then `while wanted > made:` entered with `wanted` at its default -1: the first
    test is false, so the body never runs on this way in. Each side is a number the source
    spells, a parameter this way in gives one, or a local given one number before the loop and
    changed only inside it."""
    test = loop.test
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return False
    sides = []
    for side in (test.left, test.comparators[0]):
        value = _number(side)
        if value is None and isinstance(side, ast.Name):
            if side.id in fn.params or side.id in fn.kwonly:
                value = _number(argument_at(fn, way_in, side.id))
            else:
                bound = fn.bindings.get(side.id, [])
                before = [v for line, v in bound if line < loop.lineno]
                inside = [line for line, _ in bound if loop.lineno <= line <= (loop.end_lineno or loop.lineno)]
                if len(before) == 1 and len(before) + len(inside) == len(bound):
                    value = _number(before[0])
        if value is None:
            return False
        sides.append(value)
    compare = {ast.Gt: float.__gt__, ast.GtE: float.__ge__, ast.Lt: float.__lt__, ast.LtE: float.__le__,
               ast.Eq: float.__eq__, ast.NotEq: float.__ne__}.get(type(test.ops[0]))
    return compare is not None and not compare(float(sides[0]), float(sides[1]))


def _compared_false(fn: Function, cond: str, way_in: ast.Call, guards: tuple, context: tuple = (),
                    program: Optional[Program] = None) -> bool:
    """`local_rank > -1` (or `not (...)` of it, the `else:` side) on a parameter of fn that this
    way in gives a number, or `phase == "train"` one it gives another string: false there.
    context: the callers' (function, call) pairs, innermost last: a parameter handed on by name
    (`parallelize_model(..., local_rank=local_rank)`) is read where its caller was entered
    (`predict(...)` leaving its `local_rank=-1`)."""
    test = _test_of(cond)
    if test is None:
        return False
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    test = test.operand if negated else test
    if test.__class__ is ast.Name and test.id not in fn.params and len(fn.bindings.get(test.id, ())) == 1:
        # `deterministic = False if set_name == "train" else True`, then `if deterministic:`:
        # the flag is the comparison it was made from (turned round where True is its `else:`)
        value = fn.bindings[test.id][0][1]
        if value.__class__ is ast.IfExp and is_const(value.body, True, False) and \
                is_const(value.orelse, True, False) and value.body.value is not value.orelse.value:
            test, negated = value.test, negated != (value.body.value is False)
        elif value.__class__ is ast.Compare:
            test = value
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name)
            and test.left.id in fn.params):
        return False
    if fn.bindings.get(test.left.id) or _rebound(fn, test.left.id):
        # `mode = split if mode == "auto" else mode` (or `data, sampler = build()`) first: not
        # what the caller gave
        return False
    choices = _given_through(fn, way_in, test.left.id, context)
    return all(_given_false(test, given, negated, guards, program) for given in choices)


def _given_false(test: ast.Compare, given: Optional[ast.AST], negated: bool, guards: tuple,
                 program: Optional[Program]) -> bool:
    """_compared_false of one value the way in gives the compared parameter."""
    if program is not None and isinstance(given, ast.Attribute):
        # `get_loaders(args, args.valid_split)` into `if validation_split > 0.0:`: the option's
        # value as launched (its default where no launch beside the script gives another)
        held = option_value(given, program)
        if isinstance(held, (str, int, float)):
            given = ast.Constant(held)
    right = test.comparators[0]
    if isinstance(right, ast.Constant) and right.value in (True, False, None) and type(right.value) is not int \
            and isinstance(test.ops[0], (ast.Is, ast.IsNot)):
        # `if training is True:` entered as `run_epoch(val_dl, training=False)`
        if not (isinstance(given, ast.Constant) and (given.value is None or type(given.value) is bool)):
            return False
        holds = (given.value is right.value) != isinstance(test.ops[0], ast.IsNot)
        return holds == negated
    if isinstance(right, ast.Constant) and isinstance(right.value, str) and isinstance(test.ops[0], (ast.Eq, ast.NotEq)):
        if not (isinstance(given, ast.Constant) and isinstance(given.value, str)):
            return False
        holds = (given.value == right.value) != isinstance(test.ops[0], ast.NotEq)
        return holds == negated
    if isinstance(test.ops[0], (ast.In, ast.NotIn)) and right.__class__ in (ast.Tuple, ast.List, ast.Set):
        # `if fold in ("dev", "test"):` entered as `load_examples(args, fold="train")`
        listed = [e.value for e in right.elts if e.__class__ is ast.Constant]
        if len(listed) != len(right.elts) or not (isinstance(given, ast.Constant) and isinstance(given.value, (str, int))):
            return False
        holds = compared(test.ops[0], [given.value], listed)
        return holds is not None and holds == negated
    bound = _number(right)
    if bound is None:
        return False
    value = _number(given) if isinstance(given, (ast.Constant, ast.UnaryOp)) else _pinned(given, guards)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    compare = {ast.Gt: value.__gt__, ast.GtE: value.__ge__, ast.Lt: value.__lt__, ast.LtE: value.__le__,
               ast.Eq: value.__eq__, ast.NotEq: value.__ne__}.get(type(test.ops[0]))
    if compare is None:
        return False
    holds = compare(bound)
    return holds is not NotImplemented and bool(holds) == negated


def _class_constant(node: Optional[ast.AST], fn: Function, way_in: Optional[ast.Call]) -> Optional[ast.Constant]:
    """The constant of a class-body assignment (`imagenet = 5`) of fn's class that `self.imagenet`
    reads in fn, or that `factory.imagenet` / `Factory.imagenet` reads at a call of fn on that same
    `factory` (way_in); None where no such constant is there, or an instance sets the name."""
    klass = fn.cls
    if klass is None or not isinstance(node, ast.Attribute) or not isinstance(node.value, ast.Name):
        return None
    owner = node.value.id
    if way_in is None:
        if owner != "self":
            return None
    elif owner != klass.name and not (isinstance(way_in.func, ast.Attribute) and isinstance(way_in.func.value, ast.Name)
                                      and way_in.func.value.id == owner):
        return None
    if node.attr in klass.attrs:
        return None  # `self.imagenet = ...` somewhere: not the class's constant alone
    values = [stmt.value for stmt in klass.node.body if isinstance(stmt, ast.Assign)
              and any(isinstance(t, ast.Name) and t.id == node.attr for t in stmt.targets)]
    return values[0] if len(values) == 1 and isinstance(values[0], ast.Constant) else None


def _given_through(fn: Function, call: ast.Call, name: str, context: tuple) -> list[ast.AST]:
    """What the way in through call gives fn's parameter `name`; a name handed on from a caller
    is read where that caller was entered, up the context (_handed_from). Where it ends on a
    name a loop over constants binds in the function the call stands in (`for eval_set in ("dev",
    "test"): evaluate(args, model, eval_set)`), each of those constants: the values this way in
    gives, one per pass."""
    given = argument_at(fn, call, name)
    scope = context[-1][0] if context else None  # (the caller the call stands in: reach's outermost pair)
    while isinstance(given, ast.Name):
        up = _handed_from(given.id, context)
        if up is None:
            break
        caller, entered, context = up
        given = argument_at(caller, entered, given.id)
        scope = context[-1][0] if context else None
    if isinstance(given, ast.Name) and scope is not None:
        return _loop_constants(scope, given.id) or [given]
    return [given]


def _loop_constants(fn: Function, name: str) -> list[ast.Constant]:
    """The constants of the one loop that binds `name` in fn (`for fold in ("dev", "test"):`),
    the name bound nowhere else there; [] where it is anything else."""
    if name in fn.params or name in fn.kwonly or fn.bindings.get(name) or name not in fn.__dict__.get("_loop_names", ()):
        return []
    loops = [loop for loop in fn.own_of(ast.For, ast.AsyncFor) if name in {n.id for n in walk(loop.target)
                                                                          if n.__class__ is ast.Name}]
    if len(loops) != 1 or loops[0].target.__class__ is not ast.Name or \
            loops[0].iter.__class__ not in (ast.Tuple, ast.List, ast.Set) or not loops[0].iter.elts:
        return []
    values = loops[0].iter.elts
    return values if all(v.__class__ is ast.Constant and isinstance(v.value, (str, int)) for v in values) else []


def _handed_from(name: str, context: tuple) -> Optional[tuple]:
    """(caller, the call that entered it, the context above it) for a name an argument was given
    as in the innermost caller of context: that caller's own parameter, not bound again there, or
    a closure's free name (`def move(model): return parallelize(model, local_rank=local_rank)`
    inside predict()), its enclosing function's parameter read where that one was entered. None
    where the name is anything else."""
    if not context:
        return None
    caller, entered = context[-1]
    rest = context[:-1]
    if not (name in caller.params or name in caller.kwonly) and not caller.bindings.get(name) \
            and caller.parent is not None and rest and rest[-1][0] is caller.parent:
        (caller, entered), rest = rest[-1], rest[:-1]
    if entered is None or not (name in caller.params or name in caller.kwonly) or caller.bindings.get(name):
        return None
    return caller, entered, rest


def truth_at_call(fn: Function, call: ast.Call, test: ast.AST, line: int = 0, loops: int = 0) -> Optional[bool]:
    """A test on fn's parameters as the constants `call` hands them settle it (`split !=
    "train"` with `split="dev"`, `not evaluate` with `evaluate=True`); None where some part is
    not such a constant. line: where the test stands - a parameter fn binds again is read as
    given only above its first binding there, outside loops (0: not at all)."""
    def leaf(part: ast.AST) -> Optional[bool]:
        name = part.left if part.__class__ is ast.Compare and len(part.ops) == 1 else part
        if name.__class__ is not ast.Name or (_rebound(fn, name.id) and (not line or loops or any(
                at <= line for at, _ in fn.bindings.get(name.id, ())))):
            return None
        value = argument_at(fn, call, name.id)
        if value.__class__ is not ast.Constant:
            return None
        if name is part:
            return bool(value.value)
        right = part.comparators[0]
        allowed = [right.value] if right.__class__ is ast.Constant else \
            [e.value for e in right.elts] if right.__class__ in (ast.Tuple, ast.List, ast.Set) and all(
                e.__class__ is ast.Constant for e in right.elts) else None
        return None if allowed is None else compared(part.ops[0], [value.value], allowed)
    return three_valued(test, leaf)


def _closed_by_call(fn: Function, call: ast.Call, guards: tuple, context: tuple) -> bool:
    """A rank test's other part that the way in makes false, as _cond_false reads a plain test
    (`local_rank == 0 and not evaluate` entered with `evaluate=True`): no rank takes the branch
    on this way."""
    return any(_cond_false(fn, call, part, part.isidentifier() or (part.startswith("not ") and part[4:].isidentifier()),
                           context)
               for guard in guards for part in guard.test.open)


def _polarities(guards: tuple) -> frozenset:
    """The (key, polarity) of each rank test of guards that names one rank or the others."""
    return frozenset((g.test.key, g.test.polarity) for g in guards if g.test.polarity in ("zero", "nonzero"))


def _opposed(guards: tuple, under: frozenset) -> bool:
    """A rank test of guards says the opposite of one the way in sits under (`local_rank not in
    [-1, 0]` inside a call made under `local_rank in [-1, 0]`): no rank takes both."""
    flip = {"zero": "nonzero", "nonzero": "zero"}
    return any((key, flip[polarity]) in under for key, polarity in _polarities(guards))


def _cond_false(fn: Function, call: ast.Call, cond: str, flag: bool, context: tuple,
                caller: Optional[Function] = None) -> bool:
    """The test is false on the way in through `call`: a switch it leaves False (`if
    use_barriers:`), one it passes True under a `not` (DensePhrases' `not evaluate` entered with
    `evaluate=True`), a string or number it gives another value (`phase == "train"`)."""
    if cond.endswith((" is not None", " is None")):
        # `if process_group is not None:` entered with the default None (RL2's rank-0 logging)
        stem, _, _ = cond.rpartition(" is ")
        if stem.isidentifier():
            given = _switched(fn, call, stem, context, none_only=True)
            return given is not None and given == cond.endswith(" is None")
    if not flag and cond.endswith(")") and (".pop(" in cond or ".get(" in cond):
        given = _keyword_taken(fn, call, _test_of(cond), context)
        if given is not None:
            return given is False
    if not flag:
        return _compared_false(fn, cond, call, (), context)
    if cond.startswith("not ") and cond[4:].isidentifier():
        return _switched(fn, call, cond[4:], context) is True or \
            _held_by_caller(fn, call, cond[4:], caller or (context[-1][0] if context else None))
    if _switched(fn, call, cond, context) is False:
        return True
    # `sync = distributed and dist.is_initialized()` then `if sync:`: the local is false where
    # one part of its `and` is (a parameter this way in leaves False)
    value = _alias(fn, cond)
    if isinstance(value, ast.BoolOp) and isinstance(value.op, ast.And):
        return any(_cond_false(fn, call, text(part), True, context) for part in value.values
                   if isinstance(part, ast.Name) or (isinstance(part, ast.UnaryOp) and isinstance(part.op, ast.Not)
                                                     and isinstance(part.operand, ast.Name)))
    if isinstance(value, ast.Name):
        return _cond_false(fn, call, value.id, True, context)
    if isinstance(value, ast.Compare) and len(value.ops) == 1:
        # `is_train = optimiser is not None` then `if is_train:`, entered with no optimiser
        # (an evaluation pass through the training loop's helper): the local's own test, asked
        return _cond_false(fn, call, text(value), False, context)
    return False


def _keyword_taken(fn: Function, call: ast.Call, test: Optional[ast.AST], context: tuple) -> Optional[bool]:
    """`if kwargs.pop("sync", False):` on fn's own `**kwargs`: the truth of what the way in
    gives for that key - its keyword, or the default where no call on the way names it, through
    callers that hand their `**kwargs` on (`log_end(**kwargs)` -> `_log(**kwargs)`). None where
    not known (a dict spread of another kind, a value that is not a constant)."""
    if not (test.__class__ is ast.Call and test.func.__class__ is ast.Attribute and test.func.attr in ("pop", "get")
            and test.func.value.__class__ is ast.Name and 1 <= len(test.args) <= 2 and not test.keywords
            and test.args[0].__class__ is ast.Constant and isinstance(test.args[0].value, str)):
        return None
    holder, key = test.func.value.id, test.args[0].value
    default = test.args[1] if len(test.args) == 2 else ast.Constant(None)
    pairs = list(context)
    while True:
        kwarg = fn.node.args.kwarg if fn.node is not None and not isinstance(fn.node, ast.Module) else None
        if kwarg is None or kwarg.arg != holder:
            return None
        named = [k.value for k in call.keywords if k.arg == key]
        if named:
            value = named[0]
            break
        spread = [k.value for k in call.keywords if k.arg is None]
        if not spread:
            value = default
            break
        # handed on from the caller's own `**kwargs`: asked again there, a call up
        if len(spread) != 1 or spread[0].__class__ is not ast.Name or not pairs or pairs[-1][1] is None:
            return None
        holder = spread[0].id
        fn, call = pairs.pop()
    if value.__class__ is not ast.Constant:
        return None
    return bool(value.value)


# Wrappers none of which derives from another: a model built by one is never an instance of the other.
_WRAPPERS = frozenset({"DistributedDataParallel", "FullyShardedDataParallel", "DataParallel"})


def _held_by_caller(fn: Function, call: ast.Call, name: str, caller: Optional[Function]) -> bool:
    """`ddp = True if world_size else False` in fn, entered under the caller's own `if ddp:` made
    the same way from the `world_size` it hands on: fn's `ddp` holds there too (so its `if not
    ddp:` side is not taken on this way in)."""
    source = _truth_source(fn, name)
    if source is None or (source not in fn.params and source not in fn.kwonly) or caller is None:
        return False
    given = argument_at(fn, call, source)
    if not isinstance(given, ast.Name) or caller.node is None:
        return False
    held = caller.__dict__.get("_call_conds", {}).get(id(call), ())
    return any(flag and c.isidentifier() and (c == given.id or _truth_source(caller, c) == given.id)
               for c, flag in held)


def _truth_source(fn: Function, name: str) -> Optional[str]:
    """The name whose truth a local flag copies: `ddp = True if world_size else False`,
    `ddp = bool(world_size)`, `ddp = world_size`; None otherwise."""
    value = _alias(fn, name)
    if isinstance(value, ast.IfExp) and isinstance(value.test, ast.Name) and is_const(value.body, True) \
            and is_const(value.orelse, False):
        return value.test.id
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "bool" \
            and len(value.args) == 1 and isinstance(value.args[0], ast.Name):
        return value.args[0].id
    return value.id if isinstance(value, ast.Name) else None


def _alias(fn: Function, name: str) -> Optional[ast.AST]:
    """The one value a local (not a parameter) is bound to in fn, None otherwise."""
    if not name.isidentifier() or name in fn.params or name in fn.kwonly:
        return None
    bound = fn.bindings.get(name, [])
    return bound[0][1] if len(bound) == 1 else None


def _cond_true(fn: Function, call: ast.Call, cond: str, context: tuple) -> bool:
    """A switch the way in through `call` proves on (`True` given), or its `not` proves on (`False`)."""
    if cond.startswith("not ") and cond[4:].isidentifier():
        return _switched(fn, call, cond[4:], context) is False
    return _switched(fn, call, cond, context) is True


@functools.lru_cache(maxsize=4096)
def _pinned(value: Optional[ast.AST], guards: tuple):
    """The number a caller's rank test `if <value> == N:` pins the argument to, on its true side."""
    if not isinstance(value, (ast.Name, ast.Attribute)):
        return None
    for guard in guards:
        # a test true on rank 0 alone of the rank this argument names: it is 0 there (the
        # test's text may be cut short; its key and polarity are not). Other conjuncts of the
        # test (`local_rank == 0 and phase == "val"`) hold too on its body side; its `else:`
        # pins nothing unless the rank test is all of it.
        zero = "zero" if guard.side == "body" else "nonzero"
        if guard.test.polarity == zero and guard.test.key == last_name(value) and \
                (guard.side == "body" or not guard.test.assumption):
            return 0
        if guard.side != "body":
            continue
        try:
            test = ast.parse(guard.test.text, mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
        for part in parts:  # `opt.local_rank == 0 and phase == "val"`: each conjunct holds
            if isinstance(part, ast.Compare) and len(part.ops) == 1 and isinstance(part.ops[0], ast.Eq) and \
                    text(part.left) == text(value):
                return _number(part.comparators[0])
    return None


def _number(node: Optional[ast.AST]):
    """An int or float the source spells (`-1` included); None for anything else."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return -inner if inner is not None else None
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    return None


def _called_partial(target: Function, node: ast.AST) -> bool:
    """node is a `partial(target, ...)` that a call the program reads runs (program._bind_call
    noted it with the call: argument_at reads both)."""
    through = target.__dict__.get("_partial_calls")
    return bool(through) and any(p is node for ps in through.values() for p, _ in ps)


def _partial_names(fn: Function, call: ast.Call, param: str) -> Optional[list]:
    """[(name, scope)] where every partial the call runs through binds param to a parameter of
    the scope that built it (`return partial(get_loader, ddp=is_ddp)` in `def pick(task,
    is_ddp=False)`); None otherwise."""
    through = (fn.__dict__.get("_partial_calls") or {}).get(id(call))
    if not through:
        return None
    found = []
    for p, scope in through:
        given = keyword(p, param)
        if not (isinstance(given, ast.Name) and (given.id in scope.params or given.id in scope.kwonly)
                and not scope.bindings.get(given.id)):
            return None
        found.append((given.id, scope))
    return found


def argument_at(target: Function, call: ast.Call, param: str) -> Optional[ast.AST]:
    """What `call` hands target's parameter: the argument given (by keyword or place), else the
    parameter's default; None when it cannot tell (`**kwargs`, a `*args` before it)."""
    if isinstance(target.node, ast.Module) or (param not in target.params and param not in target.kwonly):
        return None  # (a keyword-only parameter after `*` is given by keyword or its default)
    args = target.node.args
    positional = [a.arg for a in args.posonlyargs + args.args]
    value = keyword(call, param)
    index = positional.index(param) if param in positional else -1
    offset = 1 if target.cls is not None and target.parent is None and positional[:1] in (["self"], ["cls"]) else 0
    offset -= explicit_self(target, call)  # `Base.initialize(self, opt, rank)`: the instance comes first
    through = target.__dict__.get("_partial_calls")
    wrapped = through.get(id(call)) if through else None
    if wrapped and value is None:
        # `get_loader(batch_size=8)` of `get_loader = partial(get_dataloader, ddp=is_ddp)`: what
        # the partial bound comes first; read here only where it is a constant every partial the
        # call may run gives alike (a name in it is the partial's scope's, not the call's)
        given = [keyword(p, param) if keyword(p, param) is not None else
                 p.args[1 + index - offset] if 0 <= index - offset < len(p.args) - 1 else None for p, _ in wrapped]
        if any(g is not None for g in given):
            same = {repr(g.value) if g.__class__ is ast.Constant else None for g in given}
            return given[0] if len(same) == 1 and None not in same else None
        if len({len(p.args) for p, _ in wrapped}) != 1:
            return None  # (the call's own arguments land on different parameters)
        offset += len(wrapped[0][0].args) - 1
    if value is None and any(isinstance(a, ast.Starred) for a in call.args):
        return None
    if value is None and 0 <= index - offset < len(call.args):
        value = call.args[index - offset]
    for spread in (kw.value for kw in call.keywords if kw.arg is None) if value is None else ():
        # `**{"use_distributed_sampler": False}`: a literal's keys are read; anything else cannot be
        if not (isinstance(spread, ast.Dict) and all(isinstance(k, ast.Constant) for k in spread.keys)):
            return None
        value = next((v for k, v in zip(spread.keys, spread.values) if k.value == param), None)
        if value is not None:
            break
    if value is None and index >= 0:
        defaults = args.defaults
        first = len(positional) - len(defaults)
        value = defaults[index - first] if index >= first else None
    if value is None and param in [a.arg for a in args.kwonlyargs]:
        value = args.kw_defaults[[a.arg for a in args.kwonlyargs].index(param)]
    return value


def given_constants(callers: dict, fn: Function, param: str, depth: int = 3, taken: tuple = (),
                    program: Optional[Program] = None) -> Optional[set]:
    """The constants every way into fn gives its parameter: passed, left at its default, or a
    caller's own parameter so given (a few calls up). None where some way gives anything else.
    callers: BuilderCore.callers(). taken: the (test, side) pairs around the statement asked
    about; a call that makes one of them false never reaches it, and is not counted (empty: no
    call does). With the program, an option read handed in (`Trainer(args.mode)`, or a name
    bound once to one: `mode = args.mode` then `Trainer(mode)`) is its value as launched."""
    sites = callers.get(fn, [])
    if not sites or depth <= 0:
        return None
    found: set = set()
    for caller, event in sites:
        if program is not None and event.kind == "ref" and (held := _fire_value(program, caller, event.node, fn, param)) is not None:
            found.add(held)  # `fire.Fire(main)`: main's parameter is a command-line option
            continue
        if event.kind != "call" or not isinstance(event.node, ast.Call):
            return None  # a reference (`mp.spawn(fn, args=...)`) hands its arguments another way
        if any(_cond_false(fn, event.node, cond, flag, ()) for cond, flag in taken):
            continue  # (`if parallel:` around a sampler, a call leaving parallel False)
        if program is not None and off_at_launch(tuple(
                c for c in caller.__dict__.get("_call_conds", {}).get(id(event.node), ())
                if c[0] not in program.setup_switches()), program):
            # (a call under `if args.swa:` with --swa off as launched: no way in on that run; not
            # under the switch that starts the distributed run itself, `if args.parallel:
            # mp.spawn(...)` - the findings are about the run that turns it on)
            continue
        handed = _partial_names(fn, event.node, param)
        if handed is not None:  # (a partial's own parameter: what its builder's callers give)
            for name, scope in handed:
                above = given_constants(callers, scope, name, depth - 1)
                if above is None:
                    return None
                found |= above
            continue
        value = argument_at(fn, event.node, param)
        # (`factory.build(factory.imagenet)`: the constant the factory's class body gives it)
        value = _class_constant(value, fn, event.node) or value
        if isinstance(value, ast.Constant) and isinstance(value.value, (bool, int, float, str, type(None))):
            found.add(value.value)
        elif isinstance(value, ast.Name) and (value.id in caller.params or value.id in caller.kwonly) and not caller.bindings.get(value.id):
            above = given_constants(callers, caller, value.id, depth - 1, program=program)
            if above is None:
                return None
            found |= above
        elif isinstance(value, ast.Name) and local_constants(caller, value.id) is not None:
            found |= local_constants(caller, value.id)
        elif program is not None and (held := _launched_option(program, caller, value)) is not None:
            found.add(held)
        elif program is not None and (held := program.ranks.module_constants(value, caller)) is not None:
            found |= held  # (`Loader(ds, distributed=ptu.distributed)`: the module global's constants)
        elif program is not None and unset_config_get(value, program):
            found.add(None)  # (`opt.dataloader.get("noise_ratio")` of a key no shipped config sets)
        elif program is not None and (held := config_read(value, program, caller)) is not None:
            # (`make_sampler(ds, shuffle=data_cfg["shuffle"])` with `shuffle: False` in every
            # config beside the script: what a launch with any of them hands in)
            found |= held
        else:
            return None
    return found


def _fire_value(program: Program, caller: Function, call: ast.AST, fn: Function, param: str):
    """The value as launched of fn's parameter where `call` is `fire.Fire(fn)`: python-fire makes
    each parameter an option (lint/options.py declares them so), its default unless a launch
    gives it; None otherwise."""
    if not (call.__class__ is ast.Call and call.args and call.args[0].__class__ is ast.Name
            and call.args[0].id == fn.name and (program.qualify(call.func, caller) or "") == "fire.Fire"):
        return None
    held = program.option_defaults().get(param) if not DIST_SWITCH.search(param) else None
    return held if isinstance(held, (bool, int, float, str)) else None


def _launched_option(program: Program, scope: Function, value: ast.AST):
    """The value as launched of an option read (`args.mode`), or of a name scope binds once, to
    such a read (`mode = args.mode`, at the module's top); None otherwise."""
    if value.__class__ is ast.Name and not (value.id in scope.params or value.id in scope.kwonly):
        bound = scope.bindings.get(value.id, ())
        if len(bound) != 1:
            return None
        value = bound[0][1]
    if value.__class__ is not ast.Attribute or DIST_SWITCH.search(value.attr):
        return None  # (not the distributed run's own switch: `ddp: false` is the one-GPU config)
    held = option_value(value, program)
    return held if isinstance(held, (bool, int, float, str)) else None


def _never_taken(fn: Function, cond: str, flag: bool) -> bool:
    """A test on a local name fn binds only to constants, none of which takes this side
    (`sliding = False` set once above `if sliding:`, an evaluation's switch left in the code)."""
    name, wanted = (cond[4:], not flag) if cond.startswith("not ") else (cond, flag)
    if not name.isidentifier():
        return False
    held = local_constants(fn, name)
    return bool(held) and all(bool(v) != wanted for v in held)


def local_constants(fn: Function, name: str) -> Optional[set]:
    """The constants a local name is ever bound to in fn: `is_distributed, world, rank = (False, 1,
    0)` (the detection call left commented out); None where any binding is something else, or
    the name is a parameter (its callers decide: given_constants)."""
    if isinstance(fn.node, ast.Module) or name in fn.params:
        # (a script's top-level `distributed = False` is a setting its user edits - "set True for
        # DDP", as bubbliiiing's train.py says - not a fact of the run: the lint judges both sides)
        return None
    # (asked of many names of a long function: one pass over its body answers them all)
    bound = fn.__dict__.get("_constant_bindings")
    if bound is None:
        bound = fn.__dict__["_constant_bindings"] = _constant_bindings(fn)
    found = bound.get(name)
    return set(found) if found else None  # (a copy: callers add to what they get)


def pinned_constants(program, fn: Function, name: str) -> Optional[set]:
    """The constants a name of fn is bound to where nothing moves it: every binding in fn a
    constant, no augmented assignment or loop there, no `global` / `nonlocal` of it in another
    function (a counter its author forgot to advance: `epoch_iter = 0`). A parameter is what its
    callers pass: None. Unlike local_constants, a script's top level counts: a counter is no
    setting the user edits."""
    if name in fn.params or name in fn.kwonly:
        return None
    found = _constant_bindings(fn).get(name)
    if not found:
        return None
    if isinstance(fn.node, ast.Module):
        movers = [f for f in program.functions if f.module is fn.module and f is not fn]
    else:
        movers = [f for f in program.functions if f.parent is fn]
    if any(node.__class__ in (ast.Global, ast.Nonlocal) and name in node.names for f in movers for node in f.own):
        return None
    return set(found)


_REBINDING = (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.With, ast.NamedExpr)


def _constant_bindings(fn: Function) -> dict:
    """Each name fn's own body binds -> the constants it is bound to, or None where some binding
    of it is something else."""
    found: dict = {}
    poisoned: set = set()
    for node in fn.own:
        if node.__class__ in (ast.Global, ast.Nonlocal):
            # `global shutdown_requested`: the module's name, set by a signal handler too - what
            # this function binds later is not all it holds
            poisoned.update(node.names)
            continue
        if isinstance(node, _REBINDING):
            # what it binds: a with's `as` names only (walking the whole with took every name
            # its body reads as rebound: CeresTrain's `COMPUTE_FLOPS = False`, read in a with)
            bound = [i.optional_vars for i in node.items if i.optional_vars is not None] \
                if isinstance(node, (ast.With, ast.AsyncWith)) else [node.target]
            poisoned.update(n.id for b in bound for n in walk(b) if n.__class__ is ast.Name)
            continue
        if node.__class__ is not ast.Assign:
            continue
        for target in node.targets:
            pairs = [(target, node.value)]
            if isinstance(target, ast.Tuple):
                if not (isinstance(node.value, ast.Tuple) and len(node.value.elts) == len(target.elts)):
                    poisoned.update(n.id for n in walk(target) if n.__class__ is ast.Name)
                    continue
                pairs = list(zip(target.elts, node.value.elts))
            for bound, value in pairs:
                if bound.__class__ is not ast.Name:
                    continue
                if isinstance(value, ast.Constant) and isinstance(value.value, (bool, int, float, str, type(None))):
                    found.setdefault(bound.id, set()).add(value.value)
                else:
                    poisoned.add(bound.id)
    for name in poisoned:
        found[name] = None
    return found


def _handed_back(program: Program, value: ast.AST, scope: Function, depth: int = 3) -> tuple:
    """`trainer = setup(rank, trainer)` where the local helper returns the parameter it was
    handed (after configuring it): what the call was handed there, followed to its values."""
    while depth > 0 and isinstance(value, ast.Call):
        target = program.callee(value.func, scope)
        if not program.is_function(target) or not target.returned or \
                not all(isinstance(r, ast.Name) and r.id == target.returned[0].id for r in target.returned):
            break
        name = target.returned[0].id
        if name in target.bindings:
            break  # rebound inside: not what it was handed
        given = argument_at(target, value, name)
        if given is None:
            break
        # (`trainer = setup(rank, trainer)`: the name's own rebinding by this call is not what it was handed)
        found = [(v, sc) for v, sc in program.values_of(given, scope, 3) if v is not value]
        if len(found) != 1:
            break
        value, scope = found[0]
        depth -= 1
    return value, scope


def never_true(callers: dict, fn: Function, cond: str, flag: bool = True, program=None) -> bool:
    """A test in fn that no way through it can pass: `if is_distributed:` on a local bound only
    to False, or on a parameter every caller leaves false; flag=False: a comparison of such a
    name with constants (`if env_type == "DDP" or env_type == "ddp":` where the script's own
    module constant `env = "pytorch"` is what every construction hands it)."""
    if flag:
        negated = cond.startswith("not ")
        name = cond[4:] if negated else cond
        if name.startswith("self.") and name[5:].isidentifier() and program is not None:
            # `if self.ddp:` of a class every construction leaves at its default `ddp=False`
            values = attr_constants(program, callers, fn, name[5:])
            return bool(values) and all(bool(v) == negated for v in values)
        if not name.isidentifier():
            return False
        values = _constants_of(callers, fn, name, program)
        return bool(values) and all(bool(v) == negated for v in values)
    if len(cond) > 300 or " == " not in cond and " != " not in cond and " in " not in cond:
        return False
    try:
        test = _parsed_tests.get(cond) or ast.parse(cond, mode="eval").body
    except SyntaxError:
        return False
    if len(_parsed_tests) < 4096:
        _parsed_tests[cond] = test
    return _truth_by_constants(callers, fn, test, program) is False


_parsed_tests: dict = {}  # a condition's text, parsed once (the same few texts are asked of often)


def _own_attr(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def _constants_of(callers: dict, fn: Function, name: str, program: Optional[Program] = None) -> Optional[set]:
    values = local_constants(fn, name)
    if values is None and name in fn.params and not _rebound(fn, name):
        # (a parameter fn binds again - `mode = split if mode == "auto" else mode` - holds more
        # than what the callers hand it)
        values = given_constants(callers, fn, name, program=program)
    return values


def assigned_pairs(fn: Function):
    """(target, value) of each plain assignment in fn's own body, a tuple's items paired:
    `self.a, self.b = a, {}` gives (self.a, a) and (self.b, {})."""
    for node in fn.own_of(ast.Assign):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target, value = node.targets[0], node.value
        if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
            yield from zip(target.elts, value.elts)
        else:
            yield target, value


def attr_constants(program, callers: dict, fn: Function, attr: str) -> Optional[set]:
    """The constants `self.<attr>` holds in fn's class: the constructor (its own or a local
    base's) stores a parameter there that every construction gives a constant, and no other
    method of the chain assigns it. None otherwise."""
    klass = program._class_of_fn(fn) if program is not None else None
    if klass is None:
        return None
    chain, todo = [], [klass]
    while todo and len(chain) < 6:
        current = todo.pop(0)
        if current not in chain:
            chain.append(current)
            todo.extend(program.bases(current))
    key = f"self.{attr}"
    stored = [(init, value.id) for c in chain if "__init__" in c.methods for init in [c.methods["__init__"]]
              for target, value in assigned_pairs(init) if dotted(target) == key and isinstance(value, ast.Name)
              and (value.id in init.params or value.id in init.kwonly)]
    if len(stored) != 1:
        return None
    init, param = stored[0]
    if any(any(dotted(t) == key for t in (n.targets if n.__class__ is ast.Assign else [n.target]))
           for c in chain for f in c.methods.values() if f is not init for n in f.own_of(ast.Assign, ast.AugAssign)):
        return None
    return given_constants(callers, init, param, program=program)


def _truth_by_constants(callers: dict, fn: Function, test: ast.AST, program=None,
                        own_attrs: bool = False) -> Optional[bool]:
    """True / False where the constants every way gives the names a test reads settle it
    (own_attrs: a bare `self.<attr>` read too, what every construction hands the constructor)."""
    def leaf(part: ast.AST) -> Optional[bool]:
        if isinstance(part, ast.Name) or (own_attrs and _own_attr(part) and program is not None):
            # (`if self.checkpoint_dir and ...:` where every construction hands the constructor
            # `checkpoint_dir="checkpoints"`: its truth too)
            values = _constants_of(callers, fn, part.id, program) if isinstance(part, ast.Name) else \
                attr_constants(program, callers, fn, part.attr)
            truths = {bool(v) for v in values} if values else set()
            return truths.pop() if len(truths) == 1 else None
        if not (isinstance(part, ast.Compare) and len(part.ops) == 1 and (
                isinstance(part.left, ast.Name) or _own_attr(part.left))):
            return None
        op, right = part.ops[0], part.comparators[0]
        right = _class_constant(right, fn, None) or right  # `data_type == self.imagenet`, `imagenet = 5` in the class
        if isinstance(right, ast.Constant):
            allowed = [right.value]
        elif isinstance(right, (ast.Tuple, ast.List, ast.Set)) and all(isinstance(e, ast.Constant) for e in right.elts):
            allowed = [e.value for e in right.elts]
        else:
            return None
        values = _constants_of(callers, fn, part.left.id, program) if isinstance(part.left, ast.Name) else \
            attr_constants(program, callers, fn, part.left.attr)
        return compared(op, values, allowed) if values else None
    return three_valued(test, leaf)


def compared(op: ast.cmpop, values, allowed: list) -> Optional[bool]:
    """`v <op> allowed` for each of the constants `values` (`grad_accum > 1` where every way gives
    grad_accum the number 1), where every one gives the same answer; None otherwise, or where the
    comparison is not one of constants this reads (an order between other than numbers)."""
    if isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) and len(allowed) == 1 and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in (*values, *allowed)):
        bound = allowed[0]
        truths = {v < bound if isinstance(op, ast.Lt) else v <= bound if isinstance(op, ast.LtE)
                  else v > bound if isinstance(op, ast.Gt) else v >= bound for v in values}
    elif isinstance(op, (ast.Eq, ast.In)) and (isinstance(op, ast.In) or len(allowed) == 1):
        truths = {v in allowed for v in values}
    elif isinstance(op, (ast.NotEq, ast.NotIn)) and (isinstance(op, ast.NotIn) or len(allowed) == 1):
        truths = {v not in allowed for v in values}
    else:
        return None
    return truths.pop() if len(truths) == 1 else None


def _rebound(fn: Function, name: str) -> bool:
    """fn binds its parameter `name` again (a plain, unpacked or augmented assignment, a loop's
    target): what a caller passes is not what every test in fn reads."""
    memo = fn.__dict__.setdefault("_rebound", {})
    if name not in memo:
        memo[name] = any(
            isinstance(t, ast.Name) and t.id == name
            for node in fn.own if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor))
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
            for t in walk(target))
    return memo[name]


def _switched(target: Function, call: ast.Call, cond: str, context: tuple = (),
              none_only: bool = False) -> Optional[bool]:
    """`if use_barriers:` in target: False where this call leaves the parameter at its default
    False (or passes a constant False), so the branch never runs on this way in; True where it
    passes a constant True (proven on); None when it cannot tell. context: the (function, call
    that entered it) pairs of the callers, innermost last: a parameter passed on by name is
    read at the call that gave it (bounded: the last three calls)."""
    value = argument_at(target, call, cond)
    if value is None or _rebound(target, cond):
        return None  # (`train_data, train_sampler = choice(...)` first: the argument is gone)
    if isinstance(value, ast.Name):
        up = _handed_from(value.id, context)
        if up is not None:
            return _switched(up[0], up[1], value.id, up[2], none_only)
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not) and isinstance(value.operand, ast.Name) \
            and not none_only:
        # `is_training=not evaluate`, the caller entered with `evaluate=True` (DensePhrases)
        up = _handed_from(value.operand.id, context)
        if up is not None:
            inner = _switched(up[0], up[1], value.operand.id, up[2])
            return None if inner is None else not inner
    if none_only:  # `x is not None`: None alone is false; any other constant is a value
        return False if is_const(value, None) else (True if isinstance(value, ast.Constant) else None)
    if is_const(value, False, None, 0):
        return False
    return True if is_const(value, True) else None


def _op_kind(op: str) -> str:
    return op.split("(")[0]


def _fn_loops(fn: Function) -> list[tuple[ast.AST, int]]:
    """A function's loops with their nesting depth, found once (several rules read them)."""
    found = fn.__dict__.get("_loops")
    if found is None:
        found = fn.__dict__["_loops"] = list(_loops(fn.node, 0))
    return found


def _loops(root: ast.AST, depth: int) -> Iterator[tuple[ast.AST, int]]:
    """Every loop of a function body with the number of loops around it (no nested defs). A
    loop is a statement: only the statement lists are followed, never an expression (most of a
    tree's nodes), in the order of the fields as a walk of every child meets them."""
    for name in _block_fields(root.__class__):
        for child in getattr(root, name):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(child, (ast.For, ast.AsyncFor, ast.While)):
                yield child, depth
                yield from _loops(child, depth + 1)
            else:
                yield from _loops(child, depth)


def _block_fields(cls: type) -> tuple[str, ...]:
    """The fields of a node class that hold statements (or handlers, match cases: their bodies)."""
    found = _BLOCKS.get(cls)
    if found is None:
        found = _BLOCKS[cls] = tuple(f for f in cls._fields if f in ("body", "orelse", "finalbody", "handlers", "cases"))
    return found


# the calls that make a run distributed in in_another_command's sense: those that set up the
# default process group (patterns.SETUP_CALLS), a launcher of ranks, an engine that sets it up
# itself, a framework's trainer or accelerator
DISTRIBUTED_STARTS = frozenset({*SETUP_CALLS, "initialize", "spawn", "start_processes", "Trainer", "Accelerator",
                                "Fabric", "init_dist"})


def rank_guards(guards: tuple) -> tuple:
    """The guards that leave some ranks out: not the `else:` of `flag and rank == 0`, which every
    rank takes wherever the flag is off (`if args.hpo and rank == 0: search() else: train()`)."""
    return tuple(g for g in guards if not g.test.everyone)


def reached_from(starts: list, weak: bool = False) -> set:
    """The functions these can run: themselves and what they call or hand on, transitively.
    weak: also the same-named methods a call of an unknown receiver may reach (what may run)."""
    seen: set = set()
    todo = list(starts)
    while todo:
        fn = todo.pop()
        if fn not in seen:
            seen.add(fn)
            todo.extend(t for e in fn.events if e.kind in ("call", "ref")
                        for t in (e.targets + e.weak if weak else e.targets))
    return seen


def group_query(program, call: ast.Call, fn: Function) -> bool:
    """`dist.is_initialized()`, or a local helper that answers it: false until the group is set up."""
    if (program.qualify(call.func, fn) or "").endswith("distributed.is_initialized"):
        return True
    targets = program.resolve(call.func, fn)[0]
    return bool(targets) and all(
        t.node is not None and not isinstance(t.node, ast.Module) and t.returned and (all(
            _asks_the_group(program, r, t) for r in t.returned) or _true_past_group_guards(program, t))
        for t in targets)


def _true_past_group_guards(program, fn: Function) -> bool:
    """`if not dist.is_available(): return False` / `if not dist.is_initialized(): return
    False` / `return True` (DeiT's `is_dist_avail_and_initialized`): true exactly where the
    process group is set up, however the helper is named."""
    body = [s for s in fn.node.body if not (s.__class__ is ast.Expr and isinstance(s.value, ast.Constant))]
    if len(body) < 2 or body[-1].__class__ is not ast.Return or not is_const(body[-1].value, True):
        return False
    asks = []
    for stmt in body[:-1]:
        if not (stmt.__class__ is ast.If and not stmt.orelse and len(stmt.body) == 1
                and stmt.body[0].__class__ is ast.Return and is_const(stmt.body[0].value, False)
                and stmt.test.__class__ is ast.UnaryOp and stmt.test.op.__class__ is ast.Not
                and stmt.test.operand.__class__ is ast.Call and not stmt.test.operand.args):
            return False
        asked = program.qualify(stmt.test.operand.func, fn) or ""
        asks.append(asked.rpartition(".")[2] if asked.startswith("torch.distributed.") else "")
    return "is_initialized" in asks and all(a in ("is_available", "is_initialized") for a in asks)


def _asks_the_group(program, returned: ast.AST, fn: Function) -> bool:
    """`dist.is_initialized()`, or `dist.is_available() and dist.is_initialized()`."""
    asked = lambda r, name: r.__class__ is ast.Call and not r.args and \
        (program.qualify(r.func, fn) or "").endswith(f"distributed.{name}")
    if returned.__class__ is ast.BoolOp and returned.op.__class__ is ast.And:
        return asked(returned.values[-1], "is_initialized") and all(
            asked(v, "is_available") for v in returned.values[:-1])
    return asked(returned, "is_initialized")
