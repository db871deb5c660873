"""`probe --cpu` on scripts written for today's device API: torch.accelerator alone, torch.cuda
alone, and both mixed; each trains under --cpu and the report's "Not covered" note stays exact."""

import subprocess
import sys

import pytest

from tests.helpers.probe_runner import REPO, probe

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.launch import launcher
from ddpdoctor.probe.options import ProbeOptions
from tests.helpers.ports import free_port

pytestmark = pytest.mark.multiprocess

TUTORIAL = "examples/tutorial_style"


def cpu_notes(result):
    return [n for n in result.report["notes"] if n.startswith("--cpu: ")]


def test_every_accelerator_call_answers_like_a_gpu_while_torch_itself_stays_on_the_cpu(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    options = ProbeOptions(script="tests/scripts/accelerator_tour.py", nproc_per_node=1, cpu=True)
    env = launcher.job_environment(options, str(run_dir), "tour", 30.0)
    port = free_port()
    env.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1",
               MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    done = subprocess.run([sys.executable, "-m", "ddpdoctor.probe.inrank.bootstrap", options.script],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ACCELERATOR TOUR OK" in done.stdout
    records = tm.read_records(run_dir / "rank-0.jsonl")
    asked = {r.call: r.answer for r in records if isinstance(r, tm.DeviceQuery)}
    assert asked["torch.accelerator.is_available()"] == "True"
    assert asked["torch.accelerator.current_accelerator()"] == "device(type='cuda')"
    assert asked["torch.accelerator.device_count()"] == "1"
    notes = "\n".join(r.text for r in records if isinstance(r, tm.Note))
    for remap in ("torch.accelerator answers for the CPU", "set_device_index() selects nothing",
                  "torch.accelerator.synchronize() returns at once", "init_process_group('nccl') ran on gloo"):
        assert remap in notes, f"{remap!r} missing from the notes:\n{notes}"
    assert "ddpdoctor bug" not in notes and "could not" not in notes
    assert any(isinstance(r, tm.Step) for r in records)


def test_accelerator_only_tutorial_script_trains_under_cpu_and_resumes_from_its_snapshot(tmp_path):
    """Device-agnostic setup, a GPU-count gate, a Trainer that peeks at a batch, set_epoch, a
    snapshot every epoch: PASS having trained; the second run resumes from the snapshot."""
    snapshot = tmp_path / "snapshot.pt"
    args = ["3", "1", "--snapshot_path", str(snapshot)]
    first = probe(f"{TUTORIAL}/multigpu_torchrun.py", "--cpu", "--max-steps", "12",
                  run_dir=tmp_path / "first", args=args)
    assert first.code == 0, first.report["findings"]
    assert first.report["status"] == "pass"
    assert first.report["metrics"]["steps"] == 12
    assert first.codes & {"DDP301", "DDP302"} == set()  # the peek is not an epoch
    checks = {c["code"]: c["status"] for c in first.report["checks"]}
    assert checks["DDP302"] == "passed" and checks["DDP301"] == "passed"
    notes = "\n".join(cpu_notes(first))
    assert "torch.accelerator answers for the CPU as a 'cuda' accelerator" in notes
    assert f"{TUTORIAL}/multigpu_torchrun.py:" in notes
    from ddpdoctor.probe.inrank import cpu_shim  # (imports torch: not at collection, in every worker)

    assert cpu_shim.UNCOVERED in first.report["notes"]  # the "Not covered" note, exactly
    assert snapshot.exists()

    second = probe(f"{TUTORIAL}/multigpu_torchrun.py", "--cpu", "--max-steps", "4",
                   run_dir=tmp_path / "second", args=args)
    assert second.code == 0, second.report["findings"]
    assert "torch.load(map_location=...) loaded the checkpoint onto the CPU" in "\n".join(cpu_notes(second))
    log = (tmp_path / "second" / "job.log").read_text()
    assert "Resuming training from snapshot at Epoch" in log


def test_script_mixing_torch_cuda_and_torch_accelerator_trains_and_is_judged_on_what_ran(tmp_path):
    """It trains one epoch (fewer steps than the budget) and returns: PASS on those steps."""
    result = probe(f"{TUTORIAL}/trainer_set_epoch.py", "--cpu", "--max-steps", "40",
                   run_dir=tmp_path / "run", args=["--set-epoch", "before", "--epochs", "1"])
    assert result.code == 0, result.report["findings"]
    # The static lint (DDP8xx) reads every --set-epoch branch of the file; the run took "before".
    # (Timing checks aside: other tests share the machine's cores.)
    assert [p for p in result.problems_beyond_timing if not p["code"].startswith("DDP8")] == []
    assert result.report["status"] == "pass" and result.report["incomplete"] == []
    steps = result.report["metrics"]["steps"]
    assert 0 < steps < 40
    assert any(f"returned after {steps} of the 40 steps" in n for n in result.report["notes"])
    notes = "\n".join(cpu_notes(result))
    assert "torch.accelerator answers" in notes and "torch.cuda.set_device()" in notes


def test_torch_cuda_only_script_without_a_dataloader_trains_under_cpu(tmp_path):
    result = probe(f"{TUTORIAL}/nanogpt_style.py", "--cpu", "--max-steps", "8",
                   run_dir=tmp_path / "run", args=["--seed-per-rank"])
    assert result.code == 0, result.report["findings"]
    assert "DDP301" not in result.codes
    assert {c["code"]: c["status"] for c in result.report["checks"]}["DDP301"] == "passed"
    assert result.report["metrics"]["steps"] == 8
    assert "torch.accelerator answers" not in "\n".join(cpu_notes(result))
