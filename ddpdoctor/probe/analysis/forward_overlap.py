"""DDP301 without a DataLoader: the tensor inputs of every training forward of a DDP model,
fingerprinted per rank, compared across ranks. Only inputs that change from step to step are
judged (a constant attention mask is the same on every rank by design)."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from typing import Optional

from ddpdoctor.probe import telemetry as tm
from ddpdoctor.probe.analysis.runmodel import RunModel
from ddpdoctor.probe.analysis.sample_overlap import MAJORITY

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


def input_pairs(by_rank: dict[int, dict[int, tm.ForwardInputs]], varying: list[str]) -> list[InputPair]:
    signature = {rank: {i: tuple(r.tensors[k] for k in varying) for i, r in records.items()}
                 for rank, records in by_rank.items()}
    pairs = []
    for a, b in combinations(sorted(by_rank), 2):
        pair = InputPair(a, b)
        seen_a = set(signature[a].values())
        for iteration in sorted(set(signature[a]) & set(signature[b])):
            pair.compared += 1
            if signature[a][iteration] == signature[b][iteration]:
                pair.identical += 1
                pair.steps.append(by_rank[a][iteration].step)
            elif signature[b][iteration] in seen_a:
                pair.moved += 1
        pairs.append(pair)
    return pairs
