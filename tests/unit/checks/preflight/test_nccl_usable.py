"""DDP203 (checks/preflight/nccl_usable.py), fed ClusterFacts built from recorded fact files: no
processes, no network."""

from __future__ import annotations

from ddpdoctor.core.registry import Skipped
from tests.helpers.preflight_facts import cluster, facts, node
from tests.unit.checks.preflight.facts_for_checks import run


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
