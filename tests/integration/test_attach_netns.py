"""`ddpdoctor attach --nodes` across real separate network stacks: a 2-node job whose nodes are
two network namespaces on a private bridge (tests/helpers/netns.py), each node's torchrun in its
own namespace; attach runs in the first and reaches both over ssh. Skipped without root.

    a1  eth0 192.168.216.11   node 0 (MASTER_ADDR)
    a2  eth0 192.168.216.12   node 1
"""

from __future__ import annotations

import json
import sys
import time

import psutil
import pytest

from tests.helpers.attach_jobs import SCRIPT, pyspy_on
from tests.helpers.cli_runner import ddpdoctor_exe
from tests.helpers.netns import Host, LabUnavailable, NetnsLab

pytestmark = [pytest.mark.netns, pytest.mark.multiprocess]

MASTER = "192.168.216.11"
HOSTS = {"a1": MASTER, "a2": "192.168.216.12"}


@pytest.fixture(scope="module")
def lab():
    lab = NetnsLab([Host(name, address) for name, address in HOSTS.items()], tag="a")
    try:
        lab.start()
        lab.start_sshd()
    except LabUnavailable as exc:
        lab.close()
        pytest.skip(f"no network-namespace lab: {exc}")
    yield lab
    lab.close()


def _steps(path) -> dict[int, int]:
    last = {}
    try:
        for line in path.read_text().splitlines():
            rank, step = line.split()
            last[int(rank)] = int(step)
    except (OSError, ValueError):
        pass
    return last


def test_hung_job_across_two_network_namespaces_names_the_stuck_rank_and_its_node(lab, tmp_path):
    steps = tmp_path / "steps.txt"
    nodes = [lab.start_in(name, [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2",
                                 "--node-rank", str(rank), "--nproc-per-node", "1",
                                 "--master-addr", MASTER, "--master-port", "29731",
                                 str(SCRIPT), "stuck", str(steps)],
                          env={"GLOO_SOCKET_IFNAME": "eth0"})
             for rank, name in enumerate(HOSTS)]
    try:
        deadline = time.monotonic() + 90
        while _steps(steps).get(0, -1) < 4:
            assert time.monotonic() < deadline and all(n.poll() is None for n in nodes), _steps(steps)
            time.sleep(0.2)
        hosts = tmp_path / "hosts.txt"
        hosts.write_text("\n".join(HOSTS.values()) + "\n")
        ranks = [c for n in nodes for c in psutil.Process(n.pid).children(recursive=True)
                 if "attach_job.py" in " ".join(c.cmdline())]
        done = lab.run("a1", [*ddpdoctor_exe(), "attach", "--nodes", str(hosts), "--master-port",
                              "29731", "--duration", "2", *lab.ssh_flags(sys.executable),
                              "--json", "-"], timeout=90)
        assert all(r.is_running() and r.status() != psutil.STATUS_STOPPED for r in ranks)
        assert pyspy_on([r.pid for r in ranks]) == []
        assert done.returncode == 1, done.stderr
        hang = [f for f in json.loads(done.stdout)["findings"] if f["code"] == "DDP503"][0]
        assert hang["ranks"] == [1] and hang["hosts"] == [HOSTS["a2"]]
        assert hang["location"]["line"] == 35
    finally:
        for node in nodes:
            try:
                children = psutil.Process(node.pid).children(recursive=True)
            except psutil.Error:
                children = []
            for child in children:
                try:
                    child.kill()
                except psutil.Error:
                    pass
            node.kill()
            node.communicate(timeout=30)
            psutil.wait_procs(children, timeout=10)
