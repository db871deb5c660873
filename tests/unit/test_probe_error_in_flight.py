"""Cause before consequence: an exception in flight when a rank entered a collective that never
returned (the cleanup barrier in `finally:`) is that rank's DDP504; the hang it led to is its
consequence, and a crash worded by the probe's own DETAIL check is never a second error."""

from __future__ import annotations

from ddpdoctor.core.findings import Severity
from tests.helpers.telemetry_builders import RunBuilder, judge, site, waiting_in


def _swallowed(returned: bool = False):
    run = RunBuilder(world_size=2)
    run.all("ddp")
    run.all("train_steps", 3)
    run[0].grads()
    run[0].bucket(done=False)  # rank 0 trains on into step 3's all-reduce
    run[1].collective("barrier", [], [], site=site(27), done=returned)
    run[1].error_in_flight("RuntimeError", "CUDA out of memory. Tried to allocate 2.00 GiB", site(13, func="train"))
    run.outcome(status="stalled", stall_s=6.0, stall_timeout_s=5.0,
                stacks=[waiting_in(0, "backward", 16), waiting_in(1, "barrier", 27)])
    return run.model()


def test_an_error_in_flight_at_a_hung_cleanup_barrier_is_ddp504_naming_rank_error_and_both_lines():
    model = _swallowed()
    [crash] = judge("DDP504", model)
    assert crash.ranks == [1]
    assert "rank 1 raised RuntimeError: CUDA out of memory" in crash.message
    assert "train.py:13" in crash.message and "barrier at train.py:27" in crash.message
    assert crash.location.line == 13
    assert crash.evidence["waited_in"]["op"] == "barrier"


def test_the_hang_it_led_to_is_its_consequence_not_a_second_cause():
    model = _swallowed()
    assert judge("DDP502", model) == []
    [stall] = judge("DDP503", model)
    assert stall.severity is Severity.INFO
    assert stall.message.startswith("a consequence of rank 1's RuntimeError (DDP504)")


def test_an_error_in_flight_at_a_collective_that_returned_is_no_crash():
    run = RunBuilder(world_size=2)
    run.all("collective", "barrier", [], [], site=site(27))
    run[1].error_in_flight("ValueError", "handled and done with", site(13))
    run.all("end", "script_exit")
    run.outcome("completed")
    assert judge("DDP504", run.model()) == []


def test_a_crash_worded_by_the_probe_s_detail_check_is_no_second_error_beside_the_divergence():
    run = RunBuilder(world_size=2)
    run[0].collective("all_gather", [[1]], site=site(45))
    run[1].collective("broadcast", [[5056]], ["uint8"], site=site(37))
    text = ("Detected mismatch between collectives on ranks. Rank 0 is running collective: "
            "CollectiveFingerPrint(SequenceNumber=2, OpType=ALLGATHER)")
    run[0].crash("RuntimeError", text, site=site(45))
    run[1].crash("RuntimeError", text.replace("Rank 0", "Rank 1"), site=site(37))
    run.outcome("crashed", exit_codes={0: 1, 1: 1})
    model = run.model()
    assert judge("DDP501", model)
    assert judge("DDP504", model) == []


def test_a_detail_worded_crash_without_a_divergence_is_told_in_a_plain_run_s_words():
    run = RunBuilder(world_size=2)
    run.all("collective", "all_reduce", [[3]], site=site(50))
    run[0].crash("RuntimeError", "[Rank 0]: Ranks 1 failed to pass monitoredBarrier in 30000 ms", site=site(50))
    run.outcome("crashed", exit_codes={0: 1, 1: -15})
    found = judge("DDP504", run.model())
    for finding in found:
        assert "monitoredBarrier" not in finding.message
