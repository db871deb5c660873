"""The probe checks on telemetry that real probe runs recorded (tests/probe_recordings/).

Each recording is the run dir of `ddpdoctor probe examples/<name>.py` (2 ranks, gloo, CPU)
without job.log and report.json, and with outcome.json's log_tail emptied. To record one again:

    ddpdoctor probe examples/<name>.py --run-dir tests/probe_recordings/<name>
    rm tests/probe_recordings/<name>/{job.log,report.json}

No process is started here: the checks read what the instruments wrote.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ddpdoctor.core.findings import Location
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.core.registry import FAILED, NOTED, WARNED, run_checks

RECORDINGS = Path(__file__).resolve().parents[1] / "probe_recordings"
# Where the examples lay on the machine that recorded them (the sites name their files there),
# read from a recording rather than pinned to one checkout's path.
EXAMPLES = str(Path(json.loads((RECORDINGS / "healthy" / "probe.json").read_text())["script"]).parent) + "/"

# recording -> the checks that must fail or warn on it, and no other
EXPECTED = {
    "healthy": set(),
    "desync_collective": {"DDP502", "DDP503"},
    "hang_barrier": {"DDP502", "DDP503"},
    "crash_rank1": {"DDP504"},
    "wrong_world_size": {"DDP503", "DDP505"},
    "random_split_per_rank": {"DDP301"},
    "unused_params_rank_dependent": {"DDP401", "DDP504"},
    "no_set_epoch": {"DDP302"},
}


def findings_of(name: str) -> dict:
    results = run_checks("probe", RunModel.load(RECORDINGS / name))
    return {r.spec.code: r.findings for r in results if r.status in (FAILED, WARNED, NOTED)}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_recorded_run_gets_exactly_its_findings(name):
    assert set(findings_of(name)) == EXPECTED[name]


def test_rank_conditional_logging_all_reduce_is_named_with_its_call_site():
    found = findings_of("desync_collective")
    [skip] = found["DDP502"]
    assert skip.location == Location(EXAMPLES + "desync_collective.py", 109)
    assert skip.evidence["entered_ranks"] == [0] and skip.evidence["skipped_ranks"] == [1]
    assert "rank 1 waits in DistributedDataParallel.forward" in skip.message
    [stall] = found["DDP503"]
    assert stall.location == skip.location  # both wait in torch: the one that entered the extra call


def test_rank_spinning_outside_a_collective_is_the_odd_one_in_a_stall():
    found = findings_of("hang_barrier")
    [stall] = found["DDP503"]
    assert "rank 1 is running wait_for_val_cache" in stall.message
    assert stall.location == Location(EXAMPLES + "hang_barrier.py", 59)
    [skip] = found["DDP502"]
    assert skip.evidence["op"] == "barrier"


def test_recorded_crash_names_the_exception_and_the_waiting_rank():
    [crash] = findings_of("crash_rank1")["DDP504"]
    assert crash.ranks == [1]
    assert crash.message.startswith("rank 1 raised IndexError: index out of range in self at "
                                    + EXAMPLES + "crash_rank1.py:102")
    assert "rank 0 was waiting in DDP gradient all-reduce (bucket 0)" in crash.message
    assert "Connection closed by peer" in crash.message


def test_recorded_wrong_world_size_is_named():
    [never] = findings_of("wrong_world_size")["DDP505"]
    assert "the script passes world_size=4" in never.message
    assert "but the probe launched 2 processes" in never.message


def test_recorded_per_rank_random_split_estimates_the_shared_share():
    [overlap] = findings_of("random_split_per_rank")["DDP301"]
    [pair] = overlap.evidence["pairs"]
    assert 0.2 <= pair["shared_share"] <= 0.8


def test_recorded_rank_dependent_unused_parameters_point_at_ddp401():
    found = findings_of("unused_params_rank_dependent")
    [unused] = found["DDP401"]
    assert unused.ranks == [1] and unused.evidence["differs_across_ranks"] is True
    [crash] = found["DDP504"]
    assert "DDP401" in crash.hint
