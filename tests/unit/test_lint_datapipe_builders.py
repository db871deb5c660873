"""DDP802 and datasets a builder returns: `init_dataset(...)` -> `Dataset(...)` -> a chain of
datapipes from an IterDataPipe subclass (each rank reads its own partition; a sampler never
applies) is not a loader without a sampler; the same builder returning a map-style dataset is."""

from __future__ import annotations

from tests.unit.test_lint_real_patterns import lint

BUILDERS = """
from torch.utils.data.datapipes.iter import IterDataPipe

class ListSource(IterDataPipe):
    def __init__(self, path, partition=True):
        self.path, self.partition = path, partition
    def __iter__(self):
        yield from range(10)

class Indexed(torch.utils.data.Dataset):
    def __len__(self):
        return 10
    def __getitem__(self, i):
        return torch.randn(4)

def Dataset(path, partition=True):
    dataset = {source}
    dataset = dataset.map(lambda x: x) if hasattr(dataset, "map") else dataset
    return dataset

def init_dataset(path, partition=True):
    return Dataset(path, partition)

train_set = init_dataset("train.list")
loader = DataLoader(train_set, batch_size=None)
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    for x in loader:
        model(x).sum().backward()
        opt.step()
"""


def _802(tmp_path, source):
    found, _ = lint(tmp_path, BUILDERS.format(source=source))
    return [f.code for f in found if f.code == "DDP802"]


def test_a_datapipe_chain_two_builders_down_is_an_iterable_dataset(tmp_path):
    assert _802(tmp_path, "ListSource(path, partition=partition)") == []


def test_the_same_builders_returning_a_map_style_dataset_still_need_a_sampler(tmp_path):
    assert _802(tmp_path, "Indexed()") == ["DDP802"]
