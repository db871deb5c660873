"""benchmarks.gather_scale --synth writes the run dir node 0 holds after the benchmark's stall
(every rank's replayed steps, rank 0's lone all_reduce, every rank's stack) and --analyse times
its analysis: the 4,096-rank figure comes from them, so they must give the streamed run's
verdict. In process, at 16 ranks."""

from __future__ import annotations

from benchmarks.gather_scale import analyse_only, synth_run_dir


def test_the_synthetic_run_dir_is_the_benchmarks_stall_and_its_analysis_is_timed(tmp_path):
    run_dir = synth_run_dir(16, 8, step_rate=2, run_s=3, stall_s=5, run_dir=str(tmp_path))
    result = analyse_only(run_dir)
    assert result["ranks"] == 16
    assert result["codes"] == ["DDP502", "DDP503"]  # what the 1,024-rank gather reports
    assert set(result["phases"]) == {"load", "checks", "collector", "json", "terminal"}
    assert all(cpu >= 0 and wall >= 0 for cpu, wall in result["phases"].values())
