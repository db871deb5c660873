"""DDP406 (a parameter marked ready twice in one backward) over built telemetry, and DDP504 /
DDP401 leaving that crash to it."""

from __future__ import annotations

from ddpdoctor.core.findings import Severity
from ddpdoctor.core.registry import Skipped
from ddpdoctor.probe.records import telemetry as tm
from tests.helpers.telemetry_builders import RunBuilder, judge, site

READY_TWICE = (
    "Expected to mark a variable ready only once. This error is caused by one of the following "
    "reasons: 1) Use of a module parameter outside the `forward` function. ... 2) Reused parameters "
    "in multiple reentrant backward passes. ...\nParameter at index 5 with name blocks.2.fc.bias has "
    "been marked as ready twice. This means that multiple autograd engine  hooks have fired for this "
    "particular parameter during this iteration.")
PARAMS = ["blocks.0.fc.weight", "blocks.0.fc.bias", "blocks.1.fc.weight", "blocks.1.fc.bias",
          "blocks.2.fc.weight", "blocks.2.fc.bias", "head.weight", "head.bias"]
CHECKPOINT_SITE = site(15, file="model.py", func="forward")


def checkpointed(reentrant: bool = True, explicit: bool = True) -> tm.ActivationCheckpoint:
    return tm.ActivationCheckpoint(1.0, reentrant, explicit, "Block", 0, CHECKPOINT_SITE)


def crashed_run(message: str = READY_TWICE, fup: bool = True, ranks=(0, 1)) -> RunBuilder:
    run = RunBuilder(world_size=2)
    run.all("ddp", fup=fup, params=PARAMS)
    for rank in run.ranks:
        run[rank].add(checkpointed())
        if rank in ranks:
            run[rank].crash("RuntimeError", message, site=site(23, func="<module>"))
    return run


def test_reentrant_checkpoint_crash_names_parameter_cause_and_fixes():
    run = crashed_run()
    run.outcome("crashed", exit_codes={0: 1, 1: 1})
    [finding] = judge("DDP406", run.model())
    assert finding.severity is Severity.ERROR and finding.ranks == [0, 1]
    assert "blocks.2.fc.bias" in finding.message
    assert "find_unused_parameters=True" in finding.message
    assert "use_reentrant=True over Block at model.py:15" in finding.message
    assert "use_reentrant=False" in finding.hint and "static_graph=True" in finding.hint
    assert "drop find_unused_parameters=True" in finding.hint
    assert finding.location.file == "model.py" and finding.location.line == 15  # where the fix goes
    assert finding.evidence["indices"] == {"blocks.2.fc.bias": 5}


def test_the_crash_is_one_finding_not_also_ddp504():
    run = crashed_run()
    run.outcome("crashed", exit_codes={0: 1, 1: 1})
    assert judge("DDP504", run.model()) == []


def test_a_peer_that_only_lost_the_crashed_rank_is_not_a_ddp504_either():
    run = crashed_run(ranks=(1,))
    run[0].crash("RuntimeError", "[pair.cc:553] Connection closed by peer [127.0.0.1]:28868")
    run.outcome("crashed", exit_codes={0: 1, 1: 1})
    assert judge("DDP504", run.model()) == []
    [finding] = judge("DDP406", run.model())
    assert finding.ranks == [1]


def test_an_unrelated_crash_on_another_rank_is_still_ddp504():
    run = crashed_run(ranks=(1,))
    run[0].crash("ValueError", "bad batch", site=site(40))
    run.outcome("crashed", exit_codes={0: 1, 1: 1})
    [crash] = judge("DDP504", run.model())
    assert crash.ranks == [0] and "ValueError" in crash.message


def test_an_index_without_a_name_is_named_from_the_ddp_parameter_list():
    message = READY_TWICE.replace(" with name blocks.2.fc.bias", "")
    [finding] = judge("DDP406", crashed_run(message).model())
    assert "blocks.2.fc.bias" in finding.message


def test_without_a_checkpoint_the_cause_is_a_parameter_used_outside_forward():
    run = RunBuilder(world_size=2)
    run.all("ddp", fup=True, params=PARAMS)
    run.all("crash", "RuntimeError", READY_TWICE)
    [finding] = judge("DDP406", run.model())
    assert "no reentrant activation checkpoint was seen" in finding.message
    assert "use every parameter inside the DDP model's forward" in finding.hint


def test_default_flags_say_that_without_the_probe_it_trains_silently_wrong():
    [finding] = judge("DDP406", crashed_run(fup=False).model())
    assert "find_unused_parameters=False" in finding.message
    assert "without the probe" in finding.message and "wrongly averaged" in finding.message


def test_gradients_accumulated_twice_without_a_crash_are_reported():
    run = RunBuilder(world_size=2)
    run.all("ddp", params=PARAMS)
    for rank in run.ranks:
        run[rank].add(checkpointed(explicit=False))
        for _ in range(3):
            run[rank].grads(twice=["blocks.1.fc.weight", "blocks.1.fc.bias"])
            run[rank].step()
    [finding] = judge("DDP406", run.model())
    assert finding.ranks == [0, 1]
    assert "blocks.1.fc.bias, blocks.1.fc.weight" in finding.message
    assert "in 3/3 backward passes" in finding.message
    assert "torch's default" in finding.message


def test_static_graph_and_plain_training_are_clean():
    static = RunBuilder(world_size=2)
    static.all("ddp", params=PARAMS, static_graph=True)
    for rank in static.ranks:
        static[rank].grads(twice=["blocks.1.fc.bias"])
    assert judge("DDP406", static.model()) == []
    plain = RunBuilder(world_size=2)
    plain.all("ddp", params=PARAMS)
    plain.all("train_steps", 4)
    assert judge("DDP406", plain.model()) == []


def test_no_ddp_model_is_skipped():
    assert isinstance(judge("DDP406", RunBuilder(world_size=2).model()), Skipped)


def test_ddp401_ignores_the_backward_the_crash_cut_short():
    run = crashed_run()
    for rank in run.ranks:  # flushed at the crash: the backward never reached these
        run[rank].grads(unused=["blocks.0.fc.weight", "blocks.0.fc.bias"])
    assert judge("DDP401", run.model()) == []
