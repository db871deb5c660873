"""DDP204 (checks/preflight/versions_match.py), fed ClusterFacts built from recorded fact files: no
processes, no network."""

from __future__ import annotations

from ddpdoctor.core.findings import Severity
from tests.helpers.preflight_facts import cluster, facts, node
from tests.unit.checks.preflight.facts_for_checks import run


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
