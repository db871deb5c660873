"""`ddpdoctor report EVIDENCE...` as a user runs it: on the plain torchrun output of a real gloo
job that died, and on a mix of inputs, with every output format and exit code."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.ports import free_port
from tests.helpers.cli_runner import run_cli

pytestmark = pytest.mark.multiprocess

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "postmortem_job.py"


def test_the_log_of_a_real_job_whose_rank_raised_names_it_in_every_output(tmp_path):
    log = tmp_path / "train.log"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    with open(log, "wb") as out:
        subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                        "--master-port", str(free_port()), str(SCRIPT), "oom"],
                       stdout=out, stderr=subprocess.STDOUT, env=env, timeout=240, check=False)
    junit = tmp_path / "report.xml"
    result = run_cli("report", str(log), "--json", "-", "--junit", str(junit), "--github", timeout=120)
    assert result.code == 1, result.stderr
    data = result.json()
    assert data["command"] == "report" and data["status"] == "fail"
    cause = next(f for f in data["findings"] if f["code"] == "DDP504")
    assert cause["ranks"] == [1] and cause["evidence"]["role"] == "cause"
    assert cause["location"]["file"].endswith("postmortem_job.py") and cause["location"]["line"] == 21
    assert any(line.startswith(f"{log}:") and "MemoryError" in line for line in cause["evidence"]["lines"])
    waits = next(f for f in data["findings"] if f["code"] == "DDP512")
    assert waits["ranks"] == [0] and waits["evidence"]["role"] == "consequence"
    assert "DDP504" in junit.read_text()


def test_nothing_to_judge_is_exit_4_and_a_missing_file_exit_2(tmp_path):
    (tmp_path / "notes.txt").write_text("nothing happened here\n")
    assert run_cli("report", str(tmp_path / "notes.txt"), "-q").code == 4
    missing = run_cli("report", str(tmp_path / "nope.log"), str(tmp_path / "notes.txt"))
    assert missing.code == 2 and "Traceback" not in missing.stderr
