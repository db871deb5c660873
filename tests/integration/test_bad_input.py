"""Bad input of every shape gets exit 2 and one line that says what is wrong: no traceback,
nothing written, nothing started, and no wait longer than a few seconds.

Host lists are fuzzed through the parser directly (thousands of cases a second), then a handful
of the worst go through the CLI; script paths and flag values go through the CLI.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ddpdoctor.core.errors import UsageError
from ddpdoctor.preflight.hosts import default_hosts, parse_host_file, parse_host_text, validate_hostname
from tests.helpers.cli_runner import run_cli

REPO = Path(__file__).resolve().parents[2]
MAX_MESSAGE = 400  # one line a person reads, not a dump of the input
FAST = settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))

# Pieces host lists are made of, odd ones included: SLURM brackets and ranges, slots, IPv6,
# comments, option and shell characters, separators that are not newlines, a NUL.
HOSTLIST_PIECES = st.sampled_from([
    "node", "gpu", "a", "0", "1", "07", "99999", "-", ".", ",", ":", "[", "]", "[1-4]", "[01-03,7]",
    "[3-1]", "[1-99999]", "[]", "[,]", "[-]", "[[", "]]", " ", "\t", "\n", "\r\n", "#", " slots=",
    " max_slots=", "=", "8", "0", "::1", "[fe80::1]", ":4", "-oProxyCommand=x", ";", "$(id)", "`", "'",
    "\x00", "\x85", "\u2028", "é", "ß", "_", "localhost", "127.0.0.1", "256.1.1.1",
])


def assert_parsed_or_refused(parse) -> None:
    try:
        entries = parse()
    except UsageError as exc:
        message = str(exc)
        assert len(message) <= MAX_MESSAGE, message[:200]
        return
    for entry in entries:
        assert validate_hostname(entry.name) == entry.name
        assert not entry.name.startswith("-") and not any(c in entry.name for c in " \t\n;$`'\"\\\0")
        assert entry.slots is None or entry.slots >= 1


@FAST
@given(st.lists(HOSTLIST_PIECES, max_size=30).map("".join))
def test_any_host_list_text_gives_valid_hosts_or_a_usage_error(text):
    assert_parsed_or_refused(lambda: parse_host_text(text, "hosts.txt"))


@FAST
@given(st.binary(max_size=400))
def test_any_bytes_in_a_nodes_file_give_valid_hosts_or_a_usage_error(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("nodes") / "hosts.txt"
    path.write_bytes(data)
    assert_parsed_or_refused(lambda: parse_host_file(path))


@FAST
@given(st.lists(HOSTLIST_PIECES.filter(lambda p: "\x00" not in p), max_size=20).map("".join))
def test_any_slurm_nodelist_gives_valid_hosts_or_a_usage_error(nodelist):
    assert_parsed_or_refused(lambda: default_hosts({"SLURM_JOB_NODELIST": nodelist}))


# Lists built to exhaust memory or time before they are refused, each with what the refusal says.
HUGE = [
    ("a[1-99999]b[1-99999]", "expands to more than 100000 hosts"),
    ("n[" + ",".join(["1-99998"] * 400) + "]", "gives more than 100000 numbers"),
    ("x[" + ",".join(["1"] * 200000) + "]", "expands to more than 100000 hosts"),
    (",".join(f"n{i}" for i in range(150000)), "the line names more than 100000 hosts"),
    ("".join(f"node{i}\n" for i in range(100001)), "the list names more than 100000 hosts"),
    ("a" * 5_000_000, "is not a valid host name"),
    ("n[1-" + "9" * 5000 + "]", "is too large"),
    ("node01 " + "x" * 1_000_000, "after the host"),
    ("," * 1_000_000, "empty host"),
    ("node01 slots=" + "9" * 5000, "slots must be a whole number"),
]


@pytest.mark.parametrize("text,says", HUGE, ids=[s for _, s in HUGE])
def test_host_lists_that_would_blow_up_are_refused_quickly_in_one_short_line(text, says):
    # CPU time, not wall time: what a blow-up would cost is work, and a loaded machine (the suite
    # beside another job) stretched the wall time of a 1 s refusal past 5 s once
    started = time.process_time()
    with pytest.raises(UsageError) as refused:
        parse_host_text(text, "hosts.txt")
    assert time.process_time() - started < 5
    assert says in str(refused.value) and len(str(refused.value)) <= MAX_MESSAGE


# --- through the CLI ---------------------------------------------------------------------------

def ddpdoctor(args: list[str], cwd: Path, env: dict | None = None, wrapper: list[str] | None = None):
    merged = {**os.environ, "COLUMNS": "200", **(env or {})}
    started = time.monotonic()
    done = subprocess.run([*(wrapper or []), sys.executable, "-m", "ddpdoctor", *args], cwd=cwd,
                          env=merged, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    return done, time.monotonic() - started


def assert_all_refused(cases: dict[str, tuple], cwd: Path, says_key: str = "") -> None:
    """Run every case (name -> (args, expected words[, env[, wrapper]])) at once; each must be exit
    2 with one short line naming the problem, no traceback, and nothing written in `cwd`."""
    def one(item):
        name, (args, says, *rest) = item
        report = cwd.parent / f"{name}.report.json"
        json_flag = [] if args[0] == "facts" else ["--json", str(report)]  # facts' --json is a switch
        done, wall = ddpdoctor([*args, *json_flag], cwd, *rest)
        lines = done.stderr.strip().splitlines()
        problems = []
        if done.returncode != 2:
            problems.append(f"exit {done.returncode}")
        if len(lines) != 1 or not lines[0].startswith("ddpdoctor: error") or says not in lines[0]:
            problems.append(f"stderr {done.stderr[-300:]!r}")
        if len(done.stderr) > MAX_MESSAGE + 100 or "Traceback" in done.stderr:
            problems.append("long or traceback")
        if report.exists():
            problems.append("report written")
        if wall > 20:
            problems.append(f"took {wall:.0f} s")
        return name, problems

    with ThreadPoolExecutor(max_workers=4) as pool:
        failed = {name: p for name, p in pool.map(one, cases.items()) if p}
    assert failed == {}
    assert list(cwd.iterdir()) == []


@pytest.fixture
def empty_cwd(tmp_path):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    return cwd


def test_bad_nodes_files_through_the_cli(tmp_path, empty_cwd):
    files = tmp_path / "files"
    files.mkdir()
    (files / "huge.txt").write_bytes(b"node01\n" * 3_000_000)
    (files / "long-line.txt").write_text("n" * 2_000_000 + "\n")
    (files / "brackets.txt").write_text("gpu[01-04\n")
    (files / "product.txt").write_text("rack[1-9999]-node[1-9999]\n")
    (files / "binary.txt").write_bytes(bytes(range(256)) * 10)
    (files / "evil.txt").write_text("node1\n-oProxyCommand=sh\n")
    os.mkfifo(files / "fifo.txt")
    cases = {
        "huge": (["preflight", "--nodes", str(files / "huge.txt")], "larger than 16 MiB"),
        "long-line": (["preflight", "--nodes", str(files / "long-line.txt")], "is not a valid host name"),
        "brackets": (["preflight", "--nodes", str(files / "brackets.txt")], "brackets.txt:1: '[' without ']'"),
        "product": (["preflight", "--nodes", str(files / "product.txt")], "expands to more than 100000"),
        "binary": (["preflight", "--nodes", str(files / "binary.txt")], "cannot read nodes file"),
        "evil": (["preflight", "--nodes", str(files / "evil.txt")], "evil.txt:2"),
        "fifo": (["preflight", "--nodes", str(files / "fifo.txt")], "no hosts in the file"),
        "directory": (["preflight", "--nodes", str(files)], "Is a directory"),
        "dev-zero": (["preflight", "--nodes", "/dev/zero"], "larger than 16 MiB"),
        "slurm": (["preflight"], "$SLURM_JOB_NODELIST", {"SLURM_JOB_NODELIST": "gpu[1-3],,x"}),
    }
    assert_all_refused(cases, empty_cwd)


def test_script_paths_that_are_not_python_scripts(tmp_path, empty_cwd):
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "binary.py").write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(200))
    (scripts / "shell.py").write_text("#!/bin/sh\necho training && exit 0\n")
    (scripts / "latin1.py").write_bytes(b"name = '\xe9t\xe9'\n")
    os.mkfifo(scripts / "fifo.py")
    unreadable = scripts / "unreadable.py"
    unreadable.write_text("print('hi')\n")
    unreadable.chmod(0)
    # Root reads anything: without CAP_DAC_OVERRIDE it obeys the mode bits like everyone else.
    setpriv = shutil.which("setpriv")
    drop_dac = [setpriv, "--bounding-set", "-dac_override,-dac_read_search"] if os.geteuid() == 0 and setpriv else None
    cases = {
        "missing": (["probe", str(scripts / "missing.py")], "script not found"),
        "directory": (["probe", str(scripts)], "is a directory"),
        "fifo": (["probe", str(scripts / "fifo.py")], "not a regular file"),
        "dev-zero": (["probe", "/dev/zero"], "not a regular file"),
        "binary": (["probe", str(scripts / "binary.py")], "binary content"),
        "shell": (["probe", str(scripts / "shell.py")], "shell.py:2: script does not compile"),
        "latin1": (["probe", str(scripts / "latin1.py")], "latin1.py:1: script does not compile"),
        "newline": (["probe", str(scripts / "train\nnewline.py")], "script not found: "),
        "module": (["probe", "-m", "os;id"], "-m needs a module name"),
        "no-module": (["probe", "-m", "no_such_package.train"], "no_such_package"),
    }
    if os.geteuid() != 0 or drop_dac:
        cases["unreadable"] = (["probe", str(unreadable)], "Permission denied", None, drop_dac)
    assert_all_refused(cases, empty_cwd)


def test_lint_inputs_that_are_not_python_scripts_are_refused_quickly(tmp_path, empty_cwd):
    scripts = tmp_path / "lint-scripts"
    (scripts / "empty-folder" / "sub").mkdir(parents=True)
    (scripts / "empty-folder" / "sub" / "notes.txt").write_text("no python here\n")
    os.mkfifo(scripts / "fifo.py")
    deep = "import torch.distributed as dist\nx = " + "+".join(["a"] * 200_000) + "\n"
    (scripts / "deep.py").write_text(deep)
    cases = {
        "dev-zero": (["lint", "/dev/zero"], "not a regular file"),
        "fifo": (["lint", str(scripts / "fifo.py")], "not a regular file"),
        "fifo-files": (["lint", "--files", str(scripts / "fifo.py")], "not a regular file"),
        "empty-dir": (["lint", "--files", str(scripts / "empty-folder")], "no .py files beneath it"),
        "deep-lint": (["lint", str(scripts / "deep.py")], "nested too deeply"),
        "deep-probe": (["probe", str(scripts / "deep.py")], "nested too deeply"),
    }
    assert_all_refused(cases, empty_cwd)


def test_report_inputs_that_are_devices_or_fifos_are_refused_like_lints(tmp_path, empty_cwd):
    # `report` once read /dev/zero to its 64 GB log cap and called the result "incomplete" (exit 4)
    os.mkfifo(tmp_path / "rank0.log")
    cases = {
        "report-dev-zero": (["report", "/dev/zero"], "not a regular file"),
        "report-fifo": (["report", str(tmp_path / "rank0.log")], "not a regular file"),
    }
    assert_all_refused(cases, empty_cwd)


def test_lint_files_walks_a_directory_for_its_scripts(tmp_path):
    folder = tmp_path / "project"
    (folder / "pkg").mkdir(parents=True)
    (folder / "pkg" / "train.py").write_text(
        "import torch, torch.distributed as dist\ndist.init_process_group('gloo')\ntorch.save({}, 'x.pt')\n")
    done, _ = ddpdoctor(["lint", "--fail-on", "warning", "--files", str(folder)], tmp_path)
    assert done.returncode == 1, done.stderr
    assert "DDP805" in done.stdout and "1 linted as script(s)" in done.stdout


def test_nonsense_flag_values(tmp_path, empty_cwd):
    script = str(REPO / "examples" / "healthy.py")
    busy = tmp_path / "busy-run"
    busy.mkdir()
    (busy / "something").write_text("")
    not_a_run = tmp_path / "not-a-run"
    not_a_run.mkdir()
    (not_a_run / "probe.json").write_text('["someone else\'s probe.json"]')
    probe = ["probe", script]
    cases = {
        "nproc-zero": ([*probe, "--nproc-per-node", "0"], "--nproc-per-node"),
        "nproc-huge": ([*probe, "--nproc-per-node", "100000000000000000000"], "--nproc-per-node"),
        "nproc-word": ([*probe, "--nproc-per-node", "two"], "--nproc-per-node"),
        "timeout-nan": ([*probe, "--timeout", "nan"], "--timeout"),
        "timeout-inf": ([*probe, "--timeout", "inf"], "--timeout"),
        "timeout-negative": ([*probe, "--timeout", "-5"], "--timeout"),
        "stall-nan": ([*probe, "--stall-timeout", "nan"], "--stall-timeout"),
        "stall-zero": ([*probe, "--stall-timeout", "0"], "--stall-timeout"),
        "max-steps": ([*probe, "--max-steps", "-1"], "--max-steps"),
        "max-steps-huge": ([*probe, "--max-steps", "99999999999"], "at most 1000000000"),
        "nnodes-huge": ([*probe, "--nnodes", "10000000", "--master-addr", "h"], "--nnodes must be at least 1 and at most"),
        "world-huge": ([*probe, "--nnodes", "8000", "--nproc-per-node", "1000", "--master-addr", "h"], "ranks"),
        "node-rank": ([*probe, "--nnodes", "2", "--node-rank", "5", "--master-addr", "h"], "--node-rank"),
        "port": ([*probe, "--master-port", "0"], "--master-port"),
        "rdzv": ([*probe, "--rdzv-endpoint", "host port"], "--rdzv-endpoint"),
        "launcher": ([*probe, "--launcher", "slurm"], "--launcher"),
        "fail-on": ([*probe, "--fail-on", "fatal"], "severity"),
        "ignore": ([*probe, "--ignore", "DDP000"], "DDP000"),
        "json-dir": ([*probe, "--junit", str(tmp_path)], "--junit"),
        "busy-run-dir": ([*probe, "--run-dir", str(busy)], "exists and is not empty"),
        "preflight-timeout-inf": (["preflight", "--timeout", "inf"], "--timeout"),
        "preflight-timeout-huge": (["preflight", "--timeout", "1e308"], "--timeout"),
        "preflight-fanout": (["preflight", "--fanout", "0"], "--fanout"),
        "preflight-via": (["preflight", "--via", "telepathy"], "--via"),
        "preflight-ssh-port": (["preflight", "--ssh-port", "65536"], "--ssh-port"),
        "facts-timeout": (["facts", "--timeout", "nan"], "--timeout"),
        "report-foreign-dir": (["report", str(not_a_run)], "probe.json is unreadable"),
    }
    assert_all_refused(cases, empty_cwd)
    assert list(busy.iterdir()) == [busy / "something"]


def test_a_baseline_that_is_not_a_probe_report_is_bad_input(tmp_path):
    # Refused before anything launches: no timing involved (it ran with the `serial` perf tests).
    (tmp_path / "preflight.json").write_text('{"tool": "ddpdoctor", "command": "preflight"}')
    for baseline in (tmp_path / "missing.json", tmp_path / "preflight.json"):
        result = run_cli("probe", "examples/healthy.py", "--baseline", str(baseline), cwd=str(REPO))
        assert result.code == 2 and result.stderr.count("\n") == 1, result.stderr
        assert "--baseline" in result.stderr
