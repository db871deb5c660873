"""`ddpdoctor preflight` end to end: the console script, a real sshd on loopback addresses,
real ports. Every run is a subprocess with a deadline; the JSON report is what is asserted on."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.helpers.cli_runner import ddpdoctor_exe
from tests.helpers.ports import free_port
from tests.helpers.sshd import LoopbackSshd, SshdUnavailable, loopback_hosts

pytestmark = pytest.mark.ssh

DATA = Path(__file__).resolve().parents[1] / "data" / "facts"
REMOTES = loopback_hosts(4)  # 127.0.0.2 .. 127.0.0.5: "remote" hosts served by the test sshd
NOBODY = "127.0.0.9"  # a loopback address no sshd listens on: ssh is refused there


@pytest.fixture(scope="session")
def sshd():
    server = LoopbackSshd(["127.0.0.1", *REMOTES])
    try:
        server.start()
    except SshdUnavailable as exc:
        print(f"skipping ssh tests: {exc}", file=sys.stderr)
        pytest.skip(f"no test sshd: {exc}")
    yield server
    server.stop()


def ddpdoctor(*args: str, timeout: float = 90) -> subprocess.CompletedProcess:
    return subprocess.run([*ddpdoctor_exe(), *args], capture_output=True, text=True, timeout=timeout)


def preflight(sshd, tmp_path, hosts: list[str], *extra: str, port: int | None = None):
    """Run preflight over `hosts` through the test sshd; returns (process, JSON report or None)."""
    nodes = tmp_path / "hosts.txt"
    nodes.write_text("\n".join(hosts) + "\n")
    port = port or free_port()
    done = ddpdoctor("preflight", "--nodes", str(nodes), "--master-port", str(port),
                     *sshd.ssh_flags(sys.executable), "--json", "-", *extra)
    report = json.loads(done.stdout) if done.stdout.strip().startswith("{") else None
    return done, report


def codes(report) -> set[str]:
    return {f["code"] for f in report["findings"]}


def finding(report, code):
    found = [f for f in report["findings"] if f["code"] == code]
    assert found, f"no {code} in {[(f['code'], f['message']) for f in report['findings']]}"
    return found[0]


def check_status(report, code):
    return next(c["status"] for c in report["checks"] if c["code"] == code)


def test_preflight_over_localhost_and_loopback_hosts_passes(sshd, tmp_path):
    done, report = preflight(sshd, tmp_path, ["localhost", *REMOTES[:2]])
    assert done.returncode == 0, done.stderr
    assert report["status"] == "pass" and report["findings"] == []
    table = report["tables"][0]
    assert [row[:2] for row in table["rows"]] == [["localhost", "local"], [REMOTES[0], "ssh"], [REMOTES[1], "ssh"]]
    assert {check_status(report, c) for c in ("DDP101", "DDP103", "DDP104", "DDP105", "DDP204")} == {"passed"}
    assert check_status(report, "DDP203") == "skipped"
    assert "NCCL not checked here: no GPU on any node, backend gloo" in report["notes"]
    assert report["metrics"]["ssh_nodes"] == 2 and report["metrics"]["port_bind"] == "listening"


def test_terminal_report_of_a_passing_preflight_shows_the_node_table(sshd, tmp_path):
    nodes = tmp_path / "hosts.txt"
    nodes.write_text(f"localhost\n{REMOTES[0]}\n")
    done = ddpdoctor("preflight", "--nodes", str(nodes), "--master-port", str(free_port()),
                     *sshd.ssh_flags(sys.executable))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[✓] DDP103" in done.stdout and REMOTES[0] in done.stdout and "PASS" in done.stdout


def test_remote_master_holds_the_port_over_ssh(sshd, tmp_path):
    done, report = preflight(sshd, tmp_path, [REMOTES[0], "localhost", REMOTES[1]])
    assert done.returncode == 0, done.stderr
    assert report["metrics"]["master"].startswith(REMOTES[0])
    assert check_status(report, "DDP103") == "passed" and check_status(report, "DDP104") == "passed"


def test_unresolvable_host_is_ddp101(sshd, tmp_path):
    done, report = preflight(sshd, tmp_path, ["localhost", REMOTES[0], "no-such-host.invalid"])
    assert done.returncode == 1
    f = finding(report, "DDP101")
    assert f["hosts"] == ["no-such-host.invalid"] and "/etc/hosts" in f["hint"]
    assert "DDP105" not in codes(report)  # the same fact is not reported twice


def test_port_already_in_use_is_ddp104_naming_the_holder(sshd, tmp_path):
    port = free_port()
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", port))
        holder.listen(8)
        done, report = preflight(sshd, tmp_path, ["localhost", REMOTES[0]], port=port)
    assert done.returncode == 1
    f = finding(report, "DDP104")
    assert f["hosts"] == ["localhost"] and f["evidence"]["holder_pid"] == os.getpid()
    assert f"kill {os.getpid()}" in f["hint"]


def test_port_in_use_on_a_remote_master_is_ddp104(sshd, tmp_path):
    port = free_port()
    with socket.socket() as holder:
        holder.bind((REMOTES[1], port))
        holder.listen(8)
        done, report = preflight(sshd, tmp_path, [REMOTES[1], REMOTES[0]], port=port)
    assert done.returncode == 1
    f = finding(report, "DDP104")
    assert f["hosts"] == [REMOTES[1]] and f["evidence"]["tested"] == "ssh"


def test_wrong_world_size_is_ddp201(sshd, tmp_path):
    done, report = preflight(sshd, tmp_path, ["localhost", REMOTES[0]], "--nproc-per-node", "2",
                             "--world-size", "3")
    assert done.returncode == 1
    f = finding(report, "DDP201")
    assert "2 nodes x 2 processes = 4" in f["message"] and "--world-size 4" in f["hint"]
    assert set(f["hosts"]) == {"localhost", REMOTES[0]}


def test_duplicated_host_is_ddp202(sshd, tmp_path):
    done, report = preflight(sshd, tmp_path, ["localhost", REMOTES[0], REMOTES[0]])
    assert done.returncode == 1
    f = finding(report, "DDP202")
    assert f["hosts"] == [REMOTES[0]] and "hosts.txt lines 2, 3" in f["message"] and f["hint"]


def test_refused_ssh_is_ddp105(sshd, tmp_path):
    done, report = preflight(sshd, tmp_path, ["localhost", REMOTES[0], NOBODY])
    assert done.returncode == 1
    f = finding(report, "DDP105")
    assert f["hosts"] == [NOBODY] and f["evidence"]["kind"] == "refused"
    assert "Connection refused" in f["message"] and "sshd" in f["hint"]


def test_ssh_that_gets_no_answer_is_ddp105_timeout(sshd, tmp_path):
    # A listener that never accepts, its backlog full: SYNs are dropped, as by a firewall.
    blackhole = socket.socket()
    blackhole.bind(("127.0.0.6", 0))
    blackhole.listen(0)
    fillers = []
    try:
        for _ in range(3):
            filler = socket.socket()
            filler.settimeout(0.3)
            try:
                filler.connect(blackhole.getsockname())
            except OSError:
                pass
            fillers.append(filler)
        nodes = tmp_path / "hosts.txt"
        nodes.write_text("localhost\n127.0.0.6\n")
        done = ddpdoctor("preflight", "--nodes", str(nodes), "--master-port", str(free_port()),
                         "--ssh-port", str(blackhole.getsockname()[1]), "--timeout", "2", "--json", "-")
    finally:
        for filler in fillers:
            filler.close()
        blackhole.close()
    f = finding(json.loads(done.stdout), "DDP105")
    assert done.returncode == 1 and f["hosts"] == ["127.0.0.6"] and f["evidence"]["kind"] == "timeout"
    assert "--timeout" in f["hint"]


def test_ssh_auth_failure_is_ddp105_auth(sshd, tmp_path):
    stranger = tmp_path / "stranger_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)], check=True, timeout=30)
    flags = [f if not f.startswith("IdentityFile=") else f"IdentityFile={stranger}" for f in sshd.ssh_flags(sys.executable)]
    nodes = tmp_path / "hosts.txt"
    nodes.write_text(f"{REMOTES[2]}\n")
    done = ddpdoctor("preflight", "--nodes", str(nodes), "--master-port", str(free_port()), *flags, "--json", "-")
    report = json.loads(done.stdout)
    f = finding(report, "DDP105")
    assert done.returncode == 1 and f["evidence"]["kind"] == "auth" and "Permission denied" in f["message"]


def test_changed_host_key_is_ddp105_host_key(sshd, tmp_path):
    impostor = tmp_path / "impostor"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(impostor)], check=True, timeout=30)
    known = tmp_path / "known_hosts"
    known.write_text(f"[{REMOTES[3]}]:{sshd.port} {impostor.with_suffix('.pub').read_text().split(' ')[0]} "
                     f"{impostor.with_suffix('.pub').read_text().split(' ')[1]}\n")
    flags = [f if not f.startswith("UserKnownHostsFile=") else f"UserKnownHostsFile={known}"
             for f in sshd.ssh_flags(sys.executable)]
    nodes = tmp_path / "hosts.txt"
    nodes.write_text(f"{REMOTES[3]}\n")
    done = ddpdoctor("preflight", "--nodes", str(nodes), "--master-port", str(free_port()), *flags, "--json", "-")
    f = finding(json.loads(done.stdout), "DDP105")
    assert done.returncode == 1 and f["evidence"]["kind"] == "host-key" and "known_hosts" in f["hint"]


def test_missing_remote_python_is_ddp105_no_python(sshd, tmp_path):
    done, report = preflight(sshd, tmp_path, [REMOTES[0]], "--remote-python", "/nonexistent/python3")
    f = finding(report, "DDP105")
    assert done.returncode == 1 and f["evidence"]["kind"] == "no-python" and "--remote-python" in f["hint"]


def test_recorded_node_with_other_versions_is_ddp204(sshd, tmp_path):
    done, report = preflight(sshd, tmp_path, ["localhost", REMOTES[0], "gpu-b1"], "--facts", str(DATA / "gpu-b1.json"))
    assert done.returncode == 1
    torch_finding = next(f for f in report["findings"] if f["code"] == "DDP204" and f["message"].startswith("torch "))
    assert "gpu-b1" in torch_finding["hosts"] and "2.4.0+cu121 on gpu-b1" in torch_finding["message"]
    assert torch_finding["hint"]
    rows = {row[0]: row for row in report["tables"][0]["rows"]}
    assert rows["gpu-b1"][1:] == ["file", "3.10.14", "2.4.0+cu121", "12.1", "2.20.5", "8× NVIDIA H100 80GB HBM3",
                                  "540 GiB", "?"]  # shm; memlock not in this older fact file
    assert any("gpu-b1.json" in n for n in report["notes"])


def test_asking_for_nccl_without_a_gpu_is_ddp203(sshd, tmp_path):
    done, report = preflight(sshd, tmp_path, ["localhost"], "--backend", "nccl")
    assert done.returncode == 1
    assert finding(report, "DDP203")["hosts"] == ["localhost"]


def test_junit_and_github_outputs_of_a_failing_preflight(sshd, tmp_path):
    junit = tmp_path / "preflight.xml"
    nodes = tmp_path / "hosts.txt"
    nodes.write_text(f"localhost\n{REMOTES[0]}\n{REMOTES[0]}\n")
    done = ddpdoctor("preflight", "--nodes", str(nodes), "--master-port", str(free_port()),
                     *sshd.ssh_flags(sys.executable), "--junit", str(junit), "--github", "-q")
    assert done.returncode == 1
    assert f"::error title=DDP202 Duplicate hosts%2C or MASTER_ADDR/PORT differ::{REMOTES[0]} is listed 2 times" in done.stdout
    suite = ET.parse(junit).getroot()
    assert suite.get("name") == "ddpdoctor.preflight" and suite.get("failures") == "1"
    failed = [c.get("name") for c in suite.iter("testcase") if c.find("failure") is not None]
    assert failed == ["DDP202 Duplicate hosts, or MASTER_ADDR/PORT differ"]


def test_facts_command_prints_json_that_preflight_can_load(tmp_path):
    done = ddpdoctor("facts", "--json")
    assert done.returncode == 0, done.stderr
    recorded = json.loads(done.stdout)
    assert recorded["hostname"] == socket.gethostname() and recorded["python"]
    path = tmp_path / "me.json"
    path.write_text(done.stdout)
    nodes = tmp_path / "hosts.txt"
    nodes.write_text(f"{recorded['hostname']}\n")
    done = ddpdoctor("preflight", "--nodes", str(nodes), "--facts", str(path), "--master-port", str(free_port()),
                     "--json", "-")
    assert json.loads(done.stdout)["tables"][0]["rows"][0][1] == "file"


@pytest.mark.parametrize("args, says", [
    (["--nodes", "/nonexistent/hosts.txt"], "nodes file not found"),
    (["--nodes", "{malformed}"], "hosts.txt:2"),
    (["--nodes", "{evil}"], "evil.txt:1: '-oProxyCommand=touch' is not a valid host name"),
    (["--master-port", "70000"], "--master-port"),
    (["--nproc-per-node", "0"], "--nproc-per-node"),
    (["--fail-on", "nonsense"], "severity"),
    (["--ignore", "DDP999"], "DDP999"),
    (["--timeout", "0"], "--timeout"),
    (["--backend", "mpi"], "--backend"),
    (["--ssh-option", "-oProxyCommand=sh"], "KEY=VALUE"),
    (["--facts", "/nonexistent/facts.json"], "facts file not found"),
])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, args, says):
    malformed = tmp_path / "hosts.txt"
    malformed.write_text("gpu01\ngpu[01-\n") if "{malformed}" in args else None
    evil = tmp_path / "evil.txt"
    evil.write_text("-oProxyCommand=touch,/tmp/ddpdoctor-pwned\n")
    args = [str(malformed) if a == "{malformed}" else str(evil) if a == "{evil}" else a for a in args]
    report = tmp_path / "report.json"
    done = ddpdoctor("preflight", "--master-port", str(free_port()), *args, "--json", str(report))
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], done.stderr
    assert "Traceback" not in done.stderr and not report.exists()
    assert not Path("/tmp/ddpdoctor-pwned").exists()


def test_no_ssh_or_listener_is_left_behind(sshd, tmp_path):
    psutil = pytest.importorskip("psutil")
    preflight(sshd, tmp_path, [REMOTES[0], "localhost", NOBODY])
    mine = [p for p in psutil.process_iter(["cmdline"])
            if p.info["cmdline"] and p.info["cmdline"][0] == "ssh" and str(sshd.port) in p.info["cmdline"]]
    assert mine == []
