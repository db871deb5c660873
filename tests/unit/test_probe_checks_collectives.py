"""The collective-sequence checks (DDP501 mismatch, DDP502 skipped), fed recorded telemetry."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ddpdoctor.core.findings import Location, Severity
from ddpdoctor.core.registry import Skipped
from tests.helpers.telemetry_builders import RunBuilder, judge, site, stack

# A small alphabet of collectives: (op, shape, call-site line).
CALLS = [("all_reduce", 3, 50), ("all_reduce", 10, 57), ("broadcast", 3, 52), ("barrier", 0, 53),
         ("ddp_bucket_allreduce", 306, 60)]


def enter(run: RunBuilder, rank: int, call: tuple, done: bool = True, group: str = "WORLD") -> None:
    op, size, line = call
    shapes = [[size]] if size else []
    run[rank].collective(op, shapes, ["float32"] if size else [], group=group, site=site(line),
                         bucket=0 if op == "ddp_bucket_allreduce" else None, done=done)


def run_of(sequences: dict[int, list[tuple]], pending: dict[int, int] = {}, end: bool = True) -> RunBuilder:
    """Every rank enters its sequence; `pending[rank]` = a position that never returned."""
    run = RunBuilder(world_size=len(sequences))
    for rank, calls in sequences.items():
        for position, call in enumerate(calls):
            enter(run, rank, call, done=pending.get(rank) != position)
        if end:
            run[rank].end("script_exit")
    return run


def codes(model) -> dict[str, list]:
    return {code: judge(code, model) for code in ("DDP501", "DDP502")}


# DDP501 ---------------------------------------------------------------------------------------

def test_shape_mismatch_names_each_side_its_shape_and_call_site():
    run = RunBuilder(world_size=2)
    run.all("collective", "all_reduce", [[4]])
    run.all("collective", "all_reduce", [[4]])
    run[0].collective("all_reduce", [[10]], site=site(57), done=False)
    run[1].collective("all_reduce", [[20]], site=site(58), done=False)
    run.outcome("stalled", stall_s=12.0, stall_timeout_s=10.0)
    [finding] = judge("DDP501", run.model())
    assert finding.code == "DDP501" and finding.severity is Severity.ERROR
    assert finding.message == (
        "at collective seq 2 on group WORLD (step 0) the ranks disagree (shapes differ): "
        "rank 0 called all_reduce of [10] float32 at train.py:57; "
        "rank 1 called all_reduce of [20] float32 at train.py:58")
    assert finding.ranks == [0, 1]
    assert finding.location == Location("train.py", 58)  # the side without the reference rank 0
    assert finding.evidence["seq"] == 2 and finding.evidence["differ"] == "shapes"
    assert judge("DDP502", run.model()) == []


def test_op_mismatch_on_one_rank_of_four_points_at_the_odd_rank():
    run = RunBuilder(world_size=4)
    run.all("collective", "all_reduce", [[4]])
    for rank in (0, 1, 3):
        run[rank].collective("all_reduce", [[4]], site=site(57), done=False)
    run[2].collective("broadcast", [[4]], site=site(61), done=False)
    run.outcome("stalled", stall_s=12.0, stall_timeout_s=10.0)
    [finding] = judge("DDP501", run.model())
    assert finding.ranks == [2]
    assert "(ops differ)" in finding.message
    assert "ranks 0, 1 and 3 called all_reduce of [4] float32 at train.py:57" in finding.message
    assert "rank 2 called broadcast of [4] float32 at train.py:61" in finding.message
    assert finding.location == Location("train.py", 61)
    assert "rank- or data-dependent branch" in finding.hint


def test_ddp_gradient_all_reduce_is_named_as_such():
    run = run_of({0: [CALLS[4], CALLS[0]], 1: [CALLS[4], CALLS[3]]}, pending={0: 1, 1: 1}, end=False)
    run.outcome("stalled", stall_s=12.0, stall_timeout_s=10.0)
    [finding] = judge("DDP501", run.model())
    assert finding.evidence["seq"] == 1
    mixed = run_of({0: [CALLS[4]], 1: [("ddp_bucket_allreduce", 100, 60)]}, pending={0: 0, 1: 0}, end=False)
    mixed.outcome("stalled")
    [finding] = judge("DDP501", mixed.model())
    assert "rank 0 called DDP gradient all-reduce (bucket 0) of [306] float32 at train.py:60" in finding.message


def test_later_divergences_are_counted_in_one_finding_per_group():
    a = [CALLS[0], CALLS[1], CALLS[0], CALLS[1]]
    b = [CALLS[2], CALLS[1], CALLS[2], CALLS[1]]
    [finding] = judge("DDP501", run_of({0: a, 1: b}).model())
    assert finding.evidence["seq"] == 0
    assert finding.evidence["later_divergences"] == 1


# DDP502 ---------------------------------------------------------------------------------------

def test_extra_all_reduce_between_ddp_buckets_is_a_skip_naming_the_collective():
    run = RunBuilder(world_size=2)
    run.all("train_steps", 3)
    run[1].collective("all_reduce", [[3]], site=site(50, func="log_loss"))
    run.all("train_steps", 2)
    run.all("end")
    [finding] = judge("DDP502", run.model())
    assert finding.code == "DDP502" and finding.severity is Severity.ERROR
    assert finding.message == (
        "rank 1 entered all_reduce of [3] float32 at train.py:50 (seq 3 on group WORLD, step 3) "
        "and rank 0 skipped it: rank 0 called DDP gradient all-reduce (bucket 0) of [306] float32 "
        "at train.py:60 at that position instead")
    assert finding.location == Location("train.py", 50)
    assert finding.evidence["entered_ranks"] == [1] and finding.evidence["skipped_ranks"] == [0]
    assert judge("DDP501", run.model()) == []


def test_rank_conditional_all_reduce_stuck_against_ddp_buckets_is_a_skip_of_the_all_reduce():
    run = RunBuilder(world_size=2)
    run.all("train_steps", 3)
    run[0].collective("all_reduce", [[3]], site=site(50), done=False)  # if rank == 0: all_reduce
    run[1].grads()
    run[1].bucket(0, done=False)
    run.outcome("stalled", stall_s=12.0, stall_timeout_s=10.0)
    found = codes(run.model())
    # Both stuck, nothing after to line up; but rank 1's call is the gradient all-reduce both
    # ranks made every step, and rank 0's all_reduce is one rank 1 never made: rank 0's is extra.
    assert found["DDP501"] == []
    [finding] = found["DDP502"]
    assert "rank 0 entered all_reduce of [3] float32 at train.py:50" in finding.message
    assert "rank 1 skipped it" in finding.message
    assert finding.location == Location("train.py", 50)  # the user collective, not backward()
    assert finding.ranks == [0, 1]


def test_rank_conditional_all_reduce_on_its_own_group_is_a_skip_and_the_ddp_wait_its_consequence():
    run = RunBuilder(world_size=2)
    for rank in (0, 1):
        for _ in range(3):
            run[rank].grads()
            run[rank].bucket(0, group="ddp")
            run[rank].step()
    run[0].collective("all_reduce", [[3]], site=site(50), done=False)
    run[1].grads()
    run[1].bucket(0, group="ddp", done=False)
    run.outcome("stalled", stall_s=12.0, stall_timeout_s=10.0, stacks=[
        stack(1, [("backward", "torch/_tensor.py", 626), ("train_step", "train.py", 60)])])
    [finding] = judge("DDP502", run.model())
    assert finding.evidence["group"] == "WORLD"
    assert finding.message.startswith(
        "rank 0 entered all_reduce of [3] float32 at train.py:50 (seq 0 on group WORLD, step 3) "
        "and rank 1 never entered it: rank 1 waits in backward at train.py:60")
    assert "so rank 1 waits in DDP gradient all-reduce (bucket 0) of [306] float32 at train.py:60 (group ddp)" in finding.message
    assert finding.evidence["consequence"]["waiting_ranks"] == [1]


def test_rank_that_ended_before_a_collective_the_others_wait_in_skipped_it():
    run = run_of({0: [CALLS[0], CALLS[3]], 1: [CALLS[0]]}, pending={0: 1}, end=False)
    run[1].end("script_exit")
    run.outcome("stalled", stall_s=30.0, stall_timeout_s=10.0)
    [finding] = judge("DDP502", run.model())
    assert "rank 0 entered barrier at train.py:53 (seq 1 on group WORLD, step 0) and rank 1 never entered it" in finding.message
    assert "rank 1 exited normally at step 0" in finding.message
    assert finding.evidence["sequence_ended"] is True


def test_skipped_ddp_gradient_all_reduce_points_at_uneven_backward_passes():
    run = RunBuilder(world_size=2)
    run.all("train_steps", 2)
    run[0].grads()  # rank 0 had one more batch
    run[0].bucket(0, done=False)
    run[1].end("script_exit")
    run.outcome("stalled", stall_s=20.0, stall_timeout_s=10.0)
    [finding] = judge("DDP502", run.model())
    assert "rank 0 entered DDP gradient all-reduce (bucket 0)" in finding.message
    assert "model.join()" in finding.hint and "fewer backward passes" in finding.hint


def test_a_crashed_rank_does_not_count_as_skipping():
    run = run_of({0: [CALLS[0], CALLS[3]], 1: [CALLS[0]]}, pending={0: 1}, end=False)
    run[1].crash("ValueError", "bad batch", site=site(44))
    run.outcome("crashed", exit_codes={0: -15, 1: 1})
    assert codes(run.model()) == {"DDP501": [], "DDP502": []}


def test_a_rank_torn_down_mid_run_does_not_count_as_skipping():
    run = run_of({0: [CALLS[0], CALLS[3]], 1: [CALLS[0]]}, pending={0: 1}, end=False)
    run.outcome("interrupted", exit_codes={0: -15, 1: -15})
    assert codes(run.model()) == {"DDP501": [], "DDP502": []}
    no_outcome = run_of({0: [CALLS[0], CALLS[3]], 1: [CALLS[0]]}, pending={0: 1}, end=False)
    assert codes(no_outcome.model()) == {"DDP501": [], "DDP502": []}


def test_a_collective_that_returned_everywhere_was_not_skipped_only_lost(tmp_path):
    # rank 1 was SIGKILLed while writing: its last record is torn, the collective had returned
    run = run_of({0: [CALLS[0], CALLS[1]], 1: [CALLS[0]]}, end=False)
    run.outcome("stalled", stall_s=11.0, stall_timeout_s=10.0)
    model = run.load(tmp_path, torn=[1])
    assert codes(model) == {"DDP501": [], "DDP502": []}


def test_collective_checks_skip_without_collectives():
    run = RunBuilder(world_size=2)
    assert isinstance(judge("DDP501", run.model()), Skipped)
    assert isinstance(judge("DDP502", run.model()), Skipped)


# Properties ------------------------------------------------------------------------------------

sequences = st.lists(st.sampled_from(CALLS), max_size=25)
worlds = st.integers(min_value=2, max_value=4)


@settings(max_examples=75, deadline=None)
@given(sequences, worlds)
def test_ranks_calling_the_same_sequence_never_diverge(calls, world):
    run = run_of({rank: list(calls) for rank in range(world)})
    assert codes(run.model()) == {"DDP501": [], "DDP502": []} or not calls


@settings(max_examples=100, deadline=None)
@given(sequences, worlds, st.data())
def test_one_extra_collective_on_one_rank_is_always_a_skip_at_an_equivalent_position(calls, world, data):
    extra_rank = data.draw(st.integers(0, world - 1))
    at = data.draw(st.integers(0, len(calls)))
    extra = data.draw(st.sampled_from(CALLS))
    longer = calls[:at] + [extra] + calls[at:]
    sequences_by_rank = {rank: (longer if rank == extra_rank else list(calls)) for rank in range(world)}
    # Mid-sequence the extra call completes (gloo pairs it with the next one silently); when it
    # is in effect the last one (the calls after it repeat it), nothing pairs it: it hangs.
    first_difference = next((k for k in range(len(calls)) if longer[k] != calls[k]), len(calls))
    hangs = first_difference == len(calls)
    run = run_of(sequences_by_rank, pending={extra_rank: len(calls)} if hangs else {})
    found = codes(run.model())
    assert found["DDP501"] == []
    [finding] = found["DDP502"]
    assert finding.evidence["entered_ranks"] == [extra_rank]
    assert finding.evidence["skipped_ranks"] == [r for r in range(world) if r != extra_rank]
    position = finding.evidence["position"]
    assert longer[:position] + longer[position + 1:] == calls
    assert longer[position] == extra


@settings(max_examples=75, deadline=None)
@given(sequences.filter(bool), worlds, st.data())
def test_one_substituted_collective_on_one_rank_is_always_a_mismatch_at_that_position(calls, world, data):
    odd_rank = data.draw(st.integers(0, world - 1))
    at = data.draw(st.integers(0, len(calls) - 1))
    other = data.draw(st.sampled_from([c for c in CALLS if c != calls[at]]))
    changed = calls[:at] + [other] + calls[at + 1:]
    run = run_of({rank: (changed if rank == odd_rank else list(calls)) for rank in range(world)})
    found = codes(run.model())
    assert found["DDP502"] == []
    [finding] = found["DDP501"]
    assert finding.evidence["position"] == at
    assert [s["ranks"] for s in finding.evidence["sides"] if odd_rank in s["ranks"]] == [[odd_rank]]
