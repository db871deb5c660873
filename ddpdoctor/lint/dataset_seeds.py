"""DDP808's fourth way: a dataset that reseeds the global generators in its own worker-side
method from values every rank shares.

RAFT's datasets (and the optical-flow trainers built on them) seed torch, numpy and `random` on
their first `__getitem__` in a worker with `get_worker_info().id`: worker k of every rank then
draws from seed k, whatever the loader's base seed or the rank's own seeding, so the k-th worker
of each rank applies the same random crops and flips. Reported where the run builds the class,
a training loader with workers exists, and every such seeding's value is made of the worker's
id and constants only (a rank, the worker's `seed`, `torch.initial_seed()`, a parameter or no
value at all - entropy - are each rank's own, or unknown)."""

from __future__ import annotations

import ast

from ddpdoctor.lint.fact_builder import loc
from ddpdoctor.lint.loader_facts import _SEED_STREAMS, EVAL_NAME, TRAIN_NAME
from ddpdoctor.lint.patterns import last_name, loader_call, text
from ddpdoctor.lint.worker_seeds import UnrankedSeed, _has_workers

# the methods a loader's workers run on a map-style or iterable dataset
WORKER_METHODS = ("__getitem__", "__iter__", "__getitems__")


def gather(builder, loaders: list, already: list[UnrankedSeed]) -> list[UnrankedSeed]:
    """One finding per dataset class the run builds that reseeds so, told at its first seeding
    call and tied to the first training loader with workers (the others share its fix: the
    seed's value)."""
    program = builder.program
    # (the classes the run builds, and their bases: RAFT's FlowDataset seeds for the MpiSintel,
    # FlyingChairs... the script builds)
    built = {id(k) for b in program.built_classes if program.is_class(b) for k in (b, *program.bases(b))}
    seeding = []  # (class, method, its seeding calls in order)
    for klass in program.classes:
        if id(klass) not in built or (EVAL_NAME.search(klass.name) and not TRAIN_NAME.search(klass.name)):
            continue  # (RAFT's FlowDatasetTest, which only the evaluation loaders read)
        for name in WORKER_METHODS:
            method = klass.methods.get(name)
            if method is None or method.node is None:
                continue
            calls = sorted((c for c in method.own_calls if (program.qualify(c.func, method) or "") in _SEED_STREAMS),
                           key=lambda c: (c.lineno, c.col_offset))
            if calls and all(_worker_id_seed(program, c, method) for c in calls):
                seeding.append((klass, method, calls))
                break
    if not seeding:
        return []
    told = {str(s.loader) for s in already}
    training = {str(f.location) for f in loaders if f.trains and not f.under_rank_guard and not f.single_process
                and not f.evaluation and str(f.location) not in told}
    # (with workers: `get_worker_info()` is None in the main process, where RAFT's seeding is skipped)
    working = next((where for fn, call, _, _ in builder.calls() if (where := loc(fn, call)) and str(where) in training
                    and loader_call(program, call, fn) and _has_workers(call)), None) if training else None
    if working is None:
        return []
    return [UnrankedSeed(working, "dataset", f"{klass.name}.{method.name}", [text(c, 60) for c in calls[:3]],
                         loc(method, calls[0])) for klass, method, calls in seeding]


def _worker_id_seed(program, call: ast.Call, method) -> bool:
    """The seed is made of the worker's id and constants only (`worker_info.id`, `info.id * 7 + 1`)."""
    if len(call.args) != 1 or call.keywords:
        return False  # (no value: entropy, each process its own)
    seen_id = False
    for node in ast.walk(call.args[0]):
        if isinstance(node, (ast.Constant, ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop, ast.Load)):
            continue
        if isinstance(node, ast.Attribute) and node.attr == "id" and _worker_info(program, node.value, method):
            seen_id = True
            continue
        if isinstance(node, ast.Name) and any(isinstance(p, ast.Attribute) and p.value is node and p.attr == "id"
                                              for p in ast.walk(call.args[0])):
            continue  # (the receiver of `.id`, judged there)
        return False  # a rank, the worker's seed, a parameter: each rank's own, or unknown
    return seen_id


def _worker_info(program, node: ast.AST, method) -> bool:
    """`get_worker_info()` itself, or a name the method binds only to it."""
    if isinstance(node, ast.Call):
        return last_name(node.func) == "get_worker_info"
    if not isinstance(node, ast.Name):
        return False
    values = [v for v, scope in program.values_of(node, method, 1) if v is not node]
    return bool(values) and all(isinstance(v, ast.Call) and last_name(v.func) == "get_worker_info" for v in values)
