"""DDP801's facts: collectives (or calls that end in one) that run only where a rank test holds,
less those the other ranks run too (the other branch runs the same ops, or the tests pair up)."""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Optional

from ddpdoctor.core.findings import Location
from ddpdoctor.lint.defaults import OPTION_TEST, constructed_truth, declared_off, open_part_off, off_at_launch, option_off, settled
from ddpdoctor.lint.fact_builder import (MAX_DEPTH, Reached, _op_kind, _polarities, _single_process, _truth_by_constants,
                                         argument_at, guard_test, loc, truth_at_call)
from ddpdoctor.lint.patterns import (CHOSEN_SAVE, DDP_BACKWARD, DDP_BUILT, DDP_FORWARD, dotted, engine_tested, is_const, keyword, last_name, no_grad_forward,
                                     save_path, sharded_save, text,
                                     through_grad_off)
from ddpdoctor.lint.nodes import parse_test, walk
from ddpdoctor.lint.program import Function, Guard
from ddpdoctor.lint.rank_state import _break_in
from ddpdoctor.lint.ranks import UNIFORM_NAME, _enclosing_if


@dataclass
class GuardedCollective:
    """A collective (or a call that ends in one) that runs only where a rank test holds."""

    op: str
    location: Location  # the collective itself
    guard: str  # the rank test's source text
    guard_location: Location
    function: str  # where the guard is
    chain: list[str] = field(default_factory=list)  # "train.py:40 save_checkpoint()" steps
    assumption: str = ""  # what must hold for the guard to differ between ranks ("" : proven)
    given: str = ""  # the config defaults the guard differs at (RankTest.given)
    # where the collective itself is, when the finding is placed at the call into its helper
    # (a helper every rank also runs elsewhere: the call is the one-sided place)
    inner: Optional[Location] = None
    # the first steps of the other ways to the same collective under a rank test (the periodic
    # and the final `if master: save_checkpoint(engine, ...)`): one finding, told at each
    other_ways: list[str] = field(default_factory=list)


def _paired_tests(sides: dict[tuple, tuple]) -> set[tuple]:
    """The rank tests of a function that pair up, one of each side, in the order they come
    (`if local_rank not in [-1, 0]: barrier()` ... `if local_rank == 0: barrier()`, the "rank 0
    first" pair): each rank passes one of the two. A test left over - a third `if local_rank in
    [-1, 0]: test()` whose helper reaches the closing barrier again, after the pair has closed -
    is rank 0's alone (SentiLARE's test set, loaded through the cache helper after training).
    {(file, line, side) of the tests paired: the two sides of one `if rank == 0: ... else:` pair too}."""
    if any(nested for _, nested in sides.values()):
        # (a closure's test - rank 0 signalling from `work()`, the others' loop answering - runs
        # when it is called, not where it is written: the order says nothing, both sides pair)
        polarities = {polarity for polarity, _ in sides.values()}
        return set(sides) if {"zero", "nonzero"} <= polarities else set()
    open_: list[tuple] = []
    paired: set[tuple] = set()
    for place, (polarity, _) in sorted(sides.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0)):
        flip = {"zero": "nonzero", "nonzero": "zero"}.get(polarity)
        peer = next((i for i in range(len(open_) - 1, -1, -1) if open_[i][1] == flip), None)
        if peer is None:
            open_.append((place, polarity))
            continue
        paired.update((open_.pop(peer)[0], place))
    return paired


class CollectiveFacts:
    """Mixin of lint/facts.FactBuilder over lint/fact_builder.BuilderCore's walks: DDP801."""

    def _collective_owner(self, where) -> Optional[Function]:
        """The function a collective reached at `where` is written in (None: not a collective's)."""
        return _owner_index(self).get(str(where))

    def _subgroup_at(self, where) -> str:
        """The process group a collective at `where` is handed (`group=mesh["dp"].get_group()`),
        as the source spells it; "" for the default group."""
        owner = self._collective_owner(where)
        for call in owner.own_calls if owner is not None else ():
            if call.lineno != where.line:
                continue
            # (a DDP model's collectives run over the group its constructor is handed)
            group = keyword(call, "group") or keyword(call, "process_group")
            if group is not None and not is_const(group, None) and not (dotted(group) or "").endswith("WORLD"):
                return text(group, 60)
        return ""

    def _group_made(self, where) -> set:
        """The `dist.new_group(...)` calls the group a collective at `where` is handed may be
        (followed through fields and constructors' parameters, a few steps): by id."""
        owner = self._collective_owner(where)
        for call in owner.own_calls if owner is not None else ():
            group = keyword(call, "group") if call.lineno == where.line else None
            if group is not None:
                return {id(v): v for v, _ in self.program.values_of(group, owner, 6)
                        if isinstance(v, ast.Call) and last_name(v.func) == "new_group"}
        return {}

    def _group_answered(self, fn: Function, guard: Guard, where, op: str) -> bool:
        """The subgroup's members are the ranks that take the branch, or the others answer the
        same collective elsewhere (lamorel: the LLM servers broadcast over their own group under
        `if process_index in llm_processes:`, the group made as `new_group(ranks=llm_processes)`;
        the RL processes gather with the servers' master over their shared group from their own
        caller). Either way nobody waits for a rank that never comes."""
        made = self._group_made(where)
        if not made:
            return False
        test = guard_test(fn, guard)
        # (a conjunct of the test: `if me in [self.src, self.dest] and local_rank == 0:` over the
        # group `new_group([src, dest])` its constructor kept as self.src / self.dest - the
        # stochastic gradient push graph's edges)
        for part in (test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]):
            if isinstance(part, ast.Compare) and len(part.ops) == 1 and isinstance(part.ops[0], ast.In):
                members = _members_text(part.comparators[0])
                if any(_members_text(keyword(g, "ranks") or (g.args[0] if g.args else g)) == members
                       for g in made.values()):
                    return True  # the branch is exactly the group's membership
        owner = self._collective_owner(where)
        kind = _op_kind(op)
        for other in self.functions:
            if other is owner:
                continue
            for event in other.events:
                if event.kind != "collective" or _op_kind(event.op) != kind or not isinstance(event.node, ast.Call):
                    continue
                group = keyword(event.node, "group")
                if group is not None and any(id(v) in made for v, _ in self.program.values_of(group, other, 6)):
                    return True  # the same collective on the same group, from another place
        return False

    def _ops_under(self, fn: Function, branch: int, side: str, default_group: bool = False) -> Counter:
        """The kinds of collective one side of a rank test reaches, counted; default_group: only
        those on the default group (not a `group=` / DDP `process_group=` subgroup)."""
        ops: Counter = Counter()
        for event in fn.events:
            if not any(g.branch == branch and g.side == side for g in event.guards):
                continue
            if event.kind == "collective":
                if not (default_group and self._subgroup_at(loc(fn, event.node))):
                    ops[_op_kind(event.op)] += 1
            elif event.kind in ("call", "ref"):
                for target in event.targets:
                    ops.update(_op_kind(op) for op, where, _, _ in self.reach(target, MAX_DEPTH - 1)
                               if not (default_group and self._subgroup_at(where)))
        # how many backward calls a side spells (an amp and a plain one) says nothing of how many
        # run: a side that trains through the DDP model pairs with another that does
        backward = _op_kind(DDP_BACKWARD)
        if ops[backward]:
            ops[backward] = 1
        return ops

    def _role_split(self, fn: Function, branch: int) -> bool:
        """Both sides of the rank test run collectives of the same kinds on the default group,
        over a loop on some side, only how many times differing: a split of roles (a host that
        scatters work and gathers the results; trainers that take it command by command and
        answer), whose loops pair their calls by their own protocol. What either side runs
        beyond those is on a subgroup (the trainers' DDP model over `process_group=gpus`)."""
        sides = []
        for side in ("body", "else"):
            ops = self._ops_under(fn, branch, side, default_group=True)
            if not ops[_DDP_BUILT] and self._ops_under(fn, branch, side)[_DDP_BUILT]:
                # the side's DDP models are built on a subgroup: their forwards and backwards
                # all-reduce there too
                ops = Counter({k: n for k, n in ops.items() if not k.startswith(_DDP_MODEL_OPS)})
            sides.append(ops)
        if not sides[0] or set(sides[0]) != set(sides[1]):
            return False
        if sides[0] == sides[1]:
            return True
        node = _branch_node(fn, branch)
        return node is not None and any(isinstance(n, (ast.For, ast.While))
                                        for stmt in node.body + node.orelse for n in walk(stmt))

    def _same_calls(self, fn: Function, branch: int) -> bool:
        """Both sides of the rank test reach their collectives only through calls, and call the
        same functions (one side in several alternatives of its own, the other once)."""
        sides: dict[str, set] = {"body": set(), "else": set()}
        for event in fn.events:
            for g in event.guards:
                if g.branch != branch:
                    continue
                if event.kind == "collective":
                    return False
                if event.kind in ("call", "ref"):
                    sides[g.side].update(id(t) for t in event.targets if self.reach(t, MAX_DEPTH - 1))
        return bool(sides["body"]) and sides["body"] == sides["else"]

    def _first_run_side(self, fn, cond: str) -> bool:
        """`not os.path.exists(ckpt)` where ckpt is a file the run saves itself (its resume
        checkpoint): the first run of the script takes this side, so the test is settled on
        the run a user starts first, no assumption about what is on disk."""
        if not cond.startswith("not "):
            return False
        path = _tested_path(cond[4:])
        if path is None:
            return False
        said = text(path, 400)
        candidates = {said} | ({text(v, 400) for _, v in fn.bindings.get(said, ())}
                               if isinstance(path, ast.Name) else set())
        saved = self.__dict__.get("_saved_paths")
        if saved is None:
            saved = self.__dict__["_saved_paths"] = set()
            for f in self.functions:
                for e in f.events:
                    written = save_path(e.node, text(e.node.func)) \
                        if e.kind == "save" and isinstance(e.node, ast.Call) else None
                    if written is None:
                        continue
                    saved.add(text(written, 400))
                    if isinstance(written, ast.Name) and written.id in f.params:
                        # a save helper's parameter: the paths its callers hand it
                        saved.update(text(given, 400) for given, _ in f.arguments.get(written.id, []))
        return any(s and any(s == c or s in c for c in candidates) for s in saved)

    def _opened_by_a_call(self, fn: Function, guard: Guard, loops: int) -> str:
        """Where a call into fn that every rank makes (under no rank test) hands constants that
        make each of the rank test's open parts true (`split != "train"` of a parameter, a call
        giving `split="dev"`): that call, said ("`split='dev'` at train.py:937"); "" otherwise.
        (A parameter fn binds again is read as given only above its first binding, outside loops.)"""
        test = guard.test
        if not test.open:
            return ""
        parts = [parse_test(p) for p in test.open]
        if any(p is None for p in parts):
            return ""
        for caller, event in self.callers().get(fn, []):
            if event.kind != "call" or event.guards or not isinstance(event.node, ast.Call):
                continue
            if all(truth_at_call(fn, event.node, p, guard.line, loops) is True for p in parts):
                given = {n.id: argument_at(fn, event.node, n.id) for p in parts for n in walk(p)
                         if n.__class__ is ast.Name and n.id in fn.params}
                said = ", ".join(f"`{k}={v.value!r}`" for k, v in given.items() if v.__class__ is ast.Constant)
                return f"{said} at {caller.file.display}:{event.line}"
        return ""

    def _held_true(self, fn: Function, cond: str) -> bool:
        """A switch around the call that the values every way in hands fn settle true (`if
        self.checkpoint_dir:` with each construction giving `checkpoint_dir="checkpoints"`)."""
        test = parse_test(cond)
        if test is None:
            return False
        # (or a config every construction settles: `self.config.use_deepspeed` of
        # `PretrainConfig(use_deepspeed=args.deepspeed)`, --deepspeed on by default)
        return _truth_by_constants(self.callers(), fn, test, self.program, own_attrs=True) is True or \
            constructed_truth(test, fn, self.program) is True

    def _switch_options(self) -> frozenset:
        """The options the process group is set up under, by name (`ddp` of `args.ddp`, read
        again as `self.cfg.ddp` where the config carries it)."""
        found = self.__dict__.get("_switch_options_seen")
        if found is None:
            found = self.__dict__["_switch_options_seen"] = frozenset(
                m.group(1) for c in self._switches() for m in [OPTION_TEST.match(c)] if m)
        return found

    def guarded_collectives(self) -> list[GuardedCollective]:
        best: dict[tuple, GuardedCollective] = {}
        kept: list[tuple[Function, Guard, GuardedCollective]] = []
        # `if local_rank != 0: barrier()` ... `if local_rank == 0: barrier()`: paired. A nested
        # function reads its enclosing function's rank, so they pair as one: rank 0 signals from
        # a closure (`if rank == 0: broadcast(flag)`) that the others' loop in the enclosing
        # `else:` side answers (`while True: broadcast(flag)`)
        polarities: dict[tuple, dict[tuple, str]] = {}
        for fn in self.functions:
            candidates: list[tuple[Guard, GuardedCollective]] = []
            if any(event.guards for event in fn.events) and self.never_run(fn):
                continue  # a callback every construction disables: its rank-0 work never runs
            for event in fn.events:
                if not event.guards or _single_process(event.conds, self._switches(), self.wraps_ddp()):
                    continue  # (`if local_rank == -1:` inside the rank-0 branch: never in a distributed run)
                if event.conds and self.false_test(event.conds, fn):
                    continue  # `if self.enabled:` around it, every construction `enabled=False`
                if any(_never_none(self, fn, cond) for cond, _ in event.conds):
                    continue  # `gather(x) if gathered is None else gathered`, every caller handing `gathered`
                reached: list[Reached] = []
                if event.kind == "collective":
                    reached.append((event.op, loc(fn, event.node), [], (), None))
                elif event.kind in ("call", "ref"):
                    for target in event.targets:
                        if self.sets_up_group(target):
                            # `if rank() == 0: spawn(others); setup(0)` before any group exists
                            # (SCRL's launcher): each process joins, and barriers, through its own
                            # set-up call; the test tells the parent from the spawned, not ranks
                            continue
                        step = f"{fn.file.display}:{event.line} {target.label}"
                        entry = event.node if event.kind == "call" else None
                        # a helper every rank also runs elsewhere (a periodic evaluation): its
                        # collective is one-sided only through this call, so the call is the place
                        here = loc(fn, event.node) if self.only_guarded(target) is False else None
                        for op, where, chain, conds in self.reach(target, MAX_DEPTH - 1, (fn,), entry,
                                                                  under=_polarities(event.guards)):
                            if _training_side_in_eval(target, conds):
                                continue
                            op = through_grad_off(self.program, op, event.node, fn)
                            # so is a collective in a helper every rank runs elsewhere, a few
                            # calls down (`reduce_mean()` of a metrics object rank 0 asks)
                            owner = self._collective_owner(where)
                            # (not a DDP forward: that is reported at the forward, the call named)
                            place = here or (loc(fn, event.node) if owner is not None and owner is not target
                                             and not op.startswith(DDP_FORWARD)
                                             and self.only_guarded(owner) is False else None)
                            reached.append((op, place or where, [step] + chain, conds, where if place else None))
                reached = _both_ways(reached)
                for op, where, chain, conds, inner in reached:
                    # `if not use_fsdp_eval and not is_rank0: return` ... a callee's
                    # `if use_fsdp_eval: all_reduce()`: every rank gets there
                    # (and the caller's own: `if eval_only: ... return` before the call says
                    # `not eval_only` there, the case a guard's `unless` names)
                    said = {c for c, _ in conds} | {c for c, _ in event.conds}
                    guards = [g for g in event.guards if not said & set(g.unless)]
                    if not guards:
                        continue
                    guard = guards[-1]
                    off = off_at_launch(tuple(event.conds) + tuple(conds), self.program)
                    # (a plain switch around the rank test, declared off - `if args.save_model:`
                    # then `if rank == 0: model.state_dict()` of an FSDP model - is a run the
                    # user asks for by name: the switch is the finding's assumption, `here` below)
                    asked = off if off and declared_off(off, self.program) else ""
                    # (not the switch the process group is set up under, `if self.cfg.ddp:` around
                    # the callee's barrier with `--ddp` a store_true: every distributed run has it on)
                    switches = self._switch_options()
                    if open_part_off(guard, self.program) or any(
                            flag and option_off(c, self.program) and not _the_switch(c, switches) for c, flag in conds) or \
                            (off and not asked and not _the_switch(off, switches)):
                        # `if args.eval_first and is_main_process():` with --eval_first a
                        # store_true: a launch that leaves the option never gets there (nor
                        # `elif args.task == "probe":` with another task launched)
                        continue
                    if sharded_save(op) and _or_engine_on(fn, guard_test(fn, guard)):
                        continue  # `if is_main_process or use_deepspeed:`: every process where it is one
                    chosen = _chosen_engine(op)
                    if chosen and any(engine_tested(c) == (chosen, False) for c in said):
                        # `if distributed_type != DistributedType.FSDP:` around it, the launch's
                        # config picking FSDP: the run as launched never gets there
                        continue
                    if chosen and _or_engine_on(fn, guard_test(fn, guard), chosen):
                        # `if distributed_type == DistributedType.DEEPSPEED or is_main_process:`
                        # with the launch's config picking DeepSpeed: every rank takes the branch
                        continue
                    if _or_taken_on_the_way(guard_test(fn, guard), said):
                        # `if is_global_zero or "stage_3" in strategy: save(...)` reaching the
                        # collective only under `if "stage_3" in strategy:`: every rank there
                        continue
                    # (the switches around the call here count as those in the callee: `if not
                    # is_rank0: return` ... `if config.get("use_hf_hub", False): gather()`; a
                    # switch read from an object or a config, not a parameter the callers settle)
                    here = tuple((c, flag) for c, flag in event.conds if flag and (
                        not c.isidentifier() or _module_setting(fn, c))
                        and not (c.startswith("not ") and c[4:].isidentifier())
                        and not self._held_true(fn, c))
                    # (a switch the run as launched takes - `if not opt.evolve:` with --evolve a
                    # store_true - is no assumption: every launch goes that way)
                    test_assumption, given = guard.test.assumption, guard.test.given
                    if guard.test.open and all(_taken_at_launch(part, self.program) and declared_off(part, self.program)
                                               for part in guard.test.open):
                        # `if args.do_eval and local_rank in [-1, 0]:`, --do_eval a store_true that
                        # every launch beside the script gives: the run's switch, no assumption
                        # (ranks.py words it first); one merely on by default stays said
                        test_assumption = test_assumption.partition(" on every rank")[2].removeprefix(", and ")
                    settled = self._opened_by_a_call(fn, guard, event.loops)
                    if settled:
                        # `if local_rank not in [-1, 0] and split != "train":` with a call handing
                        # `split="dev"`: every rank takes that call alike, the rank test decides
                        test_assumption = guard.test.assumption.partition(" on every rank")[2].removeprefix(", and ")
                        given = f"{given}, {settled}" if given else settled
                    assumption = _assume(test_assumption, tuple(
                        (c, flag) for c, flag in here + tuple(conds) if not (flag and _taken_at_launch(c, self.program))))
                    if asked and f"`{asked}`" not in assumption:
                        # `if args.save_frequency > 0 and ...:` with the count declared 0: a run
                        # that asks for the saves by name
                        said = f"`{asked}` holds (an option off by default)"
                        assumption = f"{assumption}, and {said}" if assumption else said
                    # (not a switch every launch beside the script gives: `--wandb` in each of them)
                    switched = [c for c in self.switched_on_only(fn) if not _taken_at_launch(c, self.program)]
                    if switched:
                        # `if args.val_only: evaluate()` with --val_only a store_true: the training
                        # run never gets here; a run asked for with the switch hangs
                        said = f"{' or '.join(f'`{c}`' for c in switched)} is switched on (off by default)"
                        assumption = f"{assumption}, and {said}" if assumption else said
                    # a test inside the branch on an option left off by default (`if
                    # self.cfg.time_limit is not None:` with `--time_limit` unset): the collective
                    # is reached only on a launch that sets it - the finding rests on that launch
                    unset = [c for c, flag in event.conds if not flag and not _the_switch(c, switches)
                             and option_off(c, self.program)]
                    if unset:
                        said = f"`{unset[0]}` holds (an option off by default)"
                        assumption = f"{assumption}, and {said}" if assumption else said
                    # (a comparison no constant the function binds the name to makes true:
                    # `if training_phase == 1:` with `training_phase = 2` and a checkpoint's value)
                    unsettled = [c for c, _ in event.conds if _true_only_off_constants(fn, c)]
                    if unsettled:
                        said = f"`{unsettled[0]}` holds (a value the source reads, not one it sets)"
                        assumption = f"{assumption}, and {said}" if assumption else said
                    present = _on_the_files([c for c in event.conds if (_FILE_STATE.search(c[0])
                                                                        or _listed_names(fn, c[0]))
                                             and not self._first_run_side(fn, c[0])])
                    if present:
                        assumption = f"{assumption}, and {present}" if assumption else present
                    endless = _past_endless_loop(fn, event.node)
                    if endless:
                        assumption = f"{assumption}, and {endless}" if assumption else endless
                    group = self._subgroup_at(where)
                    if group and self._group_answered(fn, guard, where, op):
                        continue
                    if group:
                        # RL2's tp-rank-0 processes gathering over their dp group: a subgroup may
                        # hold only ranks that take the branch, which the source does not show
                        said = f"`{group}` holds ranks that skip the branch"
                        assumption = f"{said}, and {assumption}" if assumption else said
                    candidates.append((guard, GuardedCollective(
                        op, where, guard.test.text, Location(guard.file, guard.line), fn.label, chain,
                        assumption, given, inner)))
            # ranks that take the other branch run the same collectives: balanced, no hang
            balanced, judged = set(), set()
            for guard, _ in candidates:
                if guard.branch and (guard.branch, guard.side) not in judged:
                    judged.add((guard.branch, guard.side))
                    other = "else" if guard.side == "body" else "body"
                    mine = self._ops_under(fn, guard.branch, guard.side)
                    if mine and mine == self._ops_under(fn, guard.branch, other):
                        balanced.add(guard.branch)
                    elif mine and self._same_calls(fn, guard.branch):
                        balanced.add(guard.branch)  # `trainer.train(profiler=p)` in each of its ways / `trainer.train()`
                    elif mine and self._role_split(fn, guard.branch):
                        balanced.add(guard.branch)
            for guard, found in candidates:
                polarities.setdefault((_outermost(fn), _op_kind(found.op), guard.test.key),
                                      {})[(guard.file, guard.line, guard.side)] = (guard.test.polarity,
                                                                                   _outermost(fn) is not fn)
                if guard.branch not in balanced:
                    kept.append((fn, guard, found))
        ways: dict[tuple, list[str]] = {}
        paired = {key: _paired_tests(sides) for key, sides in polarities.items()}  # (once a function and key)
        for fn, guard, found in kept:
            if (guard.file, guard.line, guard.side) in paired[(_outermost(fn), _op_kind(found.op), guard.test.key)]:
                continue
            key = (found.location.file, found.location.line)
            # one finding per place: the proven one before one that rests on a switch on the way
            # (minimal-diffusion's sampler: an all_gather under `if args.class_cond:`, then one
            # every call runs), a collective before a DDP forward's buffer broadcast (MLPF's
            # run_test: its barrier, and a no-grad forward a few calls down), then the shortest way
            if found.chain:
                ways.setdefault(key, []).append(found.chain[0].partition(" ")[0])
            if key not in best or _rank(found) < _rank(best[key]):
                best[key] = found
        for key, found in best.items():
            mine = found.chain[0].partition(" ")[0] if found.chain else ""
            found.other_ways = [w for w in dict.fromkeys(ways.get(key, ())) if w != mine]
        # a helper's several no-grad forwards reached through one call (`pred_cond = model(...)`,
        # `pred_uncond = model(...)`): one latent broadcast to report, at the first
        first: dict[tuple, GuardedCollective] = {}
        for found in sorted(best.values(), key=lambda g: (g.location.file, g.location.line or 0)):
            if no_grad_forward(found.op):
                way = (str(found.guard_location), found.chain[0] if found.chain else "", found.location.file)
                if way in first:
                    continue
                first[way] = found
            else:
                first[(found.location.file, found.location.line)] = found
        return sorted(first.values(), key=lambda g: (g.location.file, g.location.line or 0))


_DDP_BUILT = _op_kind(DDP_BUILT)
_DDP_MODEL_OPS = (DDP_FORWARD, DDP_BACKWARD)


def _branch_node(fn: Function, branch: int) -> Optional[ast.If]:
    """The `if` statement a guard's branch id names, in fn's own body."""
    for node in walk(fn.node):
        if id(node) == branch and isinstance(node, ast.If):
            return node
    return None


def _never_none(builder, fn: Function, cond: str) -> bool:
    """`x is None` on a parameter every call of fn hands a value that is no None constant."""
    if not cond.endswith(" is None"):
        return False
    name = cond[:-len(" is None")]
    if not name.isidentifier() or (name not in fn.params and name not in fn.kwonly) or fn.bindings.get(name):
        return False
    sites = builder.callers().get(fn, [])
    if not sites:
        return False
    for _, event in sites:
        if event.kind != "call" or not isinstance(event.node, ast.Call):
            return False
        given = argument_at(fn, event.node, name)
        if given is None or is_const(given, None):
            return False
    return True


def _both_ways(reached: list) -> list:
    """A switch on the way that leads to a collective on both its sides (`if per_token: save_a()
    else: save_b()`, each ending in a barrier) decides which collective, not whether: it is no
    assumption of either finding."""
    said = {c for _, _, _, conds, _ in reached for c, _ in conds}
    both = {c for c in said if _negation(c) in said}
    if not both:
        return reached
    return [(op, where, chain, tuple((c, flag) for c, flag in conds if c not in both), inner)
            for op, where, chain, conds, inner in reached]


def _negation(cond: str) -> str:
    if cond.startswith("not (") and cond.endswith(")"):
        return cond[5:-1]
    if cond.startswith("not "):
        return cond[4:]
    return f"not {cond}" if cond.replace(".", "").replace("_", "").isalnum() else f"not ({cond})"


def _rank(found: GuardedCollective) -> tuple:
    return bool(found.assumption), found.op.startswith(DDP_FORWARD), len(found.chain)


def _outermost(fn: Function) -> Function:
    """The function a nested one is defined in, outermost first (itself when not nested)."""
    while fn.parent is not None:
        fn = fn.parent
    return fn


def _owner_index(builder) -> dict:
    index = builder.__dict__.get("_collective_owners")
    if index is None:
        index = builder.__dict__["_collective_owners"] = {
            str(loc(fn, event.node)): fn for fn in builder.functions for event in fn.events
            if event.kind == "collective"}
    return index


_NONE_TEST = re.compile(r"^[A-Za-z_]\w* is (?:not )?None$")


# a test of what the disk holds when the run gets there (`if not Path("vocab.txt").exists():`)
_FILE_STATE = re.compile(r"\b(?:exists|isfile|isdir|is_file|is_dir|listdir|glob)\(")


def _tested_path(cond: str) -> Optional[ast.AST]:
    """The path `not os.path.exists(p)` / `not Path(p).exists()` asks about (None: another test)."""
    try:
        node = ast.parse(cond, mode="eval").body
    except SyntaxError:
        return None
    for sub in walk(node):
        if isinstance(sub, ast.Call) and last_name(sub.func) in ("exists", "isfile", "isdir", "is_file", "is_dir"):
            if sub.args:
                return sub.args[0]
            receiver = sub.func.value if isinstance(sub.func, ast.Attribute) else None
            if isinstance(receiver, ast.Call) and receiver.args:
                return receiver.args[0]  # Path(p).exists()
    return None


def _true_only_off_constants(fn: Function, cond: str) -> bool:
    """`name == K` (or `!=`) where fn binds name to constants, none of which makes the test true,
    and to other values too (a checkpoint's field): the test holds only on those other values."""
    test = parse_test(cond)
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name)
            and isinstance(test.ops[0], (ast.Eq, ast.NotEq)) and isinstance(test.comparators[0], ast.Constant)):
        return False
    bound = [value for _, value in fn.bindings.get(test.left.id, [])]
    constants = [v.value for v in bound if isinstance(v, ast.Constant)]
    if not constants or len(constants) == len(bound) or test.left.id in fn.params:
        return False
    want = test.comparators[0].value
    return all((v == want) != isinstance(test.ops[0], ast.Eq) for v in constants)


def _listed_names(fn: Function, cond: str) -> bool:
    """The test reads a name fn binds from what is on disk (`checkpoints = os.listdir(out)`,
    then `if len(checkpoints) > 0 and ...:`)."""
    names = set(re.findall(r"\b[A-Za-z_]\w*\b", cond))
    return any(name in names and _FILE_STATE.search(text(value, 300) or "")
               for name, bound in fn.bindings.items() if name in names for _, value in bound)


def _on_the_files(conds: tuple) -> str:
    """The tests around the guarded call that read the filesystem's state (a cache built on the
    first run only): where the branch runs depends on what an earlier run left, which the
    source does not settle."""
    # (the callers pick the tests that read the disk; a part of a test said whole is said once)
    said = [c for c, _ in conds]
    tests = list(dict.fromkeys(f"`{c}`" for c in said if not any(c != o and c in o for o in said)))
    if not tests:
        return ""
    return f"{' and '.join(tests)} {'holds' if len(tests) == 1 else 'hold'} (what is on disk when it runs)"


def _training_side_in_eval(target: Function, conds: tuple) -> bool:
    """The collective sits under a module's `if self.training:` and the function the rank test
    guards puts the model in eval mode (`model.eval()`, no `.train()` after it) before it runs the
    module: on that way `self.training` is false (CLIP4Clip's rank-0 evaluation, whose
    similarity head all-gathers only while training)."""
    if not any(flag and c == "self.training" for c, flag in conds) or target.node is None:
        return False
    modes = [c for c in target.own_calls if isinstance(c.func, ast.Attribute) and not c.args
             and c.func.attr in ("eval", "train")]
    return bool(modes) and max(modes, key=lambda c: c.lineno).func.attr == "eval"


def _module_setting(fn, name: str) -> bool:
    """`if use_fsdp:` at the top level of a script that rewrites its own globals at run time
    (nanoGPT's `exec(open("configurator.py").read())`, with `use_fsdp = False` above it): a
    setting the launch gives (`--use_fsdp=True`), as an option is - not a value the source settles."""
    if not isinstance(fn.node, ast.Module) or not fn.file.rewrites_globals:
        return False
    bound = fn.bindings.get(name, [])
    return bool(bound) and all(isinstance(value, ast.Constant) for _, value in bound)


def _taken_at_launch(cond: str, program) -> bool:
    """The test is true on the run as launched, where the options decide it (defaults.settled)."""
    test = parse_test(cond)
    return test is not None and settled(test, program) is True


def _assume(assumption: str, conds: tuple) -> str:
    """The guard's own assumption, and the switches on the way to the collective (`if
    use_fsdp_eval:` in a callee): the finding holds only where they are on."""
    # a switch that says whether the run is distributed at all (`if self._distributed:` around
    # the all_reduce) is true wherever there are ranks to disagree: no assumption
    # ...and a search's fallback (`dir_name = None`, a loop that may set it, then `if dir_name
    # is None: dir_name = stamp()` whose stamp() waits at a barrier): a local's None-test says
    # when, which the source does not settle
    flags = list(dict.fromkeys(f"`{c}`" for c, flag in conds
                               if (flag and not UNIFORM_NAME.search(c.rpartition(".")[2]))
                               or _NONE_TEST.match(c)))
    if not flags:
        return assumption
    more = f"{' and '.join(flags)} {'is' if len(flags) == 1 else 'are'} true on the way"
    return f"{assumption}, and {more}" if assumption else more


def _past_endless_loop(fn: Function, node: ast.AST) -> str:
    """The statement holding node follows, in fn's body, a `while` that runs on for ever where a
    value is unset: `while not self.lr_anneal_steps or self.step < self.lr_anneal_steps:` with no
    `break` (guided-diffusion's run_loop and its many copies, whose final save follows it). What
    follows runs only on a launch that sets the value: said as the finding's assumption, "" if
    there is no such loop."""
    if fn.node is None or isinstance(fn.node, ast.Module):
        return ""
    line = getattr(node, "lineno", 0)
    for stmt in fn.node.body:
        if not (isinstance(stmt, ast.While) and (stmt.end_lineno or 0) < line):
            continue
        test = stmt.test
        parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or) else []
        unset = [p.operand for p in parts if isinstance(p, ast.UnaryOp) and isinstance(p.op, ast.Not)
                 and isinstance(p.operand, (ast.Name, ast.Attribute))]
        assigned = {text(t) for n in walk(stmt) if isinstance(n, (ast.Assign, ast.AugAssign))
                    for t in (n.targets if isinstance(n, ast.Assign) else [n.target])}
        if unset and _break_in(stmt.body) is None and not any(text(u) in assigned for u in unset):
            return f"the loop at {fn.file.display}:{stmt.lineno} ends (it runs on for ever where `{text(unset[0])}` is unset)"
    return ""


_ENGINE_WORD = re.compile(r"deepspeed|fsdp", re.IGNORECASE)


def _or_taken_on_the_way(test: Optional[ast.AST], said: set) -> bool:
    """The rank test is `<rank test> or X` and the way to the collective holds X itself: where
    the collective runs, X made every rank take the branch."""
    if not (isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or)):
        return False
    return any(text(part, 10_000) in said for part in test.values)


def _chosen_engine(op: str) -> str:
    """The engine a save's op says the launch picks (patterns.CHOSEN_SAVE), or ""."""
    return next((engine for engine in ("DeepSpeed", "FSDP") if op.endswith(CHOSEN_SAVE.format(engine))), "")


def _or_engine_on(fn: Function, test: Optional[ast.AST], engine: str = "") -> bool:
    """`is_main_process or <engine on>`: a part of the `or` that holds where DeepSpeed or FSDP
    runs - a test naming the engine (`accelerator.distributed_type == DistributedType.DEEPSPEED`,
    `args.deepspeed`), or a flag fn sets True only under such a test (SimpleTuner's
    `use_deepspeed_optimizer`, set where `accelerator.state.deepspeed_plugin` is not None)."""
    if not (isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or)):
        return False
    for part in test.values:
        if isinstance(part, ast.UnaryOp):
            continue
        if _ENGINE_WORD.search(text(part)) and not isinstance(part, ast.Name) and \
                (not engine or engine.lower() in text(part).lower()):
            return True
        if isinstance(part, ast.Name):
            trues = [v for _, v in fn.bindings.get(part.id, []) if is_const(v, True)]
            sides = [_enclosing_if(fn, v) for v in trues]
            if trues and all(side is not None and side[1] == "body" and _ENGINE_WORD.search(text(side[0].test))
                             for side in sides):
                return True
    return False


def _the_switch(cond: str, switches: frozenset) -> bool:
    """The test reads an option the process group is set up under (on in every distributed run)."""
    found = OPTION_TEST.match(cond)
    return found is not None and found.group(1) in switches


def _members_text(node: ast.AST) -> str:
    """A member list's text with `self.` dropped: a group made from a constructor's `src, dest`
    and a test on the `self.src, self.dest` it kept name the same ranks."""
    return text(node, 200).replace("self.", "")
