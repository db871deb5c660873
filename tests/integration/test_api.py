"""The Python API: `ddpdoctor.run_probe(...)` and `ddpdoctor.run_preflight(...)` return the report a
project's own test suite gates on; release 0.1's `ddpdoctor.run_probe(...)` still works, with a warning."""

import subprocess
import sys

import pytest

import ddpdoctor
from ddpdoctor.core.errors import UsageError
from ddpdoctor.report.model import Report
from tests.helpers.probe_runner import REPO, processes_of
from tests.helpers.ports import free_port


@pytest.mark.multiprocess
def test_probe_returns_the_report_a_test_suite_gates_on(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    report = ddpdoctor.run_probe("examples/gpu_no_sampler.py", args=["--epochs", "3"], nproc=2,
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
    port = free_port()
    report = ddpdoctor.run_preflight(master_port=port, backend="gloo", fail_on="warning")
    assert isinstance(report, Report)
    assert report.command == "preflight"
    assert report.status == "pass" and report.exit_code == 0, report.findings
    assert report.metrics["nodes"] == 1


BAD = [
    (lambda: ddpdoctor.run_probe("examples/missing.py"), "script not found"),
    (lambda: ddpdoctor.run_probe("examples/healthy.py", args="--epochs 2"), "args must be a list"),
    (lambda: ddpdoctor.run_probe("examples/healthy.py", nproc="2"), "nproc must be an integer"),
    (lambda: ddpdoctor.run_probe("examples/healthy.py", nproc=0), "at least 1"),
    (lambda: ddpdoctor.run_probe("examples/healthy.py", fail_on="sometimes"), "severity must be"),
    (lambda: ddpdoctor.run_probe("examples/healthy.py", ignore=["DDP999"]), "DDP999"),
    (lambda: ddpdoctor.run_preflight(backend="mpi"), "--backend must be one of"),
    (lambda: ddpdoctor.run_probe("examples/healthy.py", scaling=[1, 9999]), "scaling"),
]


@pytest.mark.parametrize("call,says", BAD, ids=[b[1] for b in BAD])
def test_bad_input_raises_usage_error_before_anything_runs(call, says, tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    with pytest.raises(UsageError, match=says):
        call()


def test_import_ddpdoctor_stays_cheap_and_the_old_names_still_call_with_a_warning():
    code = (
        "import sys, warnings, ddpdoctor\n"
        "assert callable(ddpdoctor.run_probe) and callable(ddpdoctor.run_preflight)\n"
        "assert 'torch' not in sys.modules, 'import ddpdoctor imported torch'\n"
        "import ddpdoctor.probe.driver\n"  # binds ddpdoctor.probe to the package: still callable
        "assert callable(ddpdoctor.probe) and ddpdoctor.probe.driver.analyse\n"
        "from ddpdoctor.core.errors import UsageError\n"
        "with warnings.catch_warnings(record=True) as seen:\n"
        "    warnings.simplefilter('always')\n"
        "    try:\n"
        "        ddpdoctor.probe('no/such/script.py')\n"
        "    except UsageError as exc:\n"
        "        assert 'script not found' in str(exc)\n"
        "assert any(w.category is DeprecationWarning and 'run_probe' in str(w.message) for w in seen)\n"
        "from ddpdoctor.preflight import run as preflight_run\n"
        "assert preflight_run.PreflightOptions and callable(preflight_run) and callable(ddpdoctor.preflight)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_probe_api_takes_every_option_the_cli_has():
    """One table of options: the Python API may not lag the CLI (it lacked scaling and trace)."""
    import inspect

    from ddpdoctor.cli.probe import probe_command

    cli = {p.name for p in inspect.signature(probe_command).parameters.values()}
    api = set(inspect.signature(ddpdoctor.run_probe).parameters)
    # Output and display flags have no API equivalent: the API returns the Report itself.
    # --fix / --patch edit or print the script's source after the run: `ddpdoctor.lint.fix` is
    # their API (plan, then write), not an option of the run.
    display = {"json_path", "junit_path", "github", "verbose", "quiet", "args", "force", "quiet_script",
               "fix", "patch"}
    renamed = {"nproc_per_node": "nproc", "stall_timeout": "stall_timeout", "script_args": "args"}
    missing = {renamed.get(name, name) for name in cli - display} - api
    assert missing == set()
