"""A script written differently from the examples, probed end to end. (Every probe code on such a
script is judged over what its probe recorded: tests/unit/test_probe_scripts_recorded.py.)"""

import pytest

from tests.helpers.probe_runner import probe

pytestmark = pytest.mark.multiprocess


def test_a_crash_before_init_is_one_error_not_a_group_that_never_formed_nor_a_job_that_never_trained(tmp_path):
    result = probe("tests/scripts/crash_before_init.py", "--stall-timeout", "5", run_dir=tmp_path / "run")
    assert result.code == 1
    errors = [f for f in result.report["findings"] if f["severity"] == "error"]
    assert [f["code"] for f in errors] == ["DDP504"], errors
    assert errors[0]["ranks"] == [1] and "FileNotFoundError" in errors[0]["message"]
    assert "init_process_group" in errors[0]["message"]  # where rank 0 was left waiting
    assert not any("never trained" in line for line in result.report["incomplete"] or [])
