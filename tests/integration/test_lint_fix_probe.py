"""Each fix kind, proven by running the fixed script: `lint --patch` shows the edit, `lint --fix`
writes it, the lint is clean of the finding, and `ddpdoctor probe --cpu` (2 ranks, gloo, a
few steps) no longer sees the bug at run time while the job still trains. One probe per kind:
these are the slow tests of the feature. The per-node save fix has no probe here: on one node,
local rank 0 is global rank 0, before the fix and after it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers.cli_runner import run_cli
from tests.helpers.probe_runner import REPO, probe

# script, the lint code its fix removes, the probe code of the same bug, the script's args
CASES = [
    ("examples/no_set_epoch.py", "DDP804", "DDP302", ["--epochs", "2", "--workers", "0"]),
    ("examples/shared_checkpoint.py", "DDP806", "DDP701", ["--epochs", "2"]),
    ("examples/no_sampler.py", "DDP802", "DDP301", ["--epochs", "2"]),
    ("tests/scripts/modulo_accumulation.py", "DDP805", "DDP403", []),
    ("tests/scripts/latent_bincount.py", "DDP807", "DDP506", []),
]


@pytest.mark.multiprocess
@pytest.mark.parametrize("source, lint_code, run_code, args", CASES, ids=[c[1] for c in CASES])
def test_the_fixed_script_lints_and_probes_clean_and_still_trains(tmp_path, source, lint_code, run_code, args):
    script = tmp_path / Path(source).name
    shutil.copy(REPO / source, script)
    original = script.read_bytes()

    shown = run_cli("lint", "--patch", script.name, cwd=str(tmp_path))
    assert f"--- a/{script.name}" in shown.stdout and f"fix {lint_code}" in shown.stderr, shown.stderr
    assert script.read_bytes() == original

    written = run_cli("lint", "--fix", script.name, cwd=str(tmp_path))
    assert f"fix {lint_code}" in written.stdout and script.read_bytes() != original

    relint = run_cli("lint", script.name, "--json", "-", cwd=str(tmp_path))
    assert lint_code not in [f["code"] for f in relint.json()["findings"]], relint.stdout

    # a loaded machine starts torch slowly: the stall timeout only bounds a real hang here
    result = probe(str(script), "--cpu", "--stall-timeout", "150", run_dir=tmp_path / "run", args=args,
                   timeout=480)
    assert run_code not in result.codes, result.problems
    assert lint_code not in result.codes
    assert result.report["metrics"]["steps"] > 0, result.stderr[-2000:]
    assert not result.problems_beyond_timing, result.problems_beyond_timing


@pytest.mark.multiprocess
def test_probe_fix_writes_the_fix_of_what_the_run_confirmed(tmp_path):
    script = tmp_path / "no_sampler.py"
    shutil.copy(REPO / "examples" / "no_sampler.py", script)
    result = probe(str(script), "--cpu", "--stall-timeout", "150", "--fix", run_dir=tmp_path / "run",
                   args=["--epochs", "2"], timeout=480)
    twin = result.one("DDP301")  # the run saw the same batches; the lint's DDP802 merged into it
    assert twin["evidence"]["static"]["code"] == "DDP802"
    hunks = twin["evidence"]["fix"]["hunks"]  # the import, the loader, the set_epoch line
    assert sum("sampler=DistributedSampler(dataset, shuffle=True)" in h["replacement"] for h in hunks) == 1
    assert f"fix DDP802 {script}:49" in result.stdout
    assert "sampler=DistributedSampler(dataset, shuffle=True)" in script.read_text()
    assert result.code == 1  # the report is the run's: the bug was there when it ran
