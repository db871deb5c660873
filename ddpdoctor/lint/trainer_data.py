"""Datasets handed to a transformers Trainer that keep one rank's share themselves (DDP803).

The Trainer builds its own training DataLoader and hands it to Accelerate, which shards it
across the processes (a DistributedSampler for a map-style dataset; for an IterableDataset,
rank 0 reads the batches and dispatches a slice to each rank, or each rank skips the others'
batches). A dataset whose own code already keeps this rank's items (`if i % world != rank:
continue` in `__iter__`, `items[rank::world]`) is then sharded a second time: each rank trains
on about 1/world² of the data, or on rank 0's share alone.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

from ddpdoctor.core.findings import Location
from ddpdoctor.lint.patterns import keyword

Builder = Any  # ddpdoctor.lint.facts.FactBuilder

# The transformers / TRL trainers that build and shard their own training DataLoader.
TRAINERS = ("transformers.Trainer", "transformers.Seq2SeqTrainer", "transformers.trainer.Trainer",
            "transformers.trainer_seq2seq.Seq2SeqTrainer", "trl.SFTTrainer", "trl.trainer.SFTTrainer")
# A line of a dataset's own code that keeps one rank's items: `i % world != rank` (then `continue`),
# `i % world == rank`, `items[rank::world]` (the rank a field or a name, alone or in a sum)
_KEEPS = re.compile(r"%\s*\(?[\w.\s*+]+\)?\s*[!=]=\s*\(?\s*[\w.]*(?:rank|process_index)\b"
                    r"|\[\s*[\w.]*rank\w*\s*::", re.IGNORECASE)


@dataclass
class TrainerShard:
    location: Location  # the dataset's own line that keeps one rank's items
    dataset: str  # the class, as named
    trainer: Location  # the Trainer(...) call handed it


def gather(builder: Builder) -> list[TrainerShard]:
    program = builder.program
    found: list[TrainerShard] = []
    for fn in program.reachable:
        for call in fn.own_calls:
            if not _a_trainer(program, call, fn):
                continue
            given = keyword(call, "train_dataset")
            if given is None:
                continue
            for value, scope in program.values_of(given, fn):
                klass = program._callee_symbol(value.func, scope) if isinstance(value, ast.Call) else None
                if klass is None or not hasattr(klass, "methods") or klass.node is None:
                    continue
                line = _keeping_line(klass)
                if line is not None:
                    found.append(TrainerShard(Location(klass.file.display, line), klass.name,
                                              Location(fn.file.display, call.lineno)))
    return found


def _a_trainer(program, call: ast.Call, fn) -> bool:
    """`Trainer(...)` of transformers (or TRL), or of a local class derived from one."""
    full = program.qualify(call.func, fn) or ""
    if full in TRAINERS:
        return True
    klass = program._callee_symbol(call.func, fn)
    return klass is not None and hasattr(klass, "methods") and klass.node is not None and \
        bool(program.library_bases(klass) & set(TRAINERS))


def _keeping_line(klass) -> int | None:
    """The first line of the class's own code that keeps one rank's items, or None."""
    lines = klass.file.lines[klass.node.lineno - 1:getattr(klass.node, "end_lineno", klass.node.lineno)]
    for offset, line in enumerate(lines):
        code = line.split("#", 1)[0]
        if _KEEPS.search(code):
            return klass.node.lineno + offset
    return None
