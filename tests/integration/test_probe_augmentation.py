"""DDP305 on real jobs: ranks seeded alike draw the same augmentation for different samples
(tests/scripts/same_augmentation.py), its seeded-per-rank twin is clean."""

from __future__ import annotations

import pytest

from tests.helpers.probe_runner import probe

pytestmark = pytest.mark.multiprocess
SCRIPT = "tests/scripts/same_augmentation.py"


def test_workers_seeded_without_the_rank_are_found_with_their_worker_init_fn(tmp_path):
    result = probe(SCRIPT, run_dir=tmp_path / "run", args=["global", "2"])
    finding = result.one("DDP305")
    assert finding["ranks"] == [0, 1] and finding["evidence"]["workers"] == [0, 1]
    assert {"numpy", "random"} <= set(finding["evidence"]["generators"])
    assert "seed_worker" in finding["message"] and finding["location"]["file"].endswith("same_augmentation.py")
    assert [f["code"] for f in result.problems_beyond_timing] == ["DDP305"]


def test_workers_seeded_per_rank_are_clean(tmp_path):
    result = probe(SCRIPT, run_dir=tmp_path / "run", args=["per_rank", "2"])
    assert result.code == 0 and result.problems_beyond_timing == []


def test_main_process_loading_seeded_alike_on_every_rank_is_found(tmp_path):
    result = probe(SCRIPT, run_dir=tmp_path / "run", args=["global", "0"])
    assert result.one("DDP305")["evidence"]["workers"] == [-1]
