"""attach's judging over built observations: hung, hung during the window, skipped collective,
straggler, healthy, nothing sampled."""

from __future__ import annotations

from ddpdoctor.attach.observation import Observation, RankObservation
from ddpdoctor.attach.judge import judge
from ddpdoctor.probe.run_model.outcome import Frame
from ddpdoctor.probe.run_model.stack_text import parse_speedscope

BACKWARD = (Frame("_engine_run_backward", "torch/autograd/graph.py", 979),
            Frame("Tensor.backward", "torch/_tensor.py", 623), Frame("<module>", "train.py", 49))
BARRIER = (Frame("barrier", "torch/distributed/distributed_c10d.py", 4800),
           Frame("<module>", "train.py", 53))
SPIN = (Frame("wait_for_it", "train.py", 35), Frame("<module>", "train.py", 48))
LOAD = (Frame("load_batch", "train.py", 29), Frame("<module>", "train.py", 45))
FORWARD = (Frame("forward", "torch/nn/modules/linear.py", 125), Frame("<module>", "train.py", 46))


def rank(r, stacks, io=0, quiet=3.0, cpu=0.0):
    return RankObservation(r, 1000 + r, "node-a", list(stacks), proc={
        "seconds": 3.0, "io_calls": io, "io_quiet_s": quiet, "main_cpu_share": cpu})


def codes(verdict):
    return {f.code: f for res in verdict.results for f in res.findings}


def test_rank_spinning_in_its_code_while_the_other_waits_is_the_odd_group():
    verdict = judge(Observation("job", 2, 3.0, [rank(0, [BACKWARD] * 150), rank(1, [SPIN] * 150)]))
    hang = codes(verdict)["DDP503"]
    assert verdict.state == "hung"
    assert hang.ranks == [1] and str(hang.location) == "train.py:35"
    assert "rank 0 waits in Tensor.backward at train.py:49" in hang.message
    assert "DDP502" not in codes(verdict)


def test_hang_that_starts_during_the_window_is_judged_from_its_start():
    moving = [FORWARD, BACKWARD, LOAD] * 20
    verdict = judge(Observation("job", 2, 3.0, [rank(0, moving + [BACKWARD] * 90, io=400, quiet=1.7),
                                                 rank(1, moving + [SPIN] * 90, io=380, quiet=1.8)]))
    assert verdict.state == "hung"
    assert "in the last 1.7 s of the 3.0 s sampled" in codes(verdict)["DDP503"].message


def test_rank0_only_barrier_is_a_skipped_collective():
    verdict = judge(Observation("job", 2, 3.0, [rank(0, [BARRIER] * 150), rank(1, [BACKWARD] * 150)]))
    skipped = codes(verdict)["DDP502"]
    assert skipped.ranks == [0] and str(skipped.location) == "train.py:53"
    assert skipped.message.startswith("rank 0 entered barrier at train.py:53 and rank 1 skipped it")


def test_waiting_rank_that_still_reads_and_writes_is_progressing_and_the_sleeper_straggles():
    verdict = judge(Observation("job", 2, 3.0, [rank(0, [BACKWARD] * 145 + [FORWARD] * 5, io=120, quiet=0.2),
                                                 rank(1, [LOAD] * 145 + [BACKWARD] * 5, io=118, quiet=0.2)]))
    slow = codes(verdict)["DDP601"]
    assert verdict.state == "straggler" and slow.ranks == [1]
    assert "load_batch at train.py:29" in slow.message
    assert "rank 1 spends 97% of its samples" in slow.message


def test_ranks_alike_and_advancing_are_healthy_with_evidence():
    mix = [FORWARD, BACKWARD, BACKWARD, LOAD] * 40
    verdict = judge(Observation("job", 2, 3.0, [rank(0, mix, io=900, quiet=0.0),
                                                 rank(1, mix, io=880, quiet=0.0)]))
    assert verdict.state == "healthy" and not codes(verdict)
    assert verdict.notes[0].startswith("healthy: every rank advanced in the 3.0 s sampled")


def test_no_stack_sampled_is_incomplete_never_a_pass():
    obs = Observation("job", 2, 3.0, [RankObservation(0, 10, "a", error="ptrace refused", refused=True),
                                      RankObservation(1, 11, "a", error="ptrace refused", refused=True)])
    verdict = judge(obs)
    assert {r.status for r in verdict.results} == {"incomplete"}


def test_observation_survives_json_as_a_node_sends_it():
    obs = Observation("job", 2, 3.0, [rank(0, [BACKWARD] * 3)], notes=["n"])
    again = Observation.from_dict(obs.to_dict(), max_stacks=10)
    assert again.ranks[0].stacks[0][2].file == "train.py" and again.notes == ["n"]


def test_speedscope_main_thread_samples_come_innermost_first():
    data = {"shared": {"frames": [{"name": "<module>", "file": "/w/train.py", "line": 9},
                                  {"name": "work", "file": "/w/train.py", "line": 3}]},
            "profiles": [{"type": "sampled", "name": 'Thread 7 "pt_thread"', "samples": [[0]] * 9},
                         {"type": "sampled", "name": 'Thread 5 "MainThread"', "samples": [[0, 1]] * 2}]}
    stacks = parse_speedscope(data, 5)
    assert len(stacks) == 2 and [f.func for f in stacks[0]] == ["work", "<module>"]


def busy(r, stacks, cpu, quiet=3.0):
    obs = rank(r, stacks, quiet=quiet)
    obs.proc["quiet_cpu_share"] = cpu
    return obs


def test_ranks_computing_a_backward_longer_than_the_window_are_not_hung_nor_healthy():
    verdict = judge(Observation("job", 2, 3.0, [busy(0, [BACKWARD] * 150, 1.02),
                                                 busy(1, [BACKWARD] * 150, 0.97)]))
    assert verdict.state == "unknown" and not codes(verdict)
    status = {r.spec.code: r for r in verdict.results}
    assert status["DDP503"].status == "incomplete" and status["DDP601"].status == "incomplete"
    assert status["DDP503"].reason.startswith(
        "ranks 0 and 1 stood in backward at train.py:49 with no collective completed in the 3.0 s sampled, "
        "computing (1.0 CPUs or more meanwhile)")
    assert "--duration longer than one training step" in status["DDP503"].reason


def test_one_rank_done_with_its_backward_waits_for_one_still_computing_its_own():
    verdict = judge(Observation("job", 2, 3.0, [busy(0, [BACKWARD] * 150, 0.0),
                                                 busy(1, [BACKWARD] * 150, 1.5)]))
    assert verdict.state == "unknown"
    assert {r.spec.code: r for r in verdict.results}["DDP503"].reason.startswith("rank 1 stood in backward")


def test_ranks_idle_in_backward_with_nothing_sent_are_hung():
    verdict = judge(Observation("job", 2, 3.0, [busy(0, [BACKWARD] * 150, 0.01),
                                                 rank(1, [SPIN] * 150)]))
    assert verdict.state == "hung" and codes(verdict)["DDP503"].ranks == [1]


def test_busy_cpu_in_an_explicit_collective_is_still_a_wait():
    # Only backward is both work and waiting; a rank in barrier does no work of its own there.
    verdict = judge(Observation("job", 2, 3.0, [busy(0, [BARRIER] * 150, 1.0),
                                                 busy(1, [BACKWARD] * 150, 0.0)]))
    assert verdict.state == "hung" and "DDP502" in codes(verdict)


def test_ranks_that_ended_a_step_in_the_window_and_now_compute_their_backward_advance():
    moving = [FORWARD, LOAD] * 10
    ranks = [busy(r, moving + [BACKWARD] * 130, 1.0, quiet=6.0) for r in (0, 1)]
    for obs in ranks:
        obs.proc.update(seconds=10.0, io_calls=640)  # the all-reduce of the step that ended
    verdict = judge(Observation("job", 2, 10.0, ranks))
    assert verdict.state == "healthy" and not codes(verdict)


def test_ranks_waiting_for_one_that_works_in_its_own_code_are_not_hung_yet():
    # rank 0 evaluates alone (its CPU busy) while rank 1 waits in the next step's all-reduce:
    # a long phase of one rank, or a loop that never ends; one window cannot tell.
    verdict = judge(Observation("job", 2, 3.0, [busy(0, [SPIN] * 150, 1.0),
                                                 busy(1, [BACKWARD] * 150, 0.0)]))
    assert verdict.state == "unknown" and not codes(verdict)
    status = {r.spec.code: r for r in verdict.results}
    assert {s.status for s in status.values()} == {"incomplete"}
    assert status["DDP503"].reason.startswith(
        "rank 0 is running wait_for_it at train.py:35 (1.00 CPUs) while rank 1 waits in "
        "Tensor.backward at train.py:49: a long phase of its own")


def test_a_rank_whose_stack_moves_or_that_talks_is_working_whatever_its_cpu():
    moving = busy(0, [SPIN, LOAD] * 75, 0.0)
    verdict = judge(Observation("job", 2, 3.0, [moving, busy(1, [BACKWARD] * 150, 0.0)]))
    assert verdict.state == "unknown"
    assert "(its stack moving)" in {r.spec.code: r for r in verdict.results}["DDP503"].reason
    talking = busy(0, [SPIN] * 150, 0.0, quiet=0.3)
    talking.proc["io_calls"] = 40  # an upload: socket writes
    verdict = judge(Observation("job", 2, 3.0, [talking, busy(1, [BACKWARD] * 150, 0.0)]))
    assert "(making read/write calls)" in {r.spec.code: r for r in verdict.results}["DDP503"].reason


def test_a_rank_idle_in_its_own_code_while_the_others_wait_is_hung():
    verdict = judge(Observation("job", 2, 3.0, [busy(0, [SPIN] * 150, 0.006),
                                                 busy(1, [BACKWARD] * 150, 0.0)]))
    assert verdict.state == "hung" and codes(verdict)["DDP503"].ranks == [0]


# -- a GPU job: CPU and read/write calls are no sign of progress (seen on an H200) ----------------

SYNC = (Frame("<module>", "train.py", 31),)  # `loss.item()`: a C call, no frame of its own


def gpu_rank(r, stacks, gpu=True):
    # NCCL's threads poll the store every second and the wait spins a core: io and CPU as a
    # healthy rank's
    return RankObservation(r, 1000 + r, "node-a", list(stacks), proc={
        "seconds": 5.0, "io_calls": 5, "io_quiet_s": 0.4, "main_cpu_share": 1.0,
        "quiet_cpu_share": 1.0, "gpu": gpu})


def test_gpu_rank_standing_at_one_line_for_the_whole_window_is_no_pass():
    verdict = judge(Observation("job", 1, 5.0, [gpu_rank(0, [SYNC] * 249)]))
    assert verdict.state == "unknown"
    results = {r.spec.code: r for r in verdict.results}
    assert results["DDP503"].status == "incomplete"
    why = results["DDP503"].reason
    assert "rank 0" in why and "for the whole 5.0 s sampled, on a GPU" in why and "--duration" in why
    assert not any(n.startswith("healthy:") for n in verdict.notes)


def test_the_same_window_on_a_cpu_rank_and_a_gpu_rank_whose_stack_moves_are_healthy():
    # twin: off a GPU the calls and the CPU are evidence (gloo's collectives are socket traffic)
    assert judge(Observation("job", 1, 5.0, [gpu_rank(0, [SYNC] * 249, gpu=False)])).state == "healthy"
    mix = [FORWARD, BACKWARD, SYNC] * 80
    assert judge(Observation("job", 2, 5.0, [gpu_rank(0, mix), gpu_rank(1, mix)])).state == "healthy"


def test_gpu_fact_survives_json_and_a_wrong_type_is_refused():
    import pytest

    obs = Observation("job", 1, 5.0, [gpu_rank(0, [SYNC] * 5)])
    data = obs.to_dict()
    assert Observation.from_dict(data, max_stacks=10).ranks[0].proc["gpu"] is True
    data["ranks"][0]["proc"]["gpu"] = "yes"
    with pytest.raises(ValueError):
        Observation.from_dict(data, max_stacks=10)
