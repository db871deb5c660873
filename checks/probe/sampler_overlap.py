"""DDP301: ranks received the same samples (whole batches or a share of them)."""

from __future__ import annotations

from typing import Optional

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.analysis import frameworks
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.core.registry import Skipped, check

from ddpdoctor.probe.analysis.forward_overlap import InputPair, forward_inputs, input_pairs, varying_keys
from ddpdoctor.probe.analysis.loaders import LoaderEpoch, loader_epochs, loader_name, loader_records, loader_site
from ddpdoctor.probe.analysis.rank_pairs import (PairBlock, best_pair, blocks_inside, linked_block_groups,
                                                 ordered_pairs, pair_count)
from ddpdoctor.probe.analysis.sample_overlap import (IDENTICAL, REORDERED, SAMPLES, PairStats, PairSummary,
                                                     WholeDataset, duplicate_rate, epoch_size, identical_positions,
                                                     pair_summary, whole_dataset_per_rank)
from ddpdoctor.probe.words.wording import counted, location, name_list, rank_list, steps_text, verb



MAX_EVIDENCE_PAIRS = 20  # pairs of ranks listed in a finding's evidence


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

        A pair of ranks is reported only when their matches clearly exceed what the data's own
        duplicates (measured on each rank's samples) and a DistributedSampler's padding explain
        by chance; the statistics are in docs/verdicts.md ("DDP301: shared samples or
        chance?").

        Independently of the fingerprints, a map-style DataLoader whose sampler is not a
        DistributedSampler and whose length is the whole dataset on every rank makes each rank
        iterate all of it: reported even before any batch collided, unless enough were seen to
        rule it out or the loader's length is that of a 1/world_size shard (sharded by hand).

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
    inputs = forward_inputs(run)
    if not views and not inputs:
        return Skipped("no DataLoader was iterated and no DDP model's training forward was seen")
    world = max(run.world_size, len(run.ranks))
    if world < 2:
        return Skipped("a single process: there are no ranks to compare")
    problems: list[Problem] = []
    judged = False
    for loader_id, by_rank in sorted(views.items()):
        whole = whole_dataset_per_rank(by_rank, world)
        pairs = pair_summary(by_rank, world)
        judged = judged or pairs.compared or whole is not None
        flagged = pairs.flagged
        for component in linked_block_groups(flagged):
            problems.append(_overlap_problem(loader_id, by_rank, component, flagged, whole))
        if not flagged and whole is not None and not pairs.refuted:
            problems.append(_whole_dataset_problem(loader_id, by_rank, whole, pairs))
    judged_inputs = False
    for model_id, by_rank in sorted(inputs.items()):
        varying = varying_keys(by_rank)
        flagged, compared = input_pairs(by_rank, varying) if varying else ([], False)
        judged_inputs = judged_inputs or compared
        for component in linked_block_groups(flagged):
            _add_input_evidence(problems, run, model_id, component, flagged, varying)
    if not judged and not judged_inputs:
        if not views:
            return Skipped("no DataLoader was iterated, and the DDP model's inputs did not change "
                           "between forwards on 2 ranks (nothing to compare)")
        return Skipped("fewer than 2 ranks recorded batches of the same DataLoader epoch")
    return [frameworks.worded("DDP301", p, run) for p in problems]


def _add_input_evidence(problems: list[Problem], run: RunModel, model_id: int, ranks: list[int],
                        flagged: list[PairBlock[InputPair]], varying: list[str]) -> None:
    """A finding for ranks fed the same inputs, or evidence added to the DataLoader's finding."""
    inside = blocks_inside(flagged, ranks)
    best = best_pair(inside, key=lambda p: (p.identical + p.moved, p.compared))
    # The first pairs only: 1,024 ranks fed alike are half a million pairs.
    shown = ordered_pairs(inside, MAX_EVIDENCE_PAIRS)
    evidence = {"model_id": model_id, "inputs_judged": varying,
                "pairs": [{"ranks": [p.a, p.b], "forwards_compared": p.compared,
                           "identical": p.identical, "same_at_another_step": p.moved} for p in shown]}
    total = pair_count(inside)
    if total > len(shown):
        evidence["pairs_total"] = total
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


def _overlap_problem(loader_id: int, by_rank: dict[int, dict[int, LoaderEpoch]], ranks: list[int],
                     flagged: list[PairBlock[PairStats]], whole: Optional[WholeDataset]) -> Problem:
    name = loader_name(loader_id, by_rank)
    inside = blocks_inside(flagged, ranks)
    kinds = {block.stats.kind for block in inside}
    if kinds == {IDENTICAL}:
        kind = IDENTICAL
        identical, common, steps = identical_positions(by_rank, ranks)
        if not common:  # the ranks never saw the same positions all together: best pair
            best = best_pair(inside, key=lambda p: p.identical_batches)
            identical, common, steps = best.identical_batches, best.common_batches, best.identical_steps
        message = (f"{rank_list(ranks)} received identical batches from {name} at "
                   f"{steps_text(steps)} ({identical}/{common} batches)")
    elif kinds <= {IDENTICAL, REORDERED}:
        kind = REORDERED
        best = best_pair(inside, key=lambda p: p.identical_batches + p.moved_batches)
        message = (f"{rank_list(ranks)} received the same batches from {name} in a different order: "
                   f"{best.identical_batches + best.moved_batches} of the {best.batches_b} batches "
                   f"rank {best.b} saw also reached rank {best.a}")
    else:
        kind = SAMPLES
        best = best_pair(inside, key=lambda p: (p.share or 0.0, p.excess))
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
        "pairs": [p.to_evidence() for p in ordered_pairs(inside, MAX_EVIDENCE_PAIRS, lambda p: -p.excess)],
        "within_rank_duplicate_rate": round(duplicate_rate(by_rank), 4),
        "epoch_size": epoch_size(by_rank),
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
                           whole: WholeDataset, pairs: PairSummary) -> Problem:
    name = loader_name(loader_id, by_rank)
    message = (f"{rank_list(whole.ranks)} each {verb(whole.ranks, 'iterates', 'iterate')} all "
               f"{whole.dataset_len} samples of {name}: its sampler is {whole.sampler}, not a "
               f"DistributedSampler, and every rank gets {counted(whole.batches, 'batch', 'batches')} "
               f"of {whole.batch_size} per epoch")
    seen = pairs.most_seen
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
