"""Node 0's gather port against peers that are not the job's honest nodes (loopback, real
sockets, node 0's NodeGather in this process): nothing they send is believed or kept beyond
the stated bounds, and each one is dropped with a line saying why."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from tests.helpers.gather_peer import FakeNode, until
from ddpdoctor.probe.launch import node_gather, node_wire as wire
from ddpdoctor.probe.launch.node_gather import NodeGather
from ddpdoctor.probe.launch.node_reporter import NodeReporter
from tests.helpers.ports import free_port

JOB = "job-under-test"


@pytest.fixture
def gather(tmp_path):
    made = []

    def make(nnodes: int = 2, nproc: int = 1, key=None) -> NodeGather:
        g = NodeGather(str(tmp_path), free_port(), nnodes, "node0", "127.0.0.1", nproc, key=key, job=JOB)
        made.append(g)
        return g

    yield make
    for g in made:
        g.close()


def record(rank: int, world: int = 2, **over) -> str:
    data = {"kind": "start", "t": 1.0, "rank": rank, "local_rank": 0, "world_size": world, "pid": 9,
            "host": "h", "script": "s", "argv": [], "python": "3", "torch": "2", **over}
    return json.dumps(data) + "\n"


def dropped(g: NodeGather, node_rank: int = 1) -> str:
    assert until(lambda: (g.poll(), g.nodes[node_rank].status)[1] == "lost"), g.nodes[node_rank]
    return g.nodes[node_rank].reason


def test_an_honest_node_is_welcomed_and_its_rank_file_stored(gather, tmp_path):
    g = gather()
    node = FakeNode(g.port, JOB)
    assert node.hello()["t"] == "welcome"
    node.send("file", name="rank-1.jsonl", data=record(1))
    assert until(lambda: (g.poll(), (tmp_path / "rank-1.jsonl").exists())[1])
    assert g.nodes[1].status == "connected" and g.nodes[1].ranks == [1]


@pytest.mark.parametrize("name, data, why", [
    ("rank-\u0660.jsonl", record(0), "is not rank-<R>"),        # Arabic-Indic zero: not rank 0
    ("rank-00.jsonl", record(0), "is not rank-<R>"),
    ("rank-0.jsonl", record(0), "not one of node 1"),          # node 0's own rank
    ("rank-9999999.jsonl", record(1), "outside the launched world"),
    ("rank-1.jsonl", record(1, world=10 ** 7), "the launched world is 2"),
    ("rank-1.jsonl", '{"kind":"step","t":1.0,"step":"many"}\n', "step is"),
])
def test_a_node_writing_what_is_not_its_own_is_dropped_and_nothing_is_written(gather, tmp_path, name, data, why):
    g = gather()
    node = FakeNode(g.port, JOB)
    assert node.hello()["t"] == "welcome"
    node.send("file", name=name, data=data)
    assert why in dropped(g)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize("kind, fields", [
    ("stacks_reply", {"id": [1], "stacks": []}),
    ("final", {"outcome": {"status": "completed", "exit_codes": {"x": 0}}}),
    ("final", {"outcome": {"status": "completed", "exit_codes": {"1": "zero"}}}),
])
def test_malformed_messages_drop_the_node_without_a_crash(gather, kind, fields):
    g = gather()
    node = FakeNode(g.port, JOB)
    node.hello()
    node.send(kind, **fields)
    assert "bad message" in dropped(g)


def test_two_nodes_claiming_one_node_rank_and_a_per_node_nproc_mismatch_are_named(gather):
    g = gather(nnodes=3)
    first = FakeNode(g.port, JOB)
    assert first.hello(node_rank=1)["t"] == "welcome"
    second = FakeNode(g.port, JOB)
    answer = second.hello(node_rank=1)
    assert answer["t"] == "refused" and "two nodes were given --node-rank 1" in answer["reason"]
    third = FakeNode(g.port, JOB)
    answer = third.hello(node_rank=2, nproc=2)
    assert answer["t"] == "refused" and "--nproc-per-node 2 and node 0 runs 1" in answer["reason"]
    zero = FakeNode(g.port, JOB)
    assert "--node-rank 0" in zero.hello(node_rank=0)["reason"]
    assert g.nodes[1].status == "connected"  # the first node keeps its place


def test_another_jobs_node_is_refused(gather):
    g = gather()
    stranger = FakeNode(g.port, "another-job")
    stranger.send("hello", node_rank=1, nproc=1, host="x", addr="y", nonce="ab" * 16,
                  challenge=stranger.challenge())
    answer_line = stranger.read_line()
    # The refusal is framed with node 0's job, so the stranger cannot take it for its own.
    assert b'"t":"refused"' in answer_line and b"another job" in answer_line
    assert g.nodes[1].status == "never_connected"


def test_with_a_token_an_unauthenticated_node_is_refused_and_node0_must_prove_itself(gather, tmp_path):
    key = wire.job_token("s3cret-token")
    g = gather(key=key)
    unsigned = FakeNode(g.port, JOB)
    answer = unsigned.hello()
    assert answer["t"] == "refused" and "without a gather token" in answer["reason"]
    assert g.nodes[1].status == "never_connected"
    assert until(lambda: any("without a gather token" in r for r in g.refusals))
    # A node with the token does not believe a node 0 without it (a fake node 0 on the port).
    impostor = NodeGather(str(tmp_path / "x"), free_port(), 2, "fake", "127.0.0.1", 1, key=None, job=JOB)
    try:
        reporter = NodeReporter(str(tmp_path), "127.0.0.1", impostor.port, 1, time.monotonic() + 5,
                                key=key, job=JOB)
        assert until(lambda: (reporter.poll(lambda: ([], "")), reporter.lost_reason)[1] is not None)
        assert "not this job's node 0" in reporter.lost_reason and reporter.link is None
    finally:
        impostor.close()
    honest = FakeNode(g.port, JOB, key=key)
    assert honest.hello()["t"] == "welcome"


def test_pre_hello_floods_and_idle_connections_are_bounded_by_one_thread(gather):
    g = gather()
    threads_before = threading.active_count()
    flood = FakeNode(g.port, JOB)
    flood.raw(b"x" * (wire.MAX_HELLO * 4))
    assert flood.closed_by_peer()
    idle = []
    for _ in range(g.max_pending + 40):
        try:
            idle.append(socket.create_connection(("127.0.0.1", g.port), timeout=2))
        except OSError:
            break
    time.sleep(0.5)
    assert threading.active_count() <= threads_before + 1
    assert len(g._pending) <= g.max_pending
    for sock in idle:
        sock.close()
    # Idle connections say no hello and are closed within the hello timeout; the job's node
    # still gets in.
    node = FakeNode(g.port, JOB)
    assert node.hello()["t"] == "welcome"


def test_a_byte_quota_per_node_drops_a_node_that_floods_telemetry(gather, monkeypatch):
    monkeypatch.setattr(wire, "RANK_QUOTA", 64 * 1024)
    g = gather()
    node = FakeNode(g.port, JOB)
    node.hello()
    line = record(1)
    for _ in range(3):
        node.send("file", name="rank-1.jsonl", data=line * (30 * 1024 // len(line)))
    assert "MiB of telemetry" in dropped(g)


def test_a_node_pointed_at_a_port_where_nothing_answers_says_so_within_seconds(tmp_path, capsys, monkeypatch):
    from ddpdoctor.probe.launch import node_link, node_reporter

    # The hint comes at a try at least HINT_AFTER_S after the first, and a try keeps connecting
    # for 1 s (node 0 may start late): two tries of 0.1 s, the second 0.5 s after the first, say
    # it in ~0.6 s rather than 2 s. (A shorter HINT_AFTER_S alone gains nothing: the second try
    # still ends 2 s on.) Real sockets, a real refused port; only the wait is shorter.
    monkeypatch.setattr(node_reporter, "HINT_AFTER_S", 0.4)
    monkeypatch.setattr(node_reporter, "connect",
                        lambda host, port, deadline: node_link.connect(host, port, min(deadline, time.monotonic() + 0.1)))
    reporter = NodeReporter(str(tmp_path), "127.0.0.1", free_port(), 1, time.monotonic() + 30, job=JOB)
    assert until(lambda: (reporter.poll(lambda: ([], "")), "differs from node 0's" in capsys.readouterr().err)[1],
                 timeout=10)
    assert reporter.lost_reason is None  # still trying: node 0 may only be late


def test_with_a_token_a_recorded_hello_played_again_takes_no_node_slot(gather):
    """A signed hello recorded from one connection (a node that was refused, or whose hello was
    captured on the way) is sent again on another: it answers that connection's challenge, not
    the new one, so it is refused and the node's place stays free for the node itself."""
    key = wire.job_token("s3cret-token")
    g = gather(nnodes=3, key=key)
    first = FakeNode(g.port, JOB, key=key)
    assert first.hello(node_rank=1)["t"] == "welcome"
    # A signed hello for node 2, recorded as it went to node 0 on a connection of its own.
    recorder = FakeNode(g.port, JOB, key=key)
    recorder.challenge()
    recorded = recorder.codec.encode("hello", {"node_rank": 2, "nproc": 1, "host": "n2", "addr": "127.0.0.1",
                                               "nonce": recorder.nonce, "challenge": recorder.challenge()})
    recorder.close()
    replayer = FakeNode(g.port, JOB, key=key)
    replayer.challenge()
    replayer.raw(recorded)
    answer = replayer.codec.decode(replayer.read_line(), frozenset({"welcome", "refused"}))
    assert answer["t"] == "refused" and "replayed hello" in answer["reason"]
    assert until(lambda: any("replayed hello" in r for r in g.refusals))
    assert g.nodes[2].status == "never_connected"
    node2 = FakeNode(g.port, JOB, key=key)
    assert node2.hello(node_rank=2)["t"] == "welcome"
    assert until(lambda: g.nodes[2].status == "connected")


def test_a_hello_sent_in_pieces_still_gets_in_and_a_half_hello_is_closed_at_the_timeout(gather, monkeypatch):
    g = gather()
    node = FakeNode(g.port, JOB)
    line = node.codec.encode("hello", {"node_rank": 1, "nproc": 1, "host": "fake", "addr": "127.0.0.1",
                                       "nonce": node.nonce, "challenge": node.challenge()})
    node.raw(line[:1])  # one byte, no newline: parked, not spun on
    assert until(lambda: len(g._parked) == 1)
    time.sleep(0.3)
    node.raw(line[1:])
    answer = node.codec.decode(node.read_line(), frozenset({"welcome", "refused"}))
    assert answer["t"] == "welcome" and not g._parked
    # The half hello is about the timeout closing it, not its length: 0.2 s, not 5 s of waiting.
    monkeypatch.setattr(node_gather, "HELLO_TIMEOUT_S", 0.2)
    half = FakeNode(g.port, JOB)
    half.challenge()
    half.raw(b"x")
    assert half.closed_by_peer(timeout=10)
    assert not g._parked and not g._pending


def test_unsolicited_stack_replies_count_against_the_quota_and_are_not_kept(gather, monkeypatch):
    monkeypatch.setattr(wire, "RANK_QUOTA", 256 * 1024)
    g = gather()
    node = FakeNode(g.port, JOB)
    node.hello()
    stack = {"rank": 1, "pid": 5, "frames": [{"func": "f", "file": "x.py", "line": 1}] * 100, "text": "t" * 1000}
    for i in range(3):
        node.send("stacks_reply", id=1000 + i, stacks=[stack])
    assert until(lambda: (g.poll(), g.received.get(1, 0))[1] > 0)
    assert g._replies == {}  # nobody asked: nothing kept
    for i in range(200):
        try:
            node.send("stacks_reply", id=2000 + i, stacks=[stack])
        except OSError:
            break
    assert "MiB of telemetry" in dropped(g)
    assert g._replies == {}



@pytest.mark.parametrize("host, resolved", [("localhost", "127.0.0.1"), ("LOCALHOST.", "127.0.0.1"),
                                            ("node0.example", "127.0.1.1")])
def test_the_gather_port_binds_node0s_own_address_never_every_interface(host, resolved):
    from ddpdoctor.probe.driver import _own_address

    bind = _own_address(host, resolved)
    assert bind not in ("", "0.0.0.0")
    if host.lower().startswith("localhost"):
        assert bind == "127.0.0.1"
    g = NodeGather("/tmp", free_port(), 2, "node0", bind, 1, key=None, job=JOB)
    try:
        assert g.server.getsockname()[0] == bind
    finally:
        g.close()


def test_a_connection_flood_is_one_refusal_line_with_a_count(gather, capsys):
    g = gather()
    for _ in range(10):
        peer = FakeNode(g.port, JOB)
        peer.challenge()
        peer.raw(b"not a hello\n")
        assert peer.closed_by_peer()
        peer.close()
    assert until(lambda: g.refusals and g.refusals[0].endswith("(10 times)")), g.refusals
    assert len(g.refusals) == 1
    assert capsys.readouterr().err.count("refused a connection") == 1
