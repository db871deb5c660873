"""The multi-node probe across real separate network stacks: two network namespaces on a private
bridge (tests/helpers/netns.py), each node's `ddpdoctor probe` started inside its own namespace
with its own address, hostname and /etc/hosts; no shared network stack, and the run dirs are
separate folders (no shared filesystem is used). Without root these tests are skipped, with the
reason printed.

    m1  eth0 192.168.214.11   node 0 (MASTER_ADDR)
    m2  eth0 192.168.214.12   node 1
"""

from __future__ import annotations

import itertools
import sys
import time

import pytest

from tests.helpers.cli_runner import ddpdoctor_exe
from tests.helpers.netns import Host, LabUnavailable, NetnsLab
from tests.helpers.probe_runner import REPO
from tests.helpers.node_runner import Node, assert_nothing_left, wait_until

pytestmark = [pytest.mark.netns, pytest.mark.multiprocess]

MASTER = "192.168.214.11"
_ports = itertools.count(29710, 7)


@pytest.fixture(scope="module")
def lab():
    lab = NetnsLab([Host("m1", MASTER), Host("m2", "192.168.214.12")], tag="p")
    try:
        lab.start()
    except LabUnavailable as exc:
        lab.close()
        print(f"skipping network-namespace tests: {exc}", file=sys.stderr)
        pytest.skip(f"no network-namespace lab: {exc}")
    yield lab
    lab.close()


class NsNode(Node):
    """One node's probe inside its namespace; waiting and reading its report as Node does."""

    def __init__(self, lab: NetnsLab, host: str, node_rank: int, tmp, script: str, *flags: str, port: int,
                 args: tuple = (), env: dict | None = None):
        self.run_dir = tmp / f"node{node_rank}"
        self.report = tmp / f"node{node_rank}.json"
        argv = [*ddpdoctor_exe(), "probe", script, "--nproc-per-node", "1", "--nnodes", "2",
                "--node-rank", str(node_rank), "--master-addr", MASTER, "--master-port", str(port),
                "--run-dir", str(self.run_dir), "--json", str(self.report), *flags]
        if args:
            argv += ["--", *args]
        # cwd: the repository, as a user runs it from their checkout on every node.
        self.proc = lab.start_in(host, ["sh", "-c", f'cd "{REPO}" && exec "$@"', "sh", *argv],
                                 env={"GLOO_SOCKET_IFNAME": "eth0", **(env or {})})
        self.out = self.err = ""


def both(lab, tmp, script, *flags, args=(), env=None):
    port = next(_ports)
    other = NsNode(lab, "m2", 1, tmp, script, *flags, port=port, args=args, env=env)
    node0 = NsNode(lab, "m1", 0, tmp, script, *flags, port=port, args=args, env=env)
    return node0, other


def test_missing_sampler_across_namespaces_is_one_report_with_both_hosts(lab, tmp_path):
    node0, other = both(lab, tmp_path, "examples/no_sampler.py", "--max-steps", "4")
    assert node0.wait() == 1, node0.err[-3000:]
    assert other.wait() == 1, other.err[-3000:]
    report = node0.json()
    assert next(f for f in report["findings"] if f["code"] == "DDP301")["ranks"] == [0, 1]
    ranks = next(t for t in report["tables"] if t["title"] == "Ranks")
    hosts = {row[0]: row[2] for row in ranks["rows"]}
    assert hosts == {0: "m1", 1: "m2"}
    assert "the report is m1:" in other.err
    assert_nothing_left(node0, other)


def test_rank0_only_collective_names_the_call_site_with_stacks_from_both_hosts(lab, tmp_path):
    node0, other = both(lab, tmp_path, "tests/scripts/rank0_only_allreduce.py", "--stall-timeout", "4",
                        args=(str(tmp_path),))
    assert node0.wait() == 1, node0.err[-3000:]
    assert other.wait() == 1
    findings = {f["code"]: f for f in node0.json()["findings"]}
    assert findings["DDP502"]["location"]["line"] == 27
    stall = findings["DDP503"]
    assert "node 1 (m2)" in stall["message"] and "node 0 (m1)" in stall["message"]
    assert_nothing_left(node0, other)


def test_a_node_cut_off_mid_run_is_named_and_every_node_ends(lab, tmp_path):
    # A lost node is one silent for DDPDOCTOR_NODE_SILENCE_S (10 s by default): 3 s here.
    node0, other = both(lab, tmp_path, "tests/faults/endless_training.py", "--max-steps", "0",
                        "--stall-timeout", "60", "--timeout", "150", env={"DDPDOCTOR_NODE_SILENCE_S": "3"})
    wait_until(lambda: node0.steps(1) >= 3, 90, "node 1's steps to reach node 0")
    lab.cut("m2")
    cut_at = time.monotonic()
    assert node0.wait(timeout=90) == 1, node0.err[-3000:]
    assert time.monotonic() - cut_at < 38
    report = node0.json()
    lost = next(f for f in report["findings"] if f["code"] == "DDP507")
    assert "node 1 (m2)" in lost["message"] and lost["evidence"]["last_step"] >= 3
    assert lost["hosts"] == ["m2"]
    assert report["incomplete"]
    # Node 1 lost node 0 too: it ends its ranks and says so, exit 3.
    assert other.wait(timeout=60) == 3, other.err[-3000:]
    assert "node 0's ddpdoctor" in other.err
    assert_nothing_left(node0, other)
