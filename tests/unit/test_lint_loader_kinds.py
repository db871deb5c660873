"""A DataLoader is what it is, not what the file calls it (`DataLoader as DL`, torch_geometric's
loader); a loader handed down two levels of parameters (`train_model(loader)` -> `train_one_epoch
(loader)`) before the loop that trains on it is a training loader; and a DistributedSampler rebuilt
in the epoch loop with a seed that moves with the epoch shuffles anew without set_epoch."""

from __future__ import annotations

from tests.unit.test_lint_real_patterns import lint

ALIASED = """
from {module} import DataLoader as DL

model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DL([torch.randn(4) for _ in range(64)], batch_size=8, {sampler})
for epoch in range(3):
    {set_epoch}
    for x in loader:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
"""


def test_an_aliased_torch_loader_without_a_sampler_is_found(tmp_path):
    found, _ = lint(tmp_path, ALIASED.format(module="torch.utils.data", sampler="shuffle=True", set_epoch="pass"))
    assert [(f.code, f.severity.value) for f in found if f.code == "DDP802"] == [("DDP802", "error")]


def test_torch_geometrics_loader_is_a_dataloader(tmp_path):
    found, _ = lint(tmp_path, ALIASED.format(module="torch_geometric.loader", sampler="shuffle=True",
                                             set_epoch="pass"))
    assert [f.code for f in found if f.code == "DDP802"] == ["DDP802"]


def test_with_its_distributed_sampler_it_is_clean(tmp_path):
    source = ALIASED.format(module="torch_geometric.loader", set_epoch="loader.sampler.set_epoch(epoch)",
                            sampler="sampler=DistributedSampler([torch.randn(4) for _ in range(64)])")
    found, _ = lint(tmp_path, source)
    assert [f.code for f in found if f.code in ("DDP802", "DDP804")] == []


HANDED_DOWN = """
def build_loader(data, shuffle):
    return DataLoader(data, batch_size=8, shuffle=shuffle{sampler})

class Potential:
    def __init__(self):
        self.model = DDP(torch.nn.Linear(4, 1))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def train_model(self, dataloader, epochs):
        for epoch in range(epochs):
            self.train_one_epoch(dataloader)

    def train_one_epoch(self, dataloader):
        for x in dataloader:
            self.opt.zero_grad()
            self.model(x).sum().backward()
            self.opt.step()

def main():
    data = [torch.randn(4) for _ in range(64)]
    dataloader = build_loader(data, True)
    Potential().train_model(dataloader, 3)

main()
"""


def test_a_loader_handed_down_two_parameters_to_its_training_loop_trains(tmp_path):
    found, _ = lint(tmp_path, HANDED_DOWN.format(sampler=""))
    assert [(f.code, f.severity.value) for f in found if f.code == "DDP802"] == [("DDP802", "error")]


def test_the_same_with_a_sampler_is_clean(tmp_path):
    found, _ = lint(tmp_path, HANDED_DOWN.format(sampler=", sampler=DistributedSampler(data)"))
    assert [f.code for f in found if f.code == "DDP802"] == []


RESEEDED = """
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = TensorDataset(torch.randn(64, 4))
for epoch in range(3):
    sampler = DistributedSampler(data, seed={seed})
    for (x,) in DataLoader(data, batch_size=8, sampler=sampler):
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
"""


def test_a_sampler_rebuilt_each_epoch_with_the_epoch_in_its_seed_needs_no_set_epoch(tmp_path):
    found, _ = lint(tmp_path, RESEEDED.format(seed="42 + epoch"))
    assert [f.code for f in found if f.code == "DDP804"] == []


def test_rebuilt_with_a_constant_seed_it_replays_the_same_order(tmp_path):
    found, _ = lint(tmp_path, RESEEDED.format(seed="42"))
    assert [f.code for f in found if f.code == "DDP804"] == ["DDP804"]
