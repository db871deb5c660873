"""DDP806's facts: every checkpoint write (torch.save, a library's saver) with whether every rank
reaches it, and the per-node test that makes one rank per node write."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Optional

from ddpdoctor.core.findings import Location
from ddpdoctor.lint import batch_flags, rank_state, reaching, writes
from ddpdoctor.lint.ranks import handed_products
from ddpdoctor.lint.defaults import config_flag_off, off_at_launch, option_off, settled
from ddpdoctor.lint.fact_builder import _rebound, _single_process, argument_at, assigned_pairs, guard_test, _switched, _test_of, given_constants, loc, rank_guards, reached_from
from ddpdoctor.lint.nodes import source_lines, walk
from ddpdoctor.lint.config_files import deepspeed_json_stages, launched_plain
from ddpdoctor.lint.pins import pinned_major
from ddpdoctor.lint.patterns import dotted, engine_tested, hf_trainer, keyword, last_name, save_call, save_path, text
from ddpdoctor.lint.program import Function, Guard
from ddpdoctor.lint.walker import partial_target

# `self.x is None` / `self.x is not None` as a condition's text says it
_NONE_TEST = re.compile(r"^(not )?(self\.\w+) is (not )?None$")
_NONE_PARAM = re.compile(r"^(not )?([A-Za-z_]\w*) is (not )?None$")


@dataclass
class SaveFact:
    location: Location
    path_text: str
    every_rank: bool  # reached by every rank: no rank test on any way to it
    reason: str  # why it is (not) judged every-rank
    per_node: Optional[str] = None  # the per-node test (`local_rank == 0`) that lets one rank per node save
    call: str = "torch.save"  # the writing call, as the finding words it (`model.save_pretrained`)
    # every_rank, but the path holds a node-local rank alone (`final_{gpu}.pt`, gpu mp.spawn's
    # index in code that makes the global rank as node * ngpus + gpu): one writer per node per path
    local_path: str = ""
    # the statement list that holds the write ("file:line" of its first statement) with the rank
    # tests around it: writes sharing it (model, then optimizer, then EMA) are one block to move
    # under one rank test, told once (checks/lint/save_on_every_rank.py)
    block: str = ""
    # the call that leads every rank into the save's helper where its other callers test the rank
    # (`save_checkpoint(...)` after the loop, under `if rank == 0:` inside it): the place to fix
    call_site: Optional[Location] = None
    # what the write holds where it is a cache of data, not a model's state: "" for a checkpoint.
    # The race is the same; its cure is another (one rank builds the cache first, the others wait
    # and load it), and the advice says so
    data_cache: str = ""


class SaveFacts:
    """Mixin of lint/facts.FactBuilder over lint/fact_builder.BuilderCore's walks: DDP806."""

    # ------------------------------------------------------------------ saves
    def saves(self) -> list[SaveFact]:
        found = []
        holder: dict[int, Function] = {}  # id(save) -> the function the write is in
        node_local: dict[str, str] = {}
        for fn in self.functions:
            for event in fn.events:
                if event.kind != "save":
                    continue
                save = self._judged_save(fn, event, node_local)
                save.block = _block_key(fn, event)
                if save.per_node and event.guards:
                    # (one rank per node through one test: every write it lets through is one
                    # fix - the test - however the writes inside are grouped, `if epoch in
                    # saved_epochs:` included)
                    save.block = f"{fn.file.display}:{event.guards[0].line} per node"
                if save.every_rank and save.call == "torch.save":
                    save.data_cache = self._data_cache(fn, event.node)
                found.append(save)
                holder[id(save)] = fn
        for save in found:
            if save.every_rank and str(save.location) in node_local:
                save.every_rank, save.local_path = False, node_local[str(save.location)]
                save.reason = f"the path differs by the node-local rank `{save.local_path}` alone"
        # a write inside a local copy of a library's save method (a vendored transformers'
        # `save_pretrained` -> `torch.save(state, output_model_file)`) that every rank reaches only
        # through a call told as a write itself (`model.save_pretrained(dir)`): one write, told
        # at the call the script makes
        told = {str(s.location) for s in found if s.every_rank and s.call != "torch.save"}
        if told:
            found = [s for s in found if not (s.every_rank and str(s.location) not in told
                                                and self._only_through(holder[id(s)], told))]
        return found

    def _only_through(self, fn: Function, told: set, depth: int = 3) -> bool:
        """Every way into fn passes, a few calls up, one of the calls in `told` (locations)."""
        ways = self.callers().get(fn, [])
        if not ways or depth <= 0:
            return False
        return all(str(loc(caller, event.node)) in told or self._only_through(caller, told, depth - 1)
                   for caller, event in ways)

    def _option_off_around(self, fn: Function, event) -> Optional[str]:
        """The test on an option off unless the launch gives it (a store_true, a config flag every
        config sets false) that the write sits under, where it does not hold every save of the
        script (or Lightning keeps the checkpoints itself); None otherwise."""
        switch = next((c for c, flag in event.conds if flag and (option_off(c, self.program)
                                                                 or self._handed_an_option_off(fn, c)
                                                                 or config_flag_off(c, self.program))), None)
        return switch if switch and (not self._every_save_under(switch) or self.program.uses_lightning()) else None

    def _every_save_under(self, switch: str) -> bool:
        """Every save the script makes sits under the test `switch`."""
        found = self.__dict__.setdefault("_saves_under", {})
        if switch not in found:
            found[switch] = all(any(c == switch for c, _ in event.conds)
                                for fn in self.functions for event in fn.events if event.kind == "save")
        return found[switch]

    def _trainer_method(self, fn: Function) -> bool:
        """fn is a method of a class (or its local bases) whose methods run a backward, a hook of
        a transformers TrainerCallback (`on_save`), which the Trainer calls on every process, or
        a plain function that drives the training itself (a backward, or a Trainer's train())."""
        if fn.cls is None:
            # (a plain function that drives the training itself: `trainer = Trainer(...);
            # trainer.train(); model.save_pretrained(dir)` in an imported `main`)
            return fn.node.__class__ is not ast.Module and any(
                isinstance(c.func, ast.Attribute) and ((c.func.attr == "backward") or (
                    c.func.attr == "train" and not c.args and hf_trainer(self.program, c.func.value, fn)))
                for c in fn.own_calls)
        if fn.name.startswith("on_") and any(b.rpartition(".")[2] == "TrainerCallback"
                                             for b in self.program.library_bases(fn.cls)):
            return True
        for klass in (fn.cls, *self.program.bases(fn.cls)):
            for method in klass.methods.values():
                if any(isinstance(c.func, ast.Attribute) and c.func.attr == "backward" for c in method.own_calls):
                    return True
                if any(isinstance(c.func, ast.Attribute) and c.func.attr == "train" and not c.args
                       and hf_trainer(self.program, c.func.value, method) for c in method.own_calls):
                    return True  # (`trainer = SFTTrainer(...); trainer.train()`: a training driver)
        return False

    def _forwarded_gate(self, fn: Function, call: ast.Call) -> str:
        """`model.save_pretrained(dir, **kwargs)` handing on the function's own `**kwargs`: a
        caller may pass `is_main_process=` through it. Why it is no every-rank write ("" when
        every call into the function is known and none passes a gating keyword)."""
        own = getattr(fn.node, "args", None)
        name = own.kwarg.arg if own is not None and own.kwarg is not None else None
        if name is None or not any(kw.arg is None and isinstance(kw.value, ast.Name) and kw.value.id == name
                                   for kw in call.keywords):
            return ""
        # the calls resolved to it (not a same-named method guessed for an unknown receiver:
        # a wrapper's `self.base_model.save_pretrained(**kwargs)` is no call into the trainer's)
        sites = [e.node for _, e in self.callers().get(fn, []) if isinstance(e.node, ast.Call) and fn in e.targets]
        if not sites:
            return f"its `**{name}` comes from calls the lint does not resolve (they may pass is_main_process=)"
        params = set(fn.params) | set(fn.kwonly)
        gated = [site for site in sites if any(
            kw.arg is None or (kw.arg not in params and kw.arg == "is_main_process")
            for kw in site.keywords)]
        # (a call that passes nothing of the kind writes from every rank that makes it)
        if gated and len(gated) == len(sites):
            site = gated[0]
            return f"a call into it ({loc(self._caller_of(fn, site), site)}) passes what decides who writes"
        return ""

    def _state_hook_guard(self, fn: Function) -> str:
        """fn is handed to `accelerator.register_save_state_pre_hook` (Accelerate calls it from
        inside `save_state()` alone) and every `save_state()` call sits under a rank test: that
        test's text ("" otherwise). Read once per program."""
        known = self.__dict__.get("_state_hooks")
        if known is None:
            hooks = {target for cfn, call, _, _ in self.calls()
                     if last_name(call.func) == "register_save_state_pre_hook" and call.args
                     for target in self.program.reference(call.args[0], cfn)}
            # (under a rank test itself, or in a helper every way into which passes one: Ctrl-
            # Adapter's `save_checkpoint()`, called under `if accelerator.is_main_process:`)
            # (not one under a test the engine passes - `if accelerator.distributed_type ==
            # DistributedType.FSDP: accelerator.save_state(path)`, every rank's where FSDP runs -
            # when every launch names a MULTI_GPU config: that run never calls it)
            script = next((f for f in self.program.files if not f.module), None)
            plain = script is not None and launched_plain(script.path, script.hydra_configs)
            tests = [rank_guards(guards) or (self.only_guarded(cfn) is True and self._rank_tests_into(cfn))
                     for cfn, call, guards, _ in self.calls()
                     if isinstance(call.func, ast.Attribute) and call.func.attr == "save_state"
                     and not (plain and any(engine_tested(cond) in (("FSDP", True), ("DeepSpeed", True))
                                            for cond, _ in cfn.__dict__.get("_call_conds", {}).get(id(call), ())))]
            under = tests[0][-1].test.text if tests and all(tests) else ""
            known = self.__dict__["_state_hooks"] = (hooks, under)
        hooks, under = known
        return under if fn in hooks else ""

    def _rank_tests_into(self, fn: Function) -> tuple:
        """The rank tests around the first call into fn that has some (rank_guards' form)."""
        return next((found for _, event in self.callers().get(fn, [])
                     for found in [rank_guards(getattr(event, "guards", ()))] if found), ())

    def _caller_of(self, fn: Function, site: ast.Call) -> Function:
        return next(c for c, e in self.callers().get(fn, []) if e.node is site)

    def _judged_save(self, fn: Function, event, node_local: dict) -> SaveFact:
        """One write: whether every rank reaches it, and why (node_local: the writes whose path
        differs by a node-local rank alone, kept for the per-node pass)."""
        call = event.node
        how = save_call(self.program, call, fn) or "torch.save"
        path = save_path(call, how)
        path_text = text(path) if path is not None else "?"
        where = loc(fn, call)
        gate = self._forwarded_gate(fn, call) if how != "torch.save" else ""
        if gate:
            return SaveFact(where, path_text, False, gate, None, how)
        if self.switched_off(fn, call):
            # `if qat: torch.save(...)` in `train(..., qat=False)`, no call passing qat: never written
            return SaveFact(where, path_text, False, "under a test no way into it passes")
        # `if eval_first and rank == 0: ...; return` above it: what follows runs on every
        # rank but rank 0, several writers still (judged as if unguarded)
        several = bool(event.guards) and all(g.test.polarity == "nonzero" for g in event.guards)
        # `if master and step % 10 == 0 or step in milestones:`: at the milestones every
        # rank takes it (Adam-mini's checkpoints): judged as if unguarded
        several = several or any(_open_or(self.program, guard_test(fn, g), fn) is not None
                                 for g in event.guards)
        if event.guards and not several:
            if _single_process(event.conds, self._switches(), self.wraps_ddp()):
                # `if local_rank == 0: if world_size > 1: ... else: torch.save(...)`: the else is a
                # one-process job's
                return SaveFact(where, path_text, False, "on the single-process path")
            # a per-node writer of a path named after its host (`runs/<hostname>_gpt2`), or
            # after a value no two processes share (its own W&B run), writes a file of its own
            own_file = path is not None and (self._names_host(path, fn) or self._unique_per_call(path, fn))
            # (nor one under an option off at launch, `if args.iter_resume:` around a per-node
            # test: the run as launched never writes there, as below for an unguarded write)
            per_node = None if own_file or _reads_back(fn, path, call) else _per_node(event.guards)
            if per_node and self._option_off_around(fn, event):
                per_node = None
            return SaveFact(where, path_text, False, f"under `{event.guards[0].test.text}`", per_node, how)
        first = writes.rank_zero_first(self, fn, call) or writes.rank_zero_first_above(self, fn)
        if first:
            return SaveFact(where, path_text, False, first, None, how)
        if how != "torch.save" and fn.file is not self.program.files[0] and \
                (_sharded_state(self.program, fn, call) or not (self._trainer_method(fn) or self._unwrapped_save(fn, call))):
            # a library save inside an imported helper (a checkpoint handler, a tokenizer
            # wrapper, a converter): which ranks hold the state it writes (an FSDP state dict
            # gathered to rank 0) is not in the source. A plain `model.save_pretrained(dir)` in
            # a method of the project's own trainer (a class that runs the backward) is judged
            # as the entry script's would be.
            return SaveFact(where, path_text, False, "a library save in an imported helper", None, how)
        taken = self.taken_anyway(fn, event.conds)
        if _single_process(taken, self._switches(), self.wraps_ddp()) or self._helper_single(taken, fn):
            return SaveFact(where, path_text, False, "on the single-process path")
        if self.apart_from_setups(fn, event.conds):
            return SaveFact(where, path_text, False, "on a way that never sets up the process group")
        off = self._rank_disabled(fn, event.conds) or self._callers_disabled(fn)
        if off:
            return SaveFact(where, path_text, False, off)
        pinned = self._pinned_off(event.conds)
        if pinned:
            return SaveFact(where, path_text, False, f"under `{pinned}`, which the process group's "
                            "set-up makes false")
        switch = self._option_off_around(fn, event)
        if switch:
            # `if args.resave: torch.save(...)` with --resave a store_true: a launch that leaves
            # the option never writes (as DDP801 and DDP808 judge such a branch). Not where the
            # option holds every save of the script (`--use_writer` around the checkpoints and
            # the logs alike): a training run that keeps nothing is not the one launched - unless
            # Lightning's Trainer keeps the checkpoints itself (its ModelCheckpoint) and the
            # script's own save under the switch is an extra (a config flag every config sets
            # false, `if cfg.method.save_model:`, counts as such an option).
            return SaveFact(where, path_text, False, f"under `{switch}`, an option off unless the launch gives it")
        side = self.in_exiting_branch(fn)
        if side:
            # `if args.merge_lora: merge_and_save(args); sys.exit(0)`: a command of its own that
            # ends the program before the training run sets up its ranks
            return SaveFact(where, path_text, False, f"in {fn.label}, called only under `{side}`, which "
                            "ends the program before any process group is set up")
        chosen = off_at_launch(tuple((c, f) for c, f in event.conds if not f), self.program)
        if not chosen and self.off_at_launch_only(fn):
            # `if args.model == "unet": train_unet(...)` with every launch naming another model:
            # the helper that saves is never called on the run as launched
            return SaveFact(where, path_text, False, f"in {fn.label}, which the run as launched never calls "
                            "(every call of it is under a test the options make false)")
        if chosen:
            # `if args.task == "pretrain":` with another task launched: a path the run as
            # launched never takes, whatever else it saves
            return SaveFact(where, path_text, False, f"under `{chosen}`, false for the options as launched")
        # (four steps: the file `f` of `with open(save_file, "wb") as f:`, save_file joined from
        # a basename, the basename an f-string of `rankstr()`, rankstr's returned rank)
        if path is not None and self.mentions_rank(path, fn, 5, placed=True):
            local = self._node_local_only(path, fn)
            if not local:
                return SaveFact(where, path_text, False, "the path depends on the rank")
            node_local[str(where)] = local  # judged as any save, then per node (below)
        if path is not None and self._unique_per_call(path, fn):
            return SaveFact(where, path_text, False, "the path is new on every call or process (uuid, mkstemp, getpid)")
        other = self.in_another_command(fn)
        if other:
            return SaveFact(where, path_text, False, f"in {other}, a command of its own that runs no distributed job")
        if self._in_the_launcher(fn, event):
            return SaveFact(where, path_text, False,
                            "in the launching process, which mp.spawn's ranks do not run")
        if path is not None and any("BytesIO" in text(v, 1000) for v, _ in self.program.values_of(path, fn)):
            return SaveFact(where, path_text, False, "saved to memory")
        opened = next(((g, part) for g in event.guards
                       if (part := _open_or(self.program, guard_test(fn, g), fn)) is not None), None)
        if opened is not None:
            return SaveFact(where, path_text, True, f"under `{opened[0].test.text}`, whose other side "
                            f"holds on every rank: `{text(opened[1], 60)}` is no rank test", None, how)
        if isinstance(fn.node, ast.Module):
            return SaveFact(where, path_text, True, "module level, no rank test", None, how)
        if path is not None and self._loads_a_sample(fn) and not all(
                isinstance(v, ast.Constant) for v, _ in self.program.values_of(path, fn)):
            # `Dataset.__getitem__` -> cache the features next to the sample: the sampler
            # gives each rank its own samples, so each file has one writer
            return SaveFact(where, path_text, False, "a per-sample file written while loading it")
        locked = _made_once_under_lock(self.program, fn, call)
        if locked:
            # `with FileLock(path + ".lock"): if not os.path.exists(path): ...; torch.save(...)`
            # (TurboPrune's CIFAR tensors): the first rank to take the lock writes, the others
            # find the file there
            return SaveFact(where, path_text, False, f"made once, under `{locked}` and a test that it is missing")
        if path is not None and _reads_back(fn, path, call, filled=True) and self._per_item(path, fn):
            # `if isfile(cache_of(item)): load / else: compute; torch.save(...)` for the items a
            # rank's batches hold: the sampler gives each item to one rank, so one writer per file
            return SaveFact(where, path_text, False, "a per-item cache it reads back where it exists")
        if path is not None and (self._per_sample(path, fn, call) or self._per_sample_given(path, fn)):
            # `torch.save(res, f"dense/{vid}_{loc}")` for each sample of the loop's batch: each
            # rank's batches hold other samples (its sampler's share), so each file has one writer
            return SaveFact(where, path_text, False, "a file per sample of each rank's own batches")
        if path is not None and self._streamed(path, fn):
            return SaveFact(where, path_text, False, "into a stream its caller opened")
        dead = self._dead_side(fn, event.conds + _returned_before(fn, call))
        if dead:
            return SaveFact(where, path_text, False, dead)

        switch = self._returns_first(fn, call)
        if switch:
            return SaveFact(where, path_text, False,
                            f"every caller leaves `{switch}` true, and {fn.label} returns before it")
        hooked = self._state_hook_guard(fn)
        if hooked:
            return SaveFact(where, path_text, False, f"a save_state hook, and save_state runs only under `{hooked}`")
        overridden = self.overridden_in_the_run(fn)
        if overridden:
            return SaveFact(where, path_text, False, overridden)
        pin = self._save_called_on_main_only(fn)
        if pin:
            return SaveFact(where, path_text, False, f"a `_save` override, which transformers {pin[0]}.x's "
                            f"save_model calls only where `args.should_save` holds ({pin[1]})")
        filled = _filled_on_rank_zero(fn, call)
        if filled:
            # `for name in to_save: torch.save(...)` where only rank 0 appends to `to_save`
            return SaveFact(where, path_text, False, f"in a loop over `{filled}`, which only rank 0 fills")
        guarded = self.only_guarded(fn, inside=call)
        if guarded is False and (self._only_on_failure(fn) or _in_a_reraising_handler(fn, call)):
            # (the handler here, or around every call of fn: `except: torch.save(state,
            # f"failed_{t}.pth"); raise`, N4DE's marching-cubes dump)
            return SaveFact(where, path_text, False,
                            "only in an `except:` that raises again or exits (the failing rank's dump on its way out), "
                            "or under a rank test")
        if guarded is False and self._rank_saves_fallback(fn, call):
            return SaveFact(where, path_text, False,
                            "in the `except:` of a `try:` whose body saves under a rank-0 test: it runs where "
                            "that rank's save failed, or where no process group answers the rank")
        if guarded is None:
            hook = fn.name.startswith("on_") or self._trainer_save_override(fn)
            return SaveFact(where, path_text, hook,
                            "a hook the framework calls on every rank" if hook else "never called", None, how)
        if guarded is False:
            sites = [(caller, event) for caller, event in self.callers().get(fn, [])]
            # (a call under an option the launch leaves off - `if args.debug:` - is no way in
            # the run takes, where another way in is)
            switched = [event.kind == "call" and self.switched_off(caller, event.node) for caller, event in sites]
            if sites and all(switched):
                # (`if save_stable_rank: save_stats(...)` in a python-fire entry whose parameter
                # every launch leaves at False: no way in reaches a call)
                return SaveFact(where, path_text, False, "every call of it sits under a test no way in passes")
            off = [s or any(flag and option_off(c, self.program) for c, flag in event.conds)
                   for s, (_, event) in zip(switched, sites)]
            # (and a call the launching process makes itself, where only the spawned ranks join a
            # process group: a one-process fallback's `train_single_node()` after mp.spawn)
            mine = [skipped or self._set_by_rank_only(caller, event) or (
                fn not in self._started() and self._launcher_only(caller)) for (caller, event), skipped in zip(sites, off)]
            # (the others under a test of rank 0 alone: not the two sides of one rank test, which
            # together are every rank)
            if sites and any(mine) and not all(off) and all(
                    ok or (self._site_tested(caller, event)
                           and all(g.test.polarity == "zero" for g in rank_guards(event.guards)))
                    for (caller, event), ok in zip(sites, mine)):
                # `if "models" in self.__dict__: self.save_cpk()` in a Logger whose `self.models`
                # only rank 0's `log_epoch()` sets: the other ranks never have it; or the only
                # call without a rank test sits under `if args.debug:`, off unless launched so
                guarded = True
        site, callee = (None, None) if guarded else (self._open_call_site(fn) or (None, None))
        return SaveFact(where, path_text, not guarded,
                        "every caller is under a rank test" if guarded else
                        f"{fn.label} is called without a rank test at {site}, where its other callers test the rank"
                        if site and callee is fn else
                        f"{fn.label} is reached without a rank test through {callee.label} at {site}, where "
                        f"{callee.label}'s other callers test the rank" if site else
                        self._unset_local_rank_note(fn, call) or f"{fn.label} is called without a rank test",
                        self._per_node_callers(fn) if guarded and not _reads_back(fn, path, call) else None, how,
                        call_site=site)

    def _set_by_rank_only(self, caller: Function, event) -> bool:
        """The call sits under a test that the object holds an attribute (`"models" in
        self.__dict__`, `hasattr(self, "models")`) every assignment of which is in a method called
        only under a rank test: true on that rank alone."""
        klass = caller.cls
        if klass is None:
            return False
        for cond, _ in event.conds:
            found = _PRESENCE.match(cond)
            if found is None:
                continue
            attr = found.group(1) or found.group(2)
            setters = [m for m in klass.methods.values() if any(
                isinstance(n, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == attr
                                                  and isinstance(t.value, ast.Name) and t.value.id == "self"
                                                  for target in n.targets for t in walk(target)) for n in m.own)]
            if setters and all(m.name != "__init__" and self.only_guarded(m) is True for m in setters):
                return True
        return False

    def _helper_single(self, conds: tuple, fn: Function) -> bool:
        """`else:` of `if is_distributed():` where the local helper returns
        `torch.distributed.is_initialized()` (Mul-Datasets' trainers): the helper's value, read
        as its return says, is the single-process side's test."""
        for cond, _ in conds:
            if not (cond.startswith("not ") and cond.endswith("()")) or len(cond) > 120:
                continue
            try:
                call = ast.parse(cond[4:], mode="eval").body
            except SyntaxError:
                continue
            if not isinstance(call, ast.Call) or call.args or call.keywords:
                continue
            targets, _ = self.program.resolve(call.func, fn)
            returns = [r for t in targets if t.node is not None for r in t.returned]
            if targets and returns and all(r is not None and _single_process(((f"not {text(r)}", False),))
                                           for r in returns):
                return True
        return False

    def _unset_local_rank_note(self, fn: Function, call: ast.Call) -> str:
        """Why a test on `args.local_rank` around the write or fn's calls is no rank test here
        (Program.local_rank_unset), said in place of "called without a rank test"; "" where none
        is under such a test."""
        conds = [c for c, _ in fn.__dict__.get("_call_conds", {}).get(id(call), ())] + \
            [c for _, event in self.callers().get(fn, []) for c, _ in event.conds]
        test = next((cond for cond in conds for u in self.program.local_rank_unset() if u in cond), None)
        if test is not None:
            option = next(u for u in sorted(self.program.local_rank_unset()) if u in test)
            return (f"its test `{test}` holds on every rank: each launch beside the script uses torchrun, "
                    f"which passes no --{option} (it sets the LOCAL_RANK variable, which the script never "
                    f"reads), so the option keeps its default everywhere")
        unset = self.program.rank_option_unset()
        test = next((cond for cond in conds for u in unset if re.search(rf"\.{u}\b", cond)), None)
        if test is None:
            return ""
        option = next(u for u in sorted(unset) if re.search(rf"\.{u}\b", test))
        return (f"its test `{test}` holds on every rank: no launch beside the script passes --{option} "
                f"and no code that runs sets it, so the option keeps its default everywhere")

    def _open_call_site(self, fn: Function, depth: int = 2) -> Optional[tuple[Location, Function]]:
        """Where fn's direct callers split into some under a rank test and some not, the first
        call without one: the save helper is meant for one rank, and that call is the slip. Where
        none of them tests the rank, the same a level up (`save_checkpoint` called only from the
        trainer's `_save_model`, itself called under `if rank == 0:` each epoch and once, before
        the loop, without it)."""
        sites = [(caller, event) for caller, event in self.callers().get(fn, [])
                 if event.kind == "call" and isinstance(event.node, ast.Call)]
        tested = [self._site_tested(caller, event) for caller, event in sites]
        if sites and not any(tested) and depth > 1:
            callers = [caller for n, (caller, _) in enumerate(sites)
                       if caller is not fn and not any(caller is c for c, _ in sites[:n])]
            return next((site for caller in callers if not isinstance(caller.node, ast.Module)
                         for site in [self._open_call_site(caller, depth - 1)] if site is not None), None)
        if not any(tested) or all(tested):
            return None
        caller, event = next(site for site, t in zip(sites, tested) if not t)
        return loc(caller, event.node), fn

    def _per_item(self, path: ast.AST, fn: Function) -> bool:
        """The path is built from one of fn's parameters, and every call of fn hands it a value
        the loop around the call binds afresh on each pass (`for i in range(len(batch)): p =
        batch["path"][i]; f(p)`): one file per item a rank handles, not a setting (`args.cache`
        is the same file on every rank)."""
        params = set(fn.params) - {"self", "cls"}
        used = {sub.id for node, _ in [(path, fn), *self.program.values_of(path, fn, 2)] for sub in walk(node)
                if isinstance(sub, ast.Name) and sub.id in params}
        live = self.__dict__.get("_live")
        if live is None:  # what the entry script runs: a library's other callers (an inference pipeline) aside
            live = self.__dict__["_live"] = reached_from([f for f in self.functions if isinstance(f.node, ast.Module)
                                                          and f.file is self.program.files[0]])
        sites = [(caller, event) for caller, event in self.callers().get(fn, []) if caller in live]
        if not used or not sites:
            return False
        offset = 1 if fn.params[:1] in (["self"], ["cls"]) else 0
        for caller, event in sites:
            call = event.node
            if not isinstance(call, ast.Call) or event.loops <= 0:
                return False
            given = {kw.arg: kw.value for kw in call.keywords if kw.arg}
            given.update({fn.params[i + offset]: a for i, a in enumerate(call.args)
                          if i + offset < len(fn.params) and not isinstance(a, ast.Starred)})
            if not any(name in given and _bound_in_loop(caller, given[name], call) for name in used):
                return False
        return True

    def _per_sample(self, path: ast.AST, fn: Function, call: ast.Call) -> bool:
        """The path is made from what a loop over a loader (in fn, around the call) hands each
        rank: its batch, what is unpacked or read off it, the items of a loop over those
        (`for target in targets: vid = names[target["video_id"].item()]`). The loop's counter
        (`enumerate`'s index) and what only sizes the batch are the same on every rank."""
        data = self._loop_data(fn, call)
        if not data:
            return False
        made = [path, *(v for v, scope in self.program.values_of(path, fn, 2) if scope is fn)]
        return any(rank_state.value_inputs(v) & data for v in made)

    def _loop_data(self, fn: Function, call: ast.Call) -> set[str]:
        """The names the loops over a loader around `call` in fn bind to each rank's batch, and
        what is read off them a few steps on."""
        own_loops = fn.__dict__.get("_own_loops")
        if own_loops is None:  # (once per function: each of its writes asks)
            own_loops = fn.__dict__["_own_loops"] = [n for n in fn.own if n.__class__ in (ast.For, ast.AsyncFor)]
        loops = [n for n in own_loops if n.lineno <= call.lineno <= (n.end_lineno or 0)]
        data: set[str] = set()
        for loop in loops:
            data |= batch_flags.loop_batch(self, fn, loop)
        return _grown(loops[0], data) if data else data

    def _per_sample_given(self, path: ast.AST, fn: Function, depth: int = 2) -> bool:
        """The path is made from a parameter that every call of fn hands each rank's batch (or
        what is read off it) inside a loop over a loader: `save_results(out, batch, args)`, whose
        path holds `batch[0]["label"][i]` (mvdust3r) - each rank's own samples, one writer per file.
        A caller that hands on a parameter of its own is asked the same of its callers, up to depth
        (DiffComplete's `model_kwargs` of the scan's id, through two sampling helpers). A call on
        the one-process side (`if num_gpus == 1:`) writes with no other rank beside it."""
        derived = _grown(fn.node, self._sample_params(fn, depth))
        if not derived:
            return False
        made = [path, *(v for v, scope in self.program.values_of(path, fn, 2) if scope is fn)]
        return any(rank_state.value_inputs(v) & derived for v in made)

    def _sample_params(self, fn: Function, depth: int) -> set[str]:
        """fn's parameters that hold one of the rank's own samples on every call: the index a
        map-style dataset's `__getitem__` is handed (each rank's sampler hands it that rank's
        items: VITS's per-utterance `.spec.pt` cache, two calls below it), or a parameter every
        caller hands what its loops over a loader bind - or its own such parameters - up to depth."""
        params = [p for p in fn.params if p not in ("self", "cls")] + list(fn.kwonly)
        if fn.name == "__getitem__" and fn.cls is not None:
            return set(params[:1])
        sites = [(caller, event) for caller, event in self.callers().get(fn, [])
                 if event.kind == "call" and isinstance(event.node, ast.Call)
                 and not _single_process(getattr(event, "conds", ()))]
        if not params or not sites or depth < 0:
            return set()
        seeds: Optional[set] = None
        for caller, event in sites:
            data = self._loop_data(caller, event.node)
            if depth > 0 and caller.node is not None and not isinstance(caller.node, ast.Module):
                data = data | _grown(caller.node, self._sample_params(caller, depth - 1))
            given = {p for p in params if (a := argument_at(fn, event.node, p)) is not None
                     and rank_state.value_inputs(a) & data}
            seeds = given if seeds is None else seeds & given
            if not seeds:
                return set()
        return seeds or set()

    def _streamed(self, path: ast.AST, fn: Function) -> bool:
        """The write goes into a file object handed in: a parameter annotated as a stream
        (`stream: io.IOBase`, `f: BinaryIO`), or what a call on one returns (a transform
        wrapping it). Which file that is, and who opens it, is the caller's business."""
        node = getattr(fn.node, "args", None)
        if node is None:
            return False
        streams = {a.arg for a in (*node.posonlyargs, *node.args, *node.kwonlyargs)
                   if a.annotation is not None and STREAM_TYPES.search(text(a.annotation))}
        if not streams:
            return False
        values = [path, *(v for v, _ in self.program.values_of(path, fn, 2))]
        return any(isinstance(sub, ast.Name) and sub.id in streams for v in values for sub in walk(v))

    def _node_local_only(self, path: ast.AST, fn: Function) -> str:
        """The node-local rank a path holds when it holds no global one: a name that says
        `local` (`local_rank`), or mp.spawn's index where the script builds the global rank
        from it (`node_rank * ngpus + gpu`: the code runs on several nodes). "" otherwise."""
        ranks = self.program.ranks
        values = [(path, fn), *self.program.values_of(path, fn, 2)]
        found = []
        for value, scope in values:
            for sub in walk(value):
                if isinstance(sub, (ast.Name, ast.Attribute)) and ranks.is_rank(sub, scope):
                    name = last_name(sub) or ""
                    if "local" in name.lower() or (isinstance(sub, ast.Name) and ranks._spawn_index(name, scope)
                                                   and _global_from(scope, name)):
                        found.append(name)
                    else:
                        return ""
                elif isinstance(sub, (ast.Call, ast.Subscript)) and ranks.is_rank(sub, scope):
                    return ""  # get_rank(), os.environ["RANK"]: a global rank
        return found[0] if found else ""

    def _rank_saves_fallback(self, fn: Function, call: ast.Call) -> bool:
        """`try: if dist.get_rank() == 0: torch.save(...)` / `except: torch.save(...)` (BrainMass):
        the handler runs where asking the rank raised - no process group, one process - or where
        rank 0's own save failed; on no other rank."""
        node = _handler_of(fn, call)
        if node is None or len(node.body) != 1 or node.body[0].__class__ is not ast.If or node.body[0].orelse:
            return False
        found = self.program.ranks.guard(node.body[0].test, fn)
        return found is not None and found.polarity == "zero" and not found.assumption

    def _only_on_failure(self, fn: Function) -> bool:
        """Every call of fn sits in an `except` handler that ends by raising again: a rank that
        failed dumps its state on the way out, not every rank in the normal run."""
        sites = self.callers().get(fn, [])
        failing = [isinstance(event.node, ast.Call) and _in_a_reraising_handler(caller, event.node)
                   for caller, event in sites]
        # (the other calls under a rank test: `if rank == 0: save(...)` each epoch, and an
        # `except RuntimeError: save(...); exit(0)` on the rank that ran out of memory)
        return any(failing) and all(failed or self._site_tested(caller, event)
                                    for failed, (caller, event) in zip(failing, sites))

    def _site_tested(self, caller: Function, event) -> bool:
        """The call reaches the helper under a rank test: its own, or one around every way into
        the function that makes it."""
        return bool(rank_guards(event.guards)) or self.only_guarded(caller) is True

    def _names_host(self, path: ast.AST, fn: Function) -> bool:
        """The path holds the machine's name (socket.gethostname(), platform.node()), directly or
        through the names it is built from: each node writes its own."""
        return self._holds_call(path, fn, HOST_NAMES)

    def _unique_per_call(self, path: ast.AST, fn: Function) -> bool:
        """The path holds a value no two calls (or no two processes) share - `uuid.uuid4()`, a
        `tempfile.mkstemp()` / `NamedTemporaryFile` name, `os.getpid()` - directly or through the
        names it is built from: each rank writes its own file, whatever the rest of the path says."""
        return self._holds_call(path, fn, UNIQUE_NAMES)

    def _holds_call(self, path: ast.AST, fn: Function, calls: frozenset) -> bool:
        """A call of one of these (by full name) is in the path or in what its names hold."""
        names = [(path, fn), *self.program.values_of(path, fn, 2)]
        fresh = list(names)
        held = {id(n) for n, _ in names}
        for _ in range(3):  # a few steps out: names' values, and what a local helper returns
            more = []
            for node, scope in fresh:
                # `name = f"{base}-{tag}.pt"` where `tag = uuid.uuid4().hex`
                more += [v for sub in walk(node) if isinstance(sub, ast.Name) or (
                             # (and `self.run_id`, kept by the instance)
                             isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "self")
                         for v in self.program.values_of(sub, scope, 1) if v[0] is not sub]
                if isinstance(node, ast.Call):  # `log_dir = make_logdir(name)`
                    more += [(ret, target) for target in self.program.resolve(node.func, scope)[0]
                             if not isinstance(target.node, ast.Module) for ret in target.returned]
            fresh = [m for m in more if id(m[0]) not in held][:64]
            held.update(id(n) for n, _ in fresh)
            names += fresh
        return any(isinstance(sub, ast.Call) and ((full := self.program.qualify(sub.func, scope) or "") in calls or (
            # a Weights & Biases run of this process's own (`wandb.init(...).id`, no `id=` that
            # resumes one run in every process): each process names its own file
            calls is UNIQUE_NAMES and full == "wandb.init" and not any(kw.arg in ("id", "resume") or kw.arg is None
                                                                      for kw in sub.keywords)))
                   for value, scope in names for sub in walk(value))

    def _in_the_launcher(self, fn: Function, event, depth: int = 6) -> bool:
        """The ranks are functions handed to mp.spawn, and this write is reached only from the
        launching script's `if __name__ == "__main__":` code (directly or through a helper that
        returns that test), never from a spawned rank: the spawned processes import the script
        under another name, so it runs once, before the ranks exist."""
        if not self._started() or fn in self._spawn_reach(weak=True):
            return False  # (`train(*ops)` then `checkpointer.save()`: a rank may run it)
        return self._groups_only_in_ranks() or self._main_only(fn, event, depth, ())

    def in_the_launcher(self, fn: Function, call: ast.Call) -> bool:
        """A call (a DataLoader built) only in the launching process of mp.spawn'd ranks, as
        _in_the_launcher judges a write: a subclass's single-process `train()` beside the
        base's spawning one."""
        if not self._started() or fn in self._spawn_reach() or self._called_by_ranks(fn):
            return False
        if self._groups_only_in_ranks():
            return True  # the launching process never joins a process group: no rank of the job
        way = SimpleNamespace(conds=fn.__dict__.get("_call_conds", {}).get(id(call), ()))
        return self._main_only(fn, way, 6, ())

    def _launcher_only(self, fn: Function) -> bool:
        """fn runs only in the process that starts mp.spawn's ranks, and only those ranks join a
        process group: what it does is one process's."""
        return bool(self._started()) and fn not in self._spawn_reach(weak=True) and \
            not self._called_by_ranks(fn) and self._groups_only_in_ranks()

    def _called_by_ranks(self, fn: Function, depth: int = 6, stack: tuple = ()) -> bool:
        """A caller the call graph knows once the walk is done (`callers`) is a spawned rank's
        function, or is called so: a method of an object a config factory made
        (`dataset = config.init_obj("data_loader", module)`, then `dataset.get_train_loader()` in
        the spawned `main_worker`), whose class the walk's own targets did not know yet."""
        if depth <= 0 or fn in stack or isinstance(fn.node, ast.Module):
            return False
        reach = self._spawn_reach()
        return any(caller in reach or self._called_by_ranks(caller, depth - 1, stack + (fn,))
                   for caller, _ in self.callers().get(fn, []))

    def _groups_only_in_ranks(self) -> bool:
        """Every process-group set-up the script reaches runs in a spawned rank (Taglets'
        `_do_train`, mp.spawn's target): code the launching process runs itself, outside what
        the ranks run, is single-process."""
        if not hasattr(self, "_ranks_only_setup"):
            reach = self._spawn_reach()
            setups = self.setups()
            self._ranks_only_setup = bool(setups) and all(fn in reach for fn in setups)
        return self._ranks_only_setup

    def _main_only(self, fn: Function, event, depth: int, stack: tuple) -> bool:
        if any(_main_test(self.program, cond, fn) for cond, _ in event.conds):
            return True
        if isinstance(fn.node, ast.Module) or fn in stack or depth <= 0:
            return False
        sites = self.callers().get(fn, [])
        return bool(sites) and all(self._main_only(caller, way, depth - 1, stack + (fn,)) for caller, way in sites)

    def _rank_disabled(self, fn: Function, conds: tuple) -> str:
        """A plain test around the write that the other ranks make false themselves: a name or
        `self.` attribute set to a constant under a test true on every rank but 0 (skrl's
        `if config.torch.rank: self.checkpoint_interval = 0`, then `if self.checkpoint_interval >
        0 ...: write_checkpoint()`): only rank 0 writes. The reason, or ""."""
        sets = self._set_off_rank_zero(fn)
        for cond, _ in conds if sets else ():
            if not any(key in cond for key, _, _ in sets):
                continue  # (no test parsed for a key it cannot read)
            test = _test_of(cond)
            if test is None:
                continue
            keys = {text(n) for n in walk(test) if isinstance(n, ast.Name) or
                    (isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self")}
            for key, value, guard in sets:
                if key in keys and _truth(test, key, value) is False:
                    return f"`{cond}` is false on the ranks `{guard}` sets {key} = {text(value)} on"
        return ""

    def _callers_disabled(self, fn: Function, depth: int = 2) -> str:
        """Every call of fn sits under such a test, or on a side no construction of its class
        takes (skrl's `if self.export: self.save(...)`, export left False): one or two calls up."""
        sites = self.callers().get(fn, [])
        if not sites or depth <= 0:
            return ""
        said = []
        for caller, event in sites:
            why = self._rank_disabled(caller, event.conds) or self._dead_side(caller, event.conds) or \
                self._callers_disabled(caller, depth - 1)
            if not why:
                return ""
            said.append(why)
        return said[0]

    def _set_off_rank_zero(self, fn: Function) -> list:
        """(key, constant, rank test) for each name of fn or self attribute of its class that some
        statement sets to a constant under a test true on every rank but 0."""
        scopes = [fn]
        klass = self.program._class_of_fn(fn)
        if klass is not None:
            chain = [klass, *self.program.bases(klass)]
            scopes += [m for k in chain for m in k.methods.values() if m is not fn]
        return [(key, value, guard) for scope in scopes for key, value, guard in self._rank_off_sets(scope)
                if key.startswith("self.") or scope is fn]

    def _rank_off_sets(self, scope: Function) -> list:
        """(key, constant, rank test) of each `key = constant` in scope under tests true on every
        rank but 0; read once per function (a function of N early exits asks it for N tests on
        each of N writes)."""
        memo = self.__dict__.setdefault("_rank_off_memo", {})
        got = memo.get(scope)
        if got is None:
            got = memo[scope] = [] if scope.node is None else [
                (text(item.node.targets[0]), item.node.value, item.guards[-1].text)
                for item in rank_state.statements(self.program, scope)
                if item.guards and isinstance(item.node, ast.Assign) and len(item.node.targets) == 1
                and all(g.polarity == "nonzero" and not g.assumption for g in item.guards)
                and isinstance(item.node.value, (ast.Constant, ast.UnaryOp))]
        return got

    def _pinned_off(self, conds: tuple) -> str:
        """A test on a count the process group's set-up pins beside it (`init_process_group(...)`
        then `args.n_gpu = 1` in the same block: OpenMatch, the transformers examples), false at
        that value: `if args.n_gpu > 1:` never runs in a distributed job. The test, or ""."""
        pinned = self._setup_pins()
        for cond, _ in conds:
            test = _test_of(cond) if pinned else None
            if test is not None and any(key in cond and _truth(test, key, ast.Constant(value)) is False
                                        for key, value in pinned.items()):
                return cond
        return ""

    def _setup_pins(self) -> dict:
        """What the statements beside each init_process_group set to an int constant (a name or an
        attribute, as written), where every set-up agrees."""
        if not hasattr(self, "_pins"):
            pins: dict = {}
            for fn in self.functions:
                for event in fn.events:
                    if event.kind != "init":
                        continue
                    for block in _blocks_holding(fn.node, event.node):
                        for stmt in block:
                            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
                                    isinstance(stmt.value, ast.Constant) and type(stmt.value.value) is int:
                                key = text(stmt.targets[0])
                                pins[key] = stmt.value.value if pins.get(key, stmt.value.value) == stmt.value.value else None
            self._pins = {k: v for k, v in pins.items() if v is not None}
        return self._pins

    def _started(self) -> list:
        """The functions the script starts as ranks: mp.spawn's, and `mp.Process(target=...)`
        ones that set up a process group (I2SB's ranks, Taglets' prediction workers; a Process
        that only prefetches or logs leaves the script's own process a rank)."""
        if not hasattr(self, "_started_targets"):
            started = self.program.ranks.live_spawn_targets()
            setups = self.setups()
            for fn, call, _, _ in self.calls():
                target = keyword(call, "target")
                if last_name(call.func) != "Process" or target is None:
                    continue
                full = self.program.qualify(call.func, fn) or ""
                if "multiprocessing" in full or (dotted(call.func) or "").startswith("mp."):
                    started.extend(t for t in self.program.reference(target, fn) if reached_from([t]) & setups)
            self._started_targets = started
            # what the ranks are handed to run (`Process(target=init_processes, args=(r, n, main,
            # opt))`, OpenNMT's `args=(partial(single_main), ...)`): they run it too
            started += [t for t in self._handed_to_ranks() if t not in started]
        return self._started_targets

    def _handed_to_ranks(self) -> list:
        """The local functions a spawn or Process call passes its ranks in `args=` (bare, or
        wrapped in functools.partial), where the call starts ranks (_started's)."""
        starters = set(map(id, self._started_targets))
        found = []
        for fn, call, _, _ in self.calls():
            first = call.args[0] if call.args else keyword(call, "fn")
            target = keyword(call, "target") or first
            if target is None or not any(id(t) in starters for t in self.program.reference(target, fn)):
                continue
            handed = keyword(call, "args")
            for item in getattr(handed, "elts", ()):
                for runs in partial_target(self.program, item, fn):
                    # a launcher helper's own parameter (`launch(main_func, n)` handing
                    # `args=(main_func,)` on, detectron2's): what its callers pass for it
                    targets = self.program.reference(runs, fn) or [
                        t for value, scope in self.program.values_of(runs, fn) if value is not runs
                        for t in self.program.reference(value, scope)]
                    found += [t for t in targets if not isinstance(t.node, ast.Module)]
        return found

    def _handed_an_option_off(self, fn: Function, cond: str) -> bool:
        """`if save_path:` (or `save_path is not None`) on a parameter of fn it never rebinds,
        which every call hands the same command-line option off by default (`evaluate(...,
        args.save_pred_path)` with `--save_pred_path` defaulting to ""), none leaving it at a true
        default: as option_off judges the option itself."""
        name, _, rest = cond.partition(" ")
        if rest not in ("", "is not None") or name not in fn.params or fn.bindings.get(name) \
                or isinstance(fn.node, ast.Module):
            return False
        texts = {text(value, 120) for value, _ in fn.arguments.get(name, [])}
        if len(texts) != 1 or fn.defaulted.get(name):
            return False
        return option_off(f"{texts.pop()} {rest}".strip(), self.program)

    def _spawn_reach(self, weak: bool = False) -> set:
        """The functions a started process can run: the targets and what they call or hand on
        (weak: and what a call of an unknown receiver may reach)."""
        key = "_spawned_reach_weak" if weak else "_spawned_reach"
        if not hasattr(self, key):
            setattr(self, key, reached_from(self._started(), weak))
        return getattr(self, key)

    def _trainer_save_override(self, fn: Function) -> bool:
        """A Hugging Face Trainer subclass's own `save_model` / `_save`: the Trainer calls it from
        its checkpoint step on every process (its own checks `should_save` inside), so writes
        there with no rank test are every rank's."""
        if fn.name not in ("save_model", "_save") or fn.cls is None:
            return False
        return any(b.startswith(("transformers.", "trl.")) and b.endswith("Trainer")
                   for b in self.program.library_bases(fn.cls))

    def _save_called_on_main_only(self, fn: Function) -> Optional[tuple[int, str]]:
        """A Trainer subclass's `_save` in a project that pins transformers below 5: its
        save_model runs `_save` only under `elif self.args.should_save:` (5.x calls it on every
        process and tests inside the base `_save`). (The pinned major, the file), or None."""
        if fn.name != "_save" or not self._trainer_save_override(fn) or not self.program.sources:
            return None
        if any(fn in event.targets for _, event in self.callers().get(fn, ())):
            return None  # (the script calls it itself too: its own calls are judged by their tests)
        major, path, read = pinned_major(self.program.sources[0].path, "transformers")
        # (what the answer rests on joins the cache key; a place looked at and found empty keeps
        # the answer out of the cache, so a pin added there later is read)
        self.program.__dict__.setdefault("_pin_files", []).extend(str(p) for p in read)
        if major is None:
            # no pin (or a lower bound alone): the script's own use of what only 4.x has says which
            # one it runs - 5.x's Trainer takes no `tokenizer=` and has no `self.tokenizer`
            spoken = self._four_only_api(fn.cls)
            return (4, spoken) if spoken else None
        if major >= 5:
            return None
        return major, f"pinned in {path.name}"

    def _four_only_api(self, klass) -> str:
        """Where the program uses transformers 4.x's Trainer API, which 5.x removed: the Trainer
        subclass built with `tokenizer=` (5.x's __init__ takes `processing_class=`, a TypeError
        there) or read as `self.tokenizer` (no such attribute in 5.x), where no local class of its
        line declares that parameter or sets that field itself. "" where it says nothing. Once
        per class (each save in the override asks)."""
        memo = self.__dict__.setdefault("_four_only", {})
        if id(klass) not in memo:
            memo[id(klass)] = self._four_only_said(klass)
        return memo[id(klass)]

    def _four_only_said(self, klass) -> str:
        family = [klass, *self.program.bases(klass)]
        own = any("tokenizer" in (*m.params, *m.kwonly) for k in family
                  for m in [k.methods.get("__init__")] if m is not None)
        sets = any(n.__class__ is ast.Attribute and n.attr == "tokenizer" and n.ctx.__class__ is ast.Store
                   for k in family for m in k.methods.values() for n in m.own)
        if own or sets:
            return ""
        for fn in self.program.functions:
            for call in fn.own_calls:
                if last_name(call.func) == klass.name and any(kw.arg == "tokenizer" for kw in call.keywords) \
                        and self.program.callee(call.func, fn) is klass:
                    return f"{klass.name}(tokenizer=...) at {fn.file.display}:{call.lineno}, which only 4.x takes"
        for k in family:
            for m in k.methods.values():
                for n in m.own_of(ast.Attribute):
                    if n.attr == "tokenizer" and n.value.__class__ is ast.Name \
                            and n.value.id == "self":
                        return f"`self.tokenizer` at {m.file.display}:{n.lineno}, which only 4.x's Trainer has"
        return ""

    def _unwrapped_save(self, fn: Function, call: ast.Call) -> bool:
        """`accelerator.unwrap_model(model).save_pretrained(dir)` (or `model.module....`) in a
        helper: the state written is the training model's own, whole on every rank that holds
        it (mbart-nmt's `save_model(accelerator, args, model, tokenizer)`), not a converter's."""
        receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
        if receiver is None:
            return False
        for value, _ in self.program.values_of(receiver, fn, 2):
            if isinstance(value, ast.Call) and last_name(value.func) == "unwrap_model":
                return True
            if isinstance(value, ast.Attribute) and value.attr == "module":
                return True
        return False

    def _dead_side(self, fn: Function, conds: tuple) -> str:
        """The write sits under `if self.in_memory:`'s other side, where the attribute is the
        constructor's parameter and every construction (a call or two up) leaves it at the same
        constant, the other way: never reached. The reason, or ""."""
        for cond, _ in conds:
            # `if loss_scaler is not None: save_on_master(...) else: torch.save(...)` in a helper
            # every call hands an object a call made (`loss_scaler = NativeScaler()`): never None
            nulled = _NONE_PARAM.match(cond)
            if nulled is not None and bool(nulled.group(1)) == bool(nulled.group(3)):
                name = nulled.group(2)
                if (name in fn.params or name in fn.kwonly) and not _rebound(fn, name) and \
                        self._given_objects(fn, name):
                    return f"`{name}` is never None: every call of {fn.name}() hands it an object"
                if name not in fn.params and name not in fn.kwonly and self._built_objects(fn, name):
                    # `dataset, evaluator = build(args)` where the builder makes an evaluator
                    # of a class on each of its ways (and leaves on the others)
                    return f"`{name}` is never None: it is an instance of a class on every way it is set"
        klass = self.program._class_of_fn(fn)
        if klass is None:
            return ""
        # the class and its local bases, nearest first: the flag may be stored by a base's
        # constructor that the subclasses' `super().__init__(flag=flag)` hand it to (GeoTransformer)
        chain, todo = [], [klass]
        while todo and len(chain) < 6:
            current = todo.pop(0)
            if current not in chain:
                chain.append(current)
                todo.extend(self.program.bases(current))
        inits = [c.methods["__init__"] for c in chain if "__init__" in c.methods]
        for cond, flag in conds:
            negated = cond.startswith("not ")
            attr = cond[4:] if negated else cond
            nulled = _NONE_TEST.match(cond)
            if nulled is not None:
                # `if self.accelerator is not None: ... else: torch.save(...)` where every
                # construction hands the constructor an object it built (an Accelerator): the
                # None side is never taken (negated: this side wants None)
                attr, flag = nulled.group(2), True
                negated = bool(nulled.group(1)) == bool(nulled.group(3))
            if not (flag and attr.startswith("self.") and attr[5:].isidentifier()):
                continue
            init, param = next(((init, value.id) for init in inits for target, value in assigned_pairs(init)
                                if dotted(target) == attr and isinstance(value, ast.Name)
                                and (value.id in init.params or value.id in init.kwonly)), (None, None))
            if param is None or any(isinstance(n, ast.Assign) and any(dotted(t) == attr for t in n.targets)
                                    for c in chain for f in c.methods.values() if f is not init for n in f.own):
                continue
            if nulled is not None:
                if negated and self._given_objects(init, param):
                    return f"`{cond}` is false on every construction of {klass.name}"
                continue
            given = given_constants(self.callers(), init, param)
            if given and len({bool(v) for v in given}) == 1 and bool(given.pop()) == negated:
                return f"`{cond}` is false on every construction of {klass.name}"
            if given is None and negated and self._given_objects(init, param):
                # `if not self.accelerator:` where every construction hands it an Accelerator
                return f"`{cond}` is false on every construction of {klass.name}"
        return ""

    def _given_objects(self, init: Function, param: str) -> bool:
        """Every construction hands the parameter an object a call made (`accelerator =
        Accelerator(...)`, then `Stopper(accelerator=accelerator)`): never None."""
        sites = self.callers().get(init, [])
        if not sites:
            return False
        for caller, event in sites:
            if event.kind != "call" or not isinstance(event.node, ast.Call):
                return False
            value = argument_at(init, event.node, param)
            if value is None:
                return False
            held = self.program.values_of(value, caller, 2)
            if len(held) == 1 and held[0][0] is value and isinstance(value, ast.Name):
                # `loader, model, accelerator = prepare(...)`: the item the local helper returns
                held = self.program.unpacked(value.id, caller)
            if not held or not all(isinstance(v, ast.Call) and last_name(v.func) not in ("get", "getattr")
                                   for v, _ in held):
                return False
        return True

    def _built_objects(self, fn: Function, name: str) -> bool:
        """Every value fn's local `name` may hold is an instance a class's constructor made (a
        CamelCase call, or a local class), also through a local builder's unpacked returns."""
        held = self.program.values_of(ast.Name(id=name, ctx=ast.Load()), fn, 3)
        if len(held) == 1 and isinstance(held[0][0], ast.Name) and held[0][0].id == name:
            held = self.program.unpacked(name, fn)
        return bool(held) and all(isinstance(v, ast.Call) and _constructor(v.func, scope, self.program)
                                  for v, scope in held)

    def _returns_first(self, fn: Function, call: ast.Call) -> str:
        """The parameter of `if return_model: return model`, ahead of the write in fn's own body,
        when every call of fn leaves it true (its default True, or a constant True): the write
        is never reached on those ways in. "" otherwise."""
        if isinstance(fn.node, ast.Module):
            return ""
        switches = [stmt.test.id for stmt in fn.node.body
                    if isinstance(stmt, ast.If) and stmt.lineno < call.lineno and isinstance(stmt.test, ast.Name)
                    and stmt.test.id in fn.params and stmt.body and isinstance(stmt.body[-1], ast.Return)]
        sites = self.callers().get(fn, []) if switches else []
        if not sites or any(way.kind != "call" or not isinstance(way.node, ast.Call) for _, way in sites):
            return ""
        for switch in switches:
            if all(_switched(fn, way.node, switch) is True for _, way in sites):
                return switch
        return ""

    def _loads_a_sample(self, fn: Function) -> bool:
        """fn is a dataset's `__getitem__`, or only ever called from one (a few calls down) - or
        from rank 0 alone besides (VITS-style datasets whose constructor pre-builds every cache
        under `pt_run`, handed `rank == 0 and args.initial_run`: one writer there too)."""
        return self._only_from(fn, lambda f: f.name == "__getitem__" and f.cls is not None, one_rank=True)

    def _only_from(self, fn: Function, holds, depth: int = 3, stack: tuple = (), one_rank: bool = False) -> bool:
        """`holds(fn)`, or every call into fn comes from functions of which it is so (a few
        calls up). one_rank: a call only the job's rank 0 makes counts as such a call."""
        if holds(fn):
            return True
        if fn in stack or depth <= 0 or isinstance(fn.node, ast.Module):
            return False
        sites = self.callers().get(fn, [])
        ranked = [one_rank and _rank_zero_only(event.guards) for _, event in sites]
        return bool(sites) and not all(ranked) and all(
            alone or self._only_from(caller, holds, depth - 1, stack + (fn,), one_rank)
            for (caller, _), alone in zip(sites, ranked))

    def _data_cache(self, fn: Function, call: ast.Call) -> str:
        """What a torch.save every rank reaches holds, where it is a cache of data (no model or
        optimizer state in it): one built where the file is missing and loaded back where it
        exists, or written by a class that serves samples (a label table, drop indices)."""
        if _model_state(self.program, call, fn):
            return ""
        path = save_path(call, "torch.save")
        if path is not None and _reads_back(fn, path, call, filled=True):
            return "a cache of data it builds where the file is missing and loads where it exists"
        if self._in_dataset(fn):
            return "data a dataset class writes for its samples"
        return ""

    def _in_dataset(self, fn: Function) -> bool:
        """fn is a method of a class that serves samples - its own or a local ancestor's
        `__getitem__` / `__len__`, or a library dataset base (torchvision's ImageFolder, PyG's
        InMemoryDataset) - or is only ever called from one (a few calls down)."""
        program = self.program
        return self._only_from(fn, lambda f: f.cls is not None and (
            program.method(f.cls, "__getitem__") is not None or program.method(f.cls, "__len__") is not None
            or any(base.startswith(DATASET_LIBRARIES) for base in program.library_bases(f.cls))))

    def _per_node_callers(self, fn: Function, depth: int = 6, stack: tuple = ()) -> Optional[str]:
        """The per-node test on some way into fn whose other guards are per-node too: one rank
        per node gets there (`if local_rank == 0: save_checkpoint()`)."""
        if fn.rank_only or fn in stack or depth <= 0:
            return None
        for caller, event in self.callers().get(fn, []):
            if event.guards:
                found = _per_node(event.guards)
            elif not isinstance(caller.node, ast.Module):
                found = self._per_node_callers(caller, depth - 1, stack + (fn,))
            else:
                found = None
            if found:
                return found
        return None


# annotations of a parameter that holds an open file object
# The modules whose classes are datasets: a local class derived from one serves samples.
DATASET_LIBRARIES = ("torch.utils.data.", "torchvision.datasets.", "torchaudio.datasets.", "torchtext.datasets.",
                     "torch_geometric.data.", "torch_geometric.datasets.", "dgl.data.", "datasets.")
# What a model's state is saved through: a saved object reached by none of these is data.
MODEL_STATE = frozenset({"state_dict", "parameters", "named_parameters", "buffers", "named_buffers",
                         "get_state_dict", "module", "model", "optimizer"})


def _model_state(program, call: ast.Call, fn: Function) -> bool:
    """The object torch.save writes holds a model's or an optimizer's state: a `state_dict()`
    or parameters read in it or in what its names are bound to (one step), a module or model
    attribute, or a name `model` / `net` / `optimizer`. Only asked of a write that is otherwise
    data's (a load-or-build cache, a dataset class's method): a parameter there is the caller's
    data."""
    obj = call.args[0] if call.args else keyword(call, "obj")
    if obj is None:
        return True
    seen = [obj]
    for sub in walk(obj):
        if isinstance(sub, ast.Name):
            seen.extend(v for v, _ in program.values_of(sub, fn, 1) if v is not sub)
    for value in seen:
        for sub in walk(value):
            if isinstance(sub, ast.Attribute) and sub.attr in MODEL_STATE:
                return True
            if isinstance(sub, ast.Name) and sub.id in ("model", "net", "module", "optimizer"):
                return True
    return False


STREAM_TYPES = re.compile(r"\b(IOBase|BufferedIOBase|RawIOBase|BinaryIO|IO|BytesIO|BufferedWriter)\b")

# calls whose value is new on every call: a path built from one names a file no other rank writes
# `"models" in self.__dict__` / `hasattr(self, "models")`: a test that the object holds an attribute
_PRESENCE = re.compile(r"""^(?:['"](\w+)['"] in self\.__dict__|hasattr\(self, ['"](\w+)['"]\))$""")


# (and the process's own id: each rank is a process of its own, `p.with_suffix(f".tmp{os.getpid()}")`
# then `os.replace(tmp, p)`, a cache's atomic write)
UNIQUE_NAMES = frozenset({"uuid.uuid1", "uuid.uuid4", "tempfile.mkstemp", "tempfile.mkdtemp",
                          "tempfile.NamedTemporaryFile", "tempfile.mktemp", "os.getpid"})
HOST_NAMES = frozenset({"socket.gethostname", "platform.node", "os.uname", "socket.getfqdn"})


def _handler_of(fn: Function, call: ast.Call) -> Optional[ast.Try]:
    """The `try:` one of whose `except` handlers holds the call, or None."""
    for node in fn.own_of(ast.Try):
        if any(sub is call for h in node.handlers for stmt in h.body for sub in walk(stmt)):
            return node
    return None


def _in_a_reraising_handler(fn: Function, call: ast.Call) -> bool:
    """The call sits in an `except` handler that ends the process: it raises again, or exits
    (`save(model, f"model_error_{t}.pt"); exit(0)` after an out-of-memory error): a dump on the
    way out, not the run's checkpoint (a Ctrl-C's KeyboardInterrupt dump too: the best-effort
    rescue of an interrupted run)."""
    for node in fn.own_of(ast.ExceptHandler):
        if node.body and _ends_the_process(node.body[-1]) \
                and any(sub is call for stmt in node.body for sub in walk(stmt)):
            return True
    return False


_EXITS = frozenset({"exit", "quit", "sys.exit", "os._exit"})


def _ends_the_process(stmt: ast.AST) -> bool:
    return isinstance(stmt, ast.Raise) or (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
                                           and (dotted(stmt.value.func) or "") in _EXITS)


def _reads_back(fn: Function, path: Optional[ast.AST], save: ast.AST, filled: bool = False) -> bool:
    """fn loads the file where it already exists and writes it only where it does not
    (`if os.path.exists(p): data = torch.load(p)` / `else: ... torch.save(data, p)`): a cache of
    what every rank computes alike. Local rank 0 building it once per node is the point (a
    node's own disk), not a per-node copy of a checkpoint meant once. A file loaded and
    written again where it exists (stripping a checkpoint) is no cache. filled: the write is
    where the file is missing (the test's `else:`, or after a body that returns), not in a
    load-or-save helper's other mode."""
    if path is None:
        return False
    wanted = text(path)
    for node in fn.own_of(ast.Try):
        # `try: w = torch.load(p)` / `except FileNotFoundError: ...; torch.save(w, p)`: the same
        # cache, its test the load itself (ppgs' class weights)
        if any(n.__class__ is ast.Call and n.args and text(n.args[0]) == wanted
               and last_name(n.func) in ("load", "load_from_disk", "read_pickle")
               for stmt in node.body for n in walk(stmt)) and any(
                n is save for h in node.handlers for stmt in h.body for n in walk(stmt)):
            return True
    for node in fn.own_of(ast.If):
        tests = node.test.values if isinstance(node.test, ast.BoolOp) and isinstance(node.test.op, ast.And) \
            else [node.test]
        if not any(isinstance(t, ast.Call) and t.args and text(t.args[0]) == wanted
                   and last_name(t.func) in _EXISTS_TESTS for t in tests):
            continue
        # a save in an `except:` of the body rebuilds a cache entry that failed to load
        rebuilt = {id(n) for h in (x for stmt in node.body for x in walk(stmt) if isinstance(x, ast.ExceptHandler))
                   for stmt in h.body for n in walk(stmt)}
        body = [n for stmt in node.body for n in walk(stmt) if id(n) not in rebuilt]
        if save not in body and any(isinstance(n, ast.Call) and n.args and text(n.args[0]) == wanted
                                    and last_name(n.func) in ("load", "load_from_disk", "read_pickle") for n in body):
            if not filled or id(save) in rebuilt or any(n is save for stmt in node.orelse for n in walk(stmt)):
                return True
            after = next((block for block in _blocks_holding(fn.node, node)), None)
            if node.body and isinstance(node.body[-1], ast.Return) and after is not None and any(
                    n is save for stmt in after[after.index(node) + 1:] for n in walk(stmt)):
                return True
    return False


# The tests that a file is already there (`os.path.exists(p)`, `Path(p).is_file()`).
_EXISTS_TESTS = ("exists", "isfile", "is_file")
# Locks held across processes (a lock file on the shared disk), not a thread's `Lock()`.
_FILE_LOCKS = {"FileLock", "SoftFileLock", "UnixFileLock", "WindowsFileLock"}


def _made_once_under_lock(program, fn: Function, call: ast.Call) -> str:
    """The write sits in a `with FileLock(...):` block of fn (filelock's, or portalocker's
    `Lock`), under a test inside that block that a file is missing (`if not os.path.exists(p):`):
    one process writes it, the ones after find it there. The lock's text, or ""."""
    for node in fn.own_of(ast.With):
        held = next((item.context_expr for item in node.items if item.context_expr.__class__ is ast.Call and (
            last_name(item.context_expr.func) in _FILE_LOCKS
            or (program.qualify(item.context_expr.func, fn) or "").startswith(("filelock.", "portalocker.")))), None)
        if held is None or not any(n is call for stmt in node.body for n in walk(stmt)):
            continue
        for test in (n for stmt in node.body for n in walk(stmt) if n.__class__ is ast.If):
            missing = test.test.operand if test.test.__class__ is ast.UnaryOp and \
                test.test.op.__class__ is ast.Not else None
            if missing is not None and missing.__class__ is ast.Call and \
                    last_name(missing.func) in _EXISTS_TESTS and \
                    any(n is call for stmt in test.body for n in walk(stmt)):
                return text(held, 60)
    return ""


def _main_test(program, cond: str, fn: Function) -> bool:
    """`__name__ == "__main__"`, or a call of a local helper that returns that test."""
    try:
        node = ast.parse(cond, mode="eval").body
    except SyntaxError:
        return False
    if _is_main_compare(node):
        return True
    if isinstance(node, ast.Call) and not node.args:
        target = program.callee(node.func, fn)
        if program.is_function(target) and not isinstance(target.node, ast.Module):
            return bool(target.returned) and all(_is_main_compare(r) for r in target.returned)
    return False


def _is_main_compare(node: ast.AST) -> bool:
    return isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq) \
        and {text(node.left), text(node.comparators[0])} in ({"__name__", "'__main__'"}, {"__name__", '"__main__"'})


def _bound_in_loop(fn: Function, value: ast.AST, call: ast.Call) -> bool:
    """A name in value is bound by a loop of fn that holds the call (its target, or an
    assignment in its body): a new value on every pass."""
    loops = [n for n in fn.own if n.__class__ in (ast.For, ast.AsyncFor, ast.While)
             and n.lineno <= call.lineno <= (n.end_lineno or 0)]
    names = {sub.id for sub in walk(value) if isinstance(sub, ast.Name)}
    targets = {sub.id for n in loops if n.__class__ is not ast.While for sub in walk(n.target)
               if isinstance(sub, ast.Name)}
    return bool(names & targets) or any(n.lineno <= line <= (n.end_lineno or 0) for name in names
                                        for line, _ in fn.bindings.get(name, ()) for n in loops)


def _block_key(fn: Function, event) -> str:
    """"file:line" of the statement list that holds the write, with the rank tests around it:
    the same key for writes one after the other in one block (one fix: move the block under
    one rank test); "" where the write is no statement of fn's own blocks."""
    path = reaching._path_to(fn.node, event.node)
    if not path or not path[-1][0]:
        return ""
    # a write under `if scaler is not None:` after the model's and the optimizer's is an optional
    # piece of that block's checkpoint (the same rank tests decide all of them): its key is the
    # outer block's. (`if epoch == last:` writes another file at another time: a block of its own.)
    depth = len(path) - 1
    # So is either side of `if args.two_optims: <save both> else: <save one>` past the model's.
    while depth > 0 and ((isinstance(path[depth][2], ast.If) and path[depth][3] in ("body", "orelse")
                          and path[depth - 1][1] > 0
                          and _optional_part(path[depth][2].test))
                         or (isinstance(path[depth][2], ast.For) and path[depth - 1][1] > 0
                             and _over_parts(path[depth][2].iter))
                         or _written_either_way(path[depth][2], path[depth][3], event.node)):
        # (and `for name, p in model.named_parameters(): torch.save(p.grad, ...)` after the model's;
        # and `if ddp: torch.save(model.module..., p) else: torch.save(model..., p)`: one write either way)
        depth -= 1
    # the same write further in on both sides of an `if` (`if LOSS_TYPE == "hybrid": ... for i in
    # range(n): torch.save(net(i), p(i))` / `else:` the same loop): one write whichever side runs
    for level in range(depth, 0, -1):
        if _written_either_way(path[level][2], path[level][3], event.node):
            depth = level - 1
            break
    tests = ",".join(g.test.text for g in event.guards)
    return f"{fn.file.display}:{path[depth][0][0].lineno}:{tests}"


def _written_either_way(owner: ast.AST, field: str, write: ast.AST) -> bool:
    """The other side of the `if` owning the write's block makes the same call to the same place
    (`if ddp: torch.save(model.module.state_dict(), p) else: torch.save(model.state_dict(), p)`):
    whichever side runs, it is one write."""
    if not (isinstance(owner, ast.If) and field in ("body", "orelse") and isinstance(write, ast.Call)):
        return False
    other = owner.orelse if field == "body" else owner.body
    place = lambda call: (text(call.func), [text(a) for a in call.args[1:]],
                          sorted((k.arg or "", text(k.value)) for k in call.keywords if k.arg != "obj"))
    return any(isinstance(c, ast.Call) and place(c) == place(write) for stmt in other for c in walk(stmt))


_PARTS = {"parameters", "named_parameters", "buffers", "named_buffers", "modules", "named_modules",
          "children", "named_children", "items", "values", "keys"}


def _over_parts(iterable: ast.AST) -> bool:
    """`model.named_parameters()`, `state.items()`: a loop over the parts of what is saved."""
    return isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute) and iterable.func.attr in _PARTS


def _optional_part(test: ast.AST) -> bool:
    """`scaler is not None`, `ema` / `self.ema`: whether a part of the state exists at all; a
    setting read by its key (`config["save_plain_copy"]`), or several of these joined by `and`
    (MolTransformer's `if cfg["train_only_save_non_ddp_model"] and cfg["gpu_mode"]:` around a
    second copy of the model the block just wrote)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return all(_optional_part(part) for part in test.values)
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.IsNot):
        return isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None
    if isinstance(test, ast.Subscript):
        return isinstance(test.slice, ast.Constant) and isinstance(test.slice.value, str) and \
            isinstance(test.value, (ast.Name, ast.Attribute))
    return isinstance(test, (ast.Name, ast.Attribute))


def _blocks_holding(root: ast.AST, node: ast.AST) -> list:
    """The innermost statement list of root (a body, an `else:`) that holds node's statement."""
    path = reaching._path_to(root, node)
    return [path[-1][0]] if path else []


def _constructor(func: ast.AST, fn: Function, program) -> bool:
    """`VOCEvaluator(...)`, `evaluators.COCOEvaluator(...)`, or a call of a local class: an object,
    never None."""
    name = last_name(func) or ""
    if name[:1].isupper() and not name.isupper():  # (not `DEFAULTS(...)`, a constant's name)
        return True
    targets, _ = program.resolve(func, fn)
    return bool(targets) and all(getattr(t, "name", "") == "__init__" for t in targets)


def _open_or(program, test: Optional[ast.AST], fn: Function) -> Optional[ast.AST]:
    """The part of an `or` test that is no rank test and says nothing about the run being
    distributed (`step in [25, 50]` of `master and step % 10 == 0 or step in [25, 50]`): where
    it holds, every rank is in; None where there is no such part (`not dist.is_initialized() or
    rank == 0`: that side is one process; `gpu == 0 or args.no_ddp`, false as launched)."""
    if not (isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or)):
        return None
    ranks = program.ranks
    # (nor a part the options, as launched, make false: `gpu == 0 or args.no_ddp` with --no_ddp
    # a store_true is the rank test alone on that launch)
    return next((part for part in test.values if ranks.guard(part, fn) is None and not ranks.uniform(part, fn)
                 and not ranks.single_process(part, fn) and not _single_process(((text(part, 400), True),))
                 and settled(part, program) is not False and not _fallback_side(part, test)),
                None)


def _fallback_side(part: ast.AST, test: ast.BoolOp) -> bool:
    """`not A` of `(A and rank == 0) or not A` (or `A` of `(not A and rank == 0) or A`): false
    wherever the other side's `A` holds - the run that side's rank test is about - so the test
    is that rank test there, and the whole run's answer where `A` is false (MDDG's
    `(cfg['DDP'] and get_rank() == 0) or (not cfg['DDP'])`, a one-process fallback)."""
    negated = part.operand if isinstance(part, ast.UnaryOp) and isinstance(part.op, ast.Not) else None
    said = text(negated if negated is not None else part, 400)
    for other in test.values:
        if other is part or not (isinstance(other, ast.BoolOp) and isinstance(other.op, ast.And)):
            continue
        for conjunct in other.values:
            if negated is not None and text(conjunct, 400) == said:
                return True
            if negated is None and isinstance(conjunct, ast.UnaryOp) and isinstance(conjunct.op, ast.Not) \
                    and text(conjunct.operand, 400) == said:
                return True
    return False


def _filled_on_rank_zero(fn: Function, call: ast.Call) -> str:
    """The name of a list a `for` loop around the call iterates, bound in fn to `[]` alone and
    grown (`.append` / `.extend` / `+=`) only under tests that leave the job's rank 0 alone in:
    empty on every other rank, whose loop never runs (splatter-image's `fnames_to_save`); ""
    otherwise."""
    if fn.node is None:
        return ""
    grown_by = {id(c): guards for c, guards, _ in fn.calls}
    for loop in fn.own_of(ast.For, ast.AsyncFor):
        if loop.iter.__class__ is not ast.Name or not any(n is call for stmt in loop.body for n in walk(stmt)):
            continue
        name = loop.iter.id
        bound = fn.bindings.get(name, ())
        if not bound or not all(v.__class__ is ast.List and not v.elts for _, v in bound):
            continue
        growing = [c for c in fn.own_calls if c.func.__class__ is ast.Attribute and c.func.attr in ("append", "extend")
                   and c.func.value.__class__ is ast.Name and c.func.value.id == name]
        if any(n.__class__ is ast.AugAssign and n.target.__class__ is ast.Name and n.target.id == name
               for n in fn.own_of(ast.AugAssign)):
            continue  # (`+=` carries no guards of its own here: not weighed)
        if growing and all(id(c) in grown_by and _rank_zero_only(grown_by[id(c)]) for c in growing):
            return name
    return ""


def _rank_zero_only(guards: tuple) -> bool:
    """The guards leave the job's rank 0 alone in: some rank test true on global rank 0 only."""
    return any(g.test.polarity == "zero" and g.test.scope == "global" for g in rank_guards(guards))


def _per_node(guards: tuple[Guard, ...]) -> Optional[str]:
    """The guarding test when every rank test around a statement is true on one rank per node
    (local rank 0), not on one rank of the job."""
    tests = [g.test for g in guards]
    if tests and all(t.scope == "node" and t.polarity == "zero" for t in tests):
        return tests[-1].text
    return None


def _global_from(fn: Function, index: str) -> bool:
    """fn makes a global rank from mp.spawn's index: `node * per_node + index` somewhere in it
    (also in two steps: `base = node * per_node`, then `base + index`)."""
    products = {t.id for a in fn.own_of(ast.Assign) if isinstance(a.value, ast.BinOp) and isinstance(a.value.op, ast.Mult)
                for t in a.targets if isinstance(t, ast.Name)}
    for node in fn.own_of(ast.BinOp):
        if isinstance(node.op, ast.Add):
            sides = [node.left, node.right]
            # (or the product handed in: `rank=node_offset + gpu`, ranks.handed_products)
            if any(isinstance(s, ast.Name) and s.id == index for s in sides) and \
                    any((isinstance(s, ast.BinOp) and isinstance(s.op, ast.Mult))
                        or (isinstance(s, ast.Name) and (s.id in products or handed_products(fn, s.id)))
                        for s in sides):
                return True
    return False


def _returned_before(fn: Function, call: ast.Call) -> tuple:
    """`if not self.debug_dump: return` ahead of the call in fn's own body: what must hold for the
    call to run, as the walker's conds say it (("self.debug_dump", True))."""
    if isinstance(fn.node, ast.Module):
        return ()
    exits = fn.__dict__.get("_early_returns")
    if exits is None:  # (read once per function: each of its writes asks)
        exits = fn.__dict__["_early_returns"] = [
            (stmt.lineno, test[4:] if (test := text(stmt.test)).startswith("not ") else f"not {test}")
            for stmt in fn.node.body
            if isinstance(stmt, ast.If) and not stmt.orelse and stmt.body and isinstance(stmt.body[-1], ast.Return)]
    return tuple((said, True) for line, said in exits if line < call.lineno)


def _truth(test: ast.AST, key: str, value: ast.AST):
    """True / False where the test is settled by `key` holding the constant `value`, else None
    (other names unknown): `x > 0`, `x`, `not x`, and `and` / `or` of such."""
    const = value.value if isinstance(value, ast.Constant) else None
    if isinstance(value, ast.UnaryOp) and isinstance(value.operand, ast.Constant) and \
            isinstance(value.op, ast.USub) and isinstance(value.operand.value, (int, float)):
        const = -value.operand.value
    if isinstance(test, ast.BoolOp):
        parts = [_truth(v, key, value) for v in test.values]
        if isinstance(test.op, ast.And):
            return False if False in parts else (True if all(p is True for p in parts) else None)
        return True if True in parts else (False if all(p is False for p in parts) else None)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _truth(test.operand, key, value)
        return None if inner is None else not inner
    if text(test) == key:
        return bool(const)
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and text(test.left) == key and \
            isinstance(test.comparators[0], ast.Constant):
        other = test.comparators[0].value
        compare = {ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b, ast.Lt: lambda a, b: a < b,
                   ast.LtE: lambda a, b: a <= b, ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
                   ast.Is: lambda a, b: a is b, ast.IsNot: lambda a, b: a is not b}.get(type(test.ops[0]))
        try:
            return None if compare is None else bool(compare(const, other))
        except TypeError:
            return None
    return None


# What a function that gathers or shards model state says: where it is, a library save there
# may write what rank 0 alone holds.
SHARDED_STATE = re.compile(r"FSDP|FullyShardedDataParallel|state_dict_type|StateDictType|zero_stage|ZeRO|"
                           r"deepspeed|get_state_dict|consolidate|gather_16bit|full_state_dict", re.IGNORECASE)


def _sharded_state(program, fn, call: ast.Call) -> bool:
    if any(kw.arg == "state_dict" for kw in call.keywords):
        return True
    source = source_lines(fn.file.lines, fn.node) if not isinstance(fn.node, ast.Module) else ""
    said = {m.lower() for m in SHARDED_STATE.findall(source or "")}
    if said == {"deepspeed"} and _unpartitioned_deepspeed(program):
        return False  # (`TrainingArguments(deepspeed=cfg.ds_config)` with every config at ZeRO 0-2)
    return bool(said)


def _unpartitioned_deepspeed(program) -> bool:
    """Every DeepSpeed JSON config beside the script sets a ZeRO stage below 3: each rank holds
    the whole model, and a save of it on every rank writes the same file. (The folder is read
    once per program, not once per library save.)"""
    found = program.__dict__.get("_unpartitioned_deepspeed")
    if found is None:
        script = program.sources[0] if program.sources else None
        stages = deepspeed_json_stages(script.path, script.hydra_configs) \
            if script is not None and script.path is not None else set()
        found = program.__dict__["_unpartitioned_deepspeed"] = \
            bool(stages) and all(isinstance(stage, int) and stage < 3 for stage in stages)
    return found


def _grown(scope: ast.AST, data: set[str]) -> set[str]:
    """data and the names assigned (or looped over) from it in scope, a few steps on."""
    inner = [n for n in walk(scope) if n.__class__ in (ast.Assign, ast.For, ast.AsyncFor)]
    for _ in range(4):
        more = set(data)
        for node in inner:
            value = node.value if node.__class__ is ast.Assign else node.iter
            if rank_state.value_inputs(value) & data:
                targets = node.targets if node.__class__ is ast.Assign else [node.target]
                more |= {n.id for t in targets for n in walk(t) if isinstance(n, ast.Name)}
        if more == data:
            break
        data = more
    return data

