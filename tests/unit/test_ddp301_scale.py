"""DDP301 at 1,024 ranks: only pairs of ranks that share a sample (or a forward input) get full
statistics, the others are aggregated. The result must be the one the every-pair code gave
(tests/helpers/ddp301_reference.py): on every probe recording and on generated worlds with
random overlap, the statistics are compared number by number, and the check's findings word
for word with the reference's statistics put in its place."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from ddpdoctor.probe.analysis.forward_overlap import MIN_FORWARDS, forward_inputs, input_pairs, varying_keys
from ddpdoctor.probe.analysis.loaders import loader_epochs
from ddpdoctor.probe.analysis.rank_pairs import PairBlock, every_pair
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.probe.analysis.sample_overlap import REFUTE_MIN_EXPECTED, PairSummary, pair_summary
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.core.registry import Skipped
from tests.helpers import ddp301_reference as reference
from tests.helpers.telemetry_builders import RunBuilder, judge, sample

RECORDINGS = Path(__file__).resolve().parents[1] / "probe_recordings"


def one_block_each(pairs) -> list[PairBlock]:
    """The reference's pairs, each a block of its own (what the check reads)."""
    return [PairBlock([p.a], [p.b], p) for p in pairs]


def reference_summary(by_rank, world) -> PairSummary:
    old = reference.pair_stats(by_rank, world)
    wholes = [p.expected_if_whole for p in old if p.expected_if_whole is not None]
    return PairSummary(one_block_each(old), bool(old), max((min(p.seen_a, p.seen_b) for p in old), default=0),
                       max(wholes) if wholes else None)


def reference_inputs(by_rank, varying):
    pairs = [p for p in reference.input_pairs(by_rank, varying) if p.compared >= MIN_FORWARDS]
    return one_block_each(p for p in pairs if p.flagged), bool(pairs)


def assert_same_statistics(model: RunModel) -> None:
    world = max(model.world_size, len(model.ranks))
    for by_rank in loader_epochs(model).values():
        old = reference.pair_stats(by_rank, world)
        new = pair_summary(by_rank, world)
        assert every_pair(new.flagged) == [p for p in old if p.flagged]
        everyone = {(p.a, p.b): p for p in old}
        assert all(p == everyone[(p.a, p.b)] for p in every_pair(new.shared))
        assert new.compared == bool(old)
        assert new.most_seen == max((min(p.seen_a, p.seen_b) for p in old), default=0)
        assert new.refuted == any(p.expected_if_whole is not None and p.expected_if_whole >= REFUTE_MIN_EXPECTED
                                  for p in old)
        assert new.most_expected_if_whole == reference_summary(by_rank, world).most_expected_if_whole
    for by_rank in forward_inputs(model).values():
        varying = varying_keys(by_rank)
        if varying:
            blocks, compared = input_pairs(by_rank, varying)
            old_blocks, old_compared = reference_inputs(by_rank, varying)
            assert (every_pair(blocks), compared) == (every_pair(old_blocks), old_compared)


def findings(model: RunModel):
    value = judge("DDP301", model)
    return value if isinstance(value, Skipped) else [f.to_dict() for f in value]


def assert_same_findings(model: RunModel, monkeypatch: pytest.MonkeyPatch) -> None:
    new = findings(model)
    with monkeypatch.context() as patch:
        patch.setattr("ddpdoctor.checks.probe.sampler_overlap.pair_summary", reference_summary)
        patch.setattr("ddpdoctor.checks.probe.sampler_overlap.input_pairs", reference_inputs)
        old = findings(model)
    assert new == old


@pytest.mark.parametrize("name", sorted(p.name for p in RECORDINGS.iterdir() if p.is_dir()))
def test_every_recording_gets_the_every_pair_statistics_and_findings(name, monkeypatch):
    model = RunModel.load(RECORDINGS / name)
    assert_same_statistics(model)
    assert_same_findings(model, monkeypatch)


def random_world(seed: int) -> RunBuilder:
    """Ranks drawing batches from pools that overlap at random: some ranks read another's
    samples (whole batches, reordered or in part), datasets with duplicates of their own,
    epochs and batches missing on some ranks, a DistributedSampler's padding or none, and forward
    inputs alike on some ranks."""
    rng = random.Random(seed)
    world = rng.randint(2, 12)
    run = RunBuilder(world_size=world)
    distributed = rng.random() < 0.5
    batch_size = rng.choice([1, 2, 4])
    batches = rng.randint(1, 8)
    # batches * batch_size: every rank iterates the whole dataset (the static finding)
    dataset_len = rng.choice([None, 40, 64, 1000, batches * batch_size])
    copy_of = {r: rng.randrange(world) if rng.random() < 0.4 else r for r in range(world)}
    duplicates = rng.random() < 0.3
    for rank in range(world):
        builder = run[rank]
        builder.ddp()
        source = copy_of[rank]
        for epoch in range(rng.randint(1, 3)):
            if rng.random() < 0.15:
                continue  # this rank never reached this epoch
            builder.loader(epoch=epoch, sampler="DistributedSampler" if distributed else "RandomSampler",
                           batches=batches, batch_size=batch_size, dataset_len=dataset_len)
            order = list(range(batches))
            if source != rank and rng.random() < 0.5:
                rng.shuffle(order)
            for index in range(rng.randint(0, batches)):
                position = order[index]
                owner = source if rng.random() < 0.8 else rank
                pool = 7 if duplicates else 10_000
                samples = [sample(owner * 100_000 + epoch * 10_000 + (position * batch_size + k) % pool)
                           for k in range(batch_size)]
                if rng.random() < 0.1:
                    samples[0] = sample(999_999)  # a padded sample every rank may hold
                builder.batch(samples, epoch=epoch, index=index)
                if rng.random() < 0.7:
                    iteration = builder.iterations.get(0, 0)
                    x = sample((copy_of[rank] if rng.random() < 0.7 else rank) * 1000 + iteration)
                    builder.add(tm.ForwardInputs(builder._now(), 0, iteration, builder.steps,
                                                 {"args[0]": x, "args[1]": "00000000000000aa"}))
                builder.train_steps(1)
    return run


@pytest.mark.parametrize("seed", range(60))
def test_random_worlds_get_the_every_pair_statistics_and_findings(seed, monkeypatch):
    model = random_world(seed).model()
    assert_same_statistics(model)
    assert_same_findings(model, monkeypatch)


def test_a_thousand_ranks_without_shared_samples_build_no_pair():
    """The scale case: 1,024 ranks with their own samples and the same profile compare no pair
    one by one, and still answer what the check asks of all pairs."""
    world = 1024
    run = RunBuilder(world_size=world)
    for rank in range(world):
        run[rank].loader(batches=4, batch_size=2, dataset_len=8192)
        for index in range(3):
            run[rank].batch([sample(rank * 10 + 2 * index), sample(rank * 10 + 2 * index + 1)], index=index)
    by_rank = loader_epochs(run.model())[0]
    summary = pair_summary(by_rank, world)
    assert summary.shared == [] and summary.compared and summary.most_seen == 6
    assert summary.most_expected_if_whole == 36 / 8192


def alike_world(seed: int) -> RunBuilder:
    """Ranks in groups that read exactly alike (the same batches and forward inputs at the same
    steps: one seed for every rank of a group), beside ranks with data of their own: the pairs
    the code computes once per two groups (rank_pairs.PairBlock)."""
    rng = random.Random(seed)
    world = rng.randint(2, 24)
    run = RunBuilder(world_size=world)
    distributed = rng.random() < 0.3
    batch_size = rng.choice([1, 2])
    batches = rng.randint(2, 6)
    dataset_len = rng.choice([None, 64, batches * batch_size])
    templates = rng.randint(1, 3)
    duplicates = rng.random() < 0.3
    for rank in range(world):
        template = rng.randrange(templates) if rng.random() < 0.8 else templates + rank
        draw = random.Random(seed * 1000 + template)  # a group's ranks draw alike
        builder = run[rank]
        builder.ddp()
        for epoch in range(draw.randint(1, 2)):
            builder.loader(epoch=epoch, sampler="DistributedSampler" if distributed else "RandomSampler",
                           batches=batches, batch_size=batch_size, dataset_len=dataset_len)
            for index in range(draw.randint(1, batches)):
                # Groups overlap in part: a sample from a pool every group draws from, or the group's own.
                shared = draw.random() < 0.5
                pool = 7 if duplicates else 10_000
                base = 0 if shared else (template + 1) * 100_000
                samples = [sample(base + epoch * 10_000 + (draw.randrange(batches) * batch_size + k) % pool)
                           for k in range(batch_size)]
                builder.batch(samples, epoch=epoch, index=index)
                iteration = builder.iterations.get(0, 0)
                x = sample((0 if draw.random() < 0.5 else template + 1) * 1000 + iteration)
                builder.add(tm.ForwardInputs(builder._now(), 0, iteration, builder.steps,
                                             {"args[0]": x, "args[1]": "00000000000000aa"}))
                builder.train_steps(1)
    return run


@pytest.mark.parametrize("seed", range(40))
def test_groups_of_ranks_alike_get_the_every_pair_statistics_and_findings(seed, monkeypatch):
    model = alike_world(seed).model()
    assert_same_statistics(model)
    assert_same_findings(model, monkeypatch)


def test_a_thousand_ranks_reading_the_same_batches_are_one_block():
    """No DistributedSampler on 1,024 ranks: every pair shares every batch, half a million pairs
    computed once, and the finding names the ranks as one group with 20 pairs of evidence."""
    world = 1024
    run = RunBuilder(world_size=world)
    for rank in range(world):
        run[rank].loader(batches=4, batch_size=2, dataset_len=8192, sampler="RandomSampler")
        for index in range(3):
            run[rank].batch([sample(2 * index), sample(2 * index + 1)], index=index)
            run[rank].train_steps(1)
    model = run.model()
    summary = pair_summary(loader_epochs(model)[0], world)
    assert len(summary.shared) == 1 and summary.shared[0].count() == world * (world - 1) // 2
    (finding,) = judge("DDP301", model)
    assert finding.ranks == list(range(world)) and "identical batches" in finding.message
    assert [p["ranks"] for p in finding.evidence["pairs"]] == [[0, b] for b in range(1, 21)]
