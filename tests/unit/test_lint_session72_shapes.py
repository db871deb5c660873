"""Shapes from session 72's reading of holdout 101 (after its unread score), each with its twin, in
our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# -------------------------------------------------- the step's forward runs in a helper that calls the
# module the wrapper holds (`model.module.encode(x)`): the loss backs through no DDP hook, so the
# epoch's own loss deciding `break` on each rank leaves nobody waiting in a collective
AROUND_IN_HELPER = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(4, 4)
        self.head = torch.nn.Linear(4, 1)

    def encode(self, x):
        return self.body(x)


class Trainer:
    def __init__(self, opt):
        self.opt = opt

    def _forward(self, model, batch):
        x, y = batch
        hidden = model.module.encode(x)
        pred = model.module.head(hidden).squeeze(-1)
        return pred, y

    def train_epoch(self, model, loader):
        total = 0
        for batch in loader:
            self.opt.zero_grad()
            pred, y = self._forward(model, batch)
            loss = ((pred - y) ** 2).mean()
            total += loss
            loss.backward()
            self.opt.step()
        return total

    def fit(self, model, loader):
        for epoch in range(100):
            loader.sampler.set_epoch(epoch)
            stop = self.train_epoch(model, loader)
            if stop:
                break


def main():
    dist.init_process_group("gloo")
    model = DDP(Net())
    data = TensorDataset(torch.randn(64, 4), torch.randn(64))
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data))
    Trainer(torch.optim.SGD(model.parameters(), lr=0.1)).fit(model, loader)


if __name__ == "__main__":
    main()
"""
THROUGH_IN_HELPER = AROUND_IN_HELPER.replace(
    "hidden = model.module.encode(x)\n        pred = model.module.head(hidden).squeeze(-1)",
    "pred = model(x).squeeze(-1)")


def test_a_loss_a_helper_computes_round_the_wrapper_backs_through_no_collective(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": AROUND_IN_HELPER}), "DDP809") == []


def test_its_twin_the_helper_runs_the_wrappers_forward(tmp_path):
    assert THROUGH_IN_HELPER != AROUND_IN_HELPER
    found = _codes(lint_tree(tmp_path, {"train.py": THROUGH_IN_HELPER}), "DDP809")
    assert [f.location.line for f in found] == [_line(THROUGH_IN_HELPER, "if stop:")]
