"""DDP301: ranks received the same samples (whole batches or a share of them)."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from itertools import combinations
from typing import Optional

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.probe import telemetry as tm
from ddpdoctor.probe.analysis.runmodel import RunModel
from ddpdoctor.core.registry import Skipped, check

from ddpdoctor.probe.analysis.loaders import LoaderEpoch, loader_epochs, loader_name, loader_records, loader_site
from ddpdoctor.probe.analysis.wording import counted, location, name_list, rank_list, steps_text, verb

MIN_EXCESS = 4  # cross-rank matches beyond the expected, at the least, to report anything
SIGMAS = 3.0  # ... and at least this many Poisson standard deviations of the expected
REL_EXCESS = 0.5  # ... and at least this share of the expected
MAJORITY = 0.5  # share of compared batches that must be identical (or moved) to say so
REFUTE_MIN_EXPECTED = 8.0  # matches expected if two ranks read the whole dataset, to trust their absence

IDENTICAL, REORDERED, SAMPLES = "identical batches", "same batches reordered", "shared samples"


@check("DDP301", "Ranks read the same samples", Severity.ERROR)
def sampler_overlap(run: RunModel) -> list[Problem] | Skipped:
    """
    What it detects:
        Ranks that were fed the same data. Every sample of every batch is fingerprinted in
        each rank; per DataLoader and epoch the ranks are compared pairwise:

        - identical batches at the same position (no DistributedSampler at all),
        - the same batches at other positions (same data, different order),
        - a share of the samples in common (per-rank random splits, a DistributedSampler
          given the wrong rank or num_replicas, different seeds per rank).

        Datasets can hold duplicate samples of their own (tiny or synthetic data), so the
        check calibrates on each rank's own data: p = duplicate pairs among a rank's samples
        of one epoch / all pairs. Under correct sharding two ranks that saw s_a and s_b samples
        share about p * s_a * s_b matches by chance. A pair is reported only when the observed
        matches exceed that by at least 4, by 3 standard deviations (sqrt of the expected) and
        by half the expected. A DistributedSampler with drop_last=False pads each epoch with up
        to world_size - 1 repeated samples: those matches are tolerated. The share of the epoch
        read by more than one rank is estimated as excess * n / (s_a * s_b), n being a rank's
        epoch size (len(loader) * batch_size, or len(dataset)), capped at 100%.

        Independently of the fingerprints, a map-style DataLoader whose sampler is not a
        DistributedSampler, with the same len(dataset) on every rank and
        len(loader) = len(dataset) / batch_size, makes each rank iterate the whole dataset. It
        is reported even when the batches seen did not collide yet, unless enough were seen to
        rule it out (8 or more matches expected had the ranks read the same data), or the
        ranks' dataset lengths differ, or len(loader) is what a 1/world_size shard gives
        (sharded by hand).

        A DataLoader during whose batches no optimizer step ran (at least 2 batches seen in an
        epoch, the step count unchanged) is taken for an evaluation loader: reading it whole on
        every rank wastes time but trains nothing twice, so it is a warning, not an error.

        What the model is fed, whatever built it: the tensor inputs of every training forward
        of a DDP model are fingerprinted per rank (shape, dtype and a fixed sample of values).
        Only the inputs that change from one step to the next are judged (a constant attention
        mask or position ids are the same on every rank by design). When, at 2 or more and at
        least half of the forwards two ranks both made, every such input was the same on both
        (at the same step or another), the ranks trained on the same batches: a script that
        draws its own batches (nanoGPT's get_batch: torch.randint offsets into a np.memmap)
        with one seed on every rank. Where a DataLoader finding covers the same ranks, this is
        added to it as evidence.

    Why it hurts:
        Each rank computes gradients on the same examples, so the all-reduce averages copies:
        N GPUs do the work of one, an epoch sees 1/N of the distinct data it should, and the
        effective learning rate schedule is off.

    How to fix:
        Give each rank its own shard with a DistributedSampler, and reshuffle every epoch:

            sampler = DistributedSampler(dataset, shuffle=True)
            loader = DataLoader(dataset, batch_size=64, sampler=sampler)  # no shuffle=True here
            for epoch in range(epochs):
                sampler.set_epoch(epoch)
                for x, y in loader:
                    ...

        For an IterableDataset, split the stream by dist.get_rank() inside __iter__. A script
        that samples its own batches seeds that sampling per rank:

            torch.manual_seed(1337 + rank)          # or np.random.default_rng(seed + rank)
            ix = torch.randint(len(data) - block_size, (batch_size,))
    """
    views = loader_epochs(run)
    inputs = _forward_inputs(run)
    if not views and not inputs:
        return Skipped("no DataLoader was iterated and no DDP model's training forward was seen")
    world = max(run.world_size, len(run.ranks))
    if world < 2:
        return Skipped("a single process: there are no ranks to compare")
    problems: list[Problem] = []
    judged = False
    for loader_id, by_rank in sorted(views.items()):
        whole = _whole_dataset_per_rank(by_rank, world)
        pairs = _pair_stats(by_rank, world)
        judged = judged or bool(pairs) or whole is not None
        flagged = [p for p in pairs if p.flagged]
        for component in _components(flagged):
            problems.append(_overlap_problem(loader_id, by_rank, component, flagged, whole))
        if not flagged and whole is not None:
            refuted = any(p.expected_if_whole is not None and p.expected_if_whole >= REFUTE_MIN_EXPECTED
                          for p in pairs)
            if not refuted:
                problems.append(_whole_dataset_problem(loader_id, by_rank, whole, pairs))
    judged_inputs = False
    for model_id, by_rank in sorted(inputs.items()):
        varying = _varying_keys(by_rank)
        pairs = [p for p in _input_pairs(by_rank, varying) if p.compared >= MIN_FORWARDS] if varying else []
        judged_inputs = judged_inputs or bool(pairs)
        flagged = [p for p in pairs if p.flagged]
        for component in _components(flagged):  # type: ignore[arg-type]
            _add_input_evidence(problems, run, model_id, component, flagged, varying)
    if not judged and not judged_inputs:
        if not views:
            return Skipped("no DataLoader was iterated, and the DDP model's inputs did not change "
                           "between forwards on 2 ranks (nothing to compare)")
        return Skipped("fewer than 2 ranks recorded batches of the same DataLoader epoch")
    return problems


# -- the model's forward inputs -------------------------------------------------------------

MIN_FORWARDS = 2  # forwards compared (and found alike), at the least


def _forward_inputs(run: RunModel) -> dict[int, dict[int, dict[int, tm.ForwardInputs]]]:
    """model id -> rank -> iteration -> its ForwardInputs record."""
    found: dict[int, dict[int, dict[int, tm.ForwardInputs]]] = {}
    for rank, rank_run in run.ranks.items():
        for record in rank_run.of(tm.ForwardInputs):
            found.setdefault(record.model_id, {}).setdefault(rank, {})[record.iteration] = record
    return found


def _varying_keys(by_rank: dict[int, dict[int, tm.ForwardInputs]]) -> list[str]:
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


def _input_pairs(by_rank: dict[int, dict[int, tm.ForwardInputs]], varying: list[str]) -> list[InputPair]:
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


def _add_input_evidence(problems: list[Problem], run: RunModel, model_id: int, ranks: list[int],
                        flagged: list[InputPair], varying: list[str]) -> None:
    """A finding for ranks fed the same inputs, or evidence added to the DataLoader's finding."""
    inside = [p for p in flagged if p.a in ranks and p.b in ranks]
    best = max(inside, key=lambda p: (p.identical + p.moved, p.compared))
    evidence = {"model_id": model_id, "inputs_judged": varying,
                "pairs": [{"ranks": [p.a, p.b], "forwards_compared": p.compared,
                           "identical": p.identical, "same_at_another_step": p.moved} for p in inside]}
    same = best.identical + best.moved
    for problem in problems:
        if set(ranks) <= set(problem.ranks) and problem.severity in (None, Severity.ERROR):
            problem.evidence["forward_inputs"] = evidence
            problem.message += (f"; the DDP model's inputs were the same too ({same}/{best.compared} "
                                "training forwards)")
            return
    ddp = next((info for rank in ranks for info in run.ranks[rank].of(tm.DDPInfo)
                if info.ddp_id == model_id), None)
    where = f"the DDP model built at {ddp.site}" if ddp is not None and ddp.site else "the DDP model"
    if best.identical >= best.moved:
        when = f"at {steps_text(best.steps)}" if best.steps else "at the same forwards"
        how = f"identical inputs {when} ({best.identical}/{best.compared} training forwards"
        how += f", and {best.moved} more at another step)" if best.moved else ")"
    else:
        how = (f"the same inputs at different steps ({same}/{best.compared} training forwards "
               f"of rank {best.b} matched one of rank {best.a}'s)")
    message = (f"{rank_list(ranks)} fed {where} {how}: every input that changes from step to step "
               f"({name_list(varying)}) was the same on {'both' if len(ranks) == 2 else 'these'} "
               "ranks, so they trained on the same batches, whatever built them (one seed for "
               "the script's own batch sampling?)")
    evidence["kind"] = "identical forward inputs"
    problems.append(Problem(
        message=message,
        hint=("give each rank its own data: seed the script's own sampling per rank "
              "(torch.manual_seed(seed + rank), np.random.default_rng(seed + rank)) or shard it by "
              "dist.get_rank(); for a DataLoader use DistributedSampler"),
        ranks=ranks, location=location(ddp.site if ddp is not None else None), evidence=evidence))


@dataclass
class PairStats:
    a: int
    b: int
    seen_a: int = 0
    seen_b: int = 0
    matches: int = 0  # pairs (sample of a, sample of b) with the same fingerprint, same epoch
    expected: float = 0.0  # the same, expected from the data's own duplicate rate
    padding: int = 0  # matches a DistributedSampler's padding can explain
    product: int = 0  # sum over epochs of s_a * s_b
    b_in_a: int = 0  # b's samples whose fingerprint a also saw (same epoch)
    batches_a: int = 0
    batches_b: int = 0
    common_batches: int = 0  # positions (epoch, index) both saw
    identical_batches: int = 0
    identical_steps: list[int] = field(default_factory=list)
    moved_batches: int = 0  # b's batches that a saw at another position of the same epoch
    epoch_size: Optional[int] = None
    expected_if_whole: Optional[float] = None  # matches expected if both read the whole dataset

    @property
    def excess(self) -> float:
        return self.matches - self.expected - self.padding

    @property
    def threshold(self) -> float:
        return max(MIN_EXCESS, SIGMAS * math.sqrt(self.expected), REL_EXCESS * self.expected)

    @property
    def flagged(self) -> bool:
        return self.excess >= self.threshold

    @property
    def share(self) -> Optional[float]:
        if not self.epoch_size or not self.product:
            return None
        return min(1.0, max(0.0, self.excess) * self.epoch_size / self.product)

    @property
    def kind(self) -> str:
        if self.identical_batches >= 2 and self.identical_batches >= MAJORITY * self.common_batches:
            return IDENTICAL
        same = self.identical_batches + self.moved_batches
        if same >= 2 and same >= MAJORITY * min(self.batches_a, self.batches_b):
            return REORDERED
        return SAMPLES

    def to_evidence(self) -> dict:
        return {
            "ranks": [self.a, self.b], "samples": [self.seen_a, self.seen_b],
            "matches": self.matches, "expected": round(self.expected, 2),
            "padding_tolerated": self.padding, "excess": round(self.excess, 2),
            "identical_batches": self.identical_batches, "common_batches": self.common_batches,
            "moved_batches": self.moved_batches,
            "shared_share": None if self.share is None else round(self.share, 3),
        }


def _duplicate_rate(by_rank: dict[int, dict[int, LoaderEpoch]]) -> float:
    """Duplicate pairs among a rank's own samples of one epoch / all such pairs, pooled."""
    duplicates = pairs = 0
    for epochs in by_rank.values():
        for entry in epochs.values():
            units = entry.samples()
            counts = Counter(units)
            duplicates += sum(k * (k - 1) // 2 for k in counts.values())
            pairs += len(units) * (len(units) - 1) // 2
    return duplicates / pairs if pairs else 0.0


def _padding(entry: LoaderEpoch, world: int) -> int:
    loader = entry.loader
    if loader is None or not loader.distributed_sampler or loader.drop_last:
        return 0
    if loader.dataset_len:
        return (-loader.dataset_len) % world
    return world - 1


def _epoch_size(by_rank: dict[int, dict[int, LoaderEpoch]]) -> Optional[int]:
    """Samples one rank gets per epoch: len(loader) * batch_size (at most len(dataset))."""
    for loader in loader_records(by_rank):
        if loader.batches and loader.batch_size:
            size = loader.batches * loader.batch_size
            return min(size, loader.dataset_len) if loader.dataset_len else size
        if loader.dataset_len:
            return loader.dataset_len
    return None


class _Held:
    """One rank's epoch of one loader, indexed for comparing with every other rank."""

    def __init__(self, entry: LoaderEpoch) -> None:
        self.units = entry.samples()
        self.counts = Counter(self.units)
        self.entry = entry
        self.at = {batch.index: batch for batch in entry.batches}
        self.indices = set(self.at)
        self.unique_indices = len(self.indices) == len(entry.batches)  # then places = a set's size
        self.prints = {batch.fingerprint for batch in entry.batches}
        self._padding: Optional[int] = None

    def padding(self, world: int) -> int:
        if self._padding is None:
            self._padding = _padding(self.entry, world)
        return self._padding


def _sharing(held: dict[tuple[int, int], _Held], what: str) -> set[tuple[int, int, int]]:
    """(a, b, epoch) for every pair of ranks a < b holding a common key (sample or batch
    fingerprint) in that epoch, from one pass over the keys rather than one per pair."""
    holders: dict[tuple[int, str], set[int]] = {}
    for (rank, epoch), entry in held.items():
        for key in getattr(entry, what):
            holders.setdefault((epoch, key), set()).add(rank)
    pairs = set()
    for (epoch, _key), ranks in holders.items():
        if len(ranks) > 1:
            pairs.update((a, b, epoch) for a, b in combinations(sorted(ranks), 2))
    return pairs


def _pair_stats(by_rank: dict[int, dict[int, LoaderEpoch]], world: int) -> list[PairStats]:
    rate = _duplicate_rate(by_rank)
    epoch_size = _epoch_size(by_rank)
    dataset_len = next((l.dataset_len for l in loader_records(by_rank) if l.dataset_len), None)
    stats = []
    # What each rank's epoch holds, built once per rank rather than once per pair: the pairs
    # grow with the square of the world (1,024 ranks: half a million).
    held = {(rank, epoch): _Held(entry) for rank, epochs in by_rank.items() for epoch, entry in epochs.items()}
    share_units = _sharing(held, "counts")
    share_prints = _sharing(held, "prints")
    for a, b in combinations(sorted(by_rank), 2):
        pair = PairStats(a, b, epoch_size=epoch_size)
        for epoch in sorted(set(by_rank[a]) & set(by_rank[b])):
            ea, eb = by_rank[a][epoch], by_rank[b][epoch]
            ha, hb = held[(a, epoch)], held[(b, epoch)]
            units_a, units_b = ha.units, hb.units
            if not units_a or not units_b:
                continue
            counts_a, counts_b = ha.counts, hb.counts
            pair.seen_a += len(units_a)
            pair.seen_b += len(units_b)
            pair.product += len(units_a) * len(units_b)
            if (a, b, epoch) in share_units:
                pair.matches += sum(k * counts_b[f] for f, k in counts_a.items() if f in counts_b)
                pair.b_in_a += sum(1 for f in units_b if f in counts_a)
            pair.padding += max(ha.padding(world), hb.padding(world))
            at_a, prints_a = ha.at, ha.prints
            pair.batches_a += len(ea.batches)
            pair.batches_b += len(eb.batches)
            if (a, b, epoch) not in share_prints:  # no batch of b is one of a's: only count places
                pair.common_batches += (len(ha.indices & hb.indices) if hb.unique_indices
                                        else sum(1 for batch in eb.batches if batch.index in at_a))
                continue
            for batch in eb.batches:
                other = at_a.get(batch.index)
                if other is not None:
                    pair.common_batches += 1
                    if other.fingerprint == batch.fingerprint:
                        pair.identical_batches += 1
                        pair.identical_steps.append(other.step)
                        continue
                if batch.fingerprint in prints_a:
                    pair.moved_batches += 1
        if not pair.product:
            continue
        pair.expected = rate * pair.product
        if dataset_len:
            pair.expected_if_whole = pair.product / dataset_len * (1.0 - rate)
        stats.append(pair)
    return stats


def _components(flagged: list[PairStats]) -> list[list[int]]:
    """Ranks linked by flagged pairs, as sorted groups."""
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for pair in flagged:
        parent[find(pair.a)] = find(pair.b)
    groups: dict[int, list[int]] = {}
    for rank in sorted(parent):
        groups.setdefault(find(rank), []).append(rank)
    return sorted(groups.values())


@dataclass
class _WholeDataset:
    """The static fact: every rank iterates the whole dataset."""

    ranks: list[int]
    sampler: str
    dataset_len: int
    batches: int
    batch_size: int


def _whole_dataset_per_rank(by_rank: dict[int, dict[int, LoaderEpoch]],
                            world: int) -> Optional[_WholeDataset]:
    first: dict[int, tm.Loader] = {}
    for rank, epochs in by_rank.items():
        loader = next((epochs[e].loader for e in sorted(epochs) if epochs[e].loader), None)
        if loader is not None:
            first[rank] = loader
    if len(first) < 2:
        return None
    loaders = list(first.values())
    if any(l.iterable or l.distributed_sampler for l in loaders):
        return None
    lengths = {l.dataset_len for l in loaders}
    sizes = {l.batch_size for l in loaders}
    if len(lengths) != 1 or None in lengths or len(sizes) != 1 or None in sizes:
        return None  # lengths differ across ranks: sharded by hand
    n, size = lengths.pop(), sizes.pop()
    if not n or not size:
        return None
    whole = {n // size, -(-n // size)}
    share = -(-n // world)
    shard = {n // world // size, -(-n // world // size), -(-share // size), share // size}
    batches = {l.batches for l in loaders}
    if None in batches or not batches <= whole or batches & shard:
        return None
    return _WholeDataset(sorted(first), loaders[0].sampler, n, max(batches), size)


def _overlap_problem(loader_id: int, by_rank: dict[int, dict[int, LoaderEpoch]], ranks: list[int],
                     flagged: list[PairStats], whole: Optional[_WholeDataset]) -> Problem:
    name = loader_name(loader_id, by_rank)
    inside = [p for p in flagged if p.a in ranks and p.b in ranks]
    kinds = {p.kind for p in inside}
    if kinds == {IDENTICAL}:
        kind = IDENTICAL
        identical, common, steps = _identical_positions(by_rank, ranks)
        if not common:  # the ranks never saw the same positions all together: best pair
            best = max(inside, key=lambda p: p.identical_batches)
            identical, common, steps = best.identical_batches, best.common_batches, best.identical_steps
        message = (f"{rank_list(ranks)} received identical batches from {name} at "
                   f"{steps_text(steps)} ({identical}/{common} batches)")
    elif kinds <= {IDENTICAL, REORDERED}:
        kind = REORDERED
        best = max(inside, key=lambda p: p.identical_batches + p.moved_batches)
        message = (f"{rank_list(ranks)} received the same batches from {name} in a different order: "
                   f"{best.identical_batches + best.moved_batches} of the {best.batches_b} batches "
                   f"rank {best.b} saw also reached rank {best.a}")
    else:
        kind = SAMPLES
        best = max(inside, key=lambda p: (p.share or 0.0, p.excess))
        message = (f"{rank_list(ranks)} read overlapping samples from {name}: {best.b_in_a} of the "
                   f"{best.seen_b} samples rank {best.b} saw also reached rank {best.a} "
                   f"({best.matches} matches; the data's own duplicates explain "
                   f"{best.expected + best.padding:.1f})")
        if best.share is not None:
            message += (f"; an estimated {best.share:.0%} of each rank's {best.epoch_size}-sample "
                        "epoch is read by more than one rank")
    evidence = {
        "loader_id": loader_id,
        "kind": kind,
        "pairs": [p.to_evidence() for p in sorted(inside, key=lambda p: -p.excess)[:20]],
        "within_rank_duplicate_rate": round(_duplicate_rate(by_rank), 4),
        "epoch_size": _epoch_size(by_rank),
    }
    evidence.update(_sampler_evidence(by_rank))
    # The static fact only backs up what the fingerprints show as (nearly) complete overlap: a
    # partial one means the ranks' datasets differ, whatever their lengths.
    complete = kind != SAMPLES or (best.share is not None and best.share >= 0.9)
    if whole is not None and complete:
        message += (f"; its sampler is {whole.sampler}, not a DistributedSampler, so each rank "
                    f"iterates all {whole.dataset_len} samples")
    return _graded(Problem(message=message, hint=_HINT, ranks=ranks,
                           location=location(loader_site(by_rank)), evidence=evidence), by_rank)


def _whole_dataset_problem(loader_id: int, by_rank: dict[int, dict[int, LoaderEpoch]],
                           whole: _WholeDataset, pairs: list[PairStats]) -> Problem:
    name = loader_name(loader_id, by_rank)
    message = (f"{rank_list(whole.ranks)} each {verb(whole.ranks, 'iterates', 'iterate')} all "
               f"{whole.dataset_len} samples of {name}: its sampler is {whole.sampler}, not a "
               f"DistributedSampler, and every rank gets {counted(whole.batches, 'batch', 'batches')} "
               f"of {whole.batch_size} per epoch")
    seen = max((min(p.seen_a, p.seen_b) for p in pairs), default=0)
    if seen:
        message += f" (the {seen} samples per rank seen so far happened not to collide)"
    evidence = {"loader_id": loader_id, "kind": "whole dataset per rank",
                "dataset_len": whole.dataset_len, "batches": whole.batches,
                "batch_size": whole.batch_size, "samples_compared": seen}
    evidence.update(_sampler_evidence(by_rank))
    return _graded(Problem(message=message, hint=_HINT, ranks=whole.ranks,
                           location=location(loader_site(by_rank)), evidence=evidence), by_rank)


def _graded(problem: Problem, by_rank: dict[int, dict[int, LoaderEpoch]]) -> Problem:
    """An evaluation loader (no optimizer step while it was iterated) read whole on every rank
    wastes time but trains nothing twice: a warning, not an error."""
    if not _evaluation_only(by_rank):
        return problem
    problem.severity = Severity.WARNING
    problem.message += ("; no optimizer step ran while it was iterated (an evaluation loader?), so "
                        "this costs time, not correctness")
    problem.hint = ("shard evaluation too (DistributedSampler(ds, shuffle=False)) and all_reduce the "
                    "metric sums, or evaluate on rank 0 only while the others wait at a barrier")
    problem.evidence["evaluation_loader"] = True
    return problem


def _evaluation_only(by_rank: dict[int, dict[int, LoaderEpoch]]) -> bool:
    """At least 2 batches seen in some epoch, and the step count never moved within an epoch."""
    epochs = [e for epochs in by_rank.values() for e in epochs.values()]
    if not any(len(e.batches) >= 2 for e in epochs):
        return False
    return all(len({b.step for b in e.batches}) <= 1 for e in epochs)


def _identical_positions(by_rank: dict[int, dict[int, LoaderEpoch]],
                         ranks: list[int]) -> tuple[int, int, list[int]]:
    """(positions where all `ranks` got the same batch, positions all of them saw, steps)."""
    common = identical = 0
    steps: list[int] = []
    epochs = set.intersection(*(set(by_rank[r]) for r in ranks))
    for epoch in sorted(epochs):
        at = [{b.index: b for b in by_rank[r][epoch].batches} for r in ranks]
        for index in sorted(set.intersection(*(set(m) for m in at))):
            common += 1
            prints = {m[index].fingerprint for m in at}
            if len(prints) == 1:
                identical += 1
                steps.append(at[0][index].step)
    return identical, common, steps


def _sampler_evidence(by_rank: dict[int, dict[int, LoaderEpoch]]) -> dict:
    loaders = loader_records(by_rank)
    if not loaders:
        return {}
    loader = loaders[0]
    return {"sampler": loader.sampler, "distributed_sampler": loader.distributed_sampler,
            "shuffle": loader.shuffle, "dataset": loader.dataset, "dataset_len": loader.dataset_len,
            "iterable": loader.iterable}


_HINT = ("wrap the dataset in DistributedSampler (DataLoader(ds, sampler=DistributedSampler(ds))) "
         "and call sampler.set_epoch(epoch) each epoch; for an IterableDataset, shard the stream "
         "by dist.get_rank() in __iter__")
