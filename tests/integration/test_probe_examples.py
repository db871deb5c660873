"""Each example of examples/ through the CLI: the right code, ranks and names, nothing left running.
The examples that hang, crash, diverge or misuse a collective: test_probe_examples_failures.py
(a file of its own, so that --dist loadfile runs the two halves on two workers)."""

import pytest

from tests.helpers.probe_runner import run_example

pytestmark = pytest.mark.multiprocess


def test_missing_sampler_is_reported_with_ranks_and_loader_site(tmp_path):
    result = run_example("no_sampler", tmp_path)
    assert result.code == 1
    finding = result.one("DDP301")
    assert finding["ranks"] == [0, 1]
    assert finding["location"]["file"] == "examples/no_sampler.py"
    assert "identical" in finding["message"]


def test_per_rank_random_split_is_reported_as_partial_overlap(tmp_path):
    finding = run_example("random_split_per_rank", tmp_path).one("DDP301")
    assert finding["ranks"] == [0, 1]
    assert "overlap" in finding["message"]


def test_set_epoch_never_called_is_reported(tmp_path):
    finding = run_example("no_set_epoch", tmp_path).one("DDP302")
    assert finding["ranks"] == [0, 1]
    assert finding["location"]["file"] == "examples/no_set_epoch.py"


def test_uneven_batch_counts_name_the_short_rank(tmp_path):
    finding = run_example("uneven_batches", tmp_path).one("DDP303")
    assert 1 in finding["ranks"]
    assert "rank 0 → 8, rank 1 → 7" in finding["message"]


def test_unused_parameters_are_named_even_though_the_script_crashes(tmp_path):
    result = run_example("unused_params", tmp_path)
    assert result.code == 1
    finding = result.one("DDP401")
    assert finding["ranks"] == [0, 1]
    assert "aux_head.weight" in finding["message"] and "aux_head.bias" in finding["message"]
    assert "Expected to have finished reduction" in result.one("DDP504")["message"]


def test_rank_dependent_unused_parameters_name_the_rank(tmp_path):
    finding = run_example("unused_params_rank_dependent", tmp_path).one("DDP401")
    assert finding["ranks"] == [1]
    assert "moe.experts" in finding["message"]


def test_find_unused_parameters_overhead_is_a_warning(tmp_path):
    result = run_example("find_unused_true", tmp_path)
    assert result.one("DDP402")["severity"] == "warning"
    assert result.code == 0  # warnings pass the default --fail-on error


def test_accumulation_without_no_sync_is_reported(tmp_path):
    finding = run_example("grad_accum_no_sync", tmp_path, "--fail-on", "warning").one("DDP403")
    assert finding["ranks"] == [0, 1]
