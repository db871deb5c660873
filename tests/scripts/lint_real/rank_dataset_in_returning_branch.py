# Stands for mlfoundations/open_clip 89fb801 src/open_clip_train/data.py:960-1037 (and
# pytorch/torchtune bd2a0fc torchtune/data/_utils.py:240-247): the dataset is wrapped per rank
# only in the streaming branch, which returns its own loader; the DistributedSampler below wraps
# the plain map-style dataset.
# expect: clean
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, IterableDataset, TensorDataset


class RankStream(IterableDataset):
    def __init__(self, base, rank, world):
        self.base, self.rank, self.world = base, rank, world

    def __iter__(self):
        return (self.base[i] for i in range(self.rank, len(self.base), self.world))


def build(streaming):
    dataset = TensorDataset(torch.randn(64, 4))
    if streaming:
        dataset = RankStream(dataset, rank=dist.get_rank(), world=dist.get_world_size())
        return DataLoader(dataset, batch_size=None), None
    sampler = DistributedSampler(dataset, shuffle=True)
    return DataLoader(dataset, batch_size=8, sampler=sampler), sampler


dist.init_process_group("gloo")
loader, sampler = build(streaming=False)
for epoch in range(2):
    if sampler is not None:
        sampler.set_epoch(epoch)
    for batch in loader:
        pass
