"""examples/ci/github-actions.yml: the ddpdoctor commands it runs pass on this repo, on a machine
without a GPU, and write the reports it uploads."""

import re
import shlex
import xml.etree.ElementTree as ET

import pytest

from tests.helpers.cli_runner import run_cli
from tests.helpers.probe_runner import REPO

WORKFLOW = REPO / "examples" / "ci" / "github-actions.yml"


def run_steps(text):
    """The shell text of every `run:` step, in order: `run: cmd` or a `run: |` block."""
    steps, lines = [], text.splitlines()
    for i, line in enumerate(lines):
        match = re.match(r"^(\s*)(?:- )?run:\s*(.*)$", line)
        if not match:
            continue
        indent, rest = len(match.group(1)), match.group(2).strip()
        if rest not in ("|", ">", "|-", ">-"):
            steps.append(rest)
            continue
        block = []
        for following in lines[i + 1:]:
            if following.strip() and len(following) - len(following.lstrip()) <= indent:
                break
            block.append(following.strip())
        steps.append("\n".join(block).strip())
    return steps


def commands(step):
    """Shell commands of one step, with backslash continuations joined."""
    return [" ".join(c.split()) for c in step.replace("\\\n", " ").splitlines() if c.strip()]


def ddpdoctor_commands():
    return [c for s in run_steps(WORKFLOW.read_text()) for c in commands(s) if c.startswith("ddpdoctor ")]


def test_workflow_installs_the_cpu_torch_before_ddpdoctor_and_uploads_the_reports():
    text = WORKFLOW.read_text()
    installs = [c for s in run_steps(text) for c in commands(s) if "pip install" in c]
    cpu_torch = next(i for i, c in enumerate(installs) if "download.pytorch.org/whl/cpu" in c)
    assert cpu_torch < next(i for i, c in enumerate(installs) if c.endswith(" ddpdoctor"))
    probe = next(c for c in ddpdoctor_commands() if c.startswith("ddpdoctor probe"))
    assert "--cpu" in probe and "--github" in probe
    junit = [shlex.split(c)[shlex.split(c).index("--junit") + 1] for c in ddpdoctor_commands()]
    assert len(junit) == 2  # preflight and probe
    upload = text[text.index("actions/upload-artifact"):]
    assert "if: always()" in text[:text.index("actions/upload-artifact")].rsplit("- name:", 1)[1]
    for path in junit:
        assert path.split("/")[0] + "/" in upload, f"{path} is written but not uploaded"


def test_workflow_is_valid_yaml_with_the_steps_parsed_here():
    yaml = pytest.importorskip("yaml")
    workflow = yaml.safe_load(WORKFLOW.read_text())
    steps = [s for job in workflow["jobs"].values() for s in job["steps"]]
    assert [commands(s["run"]) for s in steps if "run" in s] == \
        [commands(s) for s in run_steps(WORKFLOW.read_text())]


@pytest.mark.multiprocess
def test_ddpdoctor_commands_of_the_workflow_pass_on_this_repo(tmp_path):
    # A checkout of the project: the script where the workflow names it, reports written beside.
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "gpu_healthy.py").symlink_to(REPO / "examples" / "gpu_healthy.py")
    found = ddpdoctor_commands()
    assert [c.split()[1] for c in found] == ["preflight", "probe"]
    for command in found:
        result = run_cli(*shlex.split(command)[1:], cwd=str(tmp_path), timeout=240)
        assert result.code == 0, f"{command}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        assert "::error" not in result.stdout
        junit = shlex.split(command)[shlex.split(command).index("--junit") + 1]
        suite = ET.parse(tmp_path / junit).getroot()
        assert suite.tag == "testsuite" and suite.get("failures") == "0"
        assert len(suite.findall("testcase")) >= 10
