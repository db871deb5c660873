"""One diagnosis for the whole job: `ddpdoctor probe` on two nodes, each started as a user starts
torchrun on each node, node 0 judging every rank of both (launch/node_gather.py,
node_reporter.py). Nodes are loopback here (one ddpdoctor per node, same machine, separate run
dirs: no shared filesystem is used); test_multinode_netns.py runs them in network namespaces.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import time

import pytest

from tests.helpers.node_runner import Node, assert_nothing_left, wait_until
from tests.helpers.ports import free_port_pair

pytestmark = pytest.mark.multiprocess


def test_missing_sampler_is_one_report_on_node0_across_both_nodes(tmp_path):
    port = free_port_pair()
    other = Node(tmp_path, 1, "examples/no_sampler.py", "--max-steps", "4", port=port)
    node0 = Node(tmp_path, 0, "examples/no_sampler.py", "--max-steps", "4", port=port)
    assert node0.wait() == 1, node0.err[-3000:]
    assert other.wait() == 1, other.err[-3000:]
    report = node0.json()
    finding = next(f for f in report["findings"] if f["code"] == "DDP301")
    assert finding["ranks"] == [0, 1]
    ranks = next(t for t in report["tables"] if t["title"] == "Ranks")
    assert ranks["columns"][:3] == ["rank", "node", "host"]
    assert [row[1] for row in ranks["rows"]] == [0, 1]
    # The other node: one line saying where the report is, node 0's exit code, no report of its own.
    line = [ln for ln in other.err.splitlines() if ln.startswith("ddpdoctor probe:")]
    assert len(line) == 1 and "report.json" in line[0] and "FAIL" in line[0], other.err[-2000:]
    assert json.loads(other.report.read_text())["status"] == "fail"  # --json: node 0's report
    assert not (other.run_dir / "report.json").exists()
    nodes = json.loads((node0.run_dir / "outcome.json").read_text())["nodes"]
    assert [n["status"] for n in nodes[1:]] == ["finished"]
    # No --gather-token: the report says what the verdict relied on.
    assert any("unauthenticated gather port" in note for note in report["notes"])
    assert_nothing_left(node0, other)


def test_a_collective_only_rank0_enters_is_named_with_every_ranks_stack_from_both_nodes(tmp_path):
    port = free_port_pair()
    flags = ("--stall-timeout", "4")
    other = Node(tmp_path, 1, "tests/scripts/rank0_only_allreduce.py", *flags, port=port, args=(str(tmp_path),))
    node0 = Node(tmp_path, 0, "tests/scripts/rank0_only_allreduce.py", *flags, port=port, args=(str(tmp_path),))
    assert node0.wait() == 1, node0.err[-3000:]
    assert other.wait() == 1
    report = node0.json()
    skipped = next(f for f in report["findings"] if f["code"] == "DDP502")
    assert skipped["location"]["file"] == "tests/scripts/rank0_only_allreduce.py"
    assert skipped["location"]["line"] == 27
    # Cause before consequence: node 0 ended rank 0 at the stall verdict, and rank 1's gloo
    # connection broke after that: the teardown's doing, not a crash (as on one node).
    assert "DDP504" not in {f["code"] for f in report["findings"]}, report["findings"]
    stall = next(f for f in report["findings"] if f["code"] == "DDP503")
    detail = stall["evidence"]["detail"]
    assert "rank 0: " in detail and "rank 1: " in detail
    assert "rank0_only_allreduce.py:30" in detail  # rank 1's stack, taken on node 1, polling for the file
    assert "node 1" in stall["message"] and stall["hosts"], stall
    assert_nothing_left(node0, other)


def test_a_node_whose_ranks_all_crash_is_judged_on_node0(tmp_path):
    port = free_port_pair()
    other = Node(tmp_path, 1, "tests/scripts/crash_on_node1.py", "--stall-timeout", "5", port=port)
    node0 = Node(tmp_path, 0, "tests/scripts/crash_on_node1.py", "--stall-timeout", "5", port=port)
    assert node0.wait() == 1, node0.err[-3000:]
    assert other.wait() == 1
    crash = next(f for f in node0.json()["findings"] if f["code"] == "DDP504")
    assert crash["ranks"] == [1] and "FileNotFoundError" in crash["message"]
    assert_nothing_left(node0, other)


def test_a_killed_node_is_named_with_its_last_step_and_nothing_is_left(tmp_path):
    port = free_port_pair()
    flags = ("--max-steps", "0", "--stall-timeout", "30", "--timeout", "120")
    other = Node(tmp_path, 1, "tests/faults/endless_training.py", *flags, port=port)
    node0 = Node(tmp_path, 0, "tests/faults/endless_training.py", *flags, port=port)
    wait_until(lambda: node0.steps(1) >= 3, 90, "node 1's steps to reach node 0")
    other.proc.send_signal(signal.SIGKILL)
    started = time.monotonic()
    assert node0.wait() == 1, node0.err[-3000:]
    assert time.monotonic() - started < 40, "node 0 took too long to notice the lost node"
    report = node0.json()
    lost = next(f for f in report["findings"] if f["code"] == "DDP507")
    assert "node 1" in lost["message"] and lost["evidence"]["last_step"] >= 3
    assert report["incomplete"] and "node 1" in report["incomplete"][0]
    other.wait()
    assert_nothing_left(node0, other)


def test_node0_lost_ends_the_other_node_with_a_clear_line_and_exit_3(tmp_path):
    port = free_port_pair()
    flags = ("--max-steps", "0", "--stall-timeout", "30", "--timeout", "120")
    other = Node(tmp_path, 1, "tests/faults/endless_training.py", *flags, port=port)
    node0 = Node(tmp_path, 0, "tests/faults/endless_training.py", *flags, port=port)
    wait_until(lambda: node0.steps(1) >= 3, 90, "node 1's steps to reach node 0")
    node0.proc.send_signal(signal.SIGKILL)
    assert other.wait(timeout=60) == 3, other.err[-3000:]
    assert "node 0's ddpdoctor" in other.err and "Traceback" not in other.err.split("ddpdoctor probe:")[-1]
    node0.wait()
    assert_nothing_left(node0, other)


def test_nodes_given_different_master_ports_end_in_a_verdict_on_each_never_a_crash_or_a_pass(tmp_path):
    # Once "ddpdoctor bug: IndexError" on both nodes; then node 1 ended in exit 3 (ddpdoctor's own
    # failure) though the cause is the user's flags: node 0 judges node 1 never reported, node 1
    # says it never reached node 0, why, and that no verdict was reached (exit 4, --json written).
    flags = ("--max-steps", "2", "--stall-timeout", "5", "--timeout", "15")
    other = Node(tmp_path, 1, "examples/no_sampler.py", *flags, port=free_port_pair())
    node0 = Node(tmp_path, 0, "examples/no_sampler.py", *flags, port=free_port_pair())
    assert node0.wait() == 1, node0.err[-3000:]
    assert other.wait() == 4, other.err[-3000:]
    lost = next(f for f in node0.json()["findings"] if f["code"] == "DDP507")
    assert "node 1" in lost["message"] and "never" in lost["message"]
    assert "Traceback" not in node0.err + other.err and "ddpdoctor bug" not in node0.err + other.err
    line = [ln for ln in other.err.splitlines() if "never answered" in ln]
    assert len(line) == 1 and "--master-port" in line[0] and "exit 4" in line[0], other.err[-2000:]
    own = other.json()
    assert own["status"] == "incomplete" and "--master-port" in own["incomplete"][0]
    assert_nothing_left(node0, other)


def test_under_slurm_a_healthy_job_needs_no_flags_and_passes_on_both_nodes(tmp_path):
    """srun --nodes=2 --ntasks-per-node=1 ddpdoctor probe train.py: SLURM's environment as srun
    sets it (recorded), no daemon needed."""
    slurm = {"SLURM_JOB_ID": "4242", "SLURM_JOB_NUM_NODES": "2", "SLURM_NNODES": "2",
             "SLURM_JOB_NODELIST": "127.0.0.1,127.0.0.2", "SLURM_NTASKS_PER_NODE": "1"}
    port = 20000 + 4242 % 20000
    for busy in (port, port + 1):
        with socket.socket() as sock:
            try:
                sock.bind(("", busy))
            except OSError:
                pytest.skip(f"port {busy}, derived from the recorded SLURM job id, is in use here")
    # The batch script exports a token before srun (docs/multi-node.md): every node has it.
    token = "tok-" + os.urandom(8).hex()
    nodes = [Node(tmp_path, r, "examples/healthy.py", "--max-steps", "4", port=0, nnodes=0,
                  env={**slurm, "SLURM_NODEID": str(r), "SLURM_PROCID": str(r),
                       "DDPDOCTOR_GATHER_TOKEN": token}) for r in (1, 0)]
    codes = [n.wait() for n in nodes]
    assert codes == [0, 0], nodes[1].err[-3000:]
    report = nodes[1].json()
    assert report["status"] == "pass" and report["metrics"]["world_size"] == 2
    assert "2 rank(s) on 2 node(s)" in nodes[1].out
    assert not any("unauthenticated" in note for note in report["notes"])
    for path in tmp_path.rglob("*"):  # the secret is in no report, log or run-dir file
        assert not path.is_file() or token.encode() not in path.read_bytes(), path
    assert all(token not in n.out + n.err for n in nodes)
    assert_nothing_left(*nodes)


def test_in_pytorchjob_pods_a_healthy_job_needs_no_flags_and_names_the_pod_and_node(tmp_path):
    """The probe as a PyTorchJob / Trainer container's command: node 0 with Kubeflow Trainer's
    PET_ variables, node 1 with the training operator's node-level MASTER_ADDR / WORLD_SIZE /
    RANK (nodes, not processes); both form the same two-node job."""
    port = free_port_pair()
    pod = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "POD_NAMESPACE": "training"}
    trainer = {**pod, "PET_NNODES": "2", "PET_NODE_RANK": "0", "PET_MASTER_ADDR": "127.0.0.1",
               "PET_MASTER_PORT": str(port), "HOSTNAME": "bert-node-0-0", "NODE_NAME": "gpu-a1"}
    operator = {**pod, "WORLD_SIZE": "2", "RANK": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
                "HOSTNAME": "bert-worker-0"}
    other = Node(tmp_path, 1, "examples/healthy.py", "--max-steps", "4", port=0, nnodes=0, env=operator)
    node0 = Node(tmp_path, 0, "examples/healthy.py", "--max-steps", "4", port=0, nnodes=0, env=trainer)
    codes = [node0.wait(), other.wait()]
    assert codes == [0, 0], node0.err[-3000:] + other.err[-3000:]
    report = node0.json()
    assert report["status"] == "pass" and report["metrics"]["world_size"] == 2
    assert report["metrics"]["kubernetes"] == {"pod": "bert-node-0-0", "node": "gpu-a1", "namespace": "training"}
    assert "ran in pod bert-node-0-0 on node gpu-a1 (namespace training)" in report["notes"]
    assert_nothing_left(node0, other)
