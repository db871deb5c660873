"""Store mode and the collective smoke test on this machine alone: no root, no sshd.

Store mode runs the same command several times, each told which host of the list it is
(`--node-rank`), the way srun runs it once per node; the "hosts" are loopback addresses, so the
master's TCPStore (bound on every interface) is reachable under each of them. The real
multi-host versions of these tests are in test_netns_preflight.py.
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from tests.helpers.cli_runner import ddpdoctor_exe, run_cli
from tests.helpers.ports import free_port

pytestmark = pytest.mark.multiprocess

HOSTS = ["127.0.0.2", "127.0.0.3", "127.0.0.4"]


def store_run(tmp_path, ranks: list[int], *args: str, hosts=HOSTS, timeout: float = 120):
    """Start one store-mode preflight per node rank, together; {rank: (code, stdout, stderr)}."""
    nodes = tmp_path / "hosts.txt"
    nodes.write_text("\n".join(hosts) + "\n")
    port = str(free_port())
    procs = {r: subprocess.Popen([*ddpdoctor_exe(), "preflight", "--nodes", str(nodes), "--via", "store",
                                  "--node-rank", str(r), "--master-port", port, *args],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
             for r in ranks}
    out, deadline = {}, time.monotonic() + timeout
    for rank, proc in procs.items():
        try:
            stdout, stderr = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
        out[rank] = (proc.returncode, stdout, stderr)
    return out


def test_store_mode_master_reports_and_the_others_point_to_it_and_write_nothing(tmp_path):
    report_file = tmp_path / "report.json"
    runs = store_run(tmp_path, [1, 2, 0], "--timeout", "20", "--json", str(report_file))
    code, stdout, stderr = runs[0]
    assert code == 0, stdout + stderr
    assert "PASS" in stdout  # the master's terminal report
    report = json.loads(report_file.read_text())  # written once, by the master
    assert report["metrics"]["store_role"] == "master" and report["metrics"]["reached"] == 3
    assert [row[1] for row in report["tables"][0]["rows"]] == ["local", "store", "store"]
    for rank in (1, 2):
        code, stdout, stderr = runs[rank]
        assert code == 0 and stdout == ""
        assert f"{HOSTS[rank]} published its facts to 127.0.0.2:" in stderr
        assert "the report is printed by ddpdoctor on 127.0.0.2" in stderr and "PASS" in stderr
        assert f"written there to {report_file}" in stderr


def test_store_mode_names_a_node_that_never_arrives_after_the_timeout(tmp_path):
    began = time.monotonic()
    # (8 s, not 3: the present node loads Python and torch before it publishes; on a busy
    # machine - the suite's three workers on two cores - that took longer than 3 s, the master
    # closed its window first, and the late node failed instead of relaying the verdict)
    runs = store_run(tmp_path, [0, 1], "--timeout", "8", "--json", "-")
    code, stdout, stderr = runs[0]
    report = json.loads(stdout)
    assert code == 1 and runs[1][0] == 1  # the other node exits with the master's verdict
    absent = next(f for f in report["findings"] if f["code"] == "DDP105")
    assert absent["hosts"] == ["127.0.0.4"] and absent["evidence"]["kind"] == "absent"
    assert "never published its facts" in absent["message"] and "srun" in absent["hint"]
    assert time.monotonic() - began < 60


def test_store_mode_node_without_a_master_reports_refused_itself(tmp_path):
    runs = store_run(tmp_path, [1], "--timeout", "2")
    code, stdout, stderr = runs[1]
    assert code == 1 and stdout == ""
    assert "127.0.0.3 could not reach the store on 127.0.0.2:" in stderr
    assert "DDP103" in stderr and "refused" in stderr


@pytest.mark.parametrize("args, says", [
    (["--node-rank", "1"], "--node-rank only means something with --via store"),
    (["--via", "store", "--node-rank", "7"], "--node-rank 7 is past the end of the host list"),
])
def test_store_mode_bad_input_is_one_line_exit_2(tmp_path, args, says):
    nodes = tmp_path / "hosts.txt"
    nodes.write_text("127.0.0.2\n127.0.0.3\n")
    done = run_cli("preflight", "--nodes", str(nodes), "--master-port", str(free_port()), *args)
    assert done.code == 2 and says in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_collective_on_this_machine_times_all_reduce_sizes(tmp_path):
    done = run_cli("preflight", "--nproc-per-node", "2", "--master-port", str(free_port()), "--timeout", "10",
                   "--collective", "--json", "-", timeout=180)
    report = done.json()
    assert done.code == 0, done.stderr
    ddp107 = next(c for c in report["checks"] if c["code"] == "DDP107")
    assert ddp107["status"] == "passed" and report["metrics"]["collective"] == "ok"
    table = next(t for t in report["tables"] if t["title"].startswith("All-reduce"))
    assert table["title"] == "All-reduce, gloo, 1 node, 2 processes" and table["rows"][0][0] == "64 KiB"
    assert any("NCCL not checked here" in n for n in report["notes"])


def test_collective_is_skipped_when_the_facts_say_no_job_could_form(tmp_path):
    nodes = tmp_path / "hosts.txt"
    nodes.write_text("localhost\nno-such-host.invalid\n")
    done = run_cli("preflight", "--nodes", str(nodes), "--master-port", str(free_port()), "--timeout", "5",
                   "--collective", "--json", "-")
    report = done.json()
    ddp107 = next(c for c in report["checks"] if c["code"] == "DDP107")
    assert ddp107["status"] == "skipped" and "DDP101 failed" in ddp107["reason"]


# ------------------------------------------------ a node that comes after the master's window
# The master is played by the test: a real TCPStore on the master's port, driven by hand, so the
# order of events a busy machine produces by chance (the node publishes after the master's window
# closed) happens every time.

def _hand_master(port: int):
    from datetime import timedelta

    import torch.distributed as dist
    return dist.TCPStore(HOSTS[0], port, is_master=True, wait_for_workers=False, timeout=timedelta(seconds=30))


def _start_node(tmp_path, port: int, rank: int = 1):
    nodes = tmp_path / "hosts.txt"
    nodes.write_text("\n".join(HOSTS[:2]) + "\n")
    return subprocess.Popen([*ddpdoctor_exe(), "preflight", "--nodes", str(nodes), "--via", "store", "--node-rank",
                             str(rank), "--master-port", str(port), "--timeout", "30"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)


def _wait_key(store, key: str, seconds: float = 90.0) -> None:
    deadline = time.monotonic() + seconds
    while not store.check([key]):
        assert time.monotonic() < deadline, f"{key} never came"
        time.sleep(0.05)


def test_store_mode_node_that_loses_the_store_before_the_report_says_so_exit_1(tmp_path):
    port = free_port()
    store = _hand_master(port)
    node = _start_node(tmp_path, port)
    _wait_key(store, f"ddpdoctor/preflight/facts/{HOSTS[1]}")
    del store  # the master stops serving: its window had closed, it published, it left
    stdout, stderr = node.communicate(timeout=120)
    assert node.returncode == 1, stdout + stderr  # a fact about the launch, not ddpdoctor's failure (3)
    assert "Traceback" not in stderr
    assert "DDP105" in stderr and f"{HOSTS[1]} reached the master's store" in stderr
    assert "one srun" in stderr and f"{HOSTS[1]} got no verdict from the master" in stderr


def test_store_mode_node_counted_absent_relays_the_verdict_and_says_it_was_late(tmp_path):
    # The report a real master gives when the second node never came in its window.
    report_file = tmp_path / "master.json"
    master = store_run(tmp_path, [0], "--timeout", "1", "--json", str(report_file), hosts=HOSTS[:2])
    assert master[0][0] == 1
    verdict = json.loads(report_file.read_text())
    assert any(f["code"] == "DDP105" and f["hosts"] == [HOSTS[1]] for f in verdict["findings"])
    port = free_port()
    store = _hand_master(port)
    node = _start_node(tmp_path, port)
    _wait_key(store, f"ddpdoctor/preflight/facts/{HOSTS[1]}")
    store.set("ddpdoctor/preflight/plan", json.dumps({"go": False, "reason": "run with --collective"}))
    store.set("ddpdoctor/preflight/report", json.dumps({"report": verdict, "exit_code": 1,
                                                        "where": f"printed by ddpdoctor on {HOSTS[0]}"}))
    _wait_key(store, "ddpdoctor/preflight/done")
    stdout, stderr = node.communicate(timeout=60)
    assert node.returncode == 1 and stdout == "", stderr
    assert f"the report is printed by ddpdoctor on {HOSTS[0]}: FAIL" in stderr
    assert f"{HOSTS[1]} published its facts after the master's --timeout window had closed" in stderr


@pytest.mark.parametrize("published", [
    {"report": {"command": "preflight", "results": []}, "exit_code": 0},  # a PASS of nothing
    "not a report",
])
def test_store_mode_node_takes_no_verdict_it_cannot_read(tmp_path, published):
    port = free_port()
    store = _hand_master(port)
    node = _start_node(tmp_path, port)
    _wait_key(store, f"ddpdoctor/preflight/facts/{HOSTS[1]}")
    store.set("ddpdoctor/preflight/plan", json.dumps({"go": False, "reason": "run with --collective"}))
    store.set("ddpdoctor/preflight/report", json.dumps(published))
    stdout, stderr = node.communicate(timeout=60)
    assert node.returncode == 1, stdout + stderr  # never the PASS a peer handed over, never exit 3
    assert "Traceback" not in stderr and "DDP105" in stderr and "cannot be read" in stderr
