# Stands for ultralytics/yolov5 5081342 utils/dataloaders.py:140-149: the dataset receives
# `rank=` only to decide who prints and caches; it is not split by rank, and the sampler shards it.
# expect: clean
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Images(Dataset):
    def __init__(self, count, rank=-1):
        self.items = torch.randn(count, 4)
        if rank in (-1, 0):
            print(f"scanned {count} images")

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


dist.init_process_group("gloo")
rank = dist.get_rank()
images = Images(64, rank=rank)
shards = DistributedSampler(images, shuffle=True)
loader = DataLoader(images, batch_size=8, sampler=shards)
for epoch in range(2):
    shards.set_epoch(epoch)
    for batch in loader:
        pass
