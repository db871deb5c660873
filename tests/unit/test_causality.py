"""Cause before consequence (analysis/rank_state.py): an error after the moment the probe began
ending the job (Outcome.ended_at, moved to each node's clock) is the teardown's, never a crash
of its own; one node or many, the rank-0-only collective is DDP502 at its line."""

from __future__ import annotations

from tests.helpers.telemetry_builders import SITE_ALLREDUCE, RunBuilder, judge, running, waiting_in

PEER_GONE = "[../third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:28868"
STALLED = dict(stall_s=5.0, stall_timeout_s=5.0)


def rank0_only_all_reduce(crash_after_s: float, node1_clock_ahead_s: float = 0.0, nodes: bool = True):
    """Two ranks (on two nodes): rank 0 alone enters an all_reduce; node 0's probe ends the job
    at the stall; rank 1 fails with its peer gone `crash_after_s` later (its clock)."""
    run = RunBuilder(world_size=2)
    run.all("train_steps", 4)
    run[0].collective("all_reduce", [[1]], site=SITE_ALLREDUCE, done=False)
    ended_at = run[0].t + 1.0
    run[1].t = ended_at + node1_clock_ahead_s + crash_after_s - 0.01
    run[1].crash("RuntimeError", PEER_GONE, site=SITE_ALLREDUCE)
    run.outcome("stalled", exit_codes={1: 1}, stacks=[waiting_in(0), running(1)], **STALLED)
    outcome = run._outcome
    outcome.ended_at = ended_at
    if nodes:
        outcome.nodes = [{"node_rank": 0, "ranks": [0], "status": "connected"},
                         {"node_rank": 1, "ranks": [1], "status": "finished", "outcome": "ended",
                          "clock_offset_s": node1_clock_ahead_s, "ended_at": None}]
    run.meta.nnodes = 2 if nodes else 1
    return run.model()


def test_a_peer_lost_after_the_probe_ended_the_job_is_not_a_crash_and_ddp502_stands():
    model = rank0_only_all_reduce(crash_after_s=0.3)
    assert judge("DDP504", model) == []
    [skipped] = judge("DDP502", model)
    assert skipped.location.line == SITE_ALLREDUCE.line


def test_node_clocks_are_compared_through_their_offset():
    # Node 1's clock is 100 s ahead: its rank's error 0.3 s after the end is still after it...
    assert judge("DDP504", rank0_only_all_reduce(0.3, node1_clock_ahead_s=100.0)) == []
    # ...and one 2 s before the end (node 0's clock) is a crash of its own, whatever its clock says.
    [crash] = judge("DDP504", rank0_only_all_reduce(-2.0, node1_clock_ahead_s=100.0))
    assert crash.ranks == [1]


def test_one_node_gives_the_same_verdict():
    model = rank0_only_all_reduce(crash_after_s=0.3, nodes=False)
    assert judge("DDP504", model) == []
    assert [f.location.line for f in judge("DDP502", model)] == [SITE_ALLREDUCE.line]


def test_an_exit_code_on_a_node_the_probe_ended_is_a_consequence():
    run = RunBuilder(world_size=2)
    run.all("train_steps", 2)
    run.outcome("stalled", exit_codes={0: -15, 1: 1}, **STALLED)
    run._outcome.ended_at = run[0].t + 1.0
    assert judge("DDP504", run.model()) == []


def test_a_large_worlds_rank_table_is_groups_and_outliers_on_one_screen():
    from ddpdoctor.probe.words.large_world import summarised

    columns = ["rank", "node", "host", "pid", "steps", "batches", "collectives", "last", "exit"]
    rows = [[r, r // 8, f"n{r // 8}", 100 + r, 30 + r % 2, 30, 31, "running", -15] for r in range(1024)]
    rows[0][7] = "waiting in all_reduce #30 at train.py:27"
    rows[517][8] = 1
    shown = summarised(rows, columns)
    assert len(shown) <= 12
    assert shown[0][0] == 0 and [r[0] for r in shown if r[8] == 1] == [517]  # the odd ones out
    assert shown[-1][7] == "1,018 more ranks like rank 1" and shown[-1][4] == "30-31"
    assert summarised(rows[:32], columns) == rows[:32]


def test_a_multi_node_verdict_without_a_token_says_it_relied_on_an_unauthenticated_port():
    from ddpdoctor.probe.report import UNAUTHENTICATED, gather_notes

    model = rank0_only_all_reduce(crash_after_s=0.3)
    model.outcome.nodes[0]["authenticated"] = False
    assert gather_notes(model) == [UNAUTHENTICATED]
    model.outcome.nodes[0].update(authenticated=True, refusals=["refused a connection from 10.0.0.9: x"])
    assert gather_notes(model) == ["refused a connection from 10.0.0.9: x"]


def test_an_error_a_rank_meets_after_the_probes_step_limit_ended_it_is_the_probes_doing():
    # Lightning's own launcher: rank 0 stops at the step limit and leaves; rank 1, stopped too and
    # running its exit handlers, is sent SIGTERM, and Lightning's handler broadcasts to rank 0.
    run = RunBuilder(world_size=2)
    run.all("train_steps", 6)
    run.all("end", "max_steps")
    run[1].collective("broadcast", [[1]], site=SITE_ALLREDUCE, done=False)
    run[1].error_in_flight("RuntimeError", PEER_GONE, site=SITE_ALLREDUCE)
    run.outcome("completed", exit_codes={0: 0})
    assert judge("DDP504", run.model()) == []
    # The same error before the rank's own stop is the rank's crash.
    run = RunBuilder(world_size=2)
    run.all("train_steps", 6)
    run[0].end("max_steps")
    run[1].collective("broadcast", [[1]], site=SITE_ALLREDUCE, done=False)
    run[1].error_in_flight("RuntimeError", "bad batch", site=SITE_ALLREDUCE)
    run.outcome("completed", exit_codes={0: 0})
    [crash] = judge("DDP504", run.model())
    assert crash.ranks == [1]
