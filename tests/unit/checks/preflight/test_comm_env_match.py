"""DDP206 (checks/preflight/comm_env_match.py), fed ClusterFacts built from recorded fact files: no
processes, no network."""

from __future__ import annotations

from tests.helpers.preflight_facts import cluster, facts, node
from tests.unit.checks.preflight.facts_for_checks import run


def test_comm_settings_that_differ_are_reported_and_redacted_values_ignored():
    problems = run("DDP206", cluster(node(facts("gpu-a1")), node(facts("gpu-b1"))))
    variables = {p.message.split(" ")[0] for p in problems}
    assert variables == {"NCCL_IB_DISABLE"}  # NCCL_IB_AUTH_TOKEN is redacted: not compared
    assert "1 on gpu-b1" in problems[0].message
