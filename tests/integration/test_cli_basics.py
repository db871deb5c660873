"""The CLI's catalogue commands and its handling of bad input: one line, exit 2, no traceback."""

import json

import pytest

from tests.helpers.cli_runner import run_cli


def test_checks_lists_the_catalogue_with_stable_codes():
    result = run_cli("checks", "--json")
    assert result.code == 0
    rows = json.loads(result.stdout)
    codes = [r["code"] for r in rows]
    assert codes == sorted(codes)
    for row in rows:
        assert row["stage"] in ("preflight", "probe", "lint", "evidence")
        assert row["severity"] in ("error", "warning", "info")


def test_explain_prints_the_three_part_documentation():
    from ddpdoctor.core.catalogue import SEPARATOR

    listing = json.loads(run_cli("checks", "--json").stdout)
    result = run_cli("explain", *[row["code"].lower() for row in listing])  # one CLI start for all
    assert result.code == 0, result.stderr
    texts = result.stdout.split(SEPARATOR)
    assert len(texts) == len(listing)
    for row, text in zip(listing, texts):
        assert text.startswith(f"{row['code']}: ")
        for part in ("What it detects", "Why it hurts", "How to fix"):
            assert part in text, f"{row['code']} docs lack {part!r}"


@pytest.mark.parametrize("args", [
    ["explain", "DDP999"],
    ["--no-such-flag"],
    ["probe", "does-not-exist.py"],
    ["probe", "examples"],
    ["probe", "examples/healthy.py", "--nproc-per-node", "0"],
    ["probe", "examples/healthy.py", "--nproc-per-node", "two"],
    ["probe", "examples/healthy.py", "--fail-on", "nonsense"],
    ["probe", "examples/healthy.py", "--ignore", "DDP999"],
    ["probe", "examples/healthy.py", "--timeout", "-1"],
    ["probe", "examples/healthy.py", "--master-port", "70000"],
    ["report", "/nonexistent-run-dir"],
])
def test_bad_input_is_one_line_and_exit_2(args, tmp_path):
    json_out = tmp_path / "report.json"
    result = run_cli(*args, "--json", str(json_out), timeout=60)
    assert result.code == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("ddpdoctor: error")
    assert "Traceback" not in result.stderr
    assert not json_out.exists()


def test_a_script_that_does_not_compile_is_named_with_file_and_line(tmp_path):
    script = tmp_path / "broken.py"
    script.write_text("import torch\n\ndef f(:\n    pass\n")
    result = run_cli("probe", str(script))
    assert result.code == 2
    assert f"{script}:3" in result.stderr
    assert not (tmp_path / "ddpdoctor-runs").exists()
