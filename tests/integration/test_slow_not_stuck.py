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
    result = probe(SCRIPT, *STALL, run_dir=tmp_path / "run", args=["--pause", "30", "--at", "3", "--only", "1"])
    assert result.code == 1
    assert result.report["metrics"]["outcome"] == "stalled"
    stall = result.one("DDP503")
    assert stall["evidence"]["odd_ranks"] == [1] and stall["location"]["line"] == 47
    assert "rank 1 is running evaluate" in stall["message"] or "rank 1 waits in" in stall["message"]
    assert stall["evidence"]["stall_s"] < 3 + 3
    assert result.wall_s < 30  # ended at the stall, long before rank 1's pause would have


def test_ranks_polling_for_ever_end_incomplete_at_timeout_with_where_they_were(tmp_path):
    result = probe(SCRIPT, *STALL, "--timeout", "15", run_dir=tmp_path / "run", args=["--poll"])
    assert result.code == 4, result.report["findings"]
    report = result.report
    assert report["status"] == "incomplete" and report["metrics"]["outcome"] == "timeout_busy"
    assert [f["code"] for f in report["findings"] if f["severity"] == "error"] == []
    [why] = [r for r in report["incomplete"] if r.startswith("DDP503")]
    assert "ranks 0-1 spent" in why and f"wait_for_shards() at {SCRIPT}:43 before their first step" in why
