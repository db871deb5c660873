"""No report path may destroy a user's file: refused with exit 2 before any rank starts, the
file byte-for-byte unchanged, no run dir made (core/output_guard.py)."""

from __future__ import annotations

import shutil

import pytest

from tests.helpers.cli_runner import run_cli
from tests.helpers.probe_runner import REPO

TRAIN = "import sys\nprint('training', sys.argv[1:])\n"
RECORDED = REPO / "tests" / "probe_recordings" / "healthy"


@pytest.fixture
def workdir(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "data.csv").write_text("a,b\n1,2\n")
    return tmp_path


def probe(workdir, *args):
    return run_cli("probe", *args, "--run-dir", str(workdir / "run"), cwd=str(workdir), timeout=60)


def assert_refused_untouched(result, workdir, says):
    assert result.code == 2, (result.stdout, result.stderr)
    assert says in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert (workdir / "train.py").read_text() == TRAIN
    assert (workdir / "data.csv").read_text() == "a,b\n1,2\n"
    assert not (workdir / "run").exists(), "the job started before the paths were checked"


@pytest.mark.parametrize("flag", ["--json", "--junit", "--trace"])
def test_a_report_path_that_is_the_script_is_refused_before_the_job(workdir, flag):
    assert_refused_untouched(probe(workdir, flag, "train.py", "train.py"), workdir, "refusing to overwrite")


def test_a_report_path_that_is_a_script_argument_is_refused(workdir):
    result = probe(workdir, "--json", "data.csv", "train.py", "--", "--data=data.csv")
    assert_refused_untouched(result, workdir, "the script's argument")
    # Not yet existing, but the script was told to write there: still the script's file.
    result = probe(workdir, "--junit", "out.xml", "train.py", "--", "--out", "out.xml")
    assert_refused_untouched(result, workdir, "the script's argument out.xml")


def test_an_existing_file_that_is_not_a_report_needs_force(workdir):
    assert_refused_untouched(probe(workdir, "--json", "data.csv", "train.py"), workdir, "--force")


def test_two_reports_on_one_path_and_a_path_under_a_file_are_refused(workdir):
    assert_refused_untouched(probe(workdir, "--json", "r.x", "--junit", "r.x", "train.py"), workdir,
                             "writes the same file")
    assert_refused_untouched(probe(workdir, "--json", "data.csv/r.json", "train.py"), workdir,
                             "is a file, not a folder")


def test_report_command_overwrites_its_own_reports_refuses_others_and_force_lifts_that(tmp_path):
    run_dir = tmp_path / "recorded"
    shutil.copytree(RECORDED, run_dir)
    report, junit, notes = tmp_path / "report.json", tmp_path / "report.xml", tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    first = run_cli("report", str(run_dir), "--json", str(report), "--junit", str(junit), "-q")
    assert first.code in (0, 1), first.stderr
    again = run_cli("report", str(run_dir), "--json", str(report), "--junit", str(junit), "-q")
    assert again.code == first.code, again.stderr  # an earlier ddpdoctor report is replaced
    refused = run_cli("report", str(run_dir), "--json", str(notes), "-q")
    assert refused.code == 2 and "--force" in refused.stderr
    assert notes.read_text() == "my notes\n"
    inside = run_cli("report", str(run_dir), "--json", str(run_dir / "x.json"), "-q")
    assert inside.code == 2 and "inside the run dir" in inside.stderr
    forced = run_cli("report", str(run_dir), "--json", str(notes), "--force", "-q")
    assert forced.code == first.code and '"tool": "ddpdoctor"' in notes.read_text()
    assert not list(tmp_path.glob(".*.tmp")), "a temporary file was left beside the report"


def test_preflight_refuses_to_overwrite_its_host_list(tmp_path):
    hosts = tmp_path / "hosts.txt"
    hosts.write_text("127.0.0.1\n")
    result = run_cli("preflight", "--nodes", str(hosts), "--json", str(hosts), cwd=str(tmp_path))
    assert result.code == 2 and "the input" in result.stderr
    assert hosts.read_text() == "127.0.0.1\n"
