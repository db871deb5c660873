"""Slow is not stuck (issue 28): the watchdog's decision over what it saw in a quiet spell, and
what the report says about time spent outside steps, fed recorded facts."""

from __future__ import annotations

import json

from ddpdoctor.core.registry import Incomplete, get_check
from ddpdoctor.probe.analysis import outside_steps
from ddpdoctor.probe.run_model.busy_or_blocked import STARTING_CPU, JobLook, Pending, RankLook, judge as judge_looks
from ddpdoctor.probe.run_model.stack_view import StackView
from ddpdoctor.probe.run_model.outcome import RankStack
from tests.helpers.telemetry_builders import SITE_ALLREDUCE, T0, RunBuilder, running, site, stack, waiting_in


def view(rank_stack: RankStack) -> StackView:
    return StackView(rank_stack.rank, rank_stack.frames, rank_stack.method, rank_stack.idle)


def sleeping(rank: int, func: str = "load_dataset", line: int = 41) -> StackView:
    """py-spy: idle in time.sleep (C, no frame) called from the user's function."""
    return view(stack(rank, [(func, "train.py", line), ("<module>", "train.py", 90)], idle=True))


BARRIER = Pending("barrier", site(60, func="wait_for_cache"), T0)


def test_every_rank_sleeping_at_one_user_line_with_nothing_pending_is_busy():
    looks = [RankLook(r, stack=sleeping(r), moved=False, cpu_share=0.0) for r in (0, 1)]
    verdict = judge_looks(looks)
    assert not verdict.blocked and verdict.working == [0, 1]
    assert verdict.reason == "ranks 0-1 in load_dataset() at train.py:41, no collective pending"


def test_ranks_spending_cpu_in_their_own_code_are_busy_even_without_py_spy():
    looks = [RankLook(r, stack=StackView(r, sleeping(r).frames, "faulthandler"), cpu_share=0.97)
             for r in (0, 1)]
    assert not judge_looks(looks).blocked


def test_a_rank_waiting_in_a_barrier_while_its_peer_works_is_blocked_and_names_the_peer():
    looks = [RankLook(0, pending=BARRIER, stack=view(waiting_in(0, "barrier", line=60)), cpu_share=0.0),
             RankLook(1, stack=view(running(1, "tokenize", 33)), cpu_share=1.0)]
    verdict = judge_looks(looks)
    assert verdict.blocked and verdict.waiting == [0] and verdict.working == [1]
    assert "rank 0 waits in barrier at train.py:60" in verdict.reason
    assert verdict.reason.endswith("rank 1 never arrived")


def test_a_rank_waiting_while_its_peer_sleeps_in_a_polling_loop_is_blocked():
    """examples/hang_barrier.py: rank 1 polls for a marker file, rank 0 waits in the barrier."""
    looks = [RankLook(0, pending=BARRIER, stack=view(waiting_in(0, "barrier", line=60))),
             RankLook(1, stack=sleeping(1, "wait_for_val_cache", 55), moved=False, cpu_share=0.0)]
    assert judge_looks(looks).blocked


def test_every_rank_in_the_same_pending_collective_is_blocked_even_spinning_on_the_cpu():
    """A host thread spinning on a GPU wait spends CPU while blocked: the records decide."""
    pending = Pending("all_reduce", SITE_ALLREDUCE, T0)
    looks = [RankLook(r, pending=pending, stack=view(waiting_in(r)), cpu_share=1.0) for r in (0, 1)]
    verdict = judge_looks(looks)
    assert verdict.blocked and verdict.waiting == [0, 1]


def test_an_async_collective_left_open_does_not_make_a_rank_running_elsewhere_wait():
    """async_op=True writes no CollectiveDone: the stack, elsewhere in the user's code, wins."""
    pending = Pending("all_reduce", SITE_ALLREDUCE, T0)
    looks = [RankLook(r, pending=pending, stack=view(running(r, "build_dataset", 41)), cpu_share=0.9)
             for r in (0, 1)]
    assert not judge_looks(looks).blocked


def test_a_wait_inside_torch_distributed_without_a_record_counts_as_waiting():
    """A store wait or store-based barrier the instruments do not record: idle in torch.distributed."""
    looks = [RankLook(r, stack=view(waiting_in(r, "_store_based_barrier", line=20)), cpu_share=0.0)
             for r in (0, 1)]
    assert judge_looks(looks).blocked


def test_ranks_importing_torch_distributed_are_starting_not_waiting():
    importing = view(stack(0, [("_compile_bytecode", "<frozen importlib._bootstrap_external>", 729),
                               ("<module>", "torch/distributed/c10d_logger.py", 10),
                               ("<module>", "train.py", 3)], idle=None, method="faulthandler"))
    assert not judge_looks([RankLook(0, stack=importing), RankLook(1, stack=importing)]).blocked


def in_ddp_init(rank: int, *inner: tuple[str, str, int], idle: bool) -> StackView:
    """A rank inside DDP's constructor called at train.py:37, innermost frames first."""
    return view(stack(rank, [*inner, ("DistributedDataParallel.__init__", "torch/nn/parallel/distributed.py", 886),
                             ("main", "train.py", 37), ("<module>", "train.py", 53)], idle=idle))


def test_a_rank_still_running_inside_the_statement_its_peer_waits_in_is_late_not_elsewhere():
    """CI, loaded: rank 0 waited in DDP's constructor (its parameter check, a collective) while
    rank 1, at the same line, was still importing torch._dynamo for it: not a hang."""
    waits = in_ddp_init(0, ("_verify_param_shape_across_processes", "torch/distributed/utils.py", 286), idle=True)
    importing = in_ddp_init(1, ("<module>", "sympy/geometry/point.py", 28),
                            ("_find_and_load", "<frozen importlib._bootstrap>", 1176), idle=False)
    looks = [RankLook(0, stack=waits, cpu_share=0.11), RankLook(1, stack=importing, cpu_share=0.23)]
    verdict = judge_looks(looks)
    assert not verdict.blocked and verdict.waiting == [0] and verdict.working == [1]
    assert verdict.reason.endswith("rank 1 still running on the way there")
    # A slower backward: rank 0 waits in DDP's all-reduce under loss.backward(), rank 1 computes it.
    pending = Pending("DDP gradient all-reduce (bucket 0)", site(80, func="train_step"), T0)
    backward = [("backward", "torch/_tensor.py", 625), ("train_step", "train.py", 80), ("main", "train.py", 90)]
    looks = [RankLook(0, pending=pending, stack=view(stack(0, backward, idle=True)), cpu_share=0.0),
             RankLook(1, stack=view(stack(1, backward, idle=False)), cpu_share=1.0)]
    assert not judge_looks(looks).blocked


def test_a_rank_at_the_waiting_statement_but_not_running_is_what_its_peer_waits_for():
    waits = in_ddp_init(0, ("_verify_param_shape_across_processes", "torch/distributed/utils.py", 286), idle=True)
    stuck = in_ddp_init(1, ("read", "fsspec/spec.py", 12), idle=True)  # blocked in I/O inside it
    looks = [RankLook(0, stack=waits, cpu_share=0.0), RankLook(1, stack=stuck, moved=False, cpu_share=0.0)]
    assert judge_looks(looks).blocked


def test_ranks_waiting_in_two_statements_are_blocked_whatever_the_others_do():
    looks = [RankLook(0, pending=BARRIER, stack=view(waiting_in(0, "barrier", line=60))),
             RankLook(1, stack=view(waiting_in(1, "all_reduce", line=57))),
             RankLook(2, stack=view(running(2, "train_step", 60)), cpu_share=1.0)]
    verdict = judge_looks(looks)
    assert verdict.blocked and verdict.reason.endswith("rank 2 never arrived")


def test_a_rank_waiting_on_a_peer_that_ended_is_blocked():
    looks = [RankLook(0, done=True), RankLook(1, pending=Pending("DDP gradient all-reduce", site(60), T0))]
    verdict = judge_looks(looks)
    assert verdict.blocked and verdict.waiting == [1] and "rank 0 ended" in verdict.reason


def test_no_rank_left_while_nothing_progresses_is_stuck():
    assert judge_looks([]).blocked  # no rank process found at all, the job's CPU not measured


def test_no_rank_yet_while_the_job_s_processes_work_is_start_up_not_a_stuck_launch():
    """torchrun's agent and the ranks importing torch on a loaded machine (CI: 15 s and more)."""
    verdict = judge_looks([], JobLook(cpu=0.4))
    assert not verdict.blocked
    assert verdict.reason == "no rank has started yet; the job's processes are starting up (using 0.4 CPUs)"


def test_no_rank_yet_while_the_job_s_processes_are_idle_is_a_launch_that_waits():
    """torchrun's agent in a rendezvous that never completes used 0.001 CPUs (measured)."""
    verdict = judge_looks([], JobLook(cpu=0.001))
    assert verdict.blocked and "idle" in verdict.reason
    assert judge_looks([], JobLook(cpu=STARTING_CPU)).blocked is False


def test_no_rank_yet_under_launcher_none_is_the_script_s_own_code_whatever_its_cpu():
    verdict = judge_looks([], JobLook(cpu=0.0, script_is_launcher=True))
    assert not verdict.blocked and "the script is in its own code before starting its ranks" in verdict.reason


def test_every_rank_ended_while_the_job_has_not_is_stuck_whatever_the_job_s_cpu():
    verdict = judge_looks([RankLook(r, done=True) for r in (0, 1)], JobLook(cpu=1.0))
    assert verdict.blocked and verdict.reason == "every rank has ended, and the job has not"


def test_every_rank_waiting_in_init_process_group_is_blocked_from_the_records_alone():
    pending = Pending("init_process_group", site(20), T0)
    assert judge_looks([RankLook(r, pending=pending) for r in (0, 1)]).blocked


# time outside steps, and the incomplete verdict at --timeout ---------------------------------

def looks_file(tmp_path, *looks: dict) -> None:
    (tmp_path / "watch.jsonl").write_text("".join(json.dumps(look) + "\n" for look in looks))


def look(t: float, where: str, quiet: float = 2.0) -> dict:
    return {"t": t, "quiet_s": quiet, "blocked": False, "waiting": [], "working": [0, 1],
            "places": [{"ranks": [0, 1], "where": where}], "ranks": {}}


def test_start_up_and_a_pause_between_steps_are_measured_with_where_they_were_spent(tmp_path):
    run = RunBuilder(world_size=2, started=T0)
    for builder in run.ranks.values():
        builder.t = T0 + 40.0  # 40 s of data preparation before the first step
        builder.train_steps(10)
        builder.t += 25.0  # every rank evaluates for 25 s after step 10
        builder.train_steps(10)
    run.outcome("completed")
    run.write(tmp_path)
    looks_file(tmp_path, look(T0 + 10, "in load_dataset() at train.py:41"),
               look(T0 + 30, "in load_dataset() at train.py:41", quiet=22.0),
               look(T0 + 50, "in evaluate() at train.py:60", quiet=10.0))
    model = run.load(tmp_path)
    model.watch = outside_steps.load_looks(tmp_path)
    metrics = outside_steps.metrics(model)
    assert 40.0 <= metrics["startup_s"] < 41.0
    assert metrics["startup_where"] == "ranks 0-1 in load_dataset() at train.py:41"
    [pause] = metrics["pauses"]
    assert pause["after_step"] == 10 and 25.0 <= pause["s"] < 25.5
    assert pause["where"] == "ranks 0-1 in evaluate() at train.py:60"
    assert outside_steps.notes(model)[1].startswith("pause: 25.")


def test_timeout_over_ranks_that_never_blocked_is_incomplete_with_where_the_time_went(tmp_path):
    run = RunBuilder(world_size=2, timeout_s=300.0)
    run.outcome("timeout_busy", stall_s=290.0, stall_timeout_s=8.0, wall_s=300.0)
    run.write(tmp_path)
    looks_file(tmp_path, look(T0 + 200, "in build_dataset() at train.py:41", quiet=280.0))
    model = run.load(tmp_path)
    model.watch = outside_steps.load_looks(tmp_path)
    verdict = get_check("DDP503").func(model)
    assert isinstance(verdict, Incomplete)
    assert ("ranks 0-1 spent 290 s in build_dataset() at train.py:41 before their first step"
            in verdict.reason)
    assert "raise --timeout" in verdict.reason


def test_ranks_alive_but_unobserved_are_no_evidence_of_a_hang():
    """py-spy timing out under load leaves no stack and no CPU share: that is not blocking
    (issue 28), so the watchdog watches on and --timeout bounds the job."""
    looks = [RankLook(rank=r) for r in (0, 1)]
    verdict = judge_looks(looks)
    assert not verdict.blocked and "could be observed" in verdict.reason


def test_timeout_before_any_rank_started_says_the_launch_was_still_starting(tmp_path):
    run = RunBuilder(world_size=2, ranks=[], timeout_s=15.0)
    run.outcome("timeout_busy", stall_s=15.0, wall_s=15.0)
    run.write(tmp_path)
    (tmp_path / "watch.jsonl").write_text(json.dumps(
        {"t": T0 + 14, "quiet_s": 14.0, "blocked": False, "waiting": [], "working": [], "places": [],
         "ranks": {}, "job_cpu": 0.46}) + "\n")
    model = run.load(tmp_path)
    model.watch = outside_steps.load_looks(tmp_path)
    verdict = get_check("DDP503").func(model)
    assert isinstance(verdict, Incomplete)
    assert ("no rank had started: the launcher and its processes were starting up for 15 s "
            "(using 0.5 CPUs at the last look)" in verdict.reason)
    assert verdict.reason.endswith("raise --timeout: its start-up alone took longer")


def test_timeout_while_a_rank_waits_for_a_peer_still_on_its_way_says_both_places(tmp_path):
    run = RunBuilder(world_size=2, timeout_s=60.0)
    run.outcome("timeout_busy", stall_s=50.0, wall_s=60.0)
    run.write(tmp_path)
    places = [{"ranks": [0], "where": "waits in DistributedDataParallel.__init__ at train.py:37"},
              {"ranks": [1], "where": "in DistributedDataParallel.__init__ at train.py:37"}]
    looks_file(tmp_path, {**look(T0 + 50, "", quiet=50.0), "places": places})
    model = run.load(tmp_path)
    model.watch = outside_steps.load_looks(tmp_path)
    verdict = get_check("DDP503").func(model)
    assert ("rank 0 spent 50 s waiting in DistributedDataParallel.__init__ at train.py:37; rank 1 spent "
            "50 s in DistributedDataParallel.__init__ at train.py:37 before their first step;") in verdict.reason


def test_a_frame_of_an_installed_package_is_not_the_user_s_once_its_path_is_shortened(tmp_path, monkeypatch):
    """Stacks name library files relative to site-packages ("lightning/fabric/wrappers.py"):
    the live look named a Lightning rank importing "at lightning/fabric/wrappers.py:33"."""
    from ddpdoctor.core.paths import OWN_DIR
    from ddpdoctor.probe.run_model.stack_view import is_user_file

    importing = in_ddp_init(1, ("<module>", "rich/console.py", 28),
                            ("_find_and_load", "<frozen importlib._bootstrap>", 1176), idle=False)
    assert importing.user_frame.file == "train.py" and importing.user_frame.line == 37
    assert not is_user_file("psutil/__init__.py") and is_user_file("train.py")
    # A checkout of the user's (or of this project) in a folder named "ddpdoctor" is the user's;
    # ddpdoctor's own package is not, nor its path made relative.
    assert is_user_file("/home/me/ddpdoctor/examples/spawn/hang_in_rank.py")
    assert not is_user_file(OWN_DIR + "probe/inrank/bootstrap.py")
    assert not is_user_file("ddpdoctor/probe/inrank/bootstrap.py")
    # The job's own folder named like an installed package is the user's.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "psutil").mkdir()
    (tmp_path / "psutil" / "probe_me.py").write_text("")
    is_user_file.cache_clear()
    try:
        assert is_user_file("psutil/probe_me.py")
    finally:
        is_user_file.cache_clear()
