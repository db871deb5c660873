"""Node 0's gather port under what a peer controls (no token needed): the CPU it may take.
Judges CPU, so it runs alone (`serial`)."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from tests.helpers.gather_peer import FakeNode, until
from ddpdoctor.probe.launch import node_wire as wire
from ddpdoctor.probe.launch.node_gather import NodeGather
from tests.helpers.ports import free_port

JOB = "job-under-test"


def thread_cpu_s(thread: threading.Thread) -> float:
    """CPU seconds one thread of this process used (user + system), from /proc."""
    with open(f"/proc/self/task/{thread.native_id}/stat", encoding="ascii") as handle:
        fields = handle.read().rpartition(")")[2].split()
    import os
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.serial
def test_64_half_open_hellos_cost_node0_at_most_a_twentieth_of_a_core(tmp_path):
    g = NodeGather(str(tmp_path), free_port(), 2, "node0", "127.0.0.1", 1, key=None, job=JOB)
    peers = []
    try:
        for _ in range(64):
            peer = FakeNode(g.port, JOB)
            peer.challenge()
            peer.raw(b"x")  # one byte of a hello, and nothing more
            peers.append(peer)
        time.sleep(0.5)
        before, started = thread_cpu_s(g._acceptor), time.monotonic()
        time.sleep(3.0)  # within the hello timeout: every connection still half-open
        cores = (thread_cpu_s(g._acceptor) - before) / (time.monotonic() - started)
        assert len(g._pending) == 64
        assert cores <= 0.05, f"node 0's selector used {cores:.2f} cores on 64 half-open connections"
    finally:
        for peer in peers:
            peer.close()
        g.close()


@pytest.mark.serial
def test_a_long_line_dribbled_in_small_pieces_is_assembled_in_linear_time():
    from ddpdoctor.probe.launch.node_link import Link

    server = socket.create_server(("127.0.0.1", 0))
    left = socket.create_connection(server.getsockname())
    right, _ = server.accept()
    server.close()
    codec = wire.Codec(None, JOB)
    link = Link(right, wire.Codec(None, JOB), wire.FROM_NODE, "-test")
    try:
        line = codec.encode("bye", {"pad": "x" * (6 * 1024 * 1024)})
        started = time.process_time()
        for at in range(0, len(line), 1024):
            left.sendall(line[at:at + 1024])
        assert until(lambda: link.queued_bytes > 0, timeout=30)
        # quadratic assembly copied and rescanned up to 6 MiB per 1 KiB piece: ~36 GB
        assert time.process_time() - started < 8
        [message] = link.messages()
        assert message["t"] == "bye" and link.queued_bytes == 0
    finally:
        link.close()
        left.close()
