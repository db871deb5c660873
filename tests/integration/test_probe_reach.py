"""Issue 16 through the CLI: DDP406 (marked ready twice), DDP304 (double sharding), the boundary
paths the probe reached and the lines of the script it ran. (The non-reentrant twin, a shared layer
checkpointed twice and double sharding under Accelerate are judged over what their probes
recorded: tests/unit/test_probe_scripts_recorded.py.)"""

import pytest

from tests.helpers.probe_runner import probe

pytestmark = pytest.mark.multiprocess


def notes(result, prefix):
    return [n for n in result.report["notes"] if n.startswith(prefix)]


def test_reentrant_checkpoint_crash_is_one_ddp406_naming_parameter_and_checkpoint(tmp_path):
    # A generous stall timeout: the crash comes at the first backward, on a busy machine DDP's
    # construction alone can outlast the adaptive one.
    result = probe("examples/reentrant_checkpoint.py", "--max-steps", "6", "--stall-timeout", "60",
                   run_dir=tmp_path / "run")
    assert result.code == 1
    finding = result.one("DDP406")
    assert finding["ranks"] == [0, 1]
    assert "layers." in finding["message"] and "find_unused_parameters=True" in finding["message"]
    assert (finding["location"]["file"], finding["location"]["line"]) == ("examples/reentrant_checkpoint.py", 64)
    assert "use_reentrant=False" in finding["hint"]
    assert "DDP504" not in result.codes and "DDP401" not in result.codes


def test_per_rank_subset_under_distributed_sampler_is_double_sharding(tmp_path):
    result = probe("examples/double_sharding.py", run_dir=tmp_path / "run")
    finding = result.one("DDP304")
    assert finding["ranks"] == [0, 1] and finding["severity"] == "warning"
    assert "640 / 2²" in finding["message"] and "(50%)" in finding["message"]
    assert finding["evidence"]["static"]["code"] == "DDP803"  # the lint's twin, merged


def test_healthy_example_is_clean_reaches_every_epoch_boundary_and_sees_its_code(tmp_path):
    # The one probe of the healthy example with its defaults (test_probe_examples.py's clean run
    # was the same job: one run, both proofs).
    result = probe("examples/healthy.py", run_dir=tmp_path / "run")
    assert result.code == 0, result.report["findings"]
    assert result.problems_beyond_timing == [], result.report["findings"]
    assert result.report["status"] == "pass"
    assert result.report["metrics"]["steps"] >= 15  # 3 epochs cut to 5 batches each
    assert result.report["metrics"]["outcome"] == "completed"
    [line] = notes(result, "boundaries: ")
    assert "epoch end ✓ (3 epochs" in line and "evaluation ✓ (healthy.py:88" in line
    assert "checkpoint save ✓ (healthy.py:97" in line and "checkpoint load — none in healthy.py" in line
    metrics = result.report["metrics"]
    assert metrics["boundaries"]["epoch_ends"] == 3 and metrics["boundaries"]["save"] == 3
    [script] = [f for f in metrics["coverage"]["files"] if f["file"] == "examples/healthy.py"]
    assert script["ran"] >= script["statements"] - 3  # only the CUDA branch is left
    assert [b[:2] for b in script["not_seen"]] == [[122, 123]]


def test_step_interval_evaluation_is_said_unreached_with_the_flag_that_reaches_it(tmp_path):
    script = "tests/scripts/step_interval_eval.py"
    missed = probe(script, "--max-steps", "6", run_dir=tmp_path / "missed")
    [line] = notes(missed, "boundaries: ")
    assert "evaluation — not reached (ddp.eval() at step_interval_eval.py:41 never ran)" in line
    assert "checkpoint load — not reached (torch.load at step_interval_eval.py:27" in line
    [hint] = notes(missed, "the branch at step_interval_eval.py:49")
    assert f"`ddpdoctor probe {script} -- --eval-interval 2`" in hint
    blocks = missed.report["metrics"]["coverage"]["files"][0]["not_seen"]
    assert [41, 45, 5, "evaluate"] in blocks

    reached = probe(script, "--max-steps", "6", run_dir=tmp_path / "reached", args=["--eval-interval", "2"])
    [line] = notes(reached, "boundaries: ")
    assert "evaluation ✓" in line and "checkpoint save ✓" in line
    assert notes(reached, "the branch at") == []
    not_seen = reached.report["metrics"]["coverage"]["files"][0]["not_seen"]
    assert [b[0] for b in not_seen] == [27, 59]  # --resume's load; after the loop (--max-steps)
