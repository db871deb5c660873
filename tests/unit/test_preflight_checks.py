"""Each preflight check, fed ClusterFacts built from recorded fact files: no processes, no network."""

from __future__ import annotations

import pytest

from ddpdoctor.preflight.cluster import ClusterFacts, NodeResult, PortBind
from ddpdoctor.core.errors import UsageError
from ddpdoctor.preflight.node.facts import ConnectResult, NodeFacts
from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.preflight.hosts import HostEntry
from ddpdoctor.preflight.recorded import load_facts_file, match_facts_files
from ddpdoctor.core.registry import Skipped, all_checks, get_check
from ddpdoctor.preflight.transport import TransportFailure
from tests.helpers.preflight_facts import DATA, cluster, facts, node


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


# DDP106: interfaces and subnets compared across nodes

def _nic_facts(name: str, interfaces: dict, env: dict | None = None, **changes) -> NodeFacts:
    """A node whose interfaces are given as {"eth0": "10.1.0.11/24", ...} (address/prefix)."""
    addrs = {"lo": ["127.0.0.1", "::1"], **{n: [cidr.split("/")[0]] for n, cidr in interfaces.items()}}
    nets = {"lo": ["127.0.0.1/8", "::1/128"], **{n: [cidr] for n, cidr in interfaces.items()}}
    return facts("gpu-a1", hostname=name, interfaces=addrs, networks=nets, interfaces_down=[],
                 env=env or {}, netns=f"boot/net:{name}", hostname_addresses=[next(iter(interfaces.values())).split("/")[0]],
                 **changes)


def test_socket_ifname_selecting_docker0_with_the_same_address_everywhere_is_reported():
    env = {"GLOO_SOCKET_IFNAME": "docker0"}
    a = _nic_facts("a", {"docker0": "172.17.0.1/16", "eth0": "10.1.0.11/24"}, env)
    b = _nic_facts("b", {"docker0": "172.17.0.1/16", "eth0": "10.1.0.12/24"}, env)
    problems = run("DDP106", cluster(node(a), node(b)))
    assert len(problems) == 1 and problems[0].hosts == ["a", "b"]
    assert "same address 172.17.0.1" in problems[0].message
    assert "GLOO_SOCKET_IFNAME=eth0 work on every node" in problems[0].hint


def test_socket_ifname_loopback_cannot_reach_other_nodes():
    env = {"GLOO_SOCKET_IFNAME": "lo"}
    a = _nic_facts("a", {"eth0": "10.1.0.11/24"}, env)
    b = _nic_facts("b", {"eth0": "10.1.0.12/24"}, env)
    problems = run("DDP106", cluster(node(a), node(b)))
    assert problems[0].hosts == ["a", "b"] and "loopback" in problems[0].message


def test_nccl_default_pick_of_a_veth_before_the_nic_is_reported_for_an_nccl_job():
    # NCCL excludes only docker* and lo by default: a veth that comes first in kernel order wins.
    a = _nic_facts("a", {"veth1a2b": "10.99.0.1/24", "ens5": "10.1.0.11/24"}, gpu_count=8)
    b = _nic_facts("b", {"ens5": "10.1.0.12/24"}, gpu_count=8)
    problems = run("DDP106", cluster(node(a), node(b), backend="nccl"))
    assert len(problems) == 1 and problems[0].hosts == ["a"]
    assert "NCCL would bootstrap over veth1a2b" in problems[0].message
    assert problems[0].evidence["suggested"]["NCCL_SOCKET_IFNAME"] == "ens5"


def test_node_sharing_no_subnet_with_the_others_is_a_warning():
    a = _nic_facts("a", {"eth0": "10.1.0.11/24"})
    b = _nic_facts("b", {"eth0": "10.1.0.12/24"})
    c = _nic_facts("c", {"eth0": "10.9.0.13/24"})
    problems = run("DDP106", cluster(node(a), node(b), node(c)))
    assert [(p.hosts, p.severity) for p in problems] == [(["c"], Severity.WARNING)]
    assert "shares no subnet" in problems[0].message


def test_cloud_slash_32_addresses_everywhere_are_not_judged_isolated():
    a = _nic_facts("a", {"eth0": "10.128.0.5/32"})
    b = _nic_facts("b", {"eth0": "10.128.0.6/32"})
    assert run("DDP106", cluster(node(a), node(b))) == []


def test_suggestion_for_differently_named_nics_is_verified_on_every_node():
    from ddpdoctor.preflight import nic
    a = _nic_facts("a", {"docker0": "172.17.0.1/16", "eth0": "10.1.0.11/24"})
    b = _nic_facts("b", {"ens5": "10.1.0.12/24"})
    advice = nic.advise({"a": a, "b": b})
    assert advice.nccl == "eth0,ens5" and advice.gloo is None
    assert nic.nccl_choice(a, advice.nccl)[0] == "eth0" and nic.nccl_choice(b, advice.nccl)[0] == "ens5"
    assert "ens5 on b" in advice.text()


def test_nccl_socket_ifname_syntax():
    from ddpdoctor.preflight import nic
    names = ["lo", "docker0", "eth0", "eth1", "ib0"]
    assert nic.nccl_selects("eth", names) == ["eth0", "eth1"]
    assert nic.nccl_selects("=eth1", names) == ["eth1"]
    assert nic.nccl_selects("^docker,lo", names) == ["eth0", "eth1", "ib0"]
    assert nic.nccl_selects("^=eth0,lo", names) == ["docker0", "eth1", "ib0"]


# DDP107: the collective smoke test, fed recorded outcomes

def _smoke(**kw) -> ClusterFacts:
    from ddpdoctor.preflight.collective_result import CollectiveOutcome
    c = cluster(node(facts("gpu-a1"), host="a"), node(facts("gpu-a2"), host="b"), node(facts("gpu-b1"), host="c"))
    c.collective = CollectiveOutcome(**{"status": "ran", "hosts": ["a", "b", "c"], "world_size": 3, "world": "ok", **kw})
    return c


def _pair(a, b, busbw=None, error=None, number=0):
    from ddpdoctor.preflight.collective_result import PairResult
    return PairResult([a, b], number, 1 << 20, None if error else (1 << 20) / busbw, busbw, error)


def test_collective_check_is_skipped_until_asked_for_and_says_how():
    result = run("DDP107", healthy())
    assert isinstance(result, Skipped) and "--collective" in result.reason


def test_collective_not_run_because_facts_are_unsound_is_skipped_with_the_reason():
    from ddpdoctor.preflight.collective_result import skipped
    c = healthy()
    c.collective = skipped("not run: DDP105 failed (A node cannot be reached); fix that first")
    result = run("DDP107", c)
    assert isinstance(result, Skipped) and "DDP105" in result.reason


def test_node_failing_every_pair_while_the_others_work_is_named():
    c = _smoke(pairs=[_pair("a", "b", 5e8), _pair("a", "c", error="Connection refused", number=1),
                      _pair("b", "c", error="timed out", number=2)], world="skipped",
               world_detail="pair tests failed")
    problems = run("DDP107", c)
    assert [p.hosts for p in problems] == [["c"]]
    assert "every pair test with it failed" in problems[0].message and "all ports" in problems[0].hint


def test_loopback_trap_node_gets_a_hint_pointing_at_ddp102():
    c = _smoke(pairs=[_pair("a", "b", 5e8), _pair("a", "c", error="refused, remote=[127.0.1.1]:1", number=1),
                      _pair("b", "c", error="refused", number=2)], world="skipped", world_detail="pair tests failed")
    c.nodes[2].facts = facts("debian-1")
    assert "DDP102" in run("DDP107", c)[0].hint


def test_slow_node_is_a_warning_and_noise_is_not():
    slow = _smoke(pairs=[_pair("a", "b", 5e8), _pair("a", "c", 4e6, number=1), _pair("b", "c", 5e6, number=2)])
    problems = run("DDP107", slow)
    assert [(p.hosts, p.severity) for p in problems] == [(["c"], Severity.WARNING)]
    noisy = _smoke(pairs=[_pair("a", "b", 1.2e9), _pair("a", "c", 2.3e8, number=1), _pair("b", "c", 2.6e8, number=2)])
    assert run("DDP107", noisy) == []


def test_world_all_reduce_timeout_names_the_ranks():
    from ddpdoctor.preflight.collective_result import RankResult
    ranks = [RankResult(0, "a", 0, "size"), RankResult(1, "b", 0, "world-init", "killed at the deadline while in the first all-reduce"),
             RankResult(2, "c", 0, "size")]
    c = _smoke(pairs=[_pair("a", "b", 5e8)], ranks=ranks, world="failed")
    problems = run("DDP107", c)
    assert problems[0].ranks == [1] and problems[0].hosts == ["b"] and "timed out" in problems[0].message


def test_pair_schedule_meets_every_pair_once_in_disjoint_rounds():
    from ddpdoctor.preflight.collective_smoke import pair_rounds
    for n in range(2, 10):
        rounds = pair_rounds(n, cap=99)
        met = [tuple(p) for r in rounds for p in r]
        assert sorted(met) == sorted((i, j) for i in range(n) for j in range(i + 1, n))
        for r in rounds:
            nodes = [x for p in r for x in p]
            assert len(nodes) == len(set(nodes))
    assert len(pair_rounds(64)) == 8  # capped: 8 partners per node tell a bad node from a bad pair


def test_worker_events_merge_into_pairs_sizes_and_rank_errors():
    from ddpdoctor.preflight.collective_result import from_nodes
    answers = {
        "a": {"ranks": [{"rank": 0, "local_rank": 0, "exit_code": 0, "killed": False, "stderr": [], "events": [
            {"phase": "started"}, {"phase": "imported"}, {"phase": "store"},
            {"phase": "pair", "round": 0, "pair": [0, 1], "seconds": 0.002, "bytes": 1048576},
            {"phase": "world-init"}, {"phase": "check"},
            {"phase": "size", "bytes": 65536, "seconds": 0.001, "algbw": 6.5e7, "busbw": 8.7e7}, {"phase": "done"}]}]},
        "b": {"ranks": [{"rank": 1, "local_rank": 0, "exit_code": None, "killed": True, "stderr": ["boom"], "events": [
            {"phase": "started"}, {"phase": "imported"}, {"phase": "store"},
            {"phase": "pair", "round": 0, "pair": [0, 1], "seconds": 0.004, "bytes": 1048576}, {"phase": "world-init"}]}]},
        "c": "ssh to c was refused: nothing listens on its ssh port",
    }
    out = from_nodes(["a", "b", "c"], "gloo", 3, answers, 12.0, rounds=[[[0, 1]], [[0, 2]]])
    assert out.pairs[0].ok and out.pairs[0].seconds == 0.004  # the slower end's time
    assert out.pairs[1].error == "neither end got to this pair test"
    assert [s.bytes for s in out.sizes] == [65536]
    assert out.ranks[1].error == "killed at the deadline while in the first all-reduce"
    assert out.node_failures == {"c": "ssh to c was refused: nothing listens on its ssh port"}
    assert out.world == "failed"
