"""Node 0 takes other nodes' records in slices: one gather.poll() stops at its time budget with the
rest still queued in the links (the launcher's loop runs its watchdog, stall clock and interrupt
check between slices: at 1,024 ranks one unbounded poll ran 7 s), and the polls after it deliver
every record, each rank's in order, none twice. Loopback sockets, no subprocess."""

from __future__ import annotations

import json

import pytest

from tests.helpers.gather_peer import FakeNode, until
from ddpdoctor.probe.launch.node_gather import NodeGather
from tests.helpers.ports import free_port

JOB = "job-under-test"
NPROC = 2  # node 1 runs ranks 2 and 3, node 2 ranks 4 and 5
MESSAGES = 120  # per node: a backlog many budgets long


class TickClock:
    """A clock that moves on `tick` each time it is read: the budget counted in reads, so what the
    test proves does not depend on how fast (or loaded) this machine is."""

    def __init__(self, tick: float) -> None:
        self.now, self.tick = 0.0, tick

    def __call__(self) -> float:
        self.now += self.tick
        return self.now


class Recorder:
    """Stands where the launcher's watchdog is (gather.watches): the steps each rank was handed."""

    def __init__(self) -> None:
        self.steps: dict[int, list[int]] = {}

    def forwarded(self, rank: int, records: list[dict]) -> None:
        self.steps.setdefault(rank, []).extend(r["step"] for r in records)


def step_line(step: int) -> str:
    return json.dumps({"kind": "step", "t": 1000.0 + step, "step": step, "backward_iterations": 1,
                       "allreduce_rounds": 1})


def sent_by(node_rank: int) -> dict[int, list[str]]:
    """What a node sends, one message per line: its two ranks' steps, taking turns."""
    ranks = [node_rank * NPROC, node_rank * NPROC + 1]
    return {rank: [step_line(k) for k in range(1, MESSAGES // 2 + 1)] for rank in ranks}


def send_backlog(node: FakeNode, node_rank: int) -> dict[int, list[str]]:
    sent = sent_by(node_rank)
    for k in range(MESSAGES // 2):
        for rank, rank_lines in sent.items():
            node.send("file", name=f"rank-{rank}.jsonl", data=rank_lines[k] + "\n")
    return sent


@pytest.fixture
def gather(tmp_path):
    gather = NodeGather(str(tmp_path), free_port(), 3, "node0", "127.0.0.1", NPROC, job=JOB)
    yield gather
    gather.close()


def joined(gather: NodeGather, node_rank: int) -> FakeNode:
    node = FakeNode(gather.port, JOB)
    assert node.hello(node_rank=node_rank, nproc=NPROC)["t"] == "welcome"
    assert until(lambda: node_rank in gather.links)
    return node


def queued(gather: NodeGather, node_rank: int) -> int:
    return gather.links[node_rank].inbox.qsize()


def test_a_poll_stops_at_its_budget_and_the_next_polls_deliver_every_record_in_order(gather, tmp_path):
    recorder = Recorder()
    gather.watches.append(recorder)
    nodes = [joined(gather, 1), joined(gather, 2)]
    sent = {**send_backlog(nodes[0], 1), **send_backlog(nodes[1], 2)}
    assert until(lambda: queued(gather, 1) == MESSAGES and queued(gather, 2) == MESSAGES)

    gather.clock = TickClock(0.001)  # a budget of 0.01 s: about ten reads of the clock
    assert gather.poll(budget_s=0.01) is True  # behind: it stopped with messages queued
    left = queued(gather, 1) + queued(gather, 2)
    assert 0 < 2 * MESSAGES - left <= 10
    # The next poll starts with the other node: a busy node does not keep the rest waiting.
    assert gather.poll(budget_s=0.01) is True
    assert queued(gather, 1) < MESSAGES and queued(gather, 2) < MESSAGES

    polls = 2
    while gather.poll(budget_s=0.01):
        polls += 1
        assert polls < 10 * MESSAGES
    assert polls >= 2 * MESSAGES // 10
    assert queued(gather, 1) == queued(gather, 2) == 0
    assert recorder.steps == {rank: list(range(1, MESSAGES // 2 + 1)) for rank in sent}
    for rank, rank_lines in sent.items():
        assert (tmp_path / f"rank-{rank}.jsonl").read_text().splitlines() == rank_lines
    assert all(s.status == "connected" for s in gather.nodes.values())
    for node in nodes:
        node.close()


def test_a_poll_without_a_budget_takes_all_that_is_queued(gather):
    node = joined(gather, 1)
    send_backlog(node, 1)
    assert until(lambda: queued(gather, 1) == MESSAGES)
    gather.clock = TickClock(1.0)  # every read of the clock past any budget
    assert gather.poll(budget_s=None) is False
    assert queued(gather, 1) == 0
    node.close()


def test_a_node_that_closed_after_its_final_is_finished_not_lost_while_its_backlog_is_taken(gather, tmp_path):
    recorder = Recorder()
    gather.watches.append(recorder)
    node = joined(gather, 1)
    sent = send_backlog(node, 1)
    node.send("final", outcome={"status": "completed", "exit_codes": {"2": 0, "3": 0}, "ended_at": None,
                                "log_tail": ""})
    node.close()
    link = gather.links[1]
    assert until(lambda: link.closed_reason is not None and queued(gather, 1) == MESSAGES + 1)

    gather.clock = TickClock(0.001)
    while gather.poll(budget_s=0.01):
        assert gather.nodes[1].status == "connected"  # its final is still queued: not lost
    state = gather.nodes[1]
    assert state.status == "finished" and state.outcome == "completed"
    assert recorder.steps == {rank: list(range(1, MESSAGES // 2 + 1)) for rank in sent}
    for rank, rank_lines in sent.items():
        assert (tmp_path / f"rank-{rank}.jsonl").read_text().splitlines() == rank_lines
