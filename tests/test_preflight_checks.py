"""Each preflight check, fed ClusterFacts built from recorded fact files: no processes, no network."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from ddpdoctor.cluster import ClusterFacts, NodeResult, PortBind
from ddpdoctor.errors import UsageError
from ddpdoctor.facts import ConnectResult, NodeFacts
from ddpdoctor.findings import Problem, Severity
from ddpdoctor.hosts import HostEntry
from ddpdoctor.recorded import load_facts_file, match_facts_files
from ddpdoctor.registry import Skipped, all_checks, get_check
from ddpdoctor.transport import TransportFailure

DATA = Path(__file__).parent / "data" / "facts"


def facts(name: str, **changes) -> NodeFacts:
    loaded = load_facts_file(str(DATA / f"{name}.json"))
    loaded = copy.deepcopy(loaded)
    for key, value in changes.items():
        setattr(loaded, key, value)
    return loaded


def node(f: NodeFacts | None, host: str | None = None, slots=None, transport="ssh", **kw) -> NodeResult:
    host = host or f.hostname
    resolved = kw.pop("resolved", list(f.hostname_addresses) if f else [])
    return NodeResult(HostEntry(host, slots, f"hosts.txt:{kw.pop('line', 1)}"), transport, f,
                      resolved=resolved, **kw)


def cluster(*nodes: NodeResult, master=None, port=29500, bind="listening", backend="auto", **kw) -> ClusterFacts:
    master = master or nodes[0].host
    return ClusterFacts(nodes=list(nodes), master_addr=master, master_port=port, backend=backend,
                        port_bind=kw.pop("port_bind", PortBind(master, port, bind)),
                        this_machine=nodes[0].facts, **kw)


def run(code: str, c: ClusterFacts) -> list[Problem] | Skipped:
    return get_check(code).func(c)


def healthy() -> ClusterFacts:
    return cluster(node(facts("gpu-a1"), slots=8), node(facts("gpu-a2"), slots=8))


def test_every_preflight_check_passes_on_a_healthy_two_node_gpu_cluster():
    c = healthy()
    for spec in all_checks("preflight"):
        value = spec.func(c)
        assert isinstance(value, Skipped) or value == [], (spec.code, value)


def test_every_check_documents_what_why_and_fix():
    for spec in all_checks("preflight"):
        doc = spec.doc
        for part in ("What it detects:", "Why it hurts:", "How to fix:"):
            assert part in doc, (spec.code, part)


def test_recorded_fact_files_load_back_into_the_dataclass():
    for path in DATA.glob("*.json"):
        loaded = load_facts_file(str(path))
        assert isinstance(loaded, NodeFacts) and loaded.hostname
        again = NodeFacts.from_dict(loaded.to_dict())
        assert again == loaded


def test_a_minimal_hand_written_fact_file_takes_defaults():
    f = load_facts_file(str(DATA / "minimal.json"))
    assert (f.hostname, f.torch, f.gpu_count, f.interfaces, f.connect) == ("gpu-min", "2.5.1+cu124", 8, {}, None)


def test_a_fact_file_with_a_wrong_type_is_a_usage_error_naming_the_field(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"hostname": "x", "gpu_count": "eight"}')
    with pytest.raises(UsageError, match="gpu_count"):
        load_facts_file(str(bad))


def test_fact_files_match_host_entries_by_hostname_fqdn_or_short_name():
    entries = [HostEntry("gpu-a1.cluster.internal", None, "h:1"), HostEntry("gpu-b1", None, "h:2")]
    matched = match_facts_files([str(DATA / "gpu-a1.json"), str(DATA / "gpu-b1.json")], entries)
    assert set(matched) == {"gpu-a1.cluster.internal", "gpu-b1"}
    with pytest.raises(UsageError, match="does not name"):
        match_facts_files([str(DATA / "gpu-c1.json")], entries)


# DDP101

def test_unresolvable_host_is_reported_with_its_line_and_a_fix():
    bad = NodeResult(HostEntry("no-such-host.invalid", None, "hosts.txt:2"), "ssh", None,
                     failure=TransportFailure("unresolvable", "ssh cannot resolve no-such-host.invalid"),
                     resolve_error="[Errno -2] Name or service not known")
    problems = run("DDP101", cluster(node(facts("gpu-a1")), bad))
    assert len(problems) == 1
    assert problems[0].hosts == ["no-such-host.invalid"]
    assert "hosts.txt:2" in problems[0].hint and "/etc/hosts" in problems[0].hint


def test_node_that_cannot_resolve_its_own_hostname_is_reported():
    f = facts("gpu-a2", resolve_errors={"gpu-a2": "[Errno -2] Name or service not known"}, hostname_addresses=[])
    problems = run("DDP101", cluster(node(facts("gpu-a1")), node(f, resolved=["10.0.0.12"])))
    assert problems[0].hosts == ["gpu-a2"] and "own hostname" in problems[0].message


def test_ssh_alias_that_dns_cannot_resolve_is_only_a_warning():
    aliased = node(facts("gpu-a2"), host="a2-alias", resolved=[], resolve_error="Name or service not known")
    problems = run("DDP101", cluster(node(facts("gpu-a1")), aliased))
    assert problems[0].severity == Severity.WARNING and problems[0].hosts == ["a2-alias"]


# DDP102

def test_debian_127_0_1_1_hostname_trap_is_reported_in_a_multi_node_job():
    problems = run("DDP102", cluster(node(facts("gpu-a1")), node(facts("debian-1"), resolved=["10.0.2.7"])))
    assert len(problems) == 1
    assert problems[0].hosts == ["debian-1"] and "127.0.1.1" in problems[0].message
    assert "/etc/hosts" in problems[0].hint


def test_localhost_as_master_addr_in_a_multi_node_job_is_reported():
    problems = run("DDP102", cluster(node(facts("gpu-a1")), node(facts("gpu-a2")), master="localhost"))
    assert any("MASTER_ADDR localhost" in p.message for p in problems)


def test_loopback_is_fine_when_every_node_shares_one_network_namespace():
    shared = facts("gpu-a1").netns
    c = cluster(node(facts("gpu-a1"), host="localhost", resolved=["127.0.0.1"]),
                node(facts("gpu-a2", netns=shared), host="127.0.0.2", resolved=["127.0.0.2"]))
    assert isinstance(run("DDP102", c), Skipped)


# DDP103

def test_refused_and_timed_out_connects_are_told_apart():
    refused = facts("gpu-a2", connect=ConnectResult("gpu-a1:29500", "refused", "10.0.0.11", "Connection refused"))
    filtered = facts("gpu-b1", connect=ConnectResult("gpu-a1:29500", "timeout", "10.0.0.11", "no answer within 3.0 s"))
    problems = run("DDP103", cluster(node(facts("gpu-a1")), node(refused), node(filtered)))
    by_host = {p.hosts[0]: p for p in problems}
    assert set(by_host) == {"gpu-a2", "gpu-b1"}
    assert "refused" in by_host["gpu-a2"].message and "firewall" in by_host["gpu-b1"].message
    assert "29500" in by_host["gpu-b1"].hint


def test_unresolvable_master_on_a_node_is_reported():
    lost = facts("gpu-a2", connect=ConnectResult("gpu-a1:29500", "unresolvable", None, "Name or service not known"))
    problems = run("DDP103", cluster(node(facts("gpu-a1")), node(lost)))
    assert problems[0].hosts == ["gpu-a2"] and "gpu-a1" in problems[0].hint


def test_connect_check_is_skipped_when_nothing_held_the_port():
    c = cluster(node(facts("gpu-a1")), node(facts("gpu-a2")), bind="not-checked")
    assert isinstance(run("DDP103", c), Skipped)


# DDP104

def test_port_in_use_names_the_process_holding_it():
    bind = PortBind("gpu-a1", 29500, "in-use", "Address already in use", 4242, "python3")
    problems = run("DDP104", cluster(node(facts("gpu-a1")), port_bind=bind))
    assert problems[0].hosts == ["gpu-a1"]
    assert "python3 (pid 4242)" in problems[0].message and "kill 4242" in problems[0].hint


def test_port_in_use_by_an_invisible_process_suggests_ss():
    bind = PortBind("gpu-a1", 29500, "in-use", "Address already in use")
    problems = run("DDP104", cluster(node(facts("gpu-a1")), port_bind=bind))
    assert "ss -ltnp" in problems[0].hint


# DDP105

@pytest.mark.parametrize("kind, fix_word", [("refused", "sshd"), ("auth", "ssh-copy-id"), ("timeout", "--timeout"),
                                            ("host-key", "known_hosts"), ("no-python", "--remote-python")])
def test_unreachable_node_gets_a_fix_for_its_kind_of_failure(kind, fix_word):
    dead = NodeResult(HostEntry("gpu-a2", None, "hosts.txt:2"), "ssh", None,
                      failure=TransportFailure(kind, f"ssh to gpu-a2 failed ({kind})", "ssh: some evidence", 255))
    problems = run("DDP105", cluster(node(facts("gpu-a1")), dead))
    assert problems[0].hosts == ["gpu-a2"] and fix_word in problems[0].hint
    assert "ssh: some evidence" in problems[0].message


def test_many_nodes_failing_the_same_way_make_one_finding():
    dead = [NodeResult(HostEntry(f"gpu{i:02d}", None, f"h:{i}"), "ssh", None,
                       failure=TransportFailure("timeout", f"ssh to gpu{i:02d} timed out")) for i in range(10)]
    problems = run("DDP105", cluster(node(facts("gpu-a1")), *dead))
    assert len(problems) == 1 and len(problems[0].hosts) == 10 and "and 4 more" in problems[0].message


# DDP106

def test_socket_ifname_naming_a_missing_interface_suggests_a_common_one():
    problems = run("DDP106", cluster(node(facts("gpu-a1")), node(facts("gpu-c1"))))
    assert {p.hosts[0] for p in problems} == {"gpu-c1"}
    messages = " ".join(p.message for p in problems)
    assert "GLOO_SOCKET_IFNAME=ens5" in messages and "NCCL_SOCKET_IFNAME==ens5" in messages
    assert "no interface name is up on every node" in problems[0].hint


def test_nccl_prefix_and_exclude_syntax_is_understood():
    a1 = facts("gpu-a1", env={"NCCL_SOCKET_IFNAME": "^docker,lo"})
    assert run("DDP106", cluster(node(a1), node(facts("gpu-a2")))) == []
    down = facts("gpu-a2", env={"NCCL_SOCKET_IFNAME": "docker"})
    problems = run("DDP106", cluster(node(facts("gpu-a1")), node(down)))
    assert problems[0].hosts == ["gpu-a2"] and "ens5" in problems[0].hint


# DDP201

def test_wrong_world_size_shows_the_arithmetic():
    c = cluster(node(facts("gpu-a1")), node(facts("gpu-a2")), nproc_per_node=8, world_size=8)
    problems = run("DDP201", c)
    assert "2 nodes x 8 processes = 16" in problems[0].message and "--world-size 16" in problems[0].hint


def test_stale_world_size_in_the_environment_is_reported():
    stale = facts("gpu-a2", env={"WORLD_SIZE": "8"})
    problems = run("DDP201", cluster(node(facts("gpu-a1"), slots=8), node(stale, slots=8)))
    assert problems[0].hosts == ["gpu-a2"] and "WORLD_SIZE" in problems[0].message


def test_slots_that_disagree_with_nproc_per_node_are_a_warning():
    c = cluster(node(facts("gpu-a1"), slots=8), node(facts("gpu-a2"), slots=4), nproc_per_node=8)
    problems = run("DDP201", c)
    assert problems[0].severity == Severity.WARNING and problems[0].hosts == ["gpu-a2"]


# DDP202

def test_duplicate_host_is_reported_with_both_lines():
    problems = run("DDP202", cluster(node(facts("gpu-a1"), line=1), node(facts("gpu-a1"), line=3)))
    assert problems[0].hosts == ["gpu-a1"] and "hosts.txt lines 1, 3" in problems[0].message


def test_two_names_for_one_address_are_reported():
    problems = run("DDP202", cluster(node(facts("gpu-a1")), node(facts("gpu-a1"), host="10.0.0.11")))
    assert problems[0].hosts == ["gpu-a1", "10.0.0.11"]


def test_master_port_differing_between_nodes_is_reported():
    a = facts("gpu-a1", env={"MASTER_PORT": "29500"})
    b = facts("gpu-a2", env={"MASTER_PORT": "29501"})
    problems = run("DDP202", cluster(node(a), node(b)))
    assert "MASTER_PORT differs" in problems[0].message and "29501 on gpu-a2" in problems[0].message


# DDP203

def test_nccl_check_is_skipped_with_a_reason_when_backend_resolves_to_gloo():
    result = run("DDP203", cluster(node(facts("gpu-a1")), node(facts("cpu-1"))))
    assert isinstance(result, Skipped) and "cpu-1" in result.reason


def test_asking_for_nccl_on_a_cpu_node_is_an_error():
    problems = run("DDP203", cluster(node(facts("gpu-a1")), node(facts("cpu-1")), backend="nccl"))
    assert problems[0].hosts == ["cpu-1"] and "CPU build" in problems[0].message


def test_more_processes_than_gpus_is_an_error():
    problems = run("DDP203", cluster(node(facts("gpu-a1")), node(facts("gpu-c1")), nproc_per_node=8))
    assert problems[0].hosts == ["gpu-c1"] and "4 GPU" in problems[0].message
    assert "--nproc-per-node 4" in problems[0].hint


# DDP204

def test_version_differences_name_which_nodes_have_which():
    problems = run("DDP204", cluster(node(facts("gpu-a1")), node(facts("gpu-a2")), node(facts("gpu-b1"))))
    text = {p.message.split(" differs")[0]: p for p in problems}
    assert set(text) == {"torch", "torch's CUDA", "NCCL", "NVIDIA driver", "Python"}
    assert "2.5.1+cu124 on gpu-a1, gpu-a2; 2.4.0+cu121 on gpu-b1" in text["torch"].message
    assert text["NCCL"].hosts == ["gpu-b1"] and "2.21.5" in text["NCCL"].hint
    assert text["NVIDIA driver"].severity == Severity.WARNING
    assert text["Python"].severity == Severity.ERROR  # 3.11 vs 3.10


def test_python_patch_level_difference_is_only_a_warning():
    problems = run("DDP204", cluster(node(facts("gpu-a1")), node(facts("gpu-a2", python="3.11.4"))))
    assert [(p.severity, p.hosts) for p in problems] == [(Severity.WARNING, ["gpu-a2"])]


def test_nccl_not_checked_on_a_node_is_not_a_version_difference():
    problems = run("DDP204", cluster(node(facts("gpu-a1")), node(facts("gpu-a2", nccl=None))))
    assert problems == []


# DDP205

def test_gpu_model_and_count_differences_are_reported():
    problems = run("DDP205", cluster(node(facts("gpu-a1")), node(facts("gpu-c1"))))
    assert len(problems) == 2
    assert "8 on gpu-a1; 4 on gpu-c1" in problems[0].message or "4 on gpu-c1" in problems[0].message
    assert "A100" in problems[1].message and "H100" in problems[1].message


# DDP206

def test_comm_settings_that_differ_are_reported_and_redacted_values_ignored():
    problems = run("DDP206", cluster(node(facts("gpu-a1")), node(facts("gpu-b1"))))
    variables = {p.message.split(" ")[0] for p in problems}
    assert variables == {"NCCL_IB_DISABLE"}  # NCCL_IB_AUTH_TOKEN is redacted: not compared
    assert "1 on gpu-b1" in problems[0].message


def test_nodes_that_did_not_answer_do_not_make_a_job_multi_node():
    shared = facts("gpu-a1").netns
    dead = NodeResult(HostEntry("no-such-host.invalid", None, "h:3"), "ssh", None,
                      failure=TransportFailure("unresolvable", "x"), resolve_error="Name or service not known")
    c = cluster(node(facts("gpu-a1"), host="localhost", resolved=["127.0.0.1"]),
                node(facts("gpu-a2", netns=shared), host="127.0.0.2", resolved=["127.0.0.2"]), dead,
                master="localhost")
    result = run("DDP102", c)
    assert isinstance(result, Skipped) and "no-such-host.invalid not reached" in result.reason


def test_recorded_node_without_a_namespace_counts_as_another_machine():
    minimal = load_facts_file(str(DATA / "minimal.json"))
    c = cluster(node(facts("gpu-a1"), host="localhost", resolved=["127.0.0.1"]), node(minimal, transport="file"),
                master="localhost")
    assert [p.hosts for p in run("DDP102", c)][0] == ["localhost"]


def test_unresolvable_master_addr_outside_the_list_is_ddp101():
    c = cluster(node(facts("gpu-a1")), node(facts("gpu-a2")), master="rdzv.typo.invalid", bind="not-checked",
                master_resolve_error="[Errno -2] Name or service not known")
    problems = run("DDP101", c)
    assert problems[0].hosts == ["rdzv.typo.invalid"] and "MASTER_ADDR" in problems[0].message
