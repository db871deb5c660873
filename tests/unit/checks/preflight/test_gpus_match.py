"""DDP205 (checks/preflight/gpus_match.py), fed ClusterFacts built from recorded fact files: no
processes, no network."""

from __future__ import annotations

from tests.helpers.preflight_facts import cluster, facts, node
from tests.unit.checks.preflight.facts_for_checks import run


def test_gpu_model_and_count_differences_are_reported():
    problems = run("DDP205", cluster(node(facts("gpu-a1")), node(facts("gpu-c1"))))
    assert len(problems) == 2
    assert "8 on gpu-a1; 4 on gpu-c1" in problems[0].message or "4 on gpu-c1" in problems[0].message
    assert "A100" in problems[1].message and "H100" in problems[1].message
