"""The data checks (DDP301 samples shared across ranks, DDP302 epoch order, DDP303 batch
counts), fed recorded telemetry."""

from __future__ import annotations

import random

from ddpdoctor.core.findings import Location, Severity
from ddpdoctor.core.registry import Skipped
from ddpdoctor.probe.analysis.loaders import loader_epochs
from tests.helpers.telemetry_builders import RunBuilder, judge, sample, site


def feed(run: RunBuilder, rank: int, indices: list[int], batch_size: int, epoch: int = 0,
         values=sample, steps: bool = True) -> None:
    """Rank `rank` receives the samples `indices` (by number) in batches, training a step each."""
    for start in range(0, len(indices), batch_size):
        run[rank].batch([values(i) for i in indices[start:start + batch_size]], epoch=epoch)
        if steps:
            run[rank].step()


# DDP301 ---------------------------------------------------------------------------------------

def test_ranks_without_distributed_sampler_receive_identical_batches_reported_with_steps():
    run = RunBuilder(world_size=2)
    order = list(range(80))
    random.Random(0).shuffle(order)  # the same seed on both ranks: a plain RandomSampler
    for rank in (0, 1):
        run[rank].loader(sampler="RandomSampler", shuffle=True, batches=20, batch_size=4, dataset_len=80)
        feed(run, rank, order, 4)
    [finding] = judge("DDP301", run.model())
    assert finding.code == "DDP301" and finding.severity is Severity.ERROR
    assert finding.ranks == [0, 1]
    assert "ranks 0 and 1 received identical batches" in finding.message
    assert "steps 0-19 (20/20 batches)" in finding.message
    assert "each rank iterates all 80 samples" in finding.message
    assert finding.location == Location("train.py", 40)
    assert finding.evidence["sampler"] == "RandomSampler"
    assert finding.evidence["kind"] == "identical batches"


def test_four_ranks_reading_the_same_batches_make_one_finding_naming_all():
    run = RunBuilder(world_size=4)
    for rank in range(4):
        run[rank].loader(sampler="SequentialSampler", shuffle=False, batches=8, batch_size=2, dataset_len=16)
        feed(run, rank, list(range(16)), 2)
    [finding] = judge("DDP301", run.model())
    assert finding.ranks == [0, 1, 2, 3]
    assert "ranks 0, 1, 2 and 3 received identical batches" in finding.message
    assert "(8/8 batches)" in finding.message


def test_disjoint_shards_of_a_distributed_sampler_pass():
    run = RunBuilder(world_size=2)
    for rank in (0, 1):
        run[rank].loader(batches=8, batch_size=4, dataset_len=64)
        feed(run, rank, list(range(rank, 64, 2)), 4)
    assert judge("DDP301", run.model()) == []


def test_dataset_of_identical_samples_is_not_mistaken_for_shared_batches():
    run = RunBuilder(world_size=2)
    for rank in (0, 1):
        run[rank].loader(batches=4, batch_size=4, dataset_len=32)
        feed(run, rank, list(range(rank, 32, 2)), 4, values=lambda i: sample(7))  # torch.zeros data
    assert judge("DDP301", run.model()) == []


def test_natural_duplicates_in_a_tiny_dataset_are_not_reported():
    run = RunBuilder(world_size=2)
    for rank in (0, 1):
        run[rank].loader(batches=8, batch_size=4, dataset_len=64)
        # 3 distinct samples repeated over 64 items, correctly sharded by index parity
        feed(run, rank, list(range(rank, 64, 2)), 4, values=lambda i: sample(i % 3))
    assert judge("DDP301", run.model()) == []


def test_distributed_sampler_padding_repeats_are_tolerated_over_many_epochs():
    run = RunBuilder(world_size=2)
    rng = random.Random(1)
    for epoch in range(6):
        order = [0, 1, 2]
        rng.shuffle(order)
        padded = order + order[:1]  # 3 samples, 2 ranks: DistributedSampler pads one
        for rank in (0, 1):
            run[rank].loader(epoch=epoch, sampler_epoch=epoch, batches=1, batch_size=2, dataset_len=3)
            feed(run, rank, padded[rank::2], 2, epoch=epoch)
    assert judge("DDP301", run.model()) == []


def test_per_rank_random_halves_are_reported_with_an_estimated_shared_share():
    run = RunBuilder(world_size=2)
    for rank in (0, 1):
        half = random.Random(100 + rank).sample(range(1000), 500)  # random_split per rank, own seed
        run[rank].loader(sampler="SubsetRandomSampler", shuffle=True, batches=32, batch_size=16,
                         dataset_len=500)
        feed(run, rank, half[:160], 16)
    [finding] = judge("DDP301", run.model())
    assert finding.evidence["kind"] == "shared samples"
    assert "ranks 0 and 1 read overlapping samples" in finding.message
    assert "of each rank's 500-sample epoch is read by more than one rank" in finding.message
    [pair] = finding.evidence["pairs"]
    assert 0.25 <= pair["shared_share"] <= 0.8  # the two random halves share about half
    assert pair["expected"] == 0


def test_same_batches_in_another_order_are_reported():
    run = RunBuilder(world_size=2)
    batches = [list(range(i, i + 4)) for i in range(0, 40, 4)]
    for rank, order in ((0, batches), (1, batches[::-1])):
        run[rank].loader(sampler="RandomSampler", batches=10, batch_size=4, dataset_len=40)
        for indices in order:
            run[rank].batch([sample(i) for i in indices])
            run[rank].step()
    [finding] = judge("DDP301", run.model())
    assert finding.severity is Severity.ERROR
    assert "received the same batches from the DataLoader at train.py:40 in a different order" in finding.message
    assert "10 of the 10 batches rank 1 saw also reached rank 0" in finding.message


def test_loader_without_distributed_sampler_is_reported_before_samples_collide():
    run = RunBuilder(world_size=2)
    for rank in (0, 1):
        run[rank].loader(sampler="RandomSampler", batches=2500, batch_size=4, dataset_len=10000)
        feed(run, rank, list(range(rank * 1000, rank * 1000 + 8)), 4)
    [finding] = judge("DDP301", run.model())
    assert finding.ranks == [0, 1]
    assert "ranks 0 and 1 each iterate all 10000 samples" in finding.message
    assert "its sampler is RandomSampler, not a DistributedSampler" in finding.message
    assert finding.evidence["sampler"] == "RandomSampler"
    assert finding.severity is Severity.ERROR


def test_hand_sharded_datasets_are_not_reported_by_the_static_rule():
    different_lengths = RunBuilder(world_size=2)
    for rank, length in ((0, 500), (1, 499)):
        different_lengths[rank].loader(sampler="RandomSampler", batches=-(-length // 4), batch_size=4,
                                       dataset_len=length)
        feed(different_lengths, rank, list(range(rank, 16, 2)), 4)
    assert judge("DDP301", different_lengths.model()) == []

    a_shard_each = RunBuilder(world_size=2)
    for rank in (0, 1):
        # len(dataset) is the full 1000 but len(loader) is a half: a custom rank-aware sampler
        a_shard_each[rank].loader(sampler="MyShardSampler", batches=16, batch_size=32, dataset_len=1000)
        feed(a_shard_each, rank, list(range(rank, 128, 2)), 32)
    assert judge("DDP301", a_shard_each.model()) == []


def test_enough_disjoint_samples_rule_out_the_static_rule():
    run = RunBuilder(world_size=2)
    for rank in (0, 1):  # a rank-aware dataset of equal length: full epochs seen, no collision
        run[rank].loader(sampler="RandomSampler", batches=16, batch_size=4, dataset_len=64)
        feed(run, rank, list(range(rank * 64, rank * 64 + 64)), 4)
    assert judge("DDP301", run.model()) == []


def test_iterable_dataset_streaming_the_same_data_to_every_rank_is_reported():
    run = RunBuilder(world_size=2)
    for rank in (0, 1):
        run[rank].loader(sampler="_InfiniteConstantSampler", distributed=False, shuffle=None,
                         batches=None, dataset_len=None, iterable=True)
        feed(run, rank, list(range(24)), 4)
    [finding] = judge("DDP301", run.model())
    assert "identical batches" in finding.message and "(6/6 batches)" in finding.message


def test_sample_overlap_check_skips_without_evidence():
    single = RunBuilder(world_size=1)
    single[0].loader(batches=2, dataset_len=8)
    assert isinstance(judge("DDP301", single.model()), Skipped)
    no_loader = RunBuilder(world_size=2)
    no_loader.all("train_steps", 2)
    skipped = judge("DDP301", no_loader.model())
    assert isinstance(skipped, Skipped) and "DataLoader" in skipped.reason


# DDP302 ---------------------------------------------------------------------------------------

def _epochs(run: RunBuilder, epochs: int, sampler_epochs, same_order: bool, shuffle=True,
            sampler="DistributedSampler", values=sample) -> None:
    for epoch in range(epochs):
        for rank in run.ranks:
            run[rank].loader(epoch=epoch, sampler=sampler, shuffle=shuffle,
                             sampler_epoch=sampler_epochs(epoch), batches=4, batch_size=2, dataset_len=16)
            indices = list(range(rank, 16, 2))
            if not same_order:
                random.Random(epoch).shuffle(indices)
            feed(run, rank, indices, 2, epoch=epoch, values=values)
            run[rank].epoch_end(epoch=epoch, batches_seen=4)


def test_set_epoch_never_called_is_reported_from_the_sampler_epoch():
    run = RunBuilder(world_size=2)
    _epochs(run, 3, lambda e: 0, same_order=True)
    [finding] = judge("DDP302", run.model())
    assert finding.code == "DDP302" and finding.severity is Severity.WARNING
    assert finding.ranks == [0, 1]
    assert "sampler.set_epoch() is never called" in finding.message
    assert "epochs 1, 2" in finding.message
    assert finding.location == Location("train.py", 40)
    assert finding.evidence["sampler_epoch_repeated"] == {"0": [1, 2], "1": [1, 2]}


def test_shuffling_sampler_replaying_its_order_is_reported_from_fingerprints():
    run = RunBuilder(world_size=2)
    _epochs(run, 2, lambda e: None, same_order=True, sampler="RandomSampler", shuffle=None)
    [finding] = judge("DDP302", run.model())
    assert "same batches in the same order in epoch 1" in finding.message
    assert finding.evidence["order_replayed"]["0"] == [{"epoch": 1, "batches": 4}]


def test_sampler_that_does_not_shuffle_may_repeat_its_order():
    run = RunBuilder(world_size=2)
    _epochs(run, 3, lambda e: 0, same_order=True, shuffle=False)
    assert judge("DDP302", run.model()) == []
    sequential = RunBuilder(world_size=2)
    _epochs(sequential, 2, lambda e: None, same_order=True, sampler="SequentialSampler", shuffle=None)
    assert judge("DDP302", sequential.model()) == []


def test_set_epoch_called_every_epoch_passes():
    run = RunBuilder(world_size=2)
    _epochs(run, 3, lambda e: e, same_order=False)
    assert judge("DDP302", run.model()) == []


def test_identical_samples_repeating_across_epochs_prove_nothing():
    run = RunBuilder(world_size=2)
    _epochs(run, 2, lambda e: None, same_order=False, values=lambda i: sample(0))
    assert judge("DDP302", run.model()) == []


def test_epoch_order_check_needs_two_epochs():
    run = RunBuilder(world_size=2)
    _epochs(run, 1, lambda e: 0, same_order=True)
    skipped = judge("DDP302", run.model())
    assert isinstance(skipped, Skipped)
    assert skipped.reason == "the probe saw one epoch; raise --max-steps or lower --steps-per-epoch"



# A DataLoader built anew every epoch (`for epoch ...: loader = DataLoader(...)`) is one loader.

def _fresh_loader_epochs(run: RunBuilder, epochs: int, sampler_epoch, order_seed) -> None:
    """Each epoch a new DataLoader (loader_id = epoch) and a new DistributedSampler over the same
    16 samples; `order_seed(epoch)` None keeps the order, else shuffles it with that seed."""
    for epoch in range(epochs):
        for rank in run.ranks:
            run[rank].loader(loader_id=epoch, epoch=0, sampler_epoch=sampler_epoch(epoch), batches=4,
                             batch_size=2, dataset_len=16)
            indices = list(range(rank, 16, 2))
            if order_seed(epoch) is not None:
                random.Random(order_seed(epoch)).shuffle(indices)
            for start in range(0, len(indices), 2):
                run[rank].batch([sample(i) for i in indices[start:start + 2]], loader_id=epoch).step()
            run[rank].epoch_end(loader_id=epoch, batches_seen=4)


def test_a_new_dataloader_each_epoch_replaying_the_order_is_reported():
    """A new DistributedSampler each epoch and no set_epoch: every epoch is epoch 0's order."""
    run = RunBuilder(world_size=2)
    _fresh_loader_epochs(run, 3, lambda e: 0, lambda e: None)
    [finding] = judge("DDP302", run.model())
    assert "the same batches in the same order in epochs 1, 2 as in the epoch before" in finding.message
    assert finding.evidence["passes"] == {"0": 3, "1": 3}
    assert "sampler.set_epoch(epoch)" in finding.hint


def test_a_new_dataloader_each_epoch_seeded_with_the_epoch_passes():
    """DistributedSampler(seed=epoch) built each epoch: its epoch stays 0, its order changes."""
    run = RunBuilder(world_size=2)
    _fresh_loader_epochs(run, 3, lambda e: 0, lambda e: e + 1)
    assert judge("DDP302", run.model()) == []
    called = RunBuilder(world_size=2)
    _fresh_loader_epochs(called, 3, lambda e: e, lambda e: e + 1)
    assert judge("DDP302", called.model()) == []


def test_loaders_used_again_later_or_side_by_side_stay_apart():
    """A train and an eval loader of one kind alternating at one site, and two loaders zipped."""
    alternating = RunBuilder(world_size=1)
    for epoch in range(2):
        for loader_id in (0, 1):
            alternating[0].loader(loader_id=loader_id, epoch=epoch, dataset_len=16)
            alternating[0].batch([sample(loader_id)], loader_id=loader_id, epoch=epoch).step()
    assert len(loader_epochs(alternating.model())) == 2
    zipped = RunBuilder(world_size=1)
    zipped[0].loader(loader_id=0, dataset_len=16).loader(loader_id=1, dataset_len=16)
    zipped[0].batch([sample(0)], loader_id=0).batch([sample(1)], loader_id=1).step()
    assert len(loader_epochs(zipped.model())) == 2


# DDP303 ---------------------------------------------------------------------------------------

def test_uneven_batch_counts_name_each_rank_and_the_early_one():
    run = RunBuilder(world_size=2)
    run[0].loader(sampler="RandomSampler", batches=16, batch_size=4, dataset_len=64)
    run[1].loader(sampler="RandomSampler", batches=15, batch_size=4, dataset_len=60)
    [finding] = judge("DDP303", run.model())
    assert finding.code == "DDP303" and finding.severity is Severity.ERROR
    assert finding.ranks == [1]
    assert "rank 0 → 16, rank 1 → 15" in finding.message
    assert "rank 1 will run out 1 batch early and rank 0 hangs in the next all-reduce at epoch end" in finding.message
    assert finding.location == Location("train.py", 40)
    assert finding.evidence["batches"] == {"0": 16, "1": 15}


def test_distributed_sampler_padding_uneven_dataset_lengths_passes():
    run = RunBuilder(world_size=2)
    run[0].loader(batches=8, batch_size=4, dataset_len=63)
    run[1].loader(batches=8, batch_size=4, dataset_len=63)
    assert judge("DDP303", run.model()) == []


def test_iterable_epochs_ending_unevenly_are_reported_but_truncated_ones_are_not():
    run = RunBuilder(world_size=2)
    for rank, seen in ((0, 10), (1, 9)):
        run[rank].loader(iterable=True, batches=None, dataset_len=None, sampler="_InfiniteConstantSampler")
        run[rank].epoch_end(batches_seen=seen, truncated=False)
    [finding] = judge("DDP303", run.model())
    assert "batches seen to the end of the epoch" in finding.message
    assert finding.ranks == [1]

    cut = RunBuilder(world_size=2)
    for rank, seen in ((0, 10), (1, 9)):
        cut[rank].loader(iterable=True, batches=None, dataset_len=None)
        cut[rank].epoch_end(batches_seen=seen, truncated=True)
    assert isinstance(judge("DDP303", cut.model()), Skipped)


def test_batch_count_check_skips_without_known_lengths():
    run = RunBuilder(world_size=2)
    run.all("train_steps", 3)
    assert isinstance(judge("DDP303", run.model()), Skipped)


def test_evaluation_loader_read_whole_on_every_rank_is_only_a_warning():
    run = RunBuilder(world_size=2)
    run.all("train_steps", 5)
    for rank in (0, 1):
        run[rank].loader(loader_id=1, sampler="SequentialSampler", shuffle=False, batches=4,
                         batch_size=8, dataset_len=32)
        for start in range(0, 32, 8):  # no optimizer step between batches: model.eval() loop
            run[rank].batch([sample(i) for i in range(start, start + 8)], loader_id=1)
    [finding] = judge("DDP301", run.model())
    assert finding.severity is Severity.WARNING
    assert "received identical batches" in finding.message and "evaluation loader" in finding.message
    assert finding.evidence["evaluation_loader"] is True


def test_loaders_are_matched_across_ranks_by_where_they_are_iterated():
    run = RunBuilder(world_size=2)
    # rank 0 alone evaluates first, so its training loader gets number 1, rank 1's number 0
    run[0].loader(loader_id=0, sampler="SequentialSampler", shuffle=False, batches=2, batch_size=4,
                  dataset_len=8, site=site(95, func="evaluate"))
    feed(run, 0, list(range(100, 108)), 4, steps=False)
    for rank, loader_id in ((0, 1), (1, 0)):
        run[rank].loader(loader_id=loader_id, batches=8, batch_size=4, dataset_len=64)
        for start in range(rank * 4, 64, 8):
            run[rank].batch([sample(i) for i in range(start, start + 4)], loader_id=loader_id)
            run[rank].step()
    model = run.model()
    assert judge("DDP303", model) == []
    assert judge("DDP301", model) == []
