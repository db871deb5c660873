"""DDP801 on a backward through the DDP model run on one rank: DDP's hooks all-reduce every
gradient bucket in it, so a rank-0-only learning-rate finder (forward, backward, step through the
wrapper) waits for ranks that never come. Healthy twins: the plain module on rank 0 (`model.module`),
the backward under `no_sync()`, and a branch whose other side trains through the DDP model too (the
backwards pair up, whatever the loss is called)."""

from __future__ import annotations

from tests.unit.test_lint_real_patterns import lint

FINDER = """
def record_lr(net, optimizer, steps=10):
    net = net.train()
    for _ in range(steps):
        loss = net(torch.randn(2, 4)).sum()
        optimizer.zero_grad()
        {backward}
        optimizer.step()

rank = dist.get_rank()
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
if rank == 0:
    record_lr({passed}, opt)
{other}
"""


def _801(tmp_path, backward="loss.backward()", passed="model", other=""):
    found, _ = lint(tmp_path, FINDER.format(backward=backward, passed=passed, other=other))
    return [(f.code, f.severity.value, f.location.line) for f in found if f.code == "DDP801"]


def test_a_rank_zero_learning_rate_finder_through_the_ddp_model_is_a_collective_on_one_rank(tmp_path):
    assert _801(tmp_path) == [("DDP801", "error", 12)]


def test_a_scaled_loss_counts_the_same(tmp_path):
    found = _801(tmp_path, backward="scaler.scale(loss).backward()")
    assert found == [("DDP801", "error", 12)]


def test_the_plain_module_on_rank_zero_all_reduces_nothing(tmp_path):
    assert _801(tmp_path, passed="model.module") == []


def test_a_backward_under_no_sync_all_reduces_nothing(tmp_path):
    backward = "with net.no_sync():\n            loss.backward()"
    assert _801(tmp_path, backward=backward) == []


def test_the_other_side_training_through_the_ddp_model_pairs_the_backwards(tmp_path):
    other = "else:\n    out = model(torch.randn(2, 4))\n    out.mean().backward()"
    assert _801(tmp_path, other=other) == []
