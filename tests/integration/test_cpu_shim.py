"""`probe --cpu`: scripts written for CUDA and NCCL, diagnosed on this CPU-only machine with the
codes a GPU run would give, and a report that says what the CPU run stood in for."""

import subprocess
import sys

import pytest

from tests.helpers.probe_runner import REPO, run_example

from ddpdoctor.probe.records import telemetry as tm

from ddpdoctor.probe.launch import launcher
from ddpdoctor.probe.options import ProbeOptions
from tests.helpers.ports import free_port

pytestmark = pytest.mark.multiprocess


def cpu_notes(result):
    return [n for n in result.report["notes"] if n.startswith("--cpu: ")]


def test_gpu_script_without_sampler_is_reported_under_cpu_with_the_remaps_it_hit(tmp_path):
    result = run_example("gpu_no_sampler", tmp_path, "--cpu")
    assert result.code == 1
    finding = result.one("DDP301")
    assert finding["ranks"] == [0, 1]
    assert finding["location"]["file"] == "examples/gpu_no_sampler.py"
    assert result.report["metrics"]["outcome"] == "completed"
    notes = "\n".join(cpu_notes(result))
    for remap in ("set_device", "init_process_group('nccl') ran on gloo", "moved to CUDA",
                  "device_ids and output_device dropped", "GradScaler is disabled",
                  "autocast('cuda', dtype=float16) is disabled", "cuda.Event", "synchronize"):
        assert remap in notes, f"{remap!r} missing from the notes:\n{notes}"
    assert "examples/gpu_no_sampler.py:" in notes  # each remap names where the script hit it
    assert "Not covered: AMP" in notes
    # One note per remap, not one per rank.
    assert len(cpu_notes(result)) == len(set(n.split(" (first at")[0] for n in cpu_notes(result)))


def test_gpu_script_with_rank_conditional_collective_is_named_under_cpu(tmp_path):
    result = run_example("gpu_desync", tmp_path, "--cpu")
    assert result.code == 1
    codes = result.codes & {"DDP501", "DDP502"}
    assert codes, f"neither DDP501 nor DDP502; got {sorted(result.codes)}"
    finding = result.one(sorted(codes)[-1])
    assert finding["location"]["file"] == "examples/gpu_desync.py"
    assert "all_reduce" in finding["message"]


def test_healthy_gpu_script_is_clean_under_cpu(tmp_path):
    result = run_example("gpu_healthy", tmp_path, "--cpu")
    assert result.code == 0, result.report["findings"]
    assert result.problems_beyond_timing == []
    assert result.report["metrics"]["outcome"] == "completed"
    assert result.report["metrics"]["steps"] >= 15  # 3 epochs cut to 5 batches each
    notes = "\n".join(cpu_notes(result))
    assert "torch.load(map_location=...) loaded the checkpoint onto the CPU" in notes
    assert "torch.zeros(device=...)" in notes


def test_gpu_script_without_cpu_crashes_and_the_report_suggests_cpu(tmp_path):
    result = run_example("gpu_no_sampler", tmp_path)
    assert result.code == 1
    # Every rank fails at the same line; the one that fails first ends the job, and on a loaded
    # machine the other may not have started yet (seen under load: "rank 0 raised ... while rank 1 left no
    # telemetry", torchrun's SIGTERM for rank 1).
    crash = result.one("DDP504")
    assert crash["ranks"] and set(crash["ranks"]) <= {0, 1}
    assert "has no attribute '_cuda_setDevice'" in crash["message"], crash["message"]
    assert any("ddpdoctor probe --cpu examples/gpu_no_sampler.py" in n
               for n in result.report["notes"]), result.report["notes"]
    assert not cpu_notes(result)


def test_every_remapped_cuda_api_answers_like_a_gpu_and_instruments_see_the_scripts_arguments(tmp_path):
    """One rank started the way torchrun starts it, running the bootstrap with --cpu on a script
    that calls every API the shim stands in for and asserts the answers."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    options = ProbeOptions(script="tests/data/gpu_api_tour.py", nproc_per_node=1, cpu=True)
    env = launcher.job_environment(options, str(run_dir), "tour", 30.0)
    port = free_port()
    env.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1",
               MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    done = subprocess.run([sys.executable, "-m", "ddpdoctor.probe.inrank.bootstrap", options.script],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "GPU API TOUR OK" in done.stdout

    records = tm.read_records(run_dir / "rank-0.jsonl")
    first = {type(r): r for r in reversed(records)}
    # The shim sits inside the instruments: they record what the script asked for...
    assert first[tm.InitEnter].backend == "nccl"
    assert first[tm.DDPInfo].device_ids == ["0"]
    # ...while torch ran the CPU version.
    assert first[tm.Init].backend == "gloo"
    notes = "\n".join(r.text for r in records if isinstance(r, tm.Note))
    for remap in ("init_process_group(device_id=<CUDA device>)", "new_group('nccl') ran on gloo",
                  "pin_memory()", "device queries", "tensors created on a CUDA device"):
        assert remap in notes, f"{remap!r} missing from the notes:\n{notes}"
    assert "ddpdoctor bug" not in notes
