"""A rank test that can only hold in a run of one process (`if not distributed and device_id > 0:
return`, or the same nested) splits no distributed ranks: what follows runs on every rank of a
distributed run. Its twin under `if distributed:` does split them."""

from __future__ import annotations

from tests.unit.test_lint_real_patterns import codes, lint

PREDICT = """
def predict(device_id, distributed):
{test}
    out = [torch.zeros(1) for _ in range(2)]
    dist.all_gather(out, torch.ones(1))
    return out
predict(dist.get_rank(), dist.is_initialized())
"""


def test_a_return_under_not_distributed_and_a_rank_test_leaves_every_distributed_rank_in(tmp_path):
    found, _ = lint(tmp_path, PREDICT.format(test="    if not distributed and device_id > 0:\n        return None"))
    assert codes(found) == []


def test_the_same_return_nested_under_not_distributed_too(tmp_path):
    found, _ = lint(tmp_path, PREDICT.format(
        test="    if not distributed:\n        if device_id > 0:\n            return None"))
    assert codes(found) == []


def test_a_world_size_of_one_is_one_process_too(tmp_path):
    found, _ = lint(tmp_path, PREDICT.format(
        test="    if dist.get_world_size() == 1 and device_id > 0:\n        return None"))
    assert codes(found) == []


def test_under_distributed_the_rank_return_does_split_the_ranks(tmp_path):
    found, _ = lint(tmp_path, PREDICT.format(
        test="    if distributed:\n        if device_id > 0:\n            return None"))
    assert [c for c, _, _ in codes(found)] == ["DDP801"]
