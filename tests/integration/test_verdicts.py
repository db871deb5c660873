"""Verdicts on tutorial-style scripts, end to end from the CLI: a PASS means the job trained; a
job that never trained is "incomplete" (exit 4); DDP302 judges whole passes, not iterators;
DDP301 judges what the model is fed when there is no DataLoader."""

import pytest

from tests.helpers.probe_runner import probe

pytestmark = pytest.mark.multiprocess

TUTORIAL = "examples/tutorial_style"


def test_script_that_exits_before_training_is_incomplete_with_its_last_lines_and_the_cpu_hint(tmp_path):
    result = probe(f"{TUTORIAL}/multigpu_torchrun.py", "--max-steps", "8", run_dir=tmp_path / "run",
                   args=["2", "1", "--snapshot_path", str(tmp_path / "snapshot.pt")])
    assert result.code == 4, result.report["findings"]
    assert result.report["status"] == "incomplete"
    reasons = "\n".join(result.report["incomplete"])
    assert "the script never trained: every rank (0, 1) returned after 0 optimizer steps" in reasons
    assert "ranks 0, 1 printed last: Unable to locate sufficient 2 gpus to run this example. Exiting." in reasons
    assert f"`ddpdoctor probe --cpu {TUTORIAL}/multigpu_torchrun.py`" in reasons


def test_script_that_stops_under_cpu_says_which_device_calls_answered_what(tmp_path):
    result = probe(f"{TUTORIAL}/cudnn_gate.py", "--cpu", "--max-steps", "8", run_dir=tmp_path / "run")
    assert result.code == 4
    reasons = "\n".join(result.report["incomplete"])
    assert "rank 0 printed last: [rank 0] cuDNN is required" in reasons
    assert "under --cpu the script was told torch.accelerator.is_available() -> True" in reasons
    assert "torch.backends.cudnn" in reasons


# set_epoch with a constant: tests/scripts/constant_set_epoch.py (test_probe_scripts) and the unit tests.
@pytest.mark.parametrize("mode,words,how", [
    ("never", "sampler.set_epoch() is never called", "never"),
    ("after", "runs too late", "late"),
])
def test_peek_then_bad_set_epoch_is_named_by_ddp302(mode, words, how, tmp_path):
    result = probe(f"{TUTORIAL}/trainer_set_epoch.py", "--cpu", "--max-steps", "16",
                   run_dir=tmp_path / "run", args=["--set-epoch", mode])
    finding = result.one("DDP302")
    assert finding["ranks"] == [0, 1]
    assert words in finding["message"]
    assert finding["evidence"]["set_epoch"] == how
    assert finding["location"]["file"] == f"{TUTORIAL}/trainer_set_epoch.py"


def test_same_seed_custom_get_batch_is_named_by_ddp301_from_the_forward_inputs(tmp_path):
    result = probe(f"{TUTORIAL}/nanogpt_style.py", "--cpu", "--max-steps", "8", run_dir=tmp_path / "run")
    assert result.code == 1
    finding = result.one("DDP301")
    assert finding["ranks"] == [0, 1]
    assert "identical inputs at steps 0-7 (8/8 training forwards)" in finding["message"]
    # The constant causal mask and position ids are not judged: only what changes per step.
    assert finding["evidence"]["inputs_judged"] == ["args[0]", "args[3]"]
    assert finding["location"]["file"] == f"{TUTORIAL}/nanogpt_style.py"
