"""The checks of how a run failed (DDP503 stall, DDP504 crash, DDP505 no process group), fed
recorded telemetry, stacks and outcomes."""

from __future__ import annotations

from ddpdoctor.core.findings import Location, Severity
from ddpdoctor.core.registry import Skipped
from tests.helpers.telemetry_builders import (SITE_ALLREDUCE, UNFINISHED_REDUCTION, RunBuilder, faulthandler_dump,
                                judge, running, site, waiting_in)

STALLED = dict(stall_s=12.0, stall_timeout_s=10.0)
PEER_GONE = "[../third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:28868"


def stuck_in_all_reduce(run: RunBuilder, rank: int) -> None:
    run[rank].collective("all_reduce", [[3]], site=SITE_ALLREDUCE, done=False)


# DDP503 ---------------------------------------------------------------------------------------

def test_stall_names_where_each_rank_stands_and_points_at_the_odd_one():
    run = RunBuilder(world_size=2)
    run.all("train_steps", 3)
    stuck_in_all_reduce(run, 0)
    run.outcome("stalled", stacks=[waiting_in(0), running(1)], **STALLED)
    [finding] = judge("DDP503", run.model())
    assert finding.code == "DDP503" and finding.severity is Severity.ERROR
    assert finding.message == ("no rank advanced for 12.0 s (stall timeout 10.0 s); rank 0 waits in "
                               "all_reduce at train.py:57, rank 1 is running spin at train.py:12")
    assert finding.ranks == [0, 1]
    assert finding.location == Location("train.py", 12)
    detail = finding.evidence["detail"]
    assert ("rank 0: all_reduce (torch/distributed/distributed_c10d.py:3252) <- wrapper "
            "(torch/distributed/c10d_logger.py:83) <- train_step (train.py:57)") in detail
    assert "rank 1: spin (train.py:12) <- main (train.py:90)" in detail
    assert ("rank 0: step 3, last collective all_reduce of [3] float32 at train.py:57 (seq 3 on WORLD), "
            "not returned") in detail
    assert "rank 1: step 3, last collective DDP gradient all-reduce (bucket 0)" in detail
    assert "never reached the collective the others wait in" in finding.hint


def test_stall_groups_ranks_in_the_same_place_and_isolates_the_minority():
    run = RunBuilder(world_size=4)
    stacks = [waiting_in(r) for r in (0, 1, 3)] + [waiting_in(2, call="barrier", line=60, torch_line=4100)]
    run.outcome("stalled", stacks=stacks, **STALLED)
    [finding] = judge("DDP503", run.model())
    assert "ranks 0, 1 and 3 wait in all_reduce at train.py:57, rank 2 waits in barrier at train.py:60" in finding.message
    assert finding.ranks == [2]
    assert finding.location == Location("train.py", 60)
    assert finding.evidence["groups"][0] == {"ranks": [0, 1, 3], "where": "wait in all_reduce at train.py:57"}


def test_stall_ignores_line_differences_inside_torch():
    run = RunBuilder(world_size=2)
    run.outcome("stalled", stacks=[waiting_in(0, torch_line=3252), waiting_in(1, torch_line=3260)], **STALLED)
    [finding] = judge("DDP503", run.model())
    assert "ranks 0 and 1 all wait in all_reduce at train.py:57" in finding.message
    assert "ddpdoctor preflight" in finding.hint


def test_overall_timeout_is_reported_as_such():
    run = RunBuilder(world_size=2, timeout_s=120.0)
    run.outcome("timeout", wall_s=121.0, stacks=[waiting_in(0), running(1)])
    [finding] = judge("DDP503", run.model())
    assert finding.message.startswith("the probe's overall timeout (120.0 s) expired after 121.0 s")


def test_stall_without_py_spy_uses_the_ranks_faulthandler_dumps_and_says_so():
    run = RunBuilder(world_size=2)
    run[0].signal_dump = faulthandler_dump(line=57)
    run[1].signal_dump = faulthandler_dump(line=61, call="broadcast")
    run.outcome("stalled", stack_note="py-spy could not attach (ptrace not permitted)", **STALLED)
    [finding] = judge("DDP503", run.model())
    assert "rank 0 waits in all_reduce at train.py:57" in finding.message
    assert "rank 1 waits in broadcast at train.py:61" in finding.message
    assert "(stacks from faulthandler dumps: py-spy could not attach (ptrace not permitted))" in finding.message
    assert finding.evidence["stack_method"] == "faulthandler"


def test_stall_without_any_stack_falls_back_on_the_last_records():
    run = RunBuilder(world_size=2)
    run.all("train_steps", 3)
    stuck_in_all_reduce(run, 0)
    run.outcome("stalled", stack_note="py-spy missing", **STALLED)
    [finding] = judge("DDP503", run.model())
    assert ("rank 0 waits in all_reduce of [3] float32 at train.py:57 (last record; no stack), "
            "rank 1 was last seen at step 3 (no stack)") in finding.message
    assert "(no stacks were captured: py-spy missing; from the last records)" in finding.message
    assert finding.location is None  # the odd rank 1 left nothing to point at


def test_finished_runs_have_no_stall_and_killed_probes_are_skipped():
    run = RunBuilder(world_size=2)
    run.all("end")
    run.outcome("completed")
    assert judge("DDP503", run.model()) == []
    assert isinstance(judge("DDP503", RunBuilder(world_size=2).model()), Skipped)


# DDP504 ---------------------------------------------------------------------------------------

def test_crash_names_the_exception_its_site_and_what_the_other_rank_waited_in():
    run = RunBuilder(world_size=2)
    run.all("train_steps", 3)
    run[1].crash("ValueError", "bad batch", site=site(44, func="collate"))
    stuck_in_all_reduce(run, 0)
    run[0].crash("RuntimeError", PEER_GONE, site=SITE_ALLREDUCE)
    run.outcome("crashed", exit_codes={0: 1, 1: 1})
    [finding] = judge("DDP504", run.model())
    assert finding.code == "DDP504" and finding.severity is Severity.ERROR
    assert finding.ranks == [1]
    assert finding.message == (
        "rank 1 raised ValueError: bad batch at train.py:44 (step 3) while rank 0 was waiting in "
        f"all_reduce of [3] float32 at train.py:57 (seq 3) and then failed with RuntimeError: {PEER_GONE}")
    assert finding.location == Location("train.py", 44)
    assert "ValueError: bad batch" in finding.evidence["detail"]
    assert finding.evidence["consequences"] == [0]


def test_every_rank_raising_the_same_error_is_one_finding_pointing_to_ddp401():
    run = RunBuilder(world_size=2)
    run.all("train_steps", 1)
    for rank in (0, 1):
        run[rank].crash("RuntimeError", UNFINISHED_REDUCTION + f"\nParameter indices which did not "
                        f"receive grad for rank {rank}: 2 3", site=site(70))
    run.outcome("crashed", exit_codes={0: 1, 1: 1})
    [finding] = judge("DDP504", run.model())
    assert finding.ranks == [0, 1]
    assert finding.message.startswith("every rank (0, 1) raised RuntimeError: Expected to have "
                                      "finished reduction in the prior iteration")
    assert "DDP401" in finding.hint


def test_segfault_is_named_by_its_signal_with_the_faulthandler_stack():
    run = RunBuilder(world_size=2)
    run.all("train_steps", 2)
    stuck_in_all_reduce(run, 0)
    run[1].signal_dump = faulthandler_dump(line=77, call="forward")
    run.outcome("crashed", exit_codes={0: -15, 1: -11})
    [finding] = judge("DDP504", run.model())
    assert finding.ranks == [1]
    assert finding.message.startswith(
        "rank 1 was killed by SIGSEGV (signal 11: a crash in native code) at train.py:77 "
        "(step 2) while rank 0 was waiting in all_reduce of [3] float32 at train.py:57 (seq 2 on WORLD)")
    assert finding.location == Location("train.py", 77)
    assert "line 77 in train_step" in finding.evidence["detail"]


def test_a_lone_sigkill_in_a_crashed_run_is_blamed_as_the_oom_killer():
    run = RunBuilder(world_size=2)
    run.outcome("crashed", exit_codes={0: -15, 1: -9})
    [finding] = judge("DDP504", run.model())
    assert finding.ranks == [1] and "SIGKILL" in finding.message and "OOM" in finding.hint


def test_the_probe_killing_a_stalled_job_is_not_a_crash():
    run = RunBuilder(world_size=2)
    run.outcome("stalled", exit_codes={0: -9, 1: -9}, **STALLED)
    assert judge("DDP504", run.model()) == []
    clean = RunBuilder(world_size=2)
    clean.all("end")
    clean.outcome("completed")
    assert judge("DDP504", clean.model()) == []


def test_crash_says_when_the_other_ranks_had_finished():
    run = RunBuilder(world_size=3)
    run.all("train_steps", 2)
    run[2].crash("KeyError", "'label'", site=site(48))
    run[0].end("script_exit")
    run[1].end("script_exit")
    [finding] = judge("DDP504", run.model())  # the probe was killed: no outcome at all
    assert finding.message == ("rank 2 raised KeyError: 'label' at train.py:48 (step 2) while ranks 0 "
                               "and 1 exited normally at step 2")


def test_every_rank_timing_out_is_reported_with_a_pointer_to_the_collective_checks():
    run = RunBuilder(world_size=2)
    for rank in (0, 1):
        run[rank].crash("RuntimeError", "[../gloo/transport/unbound_buffer.cc:78] Timed out waiting "
                        "15000ms for recv operation to complete", site=SITE_ALLREDUCE)
    run.outcome("crashed", exit_codes={0: 1, 1: 1})
    [finding] = judge("DDP504", run.model())
    assert finding.ranks == [0, 1] and "DDP501/DDP502" in finding.hint


def test_crash_before_init_names_the_ranks_left_waiting_in_init():
    run = RunBuilder(world_size=2, formed=False)
    run[0].init_enter()
    run[1].crash("ModuleNotFoundError", "No module named 'wandb'", site=site(3, func="<module>"))
    run.outcome("crashed", exit_codes={0: -15, 1: 1})
    [finding] = judge("DDP504", run.model())
    assert finding.message == ("rank 1 raised ModuleNotFoundError: No module named 'wandb' at train.py:3 "
                               "(step 0) while rank 0 was waiting in init_process_group at train.py:20")


# DDP505 ---------------------------------------------------------------------------------------

def never_formed(world_size: int = 2, **meta) -> RunBuilder:
    return RunBuilder(world_size=world_size, formed=False, **meta)


def test_script_passing_another_world_size_is_named_with_its_site():
    run = never_formed()
    run.all("init_enter", world_size=4)
    run.outcome("stalled", **STALLED)
    [finding] = judge("DDP505", run.model())
    assert finding.code == "DDP505" and finding.severity is Severity.ERROR
    assert finding.ranks == [0, 1]
    assert "the script passes world_size=4 at train.py:20 but the probe launched 2 processes" in finding.message
    assert finding.message.startswith("the process group never formed: ranks 0 and 1 entered "
                                      "init_process_group at train.py:20 and ranks 0 and 1 were still waiting")
    assert finding.location == Location("train.py", 20)
    assert "WORLD_SIZE" in finding.hint


def test_ranks_passing_the_same_rank_or_different_addresses_are_named():
    same_rank = never_formed()
    same_rank.all("init_enter", world_size=2, rank=0)
    same_rank.outcome("stalled", **STALLED)
    [finding] = judge("DDP505", same_rank.model())
    assert "ranks 0 and 1 all pass rank=0 at train.py:20" in finding.message

    addresses = never_formed()
    addresses[0].init_enter(init_method="tcp://10.0.0.1:29500")
    addresses[1].init_enter(init_method="tcp://localhost:29500")
    addresses.outcome("stalled", **STALLED)
    [finding] = judge("DDP505", addresses.model())
    assert ("the ranks pass different init_method values: rank 0 'tcp://10.0.0.1:29500', "
            "rank 1 'tcp://localhost:29500'") in finding.message


def test_crash_inside_init_is_reported_here_with_its_traceback_not_as_ddp504():
    run = never_formed()
    run.all("init_enter")
    run[1].crash("RuntimeError", "The server socket has failed to listen on any local network address.",
                 site=site(20))
    run.outcome("crashed", exit_codes={0: -15, 1: 1})
    [finding] = judge("DDP505", run.model())
    assert "rank 1 failed inside init_process_group: RuntimeError: The server socket" in finding.message
    assert "rank 1:\nTraceback" in finding.evidence["detail"]
    assert judge("DDP504", run.model()) == []


def test_rank_that_never_called_init_and_a_rank_that_never_started_are_named():
    run = never_formed(world_size=3)
    run[0].init_enter()
    del run.ranks[2]
    run.outcome("stalled", **STALLED)
    [finding] = judge("DDP505", run.model())
    assert "rank 1 never called init_process_group (rank 1 was last seen at step 0)" in finding.message
    assert "rank 2 left no telemetry (never started)" in finding.message
    assert finding.ranks == [0, 1, 2]


def test_hard_coded_world_size_of_one_makes_every_rank_train_alone():
    run = RunBuilder(world_size=2, formed=False)
    for rank in (0, 1):
        run[rank].init_enter(world_size=1, rank=0)
        run[rank].init(world_size=1)
    [finding] = judge("DDP505", run.model())
    assert finding.message == ("ranks 0 and 1 formed process groups of world_size=1 but the probe launched "
                               "2 processes: the script passes world_size=1 at train.py:20, so the ranks "
                               "do not train together")


def test_formed_groups_pass_and_scripts_without_init_are_skipped():
    assert judge("DDP505", RunBuilder(world_size=2).model()) == []
    plain = never_formed()
    plain.all("end", "script_exit")
    plain.outcome("completed")
    assert isinstance(judge("DDP505", plain.model()), Skipped)
    stuck_before_init = never_formed()
    stuck_before_init.outcome("stalled", **STALLED)
    [finding] = judge("DDP505", stuck_before_init.model())
    assert finding.message.startswith("no rank reached init_process_group before the run stalled")


def test_stack_paths_are_shown_as_the_telemetry_names_the_file():
    run = RunBuilder(world_size=2)
    run.all("train_steps", 1)  # sites say "train.py"; py-spy says /home/u/proj/train.py
    run[0].signal_dump = faulthandler_dump(line=57)
    run[1].signal_dump = faulthandler_dump(line=57)
    run.outcome("stalled", **STALLED)
    [finding] = judge("DDP503", run.model())
    assert "ranks 0 and 1 all wait in all_reduce at train.py:57" in finding.message
    assert finding.location == Location("train.py", 57)


def test_stall_at_a_thousand_ranks_reads_on_one_screen():
    """128 nodes x 8: the message names the nodes by their first few and a count, the step counts
    by group, and the detail lists the odd ranks out and "… N more ranks like rank R" (the Ranks
    table's summary), not 1,024 lines."""
    world = 1024
    run = RunBuilder(world_size=world, nnodes=128, nproc_per_node=8)
    for rank in range(world):
        run[rank].train_steps(3 if rank < 600 else 2)
    stuck_in_all_reduce(run, 0)
    stacks = [waiting_in(0)] + [running(r) for r in range(1, world)]
    for s in stacks:
        s.host = f"node {s.rank // 8} (n{s.rank // 8})"
    run.outcome("stalled", stacks=stacks, **STALLED)
    [finding] = judge("DDP503", run.model())
    assert ("ranks 1-1023 on node 0 (n0), node 1 (n1), node 2 (n2), node 3 (n3) and 124 more nodes are "
            "running spin at train.py:12") in finding.message
    assert finding.message.endswith("steps done: ranks 600-1023 → 2, ranks 0-599 → 3")
    detail = finding.evidence["detail"].splitlines()
    assert len(detail) < 20
    assert "… 420 more ranks like rank 600 (step 2)" in detail
    assert "… 595 more ranks like rank 1 (step 3)" in detail
    assert detail[2].startswith("rank 0: step 3, last collective all_reduce of [3] float32")
    assert len(finding.evidence["per_rank"]) == world  # the evidence keeps every rank


def test_a_crash_record_followed_by_the_ranks_own_steps_is_not_believed():
    # a relay injected a crash for rank 1 at step 3; rank 1's own records go on to step 10
    run = RunBuilder(world_size=2)
    run.all("train_steps", 3)
    run[1].crash("ValueError", "forged", site=site(44, func="collate"))
    run.all("train_steps", 7)
    run.outcome("completed", exit_codes={0: 0, 1: 0})
    model = run.model()
    assert model.ranks[1].crash is None and model.ranks[1].contradicted_crash is not None
    assert judge("DDP504", model) == [] or isinstance(judge("DDP504", model), Skipped)


# A crash before init_process_group: one cause, one finding, advice for that cause --------------

ORDINAL = ("CUDA error: invalid device ordinal\nGPU device may be out of range, do you have enough "
           "GPUs?")


def crashed_before_init(message: str = ORDINAL, exc: str = "AcceleratorError") -> RunBuilder:
    """Two ranks on a one-GPU node: rank 1's set_device(1) fails before init_process_group while
    rank 0 waits in it (as an H100 run of torchrun's default two processes did)."""
    run = never_formed()
    run[0].init_enter(backend="nccl")
    run[1].crash(exc, message, site=site(18, func="main"))
    run.outcome("crashed", exit_codes={0: -15, 1: 1})
    return run


def test_a_crash_before_init_is_ddp504s_alone_with_the_launch_advice_for_a_missing_gpu():
    run = crashed_before_init()
    [finding] = judge("DDP504", run.model())
    assert finding.message.startswith("rank 1 raised AcceleratorError: CUDA error: invalid device ordinal")
    assert "waiting in init_process_group" in finding.message
    assert "--nproc-per-node" in finding.hint and "LOCAL_RANK" in finding.hint
    assert judge("DDP505", run.model()) == []  # its consequence, not a second error
    # twin: any other crash before init keeps the plain advice, and still one finding
    other = crashed_before_init("No module named 'wandb'", "ModuleNotFoundError")
    [finding] = judge("DDP504", other.model())
    assert "--nproc-per-node" not in finding.hint and "traceback" in finding.hint
    assert judge("DDP505", other.model()) == []


def test_ddp505_stays_when_the_ranks_that_entered_disagree_beside_the_crash():
    run = never_formed(world_size=3)
    run[0].init_enter(world_size=4)
    run[1].init_enter(world_size=4)
    run[2].crash("AcceleratorError", ORDINAL, site=site(18, func="main"))
    run.outcome("crashed", exit_codes={0: -15, 1: -15, 2: 1})
    [finding] = judge("DDP505", run.model())
    assert "world_size=4" in finding.message and "rank 2 never called init_process_group" in finding.message


def test_a_job_a_crash_stopped_is_not_also_a_job_that_never_trained():
    from ddpdoctor.probe.report import judged_on_training

    incomplete, notes = [], []
    assert judged_on_training(crashed_before_init().model(), incomplete, notes) == ""
    assert incomplete == []
    # twin: every rank returned without a step and nothing crashed: incomplete, with the hint
    idle = never_formed()
    idle.all("end", "script_exit")
    idle.outcome("completed")
    assert "INCOMPLETE" in judged_on_training(idle.model(), incomplete, notes)
    assert any("never trained" in line for line in incomplete)
