"""DDP506 (latent desync) over built telemetry: a size that follows the data at one call site
while the ranks agreed, and the variable sizes that are safe."""

from __future__ import annotations

from ddpdoctor.core.registry import Skipped
from tests.helpers.telemetry_builders import RunBuilder, judge, site

COUNTS = site(70)


def run_with(sizes_per_rank: dict[int, list[list[list[int]]]], op: str = "all_reduce",
             before: list[int] | None = None) -> RunBuilder:
    run = RunBuilder(world_size=len(sizes_per_rank))
    for rank, calls in sizes_per_rank.items():
        for step, shapes in enumerate(calls):
            if before is not None:
                run[rank].collective("all_reduce", [before], site=site(69), step=step)
            run[rank].collective(op, shapes, ["int64"] * len(shapes), site=COUNTS, step=step)
        run[rank].end("script_exit")
    return run


def test_bincount_size_that_follows_the_batch_is_a_latent_desync():
    run = run_with({0: [[[7]], [[9]], [[10]]], 1: [[[7]], [[9]], [[10]]]})
    (finding,) = judge("DDP506", run.model())
    assert finding.location.line == 70 and finding.ranks == [0, 1]
    assert [s["shapes"] for s in finding.evidence["sizes"]] == [[[7]], [[9]], [[10]]]
    assert finding.evidence["sizes"][1]["steps"] == [1]
    assert "minlength" in finding.hint


def test_constant_size_and_object_collectives_are_fine():
    assert judge("DDP506", run_with({0: [[[10]]] * 3, 1: [[[10]]] * 3}).model()) == []
    objects = run_with({0: [[], [], []], 1: [[], [], []]}, op="all_gather_object")
    assert judge("DDP506", objects.model()) == []


def test_size_agreed_by_a_small_all_reduce_right_before_is_fine():
    run = run_with({0: [[[7]], [[9]]], 1: [[[7]], [[9]]]}, before=[1])
    assert judge("DDP506", run.model()) == []


def test_uneven_all_gather_into_matching_lists_is_fine():
    # rank 0 sends 3 then 5 elements, rank 1 sends 4 then 2; each output list holds those sizes
    run = run_with({0: [[[3], [4], [3]], [[5], [2], [5]]], 1: [[[3], [4], [4]], [[5], [2], [2]]]},
                   op="all_gather")
    assert judge("DDP506", run.model()) == []


def test_sizes_already_different_between_ranks_are_ddp501s():
    run = run_with({0: [[[7]], [[10]]], 1: [[[7]], [[9]]]})
    assert judge("DDP506", run.model()) == []
    assert judge("DDP501", run.model())


def test_no_collective_is_skipped():
    assert isinstance(judge("DDP506", RunBuilder().model()), Skipped)
