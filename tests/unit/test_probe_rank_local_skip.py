"""A rank-local skip (a training forward with no backward on one rank only) is DDP502 at that
forward, naming the rank and the step; where the shifted all-reduces finally stopped the job is
its consequence (no second DDP502, DDP503 at info)."""

from __future__ import annotations

from ddpdoctor.core.findings import Severity
from tests.helpers.telemetry_builders import RunBuilder, judge, site, waiting_in

FORWARD, BACKWARD, EPOCH_END = site(21), site(28), site(32)


def _skipping_run(skip: bool = True):
    run = RunBuilder(world_size=2)
    run.all("ddp")
    for rank in (0, 1):
        for batch in range(8):
            if rank == 1 and batch == 3 and skip:
                run[1].forward_no_backward(FORWARD)
                continue
            run[rank].grads()
            run[rank].bucket(site=BACKWARD, done=not (rank == 0 and batch == 7))
            run[rank].step()
    if skip:
        run[1].collective("all_reduce", [[1]], site=EPOCH_END, done=False)
        run.outcome(status="stalled", stall_s=6.0, stall_timeout_s=5.0,
                    stacks=[waiting_in(0, "backward", 28), waiting_in(1, "all_reduce", 32)])
    else:
        run[0].collective("all_reduce", [[1]], site=EPOCH_END)
        run[1].collective("all_reduce", [[1]], site=EPOCH_END)
        run.all("end", "script_exit")
        run.outcome("completed")
    return run.model()


def test_a_rank_local_skip_is_ddp502_at_the_forward_without_a_backward():
    [finding] = judge("DDP502", _skipping_run())
    assert finding.ranks == [1]
    assert finding.location.line == 21
    assert "rank 1 ran DDP training forward 3 (step 3)" in finding.message
    assert "train.py:28" in finding.message  # the backward: the branch lies before it
    assert finding.evidence["peers_with_backward"] == [0]


def test_where_the_shifted_pairs_stopped_is_its_consequence():
    model = _skipping_run()
    assert judge("DDP501", model) == []
    [stall] = judge("DDP503", model)
    assert stall.severity is Severity.INFO and "skipped backward at step 3" in stall.message


def test_forwards_without_backward_on_every_rank_alike_are_no_skip():
    run = RunBuilder(world_size=2)
    run.all("ddp")
    run.all("train_steps", 2)
    run.all("forward_no_backward", FORWARD)  # a metric forward in train mode, on every rank
    run.all("train_steps", 2)
    run.all("end", "script_exit")
    run.outcome("completed")
    assert judge("DDP502", run.model()) == []

