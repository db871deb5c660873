"""`ddpdoctor lint` from the command line, and the lint inside `ddpdoctor probe`'s report."""

from __future__ import annotations


import pytest

from tests.helpers.cli_runner import run_cli
from tests.helpers.probe_runner import REPO, probe


def test_lint_reports_a_collective_under_rank_zero_with_exit_1():
    result = run_cli("lint", "tests/scripts/rank0_barrier_in_save.py", "--json", "-", cwd=str(REPO))
    assert result.code == 1, result.stderr
    report = result.json()
    assert report["command"] == "lint" and report["status"] == "fail"
    (finding,) = report["findings"]
    assert finding["code"] == "DDP801"
    assert finding["location"] == {"file": "tests/scripts/rank0_barrier_in_save.py", "line": 11}
    assert finding["evidence"]["static"] is True and finding["evidence"]["guard"] == "dist.get_rank() == 0"
    assert report["metrics"]["elapsed_ms"] < 1000


def test_lint_of_healthy_nanogpt_style_code_passes_and_prints_one_line_per_check():
    result = run_cli("lint", "tests/scripts/lint/nanogpt/train.py", cwd=str(REPO))
    assert result.code == 0, result.stdout + result.stderr
    assert "2 file(s)" in result.stdout and "model.py" in result.stdout
    for code in ("DDP801", "DDP802", "DDP803", "DDP804", "DDP805", "DDP806"):
        assert code in result.stdout
    assert "PASS" in result.stdout


def test_warnings_gate_with_fail_on_and_ignore():
    script = "examples/grad_accum_no_sync.py"
    assert run_cli("lint", script, "-q", cwd=str(REPO)).code == 0  # DDP805 is a warning
    assert run_cli("lint", script, "-q", "--fail-on", "warning", cwd=str(REPO)).code == 1
    assert run_cli("lint", script, "-q", "--fail-on", "warning", "--ignore", "DDP805", cwd=str(REPO)).code == 0


@pytest.mark.parametrize("content,needle", [(None, "no such file"), ("for x in:\n", "not valid Python")])
def test_bad_script_is_one_line_and_exit_2(tmp_path, content, needle):
    script = tmp_path / "train.py"
    if content is not None:
        script.write_text(content)
    result = run_cli("lint", str(script))
    assert result.code == 2
    assert needle in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_explain_prints_the_rule():
    result = run_cli("explain", "DDP805")
    assert result.code == 0 and "no_sync" in result.stdout and "stage: lint" in result.stdout


@pytest.mark.multiprocess
def test_probe_merges_the_lint_finding_into_the_runtime_one(tmp_path):
    result = probe("tests/scripts/rank0_barrier_in_save.py", "--stall-timeout", "5", "--max-steps", "6",
                   run_dir=tmp_path / "run")
    assert "DDP801" not in result.codes  # one finding for one bug ...
    skipped = result.one("DDP502")
    static = skipped["evidence"]["static"]  # ... with both kinds of evidence
    assert static["code"] == "DDP801" and static["guard"] == "dist.get_rank() == 0"
    assert skipped["location"]["line"] == 11
    check = next(c for c in result.report["checks"] if c["code"] == "DDP801")
    assert check["status"] == "skipped" and "DDP502" in check["reason"]
    assert result.report["metrics"]["lint"]["files"] == ["tests/scripts/rank0_barrier_in_save.py"]


@pytest.mark.multiprocess
def test_probe_reports_a_latent_desync_from_bincount_without_minlength(tmp_path):
    result = probe("tests/scripts/latent_bincount.py", "--max-steps", "6", run_dir=tmp_path / "run")
    finding = result.one("DDP506")
    assert finding["severity"] == "warning" and finding["ranks"] == [0, 1]
    assert finding["location"] == {"file": "tests/scripts/latent_bincount.py", "line": 24}
    assert len(finding["evidence"]["sizes"]) >= 3 and "minlength" in finding["hint"]
    assert "DDP501" not in result.codes and result.code == 0  # a warning: the ranks agreed so far


@pytest.mark.multiprocess
def test_probe_of_a_healthy_run_with_an_unconfirmed_static_finding_exits_0(tmp_path):
    result = probe("tests/scripts/lint/unreached_rank0_barrier.py", "--stall-timeout", "10",
                   run_dir=tmp_path / "run")
    assert result.code == 0, result.stdout + result.stderr
    finding = result.one("DDP801")  # shown, one step lower, saying the run did not confirm it
    assert finding["severity"] == "warning" and finding["location"]["line"] == 17
    assert finding["evidence"]["confirmed"] is False and finding["evidence"]["severity_in_lint"] == "error"
    assert "did not confirm it" in finding["message"] and "does not fail the probe" in finding["message"]
    assert result.report["status"] == "pass"


def test_lint_files_as_pre_commit_hands_them_over():
    result = run_cli("lint", "--files", "tests/scripts/rank0_barrier_in_save.py", "tests/scripts/lint/nanogpt/model.py",
                     "examples/healthy.py", "--json", "-", cwd=str(REPO))
    assert result.code == 1, result.stderr
    report = result.json()
    assert [f["code"] for f in report["findings"]] == ["DDP801"]
    assert report["metrics"]["scripts"] == ["tests/scripts/rank0_barrier_in_save.py", "examples/healthy.py"]
    assert any("only define things (tests/scripts/lint/nanogpt/model.py)" in n for n in report["notes"])


def test_lint_diff_lints_the_files_changed_against_a_revision(tmp_path):
    import subprocess

    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True,
                       env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                            "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})

    healthy = "import torch.distributed as dist\ndist.init_process_group('gloo')\ndist.barrier()\n"
    (tmp_path / "train.py").write_text(healthy)
    (tmp_path / "other.py").write_text(healthy)
    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "first")
    (tmp_path / "train.py").write_text(healthy + "if dist.get_rank() == 0:\n    dist.barrier()\n")
    result = run_cli("lint", "--diff", "--json", "-", cwd=str(tmp_path))
    assert result.code == 1, result.stdout + result.stderr
    report = result.json()
    assert report["metrics"]["scripts"] == ["train.py"]
    assert [(f["code"], f["location"]["line"]) for f in report["findings"]] == [("DDP801", 5)]
    assert run_cli("lint", "--diff", "HEAD", "-q", cwd=str(tmp_path)).code == 1
    bad = run_cli("lint", "--diff", "nosuchrev", cwd=str(tmp_path))
    assert bad.code == 2 and "nosuchrev" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_the_pre_commit_hook_runs_lint_on_the_files_it_is_given():
    import yaml

    hooks = {h["id"]: h for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}
    hook = hooks["ddpdoctor-lint"]
    assert hook["entry"] == "ddpdoctor lint --files"
    assert hooks["ddpdoctor-lint-fix"]["entry"] == "ddpdoctor lint --fix --files"
    assert hook["language"] == "python" and hook["types"] == ["python"]


def test_lint_reports_a_training_forward_round_the_ddp_wrapper_with_exit_1():
    result = run_cli("lint", "tests/scripts/module_bypass.py", "--json", "-", cwd=str(REPO))
    assert result.code == 1, result.stderr
    (finding,) = result.json()["findings"]
    assert finding["code"] == "DDP810" and finding["severity"] == "error"
    assert finding["location"] == {"file": "tests/scripts/module_bypass.py", "line": 26}
    assert finding["evidence"]["wrapper_location"] == "tests/scripts/module_bypass.py:20"
    assert "model.module.features" in finding["evidence"]["forward"]


@pytest.mark.multiprocess
def test_probe_sees_the_replicas_drift_and_tells_the_static_cause_once(tmp_path):
    result = probe("tests/scripts/module_bypass.py", "--max-steps", "6", run_dir=tmp_path / "run")
    assert "DDP810" not in result.codes  # one finding for one bug ...
    drift = result.one("DDP405")
    assert drift["evidence"]["static"]["code"] == "DDP810"  # ... with both kinds of evidence
    assert drift["location"]["line"] == 20
