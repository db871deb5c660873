"""`ddpdoctor lint --fix` / `--patch` from the command line, on copies of our own examples and of
our rewrites of real patterns: the diff applies with git, --fix writes it and reports what
remains, a second --fix changes nothing, healthy examples are left byte for byte as they were,
and JSON / GitHub output carry each fix."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests.helpers.cli_runner import run_cli
from tests.helpers.probe_runner import REPO

# One broken script per fix kind (per-node save included), and one with fixes declined.
BROKEN = {
    "examples/no_set_epoch.py": "DDP804",
    "examples/shared_checkpoint.py": "DDP806",
    "tests/scripts/lint_real/per_node_save_local_rank.py": "DDP806",
    "examples/no_sampler.py": "DDP802",
    "examples/grad_accum_no_sync.py": "DDP805",
    "examples/desync_shape.py": "DDP807",
}


def copy(tmp_path: Path, sources) -> list[Path]:
    out = []
    for source in sources:
        target = tmp_path / Path(source).name
        shutil.copy(REPO / source, target)
        out.append(target)
    return out


def codes(path: Path, cwd: Path) -> list[str]:
    result = run_cli("lint", path.name, "--json", "-", cwd=str(cwd))
    assert result.code in (0, 1), result.stderr
    return [f["code"] for f in result.json()["findings"]]


def test_patch_prints_a_diff_git_applies_and_changes_nothing(tmp_path):
    scripts = copy(tmp_path, BROKEN)
    before = {p: p.read_bytes() for p in scripts}
    result = run_cli("lint", "--patch", "--files", *[p.name for p in scripts], cwd=str(tmp_path))
    assert result.code == 1, result.stderr  # the findings are still there: nothing was written
    assert {p: p.read_bytes() for p in scripts} == before
    for source, code in BROKEN.items():
        assert f"--- a/{Path(source).name}" in result.stdout
        assert f"fix {code} {Path(source).name}:" in result.stderr
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "fix.patch").write_text(result.stdout)
    applied = subprocess.run(["git", "apply", "fix.patch"], cwd=tmp_path, capture_output=True, text=True)
    assert applied.returncode == 0, applied.stderr
    for path in scripts:
        assert BROKEN[next(s for s in BROKEN if s.endswith(path.name))] not in codes(path, tmp_path)


def test_fix_writes_the_edits_reports_what_remains_and_a_second_run_changes_nothing(tmp_path):
    scripts = copy(tmp_path, BROKEN)
    before = {p.name: codes(p, tmp_path) for p in scripts}
    first = run_cli("lint", "--fix", "--files", *[p.name for p in scripts], cwd=str(tmp_path))
    assert f"fixed {len(BROKEN) + 1} finding(s) in {len(BROKEN)} file(s)" in first.stdout, first.stdout
    for path in scripts:
        after = codes(path, tmp_path)
        code = BROKEN[next(s for s in BROKEN if s.endswith(path.name))]
        assert code not in after, (path.name, after)
        assert all(after.count(c) <= before[path.name].count(c) for c in after), (path.name, after)
    assert first.code == 0, first.stdout  # nothing remains at error level
    texts = {p: p.read_bytes() for p in scripts}
    second = run_cli("lint", "--fix", "--files", *[p.name for p in scripts], cwd=str(tmp_path))
    assert "fixed 0 finding(s) in 0 file(s)" in second.stdout
    assert {p: p.read_bytes() for p in scripts} == texts


def test_fix_on_every_healthy_example_changes_nothing(tmp_path):
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    healthy = sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "examples").rglob("*healthy*.py"))
    healthy += ["examples/modules/torchrun_train.py", "examples/modules/spawn_train.py"]
    assert len(healthy) >= 8
    before = {p: p.read_bytes() for p in (tmp_path / "examples").rglob("*") if p.is_file()}
    result = run_cli("lint", "--fix", "--files", *healthy, cwd=str(tmp_path))
    assert "fixed 0 finding(s) in 0 file(s)" in result.stdout, result.stdout
    assert {p: p.read_bytes() for p in (tmp_path / "examples").rglob("*") if p.is_file()} == before


def test_fix_and_patch_together_are_bad_input():
    result = run_cli("lint", "--fix", "--patch", "examples/no_sampler.py", cwd=str(REPO))
    assert result.code == 2 and "give one of the two" in result.stderr and "Traceback" not in result.stderr


def test_github_and_json_output_carry_the_fix_of_each_finding(tmp_path):
    [script] = copy(tmp_path, ["examples/no_set_epoch.py"])
    result = run_cli("lint", script.name, "--github", "--json", "report.json", cwd=str(tmp_path))
    assert script.read_bytes() == (REPO / "examples/no_set_epoch.py").read_bytes()
    [finding] = json.loads((tmp_path / "report.json").read_text())["findings"]
    fix = finding["evidence"]["fix"]
    assert fix["file"] == "no_set_epoch.py" and fix["start_line"] == fix["end_line"]
    assert fix["replacement"].startswith("        sampler.set_epoch(epoch)\n")
    assert "Suggested edit" in result.stdout
    review = subprocess.run([sys.executable, "-m", "ddpdoctor.report.suggestions", "report.json"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=60)
    [comment] = json.loads(review.stdout)["comments"]
    assert comment["path"] == "no_set_epoch.py" and "```suggestion\n        sampler.set_epoch(epoch)" in comment["body"]
