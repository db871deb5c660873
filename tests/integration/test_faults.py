"""ddpdoctor survives every way a job, or ddpdoctor itself, can fail: it exits with the
documented code within its deadline, writes a report that says what it saw (and what it could
not), and leaves not one process of the job or of its own behind.

Each test runs the real CLI on a script from tests/faults/ while fault_runner watches every
process ddpdoctor and its job start (DataLoader workers included); `finish()` fails the test if
any of them is still running when ddpdoctor has exited.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from tests.helpers.cli_runner import ddpdoctor_exe

from tests.helpers.fault_runner import REPO as REPO_ROOT
from tests.helpers.fault_runner import WatchedRun

multiprocess = pytest.mark.multiprocess
FAULTS = "tests/faults"


def probe_args(script: str, run_dir: Path, *flags: str, args: tuple = ()) -> list[str]:
    cli = ["probe", f"{FAULTS}/{script}", "--run-dir", str(run_dir),
           "--json", str(run_dir.parent / "report.json"), "-q", *flags]
    return cli + (["--", *args] if args else [])


def report_of(run_dir: Path) -> dict:
    """The --json report, which must be the one stored in the run dir as well."""
    report = json.loads((run_dir.parent / "report.json").read_text())
    stored = json.loads((run_dir / "report.json").read_text())
    assert stored["findings"] == report["findings"] and stored["status"] == report["status"]
    return report


def finding(report: dict, code: str) -> dict:
    found = [f for f in report["findings"] if f["code"] == code]
    assert found, f"no {code} in {[(f['code'], f['message']) for f in report['findings']]}"
    return found[0]


def of_run(pid: int, run_dir: Path) -> bool:
    """A live process of this run (a reused pid belongs to someone else)."""
    try:
        return psutil.Process(pid).environ().get("DDPDOCTOR_RUN_DIR") == str(run_dir.resolve())
    except psutil.Error:
        return False


def path_without_py_spy() -> str:
    dirs = [d for d in os.environ.get("PATH", "").split(os.pathsep)
            if d and not os.path.exists(os.path.join(d, "py-spy"))]
    path = os.pathsep.join(dirs)
    assert shutil.which("py-spy", path=path) is None
    return path


def real_py_spy() -> str | None:
    beside_python = Path(sys.executable).with_name("py-spy")
    return str(beside_python) if beside_python.exists() else shutil.which("py-spy")


def denying_py_spy(bin_dir: Path) -> str | None:
    """A PATH whose `py-spy` is the real one, run without CAP_SYS_PTRACE: the kernel refuses it
    the ranks (which keep the capability), as Yama or a container refuses a user's py-spy. None
    where that cannot be arranged (not root, no setpriv)."""
    setpriv, pyspy = shutil.which("setpriv"), real_py_spy()
    if os.geteuid() != 0 or not setpriv or not pyspy:
        return None
    bin_dir.mkdir()
    wrapper = bin_dir / "py-spy"
    wrapper.write_text(f'#!/bin/sh\nexec {setpriv} --bounding-set -sys_ptrace {pyspy} "$@"\n')
    wrapper.chmod(0o755)
    return f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"


def unshare_mount(mount: str) -> list[str] | None:
    """A wrapper that runs ddpdoctor in its own mount namespace after `mount` (a shell command):
    a read-only or full file system that fails for root too. None where unshare is refused."""
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or not unshare:
        return None
    probe = subprocess.run([unshare, "-m", "true"], capture_output=True, timeout=10)
    if probe.returncode != 0:
        return None
    return [unshare, "-m", "sh", "-c", f'{mount} && exec "$@"', "sh"]


# --- a rank dies ------------------------------------------------------------------------------

@multiprocess
def test_rank_killed_by_sigkill_mid_step_is_reported_and_its_dataloader_workers_are_reaped(tmp_path):
    pids = tmp_path / "workers"
    pids.mkdir()
    run_dir = tmp_path / "run"
    done = WatchedRun(*probe_args("sigkill_with_workers.py", run_dir, args=(str(pids),)),
                      run_dir=run_dir).finish(deadline_s=90)
    assert done.code == 1, done.stderr
    report = report_of(run_dir)
    crash = finding(report, "DDP504")
    assert crash["ranks"] == [1] and "SIGKILL" in crash["message"]
    assert report["metrics"]["outcome"] == "crashed"
    # Two workers per rank were started (each wrote its pid), and not one is left.
    workers = {int(p.name.split("-")[1]) for p in pids.iterdir()}
    assert len(workers) >= 4
    assert [pid for pid in workers if of_run(pid, run_dir)] == []


@multiprocess
def test_segfaulting_rank_is_named_by_its_signal(tmp_path):
    run_dir = tmp_path / "run"
    done = WatchedRun(*probe_args("segfault_rank1.py", run_dir), run_dir=run_dir).finish(deadline_s=90)
    assert done.code == 1, done.stderr
    crash = finding(report_of(run_dir), "DDP504")
    assert crash["ranks"] == [1] and "SIGSEGV" in crash["message"]
    assert crash["location"]["file"] == f"{FAULTS}/segfault_rank1.py"


@multiprocess
def test_rank_exiting_with_code_3_is_a_crash_at_its_line(tmp_path):
    run_dir = tmp_path / "run"
    done = WatchedRun(*probe_args("exit3_rank1.py", run_dir), run_dir=run_dir).finish(deadline_s=90)
    assert done.code == 1, done.stderr
    crash = finding(report_of(run_dir), "DDP504")
    assert crash["ranks"] == [1] and "SystemExit: 3" in crash["message"]
    assert crash["location"] == {"file": f"{FAULTS}/exit3_rank1.py", "line": 15}


# --- the job hangs, or runs on -----------------------------------------------------------------

@multiprocess
def test_ranks_sleeping_before_init_without_py_spy_end_incomplete_at_timeout_placed_by_faulthandler(tmp_path):
    """Every rank sleeps in its own code before init_process_group with nothing pending: slow,
    not stuck (issue 28), so --timeout ends it as incomplete, never a hang error, and the place
    comes from the ranks' faulthandler dumps."""
    run_dir = tmp_path / "run"
    # 40 s: the ranks must be sleeping at their line when --timeout ends the job. On CI's loaded
    # machine torchrun and the ranks took more than 15 s to start (the verdict is then still
    # incomplete, but no rank stands anywhere yet). Sleeping ranks cost no CPU while it waits.
    done = WatchedRun(*probe_args("hang_before_init.py", run_dir, "--stall-timeout", "3", "--timeout", "40"),
                      run_dir=run_dir, env={"PATH": path_without_py_spy()}).finish(deadline_s=40 + 40)
    assert done.code == 4, done.stderr
    report = report_of(run_dir)
    assert report["status"] == "incomplete" and report["metrics"]["outcome"] == "timeout_busy"
    assert [f for f in report["findings"] if f["severity"] == "error"] == []
    [why] = [r for r in report["incomplete"] if r.startswith("DDP503")]
    assert "ranks 0-1 spent" in why and "wait_for_dataset() at tests/faults/hang_before_init.py:9" in why
    outcome = json.loads((run_dir / "outcome.json").read_text())
    assert {s["method"] for s in outcome["stacks"]} == {"faulthandler"}
    assert any(n.startswith("py-spy is not installed") for n in report["notes"])


@multiprocess
def test_timeout_ends_an_endless_job_and_py_spy_refused_by_the_kernel_falls_back(tmp_path):
    run_dir = tmp_path / "run"
    denied_path = denying_py_spy(tmp_path / "bin")
    started = time.monotonic()
    # 40 s: the ranks must have trained a step before the timeout for the verdict to be a hang
    # (before it, "incomplete", exit 4, is the right answer), and on CI's loaded machine two ranks
    # with their DataLoader workers took more than 20 s to get there.
    done = WatchedRun(*probe_args("endless_training.py", run_dir, "--max-steps", "0", "--timeout", "40"),
                      run_dir=run_dir, env={"PATH": denied_path} if denied_path else None
                      ).finish(deadline_s=40 + 20)
    assert done.code == 1, done.stderr
    report = report_of(run_dir)
    hang = finding(report, "DDP503")
    assert hang["evidence"]["status"] == "timeout" and hang["ranks"] == [0, 1]
    assert "endless_training.py" in hang["evidence"]["detail"]
    assert report["metrics"]["outcome"] == "timeout" and report["metrics"]["steps"] >= 1
    if denied_path:
        assert hang["evidence"]["stack_method"] == "faulthandler"
        assert "py-spy was not allowed to attach (permission denied)" in hang["evidence"]["stack_note"]
    assert time.monotonic() - started < 40 + 20


@multiprocess
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_to_ddpdoctor_ends_the_job_and_keeps_the_report(sig, tmp_path):
    run_dir = tmp_path / "run"
    run = WatchedRun(*probe_args("endless_training.py", run_dir, "--max-steps", "0"), run_dir=run_dir)
    run.wait_for("two training steps", lambda: run.steps_done() >= 2, timeout=60)
    # Both ranks' DataLoader workers must be up before the signal, or the test proves nothing
    # about reaping them (workers start when each rank begins its epoch, not at the same time).
    bootstrapped = lambda: len([s for s in run.seen.values() if "probe/inrank/bootstrap.py" in s.cmdline])
    run.wait_for("2 ranks and their 4 DataLoader workers", lambda: bootstrapped() >= 6, timeout=60)
    signalled = time.monotonic()
    run.send(sig)
    done = run.finish(deadline_s=time.monotonic() - run.started + 20)
    assert done.code == 128 + sig, done.stderr
    assert time.monotonic() - signalled < 20
    report = report_of(run_dir)
    assert report["status"] == "error" and report["interrupted_by"] == sig
    assert report["metrics"]["outcome"] == "interrupted" and report["metrics"]["steps"] >= 2
    assert len([s for s in done.seen if "probe/inrank/bootstrap.py" in s.cmdline]) >= 6  # ranks + workers


@multiprocess
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_while_the_ranks_are_still_starting_ends_everything(sig, tmp_path):
    """The other phase a user interrupts: right after launch, ranks still importing torch."""
    run_dir = tmp_path / "run"
    run = WatchedRun(*probe_args("endless_training.py", run_dir, "--max-steps", "0"), run_dir=run_dir)
    run.wait_for("a rank process to start", lambda: any(
        "probe/inrank/bootstrap.py" in s.cmdline for s in run.seen.values()), timeout=60)
    assert run.steps_done() == 0
    run.send(sig)
    done = run.finish(deadline_s=time.monotonic() - run.started + 20)
    assert done.code == 128 + sig, done.stderr
    assert "Traceback" not in done.stderr
    assert report_of(run_dir)["interrupted_by"] == sig


@multiprocess
def test_sigterm_while_py_spy_reads_the_quiet_ranks_stacks_ends_everything(tmp_path):
    """The third phase a user interrupts (issue 35: promptly in every phase): ranks quiet in a
    collective, the watchdog's py-spy reading their stacks."""
    run_dir = tmp_path / "run"
    script = Path(REPO_ROOT) / "tests" / "scripts" / "rank0_only_allreduce.py"
    # A real `py-spy dump` takes ~20 ms on an idle machine, less than the watcher's poll: the
    # py-spy ddpdoctor finds first on PATH holds still for 2 s (a slow py-spy on a loaded node),
    # then becomes the real one, so the SIGTERM lands while it runs, on any machine.
    shims = tmp_path / "bin"
    shims.mkdir()
    real = shutil.which("py-spy")
    assert real, "py-spy is a required package"
    shim = shims / "py-spy"
    shim.write_text(f"#!/bin/sh\nsleep 2\nexec {real} \"$@\"\n")
    shim.chmod(0o755)
    run = WatchedRun("probe", str(script), "--run-dir", str(run_dir), "--json",
                     str(tmp_path / "report.json"), "-q", "--stall-timeout", "30", "--", str(tmp_path),
                     run_dir=run_dir, env={"PATH": f"{shims}{os.pathsep}{os.environ['PATH']}"})
    run.wait_for("py-spy on a quiet rank", lambda: any(
        str(shim) in s.cmdline.split(" ")[:2] for s in run.seen.values()), timeout=120)
    signalled = time.monotonic()
    run.send(signal.SIGTERM)
    done = run.finish(deadline_s=time.monotonic() - run.started + 25)
    assert done.code == 128 + signal.SIGTERM, done.stderr
    assert time.monotonic() - signalled < 25 and "Traceback" not in done.stderr
    assert report_of(run_dir)["interrupted_by"] == signal.SIGTERM


@multiprocess
def test_two_probes_of_one_script_at_once_in_one_folder_each_get_their_own_run_dir(tmp_path):
    script = tmp_path / "train.py"
    script.write_text((Path(REPO_ROOT) / "examples" / "healthy.py").read_text())
    runs = [subprocess.Popen([*ddpdoctor_exe(), "probe", "train.py", "--max-steps", "4", "-q",
                              "--json", f"report{i}.json"], cwd=tmp_path, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for i in (0, 1)]
    for run in runs:
        _out, err = run.communicate(timeout=180)
        assert run.returncode == 0, err[-2000:]
    dirs = {json.loads((tmp_path / f"report{i}.json").read_text())["run_dir"] for i in (0, 1)}
    assert len(dirs) == 2 and all(Path(d).parent == tmp_path / "ddpdoctor-runs" for d in dirs)


@multiprocess
def test_killed_ddpdoctor_takes_its_job_along_and_leaves_a_run_dir_that_still_reports(tmp_path):
    run_dir = tmp_path / "run"
    run = WatchedRun(*probe_args("endless_training.py", run_dir, "--max-steps", "0"), run_dir=run_dir)
    run.wait_for("two training steps", lambda: run.steps_done() >= 2, timeout=60)
    run.send(signal.SIGKILL)
    # No handler runs: the parent-death signals end torchrun, the ranks and their workers.
    done = run.finish(deadline_s=time.monotonic() - run.started + 5, settle_s=10)
    assert done.code == -signal.SIGKILL
    assert not (run_dir / "outcome.json").exists()
    # A rank killed in the middle of a write leaves a torn last line; readers skip it.
    with open(run_dir / "rank-0.jsonl", "a") as telemetry:
        telemetry.write('{"kind":"step","t":1.0,"st')
    later = WatchedRun("report", str(run_dir), "--json", str(tmp_path / "later.json"), "-q",
                       run_dir=run_dir).finish(deadline_s=60)
    assert later.code == 0, later.stderr
    report = json.loads((tmp_path / "later.json").read_text())
    assert report["metrics"]["steps"] >= 2 and report["metrics"]["outcome"] is None
    assert "the probe was ended before it wrote outcome.json: judged from what the ranks recorded" in report["notes"]


# --- the run dir cannot be written --------------------------------------------------------------

@pytest.mark.parametrize("where", ["under-a-file", "read-only-fs"])
def test_run_dir_that_cannot_be_created_is_one_line_exit_3_and_starts_nothing(where, tmp_path):
    wrapper = None
    if where == "under-a-file":
        (tmp_path / "file.txt").write_text("not a directory\n")
        run_dir = tmp_path / "file.txt" / "run"
    else:
        (tmp_path / "ro").mkdir()
        wrapper = unshare_mount(f"mount -t tmpfs -o ro tmpfs {tmp_path / 'ro'}")
        if wrapper is None:
            pytest.skip("needs root and unshare -m for a read-only mount")
        run_dir = tmp_path / "ro" / "run"
    report_path = tmp_path / "report.json"
    done = WatchedRun("probe", f"{FAULTS}/segfault_rank1.py", "--run-dir", str(run_dir),
                      "--json", str(report_path), run_dir=run_dir, wrapper=wrapper).finish(deadline_s=30)
    assert done.code == 3
    assert len(done.stderr_lines) == 1 and done.stderr_lines[0].startswith(
        f"ddpdoctor: failed: cannot create run dir {run_dir}: "), done.stderr
    assert "Traceback" not in done.stderr and not report_path.exists()
    assert not [s for s in done.seen if "torch.distributed.run" in s.cmdline]


@multiprocess
def test_run_dir_filling_up_mid_run_still_ends_everything_and_reports_elsewhere(tmp_path):
    small = tmp_path / "small"
    small.mkdir()
    wrapper = unshare_mount(f"mount -t tmpfs -o size=48k tmpfs {small}")
    if wrapper is None:
        pytest.skip("needs root and unshare -m for a small tmpfs")
    run_dir = small / "run"
    report_path = tmp_path / "report.json"
    done = WatchedRun("probe", "examples/healthy.py", "--run-dir", str(run_dir),
                      "--json", str(report_path), "-q", run_dir=run_dir,
                      wrapper=wrapper).finish(deadline_s=90)
    assert done.code == 3, done.stderr
    assert "Traceback" not in done.stderr
    report = json.loads(report_path.read_text())
    assert report["status"] == "error" and "No space left on device" in report["error"]
    # The job was ended as soon as its records could not be stored, not left to run blind.
    assert report["metrics"]["outcome"] == "run_dir_failed"
    assert any(n.startswith("report.json not written: ") for n in report["notes"])


CHATTY = """
import sys
import torch
import torch.distributed as dist
dist.init_process_group("gloo")
rank = dist.get_rank()
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
line = f"rank {rank} says " + "x" * 200 + "\\n"
for step in range(3):
    model(torch.randn(2, 4)).sum().backward()
    opt.step()
    opt.zero_grad()
    for i in range(5000):  # ~3 MB per rank in all
        sys.stdout.write(f"{step}{i:04d} " + line)
print(f"LAST LINE OF RANK {rank}", flush=True)
dist.destroy_process_group()
"""


@multiprocess
def test_a_chatty_script_leaves_a_bounded_log_with_its_first_and_last_lines(tmp_path):
    script = tmp_path / "chatty.py"
    script.write_text(CHATTY)
    run_dir = tmp_path / "run"
    done = WatchedRun("probe", str(script), "--run-dir", str(run_dir), "--log-limit", "0.5",
                      "--json", str(tmp_path / "r.json"), "-q", run_dir=run_dir).finish(deadline_s=120)
    assert done.code == 0, done.stderr
    log = (run_dir / "job.log").read_text()
    assert len(log) < 2 * 1024 * 1024  # ~6 MB printed; 0.5 MB per rank kept, plus the launcher's
    for rank in (0, 1):
        assert f"[rank{rank}]: 00000 rank {rank} says" in log  # the head
        assert f"[rank{rank}]: LAST LINE OF RANK {rank}" in log  # the tail
        assert f"of rank {rank}'s output dropped here" in log


# --- files survive a crash at any moment ----------------------------------------------------------

WRITER = """
import json, sys
from ddpdoctor.core.files import write_atomic
n = 0
while True:
    write_atomic(sys.argv[1], json.dumps({"n": n, "pad": "x" * 300000}))
    n += 1
"""


def test_a_report_whose_writer_is_killed_at_any_moment_is_old_or_new_never_torn(tmp_path):
    target = tmp_path / "report.json"
    seen = set()
    for attempt in range(6):
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(target)], cwd=REPO_ROOT)
        deadline = time.monotonic() + 60
        while not target.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        # Readers during the writes see a whole file every time; they read until the writer has
        # replaced the file at least once (a loaded machine starts the writer late).
        reads, overlap_deadline = 0, time.monotonic() + 60
        while (reads < 20 or len(seen) < 2) and time.monotonic() < overlap_deadline:
            seen.add(json.loads(target.read_text())["n"])
            reads += 1
        time.sleep(0.05 * attempt)
        writer.kill()
        writer.wait(timeout=10)
        assert len(json.loads(target.read_text())["pad"]) == 300000
    assert len(seen) > 1  # the reads did overlap writes
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(".")] == ["report.json"]


RANK_WRITER = """
import sys, time
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.inrank.recorder import Recorder
rec = Recorder(sys.argv[1])
step = 0
while True:
    step += 1
    rec.write(tm.Step(time.time(), step, 1, 1, {"data": 0.001, "pad": 1.0}))
"""


def test_telemetry_of_a_rank_killed_mid_write_reads_back_every_whole_record(tmp_path):
    from ddpdoctor.probe.records import telemetry as tm

    path = tmp_path / "rank-0.jsonl"
    rank = subprocess.Popen([sys.executable, "-c", RANK_WRITER, str(path)], cwd=REPO_ROOT)
    deadline = time.monotonic() + 10
    while (not path.exists() or path.stat().st_size < 100000) and time.monotonic() < deadline:
        time.sleep(0.01)
    rank.kill()
    rank.wait(timeout=10)
    records = tm.read_records(path)
    assert len(records) > 100 and [r.step for r in records] == list(range(1, len(records) + 1))
    # A line cut short (a full disk, a copy of a live file) is skipped, not fatal.
    with open(path, "ab") as handle:
        handle.write(b'{"kind":"step","t":1.5,"step":')
    assert len(tm.read_records(path)) == len(records)


# --- ssh hosts that misbehave -------------------------------------------------------------------

SILENT_HOST = "127.0.0.17"  # a loopback address nothing else in the tests uses


@pytest.fixture
def silent_ssh_port():
    """A TCP port on SILENT_HOST that accepts every connection and never says a word."""
    server = socket.socket()
    server.bind((SILENT_HOST, 0))
    server.listen(64)
    held = []

    def accept():
        while True:
            try:
                held.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    yield server.getsockname()[1], held
    server.close()
    for conn in held:
        conn.close()


def test_ssh_host_that_accepts_tcp_but_never_answers_times_out_within_the_deadline(silent_ssh_port, tmp_path):
    port, held = silent_ssh_port
    nodes = tmp_path / "hosts.txt"
    nodes.write_text(f"{SILENT_HOST}\n")
    report_path = tmp_path / "preflight.json"
    # The silent host is the master too: the port hold over ssh waits on it as well.
    done = WatchedRun("preflight", "--nodes", str(nodes), "--ssh-port", str(port), "--timeout", "2",
                      "--json", str(report_path), "-q", run_dir=None).finish(deadline_s=2 * 2 + 10)
    assert done.code == 1, done.stderr
    assert held, "ssh never connected to the silent host"
    report = json.loads(report_path.read_text())
    unreachable = finding(report, "DDP105")
    assert unreachable["hosts"] == [SILENT_HOST] and unreachable["evidence"]["kind"] == "timeout"


# A shell that starts a command in the background without job control (a CI step's `cmd &`,
# nohup) hands it SIGINT ignored, and Python then never turns Ctrl-C into KeyboardInterrupt:
# that is why the SIGINT variant once ran to --timeout. ddpdoctor now takes SIGINT itself.
IGNORING_SIGINT = [sys.executable, "-c", "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
                   "os.execv(sys.argv[1], sys.argv[1:])"]


@pytest.mark.parametrize("sig, inherited", [(signal.SIGINT, None), (signal.SIGTERM, None),
                                            (signal.SIGINT, IGNORING_SIGINT)],
                         ids=["SIGINT", "SIGTERM", "SIGINT-inherited-ignored"])
def test_signal_to_a_preflight_waiting_on_ssh_ends_every_ssh(sig, inherited, silent_ssh_port, tmp_path):
    port, held = silent_ssh_port
    nodes = tmp_path / "hosts.txt"
    nodes.write_text(f"localhost\n{SILENT_HOST}\n")
    run = WatchedRun("preflight", "--nodes", str(nodes), "--ssh-port", str(port), "--timeout", "60",
                     "-q", run_dir=None, wrapper=inherited)
    run.wait_for("ssh to connect", lambda: bool(held), timeout=30)
    time.sleep(0.3)
    run.send(sig)
    done = run.finish(deadline_s=time.monotonic() - run.started + 10)
    assert done.code == 128 + sig, done.stderr
    assert any(s.cmdline.startswith("ssh ") for s in done.seen)  # and finish() saw it end


def test_host_key_mismatch_is_refused_in_time_even_with_accept_new(tmp_path):
    from tests.helpers.sshd import LoopbackSshd, SshdUnavailable

    host = "127.0.0.18"
    try:
        server = LoopbackSshd([host])
        server.start()
    except SshdUnavailable as exc:
        pytest.skip(f"no test sshd: {exc}")
    try:
        impostor = tmp_path / "impostor"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(impostor)],
                       check=True, timeout=30, stdin=subprocess.DEVNULL)
        kind, key = impostor.with_suffix(".pub").read_text().split()[:2]
        known = tmp_path / "known_hosts"
        known.write_text(f"[{host}]:{server.port} {kind} {key}\n")
        flags = [f"UserKnownHostsFile={known}" if f.startswith("UserKnownHostsFile=") else f
                 for f in server.ssh_flags(sys.executable)]
        assert "StrictHostKeyChecking=accept-new" in flags  # the most a user may loosen
        nodes = tmp_path / "hosts.txt"
        nodes.write_text(f"{host}\n")
        report_path = tmp_path / "preflight.json"
        done = WatchedRun("preflight", "--nodes", str(nodes), *flags, "--timeout", "10",
                          "--json", str(report_path), "-q", run_dir=None).finish(deadline_s=30)
    finally:
        server.stop()
    assert done.code == 1, done.stderr
    refused = finding(json.loads(report_path.read_text()), "DDP105")
    assert refused["hosts"] == [host] and refused["evidence"]["kind"] == "host-key"
    assert known.read_text() == f"[{host}]:{server.port} {kind} {key}\n"  # not replaced, not added to


def test_a_daemon_the_script_detached_with_setsid_and_an_empty_environment_is_ended(tmp_path):
    from tests.helpers.probe_runner import probe

    marker = tmp_path / "daemon.pid"
    result = probe("tests/scripts/daemon_escape.py", "--nproc-per-node", "2", "--cpu", "--stall-timeout", "60",
                   run_dir=tmp_path / "run", args=[str(marker)])
    assert result.code in (0, 1), result.stderr[-2000:]
    pid = int(marker.read_text())
    try:
        proc = psutil.Process(pid)
        alive = proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE and "sleep" in proc.name()
    except psutil.NoSuchProcess:
        alive = False
    if alive:
        proc.kill()
    assert not alive, "the detached daemon outlived the probe"
