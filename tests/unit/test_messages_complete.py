"""No placeholder reaches a user: every message and fix the checks produce over the recorded
facts and telemetry in tests/ is complete - no `<host>`, no `{name}` left unfilled. What every
other test made the checks say is judged by the plugin tests/helpers/message_holes.py at the end
of the session, in any order and across xdist workers."""

from __future__ import annotations

from pathlib import Path

from ddpdoctor.core.registry import all_checks, run_checks
from ddpdoctor.preflight.hosts import HostEntry
from ddpdoctor.preflight.cluster import NodeResult
from ddpdoctor.preflight.transport import TransportFailure
from ddpdoctor.probe.run_model.loaded_run import RunModel
from tests.helpers.message_holes import holes
from tests.helpers.preflight_facts import cluster, facts, node

RECORDINGS = Path(__file__).resolve().parents[1] / "probe_recordings"


def preflight_scenarios():
    dead = [NodeResult(HostEntry(f"gpu{i:02d}", None, f"hosts.txt:{i}"), "ssh", None,
                       failure=TransportFailure(kind, f"ssh to gpu{i:02d} failed ({kind})", "ssh: evidence", 255))
            for i, kind in enumerate(["refused", "refused", "auth", "auth", "timeout", "timeout", "host-key",
                                      "host-key", "no-python", "no-python", "unreachable", "unreachable",
                                      "other", "other", "absent", "absent"])]
    mixed = [node(facts(name)) for name in ("gpu-a1", "gpu-b1", "gpu-c1", "cpu-1", "debian-1", "minimal")]
    yield cluster(mixed[0], *dead)
    yield cluster(*mixed)
    yield cluster(*mixed, bind="in-use", backend="nccl", world_size=99)


def test_no_message_or_fix_over_the_recorded_facts_has_a_hole():
    said = []
    for scenario in preflight_scenarios():
        for result in run_checks("preflight", scenario):
            said += [(f.message, f.hint) for f in result.findings]
    for recording in sorted(RECORDINGS.iterdir()):
        for result in run_checks("probe", RunModel.load(recording)):
            said += [(f.message, f.hint) for f in result.findings]
    assert len(said) > 50, "too few messages rendered to prove anything"
    broken = [(message, hint) for message, hint in said if holes(message) or holes(hint)]
    assert broken == []


def test_the_hole_finder_finds_holes():
    assert holes("fix: check that <host> is up") == ["<host>"]
    assert holes("run ssh {host} python3 -V") == ["{host}"]
    assert holes("value <redacted> hidden; dict {'a': 1}") == []
    assert holes("torch.save(m, f'ckpt-{epoch}.pt') on every rank") == []
    assert [spec for spec in all_checks() if spec.code == "DDP105"]
