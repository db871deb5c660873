"""DataLoader workers seeded alike on every rank (the static twin of DDP305, for DDP808).

Two ways the source fixes every rank's augmentation to the same random numbers:

- a `worker_init_fn` (passed to a DataLoader, directly or through functools.partial) that seeds
  a global generator (`np.random.seed`, `random.seed`, `torch.manual_seed`, a seeding helper)
  from values that are the same on every rank: constants, the worker id, a module-level seed,
  a config attribute (`args.seed`, `cfg.SEED`);
- a DataLoader with workers given `generator=g` where `g.manual_seed(...)` is such a value: the
  workers' base seed is drawn from that generator, so `torch.initial_seed()` in each worker (and
  the PyTorch docs' `seed_worker`, which seeds numpy and random from it) repeats on every rank.

Not reported, since each depends on the rank or may: a seed with a rank in it (`rank`,
`get_rank()`, `RANK`, Accelerate's `process_index`), one derived from the worker's own state
(`torch.initial_seed()`, `get_worker_info().seed`, `np.random.get_state()`, a draw from numpy's
generator: torch seeds those per worker from the rank's generator), a value of unknown origin
(a parameter of an enclosing function, a call to a helper, an imported name), and true entropy
(`uuid`, `os.urandom`, `time.time_ns()`). `int(time.time())` is no entropy: whole seconds, the
same in every worker the ranks start together.

Only the files' syntax trees are read (lint/sources.SourceFile), like lint/data_sized.py.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Iterator, Optional

from ddpdoctor.core.findings import Location
from ddpdoctor.lint.nodes import children, own_nodes, param_defaults, walk
from ddpdoctor.lint.options import option_defaults
from ddpdoctor.lint.patterns import _dict_call_literal, dotted, is_const, keyword, last_name, text

RANK_WORDS = re.compile(r"rank|process_index|local_process|node_id", re.IGNORECASE)
# Values the worker's own (per-rank, when the rank's generator is) state gives, and entropy.
DERIVED = {"initial_seed", "get_worker_info", "get_state", "randint", "rand", "random", "uuid4",
           "urandom", "time", "time_ns", "getpid", "default_rng", "SeedSequence", "integers"}
# Calls that keep a value's origin: int(SEED + worker_id) is as global as SEED.
PURE = {"int", "abs", "hash", "str", "float", "len", "min", "max", "sum", "round", "pow"}
NOT_SEEDING = {"initial_seed", "get_seed", "seed_worker", "worker_init_fn"}
_GLOBAL, _UNKNOWN, _PER_RANK = 0, 1, 2  # what a seed value is, weakest first


@dataclass
class UnrankedSeed:
    """A DataLoader's workers seeded from values that are the same on every rank."""

    loader: Location  # the DataLoader call
    how: str  # "worker_init_fn" | "generator" | "process" (lint/process_seeds.py)
    function: str  # the worker_init_fn's name ("" for a generator)
    seeds: list[str] = field(default_factory=list)  # the seeding calls, as written
    location: Optional[Location] = None  # the first seeding call ("process": the loader)
    seed_sites: list[str] = field(default_factory=list)  # "process": where each seeding call is
    assumption: str = ""  # what must hold for it ("--num_workers above its default 0"), or ""
    # "process": the calls into the seeding helpers that hand them the seed (`set_random_seed(
    # cfg.seed)` around `torch.manual_seed(seed)`), where the value every rank shares is chosen
    seed_calls: list[str] = field(default_factory=list)


class _Files:
    """What the judging looks up across the program's files: functions by name, assignments to a
    name (per scope) and to an attribute."""

    def __init__(self, files: list, functions: Optional[list] = None) -> None:
        self.functions: dict[str, list[tuple[object, ast.AST]]] = {}
        self.attr_values: dict[str, list[tuple[ast.AST, ast.AST]]] = {}  # attr -> (value, scope)
        self.self_attrs: set[int] = set()  # the values of those assigned to `self.<attr>`
        self.value_file: dict[int, object] = {}  # id(value of a `self.<attr> =`) -> its file
        # id(node) -> its innermost function, for the nodes the judging asks about: functions,
        # lambdas, assignments, calls (None, or no entry: the module's top level)
        self.owner: dict[int, Optional[ast.AST]] = {}
        self.sources = files
        self.defaults: Optional[dict] = None  # command-line options' defaults, read when asked
        if functions is None:
            for source in files:
                self._index(source, source.tree, None)
        else:
            self._from_program(functions)
        for source in files:
            self.record_attrs(source)

    def _from_program(self, functions: list) -> None:
        """The same index from the program's functions (lint/program.Function: .node, .file and
        .own, every node of a body already listed once): no second walk of every node, which cost
        a 200-file package a second. Lambdas and classes inside a function are walked here: their
        nodes belong to that function."""
        owner = self.owner
        for fn in functions:
            node = fn.node
            if not isinstance(node, ast.Module):
                self.functions.setdefault(fn.name, []).append((fn.file, node))
            scope = None if isinstance(node, ast.Module) else node
            for child in fn.own:
                if isinstance(child, _OWNED):
                    owner[id(child)] = scope
                    if scope is not None and isinstance(child, (ast.Lambda, ast.ClassDef)):
                        self._inside(child, scope)

    def _inside(self, root: ast.AST, scope: ast.AST) -> None:
        stack = children(root)
        while stack:
            node = stack.pop()
            if isinstance(node, _OWNED):
                self.owner[id(node)] = scope
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                stack.extend(children(node))

    def _index(self, source, node: ast.AST, fn: Optional[ast.AST]) -> None:
        for child in children(node):
            self.owner[id(child)] = fn
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions.setdefault(child.name, []).append((source, child))
                self._index(source, child, child)
                continue
            self._index(source, child, fn)

    def record_attrs(self, source) -> None:
        for node in source.of(ast.Assign):
            if True:
                scope = self.owner.get(id(node)) or source.tree
                for target in node.targets:
                    if isinstance(target, ast.Attribute):
                        self.attr_values.setdefault(target.attr, []).append((node.value, scope))
                        if isinstance(target.value, ast.Name) and target.value.id == "self":
                            self.self_attrs.add(id(node.value))
                            self.value_file[id(node.value)] = source

    def file_of(self, scope: ast.AST):
        """The file a function node is defined in (None where not indexed)."""
        index = self.__dict__.get("_file_of")
        if index is None:
            index = self.__dict__["_file_of"] = {id(node): source for entries in self.functions.values()
                                                 for source, node in entries}
            index.update({id(source.tree): source for source in self.sources})
        return index.get(id(scope))


# The nodes whose owner the judging looks up.
_OWNED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Assign, ast.Call)


def _assigned(scope: ast.AST, name: str) -> list[ast.AST]:
    """The values bound to `name` directly in this scope (not in nested functions). Indexed once
    per scope: asked of the whole module for every name a seeding reads (a quarter of a second on
    a 16-file package, walked again per name)."""
    index = scope.__dict__.get("_assigned_by_name")
    if index is None:
        index = scope.__dict__["_assigned_by_name"] = {}
        for node in own_nodes(scope):
            if node.__class__ in (ast.Assign, ast.AnnAssign, ast.AugAssign) and node.value is not None:
                targets = node.targets if node.__class__ is ast.Assign else [node.target]
                for bound in {t.id for t in targets if t.__class__ is ast.Name}:
                    index.setdefault(bound, []).append(node.value)
    return index.get(name, [])


def _params(fn: ast.AST) -> list[str]:
    args = fn.args
    return [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]


def _worker_id(params: list[str]) -> Optional[str]:
    """The parameter a worker_init_fn gets the worker id in: the first, or the one after `self`
    where a bound method is handed (`worker_init_fn=self.init_fn`, signdagc's
    `def init_fn(self, worker_id)`)."""
    if params[:1] in (["self"], ["cls"]):
        params = params[1:]
    return params[0] if params else None


class _Judge:
    """Whether a seed value is the same on every rank (_GLOBAL), may differ (_UNKNOWN), or does
    (_PER_RANK), from where its names were bound. `bound`: what functools.partial bound to the
    worker_init_fn's parameters, written in `bound_scope` (where the DataLoader is built)."""

    def __init__(self, files: _Files, module: ast.Module, bound: dict[str, ast.AST],
                 bound_scope: Optional[ast.AST] = None, worker_init: bool = True,
                 pinned: frozenset = frozenset(), bound_fn: Optional[ast.AST] = None) -> None:
        self.files, self.module, self.bound = files, module, bound
        # the function partial() bound those to: another function's parameter of the same name
        # (the trainer's `__init__(self, seed)` that `self.seed` comes from) is not bound by it
        self.bound_fn = bound_fn
        # a rank parameter left at its constant default (`def init(worker_id, seed, rank=0)`
        # bound by `partial(init, seed=seed)`): a constant, whatever its name says
        self.pinned = pinned
        self.bound_scope = bound_scope or module
        # judging a worker_init_fn: its first parameter is the worker id (judging a generator's
        # seed where the loader is built, a first parameter is a parameter like any other: its
        # callers decide)
        self.worker_init = worker_init

    def value(self, node: ast.AST, scope: ast.AST, depth: int = 0) -> int:
        if depth > 8:  # (a seed handed through partial(), a trainer's field, its constructor, a config)
            return _UNKNOWN
        if RANK_WORDS.search(text(node, 400)) and not self._only_pinned(node):
            return _PER_RANK
        if isinstance(node, ast.Constant):
            return _GLOBAL
        if isinstance(node, ast.Name):
            return self.name(node.id, scope, depth)
        if isinstance(node, ast.Attribute):
            if self.value(node.value, scope, depth + 1) == _PER_RANK:
                return _PER_RANK  # get_worker_info().seed, worker_info.seed
            # A config's attribute (args.seed, cfg.SEED) is the same on every rank unless the
            # script sets it from something else somewhere.
            # (an object's own field, `self.seed = seed` in a sampler, is not `args.seed`)
            foreign = isinstance(node.value, ast.Name) and node.value.id != "self"
            values = [(v, where) for v, where in self.files.attr_values.get(node.attr, [])
                      if not (foreign and id(v) in self.files.self_attrs)]
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                # `self.seed` read in a method: the file's own `self.seed = ...` where it has one
                # (another trainer class's field of that name, in another file, is not this one's)
                here = self.files.file_of(scope)
                own = [(v, w) for v, w in values if here is not None and self.files.value_file.get(id(v)) is here]
                values = own or values
            return max((self.value(v, where, depth + 1) for v, where in values), default=_GLOBAL)
        if _field_read(node):
            # `config.get("seed", 0)` / `config["seed"]`: a config's field, read as `cfg.seed`
            # is (the same on every rank unless the config itself is the rank's)
            if self.value(_receiver(node), scope, depth + 1) == _PER_RANK:
                return _PER_RANK
            return max((self.value(a, scope, depth + 1) for a in node.args[1:]), default=_GLOBAL) \
                if isinstance(node, ast.Call) else _GLOBAL
        if isinstance(node, ast.Call):
            name = last_name(node.func) or ""
            if name in ("int", "round") and len(node.args) == 1 and _whole_seconds(node.args[0]):
                # `np.random.seed(int(time.time()))`: the clock in whole seconds, the same in
                # every worker of every rank started within that second (they all start together)
                return _GLOBAL
            if name in DERIVED:
                return _PER_RANK  # the worker's own state or entropy: torch seeds it per worker
            if name not in PURE:
                return _UNKNOWN
            parts = [*node.args, *(k.value for k in node.keywords)]
        elif isinstance(node, (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.IfExp, ast.Subscript, ast.JoinedStr,
                               ast.FormattedValue, ast.Compare, ast.Tuple, ast.List)):
            parts = [p for p in children(node) if isinstance(p, ast.expr)]
        else:
            return _UNKNOWN
        return max((self.value(p, scope, depth + 1) for p in parts), default=_GLOBAL)

    def _only_pinned(self, node: ast.AST) -> bool:
        """Every rank word in the value is a pinned parameter read by name (`seed + rank * 1000`)."""
        if not self.pinned:
            return False
        rest = [n for n in walk(node) if not (n.__class__ is ast.Name and n.id in self.pinned)]
        return not any(RANK_WORDS.search(n.id if n.__class__ is ast.Name else n.attr)
                       for n in rest if n.__class__ in (ast.Name, ast.Attribute))

    def name(self, name: str, scope: ast.AST, depth: int) -> int:
        """A name as `scope` sees it: a parameter, a local, an enclosing function's, a module's."""
        innermost = True
        while True:
            if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                params = _params(scope)
                if name in params:
                    if innermost and name in self.pinned:
                        return _GLOBAL  # left at its constant default (0) on every rank
                    if innermost and name == _worker_id(params) and self.worker_init:
                        return _GLOBAL  # the worker id: the same ids on every rank
                    if innermost and name in self.bound and (self.bound_fn is None or scope is self.bound_fn):
                        return self.value(self.bound[name], self.bound_scope, depth + 1)
                    if not innermost and not isinstance(scope, ast.Lambda):
                        # a closure over the builder's parameter (`def init(wid): np.random.seed(seed)`
                        # inside `make_loader(..., seed=1234)`): what its calls give it
                        return self._given(scope, name, depth)
                    if isinstance(scope, ast.Lambda):
                        return _UNKNOWN
                    # a parameter: its callers decide (`prepare_dataloader(seed=args.seed)` handing
                    # on the seed a worker-init factory closes over); unknown where none is seen
                    return self._given(scope, name, depth)
            values = [] if isinstance(scope, ast.Lambda) else _assigned(scope, name)
            if values:
                return max(self.value(v, scope, depth + 1) for v in values)
            if scope is self.module:
                return _UNKNOWN  # imported, or a builtin
            innermost = False
            scope = self.files.owner.get(id(scope)) or self.module


    def _given(self, fn: ast.AST, name: str, depth: int) -> int:
        """The worst value the calls of fn (by its name, across the files) give its parameter,
        a call that leaves it out giving its default; unknown where nothing calls it, a call
        spreads `*args` / `**kwargs`, or one leaves out a parameter without a default."""
        params = _params(fn)
        positional = [a.arg for a in fn.args.posonlyargs + fn.args.args]
        defaults = param_defaults(fn)
        called = fn.name
        if fn.name == "__init__":
            # a constructor's calls are its class's (`Trainer(args.mode, args.epoch, args.seed)`),
            # their arguments from the parameter after `self`
            klass = next((c for source in self.files.sources for c in source.of(ast.ClassDef)
                          if any(item is fn for item in c.body)), None)
            if klass is None:
                return _UNKNOWN
            called, positional = klass.name, positional[1:]
        calls = [(call, source) for source in self.files.sources for call in source.of(ast.Call)
                 if (isinstance(call.func, ast.Name) and call.func.id == called)
                 or (fn.name == "__init__" and isinstance(call.func, ast.Attribute) and call.func.attr == called)]
        if not calls or name not in params:
            return _UNKNOWN
        worst = _GLOBAL
        for call, source in calls:
            where = self.files.owner.get(id(call)) or source.tree
            spread = {}
            for k in call.keywords:
                if k.arg is None:
                    # `prepare(**loader_args)` of a dict literal the caller binds once: its keys
                    read = _spread_literal(k.value, where)
                    if read is None:
                        return _UNKNOWN
                    spread.update(read)
            if any(isinstance(a, ast.Starred) for a in call.args):
                return _UNKNOWN
            given = next((k.value for k in call.keywords if k.arg == name), None)
            if given is None:
                given = spread.get(name)
            index = positional.index(name) if name in positional else len(call.args)
            if given is None and index < len(call.args):
                given = call.args[index]
            if given is None:
                if name not in defaults:
                    return _UNKNOWN
                worst = max(worst, self.value(defaults[name], fn, depth + 1))
            else:
                worst = max(worst, self.value(given, where, depth + 1))
        return worst


def _picked_by_name(source, name: str, subclasses: dict) -> bool:
    """The file binds the name to something that names a loader class (`dl_cls = Fast if c else
    DataLoader`): the call may build a DataLoader; judged for real once the index is built."""
    classes = "|".join(re.escape(c) for c in ("DataLoader", *subclasses))
    bound = re.compile(rf"\b{re.escape(name)}\s*=[^=][^\n]*\b(?:{classes})\b")
    return any(bound.search(line) for line in source.lines)


def _spread_literal(value: ast.AST, scope: ast.AST) -> Optional[dict[str, ast.AST]]:
    """The keys and values of a `**` spread the scope binds once to a dict literal of string keys
    (`args = dict(seed=cfg.seed, ...)` or `{"seed": ...}`); None where it is anything else."""
    if isinstance(value, ast.Name):
        bound = _assigned(scope, value.id)
        if len(bound) != 1:
            return None
        value = bound[0]
    value = _dict_call_literal(value)  # (`dict(seed=...)` as the literal it spells)
    if isinstance(value, ast.Dict) and all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in value.keys):
        return {k.value: v for k, v in zip(value.keys, value.values)}
    return None


def _whole_seconds(node: ast.AST) -> bool:
    """`time.time()` itself (not scaled to milliseconds first): what int() of it keeps is the second."""
    return isinstance(node, ast.Call) and not node.args and isinstance(node.func, ast.Attribute) and \
        node.func.attr == "time" and isinstance(node.func.value, ast.Name) and node.func.value.id == "time"


def _seeding_calls(fn: ast.AST) -> Iterator[ast.Call]:
    body = [fn.body] if isinstance(fn, ast.Lambda) else fn.body
    for stmt in body:
        for node in walk(stmt):
            if isinstance(node, ast.Call) and (node.args or keyword(node, "seed") is not None):
                name = last_name(node.func) or ""
                if "seed" in name.lower() and name not in NOT_SEEDING:
                    yield node


def _seed_args(call: ast.Call) -> list[ast.AST]:
    seed = keyword(call, "seed")
    return [seed] if seed is not None else call.args[:1]


def _worker_init(value: ast.AST, files: _Files, scope: ast.AST) -> Optional[tuple[ast.AST, object, dict, str]]:
    """The function a worker_init_fn= value runs, its file, the arguments partial() bound."""
    bound: dict[str, ast.AST] = {}
    if isinstance(value, ast.Name) and value.id not in files.functions:
        assigned = _assigned(scope, value.id)  # init_fn = partial(seed_worker, seed=...)
        if len(assigned) == 1 and isinstance(assigned[0], (ast.Call, ast.Lambda)):
            value = assigned[0]
    if isinstance(value, ast.Call) and last_name(value.func) == "partial" and value.args:
        bound = {k.arg: k.value for k in value.keywords if k.arg}
        positional = value.args[1:]
        value = value.args[0]
    else:
        positional = []
    if isinstance(value, ast.Lambda):
        return value, None, bound, "lambda"
    if isinstance(value, ast.Call):
        # `worker_init_fn=get_seed_worker(seed)`: a factory whose returned function the workers
        # run, the factory's arguments bound to the parameters that function closes over
        return _made_by_factory(value, files)
    name = last_name(value)
    candidates = files.functions.get(name or "", [])
    if len(candidates) != 1:
        return None  # a library's function, or a name several functions share: not judged
    source, fn = candidates[0]
    params = _params(fn)
    for index, arg in enumerate(positional):  # partial(fn, a, b): the first parameters
        if index < len(params):
            bound[params[index]] = arg
    if positional:
        return None  # the worker id is then not the first parameter: not judged
    return fn, source, bound, name or ""


def _made_by_factory(call: ast.Call, files: _Files) -> Optional[tuple[ast.AST, object, dict, str]]:
    """(the function a local factory returns, its file, {}, its name); None where the factory or
    what it returns is not in sight."""
    candidates = files.functions.get(last_name(call.func) or "", [])
    if len(candidates) != 1:
        return None
    source, factory = candidates[0]
    nested = {n.name: n for n in factory.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    # (its own returns: not those of the function it defines)
    returned = [n.value for n in own_nodes(factory) if isinstance(n, ast.Return) and n.value is not None]
    made = [nested.get(r.id) if isinstance(r, ast.Name) else r if isinstance(r, ast.Lambda) else None
            for r in returned]
    if len(made) != 1 or made[0] is None:
        return None  # several returns (`return seed_worker if per_rank else None`), or not a local def
    # (nothing bound: the names it closes over are the factory's parameters, which the judge
    # follows to the factory's calls, as for any closure)
    inner = made[0]
    return inner, source, {}, getattr(inner, "name", "lambda")


def _generator_seeds(value: ast.AST, scope: ast.AST, module: ast.Module, before: int = 0) -> list[ast.Call]:
    """The manual_seed calls that seed a DataLoader's generator= value. before: the loader's
    line; where the generator is seeded in its scope more than once, the last seeding above the
    loader is the one it reads (`g.manual_seed(seed)` for the one-process loaders, then
    `g.manual_seed(42)` right above the DDP one: EMBED's create_dataloaders)."""
    if isinstance(value, ast.Call) and last_name(value.func) == "manual_seed":
        return [value]
    name = dotted(value)
    if not name:
        return []
    found = []
    for where in (scope, module):
        for node in walk(where):
            if isinstance(node, ast.Call) and last_name(node.func) == "manual_seed" and node.args:
                target = node.func.value if isinstance(node.func, ast.Attribute) else None
                if target is not None and dotted(target) == name:
                    found.append(node)
        for bound in _assigned(where, name) if "." not in name else []:
            if isinstance(bound, ast.Call) and last_name(bound.func) == "manual_seed":
                found.append(bound)
        if found:
            above = [c for c in found if c.lineno <= before] if where is scope and before else []
            if len(found) > 1 and above:
                found = [max(above, key=lambda c: c.lineno)]
            break
    return found


def _made_by_helper(value: ast.AST, index: _Files) -> Optional[tuple[list[ast.Call], Optional[ast.AST], object]]:
    """`make_gen(seed)`: a local function (one of that name) that seeds the generator it returns
    from one of its parameters: (its manual_seed calls, the argument the call gives that
    parameter - None where the seed is anything else -, the file the helper is in). None where
    the value is no such call."""
    # (also a method of the object's own: `generator=self._build_generator(self.seed)`, RDD)
    method = isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
        isinstance(value.func.value, ast.Name) and value.func.value.id == "self"
    if not (isinstance(value, ast.Call) and (isinstance(value.func, ast.Name) or method)):
        return None
    defs = index.functions.get(last_name(value.func), [])
    if len(defs) != 1:
        return None
    helper = defs[0][1]
    returned = {r.value.id for r in walk(helper) if isinstance(r, ast.Return) and isinstance(r.value, ast.Name)}
    seeds = [c for c in walk(helper) if isinstance(c, ast.Call) and last_name(c.func) == "manual_seed"
             and c.args and isinstance(c.func, ast.Attribute) and dotted(c.func.value) in returned]
    # `generator = torch.manual_seed(seed); ...; return generator` (or `return torch.manual_seed(
    # seed)`): torch.manual_seed hands back the default generator it seeded (ActionFormer's
    # fix_random_seed, whose result the training loader is given as generator=)
    seeds += [n.value for n in walk(helper) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)
              and last_name(n.value.func) == "manual_seed" and n.value.args
              and any(isinstance(t, ast.Name) and t.id in returned for t in n.targets)]
    seeds += [r.value for r in walk(helper) if isinstance(r, ast.Return) and isinstance(r.value, ast.Call)
              and last_name(r.value.func) == "manual_seed" and r.value.args]
    if not seeds:
        return None
    params = _params(helper)
    if method and params[:1] == ["self"]:
        params = params[1:]  # (the call hands its arguments from the parameter after self)
    arg = seeds[0].args[0]
    if not (isinstance(arg, ast.Name) and arg.id in params) or any(isinstance(a, ast.Starred) for a in value.args):
        return seeds, None, defs[0][0]
    index_of = params.index(arg.id)
    given = next((k.value for k in value.keywords if k.arg == arg.id), None)
    if given is None and index_of < len(value.args):
        given = value.args[index_of]
    return seeds, given, defs[0][0]


def _has_workers(call: ast.Call, index: Optional[_Files] = None, scope: Optional[ast.AST] = None) -> bool:
    """Whether the loader runs workers on the values the source gives: not for a literal 0, a
    name bound only to 0, or an option (`args.num_workers`) whose declared default is 0 and that
    the script never sets: with no workers, the loader's seeds reach no worker (a user who passes
    a worker count leaves that default path, which the source cannot tell)."""
    workers = keyword(call, "num_workers")
    if workers is None or _is_zero(workers):
        return False
    if index is None:
        return True
    if isinstance(workers, ast.Name) and scope is not None:
        bound = _assigned(scope, workers.id)
        if not bound and left_at_zero(workers.id, scope, index.sources):
            return False
        return not (bound and all(_is_zero(v) for v in bound))
    if isinstance(workers, ast.Attribute) and workers.attr not in index.attr_values:
        if index.defaults is None:
            index.defaults = option_defaults(index.sources)
        return index.defaults.get(workers.attr, 1) != 0
    return True


def left_at_zero(name: str, scope: ast.AST, sources: list, called: Optional[str] = None) -> bool:
    """`def make_loader(ds, num_workers=0)` whose every call, by its name, leaves num_workers out:
    the loader runs no workers (sources: the program's files, lint/sources.SourceFile; called:
    the name its calls use where that is not its own - a constructor's, its class's)."""
    return _left_at_default(name, scope, sources, called, _is_zero)


def _left_at_default(name: str, scope: ast.AST, sources: list, called: Optional[str], holds) -> bool:
    """left_at_zero for a default `holds` accepts (`_is_none`: `def build(ds, seed=None)`)."""
    default = param_defaults(scope).get(name) if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
    if default is None or not holds(default):
        return False
    called = called or scope.name
    if called == "__init__":
        return False  # a constructor is called by its class's name (`super().__init__()` is no call of it)
    positional = [a.arg for a in scope.args.args]
    place = positional.index(name) if name in positional else None
    calls = [c for source in sources for c in source.of(ast.Call) if last_name(c.func) == called]
    return bool(calls) and all(
        not any(kw.arg in (name, None) for kw in c.keywords) and not any(isinstance(a, ast.Starred) for a in c.args)
        and (place is None or len(c.args) <= place - (1 if positional[:1] == ["self"] else 0))
        for c in calls)


def _base_init(func: ast.AST) -> bool:
    """`torch.utils.data.DataLoader.__init__(self, dataset, ..., worker_init_fn=...)` in a loader
    subclass's constructor: the DataLoader it builds is that instance."""
    return isinstance(func, ast.Attribute) and func.attr == "__init__" and last_name(func.value) == "DataLoader"


def _is_zero(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == 0 and not isinstance(node.value, bool)


def _is_none(node: ast.AST) -> bool:
    return node.__class__ is ast.Constant and node.value is None


def _seeding_off(fn: ast.AST, call: ast.Call, bound: dict, scope: ast.AST, sources: list) -> bool:
    """The worker_init_fn's seeding sits under `if seed is not None:` (or `if seed:`) on a
    parameter that is None on every way in: its default, left by the partial, or the partial's
    `seed=seed` of the builder's own parameter that every call of the builder leaves at None
    (`def build_dataloader(ds, ..., seed=None)`): the workers are not seeded there."""
    if isinstance(fn, ast.Lambda):
        return False
    for node in walk(fn):
        if node.__class__ is not ast.If or not any(n is call for stmt in node.body for n in walk(stmt)):
            continue
        test = node.test
        if test.__class__ is ast.Compare and len(test.ops) == 1 and test.ops[0].__class__ is ast.IsNot \
                and _is_none(test.comparators[0]):
            test = test.left
        if test.__class__ is not ast.Name or test.id not in _params(fn):
            continue
        given = bound.get(test.id)
        if given is None:
            given = param_defaults(fn).get(test.id)
        if given is not None and (_is_none(given) or given.__class__ is ast.Name and _left_at_default(
                given.id, scope, sources, None, _is_none)):
            return True
    return False


def gather(files: list, reachable: Optional[set] = None, functions: Optional[list] = None,
           subclasses: Optional[dict] = None) -> list[UnrankedSeed]:
    """Every DataLoader whose workers are seeded alike on every rank, in the files
    (lint/sources.SourceFile); `reachable`: ids of the function nodes the entry script can run;
    `functions`: the program's (lint/program.Function), to index from instead of the trees;
    `subclasses`: the local DataLoader subclasses built with a DataLoader's options, by name, with
    the parameters each keeps for itself (OpenFold's `generator=` never reaches its DataLoader)."""
    subclasses = subclasses or {}

    def kept(node: ast.Call) -> frozenset:
        return subclasses.get(last_name(node.func) or "", frozenset())

    # Only a loader that names its workers' seeding can be judged: without one, no index of the
    # program is built (that index over every node cost a large package seconds: timm's 207 files).
    def loader_class(name) -> bool:
        return name == "DataLoader" or name in subclasses

    # (and a class picked by a name: `dl_cls = FastLoader if cached else DataLoader`, `dl_cls(...)`;
    # asked of the file's text first, so a builder's `make_loader(ds, generator=g)` builds no index)
    # (the keywords are asked first: the name's search reads the file's text, once per call)
    loaders = [(source, node) for source in files for node in source.of(ast.Call)
               if node.keywords  # (most calls pass no keyword: neither is given)
               and any(keyword(node, k) is not None and k not in kept(node) for k in ("worker_init_fn", "generator"))
               and (loader_class(last_name(node.func)) or _base_init(node.func)
                    or (isinstance(node.func, ast.Name) and _picked_by_name(source, node.func.id, subclasses)))]
    if not loaders:
        return []
    index = _Files(files, functions)
    found: list[UnrankedSeed] = []
    for source, node in loaders:
        owner = index.owner.get(id(node)) or source.tree
        if not (loader_class(last_name(node.func)) or _base_init(node.func)):
            picked = _assigned(owner, node.func.id)
            sides = [side for value in picked for side in (
                (value.body, value.orelse) if isinstance(value, ast.IfExp) else (value,))]
            if not sides or not all(loader_class(last_name(side)) for side in sides):
                continue
        if reachable is not None and owner is not source.tree and id(owner) not in reachable:
            continue
        where = Location(source.display, node.lineno)
        init = keyword(node, "worker_init_fn") if "worker_init_fn" not in kept(node) else None
        workers = keyword(node, "num_workers")
        if workers is not None and not _has_workers(node, index, owner):
            continue  # no workers on the default path: no worker is seeded
        if init is not None:
            hit = _judge_init(init, index, where, owner)
            if hit is not None:
                found.append(hit)
                continue
        generator = keyword(node, "generator") if "generator" not in kept(node) else None
        if generator is not None and workers is not None:
            hit = _generator_verdict(generator, owner, source, node.lineno, index, init, where)
            if hit is not None:
                found.append(hit)
    return found


def _generator_verdict(generator: ast.AST, owner, source, line: int, index: _Files, init, where: Location,
                       depth: int = 1) -> Optional[UnrankedSeed]:
    """A loader's `generator=` seeded the same on every rank: `g.manual_seed(seed)` in its scope,
    a local helper that seeds the generator it returns (`make_gen(seed)`, `torch.manual_seed(seed)`
    handed back), or - for a builder's parameter - what every call of the builder hands it
    (`make_loader(ds, sampler, True, rng)` with `rng = fix_random_seed(cfg.seed)`)."""
    seeds = _generator_seeds(generator, owner, source.tree, line)
    judge = _Judge(index, source.tree, {}, worker_init=False)
    made = None
    if not seeds:
        # `generator=make_gen(seed)`, or `gen = make_gen(seed)` then `generator=gen`
        bound = _assigned(owner or source.tree, generator.id) if isinstance(generator, ast.Name) else [generator]
        made = _made_by_helper(bound[0], index) if len(bound) == 1 else None
        if not bound and depth > 0 and isinstance(generator, ast.Name) and owner is not None and \
                not isinstance(owner, ast.Module) and generator.id in _params(owner):
            return _handed_generator(generator.id, owner, index, init, where, depth - 1)
    if made is not None:
        # `generator=make_gen(cfg.seed)` whose `g.manual_seed(seed); return g` (PANGAEA):
        # the seed is what the call hands the helper's parameter (told in the helper's file)
        seeds, given, home = made
        if seeds and given is not None and judge.value(given, owner) == _GLOBAL:
            return UnrankedSeed(where, "generator", "", [text(s) for s in seeds], Location(home.display, seeds[0].lineno))
        return None
    if seeds and all(max((judge.value(a, owner) for a in _seed_args(s)), default=_UNKNOWN) == _GLOBAL for s in seeds):
        return UnrankedSeed(where, "generator", last_name(init) if init is not None else "",
                            [text(s) for s in seeds], Location(source.display, seeds[0].lineno))
    return None


def _handed_generator(param: str, builder: ast.AST, index: _Files, init, where: Location,
                      depth: int) -> Optional[UnrankedSeed]:
    """The generator a builder's parameter holds, judged where the calls of the builder (by its
    name, a positional or keyword argument) make it: the loader one of them builds draws its
    workers' seeds from a generator seeded alike on every rank (`make_loader(train, True, rng)`
    beside `make_loader(test, False, None)`: the training call's loader), else None."""
    positional = [a.arg for a in builder.args.args]
    place = positional.index(param) - (1 if positional[:1] == ["self"] else 0) if param in positional else None
    calls = [(source, c) for source in index.sources for c in source.of(ast.Call) if last_name(c.func) == builder.name]
    for source, call in calls:
        given = next((k.value for k in call.keywords if k.arg == param), None)
        if given is None and place is not None and place < len(call.args) and \
                not any(isinstance(a, ast.Starred) for a in call.args[:place + 1]):
            given = call.args[place]
        if given is None or is_const(given, None):
            continue  # (left at its default, or handed None: no generator of the caller's)
        hit = _generator_verdict(given, index.owner.get(id(call)) or source.tree, source, call.lineno, index,
                                 init, where, depth)
        if hit is not None:
            return hit
    return None


def _field_read(node: ast.AST) -> bool:
    """`cfg.get("seed", 0)` or `cfg["seed"]`: one named field of a mapping."""
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Attribute) and node.func.attr == "get" and 1 <= len(node.args) <= 2 \
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
    return isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)


def _receiver(node: ast.AST) -> ast.AST:
    return node.func.value if isinstance(node, ast.Call) else node.value


def _left_at_constant(fn: ast.AST, param: str, bound: dict) -> bool:
    """The parameter has a constant default and partial() binds nothing to it, or partial()
    binds it a constant (`partial(worker_init_fn, rank=0, seed=seed)`: 0 on every rank)."""
    if param in bound:
        return isinstance(bound[param], ast.Constant)
    return isinstance(param_defaults(fn).get(param), ast.Constant)


def _judge_init(init: ast.AST, index: _Files, where: Location, scope: ast.AST) -> Optional[UnrankedSeed]:
    resolved = _worker_init(init, index, scope)
    if resolved is None:
        return None
    fn, source, bound, name = resolved
    if source is None:  # a lambda: written where the DataLoader is
        source = next((f for f in index.sources if any(n is fn for n in f.nodes)), None)
        if source is None:
            return None
    module = source.tree
    params = _params(fn)
    if any(RANK_WORDS.search(p) and not _left_at_constant(fn, p, bound) for p in params[1:]) or \
            any(RANK_WORDS.search(text(v, 400)) for v in bound.values()):
        # mmengine's worker_init_fn(worker_id, num_workers, rank, seed) handed the rank; not
        # `def worker_init_fn(worker_id, seed, rank=0)` bound by `partial(worker_init_fn,
        # seed=seed)` alone: its rank stays 0 on every rank, judged below like any constant
        return None
    calls = [c for c in _seeding_calls(fn) if not _seeding_off(fn, c, bound, scope, index.sources)]
    if not calls:
        return None
    pinned = frozenset(p for p in params[1:] if RANK_WORDS.search(p) and _left_at_constant(fn, p, bound))
    judge = _Judge(index, module, bound, scope, pinned=pinned, bound_fn=fn)
    for call in calls:
        args = _seed_args(call)
        if not args or max(judge.value(a, fn) for a in args) != _GLOBAL:
            return None
    return UnrankedSeed(where, "worker_init_fn", name, [text(c) for c in calls],
                        Location(source.display, calls[0].lineno))
