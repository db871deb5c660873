"""`ddpdoctor preflight` across real separate network hosts: Linux network namespaces on a private
bridge (tests/netns.py), each with its own address on 192.168.213.0/24, its own /etc/hosts, its own
hostname and its own sshd on port 22. Nothing here touches this machine's own network stack.

Why 192.168.x and not 10.x: Gloo connects each pair of processes from the higher address to the
lower one. A node whose hostname resolves to 127.0.1.1 advertises that address; peers on 10.x
sort below it, so the trap node always dials out and the job happens to work, while peers on
192.168.x (or 172.16-31.x) sort above it, dial 127.0.1.1 - themselves - and the job fails. The
lab uses the subnet where the trap bites, as it does on many clusters.

The lab, built once per session:

    n1  eth0 192.168.213.11  docker0 172.17.0.1/16    (the master: ddpdoctor runs here)
    n2  eth0 192.168.213.12  docker0 172.17.0.1/16
    n3  ens5 192.168.213.13                           (another node type: its NIC has another name)
    n4  eth0 192.168.213.14  /etc/hosts: 127.0.1.1 n4 (Debian's installer default: the loopback trap)

Firewall rules (nft) and traffic shaping (tc) are set inside one namespace for one test and
removed after it. Without root these tests are skipped, with the reason printed.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import time

import pytest

from tests.helpers.cli_runner import ddpdoctor_exe
from tests.helpers.netns import Host, LabUnavailable, NetnsLab

pytestmark = [pytest.mark.netns, pytest.mark.multiprocess]

HOSTS = [
    Host("n1", "192.168.213.11", extra_bridges={"docker0": "172.17.0.1/16"}),
    Host("n2", "192.168.213.12", extra_bridges={"docker0": "172.17.0.1/16"}),
    Host("n3", "192.168.213.13", ifname="ens5"),
    Host("n4", "192.168.213.14", loopback_trap=True),
]
_ports = itertools.count(29600)


@pytest.fixture(scope="session")
def lab():
    lab = NetnsLab([Host(h.name, h.address, h.ifname, h.loopback_trap, dict(h.extra_bridges)) for h in HOSTS])
    try:
        lab.start()
        lab.start_sshd()
    except LabUnavailable as exc:
        lab.close()
        print(f"skipping network-namespace tests: {exc}", file=sys.stderr)
        pytest.skip(f"no network-namespace lab: {exc}")
    yield lab
    lab.close()


def _nodes(lab, hosts: list[str]) -> str:
    path = lab.dir / f"hosts-{'-'.join(hosts)}.txt"
    path.write_text("\n".join(hosts) + "\n")
    return str(path)


def ssh_preflight(lab, hosts: list[str], *args: str, env=None, timeout: float = 120):
    """Preflight from n1 over ssh to the others; (process, JSON report)."""
    done = lab.run("n1", [*ddpdoctor_exe(), "preflight", "--nodes", _nodes(lab, hosts), "--master-port", str(next(_ports)),
                          *lab.ssh_flags(sys.executable), "--json", "-", *args], env=env, timeout=timeout)
    assert done.stdout.strip().startswith("{"), done.stdout + done.stderr
    return done, json.loads(done.stdout)


def store_preflight(lab, run_on: list[str], hosts: list[str], *args: str, env=None, timeout: float = 150):
    """The same store-mode command on every host of `run_on`, started together (as srun does);
    {host: (exit code, stdout, stderr)}."""
    port = str(next(_ports))
    nodes = _nodes(lab, hosts)
    procs = {h: lab.start_in(h, [*ddpdoctor_exe(), "preflight", "--nodes", nodes, "--via", "store", "--master-port", port,
                                 *args], env=(env or {}).get(h)) for h in run_on}
    out = {}
    deadline = time.monotonic() + timeout
    for host, proc in procs.items():
        try:
            stdout, stderr = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
        out[host] = (proc.returncode, stdout, stderr)
    return out


def finding(report, code, host=None):
    found = [f for f in report["findings"] if f["code"] == code and (host is None or host in f["hosts"])]
    assert found, f"no {code} for {host} in {[(f['code'], f['message']) for f in report['findings']]}"
    return found[0]


def status(report, code):
    return next(c["status"] for c in report["checks"] if c["code"] == code)


# ------------------------------------------------------------------ ssh mode


def test_three_namespace_hosts_over_ssh_pass_as_a_multi_node_job(lab):
    done, report = ssh_preflight(lab, ["n1", "n2", "n3"], "--timeout", "5")
    assert done.returncode == 0, done.stderr
    # Three network stacks: the loopback check judges instead of skipping.
    assert status(report, "DDP102") == "passed" and status(report, "DDP106") == "passed"
    assert status(report, "DDP103") == "passed" and report["metrics"]["ssh_nodes"] == 2


def test_debian_127_0_1_1_hostname_is_ddp102_on_that_node_only(lab):
    done, report = ssh_preflight(lab, ["n1", "n2", "n4"], "--timeout", "5")
    assert done.returncode == 1
    f = finding(report, "DDP102")
    assert f["hosts"] == ["n4"] and "n4 -> 127.0.1.1" in f["message"]
    assert "`192.168.213.14  n4`" in f["hint"]  # its real address, as the other nodes resolve it


def test_filtered_and_rejected_rendezvous_port_are_told_apart(lab):
    port = next(_ports)
    rule = "table inet ddpdoctor_test {{\n chain output {{\n type filter hook output priority 0;\n {} \n }}\n}}\n"
    lab.nft("n2", rule.format(f"ip daddr 192.168.213.11 tcp dport {port} drop"))
    lab.nft("n3", rule.format(f"ip daddr 192.168.213.11 tcp dport {port} reject with tcp reset"))
    try:
        done = lab.run("n1", [*ddpdoctor_exe(), "preflight", "--nodes", _nodes(lab, ["n1", "n2", "n3"]), "--master-port",
                              str(port), "--timeout", "4", *lab.ssh_flags(sys.executable), "--json", "-"])
    finally:
        lab.nft_flush("n2")
        lab.nft_flush("n3")
    report = json.loads(done.stdout)
    assert done.returncode == 1
    timed_out, refused = finding(report, "DDP103", "n2"), finding(report, "DDP103", "n3")
    assert timed_out["evidence"]["status"] == "timeout" and "firewall drops" in timed_out["message"]
    assert refused["evidence"]["status"] == "refused" and "refused" in refused["message"]
    assert timed_out["hosts"] == ["n2"] and refused["hosts"] == ["n3"]


def test_socket_ifname_advice_compares_interfaces_and_subnets_across_nodes(lab):
    # GLOO_SOCKET_IFNAME copied from the eth0 nodes to n3, whose NIC is ens5; NCCL_SOCKET_IFNAME
    # pointing at docker0, which has the same address on n1 and n2 and exists on no network.
    env = {"GLOO_SOCKET_IFNAME": "eth0", "NCCL_SOCKET_IFNAME": "docker0"}
    setenv = ["--ssh-option", "SetEnv=GLOO_SOCKET_IFNAME=eth0 NCCL_SOCKET_IFNAME=docker0"]
    done, report = ssh_preflight(lab, ["n1", "n2", "n3"], "--timeout", "5", *setenv, env=env)
    assert done.returncode == 1
    ddp106 = [f for f in report["findings"] if f["code"] == "DDP106"]
    missing = next(f for f in ddp106 if f["message"].startswith("GLOO_SOCKET_IFNAME=eth0"))
    assert missing["hosts"] == ["n3"] and "ens5" in missing["message"] and missing["severity"] == "error"
    local = next(f for f in ddp106 if f["message"].startswith("NCCL_SOCKET_IFNAME=docker0") and "selects" in f["message"])
    assert local["hosts"] == ["n1", "n2"] and "same address 172.17.0.1" in local["message"]
    assert local["severity"] == "warning"  # NCCL's variable in a gloo job
    nccl_missing = next(f for f in ddp106 if f["message"].startswith("NCCL_SOCKET_IFNAME=docker0") and f is not local)
    assert nccl_missing["hosts"] == ["n3"]
    # The suggestion is verified against every node: eth0 on n1/n2, ens5 on n3.
    assert missing["evidence"]["suggested"]["NCCL_SOCKET_IFNAME"] == "eth0,ens5"
    assert "NCCL_SOCKET_IFNAME=eth0,ens5 work" in missing["hint"]
    assert "eth0 on n1; eth0 on n2; ens5 on n3" in missing["hint"]


# ------------------------------------------------------------------ store mode


def test_store_mode_with_the_smoke_test_master_reports_and_the_others_say_where(lab):
    runs = store_preflight(lab, ["n1", "n2", "n3"], ["n1", "n2", "n3"], "--timeout", "20", "--collective",
                           "--json", "-")
    code, stdout, stderr = runs["n1"]
    assert code == 0, stdout + stderr
    report = json.loads(stdout)
    assert report["metrics"]["store_role"] == "master" and report["status"] == "pass"
    assert [row[:2] for row in report["tables"][0]["rows"]] == [["n1", "local"], ["n2", "store"], ["n3", "store"]]
    assert status(report, "DDP102") == "passed" and status(report, "DDP103") == "passed"
    # Each node started its own ranks; they met in the master's store.
    assert status(report, "DDP107") == "passed" and report["metrics"]["collective"] == "ok"
    tables = {t["title"].split(",")[0]: t for t in report["tables"]}
    assert [r[0] for r in tables["All-reduce"]["rows"]][:2] == ["64 KiB", "1 MiB"]
    assert {r[3] for r in tables["Node pairs"]["rows"]} == {"ok"} and len(tables["Node pairs"]["rows"]) == 3
    assert any("NCCL not checked here" in n for n in report["notes"])
    for host in ("n2", "n3"):
        code, stdout, stderr = runs[host]
        assert code == 0 and stdout == "", stderr  # stdout stays the master's: one JSON document
        assert f"{host} published its facts to n1:" in stderr and "printed by ddpdoctor on n1" in stderr


def test_store_mode_names_a_node_that_never_arrives_and_the_trap(lab):
    runs = store_preflight(lab, ["n1", "n4", "n2"], ["n1", "n2", "n3", "n4"], "--timeout", "5", "--json", "-")
    code, stdout, stderr = runs["n1"]
    report = json.loads(stdout)
    assert code == 1
    absent = finding(report, "DDP105", "n3")
    assert absent["evidence"]["kind"] == "absent" and "never published its facts" in absent["message"]
    assert finding(report, "DDP102", "n4")["hosts"] == ["n4"]
    assert runs["n2"][0] == 1 and runs["n4"][0] == 1  # every node exits with the master's verdict


# ------------------------------------------------------------------ the collective smoke test


def test_collective_names_the_node_a_firewall_cuts_off(lab):
    # n3 lets ssh and the rendezvous port through and rejects everything else, as firewalld's
    # default zone does: facts and rendezvous look fine, Gloo's own connections are refused.
    port = next(_ports)
    lab.nft("n3", f"""table inet ddpdoctor_test {{
        chain input {{
            type filter hook input priority 0;
            tcp dport {{ 22, {port} }} accept
            ip saddr 192.168.213.0/24 tcp flags & (syn | ack) == syn reject with icmpx type admin-prohibited
        }}
        chain output {{
            type filter hook output priority 0;
            ip daddr 192.168.213.0/24 tcp flags & (syn | ack) == syn tcp dport != {{ 22, {port} }} reject with icmpx type admin-prohibited
        }}
    }}
    """)
    try:
        done = lab.run("n1", [*ddpdoctor_exe(), "preflight", "--nodes", _nodes(lab, ["n1", "n2", "n3"]), "--master-port",
                              str(port), "--timeout", "4", *lab.ssh_flags(sys.executable), "--collective",
                              "--json", "-"], timeout=150)
    finally:
        lab.nft_flush("n3")
    report = json.loads(done.stdout)
    assert done.returncode == 1, done.stderr
    assert status(report, "DDP103") == "passed"  # the rendezvous port itself is open
    f = finding(report, "DDP107", "n3")
    assert f["hosts"] == ["n3"] and "every pair test with it failed" in f["message"]
    assert "all ports" in f["hint"]


def test_collective_names_a_slow_node(lab):
    lab.shape("n3", "16mbit")  # 2 MB/s: far below 10 % of the others even when a busy machine slows them
    try:
        done, report = ssh_preflight(lab, ["n1", "n2", "n3"], "--timeout", "5", "--collective")
    finally:
        lab.shape("n3", "")
    f = finding(report, "DDP107", "n3")
    assert f["severity"] == "warning" and "n3 is slow" in f["message"], f
    assert done.returncode == 0  # a warning: below the default --fail-on error
    # The whole world still ran, and stopped its size ladder before it got too slow.
    assert report["metrics"]["collective"] == "ok" and report["metrics"]["pairs_failed"] == 0
    sizes = [r[0] for r in next(t for t in report["tables"] if t["title"].startswith("All-reduce"))["rows"]]
    assert sizes[0] == "64 KiB" and "16 MiB" not in sizes


def test_collective_shows_what_the_loopback_trap_does(lab):
    done, report = ssh_preflight(lab, ["n1", "n2", "n4"], "--timeout", "4", "--collective")
    assert done.returncode == 1, done.stderr
    assert finding(report, "DDP102", "n4")["hosts"] == ["n4"]
    broken = finding(report, "DDP107", "n4")
    assert broken["hosts"] == ["n4"] and "127.0.1.1" in broken["hint"]
    # The peers, on 192.168.213.x, sort above 127.0.1.1: they dial the address n4 advertised.
    assert "remote=[127.0.1.1]" in broken["message"]
    pairs = {tuple(p["hosts"]): p for p in broken["evidence"]["pairs"]}
    assert pairs[("n1", "n2")]["error"] is None  # the two healthy nodes talk fine
