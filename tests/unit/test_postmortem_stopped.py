"""A job ended from outside (the scheduler's limit, scancel, a kill of torchrun): how it ended,
said as such; never a rank "a peer failed", never a pass."""

from __future__ import annotations

from ddpdoctor.core.findings import Severity
from ddpdoctor.postmortem.report import postmortem
from tests.helpers.postmortem_logs import interleaved, launcher_signalled, traceback, watchdog


def _report(tmp_path, text: str):
    path = tmp_path / "job.log"
    path.write_text(text)
    return postmortem([str(path)], Severity.ERROR, set())


def test_the_launchers_own_signal_is_how_the_job_ended_not_a_peer_failure(tmp_path):
    # One rank's watchdog fired at 01:10:00; nothing ended the job until torchrun was sent
    # SIGTERM at 01:12:10 (the scheduler's time limit): as an H200 run with torch 2.11 left it.
    text = interleaved(2, {r: watchdog(r, 7, timeout_ms=12000) for r in (0, 1)},
                       tail=launcher_signalled(15, minute=12))
    report = _report(tmp_path, text)
    messages = [f.message for f in report.findings]
    assert not any("peer went away" in m or "SignalException" in m for m in messages)
    assert report.status == "incomplete" and report.exit_code == 4
    [note] = [n for n in report.notes if "ended from outside" in n]
    assert "torchrun got SIGTERM (15)" in note and "130 s after the first watchdog timeout" in note
    assert report.metrics["ended_from_outside"] == note


def test_a_slurm_time_limit_with_nothing_before_it_is_incomplete_never_a_pass(tmp_path):
    text = interleaved(4, {}, tail=[
        "slurmstepd: error: *** JOB 4242 ON gpu-node-07 CANCELLED AT 2026-11-28T01:40:00 DUE TO TIME LIMIT ***",
        "srun: Job step aborted: Waiting up to 32 seconds for job step to finish."])
    report = _report(tmp_path, text)
    assert report.status == "incomplete" and report.exit_code == 4
    stall = " ".join(report.missing)
    assert "SLURM cancelled job 4242 on gpu-node-07 due to time limit" in stall
    assert "no rank left an error or a watchdog timeout before it" in stall


def test_a_rank_error_before_the_stop_stays_the_first_cause(tmp_path):
    special = {1: traceback(1, "RuntimeError: CUDA error: an illegal memory access was encountered")}
    text = interleaved(2, special, tail=launcher_signalled(2, minute=15))
    report = _report(tmp_path, text)
    assert report.metrics["first_cause_ranks"] == [1] and report.exit_code == 1
    assert any("torchrun got SIGINT (2)" in n for n in report.notes)


def test_signal_names_as_older_pythons_print_them():
    from ddpdoctor.postmortem.stopped import signal_name

    assert signal_name("SIGTERM") == signal_name("15") == "SIGTERM (15)"
    assert signal_name("WEIRD") == "WEIRD"


def test_a_slurm_cancel_under_sruns_task_label_is_read_too(tmp_path):
    # `srun -l` labels each line with its task; the step daemon's line can carry one as well
    text = "\n".join(f"{r}: step {s} loss 0.5" for s in range(50) for r in range(2)) + \
        "\n0: slurmstepd: error: *** STEP 4242.0 ON gpu-node-07 CANCELLED AT 2026-11-28T01:40:00 ***\n"
    report = _report(tmp_path, text)
    assert report.exit_code == 4
    ended = report.metrics["ended_from_outside"]
    assert "SLURM cancelled job 4242.0 on gpu-node-07 (scancel or a signal to the step)" in ended
