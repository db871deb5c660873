"""Datasets handed to a transformers Trainer that keep one rank's share themselves, or whose items
an unseeded draw picks on each process apart (DDP803).

The Trainer builds its own training DataLoader and hands it to Accelerate, which shards it
across the processes (a DistributedSampler for a map-style dataset; for an IterableDataset,
rank 0 reads the batches and dispatches a slice to each rank, or each rank skips the others'
batches). A dataset whose own code already keeps this rank's items (`if i % world != rank:
continue` in `__iter__`, `items[rank::world]`) is then sharded a second time: each rank trains
on about 1/world² of the data, or on rank 0's share alone.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from ddpdoctor.core.findings import Location
from ddpdoctor.lint.loader_facts import KEEPS_RANK_SHARE
from ddpdoctor.lint.patterns import hf_trainer_class, keyword, last_name, spread_keyword, text
from ddpdoctor.lint.pins import program_floor
from ddpdoctor.lint.program import Klass

Builder = Any  # ddpdoctor.lint.facts.FactBuilder


@dataclass
class TrainerShard:
    location: Location  # the dataset's own line that keeps one rank's items (or the Trainer call)
    dataset: str  # the class, as named (or the dataset handed, as written)
    trainer: Location  # the Trainer(...) call handed it
    draw: str = ""  # an unseeded draw that picks the dataset's items on each process apart
    # the subclass's own `_get_train_sampler` returns this sampler, which shards by rank, and the
    # library's get_train_dataloader (transformers 4.30 on, as pinned) prepares the loader again
    sampler: str = ""
    pin: str = ""  # the file that pins transformers at 4.30 or later


def gather(builder: Builder) -> list[TrainerShard]:
    program = builder.program
    found: list[TrainerShard] = []
    for fn in program.reachable:
        for call in fn.own_calls:
            if not hf_trainer(program, call, fn):
                continue
            given, where = keyword(call, "train_dataset"), fn
            if given is None:
                given, where = spread_keyword(program, call, fn, "train_dataset")
            if given is None:
                continue
            kept = False
            for value, scope in program.values_of(given, where):
                klass = program._callee_symbol(value.func, scope) if isinstance(value, ast.Call) else None
                if not isinstance(klass, Klass) or klass.node is None:
                    continue
                line = _keeping_line(klass)
                if line is not None:
                    kept = True
                    found.append(TrainerShard(Location(klass.file.display, line), klass.name,
                                              Location(fn.file.display, call.lineno)))
            override = _sampler_override(builder, call, fn)
            if override is not None:
                found.append(override)
            # a training set an unseeded draw picks (`ds.train_test_split(test_size=0.1)`, no
            # seed, in a script that seeds nothing before it): each process draws its own split,
            # and the Trainer shards N different datasets (the sampler's case, DDP803)
            draw = "" if kept else builder._drawn_apart(given, where, 3)
            if draw:
                at = Location(fn.file.display, call.lineno)
                found.append(TrainerShard(at, text(given, 60), at, draw))
    return found


def _sampler_override(builder: Builder, call: ast.Call, fn) -> TrainerShard | None:
    """`GenecompassPretrainer(...)`, a local Trainer subclass whose own `_get_train_sampler` returns
    a sampler that shards by rank on several processes (a copy of the Trainer's pre-4.30 method:
    `DistributedLengthGroupedSampler(..., rank=self.args.process_index)`) and that leaves
    get_train_dataloader to the library, where the project pins transformers at 4.30 or later:
    that method builds the loader over the sampler and hands it to accelerator.prepare(), which
    shards it again."""
    program = builder.program
    klass = program._callee_symbol(call.func, fn)
    if not isinstance(klass, Klass) or not hf_trainer_class(program, klass):
        return None
    method = program.method(klass, "_get_train_sampler")
    if method is None or method.node is None or program.method(klass, "get_train_dataloader") is not None:
        return None
    floor, pin = program_floor(program, "transformers")
    if floor is None or floor < (4, 30):
        return None
    for ret in sorted(method.returned, key=lambda r: r.lineno):  # (the first in the source)
        if builder._sampler_kind(ret, method) == "distributed":
            said = text(ret.func if isinstance(ret, ast.Call) else ret, 80)
            return TrainerShard(Location(method.file.display, ret.lineno), f"{klass.name}._get_train_sampler",
                                Location(fn.file.display, call.lineno), sampler=said,
                                pin=f"{pin.name}" if pin is not None else "")
    return None


def hf_trainer(program, call: ast.Call, fn) -> bool:
    """`Trainer(...)` of transformers or TRL (any `...Trainer` class of theirs), or of the script's
    own subclass of one: the trainer builds and shards its own training DataLoader."""
    name = last_name(call.func) or ""
    if name.endswith("Trainer") and (program.qualify(call.func, fn) or "").startswith(("transformers", "trl")):
        return True
    if not program.uses("transformers"):
        return False
    if name[:1].isupper():
        return any(c.startswith(("transformers.", "trl.")) and c.endswith("Trainer")
                   for c in program.library_classes(call, fn))
    # (`trainer_class = DCTrainer if args.distance_cache else RerankerTrainer; trainer_class(...)`,
    # Reranker's: the local class the name holds)
    held = program.class_of(call, fn) if call.func.__class__ is ast.Name else None
    return held is not None and hf_trainer_class(program, held)


def _keeping_line(klass) -> int | None:
    """The first line of the class's own code that keeps one rank's items, or None."""
    lines = klass.file.lines[klass.node.lineno - 1:getattr(klass.node, "end_lineno", klass.node.lineno)]
    for offset, line in enumerate(lines):
        code = line.split("#", 1)[0]
        if KEEPS_RANK_SHARE.search(code):
            return klass.node.lineno + offset
    return None
