"""Advice per cause, not per code: collectives on two groups in opposite orders name both
orders; a forward through the DDP model on one rank only is the odd call (DDP's buffer broadcast),
not the barrier the others wait in."""

from __future__ import annotations

from tests.helpers.telemetry_builders import RunBuilder, judge, site


def test_collectives_on_two_groups_in_opposite_orders_are_one_finding_naming_both_orders():
    run = RunBuilder(world_size=2)
    run[0].collective("all_reduce", [[1]], group="1", group_ranks=[0, 1], site=site(23), done=False)
    run[1].collective("all_reduce", [[1]], group="2", group_ranks=[0, 1], site=site(23), done=False)
    run.outcome(status="stalled", stall_s=6.0, stall_timeout_s=5.0)
    [finding] = judge("DDP502", run.model())
    assert "opposite orders" in finding.message
    assert "rank 0 entered all_reduce" in finding.message and "on group 1" in finding.message
    assert "rank 1 entered all_reduce" in finding.message and "on group 2" in finding.message
    assert finding.evidence["orders"] == {"0": ["1", "2"], "1": ["2", "1"]}


def test_a_one_rank_ddp_forward_is_the_odd_call_with_advice_about_the_forward():
    run = RunBuilder(world_size=2)
    run.all("ddp")
    run.all("train_steps", 2)
    run[0].collective("ddp_buffer_broadcast", [[16]], site=site(26), done=False)
    run[1].collective("barrier", [], [], site=site(27), done=False)
    run.outcome(status="stalled", stall_s=6.0, stall_timeout_s=5.0)
    model = run.model()
    [finding] = judge("DDP501", model) + judge("DDP502", model)
    assert finding.location.line == 26
    assert "buffer broadcast" in finding.message
    assert "model.module" in finding.hint and "torch.no_grad()" in finding.hint


def _uneven(batch_sampler: str):
    run = RunBuilder(world_size=2)
    run[0].loader(sampler="RandomSampler", batches=5, batch_sampler=batch_sampler)
    run[1].loader(sampler="RandomSampler", batches=4, batch_sampler=batch_sampler)
    run.all("end", "script_exit")
    run.outcome("completed")
    return run.model()


def test_uneven_batches_from_a_custom_batch_sampler_are_fixed_in_the_sampler():
    [finding] = judge("DDP303", _uneven("BucketBatchSampler"))
    assert "BucketBatchSampler" in finding.hint and "inside the sampler" in finding.hint
    assert "use a DistributedSampler" not in finding.hint


def test_uneven_batches_without_a_custom_batch_sampler_keep_the_sampler_advice():
    [finding] = judge("DDP303", _uneven(""))
    assert "DistributedSampler" in finding.hint


def _drifted(forwards: int, allreduces: bool):
    from ddpdoctor.probe.records import telemetry as tm

    run = RunBuilder(world_size=2)
    run.all("ddp")
    for rank in (0, 1):
        for step in range(1, 7):
            run[rank].add(tm.Step(run[rank]._now(), step, 1 if forwards else 0, int(allreduces), {}, forwards))
        run[rank].steps = 6
        run[rank].params({"fc.weight": f"w{rank}", "fc.bias": f"b{rank}"})
        run[rank].end()
    run.outcome("completed")
    return run.model()


def test_drift_with_zero_gradient_all_reduces_through_ddp_forwards_names_the_cast_after_wrapping():
    [finding] = judge("DDP405", _drifted(forwards=1, allreduces=False))
    assert "in 6 steps the ranks did 0 gradient all-reduces" in finding.message
    assert "after DistributedDataParallel" in finding.hint and "module(x)" not in finding.hint


def test_drift_with_no_forward_through_ddp_names_the_unwrapped_model():
    [finding] = judge("DDP405", _drifted(forwards=0, allreduces=False))
    assert "0 gradient all-reduces" in finding.message and "0 forwards" in finding.message
    assert "ddp_model(x)" in finding.hint


def test_drift_with_gradient_all_reduces_keeps_the_general_advice():
    [finding] = judge("DDP405", _drifted(forwards=1, allreduces=True))
    assert "0 gradient all-reduces" not in finding.message


def test_a_rank_stuck_on_its_dataloader_worker_shows_the_worker_frame_not_drop_last():
    from tests.helpers.telemetry_builders import stack, waiting_in

    run = RunBuilder(world_size=2)
    run.all("ddp")
    run.all("train_steps", 2)
    run[0].grads()
    run[0].bucket(done=False)
    main = stack(1, [("_try_get_data", "torch/utils/data/dataloader.py", 1133),
                     ("__next__", "torch/utils/data/dataloader.py", 708),
                     ("main", "train.py", 30), ("<module>", "train.py", 38)])
    main.workers = [stack(1, [("wait", "threading.py", 629), ("__getitem__", "train.py", 18),
                              ("fetch", "torch/utils/data/_utils/fetch.py", 52)])]
    run.outcome(status="stalled", stall_s=6.0, stall_timeout_s=5.0,
                stacks=[waiting_in(0, "backward", 33), main])
    model = run.model()
    assert judge("DDP502", model) == []
    [stall] = judge("DDP503", model)
    assert stall.location.line == 18
    assert "DataLoader worker" in stall.message and "train.py:18" in stall.message
    assert "drop_last" not in stall.hint and "DataLoader(timeout=" in stall.hint
