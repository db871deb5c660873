"""Slow is not stuck (issue 28), through the CLI: a long start-up or an every-rank pause passes
with the time shown; one rank pausing while the others wait in a collective is named, as fast as
any hang; ranks polling for ever end incomplete at --timeout, never a pass, never a hang error.

The stall timeout is small (3 s) so that a "40 s start-up" is a few times the stall timeout.
"""

import pytest

from tests.helpers.probe_runner import probe

pytestmark = pytest.mark.multiprocess
SCRIPT = "tests/scripts/slow_not_stuck.py"
STALL = ("--stall-timeout", "3")


def test_start_up_and_every_rank_pause_longer_than_the_stall_timeout_pass_with_the_time_shown(tmp_path):
    result = probe(SCRIPT, *STALL, "--max-steps", "8", run_dir=tmp_path / "run",
                   args=["--startup", "10", "--pause", "10", "--at", "4"])
    assert result.code == 0, result.report["findings"]
    assert result.report["status"] == "pass" and result.report["metrics"]["outcome"] == "completed"
    metrics = result.report["metrics"]
    assert metrics["startup_s"] >= 10
    assert metrics["startup_where"].startswith("ranks 0-1 ")
    [pause] = metrics["pauses"]
    assert pause["after_step"] == 4 and pause["s"] >= 10
    assert pause["where"] == f"ranks 0-1 in evaluate() at {SCRIPT}:47"
    notes = result.report["notes"]
    assert any(n.startswith("pause: 10.") and "evaluate() at" in n for n in notes)


def test_one_rank_pausing_while_the_other_waits_in_the_all_reduce_is_named_within_the_stall_budget(tmp_path):
    # Rank 1's pause is far longer than any start-up on a loaded machine (42 s of wall seen at load
    # 6), so the job ending well inside it proves the probe ended it at the stall, not after it.
    result = probe(SCRIPT, *STALL, run_dir=tmp_path / "run", args=["--pause", "240", "--at", "3", "--only", "1"])
    assert result.code == 1
    assert result.report["metrics"]["outcome"] == "stalled"
    stall = result.one("DDP503")
    assert stall["evidence"]["odd_ranks"] == [1] and stall["location"]["line"] == 47
    assert "rank 1 is running evaluate" in stall["message"] or "rank 1 waits in" in stall["message"]
    assert stall["evidence"]["stall_s"] < 3 + 3
    assert result.wall_s < 180  # ended at the stall, long before rank 1's pause would have


def test_ranks_polling_for_ever_end_incomplete_at_timeout_with_where_they_were(tmp_path):
    # 40 s: the ranks must be polling when --timeout ends the job; on a loaded machine torchrun
    # and the ranks take more than 15 s to start. They poll asleep: no CPU while it waits.
    result = probe(SCRIPT, *STALL, "--timeout", "40", run_dir=tmp_path / "run", args=["--poll"])
    assert result.code == 4, result.report["findings"]
    report = result.report
    assert report["status"] == "incomplete" and report["metrics"]["outcome"] == "timeout_busy"
    assert [f["code"] for f in report["findings"] if f["severity"] == "error"] == []
    [why] = [r for r in report["incomplete"] if r.startswith("DDP503")]
    assert "ranks 0-1 spent" in why and f"wait_for_shards() at {SCRIPT}:43 before their first step" in why


# --- before any rank exists ---------------------------------------------------------------------

def test_timeout_before_torchrun_started_any_rank_is_incomplete_start_up_not_a_hang(tmp_path):
    """On a loaded machine torchrun's agent and the ranks can spend longer importing torch than
    --timeout: no rank has written a record, and the job's processes are working. That is a
    start-up, not a stuck launch (CI saw DDP503 "left no telemetry" there). One second is less
    than any machine needs to start a rank (torch's import alone is over a CPU-second)."""
    result = probe("examples/healthy.py", "--timeout", "1", run_dir=tmp_path / "run")
    assert result.code == 4, result.report["findings"]
    report = result.report
    assert report["status"] == "incomplete" and report["metrics"]["outcome"] == "timeout_busy"
    assert [f["code"] for f in report["findings"] if f["severity"] == "error"] == []
    [why] = [r for r in report["incomplete"] if r.startswith("DDP503")]
    assert "no rank had started: the launcher and its processes were starting up" in why


def test_timeout_while_the_script_prepares_before_spawning_its_ranks_is_incomplete(tmp_path):
    """--launcher none: the script's own process prepares its data (asleep, as on a download)
    before mp.spawn. Its own code, nothing pending: busy, not a hang."""
    result = probe("tests/scripts/slow_launch.py", "--launcher", "none", "--timeout", "4",
                   run_dir=tmp_path / "run", args=["--prepare", "600"])
    assert result.code == 4, result.report["findings"]
    report = result.report
    assert report["status"] == "incomplete" and report["metrics"]["outcome"] == "timeout_busy"
    [why] = [r for r in report["incomplete"] if r.startswith("DDP503")]
    assert "no rank had started: the script was in its own code before starting its ranks" in why
