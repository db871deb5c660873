"""DDP506 end to end from the CLI: a data-sized all-reduce after an unrelated small all-reduce is
named at its call site; the same size exchanged first (all_reduce MAX, all_gather of lengths)
stays clean."""

from __future__ import annotations

import pytest

from tests.helpers.probe_runner import probe

pytestmark = pytest.mark.multiprocess


def test_counts_all_reduced_after_a_loss_all_reduce_are_a_latent_desync(tmp_path):
    result = probe("tests/scripts/latent_counts_after_loss.py", "--max-steps", "6",
                   run_dir=tmp_path / "run")
    finding = result.one("DDP506")
    assert finding["location"] == {"file": "tests/scripts/latent_counts_after_loss.py", "line": 31}
    assert "no earlier collective exchanged the size" in finding["message"]
    assert "all_reduce(SUM) at tests/scripts/latent_counts_after_loss.py:29" in finding["message"]
    shapes = sorted(s["shapes"][0][0] for s in finding["evidence"]["sizes"])
    assert shapes == [2, 3, 4] and finding["evidence"]["nearest_before"]["reduce_op"] == "SUM"
    assert result.code == 0 and "DDP501" not in result.codes


@pytest.mark.parametrize("script", ["latent_counts_max_exchanged.py", "latent_counts_gathered.py"])
def test_a_size_exchanged_first_is_clean(tmp_path, script):
    result = probe(f"tests/scripts/{script}", "--max-steps", "6", run_dir=tmp_path / "run")
    assert "DDP506" not in result.codes and result.problems_beyond_timing == []
