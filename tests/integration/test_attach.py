"""`ddpdoctor attach` on real jobs started with plain torchrun (gloo), outside ddpdoctor.

Each test asserts the verdict, that the job was left running (never paused, signalled or
ended) and that nothing of ddpdoctor's is left (no py-spy process, no temporary file)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.helpers.attach_jobs import SCRIPT, TorchrunJob, pyspy_on
from tests.helpers.cli_runner import ddpdoctor_exe, run_cli

pytestmark = [pytest.mark.multiprocess,
              pytest.mark.skipif(shutil.which("py-spy") is None, reason="needs py-spy")]


@pytest.fixture
def job_in(tmp_path):
    jobs = []

    def start(mode: str, **kwargs) -> TorchrunJob:
        job = TorchrunJob(mode, tmp_path, **kwargs)
        jobs.append(job)
        return job

    yield start
    for job in jobs:
        job.end()


def _attach(job: TorchrunJob, tmp_path, *extra: str):
    spool = tmp_path / "tmp"
    spool.mkdir(exist_ok=True)
    pids = job.rank_pids()
    done = run_cli("attach", str(job.proc.pid), "--duration", "2", "--json", "-", *extra,
                   timeout=60, env={"TMPDIR": str(spool)})
    assert job.running(), "attach must leave the job running"
    assert pyspy_on(pids) == []
    assert list(spool.iterdir()) == [], "attach left temporary files"
    return done, json.loads(done.stdout)


def _finding(report: dict, code: str) -> dict:
    found = [f for f in report["findings"] if f["code"] == code]
    assert found, (code, report["findings"], report["notes"])
    return found[0]


def test_rank_stuck_in_user_code_is_named_with_its_line(job_in, tmp_path):
    job = job_in("stuck")
    job.wait_until(lambda s: s.get(0, -1) >= 4)
    done, report = _attach(job, tmp_path)
    assert done.code == 1, done.stderr
    hang = _finding(report, "DDP503")
    assert hang["ranks"] == [1]
    assert hang["location"]["file"] == "attach_job.py"
    assert hang["location"]["line"] == 35  # the loop in wait_for_file_that_never_comes
    assert "rank 0 waits in Tensor.backward" in hang["message"], hang["message"]
    assert "rank 1 is running wait_for_file_that_never_comes" in hang["message"]


def test_rank0_only_collective_is_a_skipped_collective(job_in, tmp_path):
    job = job_in("rank0_collective")
    job.wait_until(lambda s: s.get(0, -1) >= 4 and s.get(1, -1) >= 5)
    junit = tmp_path / "attach.xml"
    done, report = _attach(job, tmp_path, "--junit", str(junit), "--github")
    assert done.code == 1, done.stderr
    assert "::error file=attach_job.py,line=53,title=DDP502" in done.stderr  # stdout holds the JSON
    assert "<failure" in junit.read_text() and 'name="DDP502' in junit.read_text()
    skipped = _finding(report, "DDP502")
    assert skipped["ranks"] == [0]
    assert skipped["location"]["line"] == 53  # dist.barrier() under `if rank == 0`
    assert "rank 0 entered barrier" in skipped["message"]
    assert "rank 1 skipped it" in skipped["message"]
    assert _finding(report, "DDP503")["location"]["line"] == 53


def test_straggler_sleeping_in_its_data_loading_is_named(job_in, tmp_path):
    job = job_in("straggler")
    job.wait_until(lambda s: min(s.get(0, -1), s.get(1, -1)) >= 9)
    before = job.steps()[0]
    done, report = _attach(job, tmp_path)
    assert done.code == 0, done.stderr  # DDP601 is a warning
    slow = _finding(report, "DDP601")
    assert slow["ranks"] == [1]
    assert "load_batch at attach_job.py:29" in slow["message"], slow["message"]
    job.wait_until(lambda s: s.get(0, -1) > before, timeout=30)  # it kept training


def test_healthy_fast_job_is_said_healthy(job_in, tmp_path):
    job = job_in("healthy")
    job.wait_until(lambda s: min(s.get(0, -1), s.get(1, -1)) >= 40)
    before = job.steps()[0]
    done, report = _attach(job, tmp_path)
    assert done.code == 0, done.stderr
    assert report["status"] == "pass"
    assert report["findings"] == []
    assert report["metrics"]["state"] == "healthy"
    assert any(n.startswith("healthy: every rank advanced") for n in report["notes"])
    job.wait_until(lambda s: s.get(0, -1) > before, timeout=30)
    # Only when asked: --end, after the report, ends the job through torchrun's agent.
    ended = run_cli("attach", str(job.proc.pid), "--duration", "1", "--end", "-q", timeout=60)
    assert ended.code == 0, ended.stderr
    job.proc.wait(timeout=60)


def test_a_backward_longer_than_the_window_is_neither_hung_nor_healthy(job_in, tmp_path):
    # Each rank's backward computes for seconds (10 s or more: the script times the machine) and
    # sends nothing until its end: the stack stands still and no read or write call is made, the shape of a
    # hang (DDP503, exit 1, before BUSY_CPU), but the ranks' CPU is busy. Attached as the first
    # backward starts, the window lies within it.
    job = job_in("long_backward", script=SCRIPT.parent / "attach_long_backward.py")
    job.wait_until(lambda s: min(s.get(0, -1), s.get(1, -1)) >= 0, timeout=120)
    done, report = _attach(job, tmp_path)
    assert done.code == 4, done.stderr  # incomplete: not a hang, not a pass
    assert report["metrics"]["state"] == "unknown" and report["findings"] == []
    hang = next(c for c in report["checks"] if c["code"] == "DDP503")
    assert hang["status"] == "incomplete", hang
    assert "ranks 0 and 1 stood in backward at attach_long_backward.py:41" in hang["reason"], hang["reason"]
    assert "--duration longer than one training step" in hang["reason"]


def test_ranks_waiting_for_a_rank_evaluating_alone_are_not_hung_yet(job_in, tmp_path):
    # Rank 0 evaluates alone after step 5 (busy, no collective) and rank 1 waits for it in step
    # 6's all-reduce: the shape of a hang on rank 1's side (DDP503, exit 1, before the rule),
    # but rank 0 works. A long phase of one rank is not a hang; one window cannot tell it from
    # a loop that never ends, so the verdict is incomplete with both places named.
    job = job_in("eval", script=SCRIPT.parent / "attach_rank0_eval.py")
    job.wait_until(lambda s: min(s.get(0, -1), s.get(1, -1)) >= 5, timeout=120)
    done, report = _attach(job, tmp_path)
    assert done.code == 4, done.stderr
    assert report["metrics"]["state"] == "unknown" and report["findings"] == []
    hang = next(c for c in report["checks"] if c["code"] == "DDP503")
    assert hang["status"] == "incomplete", hang
    assert hang["reason"].startswith("rank 0 is running evaluate at attach_rank0_eval.py:25 ("), hang["reason"]
    assert "while rank 1 waits in Tensor.backward at attach_rank0_eval.py:37" in hang["reason"]


def test_ptrace_refused_is_one_line_with_the_fix_and_proc_is_still_read(job_in, tmp_path):
    """For real: the job runs as another user (uid 12345, allowed to read the venv through
    ambient DAC capabilities) and ddpdoctor runs as root without CAP_SYS_PTRACE, which is what
    a user attaching to a colleague's job, or a container without SYS_PTRACE, meets."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run the job as another user")
    tmp_path.chmod(0o777)
    caps = "+dac_override,+dac_read_search"
    job = job_in("healthy", wrapper=["setpriv", "--reuid", "12345", "--regid", "12345",
                                     "--clear-groups", "--inh-caps", caps, "--ambient-caps", caps])
    job.wait_until(lambda s: min(s.get(0, -1), s.get(1, -1)) >= 9)
    pids = job.rank_pids()
    done = subprocess.run(["setpriv", "--bounding-set", "-sys_ptrace", "--inh-caps", "-sys_ptrace",
                           *ddpdoctor_exe(), "attach", str(job.proc.pid), "--duration", "1",
                           "--json", "-"], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert job.running() and pyspy_on(pids) == []
    report = json.loads(done.stdout)
    assert done.returncode == 4, done.stderr  # incomplete: never a pass without stacks
    refused = [n for n in report["notes"] if n.startswith("ptrace was refused")]
    assert len(refused) == 1 and "ptrace_scope" in refused[0] and "SYS_PTRACE" in refused[0]
    rows = report["tables"][0]["rows"]
    assert len(rows) == 2 and all(row[-1] != "?" for row in rows)  # /proc state still read


def test_a_pid_that_is_no_process_or_no_rank_is_one_line_exit_2():
    gone = run_cli("attach", "999999999", timeout=60)
    assert gone.code == 2 and gone.stderr.count("\n") == 1 and "no process 999999999" in gone.stderr
    mine = run_cli("attach", str(os.getpid()), timeout=60)
    assert mine.code == 2 and "is no rank" in mine.stderr and "Traceback" not in mine.stderr


def test_a_process_that_exits_while_sampled_is_said_so_and_nothing_is_left(tmp_path):
    from ddpdoctor.attach.sample import Recorders

    short = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.0)"])
    try:
        recorders = Recorders([short.pid], 2.5, 50)
        recorders.start()
        got = recorders.collect()[short.pid]
    finally:
        short.wait(timeout=10)
    assert got.exited and got.error == "the process exited while it was sampled"
    assert pyspy_on([short.pid]) == [] and not os.path.exists(recorders.folder)


def test_a_rank_killed_during_the_window_is_reported_and_never_healthy(job_in, tmp_path):
    import signal
    import time

    import psutil

    job = job_in("healthy")
    job.wait_until(lambda s: s.get(0, -1) >= 4 and s.get(1, -1) >= 4)
    victim = sorted(job.rank_pids())[-1]
    attach = subprocess.Popen([*ddpdoctor_exe(), "attach", str(job.proc.pid), "--duration", "6",
                               "--json", "-"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not pyspy_on([victim]) and time.monotonic() < deadline:  # sampling has begun
        time.sleep(0.1)
    time.sleep(1.0)
    os.kill(victim, signal.SIGKILL)
    out, err = attach.communicate(timeout=90)
    report = json.loads(out)
    assert attach.returncode == 4, err
    assert report["metrics"]["state"] == "unknown"
    assert not any(n.startswith("healthy") for n in report["notes"])
    said = [n for n in report["notes"] if "exited" in n and "into the window" in n]
    assert said and "not judged healthy" in said[0], report["notes"]
    assert {f["status"] for f in report["checks"] if f["code"] == "DDP503"} == {"incomplete"}



def test_pid_1_is_refused_in_one_line_never_judged_as_rank_0():
    # init's environment is unreadable here (and it is no rank, readable or not)
    done = run_cli("attach", "1", "--json", "-", timeout=60)
    assert done.code == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "not a Python process" in done.stderr or "is no rank" in done.stderr
    assert done.stdout == ""


def test_sigterm_to_attach_while_it_samples_ends_it_at_once_and_leaves_the_job_and_no_pyspy(job_in, tmp_path):
    # SIGTERM promptly in every phase (issue 35): attach's sampling window is the long one.
    import signal
    import time

    job = job_in("healthy")
    job.wait_until(lambda s: len(s) == 2 and min(s.values()) >= 2)
    pids = job.rank_pids()
    spool = tmp_path / "tmp"
    spool.mkdir()
    attach = subprocess.Popen([*ddpdoctor_exe(), "attach", str(job.proc.pid), "--duration", "30"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "TMPDIR": str(spool)})
    deadline = time.monotonic() + 60
    while not pyspy_on(pids) and time.monotonic() < deadline and attach.poll() is None:
        time.sleep(0.1)
    assert pyspy_on(pids), "attach never started sampling"
    signalled = time.monotonic()
    attach.send_signal(signal.SIGTERM)
    _out, err = attach.communicate(timeout=30)
    assert attach.returncode == 128 + signal.SIGTERM, err[-2000:]
    assert time.monotonic() - signalled < 10 and "Traceback" not in err
    assert job.running() and pyspy_on(pids) == [] and list(spool.iterdir()) == []
