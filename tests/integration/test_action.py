"""action.yml, the composite GitHub Action: its steps' commands, parsed from the file, run here
on a checkout of this repository's examples as a pull request would have them (a base commit,
then a changed script): the lint annotates the change and its fix becomes a review suggestion,
the listed script is probed on the CPU, and the gate passes. Only the install step is not run
(it downloads torch): its order is checked instead, and this test's own install stands in."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers.probe_runner import REPO

yaml = pytest.importorskip("yaml")
ACTION = yaml.safe_load((REPO / "action.yml").read_text())
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def evaluate(value: str, context: dict[str, str]) -> str:
    """`${{ a || b }}` as GitHub evaluates it for these operands: the first non-empty one."""
    def one(match: re.Match) -> str:
        for operand in match.group(1).split("||"):
            operand = operand.strip()
            found = operand[1:-1] if operand.startswith("'") else context.get(operand, "")
            if found:
                return found
        return ""
    return EXPR.sub(one, str(value))


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=cwd,
                          capture_output=True, text=True, check=True, timeout=60)
    return done.stdout.strip()


def test_the_install_step_puts_the_cpu_torch_before_ddpdoctor():
    install = ACTION["runs"]["steps"][0]
    lines = [line.strip() for line in install["run"].splitlines() if "pip install" in line]
    cpu = next(i for i, line in enumerate(lines) if "download.pytorch.org/whl/cpu" in line)
    assert cpu < next(i for i, line in enumerate(lines) if '"$INSTALL"' in line)
    assert "github.action_path" in install["env"]["INSTALL"]
    assert all(step.get("shell") == "bash" for step in ACTION["runs"]["steps"])
    # inputs reach the shell through env, never pasted into the script text
    assert not any("${{" in step["run"] for step in ACTION["runs"]["steps"])


@pytest.mark.multiprocess
def test_the_actions_steps_run_on_this_repositorys_examples(tmp_path):
    repo = tmp_path / "repo"
    (repo / "examples").mkdir(parents=True)
    shutil.copy(REPO / "examples" / "healthy.py", repo / "examples" / "healthy.py")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    shutil.copy(REPO / "examples" / "no_set_epoch.py", repo / "examples" / "no_set_epoch.py")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the pull request's change")

    context = {f"inputs.{name}": str(spec.get("default", "")) for name, spec in ACTION["inputs"].items()}
    context.update({"inputs.scripts": "examples/healthy.py", "inputs.probe-args": "--epochs 2",
                    "inputs.token": "", "github.action_path": str(REPO), "github.repository": "o/r",
                    "github.event.pull_request.base.sha": base})
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GH_"))}
    outputs = {}
    for step in ACTION["runs"]["steps"][1:]:
        out_file = tmp_path / f"output-{step.get('id', 'x')}"
        out_file.write_text("")
        step_env = {**env, "GITHUB_OUTPUT": str(out_file),
                    **{k: evaluate(v, context) for k, v in (step.get("env") or {}).items()}}
        done = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=repo, env=step_env, capture_output=True,
                              text=True, timeout=900)
        outputs[step["name"]] = done
        assert done.returncode == 0, f"{step['name']}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        for line in out_file.read_text().splitlines():
            key, _, value = line.partition("=")
            context[f"steps.{step.get('id')}.outputs.{key}"] = value

    lint = outputs["Lint the changed Python files"]
    assert "::warning file=examples/no_set_epoch.py,line=92,title=DDP804" in lint.stdout
    assert "Suggested edit" in lint.stdout
    assert context["steps.lint.outputs.code"] == "0" and context["steps.probe.outputs.code"] == "0"
    probe_report = json.loads((repo / "ddpdoctor-reports" / "probe-healthy.json").read_text())
    assert probe_report["status"] == "pass" and probe_report["metrics"]["steps"] > 0
    review = json.loads((repo / "ddpdoctor-reports" / "review.json").read_text())
    [comment] = review["comments"]
    assert comment["path"] == "examples/no_set_epoch.py" and "sampler.set_epoch(epoch)" in comment["body"]
    assert "not posted" in outputs["Post the fixes as review suggestions"].stdout
    assert "lint exit 0, probe exit 0" in outputs["Gate"].stdout
