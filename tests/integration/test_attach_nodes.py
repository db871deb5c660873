"""`ddpdoctor attach --nodes`: a 2-node job (two torchrun nodes on loopback), each node reached
over ssh (the test sshd on 127.0.0.2 and 127.0.0.3) observing its own rank, this one judging."""

from __future__ import annotations

import json
import shutil
import sys

import pytest

from tests.helpers.attach_jobs import TorchrunJob, pyspy_on
from tests.helpers.ports import free_port
from tests.helpers.cli_runner import run_cli
from tests.helpers.sshd import LoopbackSshd, SshdUnavailable, loopback_hosts

pytestmark = [pytest.mark.multiprocess, pytest.mark.ssh,
              pytest.mark.skipif(shutil.which("py-spy") is None, reason="needs py-spy")]


@pytest.fixture(scope="module")
def sshd():
    try:
        server = LoopbackSshd(loopback_hosts(2))
        server.start()
    except SshdUnavailable as exc:
        pytest.skip(f"no test sshd: {exc}")
    yield server
    server.stop()


def test_hung_two_node_job_names_the_stuck_rank_its_node_and_line(sshd, tmp_path):
    port = free_port()
    nodes = [TorchrunJob("stuck", tmp_path, nproc=1, nodes=(2, r), port=port) for r in (0, 1)]
    try:
        nodes[0].wait_until(lambda s: s.get(0, -1) >= 4)
        hosts = tmp_path / "hosts.txt"
        hosts.write_text("\n".join(loopback_hosts(2)) + "\n")
        pids = [p for job in nodes for p in job.rank_pids()]
        done = run_cli("attach", "--nodes", str(hosts), "--master-port", str(port),
                       "--duration", "2", *sshd.ssh_flags(sys.executable), "--json", "-", timeout=90)
        assert all(job.running() for job in nodes) and pyspy_on(pids) == []
        assert done.code == 1, done.stderr
        report = json.loads(done.stdout)
        hang = [f for f in report["findings"] if f["code"] == "DDP503"][0]
        assert hang["ranks"] == [1] and hang["hosts"] == ["127.0.0.3"]
        assert hang["location"]["line"] == 35
        assert "rank 1 on 127.0.0.3 is running wait_for_file_that_never_comes" in hang["message"]
        assert report["metrics"]["seconds_to_verdict"] < 15
    finally:
        for job in nodes:
            job.end()
