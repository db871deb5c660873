"""Which recorded collectives exchanged a size between ranks, so that a later collective whose
size follows the data is nevertheless agreed (DDP506).

A size is agreed when every rank learned the same number before using it: an all_reduce with
MAX of the local lengths (then padding to it), an all_gather of the lengths, or a broadcast of
one rank's length. The probe records each collective's reduce op and, for small ones, the
values after completion; the proof is a value among them equal to a dimension of the later
collective's tensors. How close the earlier collective ran proves nothing by itself.
"""

from __future__ import annotations

from math import prod
from typing import Optional

from ddpdoctor.core import torch_names as names
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.run_model.loaded_run import RankRun

# all_reduce is an exchange only with MAX (read below); these are, whatever their op.
GATHERS = frozenset(names.SIZE_GATHERS + names.OBJECT_EXCHANGES)
SMALL = 16  # elements: as many as the probe reads values of (inrank/collectives.py)
INTEGER = ("int", "uint", "long", "short")


class RankExchanges:
    """One rank's collectives in call order, with the values of the small ones."""

    def __init__(self, run: RankRun):
        self.calls = run.of(tm.Collective)
        self.index = {id(c): i for i, c in enumerate(self.calls)}
        self.values: dict[tuple[str, int], list] = {}
        for done in run.of(tm.CollectiveDone):
            if done.result is not None:
                self.values[(done.group, done.seq)] = done.result
        for late in run.of(tm.CollectiveResult):
            self.values[(late.group, late.seq)] = late.result

    def result(self, record: tm.Collective) -> Optional[list]:
        """Its values after completion, one flat list per tensor; None when not recorded."""
        return self.values.get((record.group, record.seq))

    def before(self, record: tm.Collective, previous: Optional[tm.Collective]
               ) -> tuple[Optional[tm.Collective], Optional[tm.Collective]]:
        """(the exchange of `record`'s size among the collectives since `previous`, or None;
        the nearest collective before `record`, for the message). `previous` itself counts:
        a library that gathers the sizes and then the data from one line of the script
        (Accelerate's pad_across_processes) records both at the same call site."""
        end = self.index.get(id(record), 0)
        start = self.index.get(id(previous), 0) if previous is not None else 0
        window = [c for c in self.calls[start:end] if c.op != "ddp_bucket_allreduce"]
        sizes = dimensions(record)
        for candidate in reversed(window):
            if exchanged(candidate, self.result(candidate), sizes):
                return candidate, None
        return None, window[-1] if window else None


def is_size_exchange(record: tm.Collective) -> bool:
    """Whether a collective looks like an exchange of sizes itself: a few integers, gathered,
    broadcast or all-reduced with MAX. Its own size needs no exchange before it."""
    if record.op == "all_reduce":
        if record.reduce_op.upper() != "MAX":
            return False
    elif record.op not in GATHERS:
        return False
    elements = sum(prod(shape) for shape in record.shapes)
    return bool(record.shapes) and all(d.startswith(INTEGER) for d in record.dtypes) and 0 < elements <= SMALL


def dimensions(record: tm.Collective) -> set[int]:
    """The numbers a size exchange could have agreed on: every dimension and element count."""
    found: set[int] = set()
    for shape in record.shapes:
        found.update(int(d) for d in shape)
        found.add(int(prod(shape)))
    return found


def exchanged(candidate: tm.Collective, values: Optional[list], sizes: set[int]) -> bool:
    """Whether `candidate` exchanged one of `sizes` between the ranks."""
    if candidate.op == "all_reduce":
        if candidate.reduce_op.upper() != "MAX":
            return False  # a SUM of lengths is not a length every rank can pad to
    elif candidate.op not in GATHERS:
        return False
    if values is None:
        # Not read (an async collective on a device): a small integer MAX or gather is taken at
        # its word; anything else proves nothing.
        elements = sum(prod(shape) for shape in candidate.shapes)
        integer = all(d.startswith(INTEGER) for d in candidate.dtypes)
        return bool(candidate.shapes) and integer and 0 < elements <= SMALL
    flat = [v for part in values for v in (part if isinstance(part, list) else [part])]
    return any(isinstance(v, (int, float)) and float(v).is_integer() and int(v) in sizes
               for v in flat)
