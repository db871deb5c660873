"""The model and checkpoint checks (DDP401-DDP405, DDP701), fed recorded telemetry."""

from __future__ import annotations

from ddpdoctor.core.findings import Location, Severity
from ddpdoctor.core.registry import Skipped
from tests.helpers.telemetry_builders import UNFINISHED_REDUCTION, RunBuilder, judge, site

PARAMS = ["fc.weight", "fc.bias", "aux.weight", "aux.bias"]


# DDP401 ---------------------------------------------------------------------------------------

def test_unused_parameters_without_find_unused_are_an_error_naming_them():
    run = RunBuilder(world_size=2)
    run.all("ddp", fup=False, params=PARAMS)
    run.all("train_steps", 1, unused=["aux.weight", "aux.bias"])
    for rank in (0, 1):  # the next forward raises, as torch does
        run[rank].crash("RuntimeError", UNFINISHED_REDUCTION, site=site(70))
    run.outcome("crashed", exit_codes={0: 1, 1: 1})
    [finding] = judge("DDP401", run.model())
    assert finding.code == "DDP401" and finding.severity is Severity.ERROR
    assert finding.ranks == [0, 1]
    assert "2 parameters of the DDP model built at train.py:30 received no gradient: aux.bias, aux.weight" in finding.message
    assert "on ranks 0 and 1, in 1/1 iterations" in finding.message
    assert "find_unused_parameters=False" in finding.message
    assert finding.location == Location("train.py", 30)
    assert finding.evidence["unused"] == ["aux.bias", "aux.weight"]
    assert finding.evidence["differs_across_ranks"] is False


def test_parameters_unused_on_one_rank_only_are_reported_as_differing():
    run = RunBuilder(world_size=2)
    run.all("ddp", fup=False, params=PARAMS)
    run[0].train_steps(1)
    run[1].train_steps(1, unused=["aux.weight", "aux.bias"])
    [finding] = judge("DDP401", run.model())
    assert finding.ranks == [1]
    assert "the set differs across ranks (rank 0: none; rank 1: aux.bias, aux.weight)" in finding.message
    assert "hang in the gradient all-reduce" in finding.message
    assert finding.evidence["unused_per_rank"] == {"1": ["aux.bias", "aux.weight"]}


def test_long_lists_of_unused_parameters_are_capped_in_the_message_but_whole_in_evidence():
    names = [f"layer{i}.weight" for i in range(12)]
    run = RunBuilder(world_size=2)
    run.all("ddp", fup=False, params=names + ["fc.weight"])
    run.all("train_steps", 1, unused=names)
    [finding] = judge("DDP401", run.model())
    assert "layer0.weight, layer1.weight, layer2.weight, layer3.weight, layer4.weight and 7 more" in finding.message
    assert finding.evidence["unused"] == names


def test_sometimes_unused_parameters_with_find_unused_are_fine():
    run = RunBuilder(world_size=2)
    run.all("ddp", fup=True, params=PARAMS)
    for step in range(4):
        run.all("train_steps", 1, unused=["aux.weight", "aux.bias"] if step % 2 else [])
    assert judge("DDP401", run.model()) == []


def test_parameters_never_used_anywhere_with_find_unused_are_a_warning():
    run = RunBuilder(world_size=2)
    run.all("ddp", fup=True, params=PARAMS)
    run.all("train_steps", 3, unused=["aux.weight", "aux.bias"])
    [finding] = judge("DDP401", run.model())
    assert finding.severity is Severity.WARNING
    assert "never received a gradient on any rank" in finding.message
    assert "requires_grad=False" in finding.hint
    assert finding.evidence["never_used"] == ["aux.bias", "aux.weight"]


def test_unused_parameter_check_skips_without_a_ddp_model_or_backward():
    assert isinstance(judge("DDP401", RunBuilder(world_size=2).model()), Skipped)
    built_only = RunBuilder(world_size=2)
    built_only.all("ddp")
    skipped = judge("DDP401", built_only.model())
    assert isinstance(skipped, Skipped) and "backward" in skipped.reason


# DDP402 ---------------------------------------------------------------------------------------

def test_find_unused_with_every_parameter_used_is_overhead():
    run = RunBuilder(world_size=2)
    run.all("ddp", fup=True, params=PARAMS)
    run.all("train_steps", 3)
    [finding] = judge("DDP402", run.model())
    assert finding.code == "DDP402" and finding.severity is Severity.WARNING
    assert finding.ranks == [0, 1]
    assert "every parameter received a gradient in all 3 recorded backward passes on ranks 0 and 1" in finding.message
    assert finding.hint.startswith("pass find_unused_parameters=False")
    assert finding.location == Location("train.py", 30)


def test_find_unused_needed_or_off_gives_no_overhead_warning():
    needed = RunBuilder(world_size=2)
    needed.all("ddp", fup=True, params=PARAMS)
    needed.all("train_steps", 2)
    needed[1].train_steps(1, unused=["aux.bias"])
    assert judge("DDP402", needed.model()) == []
    off = RunBuilder(world_size=2)
    off.all("ddp", fup=False)
    off.all("train_steps", 3)
    assert judge("DDP402", off.model()) == []


def test_overhead_needs_two_backward_passes_on_every_rank():
    run = RunBuilder(world_size=2)
    run.all("ddp", fup=True)
    run[0].train_steps(3)
    run[1].train_steps(1)  # killed early
    assert isinstance(judge("DDP402", run.model()), Skipped)


# DDP403 ---------------------------------------------------------------------------------------

def test_accumulation_without_no_sync_reports_the_ratio_and_backward_site():
    run = RunBuilder(world_size=2)
    run.all("ddp")
    for _ in range(3):
        for rank in (0, 1):
            for _ in range(4):
                run[rank].grads()
                run[rank].bucket(0, site=site(66, func="train"))
            run[rank].step(backward_iterations=4, allreduce_rounds=4)
    [finding] = judge("DDP403", run.model())
    assert finding.code == "DDP403" and finding.severity is Severity.WARNING
    assert finding.ranks == [0, 1]
    assert "3/3 accumulated optimizer steps on each of ranks 0 and 1" in finding.message
    assert "ran 4 backward passes each and all-reduced the gradients 4 times" in finding.message
    assert "(4.0x the gradient traffic)" in finding.message
    assert "no_sync" in finding.hint
    assert finding.location == Location("train.py", 66)
    assert finding.evidence["wasted_allreduce_rounds"] == 18


def test_accumulation_with_no_sync_passes():
    run = RunBuilder(world_size=2)
    run.all("ddp")
    run.all("step", backward_iterations=4, allreduce_rounds=1)
    run.all("step", backward_iterations=4, allreduce_rounds=1)
    assert judge("DDP403", run.model()) == []
    assert isinstance(judge("DDP403", RunBuilder(world_size=2).model()), Skipped)


# DDP404 ---------------------------------------------------------------------------------------

def test_dataparallel_is_reported_with_its_site():
    run = RunBuilder(world_size=2)
    run.all("dataparallel", site=site(33))
    [finding] = judge("DDP404", run.model())
    assert finding.severity is Severity.WARNING
    assert finding.ranks == [0, 1]
    assert finding.message == "nn.DataParallel is constructed at train.py:33 on ranks 0 and 1"
    assert finding.location == Location("train.py", 33)
    assert "one process per GPU" in finding.hint
    assert judge("DDP404", RunBuilder(world_size=2).model()) == []


# DDP405 ---------------------------------------------------------------------------------------

def test_parameters_that_drift_apart_are_named_with_the_disagreeing_ranks():
    run = RunBuilder(world_size=4)
    run.all("ddp", params=PARAMS)
    run.all("train_steps", 5)
    same = {"fc.weight": "a1", "fc.bias": "b1", "aux.weight": "c1", "aux.bias": "d1"}
    for rank in (0, 1, 2):
        run[rank].params(same)
    run[3].params({**same, "aux.weight": "c9", "aux.bias": "d9"})
    [finding] = judge("DDP405", run.model())
    assert finding.code == "DDP405" and finding.severity is Severity.ERROR
    assert finding.ranks == [3]
    assert "after 5 steps, 2 of 4 parameters of the DDP model built at train.py:30 differ" in finding.message
    assert "aux.bias, aux.weight; rank 3 disagrees with rank 0" in finding.message
    assert finding.evidence["groups"] == [[0, 1, 2], [3]]


def test_identical_parameters_pass_and_a_lone_rank_is_skipped():
    run = RunBuilder(world_size=2)
    run.all("train_steps", 2)
    run.all("params", {"fc.weight": "a", "fc.bias": "b"})
    assert judge("DDP405", run.model()) == []
    lone = RunBuilder(world_size=2)
    lone[0].params({"fc.weight": "a"})
    assert isinstance(judge("DDP405", lone.model()), Skipped)


def test_parameters_are_compared_at_a_step_both_ranks_recorded():
    run = RunBuilder(world_size=2)
    run.all("params", {"w": "x"}, step=4)
    run[0].params({"w": "y"}, step=6)  # rank 1 was killed before step 6
    assert judge("DDP405", run.model()) == []


# DDP701 ---------------------------------------------------------------------------------------

def test_every_rank_saving_the_same_checkpoint_is_an_error():
    run = RunBuilder(world_size=2)
    run.all("train_steps", 2)
    run.all("save", "/ckpt/model.pt", site=site(88))
    [finding] = judge("DDP701", run.model())
    assert finding.code == "DDP701" and finding.severity is Severity.ERROR
    assert finding.ranks == [0, 1]
    assert "ranks 0 and 1 all wrote /ckpt/model.pt on node0 (2 torch.save calls at step 2)" in finding.message
    assert finding.location == Location("train.py", 88)
    assert "dist.get_rank() == 0" in finding.hint and "barrier" in finding.hint


def test_rank_zero_saving_or_per_rank_paths_pass():
    run = RunBuilder(world_size=2)
    run[0].save("/ckpt/model.pt")
    run[0].save("/ckpt/rank0.pt")
    run[1].save("/ckpt/rank1.pt")
    run[1].save("/ckpt/model.pt", host="node1")  # same path, another machine's disk
    assert judge("DDP701", run.model()) == []
