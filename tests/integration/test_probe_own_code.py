"""Probing from a folder that holds a ddpdoctor package of its own (the clone's root after the
README's `pip install .`): the hang is still placed at the user's line, never in ddpdoctor's
collective wrapper."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from tests.helpers.cli_runner import run_cli
from tests.helpers.probe_runner import processes_of

pytestmark = pytest.mark.multiprocess
PACKAGE = Path(__file__).resolve().parents[2] / "ddpdoctor"

HANG = textwrap.dedent("""\
    import time
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    dist.all_reduce(torch.ones(1))
    if dist.get_rank() == 0:
        dist.barrier()  # line 8: rank 1 never comes
    else:
        time.sleep(120)
    """)


def test_a_ddpdoctor_package_in_the_working_directory_does_not_take_the_user_s_line(tmp_path):
    # A copy in the job's folder, as in the clone's root: `-m ddpdoctor...` would import it.
    os.symlink(PACKAGE, tmp_path / "ddpdoctor")
    (tmp_path / "hang.py").write_text(HANG)
    run_dir = tmp_path / "run"
    done = run_cli("probe", "hang.py", "--run-dir", str(run_dir), "--json", "report.json", "-q",
                   "--stall-timeout", "5", timeout=240, cwd=str(tmp_path))
    assert not processes_of(run_dir.resolve())
    report = json.loads((tmp_path / "report.json").read_text())
    located = [f for f in report["findings"] if f["location"] and f["severity"] in ("error", "warning")]
    assert located, (done.stderr, report["findings"])
    assert all("ddpdoctor" not in f["location"]["file"] for f in located), located
    assert any(f["location"]["file"] == "hang.py" and f["location"]["line"] == 8 for f in located), located
    # Nowhere in the report (messages, stacks, evidence) is ddpdoctor's wrapper a user frame.
    stall = next(f for f in report["findings"] if f["code"] == "DDP503")
    assert "waits in barrier at hang.py:8" in stall["message"], stall["message"]
    assert "inrank/collectives.py" not in json.dumps(report)
    # The ranks ran the ddpdoctor the command did, not the folder's copy.
    start = json.loads((run_dir / "rank-0.jsonl").read_text().splitlines()[0])
    assert start["kind"] == "start" and start["ddpdoctor_dir"] == str(PACKAGE)
