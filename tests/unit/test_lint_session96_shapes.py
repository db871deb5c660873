"""Shapes from session 96 (holdout 135's leftovers and holdout 136's reading), each with its twin,
in our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# ------------------------------------------------- a hyperparameter grid over the YAML config
# `for cnf in grid(config): Handler(cnf).run()`, where the project's grid(kwargs) returns a list
# comprehension of dicts built from the config's items: a scalar the YAML sets (`task: regress`) is
# the same in every point. The constructor's `if cfg['task'] == 'probe':` side, which wraps a model
# with BatchNorm in DDP, is taken by no config: the field holds the DDP model without buffers (no
# DDP801 on rank 0's forward), and the probe epoch method, which only that side calls, never runs
# (no DDP809 there). Twin: the config picks the probe task.
GRID = {
    "train.py": """
        import itertools
        import yaml
        import torch.distributed as dist
        from handler import Handler


        def grid(kwargs):
            lists = {k: v for k, v in kwargs.items() if isinstance(v, list)}
            return [dict({k: v for k, v in kwargs.items() if not isinstance(v, list)}, **dict(zip(lists, point)))
                    for point in itertools.product(*lists.values())]


        if __name__ == "__main__":
            dist.init_process_group("gloo")
            with open("config.yaml") as f:
                config = yaml.safe_load(f)
            for cnf in grid(config):
                Handler(cnf).run()
    """,
    "handler.py": """
        import torch
        import torch.distributed as dist
        from torch import nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


        class Handler:
            def __init__(self, cfg):
                self.rank = dist.get_rank()
                if cfg['task'] == 'probe':
                    self.model = DDP(nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8)))
                else:
                    self.model = DDP(nn.Linear(8, 8))
                self.cfg = cfg

            def _epoch_probe(self, loader):
                for x, y in loader:
                    loss = self.model(x).sum()
                    if torch.sum(y > 0).item() <= 0:
                        continue
                    loss.backward()

            def _epoch_regress(self, loader):
                for x, y in loader:
                    self.model(x).sum().backward()

            def run(self):
                data = TensorDataset(torch.zeros(16, 8), torch.zeros(16))
                sampler = DistributedSampler(data)
                loader = DataLoader(data, sampler=sampler)
                for epoch in range(2):
                    sampler.set_epoch(epoch)
                    if self.cfg['task'] == 'probe':
                        self._epoch_probe(loader)
                    else:
                        self._epoch_regress(loader)
                if self.rank == 0:
                    with torch.no_grad():
                        self.model(torch.zeros(2, 8))
    """,
    "config.yaml": """
        task: regress
        lr: [0.1, 0.01]
    """,
}


def test_grid_point_of_the_config_settles_the_task(tmp_path):
    found = lint_tree(tmp_path, GRID)
    assert not _codes(found, "DDP801") and not _codes(found, "DDP809")


def test_grid_point_of_the_config_taking_the_ddp_side(tmp_path):
    found = lint_tree(tmp_path, {**GRID, "config.yaml": "task: probe\nlr: [0.1, 0.01]\n"})
    assert [f.location.line for f in _codes(found, "DDP809")] == [_line(GRID["handler.py"], "if torch.sum(y > 0)")]
    assert len(_codes(found, "DDP801")) == 1


def test_grid_helper_that_builds_its_points_otherwise(tmp_path):
    # (a grid helper whose points are not made of the config's items: nothing known of them)
    body = GRID["train.py"].replace(
        "return [dict({k: v for k, v in kwargs.items() if not isinstance(v, list)}, **dict(zip(lists, point)))",
        "return [dict(task='probe', **dict(zip(lists, point)))")
    found = lint_tree(tmp_path, {**GRID, "train.py": body})
    assert _codes(found, "DDP809")


# ------------------------------------------------- a DeepSpeed engine kept in a field
# `self.model, self.optimizer, _, _ = deepspeed.initialize(...)` in the constructor, then a
# `continue` on the rank's own batch before `self.model.backward(loss)`: the engine reduces the
# gradients in its backward, so the rank that skips leaves the others waiting (DDP809). Twin: the
# field holds the plain module (no engine, no DDP: nothing collective to skip).
ENGINE = {
    "train.py": """
        import deepspeed
        import torch
        from torch import nn
        from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


        class Runner:
            def __init__(self):
                net = nn.Linear(8, 1)
                self.model, self.optimizer, _, _ = deepspeed.initialize(
                    model=net, model_parameters=net.parameters(), config="ds.json")

            def epoch(self, loader):
                for x, y in loader:
                    loss = self.model(x).sum()
                    if torch.sum(y > 0).item() <= 0:
                        continue
                    self.model.backward(loss)
                    self.model.step()


        if __name__ == "__main__":
            deepspeed.init_distributed()
            data = TensorDataset(torch.zeros(16, 8), torch.zeros(16))
            sampler = DistributedSampler(data)
            runner = Runner()
            for epoch in range(2):
                sampler.set_epoch(epoch)
                runner.epoch(DataLoader(data, sampler=sampler))
    """,
}


def test_deepspeed_engine_field_backward_skipped_on_a_batch(tmp_path):
    found = _codes(lint_tree(tmp_path, ENGINE), "DDP809")
    assert [f.location.line for f in found] == [_line(ENGINE["train.py"], "if torch.sum(y > 0)")]


def test_plain_field_backward_skipped_on_a_batch(tmp_path):
    body = ENGINE["train.py"].replace("""self.model, self.optimizer, _, _ = deepspeed.initialize(
                    model=net, model_parameters=net.parameters(), config="ds.json")""",
                                      "self.model, self.optimizer = net, torch.optim.SGD(net.parameters(), 0.1)")
    assert "deepspeed.initialize" not in body
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP809")
