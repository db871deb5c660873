"""What a node believes of what it is told (launch/node_wire.py, driver.py own_evidence): a node's
own evidence is the floor of its result, whatever a node 0 says. Loopback only."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tests.helpers.gather_peer import FakeNode, FakeNode0
from tests.helpers.probe_runner import REPO
from tests.helpers.node_runner import Node, assert_nothing_left
from tests.helpers.ports import free_port_pair
from ddpdoctor.probe.launch import node_wire as wire

pytestmark = pytest.mark.multiprocess


def nested(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth):
        value = {"x": value}
    return value


@pytest.mark.parametrize("extra", [None, {"notes": [nested(40)]}], ids=["pass", "pass-nested-40-deep"])
def test_a_node_whose_rank_crashed_exits_non_zero_though_node0_says_pass(tmp_path, extra):
    """A fake node 0 holds the gather port and answers PASS, exit 0 (or a PASS nested 40 deep);
    node 0's ranks are a plain torchrun (so node 1's rank can start and crash). Node 1 must still
    fail, saying why in one line, its --json status agreeing with its exit. Node 1's rank crashes
    before it joins the process group: a plain rank 0 never joins the probe's checked group
    (TORCH_DISTRIBUTED_DEBUG=DETAIL), so a rank crashing later first waited 30 s for it there."""
    script = "tests/scripts/crash_early_on_node1.py"
    port = free_port_pair()
    fake = FakeNode0(port + 1, wire.job_identity(script, 2, f"127.0.0.1:{port + 1}"), extra=extra)
    node0_ranks = subprocess.Popen(
        [sys.executable, "-m", "torch.distributed.run", "--nnodes=2", "--node-rank=0", "--nproc-per-node=1",
         "--master-addr=127.0.0.1", f"--master-port={port}", "--max-restarts=0", script],
        cwd=str(REPO), env=dict(os.environ, GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1"),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        other = Node(tmp_path, 1, script, "--stall-timeout", "10", port=port)
        code = other.wait(timeout=120)
    finally:
        fake.close()
        node0_ranks.kill()
        node0_ranks.wait(timeout=30)
    assert code == 1, other.err[-3000:] + fake.error + repr([m["t"] for m in fake.received])
    # the rank's own traceback is on stderr; ddpdoctor's must not be
    assert "internal error" not in other.err and "node_wire.py" not in other.err, other.err[-3000:]
    line = next(ln for ln in other.err.splitlines() if ln.startswith("ddpdoctor probe: node 1"))
    if extra is None:
        assert "PASS, exit 0; but rank(s) 1 of this node exited non-zero: exit 1" in line, line
    else:
        assert "exit 0; but rank(s) 1 of this node exited non-zero: exit 1" in line, line
    assert other.json()["status"] == "fail"
    assert any(m["t"] == "final" for m in fake.received)
    assert_nothing_left(other)


def test_a_per_node_nproc_mismatch_is_named_within_seconds_on_both_nodes(tmp_path):
    """--nproc-per-node 1 on node 0 and 2 on node 1: torchrun would train a world of 3; node 0
    refuses node 1 at its hello and ends the job, each node saying why in one line."""
    port = free_port_pair()
    node0 = Node(tmp_path, 0, "examples/healthy.py", "--max-steps", "0", "--stall-timeout", "30", port=port)
    started = time.monotonic()
    other = Node(tmp_path, 1, "examples/healthy.py", "--max-steps", "0", "--stall-timeout", "30",
                 "--nproc-per-node", "2", port=port)
    assert other.wait(timeout=90) == 3, other.err[-3000:]
    assert node0.wait(timeout=90) == 1, node0.err[-3000:]
    assert time.monotonic() - started < 45
    assert "node 1 runs --nproc-per-node 2 and node 0 runs 1" in other.err
    refused = next(f for f in node0.json()["findings"] if f["code"] == "DDP507")
    assert "was refused by node 0: node 1 runs --nproc-per-node 2" in refused["message"]
    assert_nothing_left(node0, other)


def test_a_node_that_starts_late_is_waited_for_and_the_job_passes(tmp_path):
    """Node 1's ddpdoctor starts 12 s after node 0's, past the stall timeout: node 0 waits for it
    (the join window) instead of judging a stall of ranks that cannot start yet."""
    port = free_port_pair()
    flags = ("--max-steps", "3", "--stall-timeout", "6")
    node0 = Node(tmp_path, 0, "examples/healthy.py", *flags, port=port)
    time.sleep(12)
    other = Node(tmp_path, 1, "examples/healthy.py", *flags, port=port)
    assert node0.wait() == 0, node0.err[-3000:]
    assert other.wait() == 0, other.err[-3000:]
    assert_nothing_left(node0, other)


def test_a_forged_node_is_dropped_with_one_line_and_node0_neither_crashes_nor_keeps_its_data(tmp_path):
    """A peer that reaches node 0's gather port first, poses as node 1 and writes a rank file
    named with an Arabic-Indic zero (int() would read rank 0): node 0 drops it, says so in one
    line, and ends the job (that node can no longer take part) with DDP507, not a traceback."""
    script = "examples/healthy.py"
    port = free_port_pair()
    node0 = Node(tmp_path, 0, script, "--stall-timeout", "30", port=port)
    job = wire.job_identity(script, 2, f"127.0.0.1:{port + 1}")
    deadline = time.monotonic() + 60
    while True:
        try:
            forger = FakeNode(port + 1, job)
            break
        except OSError:
            assert time.monotonic() < deadline, node0.err[-2000:]
            time.sleep(0.2)
    assert forger.hello()["t"] == "welcome"
    forger.send("file", name="rank-\u0660.jsonl", data='{"kind":"note","t":1.0,"text":"\\u001b[2Jforged"}\n')
    assert node0.wait(timeout=90) == 1, node0.err[-3000:]
    assert "Traceback" not in node0.err
    dropped = [ln for ln in node0.err.splitlines() if "dropped node 1" in ln]
    assert len(dropped) == 1 and "is not rank-<R>.jsonl or .stack" in dropped[0], node0.err[-2000:]
    assert "\x1b" not in node0.err + node0.out
    lost = next(f for f in node0.json()["findings"] if f["code"] == "DDP507")
    assert "bad message" in lost["message"]
    assert not list(node0.run_dir.glob("rank-*[!0-9].jsonl")) and not (node0.run_dir / "rank-\u0660.jsonl").exists()
    forger.close()
    assert_nothing_left(node0)
