# Stands for facebookresearch/detr 29901c5 main.py:125-155: the DistributedSampler is wrapped in a
# BatchSampler and the DataLoader receives `batch_sampler=`.
# expect: clean
import torch
import torch.distributed as dist
from torch.utils.data import BatchSampler, DataLoader, DistributedSampler, TensorDataset

dist.init_process_group("gloo")
train_set = TensorDataset(torch.randn(64, 4))
per_rank = DistributedSampler(train_set)
batches = BatchSampler(per_rank, 8, drop_last=True)
train_loader = DataLoader(train_set, batch_sampler=batches)
for epoch in range(3):
    per_rank.set_epoch(epoch)
    for (x,) in train_loader:
        pass
