"""DDP304 (data sharded twice) over built telemetry: both signals, with the numbers, and the
layouts that must stay clean."""

from __future__ import annotations

from ddpdoctor.core.findings import Severity
from ddpdoctor.core.registry import Skipped
from ddpdoctor.probe.records import telemetry as tm
from tests.helpers.telemetry_builders import RunBuilder, judge, sample, site

SAMPLER_SITE = site(44, func="main")


def loader_run(dataset_len: int, batches: int, batch_size=16, world=2, framework=None,
               sampler="DistributedSampler", drop_last=False) -> RunBuilder:
    run = RunBuilder(world_size=world)
    for rank in run.ranks:
        if framework:
            run[rank].add(tm.FrameworkUse(1.0, framework, "1.0", "prepare", {}, site(16), 0))
        run[rank].loader(batches=batches, dataset_len=dataset_len, batch_size=batch_size,
                         sampler=sampler, drop_last=drop_last)
        for i in range(3):
            run[rank].batch([sample(1000 * rank + 16 * i + j) for j in range(batch_size or 16)])
    return run


def shard(rank: int, subset: str, dataset_len=320, root_len=640, replicas=2) -> tm.SamplerShard:
    return tm.SamplerShard(1.0, replicas, rank, "Subset", dataset_len, "TensorDataset", root_len,
                           subset, SAMPLER_SITE, 0)


def test_a_loader_that_a_framework_shards_again_is_reported_with_the_numbers():
    run = loader_run(512, 8, batch_size=None, framework="accelerate", sampler="SequentialSampler")
    [finding] = judge("DDP304", run.model())
    assert finding.severity is Severity.WARNING and finding.ranks == [0, 1]
    assert "8 batches of 16" in finding.message and "512 / 2² ≈ 128" in finding.message
    assert "512 / 2 = 256" in finding.message and "Accelerate's prepare()" in finding.message
    assert "(50%)" in finding.message
    assert finding.evidence["samples_per_rank"] == 128
    assert "plain DataLoader" in finding.hint


def test_two_distributed_samplers_on_four_ranks():
    run = loader_run(1024, 4, batch_size=16, world=4)  # 1024 / 16 = 64 per rank, 4 batches
    [finding] = judge("DDP304", run.model())
    assert "1024 / 4² ≈ 64" in finding.message and "(25%)" in finding.message
    assert "two distributed samplers" in finding.message


def test_one_sharding_and_no_sharding_are_clean():
    assert judge("DDP304", loader_run(512, 16).model()) == []  # 256 per rank: sharded once
    assert judge("DDP304", loader_run(512, 32, sampler="RandomSampler").model()) == []  # DDP301's
    assert judge("DDP304", loader_run(500, 15, drop_last=True).model()) == []  # 250 -> 15 full batches


def test_a_per_rank_subset_under_a_distributed_sampler_is_reported():
    run = RunBuilder(world_size=2)
    run[0].add(shard(0, "aaaa"))
    run[1].add(shard(1, "bbbb"))
    [finding] = judge("DDP304", run.model())
    assert finding.ranks == [0, 1]
    assert "Subset of 320 samples" in finding.message and "640 / 2²" in finding.message
    assert finding.location.line == 44
    assert finding.evidence["samples_per_rank"] == 160


def test_a_split_every_rank_shares_is_a_train_split_not_double_sharding():
    run = RunBuilder(world_size=2)
    run[0].add(shard(0, "same"))
    run[1].add(shard(1, "same"))
    assert judge("DDP304", run.model()) == []


def test_a_subset_of_another_share_is_clean():
    run = RunBuilder(world_size=2)
    run[0].add(shard(0, "aaaa", dataset_len=600))
    run[1].add(shard(1, "bbbb", dataset_len=600))
    assert judge("DDP304", run.model()) == []


def test_single_rank_and_no_loader_are_skipped():
    assert isinstance(judge("DDP304", RunBuilder(world_size=2).model()), Skipped)
    assert isinstance(judge("DDP304", loader_run(512, 8, world=1).model()), Skipped)
