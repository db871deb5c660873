"""DDP301 without a DataLoader: the tensor inputs of every training forward of a DDP model,
fingerprinted per rank, compared across ranks. Only inputs that change from step to step are
judged (a constant attention mask is the same on every rank by design)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from itertools import combinations
from typing import Optional

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.analysis.rank_pairs import PairBlock, blocks_of
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.probe.analysis.sample_overlap import MAJORITY, alike

MIN_FORWARDS = 2  # forwards compared (and found alike), at the least


def forward_inputs(run: RunModel) -> dict[int, dict[int, dict[int, tm.ForwardInputs]]]:
    """model id -> rank -> iteration -> its ForwardInputs record."""
    found: dict[int, dict[int, dict[int, tm.ForwardInputs]]] = {}
    for rank, rank_run in run.ranks.items():
        for record in rank_run.of(tm.ForwardInputs):
            found.setdefault(record.model_id, {}).setdefault(rank, {})[record.iteration] = record
    return found


def varying_keys(by_rank: dict[int, dict[int, tm.ForwardInputs]]) -> list[str]:
    """Inputs every rank passed that took 2 or more values on each rank that made 2+ forwards."""
    keys: Optional[set[str]] = None
    for records in by_rank.values():
        present = set.intersection(*(set(r.tensors) for r in records.values())) if records else set()
        keys = present if keys is None else keys & present
    varying = []
    for key in sorted(keys or ()):
        counts = [len({r.tensors[key] for r in records.values()}) for records in by_rank.values()
                  if len(records) >= 2]
        if counts and all(c >= 2 for c in counts):
            varying.append(key)
    return varying


@dataclass
class InputPair:
    a: int
    b: int
    compared: int = 0  # iterations both ranks recorded
    identical: int = 0  # ... with every varying input equal
    moved: int = 0  # b's inputs that a had at another iteration
    steps: list[int] = field(default_factory=list)

    @property
    def flagged(self) -> bool:
        same = self.identical + self.moved
        return same >= MIN_FORWARDS and same >= MAJORITY * self.compared


def _pair(a: int, b: int, signature: dict[int, dict[int, tuple]],
          by_rank: dict[int, dict[int, tm.ForwardInputs]]) -> InputPair:
    pair = InputPair(a, b)
    seen_a = set(signature[a].values())
    for iteration in sorted(set(signature[a]) & set(signature[b])):
        pair.compared += 1
        if signature[a][iteration] == signature[b][iteration]:
            pair.identical += 1
            pair.steps.append(by_rank[a][iteration].step)
        elif signature[b][iteration] in seen_a:
            pair.moved += 1
    return pair


def input_pairs(by_rank: dict[int, dict[int, tm.ForwardInputs]],
                varying: list[str]) -> tuple[list[PairBlock[InputPair]], bool]:
    """(the flagged pairs that compared MIN_FORWARDS or more forwards, in blocks of pairs alike
    (rank_pairs.PairBlock); whether any pair compared that many). Only ranks that share an input
    signature can be alike: they are found from one index of the signatures, not by comparing
    every pair of ranks (half a million at 1,024 ranks), and ranks whose inputs are alike at
    every iteration are compared once as a group (1,024 ranks fed the same batches: one block)."""
    signature = {rank: {i: tuple(r.tensors[k] for k in varying) for i, r in records.items()}
                 for rank, records in by_rank.items()}
    classes = alike(by_rank, lambda records: tuple(sorted(
        (i, tuple(r.tensors[k] for k in varying), r.step) for i, r in records.items())))
    class_of = {rank: n for n, ranks in enumerate(classes) for rank in ranks}
    holders: dict[tuple, set[int]] = {}
    for n, ranks in enumerate(classes):
        for value in signature[ranks[0]].values():
            holders.setdefault(value, set()).add(n)
    linked = {(n, n) for n, ranks in enumerate(classes) if len(ranks) > 1 and signature[ranks[0]]}
    linked.update(pair for found in holders.values() if len(found) > 1
                  for pair in combinations(sorted(found), 2))

    def compute(a: int, b: int) -> Optional[InputPair]:
        pair = _pair(classes[class_of[a]][0], classes[class_of[b]][0], signature, by_rank)
        pair.a, pair.b = a, b
        return pair if pair.compared >= MIN_FORWARDS and pair.flagged else None

    return blocks_of(classes, compute, linked), _some_pair_compared(signature)


def _some_pair_compared(signature: dict[int, dict[int, tuple]]) -> bool:
    """Two ranks recorded MIN_FORWARDS or more of the same iterations: ranks with the same
    iterations (the usual case) are checked once."""
    kinds = Counter(frozenset(signatures) for signatures in signature.values())
    sets = list(kinds.items())
    for i, (iterations, n) in enumerate(sets):
        if n >= 2 and len(iterations) >= MIN_FORWARDS:
            return True
        if any(len(iterations & other) >= MIN_FORWARDS for other, _n in sets[i + 1:]):
            return True
    return False
