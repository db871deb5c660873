"""Every probe code on a script written differently from the example it was developed against."""

import pytest

from tests.helpers.probe_runner import probe

pytestmark = pytest.mark.multiprocess

CASES = [
    ("constant_set_epoch", "DDP302", [0, 1]),
    ("loader_per_epoch", "DDP302", [0, 1]),
    ("uneven_file_shards", "DDP303", [1]),
    ("gpt_find_unused", "DDP402", [0, 1]),
    ("modulo_accumulation", "DDP403", [0, 1]),
    ("dp_inside_ddp_job", "DDP404", [0, 1]),
    ("rank0_weight_decay", "DDP405", [1]),
    ("rank0_barrier_in_save", "DDP502", [0, 1]),
    ("p2p_deadlock", "DDP503", [0, 1]),
    ("segfault_rank1", "DDP504", [1]),
    ("duplicate_rank", "DDP505", [0, 1]),
    ("epoch_checkpoints", "DDP701", [0, 1]),
]


@pytest.mark.parametrize("script,code,ranks", CASES, ids=[c[0] for c in CASES])
def test_check_finds_its_bug_in_a_differently_written_script(script, code, ranks, tmp_path):
    result = probe(f"tests/scripts/{script}.py", "--stall-timeout", "5", run_dir=tmp_path / "run")
    finding = result.one(code)
    assert finding["ranks"] == ranks
    assert finding["location"] is None or finding["location"]["file"].startswith("tests/scripts/")
    assert finding["hint"]


def test_a_crash_before_init_is_one_error_not_a_group_that_never_formed_nor_a_job_that_never_trained(tmp_path):
    result = probe("tests/scripts/crash_before_init.py", "--stall-timeout", "5", run_dir=tmp_path / "run")
    assert result.code == 1
    errors = [f for f in result.report["findings"] if f["severity"] == "error"]
    assert [f["code"] for f in errors] == ["DDP504"], errors
    assert errors[0]["ranks"] == [1] and "FileNotFoundError" in errors[0]["message"]
    assert "init_process_group" in errors[0]["message"]  # where rank 0 was left waiting
    assert not any("never trained" in line for line in result.report["incomplete"] or [])
