# Stands for ultralytics/yolov5 5081342 train.py:297 + utils/dataloaders.py + utils/torch_utils.py:
# the validation loader is built on rank 0 only, and the helper it calls holds barriers guarded by
# its `local_rank` parameter - which that call sets to -1, so no barrier runs there.
# expect: clean
import os
from contextlib import contextmanager

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

RANK = int(os.environ.get("RANK", -1))


@contextmanager
def leader_first(local_rank):
    if local_rank not in (-1, 0):
        dist.barrier()
    yield
    if local_rank == 0:
        dist.barrier()


def make_loader(size, rank):
    with leader_first(rank):
        data = TensorDataset(torch.randn(size, 4))
    sampler = None if rank == -1 else DistributedSampler(data, shuffle=False)
    return DataLoader(data, batch_size=8, sampler=sampler)


dist.init_process_group("gloo")
train_loader = make_loader(64, rank=RANK)
if RANK in (-1, 0):
    val_loader = make_loader(16, rank=-1)
