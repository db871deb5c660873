"""Nothing secret leaves the machine, nothing is written where the user did not say, and ssh is
never talked into running something else, prompting, or trusting a host it should not.

The secret tests plant values in environment variables whose names look secret and search every
byte ddpdoctor wrote (the run dir, every report format, stdout and stderr) for them.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.fault_runner import REPO, WatchedRun

from ddpdoctor.probe.launch.joblog import JobLog
from tests.helpers.ports import free_port


def planted() -> dict[str, str]:
    """Secret-looking variables with values that occur nowhere else: one the facts pick up by
    prefix (TORCH_*), and the common shapes of CI secrets."""
    return {name: f"{name.lower()[:6]}-{secrets.token_hex(12)}" for name in (
        "DDPDOCTOR_TEST_API_TOKEN", "TORCH_HUB_TOKEN", "NCCL_TEST_PASSWORD", "MY_SERVICE_SECRET",
        "AWS_SECRET_ACCESS_KEY", "REGISTRY_CREDENTIALS", "HF_AUTH")}


def files_holding(values: dict[str, str], *roots: Path) -> list[str]:
    """Every file under `roots` (recursively) holding one of the values, as 'path: NAME'."""
    hits = []
    for root in roots:
        for path in ([root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())):
            data = path.read_bytes()
            hits += [f"{path}: {name}" for name, value in values.items() if value.encode() in data]
    return hits


@pytest.mark.multiprocess
def test_planted_secrets_reach_no_file_and_the_probe_writes_only_where_told(tmp_path):
    env = planted()
    token = env["DDPDOCTOR_TEST_API_TOKEN"]
    cwd, tmp, out = tmp_path / "cwd", tmp_path / "tmp", tmp_path / "out"
    for d in (cwd, tmp, out):
        d.mkdir()
    run_dir = out / "run"
    done = WatchedRun(
        "probe", str(REPO / "tests/faults/leaky_secret.py"), "--run-dir", str(run_dir),
        "--json", str(out / "report.json"), "--junit", str(out / "report.xml"),
        "--trace", str(out / "trace.json"), "--github", "--verbose", "--", "--token", token,
        run_dir=run_dir, cwd=cwd, env={**env, "TMPDIR": str(tmp)}).finish(deadline_s=90)
    assert done.code == 1, done.stderr  # rank 1 raised, quoting the token
    (out / "stdout.txt").write_text(done.stdout)
    (out / "stderr.txt").write_text(done.stderr)

    assert files_holding(env, out) == []
    # Scrubbed, not dropped: what the script printed and raised is there, minus the secret.
    log = (run_dir / "job.log").read_text()
    assert "rank 0: logging in with <redacted>" in log and "refused token <redacted>" in log
    crash = next(f for f in json.loads((out / "report.json").read_text())["findings"] if f["code"] == "DDP504")
    assert crash["ranks"] == [1] and "refused token <redacted>" in crash["message"]
    assert '"argv":["--token","<redacted>"]' in (run_dir / "rank-0.jsonl").read_text()

    # Owner-only run dir; nothing written in the working directory but the script's own file,
    # and nothing left in TMPDIR but what torch itself makes there (its compiler's cache dir).
    assert stat.S_IMODE(run_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE((run_dir / "report.json").stat().st_mode) == 0o600
    assert [p.name for p in cwd.iterdir()] == ["written-by-the-script.txt"]
    assert [p.name for p in tmp.iterdir() if not p.name.startswith("torchinductor_")] == []


def test_facts_and_preflight_outputs_show_no_secret(tmp_path):
    env = planted()
    facts = WatchedRun("facts", "--json", run_dir=None, env=env).finish(deadline_s=60)
    assert facts.code == 0, facts.stderr
    assert json.loads(facts.stdout)["env"]["TORCH_HUB_TOKEN"] == "<redacted>"
    plain = WatchedRun("facts", run_dir=None, env=env).finish(deadline_s=60)
    port = free_port()
    preflight = WatchedRun("preflight", "--master-port", str(port), "--json", str(tmp_path / "preflight.json"),
                           "--junit", str(tmp_path / "preflight.xml"), "--github", "--verbose",
                           run_dir=None, env=env).finish(deadline_s=60)
    assert preflight.code in (0, 1), preflight.stderr
    for name, result in (("facts-json", facts), ("facts", plain), ("preflight", preflight)):
        (tmp_path / f"{name}.stdout").write_text(result.stdout)
        (tmp_path / f"{name}.stderr").write_text(result.stderr)
    assert files_holding(env, tmp_path) == []


# --- job.log: scrubbed as it streams -------------------------------------------------------------

def test_job_log_scrubs_a_secret_cut_across_writes_and_keeps_everything_else(tmp_path):
    secret = "tok-" + secrets.token_hex(16)
    with JobLog(tmp_path / "job.log", secrets=[secret]) as log:
        os.write(log.fd, b"binary \x00\xff ok\nlogin " + secret[:9].encode())
        time.sleep(0.2)  # the copier has read the first half alone by now
        os.write(log.fd, secret[9:].encode() + b" done\nnear miss " + secret[:-1].encode())
        time.sleep(0.2)
        os.write(log.fd, b"!\nlast " + secret[:5].encode())  # held back, then flushed at the end
    assert (tmp_path / "job.log").read_bytes() == (
        b"binary \x00\xff ok\nlogin <redacted> done\nnear miss " + secret[:-1].encode()
        + b"!\nlast " + secret[:5].encode())


def test_job_log_does_not_wait_for_ever_on_a_process_that_kept_the_pipe(tmp_path):
    log = JobLog(tmp_path / "job.log", secrets=[])
    escaped = subprocess.Popen(["sleep", "30"], stdout=log.fd, stderr=subprocess.STDOUT)
    try:
        started = time.monotonic()
        log.close(timeout=1.0)
        assert time.monotonic() - started < 3
    finally:
        escaped.kill()
        escaped.wait()


# --- ssh: no injection, no prompt, no trust the user did not give -------------------------------

@pytest.fixture
def ssh_log(tmp_path):
    """A PATH whose `ssh` records its arguments, then runs the real ssh."""
    real = shutil.which("ssh")
    if real is None:
        pytest.skip("no ssh client")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "ssh-argv.jsonl"
    wrapper = bin_dir / "ssh"
    wrapper.write_text(f"#!{sys.executable}\nimport json, os, sys\n"
                       f"with open({str(log)!r}, 'a') as f:\n    f.write(json.dumps(sys.argv[1:]) + '\\n')\n"
                       f"os.execv({real!r}, [{real!r}, *sys.argv[1:]])\n")
    wrapper.chmod(0o755)
    return f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", log, real


EVIL = "touch {mark}"


@pytest.mark.parametrize("how", [
    "host-file-option", "host-file-field", "host-file-brackets", "host-file-shell", "slurm-nodelist",
    "master-addr", "ssh-user", "remote-python", "ssh-option-flag",
])
def test_hostile_names_are_rejected_before_any_ssh_runs(how, ssh_log, tmp_path):
    path, log, _ = ssh_log
    mark = tmp_path / "pwned"
    evil = EVIL.format(mark=mark)
    nodes = tmp_path / "hosts.txt"
    nodes.write_text("localhost\n127.0.0.2\n")
    args, env = ["--nodes", str(nodes)], {"PATH": path}
    lines = {
        "host-file-option": f"-oProxyCommand={evil}",
        "host-file-field": f"127.0.0.2 -oProxyCommand={evil.replace(' ', '_')}",
        "host-file-brackets": f"[-oProxyCommand={evil.replace(' ', '')}]",
        "host-file-shell": f"node1;{evil.replace(' ', '${IFS}')}",
    }
    if how in lines:
        nodes.write_text(f"localhost\n{lines[how]}\n")
    elif how == "slurm-nodelist":
        args, env = [], {**env, "SLURM_JOB_NODELIST": f"-oProxyCommand={evil}"}
    else:
        args += {"master-addr": ["--master-addr", f"-oProxyCommand={evil}"],
                 "ssh-user": ["--ssh-user", f"-oProxyCommand={evil}"],
                 "remote-python": ["--remote-python", f"python3;{evil}"],
                 "ssh-option-flag": ["--ssh-option", f"-oProxyCommand={evil}"]}[how]
    done = WatchedRun("preflight", *args, "--json", str(tmp_path / "r.json"), run_dir=None,
                      env=env).finish(deadline_s=30)
    assert done.code == 2, done.stdout + done.stderr
    assert len(done.stderr_lines) == 1 and done.stderr_lines[0].startswith("ddpdoctor: error"), done.stderr
    assert not mark.exists() and not log.exists() and not (tmp_path / "r.json").exists()


def test_ssh_always_runs_in_batch_mode_and_never_trusts_an_unknown_host_key(ssh_log, tmp_path):
    from tests.helpers.sshd import LoopbackSshd, SshdUnavailable

    path, log, real_ssh = ssh_log
    host = "127.0.0.19"
    try:
        server = LoopbackSshd([host])
        server.start()
    except SshdUnavailable as exc:
        pytest.skip(f"no test sshd: {exc}")
    known = tmp_path / "known_hosts"
    known.write_text("")
    try:
        nodes = tmp_path / "hosts.txt"
        nodes.write_text(f"{host}\n")
        # The user's own options, including one that tries to turn prompting back on; no
        # StrictHostKeyChecking: ddpdoctor must not add one.
        flags = ["--ssh-port", str(server.port), "--ssh-option", f"IdentityFile={server.client_key}",
                 "--ssh-option", f"UserKnownHostsFile={known}", "--ssh-option", "GlobalKnownHostsFile=/dev/null",
                 "--ssh-option", "BatchMode=no", "--remote-python", sys.executable]
        done = WatchedRun("preflight", "--nodes", str(nodes), *flags, "--timeout", "10",
                          "--json", str(tmp_path / "r.json"), "-q", run_dir=None,
                          env={"PATH": path}).finish(deadline_s=40)
    finally:
        server.stop()
    assert done.code == 1, done.stderr
    refused = [f for f in json.loads((tmp_path / "r.json").read_text())["findings"] if f["code"] == "DDP105"]
    assert refused and refused[0]["evidence"]["kind"] == "host-key"
    assert known.read_text() == ""  # the unknown key was not accepted
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert calls
    for argv in calls:
        assert not any(a.lower().startswith(("stricthostkeychecking", "userknownhostsfile=/dev/null"))
                       for a in argv), argv
        # What ssh itself makes of these arguments (-G prints its resolved configuration;
        # -F /dev/null leaves this machine's ssh_config out of it).
        config = subprocess.run([real_ssh, "-G", "-F", "/dev/null", *argv], capture_output=True,
                                text=True, timeout=10).stdout.lower().splitlines()
        assert "batchmode yes" in config, argv
        assert not [c for c in config if c.startswith(("proxycommand", "localcommand", "permitlocalcommand yes"))]
        assert next(c for c in config if c.startswith("stricthostkeychecking")) not in (
            "stricthostkeychecking false", "stricthostkeychecking no", "stricthostkeychecking off")
