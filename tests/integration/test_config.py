"""[tool.ddpdoctor] in pyproject.toml: defaults for the commands, flags win, bad settings exit 2."""

import json
import textwrap

import pytest

from tests.helpers.cli_runner import run_cli
from tests.helpers.probe_runner import REPO, processes_of

from ddpdoctor.core import config
from tests.helpers.ports import free_port
def write_project(root, text):
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(textwrap.dedent(text))
    return root / "pyproject.toml"


@pytest.mark.multiprocess
def test_probe_takes_its_settings_from_the_nearest_pyproject_and_flags_win(tmp_path):
    project = tmp_path / "project"
    write_project(project, """
        [project]
        name = "trainer"

        [tool.ddpdoctor]
        cpu = true                 # the GPU script runs here only with --cpu
        ignore = ["DDP301"]        # its missing sampler is not failing this gate

        [tool.ddpdoctor.probe]
        max-steps = 3
        steps-per-epoch = 2
        run-dir = "runs/gate"      # relative to this file
    """)
    workdir = project / "scripts"  # found from a subdirectory, like git finds its repo
    workdir.mkdir()
    report_path = tmp_path / "report.json"
    result = run_cli("probe", str(REPO / "examples" / "gpu_no_sampler.py"), "--max-steps", "4",
                     "--json", str(report_path), "-q", cwd=str(workdir), timeout=240)
    report = json.loads(report_path.read_text())
    assert result.code == 0, (result.stderr, report["findings"])
    assert report["metrics"]["steps"] == 4  # the flag, not the file's 3
    assert report["run_dir"] == str((project / "runs" / "gate").resolve())
    assert any(n.startswith("--cpu: ") for n in report["notes"])  # cpu = true applied
    assert {c["code"]: c["status"] for c in report["checks"]}["DDP301"] == "ignored"
    assert not processes_of(project / "runs" / "gate")


def test_preflight_settings_apply_per_command_and_flags_win(tmp_path):
    in_file, on_command_line = free_port(), free_port()
    write_project(tmp_path, f"""
        [tool.ddpdoctor]
        fail-on = "info"
        cpu = true                  # a probe setting: preflight has no such flag, leaves it be

        [tool.ddpdoctor.preflight]
        master-port = {in_file}
        backend = "gloo"
        timeout = 5
    """)
    from_file = run_cli("preflight", "--json", "-", cwd=str(tmp_path)).json()
    assert from_file["metrics"]["master"].endswith(f":{in_file}")
    assert from_file["fail_on"] == "info"
    overridden = run_cli("preflight", "--master-port", str(on_command_line), "--fail-on", "error",
                         "--json", "-", cwd=str(tmp_path)).json()
    assert overridden["metrics"]["master"].endswith(f":{on_command_line}")
    assert overridden["fail_on"] == "error"


BAD = [
    ("unknown key", "[tool.ddpdoctor.probe]\nmax-step = 3\n", "unknown key 'max-step'"),
    ("snake case", "[tool.ddpdoctor.probe]\nmax_steps = 3\n", "'max-steps'"),
    ("wrong type", "[tool.ddpdoctor.probe]\nmax-steps = \"ten\"\n", "max-steps must be an integer"),
    ("bool for int", "[tool.ddpdoctor]\nnproc-per-node = true\n", "nproc-per-node must be an integer"),
    ("bad choice", "[tool.ddpdoctor]\nfail-on = \"sometimes\"\n", "fail-on must be one of"),
    ("unknown code", "[tool.ddpdoctor]\nignore = [\"DDP999\"]\n", "DDP999"),
    ("ambiguous", "[tool.ddpdoctor]\ntimeout = 60\n", "put it under [tool.ddpdoctor.probe]"),
    ("not toml", "[tool.ddpdoctor\ncpu = true\n", "not valid TOML"),
]


@pytest.mark.parametrize("case,text,says", BAD, ids=[b[0] for b in BAD])
def test_bad_settings_are_one_line_naming_the_file_and_exit_2(case, text, says, tmp_path):
    path = write_project(tmp_path, text)
    result = run_cli("probe", "train.py", cwd=str(tmp_path))
    assert result.code == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert str(path) in result.stderr and says in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_commands_without_settings_work_beside_a_broken_config(tmp_path):
    write_project(tmp_path, "[tool.ddpdoctor.probe]\nmax-steps = \"ten\"\n")
    result = run_cli("explain", "DDP301", cwd=str(tmp_path))
    assert result.code == 0
    assert result.stdout.startswith("DDP301")


def test_nearest_pyproject_with_a_ddpdoctor_table_wins(tmp_path):
    write_project(tmp_path, "[tool.ddpdoctor.probe]\nmax-steps = 7\nrun-dir = 'runs'\n")
    write_project(tmp_path / "lib", "[project]\nname = 'lib'  # depends on ddpdoctor, no table\n")
    found = config.load(tmp_path / "lib" / "src")
    assert found.path == tmp_path / "pyproject.toml"
    assert found.defaults_for("probe") == {"max_steps": 7, "run_dir": str(tmp_path / "runs")}
    assert found.defaults_for("preflight") == {}
    assert config.load(tmp_path.parent).path is None


def test_every_flag_of_a_command_has_its_key_and_every_key_its_flag():
    """One table of options: [tool.ddpdoctor] cannot drift from the CLI (config.KEYS is checked
    against the commands' own flags)."""
    import typer.main

    from ddpdoctor.cli.app import app, _register_commands
    from ddpdoctor.core import config

    _register_commands()
    commands = typer.main.get_command(app).commands
    for name, keys in config.KEYS.items():
        flags = {o[2:] for p in commands[name].params for o in p.opts if o.startswith("--") and "_" not in o}
        assert set(keys) <= flags, (name, set(keys) - flags)
        assert flags - config.PER_RUN - {"help"} <= set(keys), (name, flags - config.PER_RUN - set(keys))
