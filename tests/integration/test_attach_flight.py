"""`ddpdoctor report FR_DUMP_DIR` on Flight Recorder dumps a real gloo job left behind."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers.attach_jobs import REPO
from tests.helpers.ports import free_port
from tests.helpers.cli_runner import run_cli

pytestmark = pytest.mark.multiprocess


def test_dumps_of_a_skipped_all_reduce_name_the_missing_rank_and_the_call_site(tmp_path):
    dumps = tmp_path / "fr"
    dumps.mkdir()
    job = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                    "--master-addr", "127.0.0.1", "--master-port", str(free_port()),
                    str(REPO / "tests" / "scripts" / "fr_skip.py"), str(dumps)],
                   capture_output=True, timeout=120, check=False)
    assert sorted(p.name for p in dumps.iterdir()) == ["rank_0", "rank_1"], job.stdout[-3000:]
    done = run_cli("report", str(dumps), "--json", "-", timeout=60)
    assert done.code == 1, done.stderr
    report = done.json()
    skipped = [f for f in report["findings"] if f["code"] == "DDP502"]
    assert len(skipped) == 1 and skipped[0]["ranks"] == [1]
    assert skipped[0]["location"]["file"].endswith("fr_skip.py")
    assert skipped[0]["location"]["line"] == 42  # dist.all_reduce inside sync_metrics
    assert skipped[0]["evidence"]["seq"] == 5
    assert "rank 1's last collective was all_reduce #4" in skipped[0]["message"]
