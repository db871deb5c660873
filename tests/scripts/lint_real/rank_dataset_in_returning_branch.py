# Stands for pytorch/torchtune bd2a0fc torchtune/data/_utils.py:240-247 (and open_clip 89fb801
# data.py:1037): the dataset is split by rank only in the streaming branch, which returns its own
# loader; the DistributedSampler wraps the plain map-style dataset of the other branch.
# expect: clean
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, IterableDataset, TensorDataset


class Stream(IterableDataset):
    def __init__(self, rank, world):
        self.rank, self.world = rank, world

    def __iter__(self):
        return iter(range(self.rank, 64, self.world))


def build(streaming):
    rank, world = dist.get_rank(), dist.get_world_size()
    if streaming:
        data = Stream(rank, world)
        return DataLoader(data, batch_size=8), None
    data = TensorDataset(torch.randn(64, 4))
    shards = DistributedSampler(data, num_replicas=world, rank=rank, shuffle=True)
    return DataLoader(data, batch_size=8, sampler=shards), shards


dist.init_process_group("gloo")
loader, shards = build(streaming=False)
for epoch in range(2):
    if shards is not None:
        shards.set_epoch(epoch)
    for batch in loader:
        pass
