"""The examples of examples/ that hang, crash, diverge or misuse a collective, through the CLI:
the right code, ranks and names, nothing left running (the data and performance examples:
test_probe_examples.py)."""

import pytest

from tests.helpers.probe_runner import run_example

pytestmark = pytest.mark.multiprocess


def test_dataparallel_is_reported_at_its_site(tmp_path):
    finding = run_example("dataparallel", tmp_path).one("DDP404")
    assert finding["location"]["file"] == "examples/dataparallel.py"


def test_parameters_diverging_after_a_rank0_only_load(tmp_path):
    result = run_example("rank0_loads_checkpoint", tmp_path)
    assert result.code == 1
    assert result.one("DDP405")["ranks"] == [1]


def test_rank_conditional_collective_is_named_with_its_call_site(tmp_path):
    result = run_example("desync_collective", tmp_path, "--stall-timeout", "5")
    assert result.code == 1
    finding = result.one("DDP502")
    assert finding["location"]["file"] == "examples/desync_collective.py"
    assert "all_reduce" in finding["message"]
    assert "DDP503" in result.codes
    # How soon the report comes after the stall is a timing: benchmarks/multinode_stall.py measures
    # it alone (on a suite's shared cores this run took 33 s against a 30 s budget).


def test_shape_mismatch_is_caught_at_once_by_detail(tmp_path):
    result = run_example("desync_shape", tmp_path)
    finding = result.one("DDP501")
    assert finding["ranks"] == [0, 1]
    assert "shapes differ" in finding["message"]
    assert finding["location"]["file"] == "examples/desync_shape.py"


def test_hang_shows_every_ranks_stack_and_names_the_odd_one(tmp_path):
    result = run_example("hang_barrier", tmp_path, "--stall-timeout", "5")
    finding = result.one("DDP503")
    assert finding["ranks"] == [0, 1]
    detail = finding["evidence"]["detail"]
    assert "rank 0" in detail and "rank 1" in detail
    assert "hang_barrier.py" in detail
    assert result.report["metrics"]["outcome"] == "stalled"


def test_crash_reports_traceback_and_what_the_others_did(tmp_path):
    result = run_example("crash_rank1", tmp_path)
    finding = result.one("DDP504")
    assert finding["ranks"] == [1]
    assert finding["location"]["file"].startswith("examples/crash_rank1.py")
    assert "Traceback" in finding["evidence"]["detail"]


def test_group_that_never_forms_names_the_hard_coded_world_size(tmp_path):
    result = run_example("wrong_world_size", tmp_path, "--stall-timeout", "5")
    finding = result.one("DDP505")
    assert "world_size=4" in finding["message"]
    assert finding["location"]["file"] == "examples/wrong_world_size.py"


def test_checkpoint_written_by_every_rank(tmp_path):
    finding = run_example("shared_checkpoint", tmp_path).one("DDP701")
    assert finding["ranks"] == [0, 1]
    assert finding["location"]["file"] == "examples/shared_checkpoint.py"
