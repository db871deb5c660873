"""The Python API: `ddpdoctor.probe(...)` and `ddpdoctor.preflight(...)` return the report a
project's own test suite gates on."""

import socket
import subprocess
import sys

import pytest

import ddpdoctor
from ddpdoctor.errors import UsageError
from ddpdoctor.report.model import Report
from probe_runner import REPO, processes_of


@pytest.mark.multiprocess
def test_probe_returns_the_report_a_test_suite_gates_on(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    report = ddpdoctor.probe("examples/gpu_no_sampler.py", args=["--epochs", "3"], nproc=2,
                             cpu=True, max_steps=4, steps_per_epoch=2, run_dir=tmp_path / "run")
    assert isinstance(report, Report)
    assert report.status == "fail" and report.exit_code == 1
    finding = next(f for f in report.gating_findings if f.code == "DDP301")
    assert finding.ranks == [0, 1]
    assert report.metrics["steps"] == 4
    assert report.to_dict()["findings"][0]["code"] == "DDP301"
    assert report.run_dir == str((tmp_path / "run").resolve())
    assert not processes_of((tmp_path / "run").resolve())


def test_preflight_returns_the_report():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    report = ddpdoctor.preflight(master_port=port, backend="gloo", fail_on="warning")
    assert isinstance(report, Report)
    assert report.command == "preflight"
    assert report.status == "pass" and report.exit_code == 0, report.findings
    assert report.metrics["nodes"] == 1


BAD = [
    (lambda: ddpdoctor.probe("examples/missing.py"), "script not found"),
    (lambda: ddpdoctor.probe("examples/healthy.py", args="--epochs 2"), "args must be a list"),
    (lambda: ddpdoctor.probe("examples/healthy.py", nproc="2"), "nproc must be an integer"),
    (lambda: ddpdoctor.probe("examples/healthy.py", nproc=0), "at least 1"),
    (lambda: ddpdoctor.probe("examples/healthy.py", fail_on="sometimes"), "severity must be"),
    (lambda: ddpdoctor.probe("examples/healthy.py", ignore=["DDP999"]), "DDP999"),
    (lambda: ddpdoctor.preflight(backend="mpi"), "--backend must be one of"),
]


@pytest.mark.parametrize("call,says", BAD, ids=[b[1] for b in BAD])
def test_bad_input_raises_usage_error_before_anything_runs(call, says, tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    with pytest.raises(UsageError, match=says):
        call()


def test_import_ddpdoctor_stays_cheap_and_the_api_names_stay_modules():
    code = (
        "import sys, ddpdoctor\n"
        "assert callable(ddpdoctor.probe) and callable(ddpdoctor.preflight)\n"
        "assert 'torch' not in sys.modules, 'import ddpdoctor imported torch'\n"
        "import ddpdoctor.probe.run\n"  # binds ddpdoctor.probe again: still the callable package
        "assert callable(ddpdoctor.probe) and ddpdoctor.probe.run.analyse\n"
        "from ddpdoctor import preflight\n"
        "assert preflight.PreflightOptions and callable(preflight)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
