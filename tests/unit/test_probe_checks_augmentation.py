"""DDP305 over built telemetry: ranks that read different samples with the same random draws."""

from __future__ import annotations

from ddpdoctor.core.registry import Skipped
from ddpdoctor.probe.records import telemetry as tm
from tests.helpers.telemetry_builders import RunBuilder, sample

MOVED = {"torch": "a" * 16, "numpy": "b" * 16, "random": "c" * 16}


def _state(tag: str) -> dict[str, str]:
    return {name: f"{tag}{name}"[:16].ljust(16, "0") for name in ("torch", "numpy", "random")}


def _run(states: dict[int, tuple[dict, dict]], samples: dict[int, list[str]] | None = None,
         workers: int = 2, init_fn: str = "seed_worker", indices: bool = True) -> RunBuilder:
    """Each rank: one DataLoader epoch with a DistributedSampler, each worker's states (before,
    after) as given, then its first batch: `samples` per rank (default: a different shard each)."""
    run = RunBuilder(world_size=len(states))
    for rank, (before, after) in states.items():
        builder = run[rank]
        builder.loader(batches=4, dataset_len=32)
        for worker in (range(workers) if workers else [-1]):
            builder.add(tm.WorkerSeed(builder.t, 0, 0, worker, workers, 1234 + worker, dict(before),
                                      dict(after), init_fn if workers else ""))
        own = (samples or {}).get(rank) or [sample(rank * 100 + i) for i in range(4)]
        builder.batch(own)
        if indices:
            builder.records[-1].indices = ([int(s[-2:], 16) for s in own] if samples else
                                           [rank * 100 + i for i in range(4)])
        builder.step()
    return run


def _judge(run: RunBuilder):
    from tests.helpers.telemetry_builders import judge

    return judge("DDP305", run.model())


def test_workers_seeded_alike_on_every_rank_draw_the_same_augmentation_for_different_samples():
    (finding,) = _judge(_run({0: (_state("s"), _state("t")), 1: (_state("s"), _state("t"))}))
    assert finding.code == "DDP305" and finding.ranks == [0, 1]
    assert finding.evidence["workers"] == [0, 1] and finding.evidence["generators"] == ["torch", "numpy", "random"]
    assert "seed_worker" in finding.message and "without the rank" in finding.message
    assert "rank" in finding.hint and finding.location.file == "train.py"


def test_workers_seeded_per_rank_are_quiet():
    assert _judge(_run({0: (_state("s0"), _state("t0")), 1: (_state("s1"), _state("t1"))})) == []


def test_a_generator_the_fetch_did_not_move_is_no_augmentation():
    # Same state on both ranks, but the dataset draws nothing: identical seeds do no harm.
    same = _state("s")
    assert _judge(_run({0: (same, same), 1: (same, same)})) == []


def test_only_the_generators_that_moved_are_named():
    before, after = _state("s"), {**_state("s"), "numpy": "f" * 16}
    (finding,) = _judge(_run({0: (before, after), 1: (before, after)}))
    assert finding.evidence["generators"] == ["numpy"]


def test_a_generator_reseeded_per_sample_differs_after_the_batch_and_is_quiet():
    # Same start, different end: each sample reseeds from its own index (different samples).
    assert _judge(_run({0: (_state("s"), _state("t0")), 1: (_state("s"), _state("t1"))})) == []


def test_ranks_that_read_the_same_samples_are_left_to_ddp301():
    same = [sample(i) for i in range(4)]
    run = _run({0: (_state("s"), _state("t")), 1: (_state("s"), _state("t"))}, samples={0: same, 1: same})
    assert _judge(run) == []


def test_main_process_loading_seeded_alike_is_found_in_the_rank_itself():
    (finding,) = _judge(_run({0: (_state("s"), _state("t")), 1: (_state("s"), _state("t"))}, workers=0))
    assert finding.evidence["workers"] == [-1] and "num_workers=0" in finding.message


def test_only_the_ranks_that_share_a_state_are_named():
    states = {0: (_state("s"), _state("t")), 1: (_state("s"), _state("t")),
              2: (_state("s2"), _state("t2")), 3: (_state("s3"), _state("t3"))}
    (finding,) = _judge(_run(states))
    assert finding.ranks == [0, 1]


def test_without_fingerprinted_batches_a_distributed_sampler_is_the_evidence_samples_differ():
    run = _run({0: (_state("s"), _state("t")), 1: (_state("s"), _state("t"))})
    for builder in run.ranks.values():
        builder.records = [r for r in builder.records if not isinstance(r, tm.Batch)]
    (finding,) = _judge(run)
    assert finding.ranks == [0, 1]


def test_nothing_to_judge_is_skipped():
    assert isinstance(_judge(RunBuilder(world_size=2)), Skipped)
    assert isinstance(_judge(_run({0: (_state("s"), _state("t"))})), Skipped)
