"""Output that is not on a terminal (a CI log, a pipe): no escape codes, no live table, a plain
progress line every few seconds, and every message whole on its line, however narrow COLUMNS
says the screen is. Also GitHub annotations that GitHub can attach to files, and --version."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers.cli_runner import ddpdoctor_exe
from tests.helpers.probe_runner import REPO, processes_of
from tests.helpers.train_scripts import SLOW_TRAIN

ESCAPE = "\x1b"
RECORDING = REPO / "tests" / "probe_recordings" / "desync_collective"
# Where the recording's examples lay when it was made (its sites name their files there).
RECORDED_EXAMPLES = str(Path(json.loads((RECORDING / "probe.json").read_text())["script"]).parent) + "/"


def piped(*args: str, cwd: Path, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """The CLI with stdout and stderr both pipes, and a narrow COLUMNS that must not matter."""
    merged = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    merged.update({"COLUMNS": "60", **(env or {})})
    return subprocess.run([*ddpdoctor_exe(), *args], capture_output=True, text=True, cwd=cwd,
                          env=merged, timeout=timeout, stdin=subprocess.DEVNULL)


def recording_copy(tmp_path: Path, workspace: Path) -> Path:
    """The desync recording, its sites moved under `workspace` (as if recorded there)."""
    run_dir = tmp_path / "run"
    shutil.copytree(RECORDING, run_dir)
    for path in run_dir.iterdir():  # telemetry, stacks, the outcome
        path.write_text(path.read_text().replace(RECORDED_EXAMPLES, f"{workspace}/examples/"))
    return run_dir


@pytest.mark.multiprocess
def test_piped_probe_prints_plain_progress_lines_and_a_report_at_full_line_length(tmp_path):
    script = tmp_path / "slow_train.py"
    script.write_text(SLOW_TRAIN)
    run_dir = tmp_path / "run"
    done = piped("probe", str(script), "--run-dir", str(run_dir), "--max-steps", "0",
                 "--quiet-script", "--json", "-", cwd=tmp_path, timeout=180)
    assert not processes_of(run_dir.resolve())
    report = json.loads(done.stdout)  # stdout holds the JSON report and nothing else
    assert json.loads((run_dir / "outcome.json").read_text())["status"] == "completed"
    assert done.returncode in (0, 1), done.stderr
    assert ESCAPE not in done.stderr and ESCAPE not in done.stdout

    # Progress: plain lines, a few seconds apart, that say where the ranks are.
    progress = [line for line in done.stderr.splitlines() if line.startswith("ddpdoctor: ")]
    assert progress, done.stderr
    elapsed = [float(re.match(r"ddpdoctor: ([\d.]+)s", line).group(1)) for line in progress]
    assert all(b - a >= 2.9 for a, b in zip(elapsed, elapsed[1:])), elapsed
    assert any("ranks 0-1 " in line for line in progress), progress

    # --quiet-script: none of the script's lines here; job.log has them all.
    assert "[rank" not in done.stderr
    assert "[rank1]: step 3 loss" in (run_dir / "job.log").read_text()

    # The report (on stderr, beside --json -): each check's line whole, however long.
    lines = done.stderr.splitlines()
    stage = {row["code"]: row["stage"] for row in json.loads(piped("checks", "--json", cwd=tmp_path).stdout)}
    for check in report["checks"]:
        if check["status"] in ("skipped", "ignored") and stage.get(check["code"]) != "probe":
            continue  # another stage's check, not applicable here: not listed without -v
        want = f"{check['code']} {check['title']}"
        line = next((line for line in lines if want in line), None)
        assert line is not None, f"{want!r} not on one line:\n{done.stderr}"
        if check.get("reason"):
            assert check["reason"] in line, (check, line)
    assert max(len(line) for line in lines) > 60


def test_report_in_a_pipe_keeps_every_finding_message_on_one_line(tmp_path):
    run_dir = recording_copy(tmp_path, REPO)
    done = piped("report", str(run_dir), "--json", str(tmp_path / "report.json"), cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    lines = done.stdout.splitlines()
    assert ESCAPE not in done.stdout
    assert report["findings"]
    for finding in report["findings"]:
        for text in (finding["message"], finding["hint"]):
            assert any(text in line for line in lines), f"cut across lines: {text!r}\n{done.stdout}"
    assert max(len(line) for line in lines) > 150


def test_checks_and_explain_in_a_pipe_are_whole_lines(tmp_path):
    done = piped("checks", cwd=tmp_path, env={"COLUMNS": "30"})
    assert done.returncode == 0 and ESCAPE not in done.stdout
    catalogue = json.loads(piped("checks", "--json", cwd=tmp_path).stdout)
    lines = done.stdout.splitlines()
    assert len(lines) == len(catalogue)
    for row, line in zip(catalogue, lines):
        assert line.startswith(row["code"]) and line.endswith(row["title"]), line
    explained = piped("explain", "DDP301", cwd=tmp_path, env={"COLUMNS": "30"})
    assert explained.returncode == 0 and ESCAPE not in explained.stdout
    assert explained.stdout.splitlines()[0] == f"DDP301: {catalogue[[r['code'] for r in catalogue].index('DDP301')]['title']}"


def test_github_annotations_name_files_relative_to_the_workspace(tmp_path):
    workspace = tmp_path / "ws"
    (workspace / "examples").mkdir(parents=True)
    run_dir = recording_copy(tmp_path, workspace)
    done = piped("report", str(run_dir), "--github", "-q", cwd=tmp_path,
                 env={"GITHUB_WORKSPACE": str(workspace)})
    annotations = [line for line in done.stdout.splitlines() if line.startswith("::error")]
    assert annotations, done.stdout + done.stderr
    files = {re.search(r"file=([^,]+)", line).group(1) for line in annotations if "file=" in line}
    assert files == {"examples/desync_collective.py"}, annotations

    # Without GITHUB_WORKSPACE the working directory is the root; a file outside it stays whole.
    inside = piped("report", str(run_dir), "--github", "-q", cwd=workspace,
                   env={"GITHUB_WORKSPACE": ""})
    assert "file=examples/desync_collective.py," in inside.stdout, inside.stdout
    outside = piped("report", str(run_dir), "--github", "-q", cwd=tmp_path / "run",
                    env={"GITHUB_WORKSPACE": ""})
    assert f"file={workspace}/examples/desync_collective.py,".replace(":", "%3A") in outside.stdout


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_names_ddpdoctor_and_torch(flag, tmp_path):
    from importlib.metadata import version

    from ddpdoctor.core.version import __version__

    done = piped(flag, cwd=tmp_path)
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.startswith(f"ddpdoctor {__version__} (torch {version('torch')}, Python ")
