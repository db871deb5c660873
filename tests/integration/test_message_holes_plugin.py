"""The message-hole plugin (tests/helpers/message_holes.py) fails a real pytest run whose tests
made a message or fix with a hole, whatever order the tests ran in and on whichever xdist worker
they ran, and lets a clean run pass."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

HOLED = '''
from ddpdoctor.core.findings import Problem

def test_{name}():
    Problem("rank 1 on <host> stalled", "run ssh {{host}} to look")
'''
CLEAN = '''
from ddpdoctor.core.findings import Problem

def test_{name}():
    Problem("rank 1 on gpu01 stalled", "run ssh gpu01 to look; value <redacted>")
'''


def run_pytest(folder: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)


def suite(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir()
    (folder / "pytest.ini").write_text("[pytest]\n")
    (folder / "conftest.py").write_text('pytest_plugins = ["tests.helpers.message_holes"]\n')
    for name, template in files.items():
        (folder / f"test_{name}.py").write_text(template.format(name=name))
    return folder


def test_holes_made_on_two_xdist_workers_fail_the_run_and_are_all_listed(tmp_path):
    # The holed tests are neither first nor last, and (loadfile) run on different workers.
    folder = suite(tmp_path / "holed", {"a_clean": CLEAN, "b_holed": HOLED, "c_holed": HOLED, "d_clean": CLEAN})
    done = run_pytest(folder, "-n", "2", "--dist", "loadfile", "-v")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "4 passed" in done.stdout and "2 message(s) with a hole" in done.stdout, done.stdout
    assert "test_b_holed.py::test_b_holed" in done.stdout and "test_c_holed.py::test_c_holed" in done.stdout
    assert "['<host>', '{host}']" in done.stdout
    workers = {line.split()[0] for line in done.stdout.splitlines() if line.startswith("[gw") and "_holed" in line}
    assert len(workers) == 2, workers  # the two holes were seen by two different workers

    alone = run_pytest(folder, "-p", "no:xdist")
    assert alone.returncode == 1 and "2 message(s) with a hole" in alone.stdout, alone.stdout


def test_a_run_whose_messages_are_whole_passes(tmp_path):
    folder = suite(tmp_path / "clean", {"a_clean": CLEAN, "b_clean": CLEAN})
    done = run_pytest(folder, "-n", "2", "--dist", "loadfile")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "with a hole" not in done.stdout
