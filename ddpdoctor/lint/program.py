"""The program a lint reads: functions, classes and imports of the script and its local modules,
which call goes where, and for every function the events in its body (collectives, calls,
saves, loops) with the rank tests that guard them.

Calls are resolved the way a reader follows them: a plain name to the function of that name in
scope or imported from a local module, `self.m()` to the method of the enclosing class (or a
local base class), `obj.m()` where `obj = LocalClass(...)` to that class's method. What cannot
be resolved this way is left alone, which keeps the lint from guessing.

The walk of each function's body in order (the events, with their rank tests) is
lint/walker.py's; this module resolves (the symbol table, bindings, types through factories,
where a call goes) and decides what the entry script reaches. It knows names and control flow
only: what a call means for DDP (a collective, a save, init_process_group, a DDP model's
forward, a rank-only decorator) is asked of patterns.py, and which tests differ between ranks
of ranks.py.
"""

from __future__ import annotations

import ast
import os
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Optional, Union

from ddpdoctor.core.errors import UsageError
from ddpdoctor.lint import defaults, patterns, reaching
from ddpdoctor.lint.nodes import own_nodes, own_nodes_of, walk
from ddpdoctor.lint.config_files import (LEFT_OUT, UNKNOWN_VALUE, Contested, config_file_settings, config_near, config_values,
                                         named_configs_values, top_level_values,
                                         elastic_launch_only, multi_process_options,
                                         hydra_main_config, key_values_anywhere, launch_exports, launch_values, launched_parameters, leaf_values, named_config,
                                         module_names, named_values, yaml_beside)
from ddpdoctor.lint.options import config_file_options, declared_options, option_defaults, required_text_options, yaml_loop_configs
from ddpdoctor.lint.patterns import SELF_RETURNING, _dict_call_literal, dotted, last_name, name_pattern
from ddpdoctor.lint.ranks import RankFlow
from ddpdoctor.lint.receivers import library_made, sole_holder
from ddpdoctor.lint.sources import IMPORTERS, SourceFile, configured_key, dynamic_spec, fits, loads_own_package, names_importer, read
from ddpdoctor.lint.walker import Event, Guard, Walker

# The dest of a `--local_rank` / `--local-rank` option (what torch.distributed.launch passes)
LOCAL_OPTION = re.compile(r"^local_?rank$", re.IGNORECASE)

__all__ = ["Event", "Function", "Guard", "Klass", "Module", "Program"]


FuncNode = Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.Module]


CONTEXT_MANAGERS = frozenset({"contextmanager", "asynccontextmanager"})
# A name bound more often than this in one function (`ds = ds.map(f)` a thousand times in a
# generated script) is read through the flow (reaching.py), or else through the bindings
# nearest the use: every binding of every use would be quadratic in the rebindings.
MANY_BINDINGS = 16
# More values than this (a utility's parameter fed from everywhere) name no one class (class_of).
MANY_VALUES = 64
# How many times a call is bound again as the modules it waits on are read (_read).
REBINDS = 8
# The most seconds one script's analysis may take (DDPDOCTOR_LINT_BUDGET_S overrides): past it
# the lint stops and says the verdict could not be reached (exit 4), never a PASS on half a
# reading. The analysis is bounded by design (each bound above), this is the backstop.
BUDGET_S = 60.0


class AnalysisBudget(Exception):
    """The analysis ran past its budget (lint/driver.py reports the script as not judged)."""


def budget_s() -> float:
    said = os.environ.get("DDPDOCTOR_LINT_BUDGET_S")
    if said is None:
        return BUDGET_S
    try:
        value = float(said)
    except ValueError:
        value = -1.0
    if not 0 < value < 86_400:
        raise UsageError(f"DDPDOCTOR_LINT_BUDGET_S={said!r}: give the seconds one script's lint may take (above 0, below 86400)")
    return value


@dataclass(eq=False)
class Function:
    name: str
    qualname: str
    file: SourceFile
    node: FuncNode
    module: "Module"
    cls: Optional["Klass"] = None
    parent: Optional["Function"] = None
    nested: dict[str, "Function"] = field(default_factory=dict)
    rank_only: Optional[str] = None  # a rank-only decorator's text
    bindings: dict[str, list[tuple[int, ast.AST]]] = field(default_factory=dict)
    attr_bindings: dict[str, list[ast.AST]] = field(default_factory=dict)  # "args.gpu" -> values
    events: list[Event] = field(default_factory=list)
    calls: list[tuple[ast.Call, tuple[Guard, ...], int]] = field(default_factory=list)  # every call
    # what callers pass for each parameter: name -> [(argument, caller)]
    arguments: dict[str, list[tuple[ast.AST, "Function"]]] = field(default_factory=dict)
    # the calls that leave a parameter out (its default): name -> [(call, caller)]
    defaulted: dict[str, list[tuple[ast.Call, "Function"]]] = field(default_factory=dict)
    _own: Optional[list] = field(default=None, repr=False)
    # The signature's names, read off the def when the function is made: every call's target is
    # asked them, many times over (320,000 asks on h130A_cascast), as plain attributes.
    params: list[str] = field(init=False, repr=False)  # positional, a method's self / cls left out
    kwonly: list[str] = field(init=False, repr=False)  # keyword-only (`def f(self, m, *, save=True)`)
    # every name the signature binds (self, *args, keyword-only and **kwargs too): the names local
    # to a call whatever the module binds
    arg_names: frozenset = field(init=False, repr=False)

    def __post_init__(self) -> None:
        args = getattr(self.node, "args", None)
        if isinstance(self.node, ast.Module) or args is None:
            self.params, self.kwonly = [], []
        else:
            names = [a.arg for a in args.posonlyargs + args.args]
            if self.cls is not None and self.parent is None and names and names[0] in ("self", "cls"):
                names = names[1:]
            self.params, self.kwonly = names, [a.arg for a in args.kwonlyargs]
        self.arg_names = frozenset() if args is None else frozenset(
            a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg) if a)

    @property
    def own(self) -> list[ast.AST]:
        """Every node of the body, not inside nested defs (computed once: many passes read it)."""
        if self._own is None:
            self._own = _own_nodes(self.node)
        return self._own

    def own_of(self, *classes: type) -> list[ast.AST]:
        """The nodes of `own` of these exact classes, in `own`'s order. Kept per class set: the
        passes ask one function for its assignments, returns or loops again and again, and a
        module's `own` runs to tens of thousands of nodes (h63H_brisknet: 0.4 s in such scans)."""
        index = self.__dict__.get("_own_index")
        if index is None:
            index = self.__dict__["_own_index"] = {}
        found = index.get(classes)
        if found is None:
            if len(classes) == 1:
                # (one pass sorts `own` by class for every one-class ask: a function is asked
                # for its assignments, loops, ifs, names, expressions and attributes in turn,
                # each a scan of `own` before - 660,000 nodes on h130A_cascast)
                by_class = self.__dict__.get("_own_by_class")
                if by_class is None:
                    by_class = self.__dict__["_own_by_class"] = {}
                    for n in self.own:
                        kept = by_class.get(n.__class__)
                        if kept is None:
                            by_class[n.__class__] = [n]
                        else:
                            kept.append(n)
                found = by_class.get(classes[0], [])
            else:
                found = [n for n in self.own if n.__class__ in classes]
            index[classes] = found
        return found

    @property
    def own_calls(self) -> list[ast.Call]:
        """The calls among `own`, in its order."""
        found = self.__dict__.get("_own_calls")
        if found is None:
            found = self.__dict__["_own_calls"] = [n for n in self.own if n.__class__ is ast.Call]
        return found

    @property
    def returned(self) -> list[ast.AST]:
        """The values of its own `return` statements, in `own`'s order (asked of a call's target
        by several passes, again and again)."""
        found = self.__dict__.get("_returned")
        if found is None:
            # a @contextmanager's value is what it yields: `with sync_workers() as rank:` binds
            # the `yield rank` (NVIDIA's Transformer-XL), not the generator object
            kind = ast.Yield if any(last_name(d.func if isinstance(d, ast.Call) else d) in CONTEXT_MANAGERS
                                    for d in getattr(self.node, "decorator_list", ())) else ast.Return
            found = self.__dict__["_returned"] = [] if isinstance(self.node, ast.Module) else [
                n.value for n in self.own if n.__class__ is kind and n.value is not None]
        return found

    @property
    def line(self) -> int:
        return getattr(self.node, "lineno", 1)

    @property
    def label(self) -> str:
        return "module level" if isinstance(self.node, ast.Module) else f"{self.qualname}()"


@dataclass(eq=False)
class Klass:
    name: str
    file: SourceFile
    node: ast.ClassDef
    module: "Module"
    bases: list[str] = field(default_factory=list)
    methods: dict[str, Function] = field(default_factory=dict)
    attrs: dict[str, list[tuple[ast.AST, Function]]] = field(default_factory=dict)


@dataclass
class Module:
    file: SourceFile
    name: str
    functions: dict[str, Function] = field(default_factory=dict)
    classes: dict[str, Klass] = field(default_factory=dict)
    imports: dict[str, str] = field(default_factory=dict)  # alias -> full dotted name
    body: Optional[Function] = None
    # name -> [(the if test, full dotted name)] for a name a top-level if/elif chain imports on
    # several of its sides (`if opt.loss == "class": from train.cls import train` / `elif ...`)
    import_branches: dict[str, list] = field(default_factory=dict)


def _class_level(node: ast.ClassDef, attr: str) -> Optional[ast.AST]:
    """The value the class body binds attr to, where it binds it once (`name = {...}`, or
    annotated: `name: Dict[str, Any] = {...}`); None otherwise."""
    found = [stmt.value for stmt in node.body
             if (stmt.__class__ is ast.Assign and any(t.__class__ is ast.Name and t.id == attr for t in stmt.targets))
             or (stmt.__class__ is ast.AnnAssign and stmt.value is not None and stmt.target.__class__ is ast.Name
                 and stmt.target.id == attr)]
    return found[0] if len(found) == 1 else None


def table_values_bound(loop: ast.For) -> tuple[str, Optional[ast.AST]]:
    """(the table, the target its values land in) of `for key, value in table.items():` or `for
    value in table.values():` over a plain name; ("", None) for any other loop."""
    it = loop.iter
    if not (it.__class__ is ast.Call and it.func.__class__ is ast.Attribute and not it.args
            and it.func.attr in ("items", "values") and it.func.value.__class__ is ast.Name):
        return "", None
    if it.func.attr == "values":
        return it.func.value.id, loop.target
    target = loop.target
    return (it.func.value.id, target.elts[1]) if target.__class__ is ast.Tuple and len(target.elts) == 2 else ("", None)


def _returned_closures(maker: Function) -> list[Function]:
    """The functions a factory defines inside itself and returns (`def fn(model): ...; return
    fn`): what calling its answer runs."""
    return [maker.nested[r.id] for r in maker.returned if r.__class__ is ast.Name and r.id in maker.nested]


def _configured_read(node: ast.AST) -> bool:
    """`model_cfg["model"]`, `cfg["model"]["type"]`: a name read out of a config by constant keys."""
    while node.__class__ is ast.Subscript and node.slice.__class__ is ast.Constant and isinstance(node.slice.value, str):
        node = node.value
    return node.__class__ in (ast.Name, ast.Attribute)


def _a_parse(value: ast.AST) -> bool:
    """`parser.parse_args()`, or `parser.parse_known_args()[0]`."""
    if value.__class__ is ast.Subscript:
        value = value.value
    return value.__class__ is ast.Call and last_name(value.func) in ("parse_args", "parse_known_args")


def _as_number(raw: str) -> object:
    """A setting's text as the number it spells (`240000`, `8e-05`), else the text itself."""
    for kind in (int, float):
        try:
            return kind(raw)
        except ValueError:
            continue
    return raw


def _forwards(call: ast.Call, spread: str) -> bool:
    """The call hands on `**spread` as it was given (`super().__init__(root, **kwargs)`)."""
    return any(k.arg is None and k.value.__class__ is ast.Name and k.value.id == spread for k in call.keywords)


def _str_keyed(value: ast.AST) -> Optional[ast.Dict]:
    """A dict literal (`{"k": v}` or `dict(k=v)`) whose keys are all constant strings, or None."""
    table = _dict_call_literal(value)
    if table.__class__ is ast.Dict and all(k.__class__ is ast.Constant and isinstance(k.value, str)
                                           for k in table.keys):
        return table
    return None


def _hydra_primary(script) -> Optional[tuple]:
    """The primary config the script's `@hydra.main(config_path=..., config_name=...)` names,
    read as config_files.hydra_main_config reads it; None without one."""
    for node in script.tree.body if script.tree is not None else ():
        if node.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef):
            continue
        for deco in node.decorator_list:
            if deco.__class__ is ast.Call and (dotted(deco.func) or "").endswith("hydra.main"):
                given = {k.arg: k.value.value for k in deco.keywords
                         if k.value.__class__ is ast.Constant and isinstance(k.value.value, str)}
                if "config_name" in given:
                    return hydra_main_config(script.path, given.get("config_path", "."), given["config_name"],
                                             script.hydra_configs)
    return None


# the options that name a process's rank in the whole job (`--rank`), as launchers that pass one spell it
_GLOBAL_RANK_OPTIONS = frozenset({"rank", "global_rank", "world_rank"})


def _fields_set(fn: Function) -> frozenset:
    """The fields fn's own body sets on an object other than `self` (`opts.rank = r`,
    `setattr(opts, "rank", r)`). Kept on the function: rank_option_unset asks again each time
    more modules are read (h113A_adv_part_model: 19 times over 500 functions)."""
    held = fn.__dict__.get("_fields_set")
    if held is None:
        held = fn.__dict__["_fields_set"] = frozenset(
            {t.attr for node in fn.own_of(ast.Assign) for t in node.targets
             if t.__class__ is ast.Attribute and not (t.value.__class__ is ast.Name and t.value.id == "self")} | {
                call.args[1].value for call in fn.own_calls
                if last_name(call.func) == "setattr" and len(call.args) > 1
                and call.args[1].__class__ is ast.Constant})
    return held


class Program:
    """The parsed script and its local modules, with calls resolved and events gathered."""

    def __init__(self, files: list[SourceFile]) -> None:
        # Every local module found; the quiet ones (lint/sources.py) wait unparsed until
        # resolution asks for a name they define: then they are read and indexed into the
        # program as if they had been there from the start (see _read), and every list is put
        # back in the order the modules were found in (_in_order).
        self.sources = files
        self.budget = budget_s()
        self._deadline = time.perf_counter() + self.budget
        self.files = [f for f in files if f.tree is not None]
        self._waiting = {f.module: f for f in files if f.tree is None and f.module}
        # calls whose binding needed a waiting module: bound when it is read (see _module)
        self._deferred: dict[str, dict[int, tuple[Function, ast.Call, list]]] = {}
        self._late = False
        self._deferrals = 0
        self._peeking = False
        # the functions a distributed run never takes: the one-process side of a pick on a flag
        # that says whether the run is distributed (`_loaded`)
        self.one_process_picks: set = set()
        self._override_targets: set[int] = set()  # ids of the methods _overrides returned
        # class_of's answers while nothing they read changes (see _changed): a name every helper
        # takes (`opts`) has hundreds of callers, and the answer for each of them was asked again
        # through every factory and return on the way (CVNets: 750,000 asks, 3 s)
        self._class_memo: dict = {}
        self.modules: list[Module] = []
        self.by_name: dict[str, Module] = {}
        self.functions: list[Function] = []
        self.classes: list[Klass] = []
        self.ranks = RankFlow(self)
        self._phase = "index"
        for source in self.files:
            self._index(source)
        # every module found, read or not (the waiting ones by their scanned imports); a read
        # one's map is its Module's, made by _index
        maps = [m.imports for m in self.modules] + [_import_map(f) for f in files if f.tree is None]
        self.imported = {full.split(".")[0] for imports in maps for full in imports.values()}
        for function in self.functions:
            self._collect_bindings(function)
        self._phase = "arguments"
        self._unbound_instances: list = []
        for function in list(self.functions):
            self._bind_arguments(function)
        # `def train_epoch(model, stepper): stepper(loss)` written above the `main()` that hands
        # it `ScaledStep()`: what the parameter holds was known only once main's calls were
        # bound, so such a call is bound again, once, after the pass
        retry, self._unbound_instances = self._unbound_instances, []
        if retry:
            self._changed()
            for fn, node in retry:
                self._bind_call(fn, node, [])
        self._unbound_instances = None
        self._phase = "ranks"
        self.ranks.index()
        self._in_order()
        self._phase = "walk"
        self.reachable = self._reachable()  # walks each reached function (only those) once
        self._in_order()
        self.skipped = sum(1 for f in self.functions if f not in self.reachable)
        self._phase = "done"

    def _module(self, name: str) -> Optional[Module]:
        """The module of that dotted name. A quiet one is read now, unless what asks is the
        binding of every call's arguments (calls in code never run, most of them): that call
        is bound again if the module is read later (a reached function lives there)."""
        module = self.by_name.get(name)
        if module is None and name in self._waiting:
            if self._peeking:
                return None  # a registry's entry in a module not read: not read for it (_table_entries)
            if self._phase == "arguments":
                self._deferred.setdefault(name, {})[id(self._binding)] = self._binding  # once per call
                self._deferrals += 1
                return None
            self._read(self._waiting[name])
            module = self.by_name.get(name)
        return module

    def read_waiting(self, pattern: "re.Pattern", limit: int) -> None:
        """Read the quiet modules whose text the pattern finds (at most `limit`): a rule that
        needs every class of a kind (DDP808's dataset classes, where the source does not show
        which one a loader gets) sees those in modules loaded by a name known at run time."""
        for source in [s for s in self._waiting.values() if pattern.search(s.text or "")][:limit]:
            self._module(source.module)

    def _names_anywhere(self) -> set[str]:
        """Every name a function, method or class is defined or imported by, in the modules read
        and (a superset, from their text) in those waiting; a module read adds its own (_read)."""
        names = self.__dict__.get("_anywhere")
        if names is None:
            names = self.__dict__["_anywhere"] = set()
            for function in self.functions:
                names.add(function.name)
            for klass in self.classes:
                names.add(klass.name)
            for module in self.modules:
                names.update(module.imports)
            for source in self._waiting.values():
                names.update(source.defined)
                names.update(source.classes_named)
                names.update(_import_map(source))
        return names

    def _changed(self) -> None:
        """Something class_of reads changed (a binding, an argument, a module read, an order):
        its remembered answers go."""
        self._class_memo = {}
        self.__dict__.pop("_resolve_memo", None)
        self.__dict__.pop("_star_names", None)  # a star-imported module may have been read since
        self.__dict__.pop("_table_classes", None)  # (what a table's entry names may be read since)
        self.__dict__.pop("_factory_memo", None)  # (and what a config factory's module holds)
        self.__dict__.pop("_ddp_calls", None)  # (a DDP class may live in a module read since)

    def _read(self, source: SourceFile) -> None:
        """Parse a waiting module and index it into the program: its functions' bindings and
        the arguments their calls pass, the calls that were left unbound for want of it, the
        attributes they set, and (in the walk) its top level, which import runs."""
        del self._waiting[source.module]
        self._changed()
        try:
            read(source)
        except UsageError:
            return  # not Python: as if it were not there
        self._late = True
        first, first_class = len(self.functions), len(self.classes)
        self.files.append(source)
        module = self._index(source)
        self.__dict__.pop("_methods_by_name", None)
        self.__dict__.pop("_children_index", None)  # its classes may derive from known ones
        self.__dict__.pop("_built_names", None)
        self.__dict__.pop("_value_names", None)  # (handed_elsewhere: the names it reads as values)
        self.__dict__.pop("_outside", None)  # its functions may set attributes of known classes
        self.__dict__.pop("_method_names", None)  # walker._bound_method's names: its classes' methods count too
        fresh = self.functions[first:]
        names = self.__dict__.get("_anywhere")
        if names is not None:  # what the text promised, now as parsed (a superset already, but exact)
            names.update(fn.name for fn in fresh)
            names.update(k.name for k in self.classes[first_class:])
            names.update(module.imports)
        for fn in fresh:
            self._collect_bindings(fn)
        if self._phase == "index":
            return
        phase, self._phase = self._phase, "arguments"
        for fn in fresh:
            self._bind_arguments(fn)
        rebound = self.__dict__.setdefault("_rebinds", {})
        for binding in self._deferred.pop(source.module, {}).values():
            # a call waits on every quiet module a name it reads may come from: behind a chain of
            # `from .x import *` packages that is every module of them, and each read bound it
            # again (SimpleReDial's `load_model`: 59,000 bindings, minutes). A few rounds settle
            # what a call reaches; past REBINDS it keeps what it has.
            count = rebound.get(id(binding[1]), 0)
            if count >= REBINDS:
                continue
            rebound[id(binding[1])] = count + 1
            self._bind_call(*binding)
        self._phase = phase
        if phase in ("walk", "done"):
            for fn in fresh:
                for name, values in fn.attr_bindings.items():
                    self.ranks.attributes.setdefault(name, []).extend((v, fn) for v in values)
        if phase == "walk":
            self._queue.append(module.body)

    def _in_order(self) -> None:
        """After modules were read late: every list in the order one pass over the modules in
        the order found gives (the callers and the setters in function order)."""
        if not self._late:
            return
        self._late = False
        self._changed()
        place = {id(s): i for i, s in enumerate(self.sources)}
        self.files.sort(key=lambda s: place[id(s)])
        for items in (self.modules, self.functions, self.classes):
            items.sort(key=lambda x: place[id(x.file)])
        order = {fn: i for i, fn in enumerate(self.functions)}
        for fn in self.functions:
            for passed in [*fn.arguments.values(), *fn.defaulted.values()]:
                passed.sort(key=lambda p: order[p[1]])
        for values in self.ranks.attributes.values():
            values.sort(key=lambda p: order[p[1]])
        self.__dict__.pop("_methods_by_name", None)

    def release(self) -> None:
        """Drop every reference to the syntax trees, once the facts are built: the program's
        objects refer to each other (cycles), so without this the trees (a million objects for a
        200-file package) wait for the cyclic collector, which then spends most of a second on
        them; cleared, they are freed at once by reference counting. The facts hold none of
        these objects (they are plain data, cached as such): every attribute goes, not a list
        of the caches known today (a cache added later and missed here cost 0.2 s per lint)."""
        for items in (self.sources, self.files, self.modules, self.functions, self.classes):
            for item in items:
                item.__dict__.clear()
        self.ranks.__dict__.clear()
        self.__dict__.clear()
        self.sources = []

    # ------------------------------------------------------------------ reachability
    def _reachable(self) -> set[Function]:
        """What running the entry script can execute: its top level (with its `__main__`
        block), every imported module's top level (import runs it; not their `__main__`
        blocks), and what those call or pass on, transitively. A class the reached code builds
        is live with all its methods (frameworks call hooks and forward); a call whose receiver
        is unknown reaches a local method of that name only when one class alone defines it."""
        seen: set[Function] = set()
        live: set[Klass] = set()
        self.built_classes: set[Klass] = set()  # the classes a reached call builds by name (`Crops(...)`)
        queue = self._queue = [m.body for m in self.modules if m.body is not None]  # _read adds to it
        # the entry script's own classes built on a framework's base (a LightningModule, a
        # Callback): the framework finds them and calls their hooks
        for klass in self.modules[0].classes.values() if self.modules else ():
            # (`class Trainer(object)` has no framework to call it: only what the code builds runs)
            if any(base != "object" for base in klass.bases):
                live.add(klass)
                queue.extend(m for name, m in klass.methods.items() if not self._never_named(klass, name, m))
        # and the classes a Hydra config names for `instantiate` (sources._hydra_imports)
        # (and the classes the configs name for a by-name factory, CompVis' `instantiate_from_config(
        # cfg.trainer)` then `trainer.train(...)`: the trainer a YAML's `target:` picks runs)
        for target in [*self.sources[0].hydra_targets, *self.sources[0].config_named] if self.sources else ():
            klass = self.full_symbol(target)
            if klass.__class__ is Klass and klass not in live:
                live.add(klass)
                queue.extend(self._live_methods(klass))
            elif klass.__class__ is Function and klass.parent is None and klass.cls is None:
                # (a function the config names is called by name as well: SDF-Diffusion's
                # `target: src.datasets.dataset32.build_dataloaders`, handed the config's params)
                queue.append(klass)
        # and the classes the script imports only for its configs to name them (DB's `from
        # data.data_loader import DataLoader`, read nowhere, and `class: DataLoader` in the YAML
        # a by-name factory builds from)
        for klass in self._imported_for_configs():
            if klass not in live:
                live.add(klass)
                queue.extend(self._live_methods(klass))
        entry = _console_entry(self.modules[0]) if self.modules else None
        # the functions that run with no caller in the source: a console script's `main`, a
        # sacred `@ex.automain`
        self.entry_functions = ([entry] if entry is not None else []) + (
            _decorated_entries(self.modules[0]) if self.modules else []) + (
            _imported_entries(self.modules[0]) if self.modules and entry is None else [])
        queue.extend(self.entry_functions)
        self._drain(queue, seen, live)
        if not any(_runs_backward(fn) for fn in seen):
            # no training step reached: a registry builds the trainer by a name from the config
            # (`TRAINERS.build(dict(type=cfg.train.type))`, `registry.get_trainer_class(name)`),
            # so the classes the reached modules register are where it lives. Only then: a model
            # zoo's registered classes are read for nothing when the loop is in sight
            # (detectron2's plain_train_net: 17% more statements, no finding).
            for module in [m for m in self.modules if m.body in seen]:
                for klass in module.classes.values():
                    if klass not in live and _registered(klass.node):
                        live.add(klass)
                        for k in [klass, *self.bases(klass)]:
                            queue.extend(k.methods.values())
                # and the functions it registers (VGen's `@ENGINE.register_function()` training
                # entrances, which `ENGINE.build(dict(type=cfg.TASK_TYPE))` runs)
                queue.extend(fn for fn in module.functions.values()
                             if fn not in seen and fn.node is not None and _registered(fn.node))
            self._drain(queue, seen, live)
        return seen

    def _drain(self, queue: list, seen: set, live: set) -> None:
        """Walk what the queue holds and everything it reaches (see _reachable)."""
        while queue:
            fn = queue.pop()
            if fn in seen:
                continue
            seen.add(fn)
            Walker(self, fn).run()
            queue.extend(fn.nested.values())
            for event in fn.events:
                if event.kind not in ("call", "ref"):
                    continue
                if event.kind == "call" and event.node.__class__ is ast.Call:
                    named = self._callee_symbol(event.node.func, fn)
                    if named.__class__ is Klass:
                        self.built_classes.add(named)
                # (a nested def runs only where its enclosing function ran and made it: one handed
                # on by a function nothing reaches - sd-scripts' `save_sd`, defined in an epoch-end
                # helper this script never calls, beside the `save_func` it does hand the same
                # parameter - is not reached through that parameter; its parent's walk queues it)
                queue.extend(t for t in event.targets if t.parent is None or t.parent in seen)
                if len(event.weak) == 1 and event.weak[0].name not in COMMON_METHODS:
                    queue.extend(t for t in event.weak if t.parent is None or t.parent in seen)
                for target in event.targets:
                    # a class built here, or whose method is called on an instance the source
                    # types (`trainer: Trainer = config.build()`): one exists, all of it is live
                    # (not a subclass's hook that a base class's template method may run)
                    built = target.cls
                    if target.name == "__init__" and event.kind == "call" and event.node.__class__ is ast.Call:
                        # `Sub(...)` with the base's __init__: a Sub is built, whose own methods
                        # replace the base's of the same name
                        named = self._callee_symbol(event.node.func, fn)
                        if named.__class__ is Klass and named is not built:
                            built = named
                        func = event.node.func
                        if func.__class__ is ast.Attribute and func.value.__class__ is ast.Call and \
                                func.value.func.__class__ is ast.Name and func.value.func.id == "super":
                            built = None  # `super().__init__(...)`: the subclass's instance, live already
                    elif built is not None and event.kind == "call" and event.node.__class__ is ast.Call and \
                            event.node.func.__class__ is ast.Attribute and built not in live:
                        # `trainer.pretrain(...)` of a base's method on an instance of a subclass
                        # (`trainer = DDPMISSRecPretrainTrainer(...)`): the subclass is what exists,
                        # its own methods replacing the base's
                        receiver = event.node.func.value
                        if receiver.__class__ is ast.Name and receiver.id == "self":
                            # (`self._build()` in the base's own method, where only subclasses
                            # are built: an instance of one of those, live already)
                            if built not in self.built_classes and any(
                                    k in self.built_classes for k in self._descendants(built)):
                                built = None
                        else:
                            held = self.class_of(receiver, fn)
                            if held is not None and held is not built and self._derives(held, built):
                                built = held
                    if built is not None and built not in live and \
                            (target.name == "__init__" or (event.kind == "call"
                                                           and id(target) not in self._override_targets)):
                        live.add(built)
                        queue.extend(self._live_methods(built))
            for klass in self._classes_named(fn):
                if klass not in live:
                    live.add(klass)
                    queue.extend(self._live_methods(klass))

    def _imported_for_configs(self) -> list[Klass]:
        """The local classes the entry script imports by name and reads nowhere else, which a
        YAML config beside it gives as a value (`class: DataLoader`), where some file loads
        modules by name (sources.IMPORTERS): a factory builds them by the configured name."""
        # (the text test first: resolving an import may parse a module nothing else asks for)
        if not self.modules or not self.sources or not self.sources[0].tree or \
                not any(names_importer(f) for f in self.files):
            return []
        module = self.modules[0]
        read = {n.id for n in walk(module.file.tree) if n.__class__ is ast.Name}
        candidates = {}
        for alias in module.imports:
            if alias in read:
                continue
            klass = self.full_symbol(module.imports[alias])
            if klass.__class__ is Klass:
                candidates[alias] = klass
        if not candidates:
            return []
        named = named_values(self.sources[0].path, set(candidates), self.sources[0].hydra_configs)
        return [candidates[alias] for alias in sorted(named)]

    def _live_methods(self, klass: Klass) -> list[Function]:
        """The methods an instance of klass has: its own, and its bases' that it does not replace
        (a base's `fit()` that the subclass overrides without calling super() never runs on it:
        pytorch_distillation's Distiller; `super().fit()` reaches it as a call)."""
        found, names = [], set()
        for k in [klass, *self.bases(klass)]:
            for name, method in k.methods.items():
                if name not in names and not self._never_named(k, name, method):
                    found.append(method)
            names |= set(k.methods)
        return found

    def _never_named(self, klass: Klass, name: str, method: Function) -> bool:
        """A method no file the lint found names anywhere but in its own `def` (no call, no
        `getattr` string, no override), of a class only torch's Module or local classes derive
        it from: nothing runs it. Research code keeps old variants beside the live one
        (pix2pixHD's `get_G` beside `to_cuda`); judging their collectives is judging dead code.
        A framework's base (Lightning's hooks, a Trainer's callbacks) may call any name: kept."""
        if name.startswith("__") or name in _MODULE_HOOKS or getattr(method.node, "decorator_list", None):
            return False
        if any(b.rsplit(".", 1)[-1] not in ("Module", "object") and not self._local_base(klass, b)
               for b in klass.bases):
            return False
        return self.name_counts()[name] <= 1

    def name_counts(self) -> Counter:
        """Every word of every file found, counted once: how often the source names a thing."""
        counts = self.__dict__.get("_name_counts")
        if counts is None:
            counts = self.__dict__["_name_counts"] = Counter()
            for source in self.sources:  # (each file's words counted at once: no generator step per word)
                counts.update(_words(source.text if source.text is not None else "\n".join(source.lines)))
        return counts

    def _local_base(self, klass: Klass, base: str) -> bool:
        return any(k.name == base.rsplit(".", 1)[-1] for k in self.bases(klass))

    def _classes_named(self, fn: Function) -> list[Klass]:
        """Local classes a reached function builds or hands on (`LightningCLI(Model)`,
        `model_cls=Net`, `factory = Net`); not those it only tests (`isinstance(x, Net)`) or
        annotates with."""
        found = []
        if isinstance(fn.node, ast.Module):
            nodes = _module_nodes(fn.node)
        else:  # its own calls, assignments and returns, listed by _collect_bindings' scan of `own`
            nodes = fn.__dict__.get("_handing")
            if nodes is None:
                nodes = [n for n in fn.own if n.__class__ in (ast.Call, ast.Assign, ast.Return)]
        dead = fn.__dict__.get("_dead_spans")
        if dead:
            # (a block no run takes - `if False:`, a model no config lists - builds nothing)
            nodes = [n for n in nodes if not any(start <= n.lineno <= end for start, end in dead)]
        for node in nodes:
            cls = node.__class__  # exact classes in a parsed tree: a test per node, not isinstance
            if cls is ast.Call:
                if last_name(node.func) in ("isinstance", "issubclass", "cast", "super"):
                    continue  # (`super(Base, self)`: the subclass's instance, no Base built)
                handed = [node.func, *node.args, *(kw.value for kw in node.keywords)]
            elif (cls is ast.Assign or cls is ast.Return) and node.value is not None:
                handed = [node.value]
            else:
                continue
            # `Trainer(callbacks=[SaveCallback])`: the classes a list handed on holds
            handed = handed + [e for v in handed if v.__class__ is ast.List or v.__class__ is ast.Tuple for e in v.elts]
            # (`trainer_class = DCTrainer if args.distance_cache else Trainer`: the side the
            # options settle, or either where they do not - Reranker's)
            handed = handed + [side for v in handed if v.__class__ is ast.IfExp for side in self._either_side(v)]
            for value in handed:
                if value.__class__ is ast.Name or value.__class__ is ast.Attribute:
                    target = self._callee_symbol(value, fn)
                    if isinstance(target, Klass):
                        found.append(target)
                    elif target is None and value is getattr(node, "func", None) and value.__class__ is ast.Name:
                        # `Trainer()` where Trainer was loaded by name: built, even without __init__
                        found.extend(k for k in self._called(value, fn) if k.__class__ is Klass)
            if cls is ast.Call and node.func.__class__ is ast.Call:
                found.extend(k for k in self._called(node.func, fn) if k.__class__ is Klass)
        return found

    # ------------------------------------------------------------------ indexing
    def _index(self, source: SourceFile) -> Module:
        module = Module(source, source.module)
        self.modules.append(module)
        self.by_name[source.module] = module
        if not source.module:
            # the script imported by its own name (`from train import main as single_process_main`
            # in the launcher fairseq's train.py runs: the spawned ranks' way into main): itself
            for alias in (source.import_name, source.path.stem):
                if alias and all(part.isidentifier() for part in alias.split(".")):
                    self.by_name.setdefault(alias, module)
        module.body = Function("<module>", "<module>", source, source.tree, module)
        self.functions.append(module.body)
        module.imports = _import_map(source)
        module.import_branches = _import_branches(source)
        self._index_body(source.tree.body, module, None, None, "")
        return module

    def _import_chosen(self, module: Module, name: str) -> Optional[str]:
        """The import of a name that the side of a top-level if/elif chain the options settle
        binds (`opt.loss_type.split("_")[0] == "class"` with --loss_type class_softmax): None
        where no side is settled true (then the first import of it stands, as for a fallback)."""
        memo = module.__dict__.setdefault("_import_chosen", {})
        key = (name, len(self.files))  # (an option declared in a module read later may settle it)
        if key not in memo:
            memo[key] = None  # (settling a test may ask again)
            branches = module.import_branches[name]
            memo[key] = next((full for test, full in branches
                              if test is not None and defaults.settled(test, self) is True), None)
            if memo[key] is None and branches[-1][0] is None and all(
                    defaults.settled(test, self) is False for test, _ in branches[:-1]):
                memo[key] = branches[-1][1]  # (the `else:` side, every test before it settled false)
        return memo[key]

    def _index_body(self, body, module: Module, cls: Optional[Klass], parent: Optional[Function],
                    prefix: str, branched: bool = False) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                fn = Function(node.name, prefix + node.name, module.file, node, module, cls, parent)
                fn.rank_only = patterns.rank_only_decorator(node)
                self.functions.append(fn)
                if cls is not None and parent is None:
                    cls.methods[node.name] = fn
                elif parent is not None:
                    parent.nested[node.name] = fn
                else:
                    held = module.functions.get(node.name)
                    if held is not None and branched:
                        # `if distributed: def reduce_mean(t): all_reduce(t) ... else: def
                        # reduce_mean(t): return t`: either may be the one a call runs (_resolve)
                        fn.__dict__["_alternatives"] = [*held.__dict__.get("_alternatives", ()), held]
                    module.functions[node.name] = fn
                self._index_body(node.body, module, None, fn, f"{prefix}{node.name}.")
            elif isinstance(node, ast.ClassDef):
                klass = Klass(node.name, module.file, node, module,
                              [d for d in (dotted(b) for b in node.bases) if d])
                self.classes.append(klass)
                if parent is None and cls is None:
                    module.classes[node.name] = klass
                elif parent is not None:
                    # a class defined inside a function (skrl's config builds `Torch()` defined in
                    # its own __init__, which sets up the process group): found by that name there
                    parent.__dict__.setdefault("_nested_classes", {})[node.name] = klass
                self._index_body(node.body, module, klass, None, f"{prefix}{node.name}.")
            elif isinstance(node, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
                # defs under `if TYPE_CHECKING`, try/except ImportError, ...
                for part in ("body", "orelse", "finalbody", "handlers"):
                    inner = getattr(node, part, None) or []
                    for item in inner:
                        sub = item.body if isinstance(item, ast.ExceptHandler) else [item]
                        self._index_body(sub, module, cls, parent, prefix, True)

    def _collect_bindings(self, fn: Function) -> None:
        calls = fn.__dict__["_own_calls"] = []  # the same scan lists the calls (two passes read them)
        # and what a reached function may hand a class on with (_classes_named, for each one)
        handing = fn.__dict__["_handing"] = []
        Call, Return, Assign = ast.Call, ast.Return, ast.Assign
        for node in fn.own:
            kind = node.__class__
            if kind is Call:
                calls.append(node)
                handing.append(node)
            elif kind is Return:
                handing.append(node)
            elif kind is ast.Global:
                declared = fn.__dict__.setdefault("_declared_global", set())
                declared.update(node.names)
            elif kind not in _BINDERS:
                continue  # most nodes: one test each
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                if kind is Assign:
                    handing.append(node)
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    self._bind(fn, target, node.value, node.lineno)
            elif isinstance(node, (ast.For, ast.AsyncFor)):
                self._bind(fn, node.target, node.iter, node.lineno, iterated=True)
                # a loop's names are the function's own, whatever the module binds to them
                fn.__dict__.setdefault("_loop_names", set()).update(
                    n.id for n in walk(node.target) if n.__class__ is ast.Name)
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                self._bind(fn, node.optional_vars, node.context_expr, getattr(node.context_expr, "lineno", 0))
            elif kind is ast.AugAssign and node.target.__class__ is ast.Attribute:
                # `opts.seed += rank`: the option holds `opts.seed + rank` from there on (what the
                # seed of each rank is made of); a plain name's `total += x` stays unbound
                key = dotted(node.target)
                if key and (not key.startswith("self.") or key.count(".") >= 2):
                    fn.attr_bindings.setdefault(key, []).append(ast.copy_location(
                        ast.BinOp(left=node.target, op=node.op, right=node.value), node))
        declared = fn.__dict__.get("_declared_global")
        if declared and fn.module.body is not None and fn is not fn.module.body:
            # `def init(): global master_process; master_process = rank == 0`: a binding of the
            # module's name, read wherever the module's name is (NeuroLM's nanoGPT-style set-up)
            into = fn.module.body.__dict__.setdefault("_global_binds", {})
            for name in declared:
                into.setdefault(name, []).extend((line, value, fn) for line, value in fn.bindings.get(name, ()))

    def _bind_arguments(self, fn: Function) -> None:
        """Record, on each local function a call reaches, what the call passes for each parameter
        (one level, any caller): `accuracy(ddp_net, x)` tells `accuracy` its `net` is a DDP model."""
        for node in fn.own_calls:
            self._bind_call(fn, node, [])

    def _bind_spawned(self, fn: Function, node: ast.Call, bound: list) -> None:
        """`mp.spawn(worker, args=(solver, ngpus, args))`: each rank runs `worker(index, solver,
        ngpus, args)`, so the items of `args` are what the target's parameters after the first hold
        (`solver` in the worker is the Solver the launcher built)."""
        handed = self.spawned_args(node, fn)
        if handed is not None:
            self._bind_handed(fn, node.args[0], handed, bound, 1)

    def _bind_process(self, fn: Function, node: ast.Call, bound: list) -> None:
        """`mp.Process(target=init_processes, args=(cfg, rank, f"train-{rank}.npy"))`: the
        process runs `init_processes(cfg, rank, ...)`, the items of `args` from its first parameter."""
        target = next((kw.value for kw in node.keywords if kw.arg == "target"), None)
        handed = next((kw.value for kw in node.keywords if kw.arg == "args"), None)
        if target is not None and isinstance(handed, (ast.Tuple, ast.List)) and \
                not any(isinstance(e, ast.Starred) for e in handed.elts):
            self._bind_handed(fn, target, handed, bound, 0)

    def _bind_handed(self, fn: Function, target: ast.AST, handed: ast.AST, bound: list, skip: int) -> None:
        """A starter's `args` tuple bound to the parameters of each function target names, from
        parameter `skip` on (mp.spawn puts the process index first)."""
        for called in self.resolve(target, fn)[0]:
            if called in bound or called.node is None or isinstance(called.node, ast.Module) or called.cls is not None:
                continue
            bound.append(called)
            self._changed()
            for param, item in zip(called.params[skip:], handed.elts):
                called.arguments.setdefault(param, []).append((item, fn))

    def spawned_args(self, node: ast.Call, fn: Function) -> Optional[ast.AST]:
        """The tuple (or list) an mp.spawn call hands each rank after its index: `args=(...)`,
        the second positional argument, or a name bound once to such a tuple first
        (`training_args = (world_size, model, loader)` then `args=training_args`: Hiveformer).
        None where the source does not show its items one by one (a `*rest` among them)."""
        handed = next((kw.value for kw in node.keywords if kw.arg == "args"), None)
        if handed is None and len(node.args) > 1:
            handed = node.args[1]
        if isinstance(handed, ast.Name):
            made = [value for _, value, _ in self.lookup(handed.id, fn)]
            handed = made[0] if len(made) == 1 else None
        if not node.args or not isinstance(handed, (ast.Tuple, ast.List)) or \
                any(isinstance(e, ast.Starred) for e in handed.elts):
            return None
        return handed

    def in_budget(self) -> None:
        """Raise AnalysisBudget once the analysis has run past its budget (asked where the work
        repeats: binding calls, walking functions, resolving names)."""
        if time.perf_counter() > self._deadline:
            raise AnalysisBudget(f"the analysis ran past its budget of {self.budget:g} s "
                                 "(DDPDOCTOR_LINT_BUDGET_S)")

    def _bind_call(self, fn: Function, node: ast.Call, bound: list) -> None:
        """`bound`: the targets bound already (a call bound again once a module it needs is read)."""
        self.in_budget()
        self._binding = (fn, node, bound)
        func = node.func
        if (func.attr if func.__class__ is ast.Attribute else getattr(func, "id", "")) == "spawn" and \
                not self.resolve(func, fn)[0]:
            self._bind_spawned(fn, node, bound)  # torch.multiprocessing's, not a local `spawn`
            return
        if (func.attr if func.__class__ is ast.Attribute else getattr(func, "id", "")) == "Process" and \
                not self.resolve(func, fn)[0]:
            self._bind_process(fn, node, bound)  # multiprocessing's, not a local class
            return
        if func.__class__ is ast.Attribute and func.attr not in self._names_anywhere() and not (
                func.value.__class__ is ast.Name and func.value.id in ("self", "cls")):
            # `parser.add_argument(...)`: what an attribute call reaches is a function, method or
            # class of that name (or imported under it); none in the program, read or waiting,
            # so nothing to bind, and the receiver's class is not asked for. (Asking it followed
            # `parser = add_x_arguments(parser)` through hundreds of callers: CVNets' options
            # chain, 10,000 calls bound again as modules were read, 2 s.) `self.head(x)` stays:
            # an attribute holding an instance reaches its class's `__call__`.
            return
        if self._phase == "arguments":
            # a module this call needs and has not read is noted for it (_module): the answers
            # remembered from another call's binding would skip that (in the walk such a module
            # is read at once, and reading it forgets them: _read)
            self._changed()
        targets, _ = self.resolve(func, fn)
        if not targets and node.args and last_name(func) == "instantiate" and \
                (self.qualify(func, fn) or "").startswith("hydra."):
            self._bind_instantiated(fn, node, bound)
            return
        if targets:
            self._changed()  # the arguments it binds below change what class_of may answer
        if not targets and getattr(self, "_unbound_instances", None) is not None and (
                (func.__class__ is ast.Name and func.id in fn.params) or (
                    func.__class__ is ast.Attribute and func.value.__class__ is ast.Name and func.value.id in fn.params)
                or (func.__class__ is ast.Attribute and func.value.__class__ is ast.Attribute
                    and func.value.value.__class__ is ast.Name and func.value.value.id == "self")):
            # (and `callback.on_epoch_end(1, model)` of a parameter main hands an instance: the
            # class is known once main's calls are bound; so is `self.env.save_model(path)` of
            # the `env` a constructor keeps)
            self._unbound_instances.append((fn, node))
        wrapped = self._partials(func, fn) if targets and (
            func.__class__ is ast.Call or (func.__class__ is ast.Name and self.lookup(func.id, fn))
            or (func.__class__ is ast.Attribute and func.value.__class__ is ast.Name and func.value.id == "self")) else ()
        for target in targets:
            if target in bound:
                continue
            bound.append(target)
            params = target.params
            skip = explicit_self(target, node)
            # what a `partial(target, a, k=v)` the call runs through bound first, in its own scope
            # (a helper may return one of several: each is a way the call may run)
            through = [(p, scope) for p, scope in wrapped
                       if (made := self._callee_symbol(p.args[0], scope)) is not None
                       and (made is target or made is target.cls)]
            if through:  # (argument_at reads the site's call: it is told what the partials gave)
                target.__dict__.setdefault("_partial_calls", {})[id(node)] = through
            for variant in through or [None]:
                positional = [(a, fn) for a in node.args[skip:]]
                keywords = [(kw, fn) for kw in node.keywords]
                if variant is not None:
                    positional = [(a, variant[1]) for a in variant[0].args[1:]] + positional
                    keywords = [(kw, variant[1]) for kw in variant[0].keywords] + keywords
                self._hand(target, fn, node, params, positional, keywords)

    @staticmethod
    def _hand_positional(target: Function, params: list, positional: list) -> None:
        """The positional arguments one forwarded call hands target (see _hand)."""
        for index, (arg, scope) in enumerate(positional):
            if isinstance(arg, ast.Starred) or index >= len(params):
                break
            target.arguments.setdefault(params[index], []).append((arg, scope))

    def _bind_instantiated(self, fn: Function, node: ast.Call, bound: list) -> None:
        """`instantiate(cfg.trainer.trainer, device=device, model=model)`: Hydra builds the class
        the config's `_target_` names with the keywords given beside the config, so each keyword
        is what that parameter of the class's __init__ holds (UniTable's trainers keep
        `self.device = device`, the LOCAL_RANK). The classes are those the config key may name
        (patterns._instantiated), else the config targets whose __init__ takes every keyword."""
        given = {kw.arg for kw in node.keywords if kw.arg}
        classes = patterns._instantiated(self, node, fn)
        if not classes and given:
            classes = [k for k in (self.full_symbol(t) for t in (self.sources[0].hydra_targets if self.sources else ()))
                       if self.is_class(k) and (init := self.method(k, "__init__")) is not None
                       and given <= {*init.params, *init.kwonly}]
        for klass in classes:
            init = self.method(klass, "__init__")
            if init is None or init in bound or init.node is None:
                continue
            bound.append(init)
            self._changed()
            self._hand(init, fn, node, init.params, [], [(kw, fn) for kw in node.keywords])

    def _hand(self, target: Function, fn: Function, node: ast.Call, params: list,
              positional: list, keywords: list) -> None:
        """Record what one call (fn's node) hands target: positional and keywords are
        [(argument, the scope it is read in)], a partial's first."""
        own_star = fn.node.args.vararg.arg if getattr(fn.node, "args", None) is not None and \
            fn.node.args.vararg is not None else None
        for index, (arg, scope) in enumerate(positional):
            if isinstance(arg, ast.Starred) and own_star is not None and arg.value.__class__ is ast.Name \
                    and arg.value.id == own_star and scope is fn:
                # `super().__init__(*args, **kwargs)` handing on what fn's callers gave its own
                # `*args` (GIMM-VFI's trainers: `Trainer(model, model_ema, ...)` into `def
                # __init__(self, *args, **kwargs)`): each call's items, at their places here
                for given in list(fn.__dict__.get("_star_given", ())):
                    self._hand_positional(target, params, positional[:index] + list(given))
                break
            if isinstance(arg, ast.Starred) or index >= len(params):
                star = target.node.args.vararg if getattr(target.node, "args", None) is not None else None
                if star is not None and not isinstance(arg, ast.Starred) and index >= len(params) and \
                        not any(isinstance(a, ast.Starred) for a, _ in positional[index:]):
                    # (what this call gives the target's own `*args`, kept for the calls it hands on)
                    target.__dict__.setdefault("_star_given", []).append(tuple(positional[index:]))
                break
            target.arguments.setdefault(params[index], []).append((arg, scope))
        kwonly = target.kwonly
        spread = target.node.args.kwarg.arg if getattr(target.node, "args", None) is not None and \
            target.node.args.kwarg is not None else None
        for kw, scope in keywords:
            if kw.arg in params or kw.arg in kwonly:
                target.arguments.setdefault(kw.arg, []).append((kw.value, scope))
            elif spread is not None:
                # `f(x, is_main_process=...)` into `def f(x, **kwargs)`: kept by its name
                # under `**kwargs` (what a forwarding `g(**kwargs)` may carry)
                self._spread_into(target, spread, kw, scope)
        spread_keys = self._spread_keys(fn, node)
        if spread_keys is not None:
            # `train(**kwargs)` where kwargs is a dict literal the function builds, and adds to
            # (`if rank == 0: kwargs.update(dict(checkpoint_dir=d))`): what each key gives its
            # parameter; a key added only on a side, or never, leaves the default there
            always, values = spread_keys
            for key, value in values:
                if key in params or key in kwonly:
                    target.arguments.setdefault(key, []).append((value, fn))
                elif spread is not None:
                    # (and a key the target's own `**kwargs` takes, kept by its name for what
                    # that function hands on: `super().__init__(root, **kwargs)`)
                    self._spread_into(target, spread, ast.copy_location(ast.keyword(arg=key, value=value), value), fn)
            given = {kw.arg for kw in node.keywords if kw.arg}
            for name in [*params[len(positional):], *kwonly]:
                if name not in given and name not in always:
                    target.defaulted.setdefault(name, []).append((node, fn))
        own_spread = fn.node.args.kwarg.arg if getattr(fn.node, "args", None) is not None and \
            fn.node.args.kwarg is not None else None
        if own_spread is not None and _forwards(node, own_spread):
            # `super().__init__(root, **kwargs)` handing on what fn's callers gave its own
            # `**kwargs` by name (`Dataset(seed=s)`, or a dict literal's key spread into it):
            # each such keyword reaches the parameter of that name (vtm's Taskonomy datasets)
            for kw, scope in list(fn.arguments.get(f"**{own_spread}", [])):
                if kw.arg:
                    self._handed_on(target, kw, scope, 3)
        if spread is not None:
            # what each call hands `**kwargs` (a forwarded gate holds only where every call gives it)
            target.__dict__.setdefault("_spread_given", []).append(
                frozenset(kw.arg for kw in node.keywords if kw.arg not in params and kw.arg not in kwonly))
        if not any(a.__class__ is ast.Starred for a, _ in positional) and all(kw.arg for kw, _ in keywords):
            given = {kw.arg for kw, _ in keywords}  # no `*a` / `**kw`: what is left out is known
            for name in [*params[len(positional):], *kwonly]:
                if name not in given:
                    target.defaulted.setdefault(name, []).append((node, fn))
        else:
            # `Clips(**opts)`: any parameter may be given there (left_at_default asks)
            target.__dict__["_spread_calls"] = True

    def _spread_into(self, target: Function, spread: str, kw: ast.keyword, scope: Function, depth: int = 3) -> None:
        """Keep a keyword under target's `**spread`, and hand it on at once through the calls in
        target that forward `**spread` (`super().__init__(**kwargs)`), whichever call was bound first."""
        kept = target.arguments.setdefault(f"**{spread}", [])
        if any(k is kw for k, _ in kept):
            return
        kept.append((kw, scope))
        if not kw.arg or depth <= 0 or target.node is None:
            return
        for call in target.own_calls:
            if _forwards(call, spread):
                for onward in self.resolve(call.func, target)[0]:
                    if onward is not target:
                        self._handed_on(onward, kw, scope, depth - 1)

    def _handed_on(self, target: Function, kw: ast.keyword, scope: Function, depth: int) -> None:
        """A keyword a `**kwargs` forwarded reaches target: its parameter of that name, or its own
        `**kwargs` in turn."""
        if target.node is None or getattr(target.node, "args", None) is None:
            return
        if kw.arg in target.params or kw.arg in target.kwonly:
            given = target.arguments.setdefault(kw.arg, [])
            if not any(v is kw.value for v, _ in given):
                given.append((kw.value, scope))
                self._changed()
        elif target.node.args.kwarg is not None:
            self._spread_into(target, target.node.args.kwarg.arg, kw, scope, depth)

    def _partials(self, func: ast.AST, fn: Function) -> list:
        """[(partial(...) call, its scope)] that a called name is bound to (`run = partial(train,
        cfg)`) or a called helper returns (`select_dataset(task)(batch_size=8)` where it returns
        `partial(get_dataloader, ddp=is_ddp)`)."""
        found: list = []
        if func.__class__ is ast.Name or (func.__class__ is ast.Attribute and func.value.__class__ is ast.Name
                                          and func.value.id == "self"):
            # (and a field a constructor set: `self._keep = partial(keep_copies, every=n)`, then
            # `self._keep(sd, epoch)` under the rank test - DIAMOND's trainer)
            found = [(v, scope) for v, scope in self.values_of(func, fn, 1) if v is not func]
        elif func.__class__ is ast.Call:
            found = [(func, fn)]
            for helper in self.resolve(func.func, fn)[0]:
                if helper.node.__class__ is ast.Module:
                    continue
                for ret in helper.returned:
                    found += self.values_of(ret, helper, 1) \
                        if ret.__class__ is ast.Name else [(ret, helper)]
        return [(v, scope) for v, scope in found if v.__class__ is ast.Call and v.args and _is_partial(v)]

    def _spread_keys(self, fn: Function, node: ast.Call) -> Optional[tuple[set, list]]:
        """A call whose only spread is `**name`, name a dict the function builds from literals
        (`{...}` or `dict(k=v)`) and changes only by `name.update(...)` of literals or
        `name["k"] = v`: (the keys every binding holds, [(key, value)] of every binding and
        change); None where anything about it is not read so."""
        spreads = [kw.value for kw in node.keywords if kw.arg is None]
        if len(spreads) != 1 or spreads[0].__class__ is not ast.Name or \
                any(a.__class__ is ast.Starred for a in node.args):
            return None
        name = spreads[0].id
        bound = fn.bindings.get(name)
        if not bound or name in fn.params or name in fn.kwonly:
            return None
        always: Optional[set] = None
        values: list = []
        for _, value in bound:
            table = _str_keyed(value)
            if table is None:
                return None
            keys = {k.value for k in table.keys}
            always = keys if always is None else always & keys
            values += [(k.value, v) for k, v in zip(table.keys, table.values)]
        for call in fn.own_calls:
            func = call.func
            if func.__class__ is ast.Attribute and func.value.__class__ is ast.Name and func.value.id == name:
                if func.attr != "update":
                    if func.attr in ("pop", "popitem", "setdefault", "clear"):
                        return None
                    continue
                for arg in call.args:
                    table = _str_keyed(arg)
                    if table is None:
                        return None
                    values += [(k.value, v) for k, v in zip(table.keys, table.values)]
                values += [(kw.arg, kw.value) for kw in call.keywords if kw.arg]
                if any(kw.arg is None for kw in call.keywords):
                    return None
        for stmt in fn.own_of(ast.Assign):
            if stmt.__class__ is ast.Assign:
                for t in stmt.targets:
                    if t.__class__ is ast.Subscript and t.value.__class__ is ast.Name and t.value.id == name:
                        if not (t.slice.__class__ is ast.Constant and isinstance(t.slice.value, str)):
                            return None
                        values.append((t.slice.value, stmt.value))
        return always or set(), values

    def _bind(self, fn: Function, target: ast.AST, value: ast.AST, line: int, iterated: bool = False) -> None:
        if isinstance(target, ast.Name):
            if not iterated:
                fn.bindings.setdefault(target.id, []).append((line, value))
        elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                and target.value.id == "self" and fn.parent is None:
            owner = fn.cls
            if owner is not None and not iterated:
                owner.attrs.setdefault(target.attr, []).append((value, fn))
        elif isinstance(target, ast.Attribute) and not iterated:
            key = dotted(target)
            # `self.conf.ckpt_dir = None`: an attribute of an object the instance holds (a plain
            # `self.x` is the class's own, in owner.attrs above)
            if key and (not key.startswith("self.") or key.count(".") >= 2):
                fn.attr_bindings.setdefault(key, []).append(value)
        elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
                and len(target.elts) == len(value.elts):
            for t, v in zip(target.elts, value.elts):
                self._bind(fn, t, v, line, iterated)

    # ------------------------------------------------------------------ resolution
    def qualify(self, node: ast.AST, fn: Function) -> Optional[str]:
        """The full dotted name of a name or attribute chain, its first part mapped through the
        module's imports: `dist.barrier` -> torch.distributed.barrier."""
        # asked of the same nodes by the walk and by every rule: answered once per node (the node
        # is kept with its answer, so a freed node's reused id is never mistaken for it)
        known = self.__dict__.get("_qualified")
        if known is None:  # (asked 80,000 times: no empty dict made per ask)
            known = self.__dict__["_qualified"] = {}
        hit = known.get(id(node))
        if hit is not None and hit[0] is node and hit[1] is fn.module:
            return hit[2]
        full, settled = self._qualify(node, fn)
        if settled:
            known[id(node)] = (node, fn.module, full)
        return full

    def _qualify(self, node: ast.AST, fn: Function) -> tuple[Optional[str], bool]:
        """(the full name, whether it is final: not where a local module it passes through is
        still to be read)."""
        name = dotted(node)
        if name is None:
            return None, True
        head, _, rest = name.partition(".")
        full = fn.module.imports.get(head)
        if full is None and head not in fn.module.functions and head not in fn.module.classes:
            # `from heltonx.utils.log_utils import *` where that module has `from torch import
            # nn`: the star import brings its imports along (`nn.parallel.DistributedDataParallel`)
            full = self._star_imported(fn.module, head)
            if full is False:
                return name, False  # (a star-imported module still to be read)
        if full is None:
            return name, True
        # `from pkg.utils.seed import seed_everything` where pkg/utils/seed.py only imports it from
        # Lightning: the library's function, by the name its own module gives it (a few hops)
        for _ in range(3):
            owner, _, attr = full.rpartition(".")
            if not owner or (owner not in self.by_name and owner not in self._waiting):
                break
            module = self._module(owner)
            if module is None:
                return (f"{full}.{rest}" if rest else full), False
            if attr in module.functions or attr in module.classes or attr not in module.imports \
                    or module.imports[attr] == full:
                break
            full = module.imports[attr]
        return (f"{full}.{rest}" if rest else full), True

    def star_bound(self, name: str, fn: Function) -> list[tuple[ast.AST, Function]]:
        """The values a local module fn's module star-imports binds `name` to at its top
        (`from config import *` with `ACCUMULATION_STEPS = 1` in config.py, bGPT's settings):
        what values_of cannot see through the star. [] where none does, or one rebinds its
        globals at run time."""
        found = []
        for base in _star_bases(fn.module):
            if base == fn.module.name:
                continue
            module = self.by_name.get(base)
            if module is None and base in self._waiting:
                module = self.full_symbol(base, 2)
            if module.__class__ is not Module or module.body is None or module.file.rewrites_globals:
                continue
            found += [(value, module.body) for _, value in module.body.bindings.get(name, ())]
        return found

    def _star_imported(self, module: Module, head: str, depth: int = 2):
        """The full name a library import of a module star-imported by `module` binds to head
        (a few star hops); None where none does; False where such a module is not read yet."""
        for base in _star_bases(module) if depth > 0 else ():
            if base not in self.by_name and base not in self._waiting:
                continue
            other = self._module(base) if self._phase != "arguments" else self.by_name.get(base)
            if other is None:
                return False
            if head in other.functions or head in other.classes:
                return None  # a local name: not a library import
            found = other.imports.get(head)
            if found is not None:
                return found
            deeper = self._star_imported(other, head, depth - 1)
            if deeper is not None:
                return deeper
        return None

    def lookup(self, name: str, fn: Function) -> list[tuple[int, ast.AST, Function]]:
        """What a name was assigned, in the innermost scope that assigns it."""
        scope: Optional[Function] = fn
        while scope is not None:
            if name in scope.bindings:
                if name in scope.__dict__.get("_declared_global", ()):
                    break  # `global name`: the module's, bound here and wherever else it is declared
                return _scoped(scope, name)
            if name in scope.arg_names or (name in scope.__dict__.get("_loop_names", ())
                                           and scope.node.__class__ is not ast.Module):
                # a parameter the function never rebinds: what its callers pass, never the
                # module's global of the same name (Hiveformer's `validation_step(..., model)`
                # beside `model = get_model(args)` in the `__main__` block); a loop's name alike
                return []
            scope = scope.parent
        body = fn.module.body
        if body is None:
            return []
        elsewhere = body.__dict__.get("_global_binds")
        if elsewhere and name in elsewhere:
            return (_scoped(body, name) if name in body.bindings else []) + elsewhere[name]
        if name in body.bindings:
            return _scoped(body, name)
        return []

    def unpacked(self, name: str, fn: Function) -> list[tuple[ast.AST, Function]]:
        """What `name` holds where `fn` binds it by unpacking a call to a local function
        (`_, loader, sampler = make_loader(...)`): that element of the tuples the function
        returns. Kept out of the bindings the rank flow reads: a function that returns a rank
        beside a fallback constant (`return 1, 0` when not distributed) would read as no rank."""
        sites = fn.__dict__.get("_unpacking")
        if sites is None:  # name -> (assignment, position, width): asked for every name class_of meets
            sites = fn.__dict__["_unpacking"] = {}
            for node in fn.own_of(ast.Assign):
                if not (node.__class__ is ast.Assign and len(node.targets) == 1
                        and isinstance(node.targets[0], (ast.Tuple, ast.List))
                        and (_unpacked_sides(node.value) or _handed_list(node.value, fn))):
                    continue
                elts = node.targets[0].elts
                if any(isinstance(t, ast.Starred) for t in elts):
                    continue
                names = [t.id if isinstance(t, ast.Name) else None for t in elts]
                for position, each in enumerate(names):
                    if each is not None and names.index(each) == position:
                        sites.setdefault(each, []).append((node, position, len(names)))
        return self._elements([(node, i, w, fn) for node, i, w in sites.get(name, ())]) + \
            self._unpacked_from_table(name, fn)

    def _unpacked_from_table(self, name: str, fn: Function) -> list[tuple[ast.AST, Function]]:
        """`for kind, (loader, sampler) in loaders.items():` where fn fills the table with
        `loaders[kind] = (DataLoader(...), sampler)`: that element of the tuples it stores
        (Trajectron's loaders by node type, each with its sampler)."""
        sites = fn.__dict__.get("_table_unpacking")
        if sites is None:  # name -> (table, position, width), one walk of fn's loops
            sites = fn.__dict__["_table_unpacking"] = {}
            for loop in fn.own_of(ast.For):
                table, held = table_values_bound(loop)
                if held.__class__ in (ast.Tuple, ast.List):
                    for position, each in enumerate(held.elts):
                        if each.__class__ is ast.Name:
                            sites.setdefault(each.id, []).append((table, position, len(held.elts)))
        out = []
        for table, position, width in sites.get(name, ()):
            for node in fn.own_of(ast.Assign):
                target = node.targets[0]
                if target.__class__ is ast.Subscript and target.value.__class__ is ast.Name and \
                        target.value.id == table and node.value.__class__ is ast.Tuple and len(node.value.elts) == width:
                    element = node.value.elts[position]
                    # (the binding that reaches the store: two loops may bind one name to two loaders)
                    bound = reaching.reaching_values(fn.node, element.id, node) \
                        if element.__class__ is ast.Name and fn.node is not None else None
                    out.extend([(v, fn) for v in bound] if bound else self.values_of(element, fn))
        return out

    def indexed(self, node: ast.Subscript, fn: Function) -> list[tuple[ast.AST, Function]]:
        """What `helper()[i]` reads, for a constant i and a local helper (mmcv's
        `get_dist_info()[0] == 0`): the i-th element of each tuple the helper returns, as
        unpacked() reads `rank, _ = helper()`. Empty for anything else."""
        call, key = node.value, node.slice
        if call.__class__ is not ast.Call or key.__class__ is not ast.Constant or \
                key.value.__class__ is not int or key.value < 0:
            return []
        out = []
        for target in self.resolve(call.func, fn)[0]:
            for ret in target.returned:
                if isinstance(ret, (ast.Tuple, ast.List)) and len(ret.elts) > key.value:
                    out.extend(self.values_of(ret.elts[key.value], target))
        return out

    def unpacked_attribute(self, attr: str, fn: Function) -> list[tuple[ast.AST, Function]]:
        """What `self.<attr>` holds where a method of fn's class binds it by unpacking a call
        (`self.model, self.optimizer = self.loading()`, signdagc's Processor): that element of
        the tuples the callee returns, as unpacked() reads a name."""
        if fn.cls is None:
            return []
        by_attr = fn.cls.__dict__.get("_unpacked_self")
        if by_attr is None:  # attr -> its unpacking sites, indexed once per class (asked per `self.x(...)`)
            by_attr = fn.cls.__dict__["_unpacked_self"] = {}
            for method in fn.cls.methods.values():
                for node in method.own_of(ast.Assign):
                    if len(node.targets) == 1 and \
                            isinstance(node.targets[0], (ast.Tuple, ast.List)) and _unpacked_sides(node.value):
                        elts = node.targets[0].elts
                        if any(isinstance(t, ast.Starred) for t in elts):
                            continue
                        for i, t in enumerate(elts):
                            if t.__class__ is ast.Attribute and t.value.__class__ is ast.Name and t.value.id == "self":
                                by_attr.setdefault(t.attr, []).append((node, i, len(elts), method))
        sites = by_attr.get(attr)
        return self._elements(sites) if sites else []

    def _elements(self, sites: list) -> list[tuple[ast.AST, Function]]:
        """(assignment, position, width, its function) -> the values at that position of what
        the assigned side gives."""
        out = []
        for node, index, width, fn in sites:
            if _handed_list(node.value, fn):
                # `model, mel_fn = nets` in `def train_and_evaluate(rank, epoch, nets, ...)` called
                # with `[model, mel_fn]` (VITS-style trainers): that element of each list handed
                for given, caller in self._passed(node.value.id, fn):
                    for held, scope in [(given, caller), *(self.values_of(given, caller, 1) if given.__class__ is ast.Name
                                                          else ())]:
                        if held.__class__ in (ast.List, ast.Tuple) and len(held.elts) == width and \
                                not any(e.__class__ is ast.Starred for e in held.elts):
                            out.extend(self.values_of(held.elts[index], scope))
        # (`train_tf, val_tf = build(n) if given is None else given`: each side that is a call)
        for value, index, width, fn in [(v, i, w, f) for node, i, w, f in sites for v in _unpacked_sides(node.value)]:
            if value.__class__ is ast.Subscript:
                # `config_class, model_class, tok = MODEL_CLASSES[args.model_type]`: that element
                # of every row of a table of tuples (a dict or list the source spells)
                for table, scope in self.values_of(value.value, fn):
                    rows = table.values if isinstance(table, ast.Dict) else \
                        table.elts if isinstance(table, (ast.List, ast.Tuple)) else []
                    for row in rows:
                        if isinstance(row, (ast.Tuple, ast.List)) and len(row.elts) == width:
                            out.append((row.elts[index], scope))
                continue
            func = value.func
            if func.__class__ is ast.Attribute and func.attr == "values" and not value.args and \
                    func.value.__class__ is ast.Call:
                # `train_tf, eval_tf, _, _ = make_transforms(root).values()`: the values of the
                # dict literal the builder returns, in the order it spells them (a dict keeps it)
                out.extend((ret.values[index], target) for target in self._builders(func.value.func, fn)
                           for ret in target.returned if isinstance(ret, ast.Dict) and len(ret.values) == width
                           and None not in ret.keys)
                continue
            # (`labeled, unlabeled = BUILDERS[args.dataset](args, root)`: the builders the table
            # holds, their modules read - which datasets they return is the question)
            for target in self._builders(func, fn):
                for ret in target.returned:
                    if isinstance(ret, (ast.Tuple, ast.List)) and len(ret.elts) == width:
                        out.extend(self.values_of(ret.elts[index], target))
        return out

    def _builders(self, func: ast.AST, fn: Function) -> list[Function]:
        """The local functions a call's callee may be: the one it names, or each one a table
        holds where it reads the table (`DATASET_ZOO[cfg.dataset](root)`, or a name bound to
        that read: `make = DATASET_ZOO[cfg.dataset]; make(root)`)."""
        found = [t for t in self.resolve(func, fn)[0] if t.__class__ is Function]
        if found:
            return found
        reads = [(func, fn)] if func.__class__ is ast.Subscript else \
            [(v, s) for v, s in self.values_of(func, fn) if v.__class__ is ast.Subscript] if func.__class__ is ast.Name else []
        for read, scope in reads:
            table, path = read, []
            while table.__class__ is ast.Subscript:
                path.insert(0, table.slice)
                table = table.value
            found += [t for t in self._table_entries(table, scope, read=True, path=path) if t.__class__ is Function]
        return found

    @staticmethod
    def handed(target: Function, param: str, call: ast.Call, caller: Function) -> Optional[ast.AST]:
        """What this one call (in caller) handed target's parameter, as _hand bound it; None
        where it handed none (a default, `**kwargs`)."""
        given = (*call.args, *(k.value for k in call.keywords))
        return next((arg for arg, scope in target.arguments.get(param, ())
                     if scope is caller and any(arg is a for a in given)), None)

    def values_of(self, node: ast.AST, fn: Function, depth: int = 3) -> list[tuple[ast.AST, Function]]:
        """The expressions a name or `self.attr` may hold (the node itself when not a name)."""
        if depth <= 0:
            return [(node, fn)]
        cls = node.__class__  # exact classes, as in _callee_symbol: 28,000 asks on open_clip
        if cls is ast.Name:
            found = self.lookup(node.id, fn)
            if found and found[0][2] is fn:
                found = _nearest(found, node, fn) if len(found) > MANY_BINDINGS else _reaching(found, node, fn)
            if not found:
                passed = self._passed(node.id, fn)
                if not passed:
                    imported = self._imported_values(node.id, fn)
                    if imported:
                        out = []
                        for value, scope in imported:
                            out.extend(self.values_of(value, scope, depth - 1))
                        return out
                    return [(node, fn)]
                out = []
                for value, caller in passed:
                    out.extend(self.values_of(value, caller, depth - 1))
                return out
            out = []
            for _, value, scope in found:
                out.extend(self.values_of(value, scope, depth - 1))
            if found and found[0][2] is fn and (node.id in fn.params or node.id in fn.kwonly) and \
                    _entry_reaches(fn, node):
                # `if sampler is None: sampler = RandomSampler(ds)` then `self.origin = sampler`
                # (SCRL's loader): what the callers pass still reaches the use
                for value, caller in self._passed(node.id, fn):
                    out.extend(self.values_of(value, caller, depth - 1))
            return out
        if cls is ast.Attribute and node.value.__class__ is ast.Name and node.value.id == "self":
            klass = self._class_of_fn(fn)
            if klass is not None:
                found = self._attr(klass, node.attr)
                if len(found) > 1:
                    # (not what a block no run takes binds: `self.model = DDP(...)` on the side of
                    # `if cfg['task'] == 'fine_tuning_clam':` no config picks, as the walk found)
                    live = [(value, owner) for value, owner in found if not _in_dead_span(value, owner, self)]
                    found = live or found
                if found:
                    out = []
                    for value, owner in found:
                        out.extend(self.values_of(value, owner, depth - 1))
                    return out
        if cls is ast.Attribute and node.value.__class__ is ast.Name and node.value.id != "self" and \
                node.value.id not in fn.params and not fn.bindings.get(node.value.id):
            # `SolverFactory.supported_solvers` (or `cls.supported_solvers` in its classmethod):
            # what the class body binds the attribute to (`supported_solvers = {"base": ...}`)
            owner = self._class_of_fn(fn) if node.value.id == "cls" else self.symbol(node.value.id, fn)
            if owner.__class__ is Klass and not owner.attrs.get(node.attr):
                held = _class_level(owner.node, node.attr)
                if held is not None and owner.module.body is not None:
                    return self.values_of(held, owner.module.body, depth - 1)
        if cls is ast.Attribute and node.value.__class__ is ast.Name and node.value.id != "self":
            # `args.data` in the function mp.spawn (or a call) hands `args`, where the caller set
            # `args.data = ds` on the object it passes: what the caller set it to
            held = node.value.id
            if (held in fn.params or held in fn.kwonly) and not fn.bindings.get(held) and \
                    not fn.attr_bindings.get(f"{held}.{node.attr}"):
                out = []
                for value, caller in self._passed(held, fn):
                    if value.__class__ is ast.Name:
                        set_to = caller.attr_bindings.get(f"{value.id}.{node.attr}", ())
                        for bound in set_to:
                            out.extend(self.values_of(bound, caller, depth - 1))
                        if not set_to and (value.id in caller.params or value.id in caller.kwonly) and depth > 1:
                            # (handed on again: `train_val_datasets(config)` handing the config
                            # main set `config.root_dir` on to the dataset it builds)
                            read = ast.Attribute(value=value, attr=node.attr, ctx=ast.Load())
                            out.extend(v for v in self.values_of(read, caller, depth - 1) if v[0] is not read)
                if out:
                    return out
        if cls is ast.Call or cls is ast.Subscript:
            given = self._kwargs_item(node, fn)
            if given is not None:
                out = []
                for value, scope in given:
                    out.extend(self.values_of(value, scope, depth - 1))
                return out
        return [(node, fn)]

    def _kwargs_item(self, node: ast.AST, fn: Function) -> Optional[list[tuple[ast.AST, Function]]]:
        """`kwargs.get("local_rank", 0)` / `kwargs["local_rank"]` of fn's own `**kwargs`: what
        the calls into fn pass by that keyword, and the default (None: not such a read)."""
        args = getattr(fn.node, "args", None)
        spread = args.kwarg.arg if args is not None and args.kwarg is not None else None
        if spread is None:
            return None
        if node.__class__ is ast.Call:
            func = node.func
            if not (func.__class__ is ast.Attribute and func.attr == "get" and func.value.__class__ is ast.Name
                    and func.value.id == spread and node.args and node.args[0].__class__ is ast.Constant):
                return None
            key, default = node.args[0].value, (node.args[1] if len(node.args) > 1 else None)
        elif node.value.__class__ is ast.Name and node.value.id == spread and node.slice.__class__ is ast.Constant:
            key, default = node.slice.value, None
        else:
            return None
        found = [(kw.value, caller) for kw, caller in fn.arguments.get(f"**{spread}", []) if kw.arg == key]
        if default is not None:
            found.append((default, fn))
        return found or None

    def _imported_values(self, name: str, fn: Function) -> list[tuple[ast.AST, Function]]:
        """`from pkg.trainers import REGISTRY`: what the local module binds the name to at its top
        level (a table, a constant), read in that module's scope."""
        full = fn.module.imports.get(name)
        if not full or "." not in full:
            return []
        owner, _, attr = full.rpartition(".")
        module = self._module(owner)
        if module is None or module.body is None or module is fn.module:
            return []
        return [(value, module.body) for _, value in module.body.bindings.get(attr, [])]

    def _passed(self, name: str, fn: Function) -> list[tuple[ast.AST, Function]]:
        scope: Optional[Function] = fn
        while scope is not None:
            if name in scope.params or name in scope.kwonly:
                found = scope.arguments.get(name, [])
                if not found and scope.cls is not None and not scope.arguments and not scope.defaulted:
                    # (`loss.save_state(path)` on an element of a list of losses: the call reaches
                    # the method by its name alone, so nothing was bound; what those calls hand)
                    found = self._named_calls_argument(scope, name)
                return found
            scope = scope.parent
        return []

    def _named_calls_argument(self, method: Function, name: str) -> list[tuple[ast.AST, Function]]:
        """What the calls that reach the method by its name alone (`obj.save_state(p)` of an
        object whose class is not known, the method one of the local ones so named) hand its
        parameter `name`, by place or keyword; [] where one of them spreads its arguments.
        Worked out once per method, for all its parameters."""
        memo = self.__dict__.setdefault("_named_calls_memo", {})
        found = memo.get(id(method))
        if found is None:
            memo[id(method)] = {}  # (asked again while it is worked out: nothing known yet)
            found = memo[id(method)] = self._named_calls_arguments(method)
        return found.get(name, [])

    def _named_calls_arguments(self, method: Function) -> dict[str, list]:
        params = [p for p in method.params if p not in ("self", "cls")]
        found: dict[str, list] = {}
        # (the attribute calls by name, kept up as the program grows: a module read since
        # appends its functions, whose calls are added)
        seen, calls = self.__dict__.setdefault("_attr_calls", (set(), {}))
        if len(seen) != len(self.functions):  # (_in_order sorts the list: new ones may lie anywhere)
            for caller in self.functions:
                if id(caller) in seen:
                    continue
                seen.add(id(caller))
                for call in caller.own_calls:
                    if call.func.__class__ is ast.Attribute:
                        calls.setdefault(call.func.attr, []).append((caller, call))
        for caller, call in calls.get(method.name, ()):
            reached, named = self.resolve(call.func, caller)
            if method in reached or method not in named:
                continue
            if any(a.__class__ is ast.Starred for a in call.args) or any(k.arg is None for k in call.keywords):
                return {}
            given = dict(zip(params, call.args))
            given.update({k.arg: k.value for k in call.keywords})
            for param, value in given.items():
                found.setdefault(param, []).append((value, caller))
        return found

    def attribute_constants(self, attr: str) -> Optional[frozenset]:
        """The constants an attribute name is ever set to, on any object (`dataset.worker_init_fn =
        None` in every dataset class a registry may hand out): its value wherever it is read,
        whatever the object. None where anything sets it otherwise (another value, a method or
        class-level field of that name, an augmented assignment, a module not read yet)."""
        memo = self.__dict__.setdefault("_attribute_constants_memo", {})
        key = (attr, len(self.files))
        if key not in memo:
            memo[key] = self._attribute_constants(attr)
        return memo[key]

    def _attribute_constants(self, attr: str) -> Optional[frozenset]:
        # (the modules not read yet that set it are read: a few, or the answer is "not known")
        setting = re.compile(rf"\.{re.escape(attr)}\s*=(?!=)|setattr\(")
        self.read_waiting(setting, 8)
        if any(source.tree is None and attr in source.words and setting.search(source.text or "")
               for source in self.sources):
            return None
        found = set()
        for source in self.files:
            if any(last_name(c.func) == "setattr" and len(c.args) > 1 and not (
                    isinstance(c.args[1], ast.Constant) and c.args[1].value != attr) for c in source.of(ast.Call)):
                return None  # `setattr(obj, name, fn)`: set by a name the source may not spell
            for node in source.of(ast.Assign, ast.AnnAssign, ast.AugAssign):
                targets = node.targets if node.__class__ is ast.Assign else [node.target]
                hit = [t for n in targets for t in walk(n) if t.__class__ is ast.Attribute and t.attr == attr]
                if not hit:
                    continue
                if node.__class__ is ast.AugAssign or node.value.__class__ is not ast.Constant or \
                        any(t.__class__ is not ast.Attribute for t in targets):
                    return None
                found.add(node.value.value)
        if not found or any(attr in k.methods or attr in k.attrs and any(
                v.__class__ is not ast.Constant for v, _ in k.attrs[attr]) for k in self.classes):
            return None
        return frozenset(found)

    def _attr(self, klass: Klass, attr: str, seen: Optional[set] = None) -> list[tuple[ast.AST, Function]]:
        top = seen is None
        found = self._own_attr(klass, attr, seen or set())
        if not found and top:
            # set by none of its own classes: a base class's method reading what the subclasses
            # set (`self.model = DDP(...)` in the trainer built on the base): their values
            for sub in self._descendants(klass):
                found.extend(sub.attrs.get(attr, ()))
        return found

    def attr_unpacked(self, node: ast.AST, fn: Function) -> list[tuple[ast.AST, Function]]:
        """`self.dataset_train, self.dataset_valid = random_split(ds, [a, b])` in a method of
        fn's class, of a base or of a subclass (a loader factory whose base builds the sampler
        over what a subclass's build_datasets split): the call the unpacking takes the field's
        item from, which _bind does not keep (an item of a call is no value of its own)."""
        if not (node.__class__ is ast.Attribute and node.value.__class__ is ast.Name and node.value.id == "self"):
            return []
        klass = self._class_of_fn(fn)
        if klass is None:
            return []
        found = []
        for owner in [klass, *self.bases(klass), *self._descendants(klass)]:
            for method in owner.methods.values():
                for stmt in method.own_of(ast.Assign) if method.node is not None else ():
                    if stmt.value.__class__ is ast.Call and any(
                            t.__class__ in (ast.Tuple, ast.List) and any(
                                e.__class__ is ast.Attribute and e.attr == node.attr and e.value.__class__ is ast.Name
                                and e.value.id == "self" for e in t.elts) for t in stmt.targets):
                        found.append((stmt.value, method))
        return found

    def _own_attr(self, klass: Klass, attr: str, seen: set) -> list[tuple[ast.AST, Function]]:
        if klass in seen:
            return []
        seen.add(klass)
        outside = self._outside_attrs(klass, attr)
        if attr in klass.attrs:
            return klass.attrs[attr] + outside if outside else list(klass.attrs[attr])
        if outside:
            return outside
        built = self._record_fields(klass, attr) or self._kwargs_fields(klass, attr)
        if built:
            return built
        for base in self.bases(klass):
            found = self._own_attr(base, attr, seen)
            if found:
                return found
        return self._handed_to_library_base(klass, attr)

    def _kwargs_fields(self, klass: Klass, attr: str) -> list[tuple[ast.AST, Function]]:
        """A config class whose `__init__(self, **kwargs)` sets each keyword on the object
        (`for k, v in kwargs.items(): setattr(self, k, v)`, or `self.__dict__.update(kwargs)`:
        minGPT's TrainerConfig): what each construction hands the keyword, and the class's own
        default (`num_workers = 0` in its body); [] for any other class."""
        init = klass.methods.get("__init__")
        spread = getattr(getattr(init, "node", None), "args", None)
        spread = spread.kwarg.arg if spread is not None and spread.kwarg is not None else None
        if spread is None or not _sets_each_keyword(init.node, spread):
            return []
        found = [(stmt.value, init) for stmt in klass.node.body if stmt.__class__ is ast.Assign
                 and any(t.__class__ is ast.Name and t.id == attr for t in stmt.targets)]
        index = self.__dict__.setdefault("_kwargs_constructions", {})
        if klass not in index:
            index[klass] = [(call, fn) for fn in self.functions for call in fn.own_calls
                            if last_name(call.func) == klass.name and self._callee_symbol(call.func, fn) is klass]
        for call, fn in index[klass]:
            if any(kw.arg is None for kw in call.keywords):
                return []  # (`Config(**cfg)`: not known which keywords it hands)
            given = _field_given(call, attr, None)
            if given is not None:
                found.append((given, fn))
        return found

    def _handed_to_library_base(self, klass: Klass, attr: str) -> list[tuple[ast.AST, Function]]:
        """A field no class of the project sets, where the class hands a keyword of that name to
        a library base's constructor (`super().__init__(model, save_dir, save_to_disk=is_main)`,
        fvcore's Checkpointer, then `if not self.save_to_disk: return`): the base keeps it under
        that name, as such bases do; what the keyword is given."""
        if not self.library_bases(klass) or klass.node is None:
            return []
        init = klass.methods.get("__init__")
        if init is None or init.node is None:
            return []
        return [(kw.value, init) for call in init.own_calls
                if isinstance(call.func, ast.Attribute) and call.func.attr == "__init__"
                and isinstance(call.func.value, ast.Call) and last_name(call.func.value.func) == "super"
                for kw in call.keywords if kw.arg == attr]

    def sole_record_with(self, attr: str) -> Optional[Klass]:
        """The one local record class (dataclass, NamedTuple) with a field of that name, or None
        where none or several have one."""
        # (asked for every `x.field` the rank flow reads: each class's fields listed once per
        # count of modules read, not every class's body scanned again per field - a module read
        # later may hold another; the answer needs no order, only whether one class alone has it)
        index = self.__dict__.get("_record_index")
        if index is None or index[0] != len(self.modules):
            by_field: dict[str, list[Klass]] = {}
            for m in self.modules:
                for c in m.classes.values():
                    for name in dict.fromkeys(_record_fields_of(c)):
                        by_field.setdefault(name, []).append(c)
            index = self.__dict__["_record_index"] = (len(self.modules), by_field)
        found = index[1].get(attr, ())
        return found[0] if len(found) == 1 else None

    def tuple_record_fields(self, attr: str) -> list[tuple[ast.AST, Function]]:
        """What each construction of a `collections.namedtuple("Env", [..., "master", ...])` type
        made in a function passes for the field, where that type alone of such types has a field
        of the name (cxr-clip's singleton `GlobalEnv.get().master`, built `Tuples(...,
        dist.get_rank() == 0, ...)` or `Tuples(..., True, ...)`): its constructions are the calls
        of the name the type is bound to in that function, by keyword or place."""
        index = self.__dict__.get("_tuple_records")
        if index is None:  # built once: field -> [(function, bound name, place)]
            index = self.__dict__["_tuple_records"] = {}
            for fn in self.functions:
                for node in fn.own_of(ast.Assign):
                    fields = _namedtuple_fields(node.value)
                    if fields and len(node.targets) == 1 and node.targets[0].__class__ is ast.Name:
                        for place, name in enumerate(fields):
                            index.setdefault(name, []).append((fn, node.targets[0].id, place))
        made = index.get(attr, ())
        if len(made) != 1:
            return []
        fn, bound, place = made[0]
        # (a type bound at a module's top - `Env = namedtuple(...)` under the imports - is built
        # in that module's functions)
        scopes = [f for f in self.functions if f.module is fn.module] if isinstance(fn.node, ast.Module) else [fn]
        found = []
        for call, where in ((c, f) for f in scopes for c in f.own_calls):
            if call.func.__class__ is ast.Name and call.func.id == bound and (where is fn or not where.bindings.get(bound)):
                given = _field_given(call, attr, place)
                if given is not None:
                    found.append((given, where))
        return found

    def _record_fields(self, klass: Klass, attr: str) -> list[tuple[ast.AST, Function]]:
        """A dataclass / NamedTuple field has no `self.x = ...`: what each construction of the
        class passes for it (`Env(world=n, master=dist.get_rank() == 0)`), by keyword or place."""
        fields = _record_fields_of(klass)
        if attr not in fields:
            return []
        index = self.__dict__.get("_records")
        if index is None:  # built once: every call of a record class's name, resolved
            index = self.__dict__["_records"] = {}
            named = {c.name for m in self.modules for c in m.classes.values() if _record_fields_of(c)}
            for fn in self.functions if named else ():
                for call in fn.own_calls:
                    if last_name(call.func) in named:
                        owner = self._callee_symbol(call.func, fn)
                        if owner.__class__ is Klass:
                            index.setdefault(owner, []).append((call, fn))
        position = fields.index(attr)
        found = []
        for call, fn in index.get(klass, []):
            given = _field_given(call, attr, position)
            if given is not None:
                found.append((given, fn))
        return found

    def _children(self) -> dict:
        """Each local class's direct subclasses (an index built once, again after a module is read)."""
        children = self.__dict__.get("_children_index")
        for _ in range(4):
            if children is not None:
                return children
            children = self.__dict__["_children_index"] = {}
            for k in list(self.classes):
                for base in self.bases(k):
                    children.setdefault(base, []).append(k)
            if self.__dict__.get("_children_index") is not children:
                # asking a class's bases read the module that defines one (`from base import
                # BaseTrainer`), which drops the index being built: a subclass whose base was not
                # known yet is missing from it (CAC's Trainer, whose `_train_epoch` then never ran
                # from BaseTrainer.train); built again with that module read
                children = None
        return children if children is not None else {}

    def _descendants(self, klass: Klass) -> list[Klass]:
        """The local classes derived from klass, at any depth. Kept with the subclass index it
        was read from (a module read makes a new one): `self.x` of a base asks it of every
        subclass, 2,300 times over a vendored diffusers' model classes."""
        children = self._children()
        memo = self.__dict__.get("_descendants_memo")
        if memo is None or memo[0] is not children:
            memo = self.__dict__["_descendants_memo"] = (children, {})
        found = memo[1].get(id(klass))
        if found is None:
            out: list[Klass] = []
            seen: set[int] = set()
            todo = list(children.get(klass, ()))
            while todo:
                k = todo.pop()
                if id(k) not in seen:
                    seen.add(id(k))
                    out.append(k)
                    todo.extend(children.get(k, ()))
            found = memo[1][id(klass)] = out
        return list(found)  # (a copy: the callers' to keep)

    def _overrides(self, klass: Klass, attr: str, caller: str) -> list[Function]:
        """The subclasses' own `attr` methods that a call `self.attr()` in klass's method `caller`
        may run: of a subclass the program builds somewhere by name (or one with subclasses of its
        own), and not in one that overrides `caller` itself (below it, this call never runs).
        Recorded as overrides: reaching one does not make its class live (_reachable), only
        building it does."""
        children = self._children()
        built = self.built_names()
        out: list[Function] = []
        todo, seen = list(children.get(klass, ())), set()
        while todo:
            k = todo.pop()
            if k in seen or caller in k.methods:
                continue
            seen.add(k)
            if attr in k.methods and (k.name in built or (children.get(k) and self._named_below(k, built, children))):
                out.append(k.methods[attr])
            todo.extend(children.get(k, ()))
        self._override_targets.update(id(f) for f in out)
        return out

    def _shadowed(self, klass: Klass, attr: str, caller: str, found: Function) -> Optional[list[Function]]:
        """What `self.attr()` in klass's method `caller` runs where klass is never built itself
        (nor named beyond its subclasses' lines) and every subclass the program builds by name
        replaces `attr` (MISSRec's DDPPretrainTrainer.pretrain calling `self._train_epoch`, only
        its subclass built, with an `_train_epoch` of its own): those replacements, not klass's
        own. None where an instance may run klass's own method. Answered once per (klass, attr,
        caller): each `self.x()` of every reached method asks."""
        memo = self.__dict__.setdefault("_shadowed_memo", {})
        key = (id(klass), attr, caller, id(self._children()))
        if key not in memo:
            memo[key] = self._shadowed_now(klass, attr, caller, found)
        return memo[key]

    def _shadowed_now(self, klass: Klass, attr: str, caller: str, found: Function) -> Optional[list[Function]]:
        built = self.built_names()
        if not self._only_subclassed(klass, built):
            return None
        own_caller = self.method(klass, caller)
        runs = []
        for sub in self._descendants(klass):
            if sub.name not in built or self.method(sub, caller) is not own_caller:
                continue  # (not built, or its own `caller` runs instead of this call)
            replaced = self.method(sub, attr)
            if replaced is None or replaced is found:
                return None
            runs.append(replaced)
        return list(dict.fromkeys(runs)) or None

    def _only_subclassed(self, klass: Klass, built: set) -> bool:
        """klass has subclasses, is built nowhere by name, and is named nowhere beyond its own
        `class` line, its subclasses' base lists and `super(Klass, self)` calls (a registry, a
        config, an isinstance test would say an instance of it may exist). Once per class."""
        memo = self.__dict__.setdefault("_only_subclassed_memo", {})
        key = (id(klass), id(self._children()))
        if key not in memo:
            subs = self._children().get(klass, ())
            named = self.name_counts()[klass.name]
            found = bool(subs) and klass.name not in built
            if found and named > 1 + len(subs):
                # (its own `super(Base, self).__init__()` and its subclasses' name it too)
                found = named <= 1 + len(subs) + self._super_mentions(klass.name, (klass, *subs))
            memo[key] = found
        return memo[key]

    def built_names(self) -> set:
        """The names classes are built by somewhere (`Trainer(...)`): every call's name, read once."""
        built = self.__dict__.get("_built_names")
        if built is None:
            built = self.__dict__["_built_names"] = {last_name(c.func) for f in self.functions for c in f.own_calls}
        return built

    @staticmethod
    def _super_mentions(name: str, classes) -> int:
        """How often the classes' own text names `name` in a `super(Name, self)` call."""
        called = re.compile(rf"\bsuper\(\s*{re.escape(name)}\b")
        return sum(len(called.findall("\n".join(k.file.lines[k.node.lineno - 1:k.node.end_lineno]))) for k in classes)

    def _named_below(self, klass: Klass, built: set, children: dict) -> bool:
        """_named_below_now, worked out once per class (each `self.hook()` of a base asks it)."""
        memo = self.__dict__.setdefault("_named_below_memo", {})
        if id(klass) not in memo:
            memo[id(klass)] = self._named_below_now(klass, built, children)
        return memo[id(klass)]

    def _named_below_now(self, klass: Klass, built: set, children: dict) -> bool:
        """klass or a class below it is built by name, or named anywhere besides its own `class`
        line, its subclasses' base lists and their `super(Name, self)` calls (a registry, a
        `getattr` string, a config beside the script): an instance of that branch may exist. A
        branch of subclasses nothing names (avss' NTCD engines beside the LRS3 one the script
        builds) runs none of its overrides."""
        counts = self.name_counts()
        todo, seen, names = [klass], set(), []
        while todo:
            k = todo.pop()
            if id(k) in seen:
                continue
            seen.add(id(k))
            subs = children.get(k, ())
            if k.name in built:
                return True
            supers = self._super_mentions(k.name, subs)
            if counts[k.name] > 1 + len(subs) + supers:
                return True
            names.append(k.name)
            todo.extend(subs)
        return bool(self.sources) and bool(named_values(self.sources[0].path, set(names), self.sources[0].hydra_configs))

    def _outside_attrs(self, klass: Klass, attr: str) -> list[tuple[ast.AST, Function]]:
        """What code outside the class assigns to an instance's attribute (`learner.is_master =
        replica_id == 0` after `learner = Learner(...)` in the same function), found once for the
        whole program."""
        index = self.__dict__.get("_outside")
        if index is None:
            index = self.__dict__["_outside"] = {}  # seen empty by the class_of calls below
            found: dict = {}
            for fn in self.functions:
                if not fn.attr_bindings:
                    continue  # (most functions set no attribute of another object)
                for key, values in fn.attr_bindings.items():
                    base, _, name = key.partition(".")
                    if not name or "." in name:
                        continue
                    # the instance built in the same function (`learner = Learner(...)`): a
                    # full class_of per binding cost a config-heavy package 0.7 s
                    for _line, built in fn.bindings.get(base, []):
                        owner = self._callee_symbol(built.func, fn) if isinstance(built, ast.Call) else None
                        if isinstance(owner, Klass):
                            found.setdefault((owner, name), []).extend((value, fn) for value in values)
            index.update(found)
        return index.get((klass, attr), [])

    def _class_of_fn(self, fn: Function) -> Optional[Klass]:
        scope: Optional[Function] = fn
        while scope is not None and scope.cls is None:
            scope = scope.parent
        return scope.cls if scope else None

    def symbol(self, name: str, fn: Function) -> Optional[Union[Function, Klass, Module]]:
        """A plain name's local definition: nested def, module function or class, or an import
        of a local module or of a function or class defined in one."""
        scope: Optional[Function] = fn
        while scope is not None:
            if name in scope.nested:
                return scope.nested[name]
            inner = scope.__dict__.get("_nested_classes")
            if inner and name in inner:
                return inner[name]
            if name in scope.arg_names and name != "cls":  # (a classmethod's `cls`: below)
                return None  # a parameter: what the callers hand it, not the module's def of its name
            scope = scope.parent
        if name == "cls" and fn.cls is not None and fn.parent is None and \
                any(last_name(d) == "classmethod" for d in getattr(fn.node, "decorator_list", [])):
            return fn.cls  # `return cls(...)` in a classmethod: a factory of its class
        module = fn.module
        if name in module.functions:
            if name in module.imports and _imports_locally(fn, name):
                # `def load_data(...)` whose own body does `from .moving_mnist import load_data`
                # and calls it (OpenSTL): the local import, not itself (unless the import is
                # the script importing itself by name: The Annotated Transformer's
                # `from the_annotated_transformer import train_worker`)
                imported = self.full_symbol(module.imports[name])
                if imported is not None:
                    return imported
            return module.functions[name]
        if name in module.classes:
            return module.classes[name]
        full = module.imports.get(name)
        if full is not None and name in module.import_branches:
            full = self._import_chosen(module, name) or full
        if full is not None:
            return self.full_symbol(full)
        stars = self.__dict__.setdefault("_star_names", {})
        key = (id(module), name)
        if key not in stars:  # asked for every unbound name (builtins too): once per module and name
            stars[key] = None
            for base in _star_bases(module):
                # `from .base import *` (a package __init__ gathering its trainers): a name one of
                # those local modules defines
                if base != module.name and (base in self.by_name or base in self._waiting):
                    # (three hops: `from kit import *` of a package whose __init__ does `from
                    # .core import *`, whose own does `from .trainer import *`: a dialogue toolkit's)
                    found = self.full_symbol(f"{base}.{name}", 3)
                    if found is not None and (found.__class__ is not Module or self._binds_submodule(base, found)):
                        stars[key] = found
                        break
        return stars[key]

    def _binds_submodule(self, package: str, found: Module) -> bool:
        """`from pkg.utils import *` hands out a submodule (`seed`, then `seed.seed_everything(...)`)
        only where the package's own `__init__` imports it (`from .seed import *` binds
        `pkg.utils.seed` as the package's attribute, and a star takes every public one); a
        submodule nothing imported is no attribute yet."""
        owner = self.by_name.get(package)
        if owner is None or not found.name.startswith(package + "."):
            return False
        return any(full == found.name or full.startswith(found.name + ".") for full in owner.imports.values())

    def full_symbol(self, full: str, depth: int = 8, seen: Optional[set] = None
                    ) -> Optional[Union[Function, Klass, Module]]:
        if depth <= 0:
            return None
        # (one lookup tries each dotted name once: packages that `import *` each other's
        # modules meet again and again - SimpleReDial's nine model packages, 190,000 tries)
        seen = set() if seen is None else seen
        if full in seen:
            return None
        seen.add(full)
        owner, _, attr = full.rpartition(".")
        module = self._module(owner) if owner else None
        if module is not None:
            # `from pkg import name` reads the package's own attribute first: a function its
            # __init__ imports from a submodule of the same name (`from .build import build`)
            # hides that submodule
            if attr in module.functions:
                return module.functions[attr]
            if attr in module.classes:
                return module.classes[attr]
            target = module.imports.get(attr)
            if target and target != full:
                found = self.full_symbol(target, depth - 1, seen)
                if found is not None:
                    return found
            alias = _module_alias(module, attr)
            if alias is not None:  # `RawFramesExtractor = RawFramesExtractorCV2` at the module's top
                found = module.functions.get(alias) or module.classes.get(alias)
                if found is None and alias in module.imports:
                    found = self.full_symbol(module.imports[alias], depth - 1, seen)
                if found is not None:
                    return found
            for base in _star_bases(module):  # a package re-exporting a module's names
                if base != owner:
                    found = self.full_symbol(f"{base}.{attr}", depth - 1, seen)
                    if found is not None:
                        return found
        return self._module(full)

    def bases(self, klass: Klass) -> list[Klass]:
        """The local classes a class derives from (resolved once per class)."""
        cache = self.__dict__.get("_bases")
        if cache is None:
            cache = self.__dict__["_bases"] = {}
        found = cache.get(klass)  # (asked 160,000 times on a 200-file package: one lookup)
        if found is not None:
            return found
        # Looking a base up may read its module, and in the walk a module read walks its top
        # level, which may ask this class's bases again (CAC: `from base import BaseTrainer`
        # walks BaseTrainer.train, whose `self._train_epoch()` runs Trainer's override): that
        # nested ask looks the bases up too instead of reading an unfinished answer as "none";
        # only a third ask of one class (inheritance in a cycle) answers none.
        busy = self.__dict__.setdefault("_bases_busy", {})
        depth = busy.get(klass, 0)
        if depth >= 2:
            return []
        busy[klass] = depth + 1
        try:
            body = klass.module.body
            found = []
            deferrals = self._deferrals
            for base, node in zip(klass.bases, [b for b in klass.node.bases if dotted(b)]):
                target = self.symbol(base, body) if "." not in base else self.full_symbol(self.qualify(node, body) or base)
                if isinstance(target, Klass) and target is not klass:
                    found.append(target)
        finally:
            busy[klass] = depth
        if deferrals == self._deferrals and klass not in cache:
            cache[klass] = found  # (not where a base's module was not read yet: asked again later)
        return found

    def library_classes(self, call: ast.Call, fn: Function) -> set[str]:
        """The full names of the library classes a call constructs: `X()` of `from accelerate
        import Accelerator as X`, or a local class derived from one (`class MyAccelerator(
        accelerate.Accelerator)`, on any depth of local ancestors)."""
        found = {self.qualify(call.func, fn) or ""}
        target = self._callee_symbol(call.func, fn)
        if isinstance(target, Klass):
            found |= self.library_bases(target)
        found.discard("")
        return found

    def library_bases(self, klass: Klass) -> set[str]:
        """The full names of the library classes a local class derives from, through any depth
        of local ancestors (`class Policy(pl.LightningModule)` -> pytorch_lightning.LightningModule)."""
        found: set[str] = set()
        todo, seen = [klass], set()
        while todo and len(seen) < 16:
            klass = todo.pop()
            if klass in seen:
                continue
            seen.add(klass)
            found.update(self.qualify(node, klass.module.body) or "" for node in klass.node.bases if dotted(node))
            todo.extend(self.bases(klass))
        found.discard("")
        return found

    def library_derived(self, klass: Klass) -> bool:
        """Some class of klass's family names a base that is no local class (a library's: a
        Sampler, an Optimizer, a Dataset); `object` aside. (library_bases names the local
        ancestors too: this says whether anything beyond them is inherited.)"""
        todo, seen = [klass], set()
        while todo and len(seen) < 16:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            local = self.bases(current)
            if len([b for b in current.bases if b != "object"]) > len(local):
                return True
            todo.extend(local)
        return False

    def method(self, klass: Klass, name: str, seen: Optional[set] = None) -> Optional[Function]:
        seen = seen or set()
        if klass in seen:
            return None
        seen.add(klass)
        if name in klass.methods:
            return klass.methods[name]
        for base in self.bases(klass):
            found = self.method(base, name, seen)
            if found is not None:
                return found
        return None

    def _narrowed(self, fn: Function) -> dict:
        """The names an `if isinstance(x, K):` with K a local class makes a K in its body (EEG-GAN's
        `if isinstance(trainer, GANDDPTrainer): trainer.training(loader)`), by the id of each read
        there; an inner test overrides an outer one. Worked out once per function."""
        found = fn.__dict__.get("_narrowed")
        if found is not None:
            return found
        found = fn.__dict__["_narrowed"] = {}
        tests = fn.file.__dict__.get("_isinstance_ifs")
        if tests is None:
            # the file's `if isinstance(name, ...):` statements, in walk order: a function's own
            # are those within its lines (a walk of every function for them was 2 % of a lint)
            tests = fn.file.__dict__["_isinstance_ifs"] = [
                node for node in fn.file.of(ast.If) if node.test.__class__ is ast.Call and
                last_name(node.test.func) == "isinstance" and len(node.test.args) == 2 and
                node.test.args[0].__class__ is ast.Name]
        if not tests:
            return found
        inside = fn.node.__class__ is ast.Module
        first, last = (0, 0) if inside else (fn.node.lineno, fn.node.end_lineno)
        for node in tests:
            if not inside and not first <= node.lineno <= last:
                continue
            name = node.test.args[0].id
            klass = self._callee_symbol(node.test.args[1], fn) if node.test.args[1].__class__ in (
                ast.Name, ast.Attribute) else None
            if klass.__class__ is not Klass:
                continue
            body = [n for stmt in node.body for n in walk(stmt)]
            if any(n.__class__ is ast.Name and n.id == name and n.ctx.__class__ is ast.Store for n in body):
                continue  # bound again inside: not the object tested
            for n in body:
                if n.__class__ is ast.Name and n.id == name:
                    found[id(n)] = klass
        return found

    def class_of(self, node: ast.AST, fn: Function, depth: int = 4) -> Optional[Klass]:
        """The local class an expression is an instance of, when the source says so: built
        there, or returned by a local factory (`Trainer.from_config(cfg)` returning `cls(...)`,
        `build_trainer(cfg)` returning `Trainer(...)`). (Depth 4: a parameter's class is a step
        further than a global's, the callers' argument and then its binding.)"""
        memo = self._class_memo
        key = (id(node), id(fn), depth)
        if key in memo:
            return memo[key]
        busy = self.__dict__.get("_class_busy")
        if busy is None:
            busy = self.__dict__["_class_busy"] = set()
        if key in busy or len(busy) > 40:
            # a cycle (`a, b = a.step()` asks what `a` is through its own method's receiver), or
            # a chain of factories deeper than any author's: not known, not a crash
            return None
        busy.add(key)
        try:
            found = self._class_of(node, fn, depth)
        finally:
            busy.discard(key)
        if memo is self._class_memo:  # nothing changed while it was worked out
            memo[key] = found
        return found

    def _class_of(self, node: ast.AST, fn: Function, depth: int) -> Optional[Klass]:
        if node.__class__ is ast.Name and fn.node is not None:
            narrowed = self._narrowed(fn).get(id(node))
            if narrowed is not None:
                return narrowed
        if node.__class__ is ast.Call and node.func.__class__ is ast.Attribute and node.func.attr in SELF_RETURNING \
                and depth > 0:
            return self.class_of(node.func.value, fn, depth)  # `m.cpu().save(path)`: m's class
        if node.__class__ is ast.IfExp and depth > 0:
            # `model.module if hasattr(model, "module") else model`: the module either way
            return self.class_of(node.body, fn, depth) or self.class_of(node.orelse, fn, depth)
        if node.__class__ is ast.Attribute and node.attr == "module" and depth > 0:
            # `ddp_model.module`: the module DistributedDataParallel wraps
            for value, scope in self.values_of(node.value, fn, depth):
                if value.__class__ is ast.Call and value.args and patterns.ddp_call(self, value, scope):
                    found = self.class_of(value.args[0], scope, depth - 1)
                    if found is not None:
                        return found
        if node.__class__ is ast.Name and not fn.bindings.get(node.id) and \
                len(self._passed(node.id, fn)) > MANY_VALUES:
            return self.annotated_class(node, fn)  # (asked before its values are worked out)
        values = self.values_of(node, fn, depth)
        if len(values) > MANY_VALUES:
            # a utility's parameter every part of a framework hands something (DI-engine's
            # `to_device(item)`, 430 values from 200 callers): no one class, and asking each
            # value was 10 s of a 200-file package's lint
            return self.annotated_class(node, fn) if node.__class__ is ast.Name else None
        if node.__class__ is ast.Name and depth > 0:
            # `ds, info = get_iters()`: each name is what its position of the returned tuple holds
            unpacked = self.unpacked(node.id, fn)
            if unpacked:
                values = unpacked if values == [(node, fn)] else values + unpacked
        elif node.__class__ is ast.Attribute and node.value.__class__ is ast.Name and node.value.id == "self" \
                and depth > 0:
            # `self.train_loader, self.val_loader = init_data_loaders(...)` in a method of the
            # class: the loader that position of the returned tuple holds
            unpacked = self.unpacked_attribute(node.attr, fn)
            if unpacked:
                values = [v for v in values if v[0] is not node] + unpacked
        for value, scope in values:
            if value is not node and depth > 0 and (value.__class__ is ast.IfExp or (
                    value.__class__ is ast.Attribute and value.attr == "module") or (
                    # (`self.diffusion = diffusion.to(device)`: the object moved)
                    value.__class__ is ast.Call and value.func.__class__ is ast.Attribute
                    and value.func.attr in patterns.SELF_RETURNING)):
                found = self.class_of(value, scope, depth - 1)  # `m = model.module if ... else model`
                if found is not None:
                    return found
                continue
            if value.__class__ is ast.Call and last_name(value.func) == "cast" and len(value.args) == 2:
                # `typing.cast(DataInfo, Config.load(path))`: the author's statement of the type
                target = self._callee_symbol(value.args[0], scope)
                if target.__class__ is Klass:
                    return target
            if value.__class__ is ast.Call:
                target = self._callee_symbol(value.func, scope)
                if target.__class__ is Klass:
                    return target
                if target is None and depth > 0 and value.func.__class__ is ast.Attribute and \
                        value.func.value.__class__ is ast.Name:
                    # `Model = PosTagger; tagger = Model.build(**opts)`: a classmethod factory
                    # called on a name that holds a local class
                    built = self._factory_on_held_class(value.func, scope, depth)
                    if built is not None:
                        return built
                if target is None and value.func.__class__ is ast.Subscript:
                    spaced = [k for k in self._namespace_entries(value.func, scope) if k.__class__ is Klass]
                    if spaced:
                        return spaced[0]  # `module.__dict__[name](cfg)`
                    # `REGISTRY[key](cfg)`: the classes of the table (the first; built alike)
                    table = value.func.value
                    while table.__class__ is ast.Subscript:
                        table = table.value
                    entries = [k for k in self._table_entries(table, scope) if k.__class__ is Klass]
                    if entries:
                        return entries[0]
                if target is None and value.func.__class__ is ast.Name and (self.lookup(value.func.id, scope) or (
                        # `trainer = trainer_fn(hparams=...)` of a class the caller hands in (mp.spawn's
                        # `args=(..., PreMode_trainer, ...)`): the class each caller passes
                        (value.func.id in scope.params or value.func.id in scope.kwonly)
                        and not scope.bindings.get(value.func.id))):
                    # `cls = REGISTRY[key]; trainer = cls(cfg)`: the class the name was loaded as
                    # (the first of a registry's; each is a trainer built the same way)
                    loaded = [k for k in self._loaded(value.func, scope, aliases=False) if k.__class__ is Klass]
                    if loaded:
                        return loaded[0]
                    # `runner_class = Evaluator; runner = runner_class()`: the class the name holds
                    held = [k for v, s in self.values_of(value.func, scope, 1)
                            for v in ([self._distributed_side(v, s) or self._either_side(v)[0]]
                                      if v.__class__ is ast.IfExp else [v])
                            if v.__class__ in (ast.Name, ast.Attribute) and v is not value.func
                            for k in [self._callee_symbol(v, s)] if k.__class__ is Klass]
                    if held:
                        return held[0]
                    if depth > 0:
                        # `Dataset = train_dataset; dataset = Dataset()` of a local factory function
                        # (BEV-LaneDet's config module's): the class the function returns
                        for v, s in self.values_of(value.func, scope, 1):
                            maker = self._callee_symbol(v, s) if v.__class__ in (ast.Name, ast.Attribute) \
                                and v is not value.func else None
                            if maker.__class__ is Function and maker.cls is None and \
                                    maker.node.__class__ is not ast.Module:
                                found = next((k for ret in maker.returned
                                              for k in [self.class_of(ret, maker, depth - 1)] if k is not None), None)
                                if found is not None:
                                    return found
                    # `create = build_trainer(kind); trainer = create(...)` where the builder returns
                    # `lambda *a, **k: Trainer(*a, **k)` or a nested def that builds one
                    if depth > 0:
                        for maker_call, maker_scope in self.values_of(value.func, scope, 1):
                            made = self._made_by_returned_callable(maker_call, maker_scope, depth)
                            if made is not None:
                                return made
                if target.__class__ is Function and depth > 0 and target.node.__class__ is not ast.Module:
                    for ret in target.returned:
                        found = self.class_of(ret, target, depth - 1)
                        if found is not None:
                            return self._called_on(value.func, scope, target, found)
                if target is None and depth > 0 and value.func.__class__ is ast.Attribute and \
                        value.func.value.__class__ is ast.Name and value.func.value.id == "self":
                    # `self.load_G(run_dir)` of a field that holds a local function (handed to the
                    # constructor, a partial of it): the class that function returns
                    for held in self.resolve(value.func, scope)[0]:
                        named = self.property_class(held)
                        if named is not None:
                            return named
                        if held.cls is None and held.node.__class__ is not ast.Module:
                            found = next((k for ret in held.returned
                                          for k in [self.class_of(ret, held, depth - 1)] if k is not None), None)
                            if found is not None:
                                return found
                if target is None and value.func.__class__ is ast.Call:
                    # `get_trainer(name)(cfg)`: the class the helper returns from its registry
                    made = [k for k in self._called(value.func, scope) if k.__class__ is Klass]
                    if made:
                        return made[0]
        return self.annotated_class(node, fn) if node.__class__ is ast.Name else None

    def property_class(self, method: Function) -> Optional[Klass]:
        """The local class a `@property` method returns, which a call of the attribute builds:
        `self.dataset_cls(data_dir=...)` of `@property def dataset_cls(self): return Dataset`
        (a Lightning datamodule's hook, MCRT's). None for anything else."""
        if method.cls is None or not is_property(method.node):
            return None
        return next((k for ret in method.returned for k in [self._callee_symbol(ret, method)]
                     if k.__class__ is Klass), None)

    def _made_by_returned_callable(self, maker_call: ast.AST, scope: Function, depth: int) -> Optional[Klass]:
        """The class what a maker returns builds when called: a lambda's body, a nested def's
        returns (`def build_trainer(kind): return lambda *a, **k: Trainer(*a, **k)`)."""
        if maker_call.__class__ is not ast.Call:
            return None
        maker = self._callee_symbol(maker_call.func, scope)
        if maker.__class__ is not Function or maker.node.__class__ is ast.Module:
            return None
        for ret in maker.returned:
            if ret.__class__ is ast.Lambda:
                found = self.class_of(ret.body, maker, depth - 1)
            elif ret.__class__ is ast.Name and ret.id in maker.nested:
                inner = maker.nested[ret.id]
                found = next((k for r in inner.returned for k in [self.class_of(r, inner, depth - 1)] if k), None)
            else:
                continue
            if found is not None:
                return found
        return None

    def _factory_on_held_class(self, func: ast.Attribute, fn: Function, depth: int) -> Optional[Klass]:
        held = []
        for v, s in self.values_of(func.value, fn, 1):
            if v is not func.value and v.__class__ in (ast.Name, ast.Attribute):
                k = self._callee_symbol(v, s)
                if k.__class__ is Klass:
                    held.append(k)
            elif _option_read(v) is not None:
                # `Model = opts.pop("Model")` of `parser.set_defaults(Model=PosTagger)` (supar)
                held.extend(self._set_default_classes().get(_option_read(v), []))
        if not held:
            return None
        method = self.method(held[0], func.attr)
        if method is None or method.node.__class__ is ast.Module:
            return None
        for ret in method.returned:
            found = self.class_of(ret, method, depth - 1)
            if found is not None:
                return held[0] if found is held[0] or self._derives(held[0], found) else found
        return None

    def _set_default_classes(self) -> dict[str, list[Klass]]:
        """`parser.set_defaults(Model=PosTagger)` anywhere in the program: option name -> the
        local classes given as its default."""
        return {k: [s for s in v if s.__class__ is Klass] for k, v in self._set_default_symbols().items()}

    def _set_default_symbols(self) -> dict[str, list]:
        """`parser.set_defaults(Model=PosTagger)`, `train_parser.set_defaults(func=train)`
        anywhere in the program: option name -> the local classes and functions given as its
        default (each module read once, as the walk adds them)."""
        seen, found = self.__dict__.get("_set_defaults") or (0, {})
        if seen != len(self.modules):
            self.__dict__["_set_defaults"] = (len(self.modules), found)
            for module in self.modules[seen:]:  # (modules are only ever added)
                if module.body is None or "set_defaults" not in "\n".join(module.file.lines):
                    continue
                for call in module.file.of(ast.Call):
                    if last_name(call.func) != "set_defaults":
                        continue
                    for kw in call.keywords:
                        k = self._callee_symbol(kw.value, module.body) if kw.arg else None
                        if k.__class__ is Klass or (k.__class__ is Function and k.node.__class__ is not ast.Module):
                            found.setdefault(kw.arg, []).append(k)
        return self.__dict__["_set_defaults"][1]

    def _distributed_side(self, choice: ast.IfExp, fn: Function) -> Optional[ast.AST]:
        """`GroupSaver if distributed else OneProcessSaver`: the side a distributed run takes,
        where the test says whether the run is distributed at all; None for any other test."""
        ranks = self.ranks
        if ranks.single_process(choice.test, fn):
            return choice.orelse
        if ranks.uniform(choice.test, fn):
            return choice.body
        return None

    def returned_classes(self, call: ast.Call, fn: Function, depth: int = 3) -> list:
        """Every local class a local factory the call runs may return, through the factories it
        returns from in turn, depth levels down (at most 8): one per dataset name of a catalogue
        (`build_dataset(cfg)` -> `DatasetCatalog.get(name, ...)`), where class_of names the
        first. Each as (class, the call that builds it, that call's scope): what the
        constructor is handed there, not at the outer call, decides its tests."""
        found, seen = [], set()
        todo = [(call, fn, depth)]
        while todo and len(found) < 8:
            made, where, left = todo.pop()
            target = self._callee_symbol(made.func, where)
            if target.__class__ is Klass:
                if all(target is not k for k, _, _ in found):
                    found.append((target, made, where))
            elif target.__class__ is Function and left > 0 and target.node.__class__ is not ast.Module \
                    and id(target) not in seen:
                seen.add(id(target))
                todo += [(v, s, left - 1) for ret in target.returned for v, s in self.values_of(ret, target, 1)
                         if v.__class__ is ast.Call]
        return found

    def _either_side(self, choice: ast.IfExp) -> list:
        """The sides of `A if test else B` a run may take: the one the options as launched settle
        (defaults.settled), else both, the body first."""
        truth = defaults.settled(choice.test, self)
        return [choice.body] if truth is True else [choice.orelse] if truth is False else [choice.body, choice.orelse]

    def _called_on(self, func: ast.AST, fn: Function, factory: Function, found: Klass) -> Klass:
        """A classmethod factory's `cls(...)` is the class it is called on: `Trainer.build(cfg)`
        with `build` inherited from `Base` builds a Trainer (SCRL's init_from_config), whose own
        methods then run."""
        if found is factory.cls and func.__class__ is ast.Attribute and func.value.__class__ is ast.Name:
            owner = self.symbol(func.value.id, fn)
            if owner.__class__ is Klass and owner is not found and self._derives(owner, found):
                return owner
        return found

    def _derives(self, klass: Klass, base: Klass, depth: int = 8) -> bool:
        if depth <= 0:
            return False
        return any(b is base or self._derives(b, base, depth - 1) for b in self.bases(klass))

    def annotated_class(self, name: ast.Name, fn: Function) -> Optional[Klass]:
        """The local class a name is declared as, where its values do not show one: a parameter
        `def __init__(self, cfg: TrainConfig)`, a variable `trainer: Trainer | None = None` later
        set by `config.build()`. The author's own statement of the type."""
        scope: Optional[Function] = fn
        while scope is not None:
            notes = scope.__dict__.get("_annotations")
            if notes is None:
                notes = scope.__dict__["_annotations"] = _annotations(scope)
            note = notes.get(name.id)
            if note is not None:
                target = self._callee_symbol(note, scope)
                return target if target.__class__ is Klass else None
            if name.id in scope.params or name.id in scope.bindings:
                return None  # a name of this scope without a declared type
            scope = scope.parent
        return None

    def callee(self, func: ast.AST, fn: Function) -> Optional[Union[Function, Klass, Module]]:
        """The local function or class a call's target names (`f`, `Cls`, `module.f`), if any."""
        return self._callee_symbol(func, fn)

    @staticmethod
    def is_class(symbol) -> bool:
        return isinstance(symbol, Klass)

    @staticmethod
    def does_nothing(klass) -> bool:
        """A local class whose methods do nothing (pass, `return None`, a docstring), a no-op
        stand-in (a `__getattr__` handing out one of them answers every other call)."""
        if not isinstance(klass, Klass) or not klass.methods:
            return False
        for method in klass.methods.values():
            body = [s for s in getattr(method.node, "body", []) if not (s.__class__ is ast.Expr and
                                                                      s.value.__class__ is ast.Constant)]
            if method.name == "__getattr__":
                continue  # hands out one of the others
            if not all(s.__class__ is ast.Pass or (s.__class__ is ast.Return and (
                    s.value is None or (s.value.__class__ is ast.Constant and s.value.value is None))) for s in body):
                return False
        return True

    @staticmethod
    def is_function(symbol) -> bool:
        return isinstance(symbol, Function)

    def _callee_symbol(self, func: ast.AST, fn: Function):
        cls = func.__class__  # exact classes (nothing subclasses them): asked 18,000 times on open_clip
        if cls is ast.Name:
            return self.symbol(func.id, fn)
        if cls is ast.Attribute and func.value.__class__ is ast.Name:
            owner = self.symbol(func.value.id, fn)
            if owner.__class__ is Module:
                return owner.functions.get(func.attr) or owner.classes.get(func.attr) or \
                    self.full_symbol(f"{owner.name}.{func.attr}")
            if owner.__class__ is Klass:  # `Trainer.from_config(cfg)`: a class's own method
                return self.method(owner, func.attr)
            if owner is None and func.value.id not in fn.params and func.value.id not in fn.bindings:
                held = self._class_from_table(func.value, fn)
                if held is not None:  # `PipelineConfig = CONFIGS["iust"]; PipelineConfig.make_model()`
                    return self.method(held, func.attr)
        elif cls is ast.Attribute and func.value.__class__ is ast.Attribute:
            # `models.backbones.Darknet53()` after `import models.backbones`: a submodule's own
            root = func.value
            while root.__class__ is ast.Attribute:
                root = root.value
            if root.__class__ is ast.Name and self.symbol(root.id, fn).__class__ is Module:
                full = self.qualify(func, fn)
                found = self.full_symbol(full) if full else None
                return found if found.__class__ in (Function, Klass) else None
        return None

    def _class_from_table(self, name: ast.Name, fn: Function) -> Optional[Klass]:
        """The local class a global holds when it is bound once, to an entry of a table literal
        at a constant key (`CONFIGS = {"ethz": C.Ethz, "iust": C.Iust}; PipelineConfig =
        CONFIGS["iust"]`); None otherwise. Worked out once per name and module."""
        memo = self.__dict__.get("_table_classes")
        if memo is None:
            memo = self.__dict__["_table_classes"] = {}
        key = (id(fn.module), name.id)
        if key in memo:
            return memo[key]
        memo[key] = None  # (a cycle: not known)
        found = None
        values = self.values_of(name, fn, 1)
        if len(values) == 1 and values[0][0].__class__ is ast.Subscript and \
                values[0][0].slice.__class__ is ast.Constant and values[0][0].value.__class__ is ast.Name:
            value, scope = values[0]
            classes = {id(k): k for k in self._table_entries(value.value, scope, path=[value.slice])
                       if k.__class__ is Klass}
            if len(classes) == 1:
                found = next(iter(classes.values()))
        memo[key] = found
        return found

    def resolve(self, func: ast.AST, fn: Function) -> tuple[list[Function], list[Function]]:
        """(functions a call reaches, local methods of the same name when the receiver is unknown).
        Once the walk is done the program no longer grows but by a module read late (which
        clears it, _changed) or a class built: the rules ask the same call ten times over
        (23,000 asks of 2,600 calls on a 34-file package), so each answer is kept till then."""
        if self._phase != "done":
            self.in_budget()
            return self._resolve(func, fn)
        memo = self.__dict__.get("_resolve_memo")
        generation = (len(self.files), len(self.built_classes))
        if memo is None or memo[0] != generation:
            memo = self.__dict__["_resolve_memo"] = (generation, {})
        key = (id(func), id(fn))
        hit = memo[1].get(key)
        if hit is not None and hit[0] is func and hit[1] is fn:
            return list(hit[2]), list(hit[3])  # (copies: callers extend what they are given)
        self.in_budget()
        found = self._resolve(func, fn)
        memo[1][key] = (func, fn, tuple(found[0]), tuple(found[1]))
        return found

    def _resolve(self, func: ast.AST, fn: Function) -> tuple[list[Function], list[Function]]:
        cls = func.__class__  # exact classes, as in _callee_symbol
        if cls is ast.Name:
            target = self.symbol(func.id, fn)
            if target.__class__ is Function:
                return [target, *target.__dict__.get("_alternatives", ())], []
            if target.__class__ is Klass:
                init = self.method(target, "__init__")
                return ([init] if init else []), []
            klass = self.class_of(func, fn)
            if klass is not None:
                call = self.method(klass, "__call__")
                if call is not None or not self._called(func, fn):
                    return ([call] if call else []), []
                # (an instance without __call__ is not what is called: `trainer =
                # create_trainer(cfg)` then `trainer = trainer(model, ...)` - the name held the
                # class a factory picked, and the call builds it)
            if target is None and (func.id in fn.params or func.id in fn.kwonly) and not fn.bindings.get(func.id):
                # `validate_func(model, batches)` of a parameter the callers hand a local function
                # (`train(net, ..., validate, ...)`): that function runs here (TinyNeuralNetwork)
                passed = [t for t in self._loaded(func, fn, 2, aliases=False)
                          if t.__class__ is Function and t.node.__class__ is not ast.Module]
                if passed:
                    return passed, []
            if target is not None:
                return [], []
            looped = self._loop_items(func, fn)
            if looped:
                return looped, []
            # (or a class a helper picks by a name known at run time, handed on: `agent_cls =
            # get_agent_cls(cfg.agent)`, then the spawned rank's `agent = agent_cls(cfg, rank=i)`)
            return self._entries(self._called(func, fn)) or self._entries(self._picked_by_name(func, fn)), []
        if cls is ast.Call:
            evaluated = self._evaluated_names(func, fn)
            if evaluated:
                # `eval('get_{}'.format(cfg.dataset))(cfg)`: each function or class of that shape
                return self._entries(evaluated), []
            return self._entries(self._called(func, fn)), []
        if cls is ast.Subscript and func.value.__class__ is ast.Attribute and func.value.attr == "__dict__":
            # `core.__dict__[version].__dict__["Trainer"](cfg)` (ProPainter): a module's namespace
            return self._entries(self._namespace_entries(func, fn)), []
        if cls is ast.Subscript and func.value.__class__ is ast.Call:
            # `globals()["run_" + args.task]()`: each function of the module that name may spell
            return self._entries(self._evaluated_names(func, fn)), []
        if cls is ast.Subscript:  # `BACKENDS[args.backend](args)`: any entry of a literal table
            table, path = func, []
            while table.__class__ is ast.Subscript:  # `LOADERS[name]["train"](args)`
                path.insert(0, table.slice)
                table = table.value
            return self._entries(self._table_entries(table, fn, path=path)), []
        if cls is not ast.Attribute:
            return [], []
        receiver, attr = func.value, func.attr
        if receiver.__class__ is ast.Name and receiver.id in ("self", "cls"):
            klass = self._class_of_fn(fn)
            if klass is not None:
                found = self.method(klass, attr)
                if found is not None:
                    if _stub(found.node):  # a template method's hook: what the subclasses put there runs
                        return [found, *self._overrides(klass, attr, fn.name)], []
                    shadowed = self._shadowed(klass, attr, fn.name, found)
                    return (shadowed or [found]), []
                inner = self.class_of(func, fn)
                if inner is not None:
                    call = self.method(inner, "__call__")
                    return ([call] if call else []), []
                # `self._backward = backward_fn` in __init__, then `self._backward(loss)`: the
                # function the attribute holds (sparseml's module trainer)
                held = [t for value, scope in self.values_of(func, fn, 1) if value is not func
                        for t in self.reference(value, scope)]
                if held:
                    return held, []
                # `self.save_pretrained(...)` in a mixin without one (a vendored PushToHubMixin):
                # self is an instance of a subclass, so what runs is a subclass's method (by its
                # own bases' order), never a same-named method of an unrelated class
                # (a library base's method, where no local subclass has one: none of ours)
                self._named(attr)  # (reads the quiet modules that define one: a subclass may be there)
                family = self._descendants(klass)
                overrides = list(dict.fromkeys(m for d in family if (m := self.method(d, attr)) is not None))
                if overrides and len(overrides) <= _HOOK_OVERRIDES and all(m.cls is not None and self._derives(
                        m.cls, klass) for m in overrides):
                    # a template method's hook the base leaves out (GIMM-VFI's `self.logging(...)`
                    # in the base's run_epoch, each trainer its own): a subclass's runs, as for
                    # a stub (_stub) - the way in for what they do under the base's rank tests
                    return overrides, []
                return [], overrides
            return [], self._named(attr)
        if receiver.__class__ is ast.Subscript:
            # `DsetBuilderFactory.valid_builders[name].get_loaders(args)`: that method of each class
            # the literal table holds
            table, path = receiver, []
            while table.__class__ is ast.Subscript:
                path.insert(0, table.slice)
                table = table.value
            # (read: the method runs, so the modules of the classes it may be of are read)
            found = [m for k in self._table_entries(table, fn, read=True, path=path) if k.__class__ is Klass
                     for m in [self.method(k, attr)] if m is not None]
            if found:
                return list(dict.fromkeys(found)), []
        if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name) and receiver.func.id == "super":
            klass = self._class_of_fn(fn)
            for base in (self.bases(klass) if klass else ()):
                found = self.method(base, attr)
                if found is not None:
                    return [found], []
            return [], []
        if isinstance(receiver, ast.Name):
            owner = self.symbol(receiver.id, fn)
            if isinstance(owner, Module):
                found = owner.functions.get(attr) or owner.classes.get(attr) or \
                    self.full_symbol(f"{owner.name}.{attr}")
                target = self.method(found, "__init__") if isinstance(found, Klass) else found
                return ([target] if isinstance(target, Function) else []), []
            if isinstance(owner, Klass):
                found = self.method(owner, attr)
                return ([found] if found else []), []
            if owner is None and receiver.id in fn.module.imports and not self.lookup(receiver.id, fn):
                return [], []  # torch.save, np.save: a library's function, not a local method
            if owner is None and self.lookup(receiver.id, fn):  # `mod = import_module("pkg.train")`
                found = [m.functions.get(attr) or m.classes.get(attr) for m in self._loaded(receiver, fn)
                         if m.__class__ is Module]
                if any(found):
                    return self._entries([f for f in found if f is not None]), []
        if receiver.__class__ is ast.Attribute:  # `onmt.utils.distributed.all_gather_list(x)`
            root = receiver
            while root.__class__ is ast.Attribute:
                root = root.value
            # (a namespace package, without __init__.py, is no module of its own: its import is the way in)
            if root.__class__ is ast.Name and (self.symbol(root.id, fn).__class__ is Module
                                               or (root.id in fn.module.imports and not self.lookup(root.id, fn))):
                full = self.qualify(func, fn)
                found = self.full_symbol(full) if full else None
                if found.__class__ is Function or found.__class__ is Klass:
                    target = self.method(found, "__init__") if found.__class__ is Klass else found
                    return ([target] if target is not None else []), []
        if receiver.__class__ is ast.Call and (last_name(receiver.func) or "") in IMPORTERS:
            # `importlib.import_module(f"apps.{name}.train").main(cfg)`: that function of each
            # module the name may load
            found = [m.functions.get(attr) or m.classes.get(attr) for m in self._loaded(receiver, fn)
                     if m.__class__ is Module]
            if any(found):
                return self._entries([f for f in found if f is not None]), []
        if receiver.__class__ is ast.Call and last_name(receiver.func) == "getattr" and len(receiver.args) >= 2 \
                and name_pattern(receiver.args[1]) is None:
            # `getattr(func, cfg.train.fn).main(cfg)` (AVT): a submodule of a local package picked
            # by a configured name; each submodule the package holds that has the function may run
            found = [m.functions.get(attr) or m.classes.get(attr)
                     for m in self._held_modules(receiver.args[0], fn)]
            found = [f for f in found if f is not None]
            if 0 < len(found) <= 8:
                return self._entries(found), []
        if receiver.__class__ is ast.Attribute and receiver.value.__class__ is ast.Name and receiver.value.id == "self":
            # `self.data_module = vid_data` (a local module), then `self.data_module.data_loader(opts)`
            # (viser's trainer): that module's function
            held = [(v, scope) for v, scope in self.values_of(receiver, fn, 1) if v is not receiver]
            modules = [m for v, scope in held if v.__class__ in (ast.Name, ast.Attribute)
                       for m in [self._callee_symbol(v, scope)] if m.__class__ is Module]
            # (`self.method = getattr(methods, cfg.METHOD)`, then `self.method.train(...)`: a
            # submodule of a local package a configured name picks, as just above - se-cff)
            modules += [m for v, scope in held if v.__class__ is ast.Call and last_name(v.func) == "getattr"
                        and len(v.args) >= 2 and name_pattern(v.args[1]) is None
                        for m in self._held_modules(v.args[0], scope)]
            found = [m.functions.get(attr) or m.classes.get(attr) for m in modules]
            if any(found):
                return self._entries([f for f in found if f is not None]), []
        klass = self.class_of(receiver, fn)
        if isinstance(receiver, ast.Call):
            target = self._callee_symbol(receiver.func, fn)
            klass = target if isinstance(target, Klass) else klass
        if klass is not None:
            found = self.method(klass, attr)
            if receiver.__class__ is ast.Name:
                # `if mode == "train": runner = Trainer(...)` / `if mode == "predict": runner =
                # Predictor(...)`, then `runner.run()`: each class's method may be the one
                # (every class must answer the call: `saver = Saver()` on rank 0 and `NoOp()`, whose
                # `__getattr__` swallows every call, elsewhere is a null object, not a choice of
                # runners; nor one a rank test picks, which the save and collective rules read)
                values = [(v, scope) for v, scope in self.values_of(receiver, fn) if v.__class__ is ast.Call]
                walked = {id(c): guards for c, guards, _ in fn.calls}
                built = list(dict.fromkeys(k for v, scope in values for k in [self._callee_symbol(v.func, scope)]
                                           if k.__class__ is Klass and k is not klass))
                more = [m for k in built if (m := self.method(k, attr)) is not None and m is not found]
                if found is not None and more and len(more) == len(built) and \
                        all(scope is fn and walked.get(id(v)) == () for v, scope in values):
                    return list(dict.fromkeys(([found] if found else []) + more)), []
                if found is None and more and self.does_nothing(klass):
                    # `restorer = Restorer(...)`, and `NoOp()` where the rank test fails: the real
                    # class's method where it runs (the walk reads the rank test off the bindings)
                    return list(dict.fromkeys(more)), []
            return ([found] if found else []), []
        if receiver.__class__ is ast.Name:  # `for part in self.parts: part.dataset()`
            found = [m for k in self._element_classes(receiver.id, fn) if (m := self.method(k, attr)) is not None]
            if found:
                return list(dict.fromkeys(found)), []
            # `runner = getattr(runners, cfg.runner_type)(cfg); runner.train()`: each candidate's
            # (or `loader_type = getattr(dataset_module, cfg.type)`, the class itself, then
            # `loader_type.from_config(cfg, ds)`: each candidate's classmethod)
            found = [m for v, scope in self.values_of(receiver, fn) if v.__class__ is ast.Call
                     for k in (self._runtime_classes(v, scope) if v.func.__class__ is ast.Name
                               and v.func.id == "getattr" else
                               self._runtime_classes(v.func, scope) or self._module_factory_classes(v, scope))
                     if (m := self.method(k, attr)) is not None]
            if found:
                return list(dict.fromkeys(found)), []
        if receiver.__class__ is ast.Name or receiver.__class__ is ast.Attribute:
            handed = self._subcommand_functions(attr)
            if handed:
                # `args.func(args)` after `train_parser.set_defaults(func=train)`: argparse hands
                # the parsed options the function of the subcommand the command line names
                return self._entries(handed), []
        weak = self._named(attr)
        if weak:
            # (a class whose every object one name of one function holds is no other receiver's)
            weak = [w for w in weak if w.cls is None or (holder := sole_holder(self, w.cls)) is None
                    or (holder[0] is fn and receiver.__class__ is ast.Name and receiver.id == holder[1])]
        if weak and attr in SELF_RETURNING and any(self.ddp_call(v, s) for v, s in self.values_of(receiver, fn)):
            return [], []  # `self.model.train()` on a DDP model: nn.Module.train, not the script's Trainer.train
        if weak and library_made(self, receiver, fn):
            return [], []  # `frames[0].save(...)` over PIL images is no local class's `save`
        return [], weak

    def _subcommand_functions(self, attr: str) -> list[Function]:
        """The local functions argparse's `set_defaults(<attr>=f)` hands the parsed options (one
        per subcommand)."""
        return [f for f in self._set_default_symbols().get(attr, ()) if f.__class__ is Function]

    def _element_classes(self, name: str, fn: Function) -> list[Klass]:
        """The local classes of the items a `for name in <list>` loop of fn iterates, where the
        list is a literal of built objects (`self.parts = [Snapshot()]`, `self.parts +=
        [MeanMap()]`, `self.parts.append(Gauge())`): every one of them gets the loop's calls."""
        by_target = fn.__dict__.get("_for_targets")
        if by_target is None:  # asked for every method call on a plain name: one pass per function
            by_target = fn.__dict__["_for_targets"] = {}
            for n in fn.own_of(ast.For):
                if n.target.__class__ is ast.Name:
                    by_target.setdefault(n.target.id, []).append((n, n.iter))
                elif n.target.__class__ is ast.Tuple:
                    # `for d_set, name in zip(datasets, names)`, `for i, part in enumerate(parts)`:
                    # each name iterates its own argument of zip / enumerate's one
                    for name_, iterated in _paired_iterables(n.target, n.iter):
                        by_target.setdefault(name_, []).append((n, iterated))
        loops = by_target.get(name, [])
        found: list[Klass] = []
        for loop, iterated in loops:
            items: list[tuple[ast.AST, Function]] = []
            for value, scope in self.values_of(iterated, fn, 2):
                if value.__class__ in (ast.List, ast.Tuple, ast.Set):
                    items += [(elt, scope) for elt in value.elts]
            key = dotted(iterated)
            klass = self._class_of_fn(fn) if key and key.startswith("self.") and key.count(".") == 1 else None
            for method in (klass.methods.values() if klass is not None else ()):
                for node in method.own:  # `self.parts += [...]`, `self.parts.append(...)`
                    if node.__class__ is ast.AugAssign and dotted(node.target) == key and \
                            node.value.__class__ in (ast.List, ast.Tuple):
                        items += [(elt, method) for elt in node.value.elts]
                    elif node.__class__ is ast.Call and node.func.__class__ is ast.Attribute and \
                            node.func.attr == "append" and dotted(node.func.value) == key and node.args:
                        items.append((node.args[0], method))
            for item, scope in items:
                if item.__class__ is ast.Call:
                    target = self._callee_symbol(item.func, scope)
                    if target.__class__ is Klass:
                        found.append(target)
                elif item.__class__ is ast.Name:  # `[train, val, test]`: what each name holds
                    found += self._name_classes(item, scope)
        return found

    def _name_classes(self, name: ast.Name, fn: Function) -> list[Klass]:
        """The local classes a name holds: built by `K(...)` where it is bound, declared
        (`x: K`), or unpacked from a local function whose return annotation says which
        (`train, val, test = split(ds)` with `def split(...) -> tuple[Dataset, Dataset, Dataset]`)."""
        declared = self.annotated_class(name, fn)
        if declared is not None:
            return [declared]
        found: list[Klass] = []
        for value, scope in self.values_of(name, fn, 1):
            if value.__class__ is ast.Call:
                target = self._callee_symbol(value.func, scope)
                if target.__class__ is Klass:
                    found.append(target)
                elif target.__class__ is Function:
                    found += self._returned_classes(target, None)
        for node in fn.own_of(ast.Assign):
            if len(node.targets) == 1 and node.targets[0].__class__ is ast.Tuple and \
                    node.value.__class__ is ast.Call:
                names = [t.id if t.__class__ is ast.Name else None for t in node.targets[0].elts]
                if name.id in names:
                    target = self._callee_symbol(node.value.func, fn)
                    if target.__class__ is Function:
                        found += self._returned_classes(target, (names.index(name.id), len(names)))
        return list(dict.fromkeys(found))

    def _returned_classes(self, target: Function, position: Optional[tuple[int, int]]) -> list[Klass]:
        """The local class a function's return annotation names (`-> Dataset`), or at `position`
        (index, width) of a tuple it returns (`-> tuple[Dataset, Dataset]`, `Tuple[...]`)."""
        note = getattr(target.node, "returns", None)
        if note is None:
            return []
        if position is not None:
            if not (note.__class__ is ast.Subscript and last_name(note.value) in ("tuple", "Tuple")
                    and note.slice.__class__ is ast.Tuple and len(note.slice.elts) == position[1]):
                return []
            note = note.slice.elts[position[0]]
        found = self._callee_symbol(note, target.parent or target) if note.__class__ in (ast.Name, ast.Attribute) else None
        return [found] if found.__class__ is Klass else []

    def _table_entries(self, table: ast.AST, fn: Function, read: bool = False,
                       path: Optional[list] = None) -> list:
        """The local functions and classes a table literal holds (`{"nccl": ddp.Backend, None:
        single.Backend}`, `[train_a, train_b]`), the table itself or named where it is
        subscripted. Unless `read`, only entries in modules already read: a registry of a model zoo (OpenPCDet's
        `__all__ = {"PointPillar": PointPillar, ...}`) does not make every quiet module of the zoo
        read (twice the statements, three times the time, for no finding)."""
        found: list = []
        # read: the entries' modules are read if they are not yet (a dataset registry feeding a
        # training loader: which class draws is the question)
        peeking, self._peeking = self._peeking, not read
        try:
            for value, scope in self.values_of(table, fn):
                if value.__class__ not in _TABLES:
                    continue
                entries = [(e, 1) for e in _rows(value, path, 0)]
                if table.__class__ is ast.Name:
                    # `DATALOADER_DICT = {}` then `DATALOADER_DICT["msrvtt"] = {"train": ...}`
                    entries.extend((n.value, 1) for n in scope.own if n.__class__ is ast.Assign
                                   and any(t.__class__ is ast.Subscript and t.value.__class__ is ast.Name
                                           and t.value.id == table.id and _key_fits(t.slice, path, 0)
                                           for t in n.targets))
                for entry, level in entries:
                    if entry.__class__ in _TABLES and len(entries) < 400:
                        # `LOADERS = {"msrvtt": {"train": build_train, "val": build_val}}` read as
                        # `LOADERS[name]["train"](args)`: the inner tables' entries too (those whose
                        # key the subscript spells, where it spells one)
                        entries.extend((e, level + 1) for e in _rows(entry, path, level))
                        continue
                    if entry.__class__ is ast.Name or entry.__class__ is ast.Attribute:
                        symbol = self._callee_symbol(entry, scope)
                        if symbol.__class__ is Function and path is not None and len(path) > level:
                            # (`LOADERS["video"] = video_loader` beside `LOADERS["msrvtt"] = {...}`,
                            # read as `LOADERS[kind]["test"](args)`: a function is no table to
                            # subscript again, so it is not what that read calls)
                            continue
                        if symbol.__class__ is Function or symbol.__class__ is Klass:
                            found.append(symbol)
                if table.__class__ is ast.Name:
                    found.extend(self._decorated_entries(table.id, scope.module))
            if table.__class__ is ast.Name or table.__class__ is ast.Attribute:
                # `DETECTOR = Registry()` filled by `@DETECTOR.register_module(...)` on classes
                found.extend(self._registered_with(last_name(table) or ""))
            if table.__class__ is ast.Name and not isinstance(fn.node, ast.Module):
                # `cfg = make_cfg(); cfg["make_loaders"] = build; run(cfg)` read in run as
                # `cfg["make_loaders"](**cfg)`: what the callers store into the dict they hand in
                handed, todo = [], [(table.id, fn, 3)]
                while todo:  # (a few calls up: `main` -> `train(config)` -> `worker(config)`)
                    name, scope, depth = todo.pop()
                    for value, caller in self._passed(name, scope):
                        if value.__class__ is ast.Name and len(handed) < 16:
                            handed.append((value, caller))
                            if depth > 1:
                                todo.append((value.id, caller, depth - 1))
                for value, caller in handed:
                    for n in caller.own_of(ast.Assign):
                        if n.value.__class__ in (ast.Name, ast.Attribute) and any(
                                t.__class__ is ast.Subscript and t.value.__class__ is ast.Name
                                and t.value.id == value.id and _key_fits(t.slice, path, 0) for t in n.targets):
                            symbol = self._callee_symbol(n.value, caller)
                            if symbol.__class__ is Function or symbol.__class__ is Klass:
                                found.append(symbol)
        finally:
            self._peeking = peeking
        return found

    def _registered_with(self, table: str) -> list:
        """The classes and functions decorated `@TABLE.register_module(...)` / `@TABLE.register()`
        (a registry object of the project's own, mmcv's or detectron2's kind): what `TABLE[name]`
        may hand out."""
        memo = self.__dict__.setdefault("_registry_memo", {})
        # (a module read since, for its registrations, asks again)
        sizes = (len(self.classes), len(self.functions))
        if (table, sizes) in memo:
            return memo[(table, sizes)]
        # (each owner's decorators read once, not once a table: 76 tables over 7,000 owners
        # took 0.2 s on a 200-file package)
        index = self.__dict__.get("_registry_index")
        if index is None or index[0] != sizes:
            tables: dict[str, list] = {}
            for owner in [*self.classes, *self.functions]:
                # (each owner's tables read off its decorators once: the index is made again
                # after each module read, 9 times over 2,800 owners on h130A_cascast)
                names = owner.__dict__.get("_registered_in")
                if names is None:
                    names = owner.__dict__["_registered_in"] = tuple(dict.fromkeys(
                        last_name(func.value) for func in _registrations(owner.node)
                        if func.__class__ is ast.Attribute))
                for name in names:
                    tables.setdefault(name, []).append(owner)
            index = self.__dict__["_registry_index"] = (sizes, tables)
        found = list(index[1].get(table, ())) if table else []
        memo[(table, sizes)] = found
        return found

    def _decorated_entries(self, table: str, module: "Module") -> list:
        """`TRAINERS[cls.__name__] = cls` inside `def register(cls)` (or inside the decorator a
        `register(name)` call returns), used as `@register` on classes: those classes."""
        memo = self.__dict__.setdefault("_decorated", {})
        key = (table, id(module), self._peeking)
        if key in memo:
            return memo[key]
        registrars = set()
        todo = list(module.functions.values())
        while todo and len(todo) < 2000:
            fn = todo.pop()
            todo.extend(fn.nested.values())
            if any(n.__class__ is ast.Assign and n.value.__class__ is ast.Name and n.value.id in fn.params
                   and any(t.__class__ is ast.Subscript and t.value.__class__ is ast.Name and t.value.id == table
                           for t in n.targets) for n in fn.own):
                registrars.add(fn.name)
                if fn.parent is not None:
                    registrars.add(fn.parent.name)  # `@register("sft")`: the outer call's decorator
        found: list = []
        if registrars:
            if not self._peeking:
                # the classes such a decorator files are in modules imported only for that
                # (`from . import wrapper` in the package's __init__): nothing else names them,
                # so they wait unread; a read lookup reads the ones that use the decorator
                self.read_waiting(re.compile(r"^[ \t]*@(?:\w+\.)?(?:%s)\b" % "|".join(sorted(registrars)),
                                             re.MULTILINE), 16)

            def named(d: ast.AST, klass: Klass) -> bool:
                func = d.func if d.__class__ is ast.Call else d
                if last_name(func) not in registrars:
                    return False
                # (another table's decorator of the same name - the models' `@register` beside
                # the datasets' - resolves to that table's module)
                targets = self.resolve(func, klass.module.body)[0] if klass.module.body else []
                return not targets or any(t.module is module for t in targets)
            found = [k for k in self.classes if any(named(d, k) for d in k.node.decorator_list)]
        memo[key] = found
        return found

    def _loop_items(self, func: ast.Name, fn: Function) -> list:
        """The local functions a name bound by a `for` over a list of them runs (`for eval_fn in
        self.eval_fns: eval_fn(model)` of `eval_fns=[eval_fn(task) for task in tasks]`, each a
        closure a factory returns): the list's items as the source builds it - a literal, a
        comprehension, handed through fields and parameters (a few steps)."""
        loop = next((n for n in fn.own_of(ast.For) if n.target.__class__ is ast.Name and n.target.id == func.id
                     and n.lineno <= func.lineno <= (n.end_lineno or n.lineno)), None)
        if loop is None or fn.bindings.get(func.id, [None])[1:]:
            return []  # (not a name the loop alone binds)
        found: list = []
        todo, seen = [(loop.iter, fn, 4)], set()
        while todo and len(seen) < 40:
            node, scope, depth = todo.pop()
            if id(node) in seen or depth <= 0:
                continue
            seen.add(id(node))
            if node.__class__ is ast.IfExp:
                todo += [(node.body, scope, depth), (node.orelse, scope, depth)]
            elif node.__class__ in (ast.List, ast.Tuple, ast.ListComp):
                items = [node.elt] if node.__class__ is ast.ListComp else node.elts
                # (a call: the closure its function returns, `return fn` of a nested `def fn`)
                found += [t for item in items if item.__class__ is ast.Call and item.func.__class__ is ast.Name
                          for maker in [self._callee_symbol(item.func, scope)]
                          if maker.__class__ is Function and maker.node.__class__ is not ast.Module
                          for t in _returned_closures(maker)]
                found += [t for item in items if item.__class__ in (ast.Name, ast.Attribute)
                          for t in self.resolve(item, scope)[0]]
            elif node.__class__ in (ast.Name, ast.Attribute):
                todo += [(v, where, depth - 1) for v, where in self.values_of(node, scope, 2) if v is not node]
        return [t for t in found if t.__class__ is Function and t.node.__class__ is not ast.Module]

    def attribute_of_loaded(self, func: ast.AST, fn: Function) -> list:
        """`Model = importlib.import_module(cfg.model_module_path).Model`, then `Model(cfg)`: the
        class (or function) of that name in each module the configs name, or that its
        `__init__` imports (`from .model import PCC as Model`) - for the rules that judge what a
        configured name may build, not walked as calls (a zoo of models is not run)."""
        if func.__class__ is not ast.Name:
            return []
        found = []
        for value, scope in self.values_of(func, fn, 1):
            if not (value.__class__ is ast.Attribute and value.value.__class__ is ast.Call
                    and last_name(value.value.func) in IMPORTERS):
                return []
            for module in self._loaded(value.value, scope, 2):
                if module.__class__ is not Module:
                    continue
                held = module.classes.get(value.attr) or module.functions.get(value.attr) or \
                    (self.full_symbol(module.imports[value.attr]) if value.attr in module.imports else None)
                if (held.__class__ is Klass or held.__class__ is Function) and held not in found:
                    found.append(held)
        return found

    def _called(self, func: ast.AST, fn: Function) -> list:
        """The local functions and classes a call runs where the source loads them by name:
        `Trainer = getattr(import_module(...), "Trainer")` then `Trainer()`, or what a helper
        returns, `get_trainer(cfg)(model)`. func: a name without a symbol of its own, or a call."""
        if func.__class__ is ast.Name:
            return self._loaded(func, fn, aliases=False) if self.lookup(func.id, fn) else []
        found: list = []
        if func.__class__ is ast.Call:
            if last_name(func.func) == "getattr" or (func.args and _is_partial(func)):
                # `getattr(import_module("pkg"), "Trainer")(model)`, `partial(build, k=v)(x)`
                return self._loaded(func, fn)
            made = self._callee_symbol(func.func, fn)
            if made.__class__ is Klass:
                # `BrainTumor(data_path=p, batch_size=b)()`: the instance is called, its
                # __call__ runs (a dataset wrapper that builds and returns the loaders)
                call = self.method(made, "__call__")
                return [call] if call is not None else []
            for helper in self.resolve(func.func, fn)[0]:
                if helper.node.__class__ is not ast.Module:
                    for ret in helper.returned:
                        table = ret
                        while table.__class__ is ast.Subscript:
                            table = table.value  # `return TRAINERS[name.lower()]`: that table's entries
                        if table is ret and ret.__class__ in (ast.Name, ast.Attribute):
                            # `if cfg.name == "wiki": return WikiSource`: the local class itself
                            symbol = self._callee_symbol(ret, helper)
                            if symbol.__class__ is Klass:
                                found.append(symbol)
                                continue
                        found.extend(self._table_entries(table, helper) if table is not ret else self._loaded(ret, helper))
        return found

    def _loaded(self, node: ast.AST, fn: Function, depth: int = 3, aliases: bool = True) -> list:
        """The local modules, functions and classes a value is, where the source loads them by
        name: `importlib.import_module("pkg.train")` (a plugin spelled as an f-string: every
        module of the package that fits, sources.fits), `getattr(<one of those>, "run")`, or a
        name bound to such a value or (aliases) to a local function or class. Without aliases
        only what is loaded by name counts: `gather = all_gather if distributed else identity`
        is read where it is called, as before."""
        out: list = []
        for value, scope in self.values_of(node, fn, depth):
            kind = value.__class__
            if kind is ast.Subscript and value is not node:
                # `cls = REGISTRY[cfg.trainer]` then `cls(cfg)`: an entry of the table
                table = value.value
                while table.__class__ is ast.Subscript:
                    table = table.value
                out.extend(self._table_entries(table, scope))
                continue
            if kind is ast.Call and value is not node and value.func.__class__ is ast.Attribute and \
                    value.func.attr == "get" and value.args:
                # `cls = TRAINERS.get(name)`: the same lookup as `TRAINERS[name]` (LoongForge)
                out.extend(self._table_entries(value.func.value, scope))
                continue
            if kind is ast.Name and depth > 0 and _walks_a_namespace(scope) and not self.lookup(value.id, scope):
                # `for name, cls in modellib.__dict__.items(): if ...: model = cls` (HCFlow's
                # find_model_using_name): a class of the module a name loaded
                out.extend(self._namespace_loop_classes(value, scope, depth))
            if kind is ast.Name or kind is ast.Attribute:
                if value is not node:
                    symbol = self._callee_symbol(value, scope)
                    # without aliases, a local function picked into a name (`run = train_xl` /
                    # `run = train` on an if/else, then `run(model)`) still runs where it is called;
                    # so does a local class (`loader_cls = dataloaders.VOC` on an if/elif, then
                    # `loader_cls(cfg)`: its __init__ runs, whichever branch picked it)
                    if symbol is not None and (aliases or symbol.__class__ is Klass or (
                            kind is ast.Name and symbol.__class__ is Function and symbol.node.__class__ is not ast.Module)
                            or _module_function(self, value, scope, symbol)):
                        out.append(symbol)
                continue
            if kind is ast.IfExp and value is not node:
                # `loader_class = build_dist_loaders if not args.data_path else build_dataloaders`
                # (CDial-GPT): where both sides are local functions, the call runs one of them
                sides = [self._callee_symbol(side, scope) if side.__class__ in (ast.Name, ast.Attribute) else None
                         for side in (value.body, value.orelse)]
                # (`self._run_epoch_ddp if self._ddp else self._run_epoch`: the methods it names)
                on_self = lambda side: side.__class__ is ast.Attribute and side.value.__class__ is ast.Name \
                    and side.value.id == "self"
                sides = [next(iter(self.resolve(side, scope)[0]), None) if found is None and on_self(side) else found
                         for found, side in zip(sides, (value.body, value.orelse))]
                if all(side.__class__ is Function and side.node.__class__ is not ast.Module for side in sides):
                    # a flag that says whether the run is distributed (pragmatiq's fine-tuner:
                    # `self._ddp = world > 1`): a distributed run takes its side; the other is the
                    # one-process path, kept (one_process_picks) for the rules that judge a function
                    # on its own, not only through its callers
                    taken = self._distributed_side(value, scope)
                    if taken is None:
                        out.extend(sides)
                    else:
                        kept = 0 if taken is value.body else 1
                        out.append(sides[kept])
                        self.one_process_picks.add(sides[1 - kept])
                continue
            if kind is not ast.Call:
                continue
            if value.args and _is_partial(value) and depth > 0:
                # `get_loader = partial(get_dataloader, ddp=is_ddp)` or a helper's `return
                # partial(...)`, then `get_loader(batch_size=8)`: the wrapped function runs
                # (with the arguments the partial bound: _partials, bound in _bind_call)
                symbol = self._callee_symbol(value.args[0], scope) \
                    if value.args[0].__class__ in (ast.Name, ast.Attribute) else None
                if symbol.__class__ is Function or symbol.__class__ is Klass:
                    out.append(symbol)
                continue
            if value is not node and depth > 0 and value.func.__class__ in (ast.Name, ast.Attribute):
                # `step = make_step(accum)` where make_step returns a function it defines (a
                # closure over its counter): that function is what `step(...)` runs
                maker = self._callee_symbol(value.func, scope)
                if maker.__class__ is Function and maker.node.__class__ is not ast.Module:
                    out.extend(_returned_closures(maker))
                    # and a module's own function it picks (`eval_fn = get_task_eval_fn(task)`
                    # returning `evaluate_segmentation` on one side of an if/elif: each may run)
                    # (or a class it names, `return TrainerGIMMVFI` on one side: GIMM-VFI's
                    # create_trainer, then `trainer(model, ...)` builds the one picked)
                    out.extend(symbol for r in maker.returned if r.__class__ is ast.Name and r.id not in maker.nested
                               for symbol in [self._callee_symbol(r, maker)]
                               if (symbol.__class__ is Function and symbol.node.__class__ is not ast.Module)
                               or (symbol.__class__ is Klass and r.id not in maker.params))
                    # (or a class it picks into a local name, `model = JointModel` on one side of
                    # an if/elif, `model = None` on none, then `return model`: each it may return,
                    # and `model_cls(...)` builds it - MMECA's select_model)
                    out.extend(symbol for r in maker.returned if r.__class__ is ast.Name and r.id not in maker.params
                               for _, picked in maker.bindings.get(r.id, ()) if picked.__class__ is ast.Name
                               for symbol in [self._callee_symbol(picked, maker)] if symbol.__class__ is Klass)
                    # `return model` of `model = cls` picked in a loop over a loaded module's
                    # namespace (HCFlow's find_model_using_name)
                    if _walks_a_namespace(maker):
                        out.extend(k for r in maker.returned if r.__class__ is ast.Name
                                   for v, where in self.values_of(r, maker, 1)
                                   if v.__class__ is ast.Name and v is not r and not self.lookup(v.id, where)
                                   for k in self._namespace_loop_classes(v, where, depth))
            spec = dynamic_spec(value)
            if spec is None and value.args and value.args[0].__class__ is ast.Name and depth > 0 and \
                    last_name(value.func) in IMPORTERS:
                # `import_module(module)` of a parameter its callers give as one constant
                # (or binds once to a spelled pattern: `model_filename = "models." + name + "_model"`)
                # (either side of `f"pkg.trainer.{name}" if "general" in name else f"pkg.apps.{task}.{name}"`)
                given = {name_pattern(side) for v, _ in self.values_of(value.args[0], scope, 2)
                         for side in ((v.body, v.orelse) if v.__class__ is ast.IfExp else (v,))}
                given.discard(None)
                if len(given) > 1 and all(g[1] is None for g in given):
                    # (`main_module = "fed_setting.main"` on one side of an if/elif, `"centr_setting.main"`
                    # on the other: each module named)
                    out.extend(m for m in (self._module(g[0]) for g in sorted(given)) if m is not None)
                    continue
                spec = given.pop() if len(given) == 1 else None
                if spec is not None and spec[1] is not None and not ("." in spec[0] and "." not in spec[1]):
                    spec = None  # (a varying package segment is not followed: as sources.dynamic_spec)
            key = configured_key(value) if spec is None and depth > 0 else ()
            if not key and spec is None and depth > 0 and value.args and value.args[0].__class__ is ast.Name:
                # `module = cfg.renderer_module` then `imp.load_source(module, path)`: the key the
                # one value bound to the name reads
                held = [v for v, _ in self.values_of(value.args[0], scope, 1) if v is not value.args[0]]
                if len(held) == 1 and held[0].__class__ is ast.Attribute:
                    key = configured_key(ast.Call(func=value.func, args=held, keywords=[]))
            configured = module_names(self.config_file_values(key)) if key else []
            if configured:
                # `import_module(cfg.TRAINER.FILE)` with `TRAINER: / FILE: hoi_trainer` in the
                # YAML configs beside the script: each module a config names
                out.extend(m for m in (self._module(n) for n in configured) if m is not None)
            elif spec is not None:
                names = [spec[0]] if spec[1] is None else \
                    [n for n in [*self.by_name, *self._waiting] if fits(spec, n)]
                out.extend(m for m in (self._module(n) for n in names) if m is not None)
            elif last_name(value.func) == "getattr" and len(value.args) >= 2 and depth > 0 and \
                    ((spec := name_pattern(value.args[1])) is not None or value.args[1].__class__ is ast.Name
                     or (value.args[1].__class__ is ast.Attribute and dotted(value.args[1]))
                     or _configured_read(value.args[1])):
                # (`getattr(import_module("pkg"), kind)`, kind a configured name: any class or
                # module-level function of that module, as with a spelled prefix of "")
                spec = spec or ("", "")
                owners = self._this_module(value.args[0], scope) or self._loaded(value.args[0], scope, depth - 1) or \
                    [self._callee_symbol(value.args[0], scope)]
                for owner in owners:
                    if spec[1] is not None and owner.__class__ is Module:
                        # `getattr(module, model_name + "Trainer")`, `getattr(setup, "start_%s" % launcher)`:
                        # every class or module-level function of it that fits
                        # (a package's classes imported from its submodules too, where they are a
                        # handful: `from .trainer import Trainer, CausalTrainer` in trainer/__init__)
                        wider = _fitting(self._module_names(owner, by_name=True), spec)
                        wider = wider if len(wider) <= 8 else _fitting(self._module_names(owner), spec)
                        out.extend(self._distributed_picks(wider, value.args[1], scope))
                        continue
                    attr = spec[0]
                    if owner.__class__ is Module:
                        # the module's own, or what its `from .trainer import *` re-exports
                        found = owner.functions.get(attr) or owner.classes.get(attr) or \
                            self._module_names(owner).get(attr)
                    elif owner.__class__ is Klass:
                        found = self.method(owner, attr) if spec[1] is None else None
                    else:
                        found = None
                    if found is not None:
                        out.append(found)
        return out

    def _namespace_loop_classes(self, name: ast.Name, fn: Function, depth: int) -> list:
        """The classes of a loaded module a loop over its namespace binds `name` to (`for k, cls in
        mod.__dict__.items()`, `vars(mod).items()`)."""
        out: list = []
        for loop in walk(fn.node) if fn.node is not None else ():
            if loop.__class__ is not ast.For or loop.target.__class__ is not ast.Tuple or \
                    len(loop.target.elts) != 2 or loop.target.elts[1].__class__ is not ast.Name or \
                    loop.target.elts[1].id != name.id:
                continue
            items = loop.iter
            if not (items.__class__ is ast.Call and items.func.__class__ is ast.Attribute and items.func.attr == "items"):
                continue
            space = items.func.value
            owner = space.value if space.__class__ is ast.Attribute and space.attr == "__dict__" else \
                space.args[0] if space.__class__ is ast.Call and last_name(space.func) == "vars" and space.args else None
            if owner is None:
                continue
            for module in self._loaded(owner, fn, depth - 1):
                if module.__class__ is Module:
                    out.extend(module.classes.values())
        return out

    def _runtime_classes(self, func: ast.AST, fn: Function) -> list:
        """`getattr(runners, config.runner_type)`: a class picked from a local module by a name
        known only at run time. Each class the module holds or re-exports that has a method of
        the asked name is a candidate; a handful at most (a runner family, not a model zoo)."""
        if func.__class__ is ast.Name:
            # `trainer_class = getattr(jatts.trainers, config.get("trainer_type"))`, then
            # `trainer_class(...)`: what the name was bound to
            # (handed on as a spawn argument: `mp.spawn(worker, args=(agent_cls, cfg))`, two steps)
            return list(dict.fromkeys(k for v, scope in self.values_of(func, fn, 2)
                                      if v.__class__ is ast.Call for k in self._runtime_classes(v, scope)))
        if func.__class__ is ast.Call and func.func.__class__ is ast.Name and func.func.id != "getattr" \
                and func.func.id != "eval":
            # `agent_cls = get_agent_cls(name)`, a helper every return of which is such a pick
            # (`return getattr(sys.modules[__name__], name)`): what it picks from
            # (asked again while resolving the helper's own name - a call that hands back what
            # it was handed, round a cycle of values - it answers nothing: no recursion)
            return self._once_at_a_time("_runtime_asking", (id(func), id(fn)), lambda: self._helper_picks(func, fn))
        if func.__class__ is ast.Call and func.func.__class__ is ast.Name and func.func.id == "eval":
            # `eval('Trainer_{}'.format(args.dataset))(...)`: the classes of that shape
            return [k for k in self._evaluated_names(func, fn) if k.__class__ is Klass]
        if not (func.__class__ is ast.Call and last_name(func.func) == "getattr" and len(func.args) >= 2
                and name_pattern(func.args[1]) is None):
            return []
        found: list = []
        for owner in self._this_module(func.args[0], fn) or self._loaded(func.args[0], fn) or \
                [self._callee_symbol(func.args[0], fn)]:
            if owner.__class__ is Module:
                classes = [k for k in dict.fromkeys(self._module_names(owner, by_name=True).values())
                           if k.__class__ is Klass]
                if len(classes) > 8:
                    # (a model zoo: the few of its classes the configs beside the script name,
                    # pytorch-template's `"arch": {"type": "ResNeXt50Model"}`, where they name any)
                    named = self._configured_among(classes)
                    classes = named if len(named) < len(classes) else []
                if len(classes) <= 8:
                    found.extend(classes)
        return self._configured_among(found)

    def _helper_picks(self, call: ast.Call, fn: Function) -> list:
        """The classes a local helper picks, every return of it a `getattr(...)` pick."""
        targets = [t for t in self.resolve(call.func, fn)[0] if t.node is not None
                   and not isinstance(t.node, ast.Module) and t.returned]
        return list(dict.fromkeys(k for t in targets if all(
            r.__class__ is ast.Call and last_name(r.func) == "getattr" for r in t.returned)
            for r in t.returned for k in self._runtime_classes(r, t)))

    def _picked_by_name(self, func: ast.Name, fn: Function) -> list:
        """_runtime_classes of a called name, asked once at a time per call: resolving what the
        name holds resolves calls again, which may ask this name back (`v = v()`: no recursion)."""
        return self._once_at_a_time("_picked_asking", (id(func), id(fn)), lambda: self._runtime_classes(func, fn))

    def _once_at_a_time(self, tag: str, key: tuple, compute) -> list:
        """compute(), unless the same question is already being asked further up the stack (a
        cycle of values), where it answers nothing."""
        asking = self.__dict__.setdefault(tag, set())
        if key in asking:
            return []
        asking.add(key)
        try:
            return compute()
        finally:
            asking.discard(key)

    @staticmethod
    def _this_module(node: ast.AST, fn: Function) -> list:
        """`sys.modules[__name__]` (a package's `get_agent_cls(name)` returning `getattr(
        sys.modules[__name__], name)`): the module the code is in; [] for anything else."""
        return [fn.module] if node.__class__ is ast.Subscript and dotted(node.value) == "sys.modules" and \
            node.slice.__class__ is ast.Name and node.slice.id == "__name__" else []

    def _evaluated_names(self, func: ast.Call, fn: Function) -> list:
        """`eval('get_{}'.format(cfg.dataset))`, `eval("Trainer_" + name)`, and the same name
        looked up in the module's namespace, `globals()["run_" + args.task]` (a command picked by
        name): the functions and classes the module sees - its own, imported by name, or through
        a `from pkg import *` of a package that imports them by name - whose names fit what the
        string spells around its one run-time part (a few at most: a dataset family, not any name)."""
        if func.__class__ is ast.Call and func.func.__class__ is ast.Name and func.func.id == "eval" \
                and len(func.args) == 1 and not func.keywords and not self.lookup("eval", fn):
            spelt = name_pattern(func.args[0])
        elif func.__class__ is ast.Subscript and func.value.__class__ is ast.Call and not func.value.args \
                and func.value.func.__class__ is ast.Name and func.value.func.id == "globals" \
                and not self.lookup("globals", fn):
            spelt = name_pattern(func.slice)
        else:
            return []
        if spelt is None or spelt[1] is None or not (spelt[0] or spelt[1]) or "." in spelt[0] + spelt[1]:
            return []
        prefix, suffix = spelt

        def fits_name(name: str) -> bool:
            return len(name) > len(prefix) + len(suffix) and name.startswith(prefix) and name.endswith(suffix)
        module = fn.module
        found: list = []
        sources = [module]
        sources += [other for key, base in module.imports.items() if key[0] == "*" and base != module.name
                    for other in [self._module(base)] if other is not None]
        for source in sources:
            for name, symbol in [*source.functions.items(), *source.classes.items()]:
                if fits_name(name) and symbol not in found:
                    found.append(symbol)
            for key, base in source.imports.items():
                if key[0] != "*" and fits_name(key) and "." in base:
                    symbol = self.full_symbol(base)
                    if (symbol.__class__ is Function or symbol.__class__ is Klass) and symbol not in found:
                        found.append(symbol)
        return found if len(found) <= 8 else []

    def _module_factory_classes(self, call: ast.Call, fn: Function) -> list:
        """`config.init_obj("trainer", module_trainer, model, ...)` (pytorch-template's config
        factory, a method or a plain function) every return of which is `getattr(module,
        self[name]["type"])(*args, **kwargs)` with `module` its parameter: _runtime_classes of the
        module the call hands it. (Asked again while resolving its own receiver - `config` of a
        config built by another such call - it answers nothing: no cycle.)"""
        memo = self.__dict__.setdefault("_factory_memo", {})
        key = (id(call), id(fn))
        if key in memo:
            return memo[key]
        asking = self.__dict__.setdefault("_factory_asking", set())  # (not cleared by _changed)
        if key in asking:
            return []
        asking.add(key)
        try:
            found = self._module_factory_reading(call, fn)
        finally:
            asking.discard(key)
        self.__dict__.setdefault("_factory_memo", {})[key] = found
        return found

    def _module_factory_reading(self, call: ast.Call, fn: Function) -> list:
        found: list = []
        for given, pick in self._factory_modules(call, fn):
            # (the same reading as `getattr(given, name)` written at the call site)
            found.extend(self._runtime_classes(ast.Call(func=ast.Name(id="getattr", ctx=ast.Load()),
                                                        args=[given, pick.args[1]], keywords=[]), fn))
        return list(dict.fromkeys(found))

    def _factory_modules(self, call: ast.Call, fn: Function) -> list[tuple[ast.AST, ast.Call]]:
        """For a call into a config factory (see _module_factory_classes): each module the call
        hands it, with the factory's `getattr(module, ...)` pick."""
        found = []
        for target in self.resolve(call.func, fn)[0]:
            if target.__class__ is not Function or target.node is None or isinstance(target.node, ast.Module):
                continue
            returned = [r for r in getattr(target, "returned", ()) if r is not None]
            picks = [r.func for r in returned if r.__class__ is ast.Call and r.func.__class__ is ast.Call
                     and last_name(r.func.func) == "getattr" and len(r.func.args) >= 2
                     and r.func.args[0].__class__ is ast.Name and r.func.args[0].id in target.params]
            if not returned or len(picks) != len(returned) or len({p.args[0].id for p in picks}) != 1:
                continue
            given = self.handed(target, picks[0].args[0].id, call, fn)
            if given is not None:
                found.append((given, picks[0]))
        return found

    def factory_module(self, call: ast.Call, fn: Function) -> str:
        """The full name of the library module a config factory call picks its class from
        (`config.init_obj("train_loader", torch.utils.data.dataloader, dataset=ds, ...)`:
        "torch.utils.data.dataloader"), "" when it is none or a local one."""
        if not (call.args and call.args[0].__class__ is ast.Constant and isinstance(call.args[0].value, str)):
            return ""  # (the factory's first argument is the config key: cheap to rule out)
        names = {self.qualify(given, fn) or "" for given, _ in self._factory_modules(call, fn)}
        return names.pop() if len(names) == 1 else ""

    def _configured_among(self, classes: list) -> list:
        """Of the classes a configured name may pick, those a YAML config beside the script names
        as a value (`trainer_type: E2TTSTrainer`), where it names any; else all of them."""
        if len(classes) < 2 or not self.sources:
            return classes
        memo = self.__dict__.setdefault("_configured_memo", {})
        key = frozenset(k.name for k in classes)
        if key not in memo:
            memo[key] = named_values(self.sources[0].path, set(key), self.sources[0].hydra_configs)
        named = memo[key]
        return [k for k in classes if k.name in named] if named else classes

    def _held_modules(self, node: ast.AST, fn: Function) -> list[Module]:
        """The local submodules a package (named by node) holds: those its own module imports
        under its name (`from . import train` in func/__init__.py)."""
        owner = self.symbol(node.id, fn) if node.__class__ is ast.Name else \
            self._callee_symbol(node, fn) if node.__class__ is ast.Attribute else None
        if owner.__class__ is not Module:
            return []
        held = [self._module(full) for alias, full in owner.imports.items()
                if alias[0] != "*" and full.startswith(owner.name + ".")]
        return [m for n, m in enumerate(held) if m.__class__ is Module and not any(m is o for o in held[:n])]

    def _module_names(self, module: Module, by_name: bool = False) -> dict:
        """A module's functions and classes by name, with those its `from x import *` lines
        re-export (one level: a package's __init__ gathering its submodules' trainers); by_name:
        also the classes it imports from local modules by name (`from .trainer import Trainer`), for the
        few classes a configured name picks among (_runtime_classes; read wherever a name merely
        fits, a package's imported helpers reached code no run takes)."""
        names = dict(module.functions)
        names.update(module.classes)
        if module.file.path.name == "__init__.py" and module.file.tree is not None and \
                any(loads_own_package(call) for call in module.file.of(ast.Call)):
            # a package that loads each module of its folder and keeps their classes in its
            # namespace (`globals()[name] = cls`, OpenGait's models): those classes
            prefix = module.name + "."
            for other in [self._module(n) for n in [*self.by_name, *self._waiting]
                          if n.startswith(prefix) and "." not in n[len(prefix):]]:
                for name, symbol in (other.classes.items() if other is not None else ()):
                    names.setdefault(name, symbol)
        for key, base in module.imports.items():
            if key[0] == "*" and base != module.name:
                other = self._module(base)
                if other is not None:
                    for name, symbol in [*other.functions.items(), *other.classes.items()]:
                        names.setdefault(name, symbol)
            elif by_name and key[0] != "*" and "." in base and key not in names:
                owner, _, name = base.rpartition(".")
                other = self._module(owner) if owner != module.name else None
                # (classes only: a helper function imported beside them is no configured pick)
                symbol = other.classes.get(name) if other.__class__ is Module else None
                if symbol is not None:
                    names[key] = symbol
        return names

    def _namespace_entries(self, node: ast.AST, fn: Function, depth: int = 3) -> list:
        """What `<module>.__dict__[key]` may be: the function, class or submodule the key names
        (a string), or, for a key known only at run time, the module's classes and its submodules."""
        if depth <= 0 or node.__class__ is not ast.Subscript or node.value.__class__ is not ast.Attribute \
                or node.value.attr != "__dict__":
            return []
        owner = node.value.value
        if owner.__class__ is ast.Subscript and owner.value.__class__ is ast.Attribute and owner.value.attr == "__dict__":
            modules = [m for m in self._namespace_entries(owner, fn, depth - 1) if m.__class__ is Module]
        elif owner.__class__ is ast.Subscript and dotted(owner.value) == "sys.modules":
            modules = [fn.module]  # `sys.modules[__name__]`: this module
        else:
            symbol = self._callee_symbol(owner, fn) if owner.__class__ is ast.Attribute else \
                self.symbol(owner.id, fn) if owner.__class__ is ast.Name else None
            modules = [symbol] if symbol.__class__ is Module else []
        key = node.slice.value if node.slice.__class__ is ast.Constant and isinstance(node.slice.value, str) else None
        found: list = []
        if not modules and owner.__class__ is ast.Name and owner.id in fn.module.imports:
            # a folder without __init__.py (a namespace package): no module of its own, its
            # submodules the script imports (`import core.trainer`) are what its namespace holds
            base = fn.module.imports[owner.id]
            subs = [m for m in self.modules if m.name.startswith(base + ".") and "." not in m.name[len(base) + 1:]]
            return [m for m in subs if key is None or m.name == f"{base}.{key}"]
        for module in modules:
            if key is not None:
                hit = module.functions.get(key) or module.classes.get(key) or self._module(f"{module.name}.{key}")
                found += [hit] if hit is not None else []
            else:
                found += list(module.classes.values())
                found += [m for m in self.modules if m.name.startswith(module.name + ".")
                          and "." not in m.name[len(module.name) + 1:]]
        return found

    def _entries(self, symbols: list) -> list[Function]:
        """What calling these runs: a function itself, a class's __init__."""
        out = []
        for symbol in symbols:
            target = self.method(symbol, "__init__") if symbol.__class__ is Klass else symbol
            if target.__class__ is Function and target not in out:
                out.append(target)
        return out

    def _named(self, attr: str) -> list[Function]:
        if attr.startswith("__"):
            return []
        index = self._methods_index()
        if self._phase != "walk":
            return list(index.get(attr, ()))  # only the walk reads these (a call's weak targets)
        if attr not in COMMON_METHODS:
            # one method of that name is followed (see _reachable), two are not: quiet modules
            # that may define one more are read until that is told
            for source in [s for s in self._waiting.values() if attr in s.defined]:
                if len(index.get(attr, ())) >= 2:
                    break
                if source.module not in self._waiting:
                    continue
                self._read(source)
                index = self._methods_index()
        return list(index.get(attr, ()))

    def _methods_index(self) -> dict[str, list[Function]]:
        index = self.__dict__.get("_methods_by_name")
        if index is None:
            index = {}
            for klass in self.classes:
                for name, method in klass.methods.items():
                    index.setdefault(name, []).append(method)
            self._methods_by_name = index
        return index

    def reference(self, node: ast.AST, fn: Function) -> list[Function]:
        """A local function passed by name (a callback, mp.spawn's target, a Thread target)."""
        if isinstance(node, ast.Name):
            target = self.symbol(node.id, fn)
            return [target] if isinstance(target, Function) else []
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            klass = self._class_of_fn(fn)
            found = self.method(klass, node.attr) if klass else None
            # (`collate_fn=self._collate` in a base class: each subclass the run builds hands
            # its own override)
            built = self.__dict__.get("built_classes", ())  # (known once the walk has begun)
            overrides = [m for sub in (self._descendants(klass) if klass and built else ())
                         if sub in built for m in [self.method(sub, node.attr)] if m is not None]
            return ([found] if found else []) + list(dict.fromkeys(o for o in overrides if o is not found))
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            # `mp.spawn(mpu.run, ...)`: a function of an imported local module
            owner = self.symbol(node.value.id, fn)
            if owner.__class__ is Module or owner.__class__ is Klass:
                # (or a class's own: `mp.spawn(Trainable._worker, ...)`, a staticmethod)
                target = self._callee_symbol(node, fn)
                return [target] if isinstance(target, Function) else []
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute):
            # `import runners.ddp_runner` then `mp.spawn(runners.ddp_runner.train, ...)` (NCSNv2's
            # DDP launcher): a function of a local submodule, named through its package, as a
            # call of it is resolved
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in fn.module.imports and not self.lookup(root.id, fn):
                return [t for t in self.resolve(node, fn)[0] if isinstance(t, Function)]
        if isinstance(node, ast.Call) and node.args and last_name(node.func) == "partial" and \
                (self.qualify(node.func, fn) or "functools.partial") == "functools.partial":
            # `TrainLoop(load_G=partial(load_G, hp=hp))`: what the partial runs (Resemble Enhance's
            # engine loaders, kept in a dataclass field and called there)
            return self.reference(node.args[0], fn)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Call):
            # `mp.spawn(Trainer(args).train, ...)`: a method of an object made in place (IDDM)
            klass = self.callee(node.value.func, fn)
            found = self.method(klass, node.attr) if self.is_class(klass) else None
            return [found] if found else []
        return []

    def started(self, node: ast.AST, fn: Function) -> list[Function]:
        """What mp.spawn's target runs: the function it names, or the constructor of a class it
        names (`mp.spawn(Net, ...)`, or a name bound to one of several: `trainer = Net` /
        `trainer = GAN`, then `mp.spawn(trainer, ...)`) - the constructor is the rank; or a
        function such a name is bound to (`if args.exp == "e2e": runner = main`, ULE's launcher)."""
        found = self.reference(node, fn)
        if found or not isinstance(node, ast.Name):
            return found
        target = self.symbol(node.id, fn)
        for value in [node] if isinstance(target, Klass) else [
                v for v, _ in self.values_of(node, fn, 1) if isinstance(v, ast.Name)]:
            klass = self.symbol(value.id, fn)
            if isinstance(klass, Klass) and (init := self.method(klass, "__init__")) is not None:
                found.append(init)
            elif klass.__class__ is Function and value is not node:
                found.append(klass)
        return list(dict.fromkeys(found))

    def launched_value(self, option: str) -> object:
        """The value every launch written beside the script gives the option (`--accum_iter 1` in
        its run.sh), None where none gives it or they give it differently."""
        self.option_defaults()
        value = self.__dict__.get("_launched_values", {}).get(option)
        if value is None:
            # (or the parameters file every launch names gives it: `"accum": 1` in each JSON)
            value = self.__dict__.get("_parameter_values", {}).get(option)
        if isinstance(value, Contested):
            # (`--gradient_accumulation_steps 1` in some launches, left out of the others where
            # its declared default is 1: every launch runs it with 1 all the same)
            declared = self.__dict__.get("_declared_defaults", {}).get(option, UNKNOWN_VALUE)
            if UNKNOWN_VALUE in value or (LEFT_OUT in value and declared is UNKNOWN_VALUE):
                return None
            resolved = [declared if v is LEFT_OUT else v for v in value]
            return resolved[0] if len({repr(v) for v in resolved}) == 1 else None
        return value

    def left_by_every_launch(self, option: str) -> bool:
        """Launches are written beside the script (shell scripts, the README's commands), and
        none of them gives the option: each run as launched holds its declared default."""
        self.option_defaults()
        launched = self.__dict__.get("_launched_values")
        return bool(getattr(launched, "count", 0)) and option not in launched and \
            option not in self.__dict__.get("_parameter_values", {})

    def launched_at(self, option: str, value: object) -> bool:
        """Launches are written beside the script, and each gives the option `value` or leaves it
        at its declared default, which is `value` (`--dataloader_num_workers=0` in one, nothing in
        another, declared 0): every run as launched holds it."""
        self.option_defaults()
        launched = self.__dict__.get("_launched_values")
        if option in self.__dict__.get("_yaml_loop_keys", ()) and not (launched and option in launched):
            # (set by the YAML file the script declares its options from: every run reads it)
            return self.__dict__.get("_declared_defaults", {}).get(option, UNKNOWN_VALUE) == value
        if not getattr(launched, "count", 0) or option in self.__dict__.get("_parameter_values", {}):
            return False
        declared = self.__dict__.get("_declared_defaults", {}).get(option, UNKNOWN_VALUE)
        held = launched.get(option, LEFT_OUT)
        return all((declared if v is LEFT_OUT else v) == value and v is not UNKNOWN_VALUE
                   for v in (held if isinstance(held, Contested) else (held,)))

    def off_as_launched(self, value: ast.AST, owner: Function) -> bool:
        """The value is bound on a side of one of its function's `if` tests that the run as
        launched never takes (defaults.launched_spans: the options' defaults and the launches)."""
        line = getattr(value, "lineno", None)
        if line is None or owner.node is None or owner.node.__class__ is ast.Module:
            return False
        return any(start <= line <= end for start, end in defaults.launched_spans(owner, self))

    def required_text_options(self) -> frozenset:
        """The options every run gives as a text of its own (options.required_text_options), read once."""
        found = self.__dict__.get("_required_text_options")
        if found is None:
            found = self.__dict__["_required_text_options"] = required_text_options(self.files)
        return found

    def option_defaults(self) -> dict[str, object]:
        """The command-line options' values on the run as launched: the defaults the program's
        files declare (lint/options.py), and over them what the launches written beside the
        script give it (config_files.launch_values: `--accum_iter 8` in its shell launch script
        or README), read once (several rules ask: seeds on the default path, a checkpoint's
        family, an option that switches a branch off)."""
        found = self.__dict__.get("_option_defaults_seen")
        if found is None:
            found = option_defaults(self.files)
            script = self.sources[0] if self.sources else None
            # (a YAML file the script reads and declares its options from: its values are the
            # run's, as a launch's are - `workers: 0` there is no default a recipe raises)
            from_yaml = {key: value for key, value in self._yaml_loop_defaults(script).items() if key not in found}
            found.update(from_yaml)
            self.__dict__["_yaml_loop_keys"] = frozenset(from_yaml)
            self.__dict__["_declared_defaults"] = dict(found)
            contested: dict = {}
            if script is not None and script.path is not None:
                launched = launch_values(script.path, declared_options(self.files), script.hydra_configs)
                self.__dict__["_launched_values"] = launched
                launched_from_files = self.__dict__["_parameter_values"] = {}
                for option, value in launched.items():
                    if isinstance(value, Contested):
                        # launches that give it differently: which runs is not known; a test
                        # they all answer alike is answered (launch_candidates), any other is
                        # read on the declared default, the default path as the rules read it
                        contested[option] = frozenset(found.get(option, UNKNOWN_VALUE) if v is LEFT_OUT else v
                                                      for v in value)
                        if all(v is UNKNOWN_VALUE for v in value) and option in found:
                            # (`--n_gpu=$num_gpus` in every launch, a count its shell script works
                            # out: no launch runs on the declared default, so it is not known)
                            del found[option]
                            self.__dict__.setdefault("_launched_unknown", set()).add(option)
                    else:
                        found[option] = value
                # (a configargparse config file the run names: its settings over the declared
                # defaults, under the command line - DEVO's `ddp = True` in config/DEVO_base.conf)
                for key, value in self._config_file_settings(script, found, launched).items():
                    found[key] = launched_from_files[key] = value
                # (and under them, the plain values of the config file the run names)
                config = self.__dict__["_named_config"] = named_config(script.path, found, script.hydra_configs)
                if config is None:
                    # `@hydra.main(config_path="conf", config_name="default")`: its primary config
                    config = _hydra_primary(script)
                for key, value in (leaf_values(config[1]) if config is not None else {}).items():
                    found.setdefault(key, value)
                # (and a JSON parameters file merged into them, one per launch: DSTC9's params.json)
                # (over the declared defaults, under what a launch's command line gives: UNITER's
                # parse_with_config, VLN-SIG's `--config pretrain_r2r.json`)
                settled, differing = launched_parameters(script.path, {**found, **contested}, script.hydra_configs)
                for key, value in settled.items():
                    if key not in launched:
                        found[key] = value
                        launched_from_files[key] = value
                for key, values in differing.items():
                    if key not in launched:
                        contested.setdefault(key, values)
            # (last, over everything: options the script sets by hand once parsed, `args =
            # parser.parse_args()` then `args.accum_grad = 1` in its main block - Phenaki's)
            for key, value in self.hand_set().items():
                found[key] = value
                self.__dict__.setdefault("_parameter_values", {})[key] = value
                self.__dict__.get("_launched_values", {}).pop(key, None)
                contested.pop(key, None)
            # (`--local_rank`: torch.distributed.launch hands each process its own, so its declared
            # default - -1 for "not distributed", or 0 - is no value a launched rank holds; YOLOv5-
            # style scripts build the DistributedSampler under `rank >= 0`. Unless every launch
            # uses torchrun, which hands none: local_rank_unset's case, the default on every rank.)
            given = declared_options(self.files).get("local_rank")
            if given is not None and found.get(given[0]) is not None and given[0] not in self.hand_set() and \
                    given[0] not in self.__dict__.get("_launched_values", {}) and not self._elastic_only():
                found[given[0]] = None
            self.__dict__["_launch_candidates"] = contested
            self.__dict__["_option_defaults_seen"] = found
        return found

    def launched_unknown(self) -> frozenset:
        """The options every launch beside the script gives a value the lint cannot read
        (`--n_gpu=$num_gpus`): the declared default is no launch's value (option_defaults leaves
        them out; a message may still name the declared default)."""
        self.option_defaults()
        return frozenset(self.__dict__.get("_launched_unknown", ()))

    def handed_elsewhere(self, name: str) -> bool:
        """A function of this name may be called where the program's bound calls do not show:
        the name is read as a value somewhere (`callbacks=[on_step]`, `fn = create_attack`), or
        a module not read yet mentions it. Asked of a parameter every call hands a known value
        (defaults.handed_truth)."""
        # (the names grow with the files the program reads: each file read once, as it comes)
        seen, values = self.__dict__.setdefault("_value_names", (set(), set()))
        for source in self.files:
            if id(source) in seen:
                continue
            seen.add(id(source))
            called = {id(n.func) for n in source.of(ast.Call)}
            values.update(n.id for n in source.of(ast.Name) if n.ctx.__class__ is ast.Load and id(n) not in called)
            values.update(n.attr for n in source.of(ast.Attribute) if n.ctx.__class__ is ast.Load
                          and id(n) not in called)
        return name in values or any(name in _identifiers(s) for s in self._waiting.values())

    def launched_environment(self) -> dict[str, str]:
        """The environment variables every shell launch of the script exports to one literal
        (config_files.launch_exports: `export ORBIT_USE_DDSTORE=0` above the `srun` that runs
        it), less any the program's own code writes into os.environ (its value is then the
        code's, not the launch's). Read once."""
        found = self.__dict__.get("_launched_environment")
        if found is None:
            script = self.sources[0] if self.sources else None
            found = {}
            if script is not None and script.path is not None:
                found = launch_exports(script.path, script.hydra_configs)
            if found:
                written = self._environment_written()
                found = {} if written is None else {k: v for k, v in found.items() if k not in written}
            self.__dict__["_launched_environment"] = found
        return found

    def _environment_written(self) -> Optional[set]:
        """The keys the program's files write into os.environ (`os.environ["K"] = ...`,
        `.setdefault("K", ...)`, `.pop("K")`, `os.putenv("K", ...)`); None where one writes keys
        it does not spell (`os.environ.update(cfg)`)."""
        keys: set = set()
        for source in self.files:
            for node in source.of(ast.Subscript):
                if node.ctx.__class__ is not ast.Load and (dotted(node.value) or "").endswith("environ"):
                    if node.slice.__class__ is not ast.Constant:
                        return None
                    keys.add(node.slice.value)
            for node in source.of(ast.Call):
                name = dotted(node.func) or ""
                if name.endswith(("environ.setdefault", "environ.pop", "putenv", "unsetenv")):
                    if not node.args or node.args[0].__class__ is not ast.Constant:
                        return None
                    keys.add(node.args[0].value)
                elif name.endswith("environ.update"):
                    return None
        return keys

    def hand_set(self) -> dict[str, object]:
        """Options the script sets to a constant by hand once parsed, in its own top level or
        `if __name__ == "__main__":` block: `args = parser.parse_args()`, then `args.dataset =
        "second_stage"` before anything is handed `args` (what every run trains with, whatever
        the command line said). Only where nothing else the lint reads sets that attribute to
        another value (Program.attribute_constants). Read once."""
        found = self.__dict__.get("_hand_set")
        if found is not None:
            return found
        found = self.__dict__["_hand_set"] = {}
        script = self.sources[0] if self.sources else None
        if script is None or script.tree is None:
            return found
        blocks = [script.tree.body] + [s.body for s in script.tree.body if s.__class__ is ast.If
                                       and "__main__" in patterns.text(s.test, 80)]
        for block in blocks:
            parsed: set = set()  # names bound to a parse, still not handed on
            for stmt in block:
                if stmt.__class__ is ast.Assign and len(stmt.targets) == 1:
                    target, value = stmt.targets[0], stmt.value
                    if target.__class__ is ast.Name and _a_parse(value):
                        parsed.add(target.id)
                        continue
                    if target.__class__ is ast.Attribute and target.value.__class__ is ast.Name and \
                            target.value.id in parsed and value.__class__ is ast.Constant:
                        found[target.attr] = value.value
                        continue
                # (past a statement that hands the parsed name on, what it is set to next is not
                # what that call saw)
                parsed -= {n.id for n in walk(stmt) if n.__class__ is ast.Name}
        for attr in list(found):
            if self.attribute_constants(attr) != frozenset({found[attr]}):
                del found[attr]
        return found

    def _yaml_loop_defaults(self, script) -> dict[str, object]:
        """The defaults of the options a loop declares from a YAML file's top-level keys
        (options.yaml_loop_configs): the file's plain values, the file looked for from the working
        directory, the declaring file's folder and the script's."""
        found: dict[str, object] = {}
        if script is None or script.path is None:
            return found
        for source, name in yaml_loop_configs(self.files)[:4]:
            bases = [Path.cwd(), *([source.path.parent] if source.path is not None else []), script.path.parent]
            held = config_near(name, bases, script.hydra_configs)
            for key, value in (top_level_values(held[1]) if held is not None else {}).items():
                found.setdefault(key, value)
        return found

    def _config_file_settings(self, script, found: dict, launched: dict) -> dict[str, object]:
        """The options the configargparse file the run names sets (config_files.config_file_settings),
        each as the option takes it: a switch given `true` / `yes` / `1` is on (store_true), a
        number as a number where the declared default is one; an option the command line gives
        keeps that."""
        settings: dict[str, object] = {}
        declared = declared_options(self.files)
        switches = {dest: action for dest, action in declared.values() if action}
        dests = {dest for dest, _ in declared.values()}
        for option, default in config_file_options(self.files):
            named = launched.get(option, default)  # (`-c=config/x.conf` in the README, else the default)
            for key, raw in (config_file_settings(script.path, named, script.hydra_configs) or {}).items():
                if key not in dests or key in launched or key == option:
                    continue
                if key in switches:
                    given = raw.lower() in ("true", "yes", "1")
                    if given or raw.lower() in ("false", "no", "0"):
                        settings[key] = (switches[key] == "store_true") == given
                    continue
                default = found.get(key)
                settings[key] = _as_number(raw) if isinstance(default, (int, float)) and not isinstance(default, bool) \
                    or default is None else raw
        return settings

    def declared_defaults(self) -> dict[str, object]:
        """The options' defaults as the program's files declare them, whatever a launch gives."""
        self.option_defaults()
        return self.__dict__.get("_declared_defaults", {})

    def field_default(self, node: ast.AST, fn: Function) -> Optional[tuple]:
        """(value, where) of the default the one local class of `cfg` declares for the field
        `cfg.<field>` reads, where no method sets it (defaults.declared_field_default)."""
        return defaults.declared_field_default(node, fn, self)

    def launch_candidates(self) -> dict[str, frozenset]:
        """The options the launches beside the script give different values (or one the shell
        fills in: UNKNOWN_VALUE among them), with every value some launch runs the script with."""
        self.option_defaults()
        return self.__dict__.get("_launch_candidates", {})

    def named_config(self) -> Optional[tuple]:
        """(path, text) of the YAML config file the run's `--config` names (config_files.named_config),
        read with the options' values (option_defaults), once."""
        self.option_defaults()
        return self.__dict__.get("_named_config")

    def local_rank_unset(self) -> frozenset:
        """The `--local_rank` options (their dests) that keep their default on every rank: every
        launch written beside the script starts it with torchrun, which hands no `--local_rank`
        (config_files.elastic_launch_only), and no file the lint reads looks at the LOCAL_RANK
        variable (`args.local_rank = int(os.environ["LOCAL_RANK"])`). A test on such an option
        (`if args.local_rank == 0:` with default 0) holds alike on every rank."""
        held = self.__dict__.get("_local_rank_unset")
        if held is None or held[0] != len(self.files):
            found = frozenset()
            script = self.sources[0] if self.sources else None
            declared = {dest for dest, _ in declared_options(self.files).values() if LOCAL_OPTION.match(dest)}
            if declared and script is not None and script.path is not None and \
                    not any("LOCAL_RANK" in "\n".join(f.lines) for f in self.files) and self._elastic_only():
                self.option_defaults()
                defaults = self.__dict__.get("_declared_defaults", {})  # (as declared: the run keeps them)
                found = frozenset(d for d in declared if isinstance(defaults.get(d), int))
            held = self.__dict__["_local_rank_unset"] = (len(self.files), found)
        return held[1]

    def _elastic_only(self) -> bool:
        """config_files.elastic_launch_only for the script, its launch files read once (asked by
        option_defaults and local_rank_unset)."""
        if "_elastic_only_seen" not in self.__dict__:
            script = self.sources[0] if self.sources else None
            self.__dict__["_elastic_only_seen"] = script is not None and script.path is not None and \
                elastic_launch_only(script.path, script.hydra_configs)
        return self.__dict__["_elastic_only_seen"]

    def rank_option_unset(self) -> frozenset:
        """The `--rank` options (their dests) that keep their default on every rank: declared with
        a number for default, no launch written beside the script that starts it on several
        processes hands them (and one is written: `torch.distributed.launch` hands `--local_rank`
        alone), and no function the script reaches sets the field - GRAE-3DMOT's `opts.rank =
        rank` sits in a set-up helper nothing calls. A test on such an option (`if opts.rank ==
        0:`) holds alike on every rank."""
        held = self.__dict__.get("_rank_option_unset")
        if held is None or held[0] != len(self.files):
            found = frozenset()
            script = self.sources[0] if self.sources else None
            declared = {dest for dest, _ in declared_options(self.files).values() if dest in _GLOBAL_RANK_OPTIONS}
            if declared and script is not None and script.path is not None:
                self.option_defaults()
                defaults = self.__dict__["_declared_defaults"]
                # (the launch files are read once: the answer is asked again as more modules are read)
                if "_multi_process_options" not in self.__dict__:
                    self.__dict__["_multi_process_options"] = multi_process_options(script.path, script.hydra_configs)
                given = self.__dict__["_multi_process_options"]
                if given is not None:
                    # (a function no file names but its own `def` is never called; asked during the
                    # walk, before what it reaches is known)
                    named = self.name_counts()
                    live = [fn for fn in self.functions if fn.node is not None and (
                        fn.node.__class__ is ast.Module or named[fn.name] > 1)]
                    # (not `self.rank = rank` of a sampler: a field of its own object)
                    set_here = {name for fn in live for name in _fields_set(fn)}
                    found = frozenset(d for d in declared if isinstance(defaults.get(d), int)
                                      and not isinstance(defaults.get(d), bool) and d not in given and d not in set_here)
            held = self.__dict__["_rank_option_unset"] = (len(self.files), found)
        return held[1]

    def config_defaults(self) -> dict:
        """defaults.config_defaults over the files read (redone when more are read)."""
        held = self.__dict__.get("_config_defaults")
        if held is None or held[0] != len(self.files):
            held = self.__dict__["_config_defaults"] = (len(self.files), defaults.config_defaults(
                self.files, self.config_roots()))
        return held[1]

    def config_roots(self) -> frozenset:
        """defaults.config_roots over the files read (redone when more are read)."""
        held = self.__dict__.get("_config_roots")
        if held is None or held[0] != len(self.files):
            held = self.__dict__["_config_roots"] = (len(self.files), defaults.config_roots(self.files))
        return held[1]

    def setup_switches(self) -> frozenset:
        """The texts of the plain tests (`args.parallel`) whose side starts the distributed run:
        it calls mp.spawn or init_process_group, or a local function that does (`if
        args.parallel: ddp_setup(rank, world)`). Whatever such a switch is called, the launch
        that leaves it off is the one-process run, not one that switches the findings off."""
        found = self.__dict__.get("_setup_switches")
        if found is None:
            found = set()
            for fn in self.reachable:
                for node in fn.own_of(ast.If):
                    said = patterns.text(node.test, 80)
                    if not said.replace(".", "_").isidentifier() or said in found:
                        continue
                    if self.starts_run(node.body, fn):
                        found.add(said)
            found = self.__dict__["_setup_switches"] = frozenset(found)
        return found

    def _distributed_picks(self, candidates: list, name: ast.AST, fn: Function) -> list:
        """Of the classes a configured name may pick (`getattr(trainers, config.trainer)`), those
        whose names hold the part fn tests before it joins the process group (`if "FSDP" in
        config.trainer: init_distributed(...)`): only they run in a distributed job. All of them
        where no such test is seen, or none fits it."""
        said = dotted(name)
        if not said:
            return candidates
        for node in fn.own_of(ast.If):
            test = node.test
            if test.__class__ is ast.Compare and len(test.ops) == 1 and test.ops[0].__class__ is ast.In \
                    and test.left.__class__ is ast.Constant and isinstance(test.left.value, str) \
                    and dotted(test.comparators[0]) == said and defaults.DIST_SWITCH.search(test.left.value) \
                    and self.starts_run(node.body, fn):
                return [k for k in candidates if test.left.value in k.name] or candidates
        return candidates

    def starts_run(self, body: list, fn: Function) -> bool:
        """The statements call what starts the distributed run (patterns.RUN_STARTS:
        init_process_group, mp.spawn, ...), or a local function whose own calls do (`ddp_setup(rank,
        world)`)."""
        calls = [c for stmt in body for c in walk(stmt) if c.__class__ is ast.Call]
        return any(last_name(c.func) in patterns.RUN_STARTS or any(
            any(last_name(inner.func) in patterns.RUN_STARTS for inner in t.own_calls)
            for t in self.resolve(c.func, fn)[0] if t.node is not None) for c in calls)

    def off_at_launch(self, klass: Klass) -> frozenset:
        """The ids of the nodes on the sides of the class's `if` tests that the run as launched
        never takes (defaults.settled: `if args.keep_trig_attn:` of a store_true no launch
        passes): what they would build is not in the model. Worked out once per class."""
        memo = self.__dict__.setdefault("_off_at_launch", {})
        if id(klass) not in memo:
            dead: set = set()
            for branch in walk(klass.node):
                if branch.__class__ is ast.If:
                    taken = defaults.settled(branch.test, self)
                    if taken is not None:
                        for stmt in (branch.orelse if taken else branch.body):
                            dead.update(id(n) for n in walk(stmt))
            memo[id(klass)] = frozenset(dead)
        return memo[id(klass)]

    def named_config_values(self, path: tuple) -> Optional[tuple[set, bool]]:
        """What the YAML configs the launches beside the script name give a nested key
        (config_files.named_configs_values: the values, and whether some file leaves it to the
        code's default); None where the launches name none. Once per key."""
        memo = self.__dict__.setdefault("_named_config_values", {})
        if path not in memo:
            self.option_defaults()  # (reads the launches once)
            script = self.sources[0] if self.sources else None
            launched = self.__dict__.get("_launched_values") or {}
            memo[path] = None if script is None or script.path is None else \
                named_configs_values(script.path, launched, path, script.hydra_configs)
        return memo[path]

    def config_file_values(self, path: tuple, lists: bool = False) -> Optional[set]:
        """What the YAML configs beside the script set at a nested key (config_files.config_values;
        None: not known), worked out once per key over files read once. lists: the elements of
        the lists they set there."""
        memo = self.__dict__.setdefault("_config_file_values", {})
        key = (path, lists)
        if key not in memo:
            script, bodies = self._configs_beside()
            memo[key] = set() if script is None else config_values(script.path, bodies, path, script.hydra_configs, lists)
        return memo[key]

    def _configs_beside(self) -> tuple:
        """(the script's source, the YAML/TOML files beside it, read once); (None, []) without one."""
        script = self.sources[0] if self.sources else None
        if script is None or script.path is None:
            return None, []
        if "_yaml_beside" not in self.__dict__:
            self.__dict__["_yaml_beside"] = yaml_beside(script.path)
        return script, self.__dict__["_yaml_beside"]

    def config_key_anywhere(self, key: str) -> Optional[set]:
        """What the YAML configs beside the script give a key at any depth (config_files.
        key_values_anywhere), worked out once per key."""
        memo = self.__dict__.setdefault("_config_key_anywhere", {})
        if key not in memo:
            script, bodies = self._configs_beside()
            memo[key] = set() if script is None else key_values_anywhere(bodies, key, script.hydra_configs)
        return memo[key]

    # ------------------------------------------------------------------ what calls mean
    # What a call means for DDP is patterns.py's knowledge; these stay as the names the fact
    # gatherers call.
    def uses(self, package: str) -> bool:
        return package in self.imported

    def uses_lightning(self) -> bool:
        return self.uses("lightning") or self.uses("pytorch_lightning")

    def collective(self, call: ast.Call, fn: Function) -> Optional[str]:
        """What a call is, in the user's words, when it is a collective (or ends in one); asked of
        every call by the walk, and again by later rules: answered once per call."""
        known = self.__dict__.get("_collective")
        if known is None:
            known = self.__dict__["_collective"] = {}
        key = (id(call), id(fn))
        if key not in known:
            known[key] = patterns.collective(self, call, fn)
        return known[key]

    def ddp_call(self, value: ast.AST, fn: Function) -> bool:
        # (asked of every call by the walk and again by the rules: 26,000 asks over torchcv's
        # 5,600 calls; answered once per call and scope until a module read late changes them)
        known = self.__dict__.get("_ddp_calls")
        if known is None:
            known = self.__dict__["_ddp_calls"] = {}
        key = (id(value), id(fn))
        if key not in known:
            known[key] = patterns.ddp_call(self, value, fn)
        return known[key]

    def ddp_model(self, call: ast.Call, fn: Function) -> Optional[tuple[ast.Call, Function]]:
        """The DDP(...) call that a called name or `self.attr` holds, if any."""
        return patterns.ddp_model(self, call, fn)

    def has_buffers(self, ddp: ast.Call, fn: Function) -> bool:
        """The wrapped module visibly holds buffers that DDP broadcasts (broadcast_buffers on)."""
        return patterns.has_buffers(self, ddp, fn)


# the most subclasses' own methods a base's `self.hook(...)` is taken to run (more: a mixin any
# class may carry, told as weak ways in only)
_HOOK_OVERRIDES = 4


def explicit_self(target: Function, call: ast.Call) -> int:
    """1 where a method is called through its class with the instance handed first
    (`BaseModel.initialize(self, opt, rank)`, `nn.Module.__init__(self)`): that `self` is no
    argument of the method's parameters after it; 0 otherwise."""
    func = call.func
    if target.cls is None or not call.args or func.__class__ is not ast.Attribute:
        return 0
    first = call.args[0]
    if not (first.__class__ is ast.Name and first.id == "self"):
        return 0
    receiver = func.value
    if receiver.__class__ is ast.Name and receiver.id in ("self", "cls") or receiver.__class__ is ast.Call:
        return 0  # `self.m(self)`, `super().m(...)`: bound already
    node = target.node
    if any(getattr(d, "id", None) in ("staticmethod", "classmethod") for d in getattr(node, "decorator_list", ())):
        return 0
    declared = [a.arg for a in node.args.posonlyargs + node.args.args] if getattr(node, "args", None) else []
    return 1 if declared[:1] == ["self"] else 0


_WORD = re.compile(r"\w+")
# every ASCII byte that is no word character, as a space: an ASCII text's words are then what
# str.split() gives (the same words, in the same order, as _WORD finds, at a third of the cost)
_NOT_WORD = bytes(i for i in range(128) if not (chr(i).isalnum() or chr(i) == "_"))
_SPACES = bytes.maketrans(_NOT_WORD, b" " * len(_NOT_WORD))


def _words(text: str) -> list[str]:
    """The words (`\\w+`) of a text, in order."""
    if text.isascii():
        return text.encode("ascii").translate(_SPACES).decode("ascii").split()
    return _WORD.findall(text)


# What torch.nn.Module calls on a subclass by name (a method only these name is still live).
_MODULE_HOOKS = frozenset({"forward", "extra_repr", "reset_parameters", "train", "eval",
                           "_load_from_state_dict", "_save_to_state_dict", "_apply"})


# Method names too common to guess a receiver by (fabric.save, model.train, optimizer.step).
COMMON_METHODS = {"save", "load", "step", "update", "forward", "run", "train", "eval", "close", "reset",
                  "log", "write", "read", "get", "set", "add", "append", "put", "start", "stop", "to",
                  "state_dict", "load_state_dict", "save_checkpoint", "load_checkpoint", "backward",
                  "zero_grad", "apply", "build", "setup", "__init__", "__call__", "fit", "predict",
                  "test", "validate", "evaluate", "compute", "print", "info", "warning", "flush"}


def _rows(table: ast.AST, path: Optional[list], level: int) -> list:
    """A table literal's entries at one level of a subscript path: those under the key the
    path spells there (a constant), or all of them."""
    if table.__class__ is not ast.Dict:
        return list(table.elts)
    return [v for k, v in zip(table.keys, table.values) if k is None or _key_fits(k, path, level)]


def _key_fits(key: ast.AST, path: Optional[list], level: int) -> bool:
    """A dict key matches the subscript at that level: no path, a key that is not a constant,
    or the path's key not a constant, all fit; two constants fit when equal."""
    wanted = path[level] if path and level < len(path) else None
    if not (isinstance(wanted, ast.Constant) and isinstance(key, ast.Constant)):
        return True
    return key.value == wanted.value


def _record_fields_of(klass: Klass) -> list[str]:
    """_record_field_names of a class, read once (the record index is made again after each
    module read: 20 times over 550 classes on h130A_cascast)."""
    found = klass.__dict__.get("_record_fields")
    if found is None:
        found = klass.__dict__["_record_fields"] = _record_field_names(klass.node)
    return found


def _field_given(call: ast.Call, attr: str, place: Optional[int]) -> Optional[ast.AST]:
    """What a record's construction hands its field: by keyword, or at the field's place
    (place None: keywords only, a `**kwargs` constructor); None where it hands nothing."""
    given = next((kw.value for kw in call.keywords if kw.arg == attr), None)
    if given is None and place is not None and place < len(call.args) and \
            not any(a.__class__ is ast.Starred for a in call.args):
        given = call.args[place]
    return given


def _sets_each_keyword(init: ast.AST, spread: str) -> bool:
    """`for k, v in kwargs.items(): setattr(self, k, v)` or `self.__dict__.update(kwargs)` in a
    constructor's body (spread: its `**` parameter's name)."""
    for stmt in init.body:
        if stmt.__class__ is ast.For and stmt.iter.__class__ is ast.Call and stmt.iter.func.__class__ is ast.Attribute \
                and stmt.iter.func.attr == "items" and stmt.iter.func.value.__class__ is ast.Name \
                and stmt.iter.func.value.id == spread and any(
                    n.__class__ is ast.Call and last_name(n.func) == "setattr" and n.args
                    and n.args[0].__class__ is ast.Name and n.args[0].id == "self" for part in stmt.body for n in ast.walk(part)):
            return True
        if stmt.__class__ is ast.Expr and stmt.value.__class__ is ast.Call and dotted(stmt.value.func) == "self.__dict__.update" \
                and len(stmt.value.args) == 1 and stmt.value.args[0].__class__ is ast.Name and stmt.value.args[0].id == spread:
            return True
    return False


def _namedtuple_fields(value: ast.AST) -> list[str]:
    """The field names of `namedtuple("Env", ["a", "b"])` / `namedtuple("Env", "a b")` (literal
    names only); [] for any other value."""
    if value.__class__ is not ast.Call or last_name(value.func) != "namedtuple" or len(value.args) < 2:
        return []
    names = value.args[1]
    if names.__class__ is ast.Constant and isinstance(names.value, str):
        return names.value.replace(",", " ").split()
    if names.__class__ in (ast.List, ast.Tuple) and all(
            e.__class__ is ast.Constant and isinstance(e.value, str) for e in names.elts):
        return [e.value for e in names.elts]
    return []


def _record_field_names(node: ast.ClassDef) -> list[str]:
    """The fields of a `@dataclass` or `NamedTuple` class, in order; [] for any other class."""
    record = any(last_name(d.func if isinstance(d, ast.Call) else d) in ("dataclass", "define", "frozen")
                 for d in node.decorator_list) or any(last_name(b) == "NamedTuple" for b in node.bases)
    # a pydantic model (`class TrainConfig(BaseModel): device: int`): its fields are the keywords
    # of each construction; not a class of that base name with a constructor of its own
    record = record or (any(last_name(b) in ("BaseModel", "BaseSettings") for b in node.bases) and not any(
        isinstance(stmt, ast.FunctionDef) and stmt.name == "__init__" for stmt in node.body))
    if not record:
        return []
    return [stmt.target.id for stmt in node.body
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)]


def _paired_iterables(target: ast.Tuple, iterated: ast.AST) -> list[tuple[str, ast.AST]]:
    """(name, what it iterates) of a tuple loop target over `zip(a, b)` (each its own) or
    `enumerate(a)` (the second name over `a`)."""
    if iterated.__class__ is not ast.Call or iterated.keywords:
        return []
    kind = last_name(iterated.func)
    elts = target.elts
    if kind == "zip" and len(iterated.args) == len(elts):
        return [(t.id, a) for t, a in zip(elts, iterated.args) if t.__class__ is ast.Name]
    if kind == "enumerate" and len(elts) == 2 and len(iterated.args) == 1 and elts[1].__class__ is ast.Name:
        return [(elts[1].id, iterated.args[0])]
    return []


def _annotations(fn: Function) -> dict[str, ast.AST]:
    """A function's declared types by name: its parameters' and its annotated assignments',
    each reduced to the class it names (`X`, `"X"`, `X | None`, `Optional[X]`)."""
    found: dict[str, ast.AST] = {}
    args = getattr(fn.node, "args", None)
    pairs = [(a.arg, a.annotation) for a in args.posonlyargs + args.args + args.kwonlyargs] if args else []
    pairs += [(n.target.id, n.annotation) for n in fn.own
              if n.__class__ is ast.AnnAssign and n.target.__class__ is ast.Name]
    for name, note in pairs:
        named = _named_type(note)
        if named is not None:
            found[name] = named
    return found


def _named_type(note: Optional[ast.AST]) -> Optional[ast.AST]:
    if isinstance(note, ast.Constant) and isinstance(note.value, str):
        try:
            note = ast.parse(note.value, mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None  # not a type the source spells: nothing to follow
    if isinstance(note, ast.BinOp) and isinstance(note.op, ast.BitOr):  # X | None
        sides = [s for s in (note.left, note.right) if not (isinstance(s, ast.Constant) and s.value is None)]
        return _named_type(sides[0]) if len(sides) == 1 else None
    if isinstance(note, ast.Subscript) and dotted(note.value) in ("Optional", "typing.Optional"):
        return _named_type(note.slice)
    return note if isinstance(note, (ast.Name, ast.Attribute)) else None


def _module_function(program, value: ast.AST, scope: Function, symbol) -> bool:
    """`load = fastmri.load_data` (then `load(...)`): a function of a local module picked into a
    name through the module, as `run = train` picks one by its own name."""
    return value.__class__ is ast.Attribute and value.value.__class__ is ast.Name and \
        symbol.__class__ is Function and symbol.cls is None and symbol.node.__class__ is not ast.Module and \
        program.symbol(value.value.id, scope).__class__ is Module


def _in_dead_span(value: ast.AST, owner: Function, program: "Program") -> bool:
    """The value sits in a block of its function that no run takes: one the walk skipped, or
    (asked before the walk reached the function: a field a method reads is bound in a constructor
    walked later) a side of an `if` the config files or the source's constants settle."""
    line = getattr(value, "lineno", None)
    if line is None or owner.node is None or owner.node.__class__ is ast.Module:
        return False
    dead = owner.__dict__.get("_dead_spans") or ()
    if any(start <= line <= end for start, end in dead):
        return True
    settled = owner.__dict__.get("_settled_spans")
    if settled is None:
        nesting = program.__dict__.get("_settling", 0)
        if nesting >= 2:
            return False  # (a test's reading asking of another function's tests, and so on: not followed)
        owner.__dict__["_settled_spans"] = ()  # (asked again while it is worked out: nothing known yet)
        program.__dict__["_settling"] = nesting + 1
        try:
            settled = owner.__dict__["_settled_spans"] = defaults.settled_spans(owner, program)
        finally:
            program.__dict__["_settling"] = nesting
    return any(start <= line <= end for start, end in settled)


def _reaching(found: list, use: ast.AST, fn: Function) -> list:
    """The bindings of a name (in the function that reads it) that can reach this use: not one
    written below it, unless a loop holds both (the next pass reads it). `if shuffle: return
    Loader(dataset, sampler=DistributedSampler(dataset))` then `dataset = Subset(dataset, rank
    ...)`: the sampler shards the parameter, not the rank's subset."""
    line = getattr(use, "lineno", None)
    if line is None:
        return found
    # a binding in fn's own top-level body, a statement above the use's, is the one it reads
    # (`sampler = DistributedSampler(ds)` under `if distributed:`, then `sampler =
    # SubsetRandomSampler(idx)` for every run: ESD's loaders): the earlier ones are gone
    last = max((start for start, end in _top_assigned(fn).get(use.id, ()) if end < line), default=0)
    if last:
        found = [b for b in found if b[2] is not fn or b[0] >= last]
    if all(bound <= line for bound, _, _ in found):
        return found
    spans = fn.__dict__.get("_loop_spans")
    if spans is None:
        spans = fn.__dict__["_loop_spans"] = [
            (n.lineno, getattr(n, "end_lineno", n.lineno)) for n in fn.own
            if n.__class__ in (ast.For, ast.While, ast.AsyncFor)]
    once = _first_pass_spans(fn)
    return [(bound, value, scope) for bound, value, scope in found
            if bound <= line or any(start <= line and bound <= end for start, end in spans)
            and not any(start <= line <= end and start <= bound <= end for start, end in once)]


def _first_pass_spans(fn: Function) -> list[tuple[int, int]]:
    """The lines of each `if first_time:` block inside a loop that runs on the loop's first pass
    alone: the flag is set True before the loop and only ever to False inside it, by a statement
    every pass runs (at the loop body's top level, or in such a block itself), and nothing in the
    body skips to the next pass (`continue`). A binding further down the block never reaches a
    use above it through the loop (ORBIT-2's `load_checkpoint_pretrain(model, ...)` before
    `model = FSDP(model, ...)`, both on the first pass). Worked out once per function."""
    found = fn.__dict__.get("_first_pass_spans")
    if found is not None:
        return found
    found = fn.__dict__["_first_pass_spans"] = []
    if fn.node is None or not fn.own_of(ast.If):
        return found
    for loop in fn.own_of(ast.For, ast.While):
        body_nodes = own_nodes_of(list(loop.body))
        if any(n.__class__ is ast.Continue for n in body_nodes):
            continue
        for block in loop.body:
            if not (block.__class__ is ast.If and block.test.__class__ is ast.Name and not block.orelse):
                continue
            flag = block.test.id
            sets = [n for n in body_nodes if n.__class__ is ast.Assign and len(n.targets) == 1
                    and n.targets[0].__class__ is ast.Name and n.targets[0].id == flag
                    and n.value.__class__ is ast.Constant and n.value.value is False]
            stores = [n for n in body_nodes if n.__class__ is ast.Name and n.id == flag and n.ctx.__class__ is ast.Store]
            if not sets or len(stores) != len(sets):
                continue  # (bound otherwise too - `first, x = True, 1`, `for first in ...`: not only ever False)
            resets = [stmt for stmt in loop.body if stmt in sets or (
                stmt.__class__ is ast.If and stmt.test.__class__ is ast.Name and stmt.test.id == flag
                and any(s in sets for s in stmt.body))]
            before = [n for n in fn.own_of(ast.Assign) if n.lineno < loop.lineno and any(
                t.__class__ is ast.Name and t.id == flag for t in n.targets)]
            if resets and before and all(n.value.__class__ is ast.Constant and n.value.value is True for n in before):
                found.append((block.lineno, block.end_lineno or block.lineno))
    return found


def _top_assigned(fn: Function) -> dict[str, list[tuple[int, int]]]:
    """{name: [(first line, last line)]} of each plain assignment of fn's own top-level body that
    binds the name (alone or in a tuple) to a value that does not read it, made once."""
    found = fn.__dict__.get("_top_assigned")
    if found is None:
        found = fn.__dict__["_top_assigned"] = {}
        body = getattr(fn.node, "body", ()) if fn.node.__class__ is not ast.Module else ()
        for stmt in body if body.__class__ is list else ():  # (a lambda's body is one expression)
            if stmt.__class__ is ast.Assign:
                read = None  # the names the value reads, gathered once per statement
                for target in stmt.targets:
                    for name in (target.elts if target.__class__ in (ast.Tuple, ast.List) else [target]):
                        if name.__class__ is not ast.Name:
                            continue
                        if read is None:
                            read = {n.id for n in walk(stmt.value) if n.__class__ is ast.Name}
                        # (not `x = x.to(device)`, `ds = ds.map(f) if ... else ds`: the new
                        # value is made of the old, whose sources still say what it holds)
                        if name.id not in read:
                            found.setdefault(name.id, []).append((stmt.lineno, stmt.end_lineno or stmt.lineno))
    return found


def _entry_reaches(fn: Function, use: ast.Name) -> bool:
    """The parameter's value fn was entered with may reach this use past fn's own bindings of the
    name (each under an `if` that may not run)."""
    top = fn.__dict__.get("_top_bound")
    if top is None:  # the names fn's own body rebinds outright, by the first line it does
        top = fn.__dict__["_top_bound"] = {}
        for stmt in getattr(fn.node, "body", ()):
            if stmt.__class__ is ast.Assign:
                for target in stmt.targets:
                    if target.__class__ is ast.Name:
                        top.setdefault(target.id, stmt.lineno)
    if top.get(use.id, 1 << 30) < getattr(use, "lineno", 0):
        return False  # `x = x.to(device)` before the use, on every way: the entry value is gone
    unwrapped = fn.__dict__.setdefault("_unwrapped", {})
    if use.id not in unwrapped:
        unwrapped[use.id] = any(value.__class__ is ast.Attribute and value.attr == "module" and
                                value.value.__class__ is ast.Name and value.value.id == use.id
                                for _, value in fn.bindings.get(use.id, ()))
    if unwrapped[use.id]:
        # `if args.distributed: model = model.module` (open_clip's zero-shot): the author unwraps
        # where it is wrapped; the value entering on the other side is no wrapper
        return False
    flow = reaching.reaching_values(fn.node, use.id, use, params=True) if fn.node is not None else None
    return bool(flow) and any(value.__class__ is ast.arg for value in flow)


def _scoped(scope: Function, name: str) -> list:
    """(line, value, scope) of each binding of name in scope, made once per name and shared:
    the callers only read it (a name bound 600 times is looked up at each of its uses)."""
    made = scope.__dict__.get("_scoped")
    if made is None:
        made = scope.__dict__["_scoped"] = {}
    found = made.get(name)
    if found is None:
        found = made[name] = [(line, value, scope) for line, value in scope.bindings[name]]
    return found


def _fitting(names: dict, spec: tuple) -> list:
    """The classes and module-level functions of a module's names that fit a name pattern
    (prefix, suffix): `getattr(module, model_name + "Trainer")`."""
    return [k for name, k in names.items() if name.startswith(spec[0]) and name.endswith(spec[1])
            and (k.__class__ is Klass or (k.__class__ is Function and k.cls is None))]


def _nearest(found: list, use: ast.AST, fn: Function) -> list:
    """Of a name's many bindings (MANY_BINDINGS) in fn: those the flow says reach the use, or
    else, of those _reaching keeps, the MANY_BINDINGS nearest it by line."""
    flow = reaching.reaching_values(fn.node, use.id, use) if fn.node is not None else None
    line = getattr(use, "lineno", 0)
    if flow is not None:
        # a name rebound under 200 tests reaches each use with every earlier binding: the
        # nearest MANY_BINDINGS say what it holds there (all of them would make each read cost
        # as much as the function, and the whole function quadratic)
        found = [(getattr(value, "lineno", 0), value, fn) for value in flow]
        return found if len(found) <= MANY_BINDINGS else \
            sorted(found, key=lambda bound: abs(bound[0] - line))[:MANY_BINDINGS]
    return sorted(_reaching(found, use, fn), key=lambda bound: abs(bound[0] - line))[:MANY_BINDINGS]


def _module_alias(module, name: str) -> Optional[str]:
    """The one plain name a module's top level binds `name` to (`Extractor = ExtractorCV2`), if any."""
    body = module.body
    bound = body.bindings.get(name, []) if body is not None else []
    return bound[0][1].id if len(bound) == 1 and bound[0][1].__class__ is ast.Name and bound[0][1].id != name else None


def _is_partial(call: ast.Call) -> bool:
    """`functools.partial(f, ...)` / `partial(f, ...)`, by its last name as walker.partial_target
    and worker_seeds read it."""
    return last_name(call.func) == "partial"


def is_property(node: ast.AST) -> bool:
    """A method decorated `@property` (read as an attribute, not called)."""
    return any(last_name(d) == "property" for d in getattr(node, "decorator_list", ()))


def _stub(node: ast.AST) -> bool:
    """A method that does nothing itself: `raise NotImplementedError`, `pass` or `...` (after its
    docstring), or an @abstractmethod: a hook its subclasses fill."""
    if any(last_name(d) == "abstractmethod" for d in getattr(node, "decorator_list", ())):
        return True
    body = [s for s in getattr(node, "body", ()) if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                                        and isinstance(s.value.value, str))]
    if len(body) != 1:
        return not body
    only = body[0]
    if isinstance(only, ast.Raise):
        exc = only.exc.func if isinstance(only.exc, ast.Call) else only.exc
        return last_name(exc) == "NotImplementedError" if exc is not None else False
    return isinstance(only, ast.Pass) or (isinstance(only, ast.Expr) and isinstance(only.value, ast.Constant)
                                          and only.value.value is Ellipsis)


def _runs_backward(fn: Function) -> bool:
    """The function calls a backward (`loss.backward()`, `scaler.scale(loss).backward()`,
    `accelerator.backward(loss)`): a training step."""
    return any(call.func.__class__ is ast.Attribute and call.func.attr == "backward" for call, _, _ in fn.calls)


def _registered(node: ast.AST) -> bool:
    """A class or function decorated by a registration (`@REGISTRY.register_module()`,
    `@register_task("x")`, `@ENGINE.register_function()`)."""
    return any(True for _ in _registrations(node))


def _registrations(node: ast.AST) -> Iterator[ast.AST]:
    """The registering decorators of a class or function, as called: `REGISTRY.register_module`
    of `@REGISTRY.register_module()`, `register_task` of `@register_task("x")`."""
    for deco in getattr(node, "decorator_list", ()):
        func = deco.func if isinstance(deco, ast.Call) else deco
        if (last_name(func) or "").startswith("register"):
            yield func


# Table literals: a class put in a registry (`BACKENDS = {"nccl": DDPBackend}`) is handed on
# like `factory = DDPBackend`, and `BACKENDS[name](args)` calls any of its entries.
_TABLES = (ast.Dict, ast.List, ast.Tuple)


def _console_entry(module: Module) -> Optional[Function]:
    """The `main` of an entry file that runs nothing itself: only definitions and imports, no
    `__main__` block. Such a file is a console script's module (`entry_points` names
    `pkg.cli:main`); its `main` is what the command runs, so the lint starts there too."""
    main = module.functions.get("main")
    return None if main is None or top_level_runs(module.file.tree) else main


def _identifiers(source: SourceFile) -> frozenset:
    """The identifiers a module's text spells, read once (asked for each name a factory's
    parameter test is settled on, over every module not read yet)."""
    found = source.__dict__.get("_identifiers")
    if found is None:
        found = source.__dict__["_identifiers"] = frozenset(_words(source.text or ""))
    return found


def _imported_entries(module: Module) -> list[Function]:
    """The functions of an entry file that runs nothing itself and has no `main`, which nothing
    in the file names: what a launcher elsewhere imports and starts (vi-tacotron2's workers.py,
    whose `train_worker(rank, world_size, hparams)` a notebook hands to mp.spawn). Only the
    roots: a helper the file's own functions call is reached from them."""
    tree = module.file.tree
    if tree is None or top_level_runs(tree):
        return []
    # (by bare name: `model.train()` names an attribute of a model, not the file's own train())
    named = {n.id for n in walk(tree) if n.__class__ is ast.Name and n.ctx.__class__ is ast.Load}
    # (not one a decorator registers - sacred's `@ex.main` waits for `ex.run_commandline()`)
    return [fn for name, fn in module.functions.items() if fn.node is not None and name not in named
            and not name.startswith("_") and not getattr(fn.node, "decorator_list", None)]


# Decorators that run the function when its file runs as the script: sacred's `@ex.automain`
# (ViLT, METER: `def main(_config)`, called by no line of the source).
RUNNING_DECORATORS = {"automain"}


def _decorated_entries(module: Module) -> list[Function]:
    """The entry file's functions a decorator runs (RUNNING_DECORATORS)."""
    return [fn for fn in module.functions.values() if fn.node is not None and any(
        last_name(d.func if isinstance(d, ast.Call) else d) in RUNNING_DECORATORS
        for d in getattr(fn.node, "decorator_list", ()))]


def top_level_runs(tree: ast.Module) -> bool:
    """The file does something when run: a `__main__` block, or top-level calls or loops (a
    script), not only definitions and imports (a module that scripts import)."""
    for stmt in tree.body:
        if isinstance(stmt, (ast.For, ast.While, ast.With, ast.AsyncFor, ast.AsyncWith)):
            return True
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            return True
        if isinstance(stmt, ast.If) and "__main__" in ast.unparse(stmt.test):
            return True
    return False


def _imports_locally(fn: Function, name: str) -> bool:
    """fn (or a function around it) imports `name` in its own body."""
    scope: Optional[Function] = fn
    while scope is not None and scope.node is not None and not isinstance(scope.node, ast.Module):
        names = scope.__dict__.get("_local_imports")
        if names is None:
            names = scope.__dict__["_local_imports"] = {
                (a.asname or a.name.split(".")[0]) for n in scope.own if n.__class__ in (ast.Import, ast.ImportFrom)
                for a in n.names}
        if name in names:
            return True
        scope = scope.parent
    return False


def _star_bases(module: Module) -> list[str]:
    """The modules a module star-imports (`from .base import *`), in its imports' order: the
    lookups through stars ask it for each name they miss, and a package's __init__ imports
    hundreds of names, few or none of them stars. (A module's imports never change once read.)"""
    found = module.__dict__.get("_star_bases")
    if found is None:
        found = module.__dict__["_star_bases"] = [base for key, base in module.imports.items() if key[0] == "*"]
    return found


def _import_map(source: SourceFile) -> dict[str, str]:
    """A module's imports: alias -> full dotted name (relative imports resolved)."""
    imports: dict[str, str] = {}
    package = _package_of(source)
    nested: set[str] = set()  # names an indented import bound first
    for node in source.imports:
        if node.col_offset > 0:
            # `try: from . import rotary` / `except ImportError: import rotary`: the fallbacks
            # after the first indented import of a name run only where it failed; the first
            # is the one the project's own layout answers
            bound = [a.asname or (a.name.split(".")[0] if isinstance(node, ast.Import) else a.name)
                     for a in node.names if a.name != "*"]
            if any(b in nested for b in bound):
                continue
            nested.update(bound)
        imports.update(_bound_by(node, package))
    return imports


def _package_of(source: SourceFile) -> str:
    name = source.module or source.import_name  # the script's relative imports: from its package
    return name if source.path.name == "__init__.py" else name.rpartition(".")[0]


def _bound_by(node: ast.AST, package: str) -> dict[str, str]:
    """What one import statement binds: alias -> full dotted name (`*base` for a star import)."""
    bound: dict[str, str] = {}
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                bound[alias.asname] = alias.name
            else:
                bound[alias.name.split(".")[0]] = alias.name.split(".")[0]
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            anchor = package.split(".") if package else []
            keep = max(0, len(anchor) - (node.level - 1))
            base = ".".join(anchor[:keep] + ([base] if base else []))
        for alias in node.names:
            if alias.name != "*":
                bound[alias.asname or alias.name] = f"{base}.{alias.name}" if base else alias.name
            elif base:
                bound[f"*{base}"] = base  # `from .utils import *`: full_symbol looks there last
    return bound


def _import_branches(source: SourceFile) -> dict[str, list]:
    """Names an if/elif chain imports on two sides or more: name -> [(test, full)], in the
    chain's order (Module.import_branches). A chain at the top level, or in a function's body
    (LUMOS' `if arg.application == "minist": from applications.minist import model` / `elif
    ...` in train(): the model module the --application default picks)."""
    found: dict[str, list] = {}
    package = _package_of(source)
    chains = list(source.tree.body)
    elifs = set()
    for node in source.of(ast.If):
        if len(node.orelse) == 1 and node.orelse[0].__class__ is ast.If:
            elifs.add(id(node.orelse[0]))
        if node.col_offset > 0 and id(node) not in elifs and any(
                n.__class__ in (ast.Import, ast.ImportFrom) for n in node.body):
            chains.append(node)
    for stmt in chains:
        if id(stmt) in elifs:
            continue
        sides: dict[str, list] = {}
        while isinstance(stmt, ast.If):
            for node in stmt.body:
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    for name, full in _bound_by(node, package).items():
                        if name[0] != "*":
                            sides.setdefault(name, []).append((stmt.test, full))
            if stmt.orelse and stmt.orelse[0].__class__ is not ast.If:
                # the chain's `else:` (test None): DSTC9's `if "--generate" in sys.argv: from
                # baseline import generate as main` / `else: from baseline import main`
                for node in stmt.orelse:
                    if isinstance(node, (ast.Import, ast.ImportFrom)):
                        for name, full in _bound_by(node, package).items():
                            if name[0] != "*":
                                sides.setdefault(name, []).append((None, full))
            stmt = stmt.orelse[0] if len(stmt.orelse) == 1 else None
        found.update({name: branches for name, branches in sides.items() if len(branches) > 1})
    return found


def _module_nodes(tree: ast.Module) -> list[ast.AST]:
    """A module's top-level code, class bodies included (they run at import), not function bodies
    (their decorators are: they run at import too)."""
    out = []
    for node in own_nodes(tree, _FUNCTIONS):
        out.append(node)
        if isinstance(node, _FUNCTIONS) and not isinstance(node, ast.Lambda):
            out.extend(own_nodes_of(node.decorator_list, _FUNCTIONS))
    return out


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_BINDERS = {ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.withitem}  # what binds a name


def _own_nodes(root: ast.AST) -> list[ast.AST]:
    """Every node of a function body, not descending into nested defs, classes or lambdas."""
    return own_nodes(root)


def _option_read(value: ast.AST) -> Optional[str]:
    """The option a value reads by name: `opts.pop("Model")`, `opts.get("Model")`,
    `opts["Model"]`, `args.Model`; None otherwise."""
    if value.__class__ is ast.Call and value.func.__class__ is ast.Attribute and value.func.attr in ("pop", "get") \
            and value.args and value.args[0].__class__ is ast.Constant and isinstance(value.args[0].value, str):
        return value.args[0].value
    if value.__class__ is ast.Subscript and value.slice.__class__ is ast.Constant and isinstance(value.slice.value, str):
        return value.slice.value
    if value.__class__ is ast.Attribute and value.value.__class__ is ast.Name and value.value.id in ("args", "opts", "opt", "cfg", "config"):
        return value.attr
    return None


def _walks_a_namespace(fn: Function) -> bool:
    """fn loops over a module's namespace (`for k, v in mod.__dict__.items()`, `vars(mod)`):
    asked once per function, before the costlier look at which names such a loop binds."""
    found = fn.__dict__.get("_walks_namespace")
    if found is None:
        found = fn.__dict__["_walks_namespace"] = fn.node is not None and any(
            n.__class__ is ast.For and n.iter.__class__ is ast.Call and n.iter.func.__class__ is ast.Attribute
            and n.iter.func.attr == "items" for n in walk(fn.node)) and any(
            (n.__class__ is ast.Attribute and n.attr == "__dict__") or
            (n.__class__ is ast.Call and n.func.__class__ is ast.Name and n.func.id == "vars") for n in walk(fn.node))
    return found


def _handed_list(value: ast.AST, fn: Function) -> bool:
    """The unpacked side is a parameter fn never rebinds: its items are what the callers hand."""
    return value.__class__ is ast.Name and (value.id in fn.params or value.id in fn.kwonly) \
        and not fn.bindings.get(value.id)


def _unpacked_sides(value: ast.AST) -> list[ast.AST]:
    """The calls (or table reads) a tuple unpacking takes its items from: the value itself, or
    each side of a conditional expression that is one."""
    sides = [value.body, value.orelse] if value.__class__ is ast.IfExp else [value]
    return [v for v in sides if isinstance(v, (ast.Call, ast.Subscript))]
