"""Verdicts on tutorial-style scripts, end to end from the CLI: a PASS means the job trained; a
job that never trained is "incomplete" (exit 4). (DDP302 judging whole passes, not iterators, and
DDP301 judging what the model is fed when there is no DataLoader, are tested over what probes of
these scripts recorded: tests/unit/test_probe_scripts_recorded.py.)"""

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
