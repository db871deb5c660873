"""The preflight checks as a whole, and the tests that judge several checks at once, fed
ClusterFacts built from recorded fact files: no processes, no network. Each check's own tests
are in test_<module>.py beside this file."""

from __future__ import annotations

import pytest

from ddpdoctor.core.errors import UsageError
from ddpdoctor.preflight.node.facts import NodeFacts
from ddpdoctor.preflight.hosts import HostEntry
from ddpdoctor.preflight.recorded import load_facts_file, match_facts_files
from ddpdoctor.core.registry import Skipped, all_checks
from tests.helpers.preflight_facts import DATA, cluster, facts, node
from tests.unit.checks.preflight.facts_for_checks import run, healthy, nic_facts, smoke, pair


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


def test_suggestion_for_differently_named_nics_is_verified_on_every_node():
    from ddpdoctor.preflight import nic
    a = nic_facts("a", {"docker0": "172.17.0.1/16", "eth0": "10.1.0.11/24"})
    b = nic_facts("b", {"ens5": "10.1.0.12/24"})
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


def test_collective_not_run_because_facts_are_unsound_is_skipped_with_the_reason():
    from ddpdoctor.preflight.collective_result import skipped
    c = healthy()
    c.collective = skipped("not run: DDP105 failed (A node cannot be reached); fix that first")
    result = run("DDP107", c)
    assert isinstance(result, Skipped) and "DDP105" in result.reason


def test_loopback_trap_node_gets_a_hint_pointing_at_ddp102():
    c = smoke(pairs=[pair("a", "b", 5e8), pair("a", "c", error="refused, remote=[127.0.1.1]:1", number=1),
                      pair("b", "c", error="refused", number=2)], world="skipped", world_detail="pair tests failed")
    c.nodes[2].facts = facts("debian-1")
    assert "DDP102" in run("DDP107", c)[0].hint


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
