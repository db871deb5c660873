"""Which expressions are a rank, and which tests differ between ranks, by data flow.

A name is a rank because of what it was assigned, in its own scope (the function, then the
module, then what callers pass for a parameter, then `self.x = ...` in the class): never
because a variable of the same name is a rank somewhere else in the program. Only when the
source says nothing about a name (a parameter no local code passes, an attribute of an
object built by a library) does its spelling decide, and then only the spellings people use
for a process's rank (`rank`, `local_rank`, `args.gpu` is not one; `cfg.lora_rank` is not one).

Followed: a helper whose return value is a rank test (`def is_master(args): return
args.rank == 0`), a flag assigned from a rank test (`args.save_logs = args.logs and
is_master(args)`), an attribute set from a spawned process's index (`self.gpu_id = gpu_id`
where `gpu_id` is mp.spawn's first argument), and an object built on one rank only
(`saver = Saver() if rank == 0 else None`, then `if saver is not None:`).
"""

from __future__ import annotations

import ast
import copy
import re
from dataclasses import replace
from typing import Any, Optional

from ddpdoctor.core.torch_names import RECEIVING
from ddpdoctor.lint import reaching
from ddpdoctor.lint.defaults import DIST_SWITCH as _DIST_SWITCH, config_settles, default_truth, settled
from ddpdoctor.lint.nodes import param_defaults, walk
from ddpdoctor.lint.options import declared_options
from ddpdoctor.lint.patterns import (RANK_CALLS, RANK_ENV, RankTest, _dict_call_literal, _dispatched, dotted, env_key, is_const,
                                     last_name, name_pattern, text)

Function = Any  # ddpdoctor.lint.program.Function (program imports this module, not the reverse)
Program = Any
# The spellings of a process's rank, for names the source does not explain.
# A parallel group's rank (`dp_rank`, `tp_rank`, `data_parallel_rank`: Megatron, picotron,
# nanotron) differs between ranks as much as the global one does.
RANK_NAME = re.compile(
    r"^(?:(?:local|global|world|node|group|process|proc|ddp|ddp_local|dist|my|this|cur|current|gpu|"
    r"device|worker|local_world|trainer|dp|tp|pp|cp|ep|sp|data_parallel|tensor_parallel|"
    r"tensor_model_parallel|pipeline_parallel|pipeline_model_parallel|model_parallel|context_parallel|"
    r"expert_parallel|sequence_parallel)_)?rank(?:_id)?$"
    r"|^(?:local_|global_)?process_index$|^ordinal$|^proc_id$",
    re.IGNORECASE)
# The spellings of "this is the main / zero rank", for names the source does not explain.
MAIN_FLAG = re.compile(
    r"^(?:is_)?(?:global_|local_)?(?:master|main|chief|leader)(?:_process|_rank|_proc|_node|_worker)$"
    r"|^is_(?:global_|local_)?(?:master|main|chief|leader|root|primary)(?:_process|_rank|_proc|_node|_worker)?$"
    r"|^master_process$|^is_(?:global_|local_)?(?:rank_?)?zero$|^(?:is_)?rank_?zero$|^is_world_process_zero$"
    r"|^is_local_process_zero$|^is_master_ordinal$|^is_logging_rank$|^is_global_zero$"
    # (habitat-baselines' `rank0_only()`: not distributed, or get_rank() == 0)
    r"|^(?:is_)?rank_?0(?:_only)?$"
    # (a Hugging Face TrainingArguments' `should_save`: true on the process that writes)
    r"|^should_save$",
    re.IGNORECASE)
# Tests that say "is this a distributed run at all": the same on every rank.
UNIFORM_CALLS = {"is_initialized", "is_available", "is_distributed", "is_dist_avail_and_initialized",
                 "is_torchelastic_launched", "get_world_size"}
# (and the job's GPU count, `num_gpus > 1` - not `gpu`, often the rank itself, nor HF's `n_gpu`,
# one process's GPUs for DataParallel, 1 in each DDP process)
UNIFORM_NAME = re.compile(r"(?:^|_)(?:distributed|ddp|dist|multi_gpu|multigpu)(?:_enabled|_on|_mode|_run)?$|world_size$"
                          r"|(?:^|_)(?:num_?gpus|ngpus)$", re.IGNORECASE)
# A count of the GPUs the run uses, by its name (`ngpus`, `num_gpus`, `n_gpus`)
GPU_COUNT = re.compile(r"(?:^|_)(?:num_?gpus|n_?gpus)$", re.IGNORECASE)
# A flag or call whose name says the run is distributed (`is_distributed`, `dist.is_initialized()`).
# A switch whose name says the negation (`args.no_ddp`, `disable_dist`): true where the run is
# one process, not where it is distributed.
NEGATED_SWITCH = re.compile(r"^(?:no|not|non|disable|without)_", re.IGNORECASE)
# A count of processes (GPUs) per node.
PER_NODE = re.compile(r"per_node|local_world_size|LOCAL_WORLD_SIZE|LOCAL_SIZE|n_?gpus|num_gpus|gpus|"
                      r"device_count|nproc|local_size", re.IGNORECASE)
# A rank within the node, not within the job.
LOCAL = re.compile(r"local_?rank|LOCALID|local_process_index|get_local_rank|current_device", re.IGNORECASE)
# The index of a node (machine) within the job: `node_rank == 0 and local_rank == 0` is the job's
# rank 0 alone, not one rank per node.
NODE_INDEX = re.compile(r"node_?(?:rank|id|idx|index)|NODEID|GROUP_RANK|group_rank|machine_rank|MACHINE_RANK",
                        re.IGNORECASE)
# The most GPUs a node holds (8 is usual, 16 on some): a literal modulus up to this is per node.
GPUS_PER_NODE_MAX = 16
# Functions that start one process per rank, the first argument of the target being its index.
SPAWNERS = {"spawn", "start_processes"}
# What a rank is compared with when the test is about the job's size (`if rank >= size: return`).
# What a list of the node's devices is called (`len(visible_devices)`, `len(args.gpus)`)
DEVICE_WORDS = re.compile(r"device|gpu|CUDA_VISIBLE", re.IGNORECASE)
WORLD_NAMES = frozenset({"world_size", "size", "world", "nprocs", "num_procs", "n_procs", "nranks", "num_ranks"})


def _past_sanity_check(part: ast.AST) -> bool:
    """`not trainer.sanity_checking` (Lightning's Trainer): false only during the few validation
    batches run before training, on every rank alike, and true on every validation after."""
    return isinstance(part, ast.UnaryOp) and isinstance(part.op, ast.Not) and \
        isinstance(part.operand, ast.Attribute) and part.operand.attr == "sanity_checking"


class RankFlow:
    """Rank values and rank tests of one program, answered per scope and cached."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self._rank: dict[tuple[int, int, int], bool] = {}
        self._flag: dict[tuple[int, int, int], Optional[RankTest]] = {}
        self._returns: dict[int, Optional[RankTest]] = {}
        self._returns_rank: dict[tuple[int, int], bool] = {}
        self.spawn_params: set[tuple[int, str]] = set()  # (id(function), its first parameter)
        self.spawn_targets: list = []  # the local functions mp.spawn starts as the ranks
        self.spawners: dict[int, list] = {}  # id(target) -> the functions whose mp.spawn starts it
        self.attributes: dict[str, list[tuple[ast.AST, Function]]] = {}  # "args.gpu" -> values
        # (id(class), field) -> values, for `self.device, self.device_id = get_device_and_id()`
        # in a method of the class: the helper's returned element at the field's place
        self.unpacked_fields: dict[tuple[int, str], list[tuple[ast.AST, Function]]] = {}
        # what the program hands init_process_group as `rank=`: the global rank by definition,
        # however it is spelled (`opt.gpu_ranks[device_id]`): attribute and subscript texts, and
        # (function, name) for a plain name
        self.init_rank_texts: set[str] = set()
        self.init_rank_names: set[tuple[int, str]] = set()
        # (class, field) for `rank=self.local_rank` in a method: the field of any instance of
        # that class (`engine.local_rank` in the script) holds the job's rank
        self.init_rank_fields: set[tuple[str, str]] = set()
        # (the dict's last name, key) for `config['local_rank'] = <what rank= is handed>`
        self.init_rank_keys: set[tuple[str, str]] = set()
        # (function, what it hands init_process_group as rank=, None where nothing) per call
        self.init_calls: list[tuple[Function, Optional[ast.AST]]] = []
        # (function, what it hands init_process_group as world_size=) per call
        self.init_worlds: list[tuple[Function, ast.AST]] = []
        # the flags every init_process_group call is set up under, each a conjunct of the test
        # around it (`if args.use_gpu and args.use_multi_gpu:`): true on every rank of the
        # distributed run, so beside a rank test they split nothing (by their last name)
        self.init_switch_parts: set[str] = set()
        # (and the flags negated in that test: `if args.dist and not args.only_test: init(...)`)
        self.init_switch_negated: set[str] = set()
        # the comparisons an init_process_group call sits under (`if args.nodes > 1:`): the
        # distributed run's own switch, which the options' defaults never settle off
        self.init_switch_tests: set[str] = set()
        self._items: dict = {}  # id(`d.get("k", v)`) -> its `d["k"]`; (id(`d["k"]`), id(`vars(ns)`)) -> `ns.k`

    def _callers_switch_parts(self, fn: Function, negated: bool = False) -> set[str]:
        """The flags conjoined in the tests around every call of fn, a set-up helper that joins
        the group with no test of its own (`if distr: setup(rank, world)`): the distributed run
        is where they hold. Empty where some call is under none, or fn is not called by name."""
        if fn.node is None or fn.node.__class__ is ast.Module:
            return set()
        found: Optional[set] = None
        for caller, call, _ in self._call_sites(fn):
            parts = _switch_parts(caller, call, negated)
            found = parts if found is None else found & parts
            if not found:
                return set()
        return found or set()

    def live_spawn_targets(self) -> list:
        """The spawn targets whose mp.spawn runs: a launcher helper the script defines (or
        imports) and never calls starts no ranks, and the script's own process is then a rank
        (SCRL's unused `launch()` beside a __main__ that joins the group itself)."""
        reached = getattr(self.program, "reachable", None)
        if reached is None:  # asked before the walk: every target
            return list(self.spawn_targets)
        return [t for t in self.spawn_targets if any(fn in reached for fn in self.spawners.get(id(t), ()))]

    # ------------------------------------------------------------------ set-up
    def index(self) -> None:
        """What needs the whole program once: spawn targets, `obj.attr = ...` outside classes."""
        program = self.program
        joins = []  # (a helper that joins the group, the rank it hands init_process_group)
        index_copies = []  # (a worker joining with its first parameter, the fields it copies it into)
        for fn in program.functions:
            for call in fn.own_calls:
                if last_name(call.func) == "init_process_group":
                    given = next((kw.value for kw in call.keywords if kw.arg == "rank"), None)
                    if given is None and len(call.args) > 4:
                        given = call.args[4]
                    self.init_calls.append((fn, given))
                    world = next((kw.value for kw in call.keywords if kw.arg == "world_size"), None)
                    if world is None and len(call.args) > 3:
                        world = call.args[3]
                    if world is not None:
                        self.init_worlds.append((fn, world))
                    # (a flag holds in the distributed run only where every set-up needs it)
                    parts = _switch_parts(fn, call) or self._callers_switch_parts(fn)
                    self.init_switch_tests.update(
                        text(node.test) for node in walk(fn.node) if isinstance(node, ast.If)
                        and isinstance(node.test, ast.Compare) and any(n is call for part in node.body for n in walk(part)))
                    self.init_switch_parts = parts if len(self.init_calls) == 1 else self.init_switch_parts & parts
                    negated = _switch_parts(fn, call, negated=True) or self._callers_switch_parts(fn, negated=True)
                    self.init_switch_negated = negated if len(self.init_calls) == 1 else self.init_switch_negated & negated
                    if isinstance(given, (ast.Attribute, ast.Subscript)):
                        self.init_rank_texts.add(text(given))
                        # `config['local_rank'] = args.local_rank` beside it: that key of that
                        # config holds the job's rank too, wherever the config is handed
                        # (`self.config['local_rank']` in DBNet's trainer)
                        said = text(given)
                        self.init_rank_keys.update(
                            (last_name(t.value) or "", t.slice.value) for n in fn.own
                            if isinstance(n, ast.Assign) and text(n.value) == said for t in n.targets
                            if isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant)
                            and isinstance(t.slice.value, str))
                        if fn.cls is not None and isinstance(given, ast.Attribute) and \
                                isinstance(given.value, ast.Name) and given.value.id == "self":
                            self.init_rank_fields.add((fn.cls.name, given.attr))
                    elif isinstance(given, ast.Name):
                        self.init_rank_names.add((id(fn), given.id))
                        # `rank = local_rank; gpu = local_rank` then `init_process_group(rank=rank)`
                        # (Pangu-motion's spawned worker): plain copies of one name are the rank
                        # init_process_group takes, whatever each is called
                        source = _copied_from(fn, given.id)
                        if source is not None:
                            self.init_rank_names.update((id(fn), n) for n in (source, *_copies_of(fn, source)))
                        # `local_rank = get_local_rank()` handed as rank=: that helper's answer is
                        # the job's rank wherever it is asked again (lab4d's save test)
                        self.init_rank_texts.update(
                            text(v) for _, v in fn.bindings.get(given.id, ())
                            if isinstance(v, ast.Call) and not v.args and not v.keywords)
                        # `self.local_rank = local_rank` beside it: the object's field holds it too
                        # (OpenTransformer's Trainer hands its `local_rank` parameter as rank=)
                        # (or any object's, where the spawned worker always joins with its spawn
                        # index: `args.local_rank = local_rank` then `init_process_group(rank=
                        # local_rank)`, Prune_Pytorch_DDP: one node, the index is the job's rank)
                        copies = [t for n in fn.own_of(ast.Assign) if isinstance(n.value, ast.Name)
                                  and n.value.id == given.id for t in n.targets
                                  if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)]
                        self.init_rank_texts.update(text(t) for t in copies if t.value.id == "self")
                        # `rank = args.nr * args.gpus + gpu` with `args.gpus = 1` the only value it is
                        # ever set to: one process a node, the node's index is the job's rank
                        self.init_rank_texts.update(
                            text(index) for _, v in fn.bindings.get(given.id, ())
                            if (index := self._one_per_node_index(v, fn)) is not None)
                        if not fn.__dict__.get("_call_conds", {}).get(id(call)) and given.id in fn.params[:1]:
                            index_copies.append((fn, [text(t) for t in copies if t.value.id != "self"]))
                    if given is not None and not isinstance(fn.node, ast.Module):
                        joins.append((fn, given))
                started = call.args[0] if call.args else next(
                    (kw.value for kw in call.keywords if kw.arg == "fn"), None)  # mp.spawn(fn=worker, ...)
                if last_name(call.func) in SPAWNERS and started is not None:
                    full = program.qualify(call.func, fn) or ""
                    if "multiprocessing" in full or full.startswith(("mp.", "xmp.")) or "spawn" == full:
                        targets = program.started(started, fn)
                        if not targets and started.__class__ is ast.Name and started.id in fn.params \
                                and not fn.bindings.get(started.id):
                            # `def run_demo(demo_fn, world_size): mp.spawn(demo_fn, ...)` (the
                            # tutorial's): what its callers hand it, one level up
                            targets = self._handed_target(fn, started.id)
                        for target in targets:
                            self.spawn_targets.append(target)
                            self.spawners.setdefault(id(target), []).append(fn)
                            if target.params:
                                self.spawn_params.add((id(target), target.params[0]))
            for name, values in fn.attr_bindings.items():
                self.attributes.setdefault(name, []).extend((v, fn) for v in values)
        for fn, copied in index_copies:
            if fn in self.spawn_targets:  # (known once every mp.spawn is seen)
                self.init_rank_texts.update(copied)
        for helper, given in joins:
            self._rank_at_callers(helper, given)
        unpacking = {id(n) for f in program.files for n in f.of(ast.Assign)
                     if len(n.targets) == 1 and isinstance(n.targets[0], (ast.Tuple, ast.List))
                     and isinstance(n.value, ast.Call) and any(isinstance(t, ast.Attribute) for t in n.targets[0].elts)}
        for fn in program.functions if unpacking else ():
            for name, value, scope in self._unpacked_attributes(fn, unpacking):
                if name.startswith("self.") and name.count(".") == 1:
                    klass = program._class_of_fn(fn)
                    if klass is not None:
                        self.unpacked_fields.setdefault((id(klass), name[5:]), []).append((value, scope))
                    continue
                self.attributes.setdefault(name, []).append((value, scope))

    def _handed_target(self, helper: Function, param: str) -> list:
        """The local functions the callers of helper hand it as the parameter param (by place
        or by name): the ranks a launcher helper's mp.spawn starts. Asked before the walk
        binds the arguments, so read from the calls themselves."""
        found = []
        for caller, _, bound in self._call_sites(helper):
            if param in bound:
                found += [t for t in self.program.started(bound[param], caller) if t not in found]
        return found

    def _call_sites(self, helper: Function):
        """(caller, call, parameter -> argument) for each call of helper the program makes, by
        its name and resolved to it; positional arguments bound up to the first `*spread`."""
        params = [p for p in helper.params if p != "self"]
        for caller in self.program.functions:
            for call in caller.own_calls:
                if last_name(call.func) != helper.name or helper not in self.program.resolve(call.func, caller)[0]:
                    continue
                plain = next((i for i, a in enumerate(call.args) if a.__class__ is ast.Starred), len(call.args))
                bound = dict(zip(params, call.args[:plain]))
                bound.update({kw.arg: kw.value for kw in call.keywords if kw.arg})
                yield caller, call, bound

    def _rank_at_callers(self, helper: Function, given: ast.AST) -> None:
        """`def multi_init(device_id, gpu_ranks): init_process_group(..., rank=gpu_ranks[device_id])`
        called as `multi_init(device_id, args.gpu_ranks)`: in the caller, `args.gpu_ranks[device_id]`
        is the rank too (PreSumm builds its trainer with it). One level up, by the call's arguments."""
        params = set(helper.params)
        if not params & {n.id for n in walk(given) if isinstance(n, ast.Name)}:
            return
        for caller, call, bound in self._call_sites(helper):
            if isinstance(given, ast.Name):
                if isinstance(bound.get(given.id), ast.Name):
                    self.init_rank_names.add((id(caller), bound[given.id].id))
                continue
            swapped = _Substitute(bound).visit(copy.deepcopy(given))
            self.init_rank_texts.add(text(swapped))

    def _unpacked_attributes(self, fn: Function, unpacking: set):
        """`args.rank, args.local_rank, args.world_size = get_envs()`: each attribute gets its
        element of the tuples the local helper returns (in the helper's order, whatever the
        names on the left say). unpacking: the ids of such assignments in the program."""
        if fn.file.display not in self._files_unpacking(unpacking):
            return
        for node in fn.own:
            if id(node) not in unpacking:
                continue
            elts = node.targets[0].elts
            keys = [dotted(t) if isinstance(t, ast.Attribute) else None for t in elts]
            if not any(keys):
                continue
            for target in self.program.resolve(node.value.func, fn)[0] or self._by_name_pattern(node.value.func, fn):
                for ret in _returns(target):
                    if isinstance(ret, (ast.Tuple, ast.List)) and len(ret.elts) == len(elts):
                        yield from ((key, value, target) for key, value in zip(keys, ret.elts) if key)

    def _by_name_pattern(self, func: ast.AST, fn: Function) -> list:
        """`getattr(utils, 'init_dist_%s' % launcher)(...)`: the local module's functions whose
        names fit the pattern (the launcher is only known at run time; each candidate is read)."""
        if not (isinstance(func, ast.Call) and last_name(func.func) == "getattr" and len(func.args) >= 2):
            return []
        prefix = _name_prefix(func.args[1])
        if not prefix:
            return []
        return [t for t in _dispatched(self.program, func, fn)
                if self.program.is_function(t) and t.name.startswith(prefix)]

    def _files_unpacking(self, unpacking: set) -> set:
        files = self.__dict__.get("_unpacking_files")
        if files is None:
            files = self.__dict__["_unpacking_files"] = {
                f.display for f in self.program.files if any(id(n) in unpacking for n in f.of(ast.Assign))}
        return files

    # ------------------------------------------------------------------ values
    def _offset_cancels(self, node: ast.BinOp, fn: Function, depth: int) -> bool:
        """`iteration - rank` where `iteration = first_iter + rank` and nothing moves it but
        `iteration += world_size` (each rank counts its own interleaved steps): the rank added
        is taken off again, the difference is every rank's alike."""
        counter, offset = node.left, text(node.right)
        if not isinstance(counter, ast.Name) or counter.id in fn.params or counter.id in fn.kwonly:
            return False
        bound = [value for _, value in fn.bindings.get(counter.id, [])]
        if not bound or not all(
                isinstance(v, ast.BinOp) and isinstance(v.op, ast.Add) and any(
                    text(side) == offset and not self.is_rank(other, fn, depth)
                    for side, other in ((v.left, v.right), (v.right, v.left)))
                for v in bound):
            return False
        steps = [n for n in fn.own_of(ast.AugAssign) if isinstance(n.target, ast.Name)
                 and n.target.id == counter.id]
        return all(isinstance(n.op, (ast.Add, ast.Sub)) and not self.is_rank(n.value, fn, depth) for n in steps)

    def is_rank(self, node: ast.AST, fn: Function, depth: int = 6) -> bool:
        """The expression's value is (a function of only) this process's rank."""
        # by depth too: an answer worked out with the depth nearly spent (a name whose value is
        # followed no further reads as "not a rank") is not the answer a fresh question gets
        # (OpenNMT's gpu_rank, first asked at the end of a long chain, was then never a rank)
        key = (id(node), id(fn), depth)
        if key in self._rank:
            return self._rank[key]
        self._rank[key] = False  # a cycle reads as "not a rank"
        found = self._is_rank(node, fn, depth)
        self._rank[key] = found
        return found

    def _is_rank(self, node: ast.AST, fn: Function, depth: int) -> bool:
        given = self.program._kwargs_item(node, fn) if node.__class__ in (ast.Call, ast.Subscript) else None
        if given is not None:
            # `kwargs.get("local_rank", 0)` of the function's own `**kwargs`: what its callers pass
            return depth > 0 and any(self.is_rank(v, scope, depth - 1) for v, scope in given
                                     if not is_const(v, None, -1))
        item = self._item(node)
        if item is not None:
            return self.is_rank(item, fn, depth)
        if isinstance(node, ast.Call):
            if env_key(node) in RANK_ENV:
                return True
            name = last_name(node.func)
            if name in RANK_CALLS:
                return True
            if name in ("int", "str") and node.args:
                return self.is_rank(node.args[0], fn, depth)
            if name == "getattr" and isinstance(node.func, ast.Name) and len(node.args) >= 2:
                # `getattr(opts, "ddp.rank", 0)`: options kept under dotted names (CVNets), read
                # by the field's own name as `opts.rank` would be
                key = node.args[1]
                return isinstance(key, ast.Constant) and isinstance(key.value, str) and \
                    bool(RANK_NAME.match(key.value.rsplit(".", 1)[-1]))
            targets, _ = self.program.resolve(node.func, fn)
            if targets:
                # a helper that only hands back what it is handed (`resolve_param(value, config,
                # attr)` returning `value if value is not None else getattr(config, attr, None)`):
                # judged on what this call hands it, not on what some other call hands it
                # (xFFL's `resolve_param(value=fedopt, ..., attr="fedopt")` beside the
                # `attr="rank"` one)
                handed = [self._handed_back(t, node, fn, depth) for t in targets]
                if all(h is not None for h in handed):
                    return any(handed)
                return any(self._function_returns_rank(t, depth) for t in targets)
            # a library's parallel-group rank, named as one (fairscale's
            # `fs_init.get_data_parallel_rank()`, Megatron's `mpu.get_tensor_model_parallel_rank()`)
            if bool(name) and name.startswith("get_") and bool(RANK_NAME.match(name[4:])):
                return True
            # a launcher library's own getter, `hvd.rank()` (Horovod), `dist.local_rank()` of
            # torchpack.distributed (Tiny-Face's `core/utils/dist.py`): a bare `rank()` of an
            # imported module
            return bool(name) and not node.args and not node.keywords and RANK_NAME.match(name) is not None \
                and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) \
                and bool(fn.module.imports.get(node.func.value.id))
        if node.__class__ is ast.Attribute and node.value.__class__ is ast.Name and \
                self._module_constant(node, fn):
            return False  # `ptu.dist_rank` of a module that only ever sets it to 0: 0 on every rank
        if isinstance(node, ast.Attribute) and node.attr in self.program.rank_option_unset() and \
                (node.value.__class__ is ast.Name and node.value.id != "self" or _on_self(node.value)):
            return False  # `opts.rank` no launch hands and no code that runs sets (an init_process_group(rank=opts.rank) in a helper nothing calls included): its default everywhere
        if node.__class__ in (ast.Subscript, ast.Attribute) and self.init_rank_texts and \
                self._init_rank_text(node, fn):
            return True  # the expression init_process_group is handed as its rank
        if node.__class__ is ast.Name and (id(fn), node.id) in self.init_rank_names:
            return True
        if self._init_rank_field(node, fn):
            return True
        if node.__class__ is ast.Subscript and node.value.__class__ is ast.Call and depth > 0:
            # `get_dist_info()[0]` (mmcv's helper returns `rank, world_size`, `0, 1` without a
            # group): that element of what it returns, its fallback constants set aside
            indexed = self.program.indexed(node, fn)
            if indexed:
                return self._ranks_but_fallbacks(indexed, depth - 1)
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and depth > 0 \
                and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int) \
                and node.value.id in fn.params and not fn.bindings.get(node.value.id):
            # `int(distributed_state[1])` of a parameter every caller hands a tuple literal,
            # `app_main(args, distributed_state=(world_size, rank))`: that element there
            at = node.slice.value
            handed, todo, seen = [], list(fn.arguments.get(node.value.id, [])), set()
            while todo and len(seen) < 8:
                given, caller = todo.pop()
                if id(given) in seen:
                    continue
                seen.add(id(given))
                if isinstance(given, (ast.Tuple, ast.List)) and len(given.elts) > at:
                    handed.append((given.elts[at], caller))
                elif isinstance(given, ast.Name) and given.id in caller.params and not caller.bindings.get(given.id):
                    todo.extend(caller.arguments.get(given.id, []))  # (a wrapper handing its own on)
            if handed and any(self.is_rank(v, caller, depth - 1) for v, caller in handed):
                return True
        if isinstance(node, ast.Subscript):
            key = node.slice
            if isinstance(key, (ast.Name, ast.Attribute)):
                # `config[KEY.RANK]` with `RANK = "rank"` in a module of keys: the key's constant
                named = [v for v, _ in self.program.values_of(key, fn, 2) if isinstance(v, ast.Constant)]
                owner = self.program.symbol(key.value.id, fn) if isinstance(key, ast.Attribute) and \
                    isinstance(key.value, ast.Name) else None
                if owner is not None and owner.__class__.__name__ == "Module" and owner.body is not None:
                    named = [v for _, v in owner.body.bindings.get(key.attr, []) if isinstance(v, ast.Constant)]
                if len(named) == 1:
                    key = named[0]
            # config["rank"], cfg["local_rank"]: a rank kept in a dict
            if env_key(node) in RANK_ENV or (isinstance(key, ast.Constant) and isinstance(key.value, str)
                                             and bool(RANK_NAME.match(key.value))):
                return True
            if isinstance(key, ast.Attribute) and (dotted(node.value) or "").endswith("environ") and \
                    self.program.option_defaults().get(key.attr) in RANK_ENV:
                return True  # `os.environ[args.env_rank]`, the option's default "LOCAL_RANK"
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and depth > 0:
                # `config["device"] = rank` in the spawned worker, read back as `config["device"]`
                # (by a trainer handed config): the key holds the rank wherever it is stored
                stores = self._key_stores().get((last_name(node.value) or "", key.value), ())
                if stores and all(self.is_rank(v, scope, depth - 1) for v, scope in stores):
                    return True
            # `rank_list[rank]`, `devices[local_rank]`: the rank's own entry of a list every rank
            # holds alike (masif_npi's `gpu_id`), a function of the rank alone
            return isinstance(node.slice, (ast.Name, ast.Attribute)) and depth > 0 and \
                self.is_rank(node.slice, fn, depth - 1)
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Sub) and self._offset_cancels(node, fn, depth):
                return False  # `iteration - rank` of `iteration = first + rank`, stepped alike
            return self.is_rank(node.left, fn, depth) or self.is_rank(node.right, fn, depth)
        if isinstance(node, ast.IfExp):  # dist.get_rank() if dist.is_initialized() else 0
            if self._never_has(node.test, fn):
                # `config.local_rank if hasattr(config, "local_rank") else 0` of a config class
                # with no such field: the fallback, on every rank
                return self.is_rank(node.orelse, fn, depth)
            return self.is_rank(node.body, fn, depth) or self.is_rank(node.orelse, fn, depth)
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) and len(node.values) == 2 \
                and is_const(node.values[1], 0, None, "0", ""):
            # `os.environ.get("OMPI_COMM_WORLD_RANK") or 0`: the rank, 0 where it is unset
            return self.is_rank(node.values[0], fn, depth)
        if isinstance(node, ast.Attribute) and node.attr in self.program.local_rank_unset() and \
                isinstance(node.value, ast.Name) and node.value.id != "self":
            return False  # `args.local_rank` under torchrun, which never hands it: its default everywhere
        if isinstance(node, ast.Attribute) and node.attr == "index" and depth > 0 and any(
                self._device_of_rank(v, scope, depth - 1) for v, scope in self._values(node.value, fn) or ()):
            # `device.index` of `device = torch.device("cuda", rank)` (or `f"cuda:{rank}"`): the
            # rank the device was made for (SemanticSeg's `if device.index == 0:`)
            return True
        if isinstance(node, ast.Attribute) and depth > 0 and self._property_rank(node, fn, depth):
            return True  # `config.cuda_rank`, a property returning dist.get_rank()
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id != "self" \
                and depth > 0:
            # `cfg["gpu_id"] = int(os.environ["LOCAL_RANK"])` in the launcher, read as `cfg.gpu_id`
            # by the agent it builds (an OmegaConf config answers both): what the key was given,
            # but for a constant on the side that runs without a process group
            stores = [(v, scope) for v, scope in self._key_stores().get((node.value.id, node.attr), ())
                      if not (isinstance(v, ast.Constant) and self._on_the_single_side(v, scope))]
            if stores and all(self.is_rank(v, scope, depth - 1) for v, scope in stores):
                return True
        if isinstance(node, ast.Attribute) and depth > 0 and _on_self(node.value):
            # `opts.gpu = opts.local_rank` in the launcher (`else: opts.gpu = 0`), read as
            # `self.opt.gpu` by the trainer that keeps the options (AFNet): what every store of
            # that field on an options object gave it, but the constants of the one-process side
            stores = [(v, scope) for v, scope in self._key_stores().get(("", "." + node.attr), ())
                      if not (isinstance(v, ast.Constant) and self._on_the_single_side(v, scope))]
            if stores and all(self.is_rank(v, scope, depth - 1) for v, scope in stores):
                return True
        if isinstance(node, (ast.Name, ast.Attribute)):
            if isinstance(node, ast.Name) and self._spawn_index(node.id, fn):
                return True
            if isinstance(node, ast.Name) and _read_in_loop_over_ranks(node, fn):
                # `for rank in range(self.world_size): self._add_peers(rank, ...)`: every rank in
                # turn, the same on every process (a gossip graph's phone book built whole)
                return False
            values = self._values(node, fn)
            spelled = bool(RANK_NAME.match((last_name(node) or "").lstrip("_")))  # `__rank`: a private global
            if values is not None:
                flows = depth > 0 and any(self.is_rank(v, scope, depth - 1) for v, scope in values
                                          if not is_const(v, None, -1))
                # a local name is what it was assigned; `args.rank = 0` on one path does not
                # make an argparse field named rank anything else than a rank
                if flows:
                    return True
                if spelled and all(isinstance(v, ast.Constant) or is_const(v, -1) for v, _ in values):
                    return True  # `zero_first(local_rank=-1)`: a rank parameter given a constant here
                if isinstance(node, ast.Name) and depth > 0 and self._unpacked_rank(node.id, fn, depth - 1):
                    return True  # (`world_size, rank = init_distributed()` on the other branch)
                return spelled and not isinstance(node, ast.Name) and not _on_self(node)
            if isinstance(node, ast.Name) and depth > 0 and self._unpacked_rank(node.id, fn, depth - 1):
                return True
            return spelled
        return False

    def _never_has(self, test: ast.AST, fn: Function) -> bool:
        """`hasattr(obj, "x")` where obj is an instance of a local class (a dataclass config)
        whose family declares no field, method or attribute `x`, and no code the lint reads
        stores `.x` anywhere (nor calls setattr): false on every way."""
        if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "hasattr"
                and len(test.args) == 2 and isinstance(test.args[1], ast.Constant)
                and isinstance(test.args[1].value, str)):
            return False
        program, attr = self.program, test.args[1].value
        klass = program.class_of(test.args[0], fn)
        if klass is None:
            return False
        if program.library_derived(klass):
            return False  # (a library base may have it)
        family = [klass, *program.bases(klass)]
        if any(attr in k.methods or attr in k.attrs or any(
                (isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and st.target.id == attr)
                or (isinstance(st, ast.Assign) and any(isinstance(t, ast.Name) and t.id == attr for t in st.targets))
                for st in k.node.body) for k in family):
            return False
        # (a store of `.x`, or a setattr, on an object that may be one of them: `self.x` in the
        # family's own methods, or a receiver whose class is this one or not known)
        def may_be(receiver: ast.AST, scope: Function) -> bool:
            if isinstance(receiver, ast.Name) and receiver.id == "self":
                return scope.cls in family
            return program.class_of(receiver, scope) in (klass, None)
        for scope in program.functions:
            for n in scope.own:
                if isinstance(n, ast.Attribute) and n.attr == attr and isinstance(n.ctx, ast.Store) \
                        and may_be(n.value, scope):
                    return False
                if isinstance(n, ast.Call) and last_name(n.func) == "setattr" and n.args and may_be(n.args[0], scope):
                    return False
        return True

    def _unpacked_rank(self, name: str, fn: Function, depth: int) -> bool:
        """`r, _ = ddp_info()` where the local helper returns `get_rank(), get_world_size()` with
        a distributed process group and `0, 1` without: r is the rank. Its element of each tuple
        returned, the constants of the run without a process group set aside, as
        _function_returns_rank reads a helper that returns the rank alone."""
        return self._ranks_but_fallbacks(self.program.unpacked(name, fn), depth)

    def _ranks_but_fallbacks(self, values: list, depth: int) -> bool:
        """Every value but the constants a run without a process group answers (0, -1, None) is
        the rank, and there is one such."""
        ranked = [(v, scope) for v, scope in values if not is_const(v, 0, -1, None)]
        return bool(ranked) and all(self.is_rank(v, scope, depth) for v, scope in ranked)

    def _device_of_rank(self, value: ast.AST, fn: Function, depth: int) -> bool:
        """`torch.device("cuda", rank)` or `torch.device(f"cuda:{rank}")` (or a name holding one)."""
        if isinstance(value, ast.Name) and depth > 0:
            return any(self._device_of_rank(v, scope, depth - 1) for v, scope in self._values(value, fn) or ()
                       if v is not value)
        if not (isinstance(value, ast.Call) and last_name(value.func) == "device" and value.args and
                (self.program.qualify(value.func, fn) or "").startswith("torch.")):
            return False
        parts = [v.value for v in value.args[0].values if isinstance(v, ast.FormattedValue)] \
            if isinstance(value.args[0], ast.JoinedStr) else value.args[1:2]
        return any(self.is_rank(part, fn, depth) for part in parts)

    def _property_rank(self, node: ast.Attribute, fn: Function, depth: int) -> bool:
        """The attribute is a `@property` of the object's local class that returns the rank."""
        klass = self.program._class_of_fn(fn) if isinstance(node.value, ast.Name) and node.value.id == "self" \
            else self.program.class_of(node.value, fn)
        method = self.program.method(klass, node.attr) if klass is not None else None
        if method is None or not any(last_name(d) == "property" for d in getattr(method.node, "decorator_list", [])):
            return False
        return self._function_returns_rank(method, depth - 1)

    def _values(self, node: ast.AST, fn: Function) -> Optional[list[tuple[ast.AST, Function]]]:
        """What the source says a name or attribute holds; None when it says nothing."""
        program = self.program
        if isinstance(node, ast.Name):
            found = program.lookup(node.id, fn)
            if found and found[0][2] is fn and fn.node is not None and len(found) > 1:
                # `rank = dist.get_rank()` then `rank = rank % torch.cuda.device_count()`: the
                # binding the flow brings to this read decides, not every one the name has
                flow = reaching.reaching_values(fn.node, node.id, node, run=self._run_sides(fn))
                if flow:
                    kept = {id(v) for v in flow}
                    found = [bound for bound in found if id(bound[1]) in kept] or found
            if found:
                return [(value, scope) for _, value, scope in found]
            passed = program._passed(node.id, fn)
            return passed or None
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                klass = program._class_of_fn(fn)
                found = program._attr(klass, node.attr) if klass is not None else []
                if found:
                    return found
                for owner in ([klass, *program.bases(klass)] if klass is not None and self.unpacked_fields else ()):
                    found = self.unpacked_fields.get((id(owner), node.attr))
                    if found:  # (set only by unpacking a local helper's tuple in a method)
                        return found
            key = dotted(node)
            if key and key.startswith("self.") and key not in self.attributes and key.count(".") >= 2:
                # `self.args.gpu` where the class keeps its `args` parameter as `self.args`: what
                # the script sets `args.gpu` to (VL-T5's trainer, handed the parsed options)
                head = key.split(".")[1]
                klass = program._class_of_fn(fn)
                kept = program._attr(klass, head) if klass is not None else []
                if kept and all(v.__class__ is ast.Name and v.id == head for v, _ in kept):
                    key = key[5:]
            if key and key in self.attributes:
                if not key.startswith("self."):
                    return self.attributes[key]
                klass = program._class_of_fn(fn)  # `self.conf.x`: this class's own methods set it
                found = [(v, f) for v, f in self.attributes[key] if program._class_of_fn(f) is klass]
                return found or None
            if isinstance(node.value, (ast.Attribute, ast.Name)) and not _on_self(node) and \
                    not (isinstance(node.value, ast.Name) and node.value.id == "self"):
                # `self.env.master` where env is a record built `Env(master=rank == 0)`: the field's
                # value at each construction
                klass = program.class_of(node.value, fn)
                if klass is None:
                    # (`self.distenv.master` of an env the config carries, `config.runtime.distenv =
                    # dist_init(args)`: its class is not followed there, but one local record
                    # class alone has the field - GIMM-VFI's `DistEnv(master=dist.get_rank() == 0)`)
                    klass = program.sole_record_with(node.attr)
                found = program._record_fields(klass, node.attr) if klass is not None else []
                # or what the class's own methods set it to (`mon.is_main` where Monitor's
                # __init__ sets `self.is_main = int(os.getenv("LOCAL_RANK", 0)) == 0`: JoeyLLM)
                found = found or (program._attr(klass, node.attr) if klass is not None else [])
                if not found and klass is None:
                    found = program.tuple_record_fields(node.attr)
                return found or None
            if node.value.__class__ is ast.Call:
                # `GlobalEnv.get().master`: a singleton accessor's record, one namedtuple type
                # alone with that field (cxr-clip's environment record)
                return program.tuple_record_fields(node.attr) or None
        return None

    def _run_sides(self, fn: Function):
        """The side of an `if` a distributed run takes, for reaching_values: the body of
        `if is_distributed:` (True), the `else:` of `if world_size == 1:` (False), else None. One
        per function, kept: the reaching answers are keyed by it."""
        kept = self.__dict__.setdefault("_run_side_tests", {})
        found = kept.get(id(fn))
        if found is None:
            def found(test: ast.AST) -> Optional[bool]:
                # (a switch that says so: distributed_run reads any alike flag as the switch,
                # where the test it is asked of already guards a distributed step)
                inner = test.operand if test.__class__ is ast.UnaryOp and test.op.__class__ is ast.Not else test
                said = last_name(inner.func if inner.__class__ is ast.Call else inner) or ""
                if not (_DIST_SWITCH.search(said) or _world_compared(inner)):
                    return None
                if self.distributed_run(test, fn):
                    return True
                if self.one_process_run(test, fn) or self.single_process(test, fn):
                    return False
                return None
            kept[id(fn)] = found
        return found

    def _world_size(self, node: ast.AST, fn: Function) -> bool:
        """The number of ranks in the job: `dist.get_world_size()`, a `world_size`, or a name
        (a parameter) given one."""
        return self._count_of(node, fn, lambda n: (
            isinstance(n, ast.Call) and last_name(n.func) == "get_world_size") or (
            isinstance(n, (ast.Name, ast.Attribute)) and (last_name(n) or "").lower() in WORLD_NAMES))

    def _count_of(self, node: ast.AST, fn: Function, said) -> bool:
        """The node is the count `said` recognises, as written or as a name bound to one."""
        if said(node):
            return True
        return isinstance(node, ast.Name) and any(said(v) for v, _ in self.program.values_of(node, fn, 2))

    def _device_count(self, node: ast.AST, fn: Function) -> bool:
        """The number of devices the node shows: `torch.cuda.device_count()`, `len()` of a list of
        devices or GPUs (`CUDA_VISIBLE_DEVICES` split), or a name given one."""
        return self._count_of(node, fn, lambda n: isinstance(n, ast.Call) and (
            last_name(n.func) == "device_count" or (
                last_name(n.func) == "len" and len(n.args) == 1 and DEVICE_WORDS.search(text(n.args[0], 200)))))

    def _asks_the_group(self, value: ast.AST, fn: Function) -> bool:
        """`dist.get_rank()`, or a name bound only to it: the job's rank as the group tells it."""
        found = [value] if not isinstance(value, ast.Name) else [v for v, _ in self._values(value, fn) or ()]
        return bool(found) and all(isinstance(v, ast.Call) and last_name(v.func) == "get_rank" and not v.args
                                   for v in found)

    def _spawn_index(self, name: str, fn: Function) -> bool:
        scope: Optional[Function] = fn
        while scope is not None:
            if name in scope.params:
                return (id(scope), name) in self.spawn_params
            scope = scope.parent
        return False

    def _handed_back(self, target: Function, call: ast.Call, fn: Function, depth: int) -> Optional[bool]:
        """Whether this call's return is a rank, where every return of target reads only target's
        parameters (and `getattr(obj, name, default)` of them): the arguments this call hands
        those parameters, a `getattr` by the name this call gives. None where target computes
        anything else (a helper's own `dist.get_rank()`)."""
        node = target.node
        if node is None or isinstance(node, ast.Module) or target.cls is not None or depth <= 0:
            return None
        params = [a.arg for a in node.args.posonlyargs + node.args.args] + [a.arg for a in node.args.kwonlyargs]
        returns = _returns(target)
        if not returns or not all(_passes_through(r, set(params)) for r in returns):
            return None
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords) or \
                node.args.vararg is not None:
            return None
        positional = [a.arg for a in node.args.posonlyargs + node.args.args]
        defaults = dict(zip(positional[len(positional) - len(node.args.defaults):], node.args.defaults))
        defaults.update((a.arg, d) for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults) if d is not None)

        def given(name: str) -> Optional[ast.AST]:
            """What this call hands the parameter: by keyword, by place, else its default."""
            found = next((k.value for k in call.keywords if k.arg == name), None)
            if found is None and name in positional and positional.index(name) < len(call.args):
                found = call.args[positional.index(name)]
            return found if found is not None else defaults.get(name)

        for ret in returns:
            for sub in walk(ret):
                if isinstance(sub, ast.Call):  # getattr(config, attr, ...): the name this call gives
                    key = given(sub.args[1].id) if len(sub.args) > 1 and isinstance(sub.args[1], ast.Name) \
                        and sub.args[1].id in params else sub.args[1] if len(sub.args) > 1 else None
                    if isinstance(key, ast.Constant) and isinstance(key.value, str) and \
                            RANK_NAME.match(key.value.rsplit(".", 1)[-1]):
                        return True
                elif isinstance(sub, ast.Name) and sub.id in params and not any(
                        isinstance(c, ast.Call) and len(c.args) > 1 and c.args[1] is sub for c in walk(ret)):
                    value = given(sub.id)
                    if value is not None and self.is_rank(value, fn, depth - 1):
                        return True
        return False

    def _function_returns_rank(self, target: Function, depth: int) -> bool:
        key = (id(target), depth)  # by depth, as is_rank
        if key in self._returns_rank:
            return self._returns_rank[key]
        self._returns_rank[key] = False
        # `if self.distributed: return dist.get_rank()` / `return 0`: the constant is the answer
        # of a run without a process group, the rank wherever there is one
        found = depth > 0 and self._ranks_but_fallbacks([(r, target) for r in _returns(target)], depth - 1)
        self._returns_rank[key] = found
        return found

    # ------------------------------------------------------------------ tests
    def guard(self, test: ast.AST, fn: Function, depth: int = 4) -> Optional[RankTest]:
        """The rank test in an `if`/`while` test, or None when the test is the same on every rank."""
        key = (id(test), id(fn), depth)  # by depth, as is_rank
        if key in self._flag:
            return self._flag[key]
        self._flag[key] = None
        found = self._guard(test, fn, depth)
        self._flag[key] = found
        return found

    def _guard(self, test: ast.AST, fn: Function, depth: int) -> Optional[RankTest]:
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            inner = self.guard(test.operand, fn, depth)
            return inner.negated() if inner else None
        if isinstance(test, ast.BoolOp):
            return self._bool(test, fn, depth)
        logical = _bitwise_logic(test)
        if logical is not None:
            # `(step > 0) & (step % every == 0) & is_main_process()`: bools joined with `&`
            found = self._bool(logical, fn, depth)
            return replace(found, text=text(test)) if found is not None else None
        if isinstance(test, ast.IfExp) and _default_side(test, fn) is not None:
            # `is_main if save_to_disk is None else save_to_disk`, no call handing save_to_disk
            return self.guard(_default_side(test, fn), fn, depth)
        if isinstance(test, ast.IfExp):  # is_local_master(args) if local else is_global_master(args)
            if all(isinstance(side, ast.Constant) and isinstance(side.value, bool) for side in (test.body, test.orelse)) \
                    and test.body.value != test.orelse.value:
                # `is_main = True if local_rank == 0 else False`: the test itself
                found = self.guard(test.test, fn, depth)
                return (found if test.body.value else found.negated()) if found is not None else None
            sides = [self.guard(test.body, fn, depth), self.guard(test.orelse, fn, depth)]
            # `get_rank() == 0 if is_dist() else True`: the constant is the not-distributed answer
            # (or `(local_rank == 0) if local_rank != -1 else True`: the rank handed at all, as
            # torch.distributed.launch hands it, against the option's one-process default)
            if sum(1 for s in sides if s) == 1 and (self.uniform(test.test, fn) or _guards_receiver(test)
                                                    or self.launched(test.test, fn)
                                                    or self.single_process(test.test, fn)) and \
                    any(isinstance(side, ast.Constant) and isinstance(side.value, bool)
                        for side in (test.body, test.orelse)):
                return replace(next(s for s in sides if s), text=text(test))
            if all(sides) and not self.guard(test.test, fn, depth):
                polarity = sides[0].polarity if sides[0].polarity == sides[1].polarity else "other"
                return RankTest(text(test), sides[0].key, polarity, sides[0].assumption,
                                "node" if all(x.scope == "node" for x in sides) else "global")
            return None
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.comparators[0], ast.Constant) \
                and type(test.comparators[0].value) is bool and isinstance(test.ops[0], (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)):
            # `is_global_primary(args) is True` (`== False`, `is not True`): the test itself, or its negation
            inner = self.guard(test.left, fn, depth)
            if inner is None:
                return None
            same = test.comparators[0].value == isinstance(test.ops[0], (ast.Is, ast.Eq))
            return replace(inner if same else inner.negated(), text=text(test))
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.NotEq)) \
                and isinstance(test.left, ast.Call) and isinstance(test.comparators[0], ast.Constant) \
                and test.comparators[0].value in (0, 1) and type(test.comparators[0].value) is int \
                and not self.is_rank(test.left, fn):
            # `link.is_main_process() == 0` of `def is_main_process(): return get_rank() == 0`
            # (MedMPT's base save): a helper's truth compared with 0 is its negation - every
            # rank but 0 - and with 1 the test itself; the rank's own number is _compare's
            inner = self.guard(test.left, fn, depth)
            if inner is not None:
                same = (test.comparators[0].value == 1) == isinstance(test.ops[0], ast.Eq)
                return replace(inner if same else inner.negated(), text=text(test))
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            return self._compare(test, fn, depth)
        if isinstance(test, ast.Subscript) and isinstance(test.slice, ast.Constant) and depth > 0:
            found = self._keyed(test, fn, depth)
            if found is not None:
                return replace(found, text=text(test), key=str(test.slice.value))
        if isinstance(test, (ast.Name, ast.Attribute, ast.Call)) and self.is_rank(test, fn) and \
                not self._env_string(test, fn):
            # `if dist.get_rank():`, `if config.torch.rank:` (skrl): the rank's truth, every rank but 0
            name = last_name(test.func if isinstance(test, ast.Call) else test) or text(test)
            return RankTest(text(test), name, "nonzero", scope="node" if "local" in name.lower() else "global")
        if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id in ("bool", "int") \
                and len(test.args) == 1 and not test.keywords and not self.program.lookup(test.func.id, fn):
            return self.guard(test.args[0], fn, depth)  # `bool(local_stop)`: the flag itself
        if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance" \
                and len(test.args) == 2 and depth > 0:
            found = self._one_rank_kind(test, fn, depth)
            if found is not None:
                return found
        if isinstance(test, ast.Call):
            name = last_name(test.func) or ""
            if any(a.__class__ is ast.Name and _read_in_loop_over_ranks(a, fn)
                   for a in [*test.args, *(k.value for k in test.keywords)]):
                # `self.is_passive(rank)` in `for rank in range(self.world_size):` of `def
                # is_passive(self, rank=None): rank = self.rank if rank is None else rank`: asked
                # of each rank in turn, the same answers on every process
                return None
            targets, _ = self.program.resolve(test.func, fn)
            for target in targets or self._only_definer(test.func, fn):
                found = self._function_test(target, depth)
                if found is not None:
                    if found.scope == "node" and self._world_given(target, test, fn):
                        # `is_master_proc(cfg.NUM_GPUS * cfg.NUM_SHARDS)` of `return rank %
                        # num_gpus == 0`: this call hands the modulus the job's size (rank 0 alone)
                        found = replace(found, scope="global")
                    return replace(found, text=text(test), key=name)
            if not targets and MAIN_FLAG.match(name):
                return RankTest(text(test), name, "zero", scope=_flag_scope(name))
            return None
        if isinstance(test, (ast.Name, ast.Attribute)):
            values = self._values(test, fn)
            if values is None and test.__class__ is ast.Name:
                # the item a local helper returns for a flag (`default_gpu, n_gpu, device =
                # set_cuda(opts)`, whose `default_gpu = dist.get_rank() == 0`): as a test only -
                # the rank flow's own bindings keep unpacked items out (Program.unpacked)
                values = self.program.unpacked(test.id, fn) or None
            if values is not None:
                if depth <= 0:
                    return None
                # `if distributed: stop = shared(flag) else: stop = flag`: the value a run that
                # is not distributed takes splits no ranks
                values = [(v, s) for v, s in values if not self._on_the_single_side(v, s)]
                for value, scope in values:
                    found = self.guard(value, scope, depth - 1)
                    if found is not None:
                        return replace(found, text=text(test), key=last_name(test) or text(test))
                found = self._set_by_branches(values, depth)
                if found is not None:
                    return replace(found, text=text(test), key=last_name(test) or text(test))
                one = self._one_rank_object(test, fn)
                return one
            name = last_name(test) or ""
            prop = self._property(test, fn)
            if prop is not None and depth > 0:
                # `if self.is_main_thread:` of `@property def is_main_thread(self): return not
                # self.is_distributed or (... get_rank() == 0)`: the method's test, read as a call
                found = self._function_test(prop, depth - 1)
                if found is not None:
                    return replace(found, text=text(test), key=name)
            if MAIN_FLAG.match(name):
                return RankTest(text(test), name, "zero", scope=_flag_scope(name))
        return None

    def _only_definer(self, func: ast.AST, fn: Function) -> list:
        """`state.get_output_flag()` on an object whose class the lint does not follow (a
        namespace handed down through several helpers): the method of that name where exactly
        one class of the project defines it, a test the call then asks; empty otherwise (a name
        two classes define, a library's call, a private or special method)."""
        root = func
        while root.__class__ is ast.Attribute:
            root = root.value
        if func.__class__ is not ast.Attribute or func.attr.startswith("_") or root.__class__ is not ast.Name or \
                any((alias.asname or alias.name.partition(".")[0]) == root.id
                    for imp in fn.file.imports for alias in imp.names):
            return []  # (`dist.is_initialized()`: a module's function, not an object's method)
        known = self.__dict__.get("_definers")
        if known is None or known[0] != len(self.program.classes):
            # (method name -> the methods of that name; asked of every unresolved call in a test)
            index: dict = {}
            for klass in self.program.classes:
                for name, method in klass.methods.items():
                    index.setdefault(name, []).append(method)
            known = self.__dict__["_definers"] = (len(self.program.classes), index)
        found = known[1].get(func.attr, ())
        return list(found) if len(found) == 1 and found[0].node is not None else []

    def _one_rank_kind(self, test: ast.Call, fn: Function, depth: int) -> Optional[RankTest]:
        """`isinstance(pbar, tqdm)` where `pbar = tqdm(...)` under a rank test and something else
        (`pbar = range(...)`) on its other side (rosinality's StyleGAN trainer and its copies):
        the object's kind says which side made it - that rank test."""
        kind = last_name(test.args[1])
        values = self._values(test.args[0], fn) or []
        if not kind or len(values) < 2:
            return None
        tests = []
        for value, scope in values:
            branch = _enclosing_if(scope, value)
            side = self.guard(branch[0].test, scope, depth - 1) if branch is not None else None
            if side is None:
                return None  # made on a way no rank test decides
            made = isinstance(value, ast.Call) and last_name(value.func) == kind
            tests.append(side if (branch[1] == "body") == made else side.negated())
        if len({(t.key, t.polarity) for t in tests}) != 1:
            return None
        return replace(tests[0], text=text(test))

    def _property(self, node: ast.AST, fn: Function) -> Optional[Function]:
        """The `@property` method `self.<name>` reads in fn's class (or a local base's)."""
        if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"):
            return None
        klass = self.program._class_of_fn(fn)
        method = self.program.method(klass, node.attr) if klass is not None else None
        if method is None or method.node is None or isinstance(method.node, ast.Module) or not any(
                last_name(d) == "property" for d in getattr(method.node, "decorator_list", ())):
            return None
        return method

    def _env_string(self, test: ast.AST, fn: Function) -> bool:
        """`is_distributed = os.environ.get("LOCAL_RANK")` then `if is_distributed:`: the
        variable's text, "0" on rank 0 too, is true wherever it is set: a question about the
        launch, the same on every rank (int(...) of it is the rank's number)."""
        values = [test] if not isinstance(test, ast.Name) else \
            [v for v, _ in self.program.values_of(test, fn, 2) if v is not test]
        return bool(values) and all(env_key(v) is not None for v in values)

    def _bool(self, test: ast.BoolOp, fn: Function, depth: int) -> Optional[RankTest]:
        """`a and rank == 0`: rank-conditional where `a` holds on every rank (an assumption the
        lint states); `not dist.is_initialized() or rank == 0`: the uniform part drops out."""
        if isinstance(test.op, ast.And) and any(self.single_process(part, fn) for part in test.values):
            return None  # true only in a run of one process: no distributed ranks to split
        if isinstance(test.op, ast.Or) and any(self.distributed_run(part, fn) for part in test.values):
            return None  # `is_master() or args.distributed`: true on every rank of a distributed run
        want = isinstance(test.op, ast.And)
        ranked, values = [], []
        for part in test.values:
            answer = self._word_answer(part, fn)
            if answer is not None:
                if answer != want:
                    return None  # `rank == "cpu" and ...`: false on every rank of a distributed run
                continue  # `rank == 0 or rank == "cpu"`: the word's side drops out there
            found = self.guard(part, fn, depth)
            if found is not None:
                ranked.append(found)
            elif not self.uniform(part, fn) and not _periodic(part) and not _counted_past(part, fn, self.program) \
                    and not _counted_equality(part, fn):
                values.append(part)
        if not ranked:
            return None
        if want and any(r.scope == "node" and r.polarity == "zero" for r in ranked):
            # `node_rank == 0 and local_rank == 0` (`get_node_rank() in [None, 0]`): local rank 0
            # of the first node, the job's rank 0 alone
            firsts = [part for part in values if self._first_node(part, fn)]
            if firsts:
                values = [part for part in values if part not in firsts]
                ranked = [replace(r, scope="global") if r.scope == "node" else r for r in ranked]
        # `rank != 0 and not cfg.flag`: a config field whose default makes the part hold is said
        # as the default the finding rests on, not assumed (defaults.py)
        given, open_parts = [], []
        for part in values:
            found = default_truth(part, fn, self.program)
            if found is not None and found[0] == want:
                given.append(found[1])
            elif want and _past_sanity_check(part):
                continue  # (Lightning's `not trainer.sanity_checking`: every validation after the first check)
            else:
                open_parts.append(text(part))  # only a rank test says them: unparsed then
        first = ranked[0]
        polarity = first.polarity if len(ranked) == 1 else "other"
        # `local_rank <= 0 and get_rank() == 0` (SimPLE's is_main_thread): every part rank 0's,
        # so is the whole - the job's rank 0 where one part is the global rank; its negation
        # `rank != 0 or local_rank != 0` every rank but that one
        alike = "zero" if want else "nonzero"
        if len(ranked) > 1 and all(r.polarity == alike for r in ranked):
            polarity = alike
            first = next((r for r in ranked if r.scope == "global"), first)
        elif not want and len(ranked) > 1 and all(r.polarity == "zero" for r in ranked):
            # `(args.distributed and args.rank == 0) or args.index == 0` (the spawn index): the
            # job's rank 0 is local rank 0 of its node, so the whole holds on each node's first
            # process - one per node where a part is a node's rank
            polarity = "zero"
            first = next((r for r in ranked if r.scope == "node"), first)
        assumption = first.assumption
        if open_parts:
            holds = "true" if want else "false"
            extra = " and ".join(f"`{v}`" for v in open_parts)
            assumption = f"{extra} is {holds} on every rank" + (f", and {assumption}" if assumption else "")
        given = ", ".join(given + [first.given] if first.given else given)
        return RankTest(text(test), first.key, polarity, assumption, first.scope, given,
                        tuple(open_parts) if want else ())

    def _first_node(self, test: ast.AST, fn: Function) -> bool:
        """`node_rank == 0`, `node_rank in [None, 0]`, `not node_rank`, `get_node_rank() == 0`: true
        on the first node alone (a node's index by its name, or a helper that reads NODE_RANK)."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self._node_index(test.operand, fn)
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
            return False
        right = test.comparators[0]
        if isinstance(test.ops[0], (ast.Eq, ast.Is)):
            zero = is_const(right, 0)
        elif isinstance(test.ops[0], ast.In) and isinstance(right, (ast.List, ast.Tuple, ast.Set)):
            zero = any(is_const(e, 0) for e in right.elts) and all(is_const(e, 0, None) for e in right.elts)
        else:
            return False
        return zero and self._node_index(test.left, fn)

    def _node_index(self, node: ast.AST, fn: Function) -> bool:
        """The index of the node this process runs on, by its name or its helper's reading."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "int" \
                and len(node.args) == 1:
            node = node.args[0]  # `int(os.environ["SLURM_NODEID"]) == 0`
        name = env_key(node) or last_name(node.func if isinstance(node, ast.Call) else node) or ""
        if NODE_INDEX.search(name):
            return True
        if isinstance(node, ast.Call):
            return any(NODE_INDEX.search(text(target.node, 4000))
                       for target in self.program.resolve(node.func, fn)[0] if target.returned)
        return False

    def _word_answer(self, test: ast.AST, fn: Function) -> Optional[bool]:
        """`rank == "cpu"` where the name holds the rank on the distributed path (mlpf's `rank`,
        "cpu" in a run on the CPU; `hp.model.device = rank`): no rank's number equals a word, so
        in a distributed run `==` is false and `!=` true on every rank. None for any other test
        (`os.environ["RANK"] == "0"` compares the rank's digits: a rank test)."""
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
            return None
        left, op, right = test.left, test.ops[0], test.comparators[0]
        if isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, (ast.Tuple, ast.List, ast.Set)) and \
                right.elts and all(_a_word(e) for e in right.elts):
            # `rank not in ("cpu", "cuda")` (MatDeepLearn): none of the words is a rank's number
            return isinstance(op, ast.NotIn) if self.is_rank(left, fn) else None
        if not isinstance(op, (ast.Eq, ast.NotEq)):
            return None
        if _a_word(left):
            left, right = right, left
        if not _a_word(right) or not self.is_rank(left, fn):
            return None
        return isinstance(op, ast.NotEq)

    def _compare(self, test: ast.Compare, fn: Function, depth: int) -> Optional[RankTest]:
        left, op, right = test.left, test.ops[0], test.comparators[0]
        if isinstance(op, (ast.Is, ast.IsNot)) and is_const(right, None):
            # `saver is not None` where saver exists on one rank only
            found = self._one_rank_object(left, fn)
            if found is None:
                return None
            return found if isinstance(op, ast.IsNot) else found.negated()
        if _loop_over_ranks(left, fn) or _loop_over_ranks(right, fn):
            return None  # `for r in range(world_size): if rank == r:` - every rank, in turn
        if isinstance(op, (ast.Eq, ast.NotEq)) and (
                (_first_gpu(right) and _a_device(left)) or (_first_gpu(left) and _a_device(right))):
            # `if self.model.device == torch.device("cuda:0"):` (AlphaZeroFromScratch): with one
            # GPU per process, the process on the node's first GPU - its local rank 0
            return RankTest(text(test), "device", "zero" if isinstance(op, ast.Eq) else "nonzero",
                            scope="global" if self.single_node() else "node")
        if self.is_rank(right, fn) and not self.is_rank(left, fn):
            left, right = right, left
            op = {ast.Lt: ast.Gt(), ast.Gt: ast.Lt(), ast.LtE: ast.GtE(), ast.GtE: ast.LtE()}.get(type(op), op)
        if not self.is_rank(left, fn):
            return None
        if isinstance(op, (ast.Eq, ast.NotEq)) and _turn_taking(right, lambda n: self.is_rank(n, fn)):
            # `if i % world == rank:` over one shared stream (or `!= rank: continue`, "a poor
            # man's distributed sampler"): every rank, in turn
            return None
        # local_rank == -1 / rank is None: "are we distributed at all", the same on every rank
        if is_const(right, -1, None):
            return None
        if self._word_answer(test, fn) is not None:
            return None  # the same answer on every rank of a distributed run (see _word_answer)
        # local_rank >= 0 / rank < 0: no rank is negative, so the same answer on every rank of a
        # distributed run (the launcher's -1 is the only value that differs): the same question
        if is_const(right, 0) and isinstance(op, (ast.GtE, ast.Lt)):
            return None
        # rank >= world_size / rank < world_size: no rank reaches the world's size (CAGNet's
        # `if rank >= size: return` guards a process the launch never starts): the same everywhere
        if isinstance(op, (ast.GtE, ast.Lt)) and self._world_size(right, fn):
            return None
        # local_rank >= torch.cuda.device_count() / >= len(visible_devices): a check that the
        # launch gave each process a GPU (Fast-DDPM-3D's set-up returns to one-GPU mode there),
        # the same answer on every rank of a launch that fits its node, not a role of some ranks
        if isinstance(op, (ast.GtE, ast.Lt)) and self._device_count(right, fn):
            return None
        if isinstance(right, (ast.List, ast.Tuple, ast.Set)):
            if all(is_const(e, -1, None) for e in right.elts):
                return None
            has_zero = any(is_const(e, 0) for e in right.elts)
            polarity = "other"
            if has_zero and isinstance(op, ast.In):
                polarity = "zero"
            elif has_zero and isinstance(op, ast.NotIn):
                polarity = "nonzero"
            return RankTest(text(test), _key(left), polarity, scope=self._scope(left, fn))
        polarity = "other"
        if is_const(right, 0):
            if isinstance(op, (ast.Eq, ast.LtE, ast.Is)):
                polarity = "zero"
            elif isinstance(op, (ast.NotEq, ast.Gt, ast.IsNot)):
                polarity = "nonzero"
        elif is_const(right, 1):
            if isinstance(op, ast.Lt):
                polarity = "zero"
            elif isinstance(op, ast.GtE):
                polarity = "nonzero"
        found = RankTest(text(test), _key(left), polarity, scope=self._scope(left, fn))
        if isinstance(left, ast.BinOp) and isinstance(left.op, ast.Mod) and isinstance(left.right, ast.Constant) \
                and found.scope == "node":
            found = replace(found, assumption=f"each node runs {left.right.value} processes (the `% "
                                              f"{left.right.value}` written in)")
        return found

    def _one_per_node_index(self, value: ast.AST, fn: Function) -> Optional[ast.AST]:
        """X of a rank made as `X * per_node + local` (either order) where per_node is 1 wherever
        it is set (a literal, or a field every assignment sets to 1 and no option declares -
        `args.gpus = 1` after the parse, not a `--gpus` the launch may raise):
        with one process a node, X - an option or a field - is the rank itself. None otherwise."""
        if not (value.__class__ is ast.BinOp and value.op.__class__ is ast.Add):
            return None
        for product in (value.left, value.right):
            if product.__class__ is ast.BinOp and product.op.__class__ is ast.Mult:
                for index, count in ((product.left, product.right), (product.right, product.left)):
                    if index.__class__ in (ast.Attribute, ast.Subscript) and self._always_one(count):
                        return index
        return None

    def _always_one(self, node: ast.AST) -> bool:
        if node.__class__ is ast.Constant:
            return node.value == 1 and node.value is not True
        if node.__class__ is not ast.Attribute or \
                node.attr in {dest for dest, _ in declared_options(self.program.files).values()}:
            return False
        held = self.program.attribute_constants(node.attr)
        return held is not None and len(held) == 1 and type(next(iter(held))) is int and 1 in held

    def _init_rank_text(self, node: ast.AST, fn: Optional[Function] = None) -> bool:
        """The expression is what init_process_group was handed as `rank=`, as written there or
        through an object that keeps the same options (`self.opts.local_rank` where the set-up
        read `opts.local_rank` and the trainer stores `self.opts = opts`), or the other way
        round: `device.index` in the method that keeps its parameter as `self.device = device`,
        where `self.device.index` was handed as rank= (CamLiFlow's trainer, whose spawn index is
        the CUDA device's and the rank's)."""
        said = text(node)
        if said in self.init_rank_texts:
            return True
        if said.startswith("self.") and said.count(".") >= 2 and said[5:] in self.init_rank_texts:
            return True
        head = said.split(".", 1)[0]
        return fn is not None and head != said and f"self.{said}" in self.init_rank_texts and \
            head in fn.params and not fn.bindings.get(head) and any(
                n.value.__class__ is ast.Name and n.value.id == head and text(t) == f"self.{head}"
                for n in fn.own_of(ast.Assign) for t in n.targets)

    def _init_rank_field(self, node: ast.AST, fn: Function) -> bool:
        """`engine.local_rank` where engine is an instance of a local class whose method hands
        `self.local_rank` to init_process_group as rank=: the job's rank (Sigma's Engine)."""
        if not self.init_rank_fields or node.__class__ is not ast.Attribute or \
                node.value.__class__ is not ast.Name or node.value.id == "self":
            return False
        if not any(attr == node.attr for _, attr in self.init_rank_fields):
            return False
        klass = self.program.class_of(node.value, fn)
        return klass is not None and (klass.name, node.attr) in self.init_rank_fields

    def _given_the_init_rank(self, name: str, fn: Function) -> bool:
        """Every caller hands this parameter the name (or field) it gave init_process_group as
        its rank."""
        passed = self.program._passed(name, fn)
        return bool(passed) and all(
            (value.__class__ is ast.Name and (id(caller), value.id) in self.init_rank_names)
            or (value.__class__ in (ast.Attribute, ast.Subscript) and text(value) in self.init_rank_texts)
            for value, caller in passed)

    def _scope(self, node: ast.AST, fn: Function, depth: int = 3) -> str:
        """"node" for a rank within the node: local_rank, LOCAL_RANK, `rank % gpus_per_node`."""
        node = self._item(node) or node
        if (depth == 3 and node.__class__ is ast.Name and (id(fn), node.id) in self.init_rank_names) or \
                (node.__class__ in (ast.Attribute, ast.Subscript, ast.Call) and self._init_rank_text(node, fn)):
            # what init_process_group is handed as `rank=`: the job's rank, whatever it is called -
            # an attribute (`args.global_rank`, one object's field) wherever it is read; a plain
            # name only as the test's own (DPR's local `local_rank`, copied into cfg.local_rank,
            # is the global rank only on its SLURM path)
            return "global"
        if self._init_rank_field(node, fn):
            return "global"  # `engine.local_rank` where Engine hands `self.local_rank` as rank=
        if self.init_rank_keys and node.__class__ is ast.Subscript and isinstance(node.slice, ast.Constant) \
                and ((last_name(node.value) or ""), node.slice.value) in self.init_rank_keys:
            return "global"
        if node.__class__ is ast.Name and depth == 3 and (node.id in fn.params or node.id in fn.kwonly) \
                and not fn.bindings.get(node.id) and self._given_the_init_rank(node.id, fn):
            # `save(local_rank, model)` where that local_rank is what init_process_group was
            # handed as rank=: the parameter is the job's rank too
            return "global"
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and any(
                isinstance(side, ast.BinOp) and isinstance(side.op, ast.Mult) for side in (node.left, node.right)):
            return "global"  # `node * gpus_per_node + local_rank`: the node's offset makes it the job's rank
        if isinstance(node, ast.IfExp) and depth > 0 and self.uniform(node.test, fn):
            # `dist.get_rank() if distributed else args.local_rank` (MLPerf SSD): in a distributed
            # run the side the switch picks then; the other is one process's
            side = node.orelse if self.single_process(node.test, fn) else node.body
            return self._scope(side, fn, depth - 1)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            # `rank % ngpus_per_node == 0` is one rank per node; `rank % world_size == 0` rank 0
            # of the job, and a modulus the source does not explain is not taken as per node;
            # a literal count a node can hold (`rank % 8 == 0`, jukebox) is its GPUs written in:
            # one rank in every 8; a larger one (`dp_rank % 128 == 0`: lingua's probe files, one
            # per 128 ranks) is a sampling of the ranks, as before
            if isinstance(node.right, ast.Constant) and isinstance(node.right.value, int) \
                    and not isinstance(node.right.value, bool) and 1 < node.right.value <= GPUS_PER_NODE_MAX:
                return "node"
            if self._node_count(node.right, fn, depth) and not self._one_node_world(node.right):
                return "node"
            return "global"
        if node.__class__ is ast.Name and _exported_as_rank(node.id, fn):
            # `os.environ["RANK"] = str(rank)` before an env:// set-up: the process group takes
            # it as the job's rank, whatever the callers called it (`--local_rank` of a
            # self-launching script that starts every process on one host)
            return "global"
        if isinstance(node, (ast.Name, ast.Attribute)) and self._offset_by_node(node, fn):
            return "global"  # `args.local_rank += args.node_index * args.gpu_per_node`
        if node.__class__ is ast.Name and self._spawn_index(node.id, fn) and _offset_from(node.id, fn) \
                and not self._zero_offset(node.id, fn):
            # mp.spawn's index where the function builds the job's rank from it (`args.rank =
            # args.rank * ngpus_per_node + gpu`): the index is the rank within the node
            return "node"
        if isinstance(node, (ast.Name, ast.Attribute)) and depth > 0:
            # what the source assigns decides before the name: `local_rank = dist.get_rank()` is
            # the global rank whatever it is called; so does the item a helper returns for it
            # (`local_rank, device = setup()` with `return dist.get_rank(), device`: SEE)
            values = list(self._values(node, fn) or ())
            unpacked = self.program.unpacked(node.id, fn) if isinstance(node, ast.Name) else []
            if unpacked and all(self._asks_the_group(v, s) for v, s in unpacked):
                # (the call's value is the whole tuple, not this item; only an item the process
                # group itself answers decides: DPR's SLURM path returns `int(proc_id)` for a
                # `local_rank` its launcher path fills with the node's local rank)
                values = [(v, s) for v, s in values if not isinstance(v, ast.Call)] + unpacked
            scopes = {self._scope(v, scope, depth - 1) for v, scope in values
                      if v is not node and not is_const(v, None, -1, 0)}
            if len(scopes) == 1:
                return scopes.pop()
        given = self.program._kwargs_item(node, fn) if node.__class__ in (ast.Call, ast.Subscript) else None
        if given is not None and depth > 0:
            # `kwargs.get("local_rank", 0)`: what the callers hand in under that name decides
            scopes = {self._scope(v, scope, depth - 1) for v, scope in given if not is_const(v, None, -1, 0)}
            if len(scopes) == 1:
                return scopes.pop()
        if isinstance(node, ast.Call) and depth > 0 and last_name(node.func) not in ("int", "str"):
            # what a local helper returns decides before its name: `def get_local_rank(): return
            # dist.get_rank()` (NeuralOperator) is the job's rank
            scopes = {self._scope(r, target, depth - 1) for target in self.program.resolve(node.func, fn)[0]
                      for r in _returns(target) if not is_const(r, None, -1, 0)}
            if len(scopes) == 1:
                return scopes.pop()
        if LOCAL.search(text(node, 200)):
            return "node"
        if isinstance(node, ast.Call) and last_name(node.func) in ("int", "str") and node.args:
            return self._scope(node.args[0], fn, depth)
        return "global"

    def single_node(self) -> bool:
        """Every process-group set-up takes mp.spawn's index itself as the rank (directly, through
        a plain copy, or through a helper every caller hands it to): the ranks are 0..nprocs-1 of
        one launch, so the job runs on one node, and a rank within the node is the job's rank
        (a second node would start ranks 0..nprocs-1 again and could not join)."""
        found = self.__dict__.get("_single_node")
        if found is None:
            found = self.__dict__["_single_node"] = bool(self.init_calls) and all(
                isinstance(given, ast.Name) and self._spawn_index_value(given.id, fn, 3)
                for fn, given in self.init_calls)
        return found

    def _spawn_index_value(self, name: str, fn: Function, depth: int) -> bool:
        if self._spawn_index(name, fn) and not fn.bindings.get(name):
            return True
        if depth <= 0:
            return False
        source = _copied_from(fn, name)
        if source is not None:  # (`a = b; b = a` goes round: the depth ends it)
            return self._spawn_index_value(source, fn, depth - 1)
        if name not in fn.params or fn.bindings.get(name):
            return False
        passed = self.program._passed(name, fn)
        return bool(passed) and all(isinstance(value, ast.Name) and self._spawn_index_value(value.id, caller, depth - 1)
                                    for value, caller in passed)

    def _item(self, node: ast.AST) -> Optional[ast.Subscript]:
        """`config.get("rank", 0)` read as `config["rank"]`: a dict's entry is the same value
        whichever way it is read (the default only stands in where the key was never stored).
        os.environ's `.get` keeps its own reading (env_key)."""
        if node.__class__ is not ast.Call or node.func.__class__ is not ast.Attribute or \
                node.func.attr != "get" or not 1 <= len(node.args) <= 2 or node.keywords or \
                node.args[0].__class__ is not ast.Constant or not isinstance(node.args[0].value, str) or \
                env_key(node) is not None:
            return None
        item = self._items.get(id(node))
        if item is None:
            item = ast.Subscript(value=node.func.value, slice=node.args[0], ctx=ast.Load())
            ast.copy_location(item, node)
            self._items[id(node)] = item
        return item

    def _zero_offset(self, name: str, fn: Function) -> bool:
        """Every node offset fn adds to `name` is a product with a factor the source holds at 0
        (`config['rank'] = gpu + ngpus * config['n_node']` where the launcher sets
        `config['n_node'] = 0  # only one node`): the job runs on one node, the index is its rank."""
        products = _offsets_of(name, fn)
        return bool(products) and all(any(self._held_at_zero(factor, fn) for factor in (p.left, p.right))
                                      for p in products)

    def _held_at_zero(self, node: ast.AST, fn: Function) -> bool:
        if is_const(node, 0):
            return True
        if node.__class__ is ast.Subscript and node.slice.__class__ is ast.Constant and \
                isinstance(node.slice.value, str):
            stores = self._key_stores().get((last_name(node.value) or "", node.slice.value), ())
            return bool(stores) and all(is_const(v, 0) for v, _ in stores)
        if node.__class__ in (ast.Name, ast.Attribute):
            values = self._values(node, fn)
            return bool(values) and all(is_const(v, 0) for v, _ in values)
        return False

    def _offset_by_node(self, node: ast.AST, fn: Function) -> bool:
        """The name (or attribute) is stepped by a product somewhere in the program (`local_rank +=
        node_index * gpus_per_node`): from then on it is the job's rank, whatever it is called."""
        key = dotted(node)
        if not key:
            return False
        index = self.__dict__.get("_node_offsets")
        if index is None:  # built once: the targets of `x += a * b` in every file read
            index = self.__dict__["_node_offsets"] = {
                dotted(n.target) for source in self.program.files for n in source.of(ast.AugAssign)
                if isinstance(n.op, ast.Add) and isinstance(n.value, ast.BinOp) and isinstance(n.value.op, ast.Mult)}
        return key in index

    def _one_node_world(self, count: ast.AST) -> bool:
        """Every init_process_group is handed a world size that is this per-node count times
        one node (`opt.world_size = ngpus_per_node * world_size` after `world_size = 1`, SimKD's
        "only one node now"): `rank % ngpus_per_node == 0` is then the job's rank 0 alone."""
        said = last_name(count)
        if not said or not self.init_worlds:
            return False

        def factors(node: ast.AST, fn: Function, depth: int) -> Optional[list]:
            # the factors of a product, each a name's last part, a literal 1 left out
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
                left, right = factors(node.left, fn, depth), factors(node.right, fn, depth)
                return None if left is None or right is None else left + right
            if is_const(node, 1):
                return []
            if not isinstance(node, (ast.Name, ast.Attribute)):
                return None
            if last_name(node) == said:
                return [said]
            got = [factors(v, scope, depth - 1) for v, scope in self._values(node, fn) or ()] if depth > 0 else []
            return got[0] if got and all(g is not None and g == got[0] for g in got) else None

        return all(factors(world, fn, 2) == [said] for fn, world in self.init_worlds)

    def _world_given(self, target: Function, call: ast.Call, fn: Function) -> bool:
        """The helper tests `rank % <its parameter> == 0` and this call hands that parameter the
        job's size: `dist.get_world_size()`, a world-size name, or a per-node count times a count
        of nodes (`cfg.NUM_GPUS * cfg.NUM_SHARDS`)."""
        moduli = {r.left.right.id for r in _returns(target) if isinstance(r, ast.Compare)
                  and isinstance(r.left, ast.BinOp) and isinstance(r.left.op, ast.Mod)
                  and isinstance(r.left.right, ast.Name) and r.left.right.id in target.params}
        if len(moduli) != 1:
            return False
        param = moduli.pop()
        # (fact_builder.argument_at says this for the rules; ranks sits below program and
        # fact_builder and may not import them: a call that leaves the parameter at its default
        # hands no world size, and is read as such here)
        given = next((kw.value for kw in call.keywords if kw.arg == param), None)
        positional = [a.arg for a in target.node.args.posonlyargs + target.node.args.args]
        if positional[:1] in (["self"], ["cls"]) and target.cls is not None:
            positional = positional[1:]
        if given is None and param in positional and positional.index(param) < len(call.args):
            given = call.args[positional.index(param)]
        if given is None:
            return False
        if self._world_size(given, fn):
            return True
        return isinstance(given, ast.BinOp) and isinstance(given.op, ast.Mult) and any(
            self._node_count(a, fn) and not isinstance(b, ast.Constant)
            for a, b in ((given.left, given.right), (given.right, given.left)))

    def _node_count(self, node: ast.AST, fn: Function, depth: int = 3) -> bool:
        """The number of processes per node: torch.cuda.device_count(), LOCAL_WORLD_SIZE,
        `ngpus_per_node`, a name assigned from one; not the job's world size."""
        if isinstance(node, ast.Call) and last_name(node.func) in ("int", "str", "len") and node.args:
            return self._node_count(node.args[0], fn, depth)
        if isinstance(node, ast.Call):
            return last_name(node.func) in ("device_count", "get_local_size", "local_world_size")
        if env_key(node) is not None:
            return bool(PER_NODE.search(env_key(node) or ""))
        if isinstance(node, (ast.Name, ast.Attribute)):
            values = self._values(node, fn) if depth > 0 else None
            if values and any(self._node_count(v, scope, depth - 1) for v, scope in values):
                return True
            return bool(PER_NODE.search(last_name(node) or ""))
        return False

    def _fallbacks(self, target: Function) -> set[int]:
        """Constant returns that are a helper's answer when the run is not distributed:
        `if dist.is_initialized(): return dist.get_rank() == 0` / `return True`. They say
        nothing about the ranks of a distributed run, so the helper is still a rank test."""
        found: set[int] = set()
        uniform_ifs = [n for n in target.own_of(ast.If) if self.uniform(n.test, target)]
        if not uniform_ifs:
            return found
        for node in target.own_of(ast.Return):
            # (`return 0` / `return 1` is such an answer too: a falsy or truthy stand-in)
            if isinstance(node.value, ast.Constant) \
                    and (isinstance(node.value.value, bool) or node.value.value in (0, 1)):
                found.add(id(node.value))
        return found

    def _function_test(self, target: Function, depth: int) -> Optional[RankTest]:
        """A helper whose every return value is the same kind of rank test (a not-distributed
        fallback `return True` aside)."""
        if id(target) in self._returns:
            return self._returns[id(target)]
        self._returns[id(target)] = None
        found = None
        if depth > 0:
            fallback = self._fallbacks(target)
            tests = [self.guard(r, target, depth - 1) for r in _returns(target) if id(r) not in fallback]
            if tests and all(t is not None for t in tests):
                polarities = {t.polarity for t in tests}
                found = RankTest(tests[0].text, tests[0].key, polarities.pop() if len(polarities) == 1 else "other",
                                 tests[0].assumption, "node" if all(t.scope == "node" for t in tests) else "global")
            elif target.node is not None and not isinstance(target.node, ast.Module):
                found = self._returns_under_rank(target, depth) or self._true_under_rank(target, depth)
        self._returns[id(target)] = found
        return found

    def _true_under_rank(self, target: Function, depth: int) -> Optional[RankTest]:
        """Every answer a constant, the true ones of a distributed run under one rank test:
        `if distributed: (if get_rank() == 0: return True, else: return False)`, `else: return
        True` (the not-distributed answer, beside a test the same on every rank)."""
        returns = list(_returns(target))
        if not returns or not all(isinstance(r, ast.Constant) and r.value in (True, False, 0, 1)
                                  and not isinstance(r.value, float) for r in returns):
            return None
        trues = [(test, where) for stmt, test, where in self._returns_with_tests(target, depth) if stmt.value.value]
        ranked = [t for t, _ in trues if t is not None]
        if not ranked or len({t.polarity for t in ranked}) != 1 or len({t.key for t in ranked}) != 1:
            return None
        # a true answer under no rank test is the not-distributed one where it is the whole side
        # of an `if` whose other side holds the ranked answers (or beside a test the same on
        # every rank); anywhere else it is true on every rank
        sides = {step for t, where in trues if t is not None for step in where}
        if not self._fallbacks(target) and any(
                t is None and not any((node, "else" if side == "body" else "body") in sides for node, side in where)
                for t, where in trues):
            return None
        return ranked[0]

    def _returns_under_rank(self, target: Function, depth: int) -> Optional[RankTest]:
        """`if rank < 1: ...; return merged` and nothing returned otherwise (None: the end of
        the function, or `return None`): what it returns is something only on those ranks, so a
        caller's `if merged:` is that rank test."""
        found = [test for stmt, test, _ in self._returns_with_tests(target, depth) if not is_const(stmt.value, None)]
        if not found or any(t is None for t in found) or len({t.polarity for t in found}) != 1:
            return None
        return found[0]  # (an empty result there, a validation that saw nothing, is no run's case)

    def _returns_with_tests(self, target: Function, depth: int) -> list[tuple[ast.Return, Optional[RankTest], tuple]]:
        """Each `return <value>` of the function's own body, with the rank test it sits under
        (the innermost; None: none) and the `if`s and sides on the way, as (id, "body"/"else")."""
        found: list = []

        def visit(body: list, test: Optional[RankTest], where: tuple) -> None:
            for stmt in body:
                if isinstance(stmt, ast.Return):
                    if stmt.value is not None:
                        found.append((stmt, test, where))
                elif isinstance(stmt, ast.If):
                    inner = self.guard(stmt.test, target, depth - 1)
                    visit(stmt.body, inner if inner is not None else test, where + ((id(stmt), "body"),))
                    visit(stmt.orelse, inner.negated() if inner is not None else test, where + ((id(stmt), "else"),))
                elif isinstance(stmt, (ast.For, ast.While, ast.With, ast.Try)):
                    for part in (stmt.body, getattr(stmt, "orelse", []), getattr(stmt, "finalbody", []),
                                 *(h.body for h in getattr(stmt, "handlers", []))):
                        visit(part, test, where)

        visit(target.node.body, None, ())
        return found

    def _one_rank_object(self, node: ast.AST, fn: Function, depth: int = 6) -> Optional[RankTest]:
        """`x` is None on some ranks and an object on others: `x = X() if rank == 0 else None`, or
        `x = None` and then `if rank == 0: x = X()`. The test `x is not None` is that rank test.
        depth: how many hand-ons are followed (two readers handing a flag to each other, as
        Kaldi's matrix readers do, would otherwise be followed for ever)."""
        values = self._values(node, fn)
        if not values:
            return None
        if _received_later(self.program, values):
            return None
        for value, scope in values:  # passed on: `train_one_epoch(saver=saver)`
            if isinstance(value, ast.Name) and value is not node and scope is not fn and depth > 0:
                found = self._one_rank_object(value, scope, depth - 1)
                if found is not None:
                    return found
            if value.__class__ in (ast.Subscript, ast.Call) and depth > 0:
                # `self.writer = kwargs["writer"]` in a `def __init__(self, **kwargs)`: the
                # `writer=` each construction passes (`Trainer(writer=writer)`, made on rank 0)
                for given, caller in self.program.values_of(value, scope, 1):
                    if isinstance(given, ast.Name) and caller is not scope:
                        found = self._one_rank_object(given, caller, depth - 1)
                        if found is not None:
                            return found
        found = self._answered_on_one_rank(values, depth)
        if found is not None:
            return RankTest(f"{dotted(node) or text(node)} is not None", found.key, found.polarity,
                            found.assumption, found.scope)
        for value, scope in values:
            if isinstance(value, ast.IfExp) and (is_const(value.orelse, None) or is_const(value.body, None)):
                found = self.guard(value.test, scope)
                if found is not None:
                    return found if is_const(value.orelse, None) else found.negated()
        found = self._left_at_none(node, fn)
        if found is not None:
            return found
        if node.__class__ is ast.Name and fn.defaulted.get(node.id) and is_const(_default(fn, node.id), None) \
                and not fn.bindings.get(node.id):
            # a parameter some call leaves at its None default (`train(**kwargs)` whose dict gets
            # `checkpoint_dir` only under `if rank == 0:`): None there, whatever the others give
            values = [*values, (_default(fn, node.id), fn)]
        if not any(is_const(v, None) for v, _ in values):
            return None
        name = dotted(node) or ""
        kept = [(v, f) for v, f in values if not is_const(v, None) and _kept_set(f, v, name)]
        if len(kept) < len(values) and all(is_const(v, None) for v, _ in values if (v, _) not in kept):
            # `if rank != 0: self.conf.ckpt_dir = None`: cleared on those ranks alone, so it is
            # not None (whatever it was given) exactly on the others; a value set again only
            # where it is not None (`if self.conf.ckpt_dir is not None: self.conf.ckpt_dir = sub`)
            # keeps that
            tests = []
            for value, scope in values:
                if (value, scope) in kept:
                    continue
                branch = _enclosing_if(scope, value)
                found = self.guard(branch[0].test, scope) if branch is not None else None
                if found is None:
                    return None
                tests.append(found if branch[1] == "body" else found.negated())
            if len({(t.key, t.polarity) for t in tests}) == 1:
                first = tests[0].negated()
                return RankTest(f"{name} is not None", first.key, first.polarity, first.assumption, first.scope)
            return None
        tests = []
        for value, scope in values:
            if is_const(value, None):
                continue
            branch = _enclosing_if(scope, value)
            found = self.guard(branch[0].test, scope) if branch is not None else None
            if found is None:
                # also given on a way that is no rank test (`if is_distributed: x =
                # broadcast_object(x)`, Uni-Core's checkpoint flag): not None on every rank there
                return None
            tests.append(found if branch[1] == "body" else found.negated())
        if tests:
            found = tests[0]
            return RankTest(f"{name} is not None", found.key, found.polarity, found.assumption, found.scope)
        return None

    def _answered_on_one_rank(self, values: list, depth: int) -> Optional[RankTest]:
        """Every value is the answer of a local function that hands back something only under
        one rank test and None elsewhere (IEBins' `online_eval`, whose measures come back where
        `gpu == 0`): `measures is not None` is that rank test. (A helper answering `rank == 0`
        itself is never None: only the functions _returns_under_rank reads.)"""
        tests = []
        for value, scope in values:
            if is_const(value, None):
                continue
            targets = self.program.resolve(value.func, scope)[0] if value.__class__ is ast.Call and depth > 0 else ()
            tests += [self._returns_under_rank(t, depth - 1) if self.program.is_function(t) and t.node is not None
                      and not isinstance(t.node, ast.Module) else None for t in targets] or [None]
        if not tests or None in tests or len({(t.key, t.polarity) for t in tests}) != 1:
            return None
        return tests[0]

    def _keyed(self, test: ast.Subscript, fn: Function, depth: int) -> Optional[RankTest]:
        """`env["is_main"]` where `env = setup()` and setup returns `{"is_main": rank == 0, ...}`:
        the rank test the dict literal holds under that key."""
        tables = []
        for value, scope in self.program.values_of(test.value, fn, 2):
            held = _namespace_of(value)
            if held is not None and isinstance(test.slice.value, str) and test.slice.value.isidentifier():
                # `args = vars(args)` then `args["first_gpu"]`: the namespace's attribute itself
                # (BSVD's `args.first_gpu = bool(... args.rank == 0)`, read through the dict)
                key = (id(test), id(value))
                read = self._items.get(key)
                if read is None:
                    read = self._items[key] = ast.copy_location(
                        ast.Attribute(value=held, attr=test.slice.value, ctx=ast.Load()), test)
                found = self.guard(read, scope, depth - 1)
                if found is not None:
                    return found
                continue
            if isinstance(value, ast.Dict):
                tables.append((value, scope))
            elif isinstance(value, ast.Call):
                tables.extend((ret, target) for target in self.program.resolve(value.func, scope)[0]
                              if not isinstance(target.node, ast.Module)
                              for ret in target.returned if isinstance(ret, ast.Dict))
        for table, scope in tables:
            for key, entry in zip(table.keys, table.values):
                if isinstance(key, ast.Constant) and key.value == test.slice.value:
                    found = self.guard(entry, scope, depth - 1)
                    if found is not None:
                        return found
        # `args["is_master"] = gpu == 0` in the spawned worker, read as `self.args["is_master"]`
        # by the trainer it hands args to: that key of a dict of that name, stored anywhere
        for entry, scope in self._key_stores().get((last_name(test.value) or "", test.slice.value), ()):
            found = self.guard(entry, scope, depth - 1)
            if found is not None:
                return found
        return None

    def _key_stores(self) -> dict:
        """(the dict's last name, key) -> (value, function) of each `d["key"] = value` in the
        program, and ("", ".field") -> those of each `options.field = value` (an object other than
        self), made once."""
        found = self.__dict__.get("_stores")
        if found is None:
            found = self.__dict__["_stores"] = {}
            for fn in self.program.functions:
                for node in fn.own_of(ast.Assign):
                    if node.__class__ is ast.Assign:
                        for target in node.targets:
                            if target.__class__ is ast.Subscript and target.slice.__class__ is ast.Constant \
                                    and isinstance(target.slice.value, str):
                                found.setdefault((last_name(target.value) or "", target.slice.value), []).append(
                                    (node.value, fn))
                            elif target.__class__ is ast.Attribute and target.value.__class__ is ast.Name \
                                    and target.value.id != "self":
                                # (`opts.gpu = ...`: a field of an options object, keyed ("", ".gpu"))
                                found.setdefault(("", "." + target.attr), []).append((node.value, fn))
        return found

    def _on_the_single_side(self, value: ast.AST, fn: Function) -> bool:
        """The value is assigned on the side of an `if` that only a run without a process group
        takes (the `else:` of `if args.distributed:`)."""
        branch = _enclosing_if(fn, value)
        if branch is None:
            return False
        holds = branch[0].test if branch[1] == "body" else ast.UnaryOp(op=ast.Not(), operand=branch[0].test)
        if self.single_process(holds, fn):
            return True
        mine = branch[0].body if branch[1] == "body" else branch[0].orelse
        if self._sets_up(mine, fn):
            # (`if args.use_accelerate: accelerator = Accelerator(); is_main = accelerator.is_main_process`:
            # the side that joins the group is the distributed run, off by default or not)
            return False
        if self._ruled_out_at_launch(branch[0].test, branch[1] == "body", fn):
            # `ddp = is_torchrun and not cfg.use_deepspeed` with the config the script loads
            # saying DeepSpeed: `if ddp: master = rank == 0` never runs, the `else: master = True` does
            return True
        # (`if num_gpus > 1: ddp_setup(); cfg["gpu_id"] = local_rank` / `else: cfg["gpu_id"] = 0`:
        # the side beside the one that sets up the process group never does)
        other = branch[0].orelse if branch[1] == "body" else branch[0].body
        return self._sets_up(other, fn)

    def _module_constant(self, node: ast.Attribute, fn: Function) -> bool:
        """`mod.dist_rank` of a local module that binds it only to constants - at its top level
        and in its functions that declare it `global` (CT2's `set_gpu_mode`, `dist_rank = 0` with
        the rank left in a comment): the same value on every rank, whatever its name says."""
        return self.module_constants(node, fn) is not None

    def module_constants(self, node: ast.AST, fn: Function) -> Optional[set]:
        """The constants `mod.x` of a local module may hold: every binding of x (at the module's
        top and in its functions that declare it `global`) a constant, or a comparison of another
        such global with one (CT2's `distributed = world_size > 1`, world_size only ever 1:
        False). None otherwise."""
        if node.__class__ is not ast.Attribute or node.value.__class__ is not ast.Name:
            return None
        owner = self.program.symbol(node.value.id, fn)
        if owner.__class__.__name__ != "Module" or owner.body is None:
            return None
        return _global_constants(owner, node.attr, 1)

    def _ruled_out_at_launch(self, test: ast.AST, body: bool, fn: Function) -> bool:
        """The side (body, or else) of `if test:` the run as launched never takes: the test, or
        the one value its plain name is bound to, settled by the options and configs read."""
        if test.__class__ is ast.Name:
            bound = fn.bindings.get(test.id, ())
            test = bound[0][1] if len(bound) == 1 else test
        truth = settled(test, self.program)
        return truth is (not body)

    def _sets_up(self, stmts: list, fn: Function) -> bool:
        """The statements call init_process_group, or a local function that does; or build
        Accelerate's Accelerator, which joins the group an `accelerate launch` set up (the
        `else:` of `if args.use_accelerate:` is then the plain one-process run)."""
        for call in (n for stmt in stmts for n in walk(stmt) if n.__class__ is ast.Call):
            if last_name(call.func) == "init_process_group" or \
                    (self.program.qualify(call.func, fn) or "") == "accelerate.Accelerator":
                return True
            for target in self.program.resolve(call.func, fn)[0]:
                if target.node is not None and not isinstance(target.node, ast.Module) and any(
                        last_name(c.func) == "init_process_group" for c in target.own_calls):
                    return True
        return False

    def _set_by_branches(self, values: list, depth: int) -> Optional[RankTest]:
        """A flag given only constants, True only on a rank test's side (`if opt.rank == 0:
        opt.log = True` / `else: opt.log = False`, HybrIK): that rank test."""
        if not all(is_const(v, True, False) for v, _ in values):
            return None
        tests = []
        for value, scope in values:
            if not is_const(value, True):
                continue
            branch = _enclosing_if(scope, value)
            found = self.guard(branch[0].test, scope, depth - 1) if branch is not None else None
            if found is None:
                return self._turned_off(values, depth)  # true somewhere without a rank test
            tests.append(found if branch[1] == "body" else found.negated())
        if tests and len({(t.polarity, t.scope) for t in tests}) == 1:
            return tests[0]
        return None

    def _turned_off(self, values: list, depth: int) -> Optional[RankTest]:
        """A flag True by default (outside any `if`) and set False only under a rank test
        (`self.verbose = True` ... `if args.gpu != 0: self.verbose = False`, VL-T5's trainer):
        true where that test does not hold."""
        trues = [(v, s) for v, s in values if is_const(v, True)]
        if len(trues) != 1 or _enclosing_if(trues[0][1], trues[0][0]) is not None:
            return None
        tests = []
        for value, scope in values:
            if is_const(value, True):
                continue
            branch = _enclosing_if(scope, value)
            found = self.guard(branch[0].test, scope, depth - 1) if branch is not None else None
            if found is None:
                return None
            tests.append((found if branch[1] == "body" else found.negated()).negated())
        if tests and len({(t.polarity, t.scope) for t in tests}) == 1:
            return tests[0]
        return None

    def _left_at_none(self, node: ast.AST, fn: Function) -> Optional[RankTest]:
        """`def __init__(self, logger=None)`, called with a logger under `if rank == 0:` and without
        one in that if's `else:`: the parameter is None on the other ranks, so `logger is not None`
        (or the `self.logger` it is kept in) is that rank test."""
        if node.__class__ is not ast.Name or not fn.defaulted.get(node.id) or not is_const(_default(fn, node.id), None):
            return None
        given, left = [], list(fn.defaulted[node.id])
        for value, caller in fn.arguments.get(node.id, []):
            (left if is_const(value, None) else given).append((value, caller))
        if not given:
            return None
        sides = {(id(caller), _under_if(caller, site)) for site, caller in given}
        others = {(id(caller), _under_if(caller, site)) for site, caller in left}
        if len(sides) != 1 or len(others) != 1:
            return None
        (caller_id, (stmt, side)), (other_id, (other_stmt, other_side)) = next(iter(sides)), next(iter(others))
        if stmt is None or stmt is not other_stmt or side == other_side or caller_id != other_id:
            return None
        caller = given[0][1]
        found = self.guard(stmt.test, caller)
        if found is None:
            return None
        return RankTest(f"{node.id} is not None", found.key,
                        found.polarity if side == "body" else found.negated().polarity,
                        found.assumption, found.scope)

    def single_process(self, node: ast.AST, fn: Function) -> bool:
        """The test holds only where the run is not distributed: `not distributed`, `not
        dist.is_initialized()`, `world_size == 1`, `local_rank == -1`. A rank test beside it
        (`if not distributed and device_id > 0: return`) splits no distributed ranks."""
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = node.operand
            if inner.__class__ is ast.Compare:
                # `not (world_size > 1)`: the other side of the distributed run's own test (the
                # `else:` of `if world_size > 1:`, a one-GPU run's early stop)
                return self.distributed_run(inner, fn)
            return isinstance(inner, (ast.Name, ast.Attribute, ast.Call)) and self.uniform(inner, fn) \
                and not _negated_switch(inner)
        if isinstance(node, (ast.Name, ast.Attribute)) and _negated_switch(node) and self.uniform(node, fn):
            return True  # `if args.no_ddp:`
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq) and \
                is_const(node.comparators[0], -1):
            return self.is_rank(node.left, fn)  # local_rank == -1: launched without a launcher
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.comparators[0], ast.Constant):
            left, op, value = node.left, node.ops[0], node.comparators[0].value
            if isinstance(op, ast.Is) and value is None:
                # `self.dist_rank is None`: no rank was handed in, the one-process run (a rank
                # known as such is an int wherever a process group is up)
                return self.is_rank(left, fn)
            sized = (last_name(left.func) if isinstance(left, ast.Call) else last_name(left)) or ""
            if sized.endswith("world_size") and isinstance(value, int) and not isinstance(value, bool):
                return (isinstance(op, ast.Eq) and value == 1) or (isinstance(op, ast.LtE) and value == 1) \
                    or (isinstance(op, ast.Lt) and value == 2)
        return False

    def launched(self, node: ast.AST, fn: Function) -> bool:
        """`local_rank != -1` (`>= 0`, `is not None`): a rank handed at all, single_process's
        test the other way round."""
        if not (isinstance(node, ast.Compare) and len(node.ops) == 1):
            return False
        op, value = node.ops[0], node.comparators[0]  # (`-1` is a minus sign on 1: is_const reads it)
        launched = (isinstance(op, (ast.NotEq, ast.Gt)) and is_const(value, -1)) or \
            (isinstance(op, ast.GtE) and is_const(value, 0)) or (isinstance(op, ast.IsNot) and is_const(value, None))
        return launched and self.is_rank(node.left, fn)

    def distributed_run(self, node: ast.AST, fn: Function) -> bool:
        """The test holds wherever the run is distributed: `args.distributed`,
        `dist.is_initialized()`, `world_size > 1` - the switch itself, not its negation."""
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) and _negated_switch(node.operand):
            return self.uniform(node.operand, fn)  # `not args.no_ddp`
        if isinstance(node, (ast.Name, ast.Attribute, ast.Call)):
            return self.uniform(node, fn) and not self.is_rank(node, fn) and not _negated_switch(node)
        # (`if "RANK" in os.environ:`: a launcher set the rank, torchvision's references' test)
        return _world_compared(node) in (("Gt", 1), ("GtE", 2), ("NotEq", 1)) or \
            self._launcher_variable(node, fn) is ast.In

    def one_process_run(self, node: ast.AST, fn: Function) -> bool:
        """The test holds only where the run is one process: a distributed_run test negated
        (`not dist.is_initialized()`), or the world counted as one (`world_size == 1`,
        `dist.get_world_size() <= 1`, `< 2`)."""
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return self.distributed_run(node.operand, fn)
        return _world_compared(node) in (("Eq", 1), ("LtE", 1), ("Lt", 2)) or \
            self._launcher_variable(node, fn) is ast.NotIn

    def setup_test(self, test: ast.AST) -> bool:
        """The test is made of the very flags the process group is set up under, read again (`if
        self.args.dist and not self.args.only_test:` beside `if args.dist and not args.only_test:
        init(...)`): each plain part one of the set-up test's flags, each `not` part one it
        negates. It holds only where the group was set up; its `else:` is the one-process run."""
        if not self.init_switch_parts:
            return False
        parts = test.values if test.__class__ is ast.BoolOp and test.op.__class__ is ast.And else [test]
        flags = [(last_name(p.operand) or "", True) if p.__class__ is ast.UnaryOp and p.op.__class__ is ast.Not
                 else (last_name(p) or "", False) for p in parts]
        return all(n for n, _ in flags) and any(not neg for _, neg in flags) and \
            all((n in self.init_switch_negated) if neg else (n in self.init_switch_parts) for n, neg in flags)

    def _launcher_variable(self, node: ast.AST, fn: Function):
        """ast.In for `"RANK" in os.environ` (a variable only a launcher sets: RANK, LOCAL_RANK,
        WORLD_SIZE), ast.NotIn for its negation; None for any other test."""
        if node.__class__ is ast.Compare and len(node.ops) == 1 and node.ops[0].__class__ in (ast.In, ast.NotIn) \
                and node.left.__class__ is ast.Constant and node.left.value in ("RANK", "LOCAL_RANK", "WORLD_SIZE") \
                and (self.program.qualify(node.comparators[0], fn) or text(node.comparators[0])) == "os.environ":
            return node.ops[0].__class__
        return None

    def _world_size_valued(self, name: ast.Name, fn: Function) -> bool:
        """Every value the name may hold here (bound, or unpacked from a local helper's return)
        is the world's size (_world_count)."""
        # (values_of hands back an unpacked name itself: the helper's element says what it holds)
        values = [(v, scope) for v, scope in self.program.values_of(name, fn, 1)
                  if not (v.__class__ is ast.Name and v.id == name.id)] + self.program.unpacked(name.id, fn)
        return bool(values) and all(_world_count(v) for v, _ in values)

    def uniform(self, node: ast.AST, fn: Function, depth: int = 2) -> bool:
        """A test the same on every rank that says whether the run is distributed at all."""
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return self.uniform(node.operand, fn, depth)
        if isinstance(node, ast.BoolOp):
            return all(self.uniform(v, fn, depth) for v in node.values)
        if isinstance(node, ast.Call):
            if (last_name(node.func) or "") in UNIFORM_CALLS:
                return True
            # a local helper answering "distributed at all?": `def is_dist(): return
            # dist.is_available() and dist.is_initialized()`
            targets, _ = self.program.resolve(node.func, fn) if depth > 0 else ([], [])
            return any(_returns(t) and all(self.uniform(r, t, depth - 1) for r in _returns(t))
                       for t in targets)
        if isinstance(node, (ast.Name, ast.Attribute)):
            if UNIFORM_NAME.search(last_name(node) or "") or (last_name(node) or "") in self.init_switch_parts:
                return True
            # by value where the name says nothing: `rank, world, local = ddp_setup()` whose helper
            # returns `int(os.environ.get("WORLD_SIZE", 1))` (deepjump's `world > 1`)
            return node.__class__ is ast.Name and depth > 0 and self._world_size_valued(node, fn)
        if isinstance(node, ast.Compare):
            if len(node.ops) == 1 and node.ops[0].__class__ in (ast.In, ast.NotIn) and \
                    node.left.__class__ is ast.Constant and isinstance(node.left.value, str) and \
                    (self.program.qualify(node.comparators[0], fn) or text(node.comparators[0])) == "os.environ":
                return True  # `"RANK" in os.environ`: the launcher sets the same variables on every rank
            return all(self.uniform(n, fn, depth) or isinstance(n, ast.Constant) for n in [node.left, *node.comparators])
        return False


def _world_count(value: ast.AST) -> bool:
    """`dist.get_world_size()`, `int(os.environ["WORLD_SIZE"])` (or `.get("WORLD_SIZE", 1)`):
    the number of processes, the same on every rank."""
    while value.__class__ is ast.Call and value.func.__class__ is ast.Name and value.func.id == "int" and value.args:
        value = value.args[0]
    return (value.__class__ is ast.Call and last_name(value.func) == "get_world_size") or \
        env_key(value) == "WORLD_SIZE"


def _switch_parts(fn: Function, call: ast.Call, negated: bool = False) -> set[str]:
    """The plain flags (names, attributes) conjoined in the tests whose body holds the call,
    within its function: `if args.use_gpu and args.use_multi_gpu: init_process_group()`.
    negated: those conjoined under `not` instead (`and not args.only_test`)."""
    found: set[str] = set()
    for node in walk(fn.node):
        if isinstance(node, ast.If) and any(n is call for part in node.body for n in walk(part)):
            parts = node.test.values if isinstance(node.test, ast.BoolOp) and isinstance(node.test.op, ast.And) \
                else [node.test]
            if negated:
                parts = [p.operand for p in parts if p.__class__ is ast.UnaryOp and p.op.__class__ is ast.Not]
            found.update(last_name(p) or "" for p in parts if isinstance(p, (ast.Name, ast.Attribute)))
    return found - {""}


def _a_word(node: ast.AST) -> bool:
    """A text constant that no rank's number is (`"cpu"`, not `"0"`, nor `"cuda:0"`: the device
    `"cuda:" + str(rank)` names, PaPaGei's `if device == "cuda:0":`)."""
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and \
        not re.fullmatch(r"(?:cuda:)?-?\d+", node.value.strip())


def _bitwise_logic(test: ast.AST) -> Optional[ast.BoolOp]:
    """`a & b & c` / `a | b` over comparisons and calls (no integer operand: `rank & 1` is
    arithmetic): the `and` / `or` it means, flattened, its parts the original nodes."""
    if not (isinstance(test, ast.BinOp) and isinstance(test.op, (ast.BitAnd, ast.BitOr))):
        return None
    kind = type(test.op)
    parts: list = []
    stack = [test]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.BinOp) and isinstance(node.op, kind):
            stack.extend((node.right, node.left))
        elif isinstance(node, ast.Constant) or (isinstance(node, ast.BinOp) and not isinstance(node.op, (ast.BitAnd, ast.BitOr))):
            return None  # arithmetic on a number: not a logical test
        else:
            parts.append(node)
    if not any(isinstance(p, (ast.Compare, ast.Call, ast.UnaryOp, ast.BoolOp)) for p in parts):
        return None  # `flags & mask`: names alone say nothing of booleans
    return ast.copy_location(ast.BoolOp(op=ast.And() if kind is ast.BitAnd else ast.Or(), values=parts), test)


def _flag_scope(name: str) -> str:
    return "node" if "local" in name.lower() else "global"


def _key(node: ast.AST) -> str:
    return last_name(node) or text(node)


def _loop_over_ranks(node: ast.AST, fn: Function) -> bool:
    """`r` in `for r in range(world_size):` (or over the number of processes)."""
    if not isinstance(node, ast.Name):
        return False
    found = _loops_by_target(fn).get(node.id, [])
    # the loop the read sits in (a name reused by another loop further down: sparse-GPT's
    # `idx_rank` over `range(world_size)`, then over a list of ranks), else the first
    around = [loop for loop in found if loop.lineno <= getattr(node, "lineno", 0) <= (loop.end_lineno or 0)]
    loop = (around[-1:] or found[:1] or [None])[0]
    if loop is not None:
        return bool(re.search(r"world_size|num_processes|size\(\)|nprocs|num_ranks", text(loop.iter)))
    return False


def _loops_by_target(fn: Function) -> dict[str, list[ast.For]]:
    """The `for NAME in ...` loops of fn by NAME, built once per function."""
    loops = fn.__dict__.get("_loops_by_target")
    if loops is None:
        loops = fn.__dict__["_loops_by_target"] = {}
        for loop in fn.own_of(ast.For):
            if isinstance(loop.target, ast.Name):
                loops.setdefault(loop.target.id, []).append(loop)
    return loops


def _read_in_loop_over_ranks(node: ast.Name, fn: Function) -> bool:
    """The name is read inside a `for name in range(world_size):` loop of fn that binds it."""
    return _loop_over_ranks(node, fn) and any(
        loop.lineno <= getattr(node, "lineno", 0) <= (loop.end_lineno or 0)
        for loop in _loops_by_target(fn).get(node.id, ()))


class _Substitute(ast.NodeTransformer):
    """Each parameter's name replaced by the argument a call passes for it."""

    def __init__(self, bound: dict) -> None:
        self.bound = bound

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return self.bound.get(node.id, node)


def _first_gpu(node: ast.AST) -> bool:
    """`torch.device("cuda:0")`, `torch.device("cuda", 0)`, `"cuda:0"`: the node's first GPU."""
    if isinstance(node, ast.Call) and last_name(node.func) == "device" and node.args:
        if len(node.args) == 2:
            return is_const(node.args[0], "cuda") and is_const(node.args[1], 0)
        node = node.args[0]
    return is_const(node, "cuda:0")


def _a_device(node: ast.AST) -> bool:
    """A device by its name: `x.device`, `device`, `self.dev`."""
    return (last_name(node) or "").lower() in ("device", "dev", "gpu_device", "cuda_device")


def _copied_from(fn: Function, name: str) -> Optional[str]:
    """The one plain name fn binds `name` to (`rank = local_rank`), where that is its only binding."""
    bound = fn.bindings.get(name, ())
    if len(bound) == 1 and bound[0][1].__class__ is ast.Name:
        return bound[0][1].id
    return None


def _copies_of(fn: Function, source: str) -> list[str]:
    """The names fn binds once, to the plain name `source` alone."""
    return [name for name in fn.bindings if _copied_from(fn, name) == source]


def _offset_from(name: str, fn: Function) -> bool:
    """fn assigns `<something> * <count> + name` (or `name + <something> * <count>`)."""
    return bool(_offsets_of(name, fn))


def _offsets_of(name: str, fn: Function) -> list[ast.BinOp]:
    """The products fn adds to `name` in such assignments (a product kept in a name first:
    `base_rank = opt.rank * opt.ngpus_per_node`, then `opt.rank = base_rank + gpu`)."""
    found = []
    products = {t.id: node.value for node in fn.own if isinstance(node, ast.Assign)
                and isinstance(node.value, ast.BinOp) and isinstance(node.value.op, ast.Mult)
                for t in node.targets if isinstance(t, ast.Name)}
    for node in fn.own:
        value = getattr(node, "value", None)
        if isinstance(node, (ast.Assign, ast.AugAssign)) and isinstance(value, ast.BinOp) and \
                isinstance(value.op, ast.Add):
            sides = (value.left, value.right)
            if any(isinstance(side, ast.Name) and side.id == name for side in sides):
                found += [side for side in sides if isinstance(side, ast.BinOp) and isinstance(side.op, ast.Mult)]
                found += [products[side.id] for side in sides if isinstance(side, ast.Name) and side.id in products]
    # (a node's offset every caller hands in, added anywhere: `rank=node_offset + gpu`)
    for node in fn.own_of(ast.BinOp):
        if isinstance(node.op, ast.Add) and any(isinstance(s, ast.Name) and s.id == name for s in (node.left, node.right)):
            found += [p for side in (node.left, node.right) if isinstance(side, ast.Name) and side.id != name
                      for p in handed_products(fn, side.id)]
    return found


def handed_products(fn: Function, name: str) -> list[ast.BinOp]:
    """What every caller hands fn's parameter `name` where each hands a product: `mp.spawn(train,
    args=(node_rank * gpus, ...))` into `def train(gpu, node_offset, ...)` - a node's offset,
    added to the spawn index it makes the job's rank (`node_offset + gpu`). [] otherwise."""
    if name not in fn.params or fn.bindings.get(name):
        return []
    given = [v for v, _ in fn.arguments.get(name, [])]
    return given if given and all(isinstance(v, ast.BinOp) and isinstance(v.op, ast.Mult) for v in given) else []


def _turn_taking(node: ast.AST, is_rank) -> bool:
    """`i % world_size` with i a counter, not a rank: compared with the rank, each rank's turn
    comes once in every `world_size` items of a stream all ranks walk alike (OpenNMT's round-robin
    batches), so the ranks enter the branch equally often, not one of them alone."""
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) \
        and isinstance(node.left, (ast.Name, ast.Attribute)) and not is_rank(node.left) \
        and bool(WORLD_COUNT.search(text(node.right)))


WORLD_COUNT = re.compile(r"world|get_size|nprocs|num_(?:gpus|procs|ranks|replicas)|n_?gpus?\b|ngpu", re.I)


def _periodic(node: ast.AST) -> bool:
    """`step % log_every == 0`: a counter test, true on every rank at the same steps, and true at
    some step of any run long enough: not a value the finding has to assume."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        node = node.operand  # `not epoch % k` (minimal-diffusion): `epoch % k == 0`
        return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) or _periodic(node)
    if isinstance(node, ast.Attribute) and node.attr in STEP_PHASES:
        return True
    return isinstance(node, ast.Compare) and any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod)
                                                 for n in [node.left, *node.comparators])


def _counted_past(node: ast.AST, fn: Function, program: Program = None) -> bool:
    """`global_step > 0` where fn (or its class) steps `global_step` up: a counter every rank
    keeps alike, past the bound after a few steps of any run; not a value to assume."""
    # (a bound the run's settings give: `current_step >= cfg.training.ckpt_steps`, a field of
    # the config, reached after that many steps alike)
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Gt, ast.GtE))):
        return False
    bound = node.comparators[0]
    setting = dotted(bound) if isinstance(bound, ast.Attribute) else ""
    if not ((isinstance(bound, ast.Constant) and isinstance(bound.value, int))
            or (setting and not RANK_NAME.match(setting.rpartition(".")[2]))):
        return False
    if setting and program is not None:
        # (a bound a config gives as no finite count - `ckpt_steps: .inf`, a 5,000-digit number
        # read as inf, a string - is never passed)
        held = config_settles(bound, program) or set()
        if any(isinstance(v, bool) or not isinstance(v, int) for v in held):
            return False
    # (against a setting, only a loop's own counter: one stepped by `+=` may be stepped only when
    # the loss stalls, a value the finding has to assume)
    return _counter(dotted(node.left), fn, stepped=isinstance(bound, ast.Constant))


def _counted_equality(node: ast.AST, fn: Function) -> bool:
    """`total_step == num_batch` / `total_step != 0` on a count a loop of fn takes through every
    integer (counts_every_pass): every rank counts alike, and the count meets the value on one
    pass and misses it on the others - both answers come on some pass of any run long enough;
    not a value to assume."""
    if not (node.__class__ is ast.Compare and len(node.ops) == 1 and node.ops[0].__class__ in (ast.Eq, ast.NotEq)):
        return False
    name = dotted(node.left)
    return bool(name) and any(counts_every_pass(loop, name) for loop in fn.own_of(ast.For, ast.AsyncFor))


def counts_every_pass(loop: ast.AST, counter: str) -> bool:
    """The loop's own index, or a name its body sets from it by addition at its top level (`step
    = epoch * n + i + 1` in `for i, b in enumerate(loader)`, `epoch_log = epoch + 1` in `for
    epoch in range(...)`), or stepped by `+= 1` each pass: a count that takes every integer on
    its way, so an `==` on it is met."""
    if not isinstance(loop, (ast.For, ast.AsyncFor)):
        return False
    target, iterable = loop.target, loop.iter
    index = None
    if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name):
        if iterable.func.id == "range" and isinstance(target, ast.Name):
            index = target.id
        elif iterable.func.id == "enumerate" and isinstance(target, ast.Tuple) and target.elts and \
                isinstance(target.elts[0], ast.Name):
            index = target.elts[0].id
    if index is None:
        return False
    if counter == index:
        return True
    for stmt in loop.body:
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, ast.Add) and dotted(stmt.target) == counter \
                and is_const(stmt.value, 1):
            return True
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and dotted(stmt.targets[0]) == counter \
                and index in _added_terms(stmt.value):
            return True
    return False


def _added_terms(value: ast.AST) -> set:
    """The plain names a sum is made of (`epoch * n + i + 1`: {"i"}; the product is no term)."""
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
        return _added_terms(value.left) | _added_terms(value.right)
    return {value.id} if isinstance(value, ast.Name) else set()


def _counter(name: str, fn: Function, depth: int = 1, stepped: bool = True) -> bool:
    """The name counts up alike on every rank: stepped by `+=` in fn (or its class), the
    counter of a loop over a range or an enumerate, or bound to such a counter plus an offset
    (`current_step = base_step + step` in `for step, batch in enumerate(loader):`)."""
    if not name:
        return False
    methods = [fn] + (list(fn.cls.methods.values()) if name.startswith("self.") and fn.cls is not None else [])
    if stepped and any(isinstance(n, ast.AugAssign) and isinstance(n.op, ast.Add) and dotted(n.target) == name
                       for method in methods for n in method.own):
        return True
    # (or the counter of a loop over a range: `for step in range(start, cfg.max_iters):` passes
    # `step > 0` on its second pass, on every rank alike)
    for loop in fn.own_of(ast.For):
        target, it = loop.target, loop.iter
        if it.__class__ is ast.Call and last_name(it.func) == "range" and target.__class__ is ast.Name \
                and target.id == name:
            return True
        if it.__class__ is ast.Call and last_name(it.func) == "enumerate" and target.__class__ is ast.Tuple \
                and target.elts and target.elts[0].__class__ is ast.Name and target.elts[0].id == name:
            return True
    bound = fn.bindings.get(name, []) if depth > 0 and name.isidentifier() else []
    return len(bound) == 1 and isinstance(bound[0][1], ast.BinOp) and isinstance(bound[0][1].op, ast.Add) and any(
        isinstance(side, ast.Name) and _counter(side.id, fn, depth - 1, stepped)
        for side in (bound[0][1].left, bound[0][1].right))


# Accelerate's `accelerator.sync_gradients`: true on every process at the micro-step that steps
# the optimizer (the accumulation counter every rank keeps alike), so periodic as `step % k == 0` is.
STEP_PHASES = frozenset({"sync_gradients"})


def _on_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def _exported_as_rank(name: str, fn: Function) -> bool:
    """fn writes the name into the environment as RANK (`os.environ["RANK"] = str(rank)`)."""
    for node in fn.own_of(ast.Assign):
        if len(node.targets) == 1 and env_key(node.targets[0]) == "RANK" \
                and any(n.__class__ is ast.Name and n.id == name for n in walk(node.value)):
            return True
    return False


def _world_compared(node: ast.AST) -> Optional[tuple[str, int]]:
    """(the operator's name, the number) of `world_size > 1`, `get_world_size() == 1`: the world's
    size compared with a whole number; None for any other test."""
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.comparators[0], ast.Constant)):
        return None
    sized = last_name(node.left.func) if isinstance(node.left, ast.Call) else last_name(node.left)
    value = node.comparators[0].value
    if not (sized or "").endswith("world_size") or type(value) is not int:
        return None
    return node.ops[0].__class__.__name__, value


def _passes_through(value: ast.AST, params: set) -> bool:
    """The expression only chooses among its function's parameters: a parameter, a constant,
    `a if a is not None else b`, `a or b`, `getattr(obj, name, default)` of parameters - not
    `args.rank == 0`, which reads a rank off what it is handed."""
    for node in walk(value):
        if isinstance(node, ast.Name):
            if node.id not in params and node.id != "getattr":
                return False
        elif isinstance(node, ast.Compare):
            if not all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops) or \
                    not all(is_const(c, None) for c in node.comparators):
                return False
        elif isinstance(node, ast.Call):
            if not (isinstance(node.func, ast.Name) and node.func.id == "getattr"):
                return False
        elif not isinstance(node, (ast.IfExp, ast.BoolOp, ast.Constant, ast.Load, ast.boolop, ast.cmpop)):
            return False
    return True


def _returns(target: Function) -> list[ast.AST]:
    return target.returned


def _enclosing_if(fn: Function, value: ast.AST) -> Optional[tuple[ast.If, str]]:
    """The innermost `if` of a function whose body (or else) holds the statement assigning value."""
    index = fn.__dict__.get("_assigned_under")
    if index is None:  # built once per function: id(assigned value) -> (if, side)
        index = {}
        for node in fn.own_of(ast.If):
            if isinstance(node, ast.If):
                for side, part in (("body", node.body), ("else", node.orelse)):
                    for stmt in part:
                        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                            index[id(stmt.value)] = (node, side)
                        elif stmt.__class__ is ast.Expr and stmt.value.__class__ is ast.Call and \
                                last_name(stmt.value.func) == "update":
                            # `kwargs.update(dict(checkpoint_dir=d))`: each value it adds
                            # (program._spread_keys hands them to the callee's parameters)
                            call = stmt.value
                            tables = [t for t in map(_dict_call_literal, call.args) if t.__class__ is ast.Dict]
                            for value in [*(kw.value for kw in call.keywords), *(v for t in tables for v in t.values)]:
                                index[id(value)] = (node, side)
        fn.__dict__["_assigned_under"] = index
    return index.get(id(value))


def _default(fn: Function, name: str) -> Optional[ast.AST]:
    """The default a positional parameter declares, if any."""
    args = getattr(fn.node, "args", None)
    if args is None or name not in [a.arg for a in args.posonlyargs + args.args]:
        return None
    return param_defaults(fn.node).get(name)


def _under_if(fn: Function, node: ast.AST) -> tuple[Optional[ast.If], str]:
    """The innermost `if` of a function whose body or else holds node, and which side: by source
    position, one pass over the function's ifs (an index of every node under each side would be
    quadratic in a long elif chain)."""
    at = (node.lineno, node.col_offset)
    found: tuple[Optional[ast.If], str] = (None, "")
    for stmt in fn.own_of(ast.If):  # outer ifs first: a later match is an inner one
        if stmt.__class__ is ast.If:
            for side, part in (("body", stmt.body), ("else", stmt.orelse)):
                if part and (part[0].lineno, part[0].col_offset) <= at <= (part[-1].end_lineno, part[-1].end_col_offset):
                    found = (stmt, side)
    return found


def _name_prefix(node: ast.AST) -> str:
    """The constant start of a name built at run time: `'init_dist_%s' % x`, `'init_dist_' + x`,
    f"init_dist_{x}"; "" when it has none."""
    spec = name_pattern(node)
    return spec[0] if spec is not None and spec[1] is not None else ""


def _kept_set(fn: Function, value: ast.AST, name: str) -> bool:
    """`value` is assigned to `name` inside `if <name> is not None:`: it stays an object there."""
    branch = _enclosing_if(fn, value)
    if branch is None or branch[1] != "body":
        return False
    test = branch[0].test
    return isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.IsNot) \
        and is_const(test.comparators[0], None) and dotted(test.left) == name


def _namespace_of(value: ast.AST) -> Optional[ast.AST]:
    """`vars(args)` / `args.__dict__`: the object whose attributes the dict's entries are."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "vars" \
            and len(value.args) == 1 and not value.keywords:
        return value.args[0]
    if isinstance(value, ast.Attribute) and value.attr == "__dict__":
        return value.value
    return None


def _guards_receiver(test: ast.IfExp) -> bool:
    """`ctx.is_main_process() if ctx else True` (or `... if ctx is not None else True`): the test
    asks whether the object the rank test is asked of exists - a distributed context handed in
    only where the run is distributed; without one, the one process is the main one."""
    subject = test.test
    if subject.__class__ is ast.Compare and len(subject.ops) == 1 and subject.ops[0].__class__ is ast.IsNot \
            and is_const(subject.comparators[0], None):
        subject = subject.left
    asked = [side for side in (test.body, test.orelse) if side.__class__ is ast.Call
             and side.func.__class__ is ast.Attribute]
    return bool(asked) and dotted(subject) is not None and any(dotted(side.func.value) == dotted(subject)
                                                               for side in asked)


def _default_side(test: ast.IfExp, fn: Any) -> Optional[ast.AST]:
    """`main if save_to_disk is None else save_to_disk` where `save_to_disk` is a parameter of
    fn left at its default None by every call the source shows (a keyword no caller hands):
    the side that default takes; None where that is not settled."""
    t = test.test
    if t.__class__ is ast.Name:
        # `ctx.is_main_process() if ctx else True` with ctx left at None: the falsy side
        t = ast.Compare(left=t, ops=[ast.IsNot()], comparators=[ast.Constant(value=None)])
    if not (isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], (ast.Is, ast.IsNot))
            and isinstance(t.left, ast.Name) and is_const(t.comparators[0], None)):
        return None
    name = t.left.id
    defaults = param_defaults(fn.node) if fn is not None else {}
    if name not in defaults or fn.bindings.get(name) or not is_const(defaults[name], None):
        return None  # (keyword-only parameters too: `*, save_to_disk=None`)
    if any(not is_const(value, None) for value, _ in fn.arguments.get(name, ())):
        return None
    return test.body if isinstance(t.ops[0], ast.Is) else test.orelse


def _negated_switch(node: ast.AST) -> bool:
    """`args.no_ddp`, `disable_dist`: a distributed switch named for its negation."""
    return isinstance(node, (ast.Name, ast.Attribute)) and bool(NEGATED_SWITCH.match(last_name(node) or ""))


def received_names(program, fn: Function) -> frozenset:
    """The names a function hands a receiving collective (`dist.broadcast_object_list(objs,
    src=0)`, `dist.recv(count, ...)`): what they hold afterwards came from another rank.
    Memoised on the function."""
    received = fn.__dict__.get("_received_names")
    if received is None:
        received = fn.__dict__["_received_names"] = frozenset(
            n.id for call in fn.own_calls if last_name(call.func) in RECEIVING and call.args
            and (program.qualify(call.func, fn) or "").startswith("torch.distributed")
            for n in walk(call.args[0]) if n.__class__ is ast.Name)
    return received


def _received_later(program, values: list) -> bool:
    """One binding takes the value back from a broadcast after another made it on one rank
    (`latest = find_last() if is_main() else None`, then `objs = [latest];
    dist.broadcast_object_list(objs, src=0); latest = objs[0]`): every rank holds rank 0's
    object from there on, so a test on it is no rank test."""
    for value, scope in values:
        received = received_names(program, scope)
        if received and value.__class__ is ast.Subscript and value.value.__class__ is ast.Name \
                and value.value.id in received and any(
                    s is scope and getattr(v, "lineno", 0) < value.lineno for v, s in values if v is not value):
            return True
    return False


# a comparison's operator, applied to constants
COMPARE_OPS = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Gt: lambda a, b: a > b,
               ast.GtE: lambda a, b: a >= b, ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b}


def _globals_set(owner) -> dict:
    """A module's names its functions declare `global`, with what they bind them to (None for
    a `+=`, which steps it: no constant); walked once a module."""
    held = owner.__dict__.get("_globals_set")
    if held is None:
        held = owner.__dict__["_globals_set"] = {}
        for inner in owner.functions.values():
            if inner.node is None:
                continue
            for name in {n for g in walk(inner.node) if g.__class__ is ast.Global for n in g.names}:
                values = held.setdefault(name, [])
                values += [v for _, v in inner.bindings.get(name, ())]
                values += [None for n in walk(inner.node) if n.__class__ is ast.AugAssign
                           and n.target.__class__ is ast.Name and n.target.id == name]
    return held


def _global_constants(owner, name: str, depth: int) -> Optional[set]:
    """The constants a module global is bound to (module_constants), comparisons `depth` deep."""
    values = [v for _, v in owner.body.bindings.get(name, ())] + _globals_set(owner).get(name, [])
    if not values:
        return None
    found: set = set()
    for value in values:
        if value.__class__ is ast.Constant:
            found.add(value.value)
        elif depth > 0 and value.__class__ is ast.Compare and len(value.ops) == 1 and \
                value.left.__class__ is ast.Name and value.comparators[0].__class__ is ast.Constant and \
                type(value.ops[0]) in COMPARE_OPS:
            left = _global_constants(owner, value.left.id, depth - 1)
            if left is None:
                return None
            try:
                found |= {COMPARE_OPS[type(value.ops[0])](x, value.comparators[0].value) for x in left}
            except TypeError:
                return None
        else:
            return None
    return found

