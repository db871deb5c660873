"""DDP506 (latent desync) over built telemetry: a size that follows the data at one call site
while the ranks agreed, and the variable sizes that are safe."""

from __future__ import annotations

from ddpdoctor.core.registry import Skipped
from ddpdoctor.probe.records import telemetry as tm
from tests.helpers.telemetry_builders import RunBuilder, judge, site

COUNTS = site(70)


def run_with(sizes_per_rank: dict[int, list[list[list[int]]]], op: str = "all_reduce",
             before: list[int] | None = None, before_op: str = "all_reduce",
             reduce_op: str = "SUM", result=None, dtype: str = "float32") -> RunBuilder:
    """`result(shapes)`: the values the collective before returned, from the later shapes."""
    run = RunBuilder(world_size=len(sizes_per_rank))
    for rank, calls in sizes_per_rank.items():
        for step, shapes in enumerate(calls):
            if before is not None:
                run[rank].collective(before_op, [before], [dtype], site=site(69), step=step,
                                     reduce_op=reduce_op if before_op == "all_reduce" else "",
                                     result=result(shapes) if result else None)
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


def test_an_unrelated_small_all_reduce_right_before_is_no_proof():
    # a loss total all-reduced just before the counts: a small collective, but not of the size
    run = run_with({0: [[[2]], [[1]]], 1: [[[2]], [[1]]]}, before=[1], result=lambda _: [[1.37]])
    (finding,) = judge("DDP506", run.model())
    assert "no earlier collective exchanged the size" in finding.message
    assert "train.py:70" in finding.message and "2 at step(s) 0; 1 at step(s) 1" in finding.message
    assert finding.evidence["nearest_before"]["result"] == [[1.37]]


def test_a_max_all_reduce_of_other_values_is_no_proof():
    run = run_with({0: [[[7]], [[9]]], 1: [[[7]], [[9]]]}, before=[1], reduce_op="MAX",
                   result=lambda _: [[3.0]])
    assert len(judge("DDP506", run.model())) == 1


def test_size_agreed_by_a_max_all_reduce_of_the_length_is_fine():
    run = run_with({0: [[[7]], [[9]]], 1: [[[7]], [[9]]]}, before=[1], reduce_op="MAX",
                   result=lambda shapes: [[shapes[0][0]]], dtype="int64")
    assert judge("DDP506", run.model()) == []
    # the same with SUM: the sum of the lengths is not a length anyone pads to
    summed = run_with({0: [[[7]], [[9]]], 1: [[[7]], [[9]]]}, before=[1], reduce_op="SUM",
                      result=lambda shapes: [[shapes[0][0]]], dtype="int64")
    assert len(judge("DDP506", summed.model())) == 1


def test_size_agreed_by_an_all_gather_or_broadcast_of_lengths_is_fine():
    sizes = {0: [[[7]], [[9]]], 1: [[[7]], [[9]]]}
    gathered = run_with(sizes, before=[1], before_op="all_gather", dtype="int64",
                        result=lambda shapes: [[shapes[0][0] - 2], [shapes[0][0]], [1]])
    assert judge("DDP506", gathered.model()) == []
    sent = run_with(sizes, before=[1], before_op="broadcast", dtype="int64",
                    result=lambda shapes: [[shapes[0][0]]])
    assert judge("DDP506", sent.model()) == []


def test_unread_max_of_an_integer_length_is_taken_at_its_word():
    # an async all_reduce on a GPU: its values are not read, its op and dtype still say what it is
    run = run_with({0: [[[7]], [[9]]], 1: [[[7]], [[9]]]}, before=[1], reduce_op="MAX", dtype="int64")
    assert judge("DDP506", run.model()) == []
    loss = run_with({0: [[[7]], [[9]]], 1: [[[7]], [[9]]]}, before=[1], reduce_op="MAX")
    assert len(judge("DDP506", loss.model())) == 1


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


def test_sizes_then_data_gathered_from_one_line_are_fine():
    # Accelerate's pad_across_processes from one line of the script: the sizes (one int64 each),
    # then the data padded to the largest, both recorded at the same call site
    run = RunBuilder(world_size=2)
    for rank in range(2):
        for step, length in enumerate([5, 7, 6]):
            run[rank].collective("all_gather_into_tensor", [[2], [1]], ["int64"] * 2, site=COUNTS,
                                 step=step, result=[[length, length - 1], [length - rank]])
            run[rank].collective("all_gather_into_tensor", [[2 * length], [length]], ["float32"] * 2,
                                 site=COUNTS, step=step)
        run[rank].end("script_exit")
    assert judge("DDP506", run.model()) == []


def test_the_finding_is_made_in_the_framework_s_words():
    """The check words its finding as it makes it (analysis/frameworks.py `worded`), like every
    other check: nothing rewrites its text after the checks ran."""
    run = run_with({0: [[[7]], [[9]]], 1: [[[7]], [[9]]]})
    for rank in (0, 1):
        run[rank].add(tm.FrameworkUse(1.0, "accelerate", "1.0", "Accelerator", {}, site(12), 0))
    (finding,) = judge("DDP506", run.model())
    assert finding.evidence["framework"]["name"] == "accelerate"
    assert "with Accelerate, look for accelerator.gather" in finding.hint
