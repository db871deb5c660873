"""Broken: the data is split by rank twice, so each rank trains on 1/world² of it (ddpdoctor: DDP304).

A helper from an older, sampler-free version of the script still cuts the dataset into one
slice per rank (`Subset(dataset, range(rank, len(dataset), world))`); later a
DistributedSampler was added on top "as the docs say". The sampler splits each rank's slice
again: on 2 ranks each rank reads a quarter of the data per epoch, and half of the dataset is
never used at all.

Without ddpdoctor: nothing fails. Epochs are 2x shorter than expected; the loss looks fine.

Fix: shard once - `DistributedSampler(full_dataset)` and no per-rank Subset.

    torchrun --nproc-per-node 2 examples/double_sharding.py
"""

import argparse

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Subset, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def shard_for_this_rank(dataset):
    """Every rank keeps its own slice of the data."""
    rank, world = dist.get_rank(), dist.get_world_size()
    return Subset(dataset, list(range(rank, len(dataset), world)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    g = torch.Generator().manual_seed(0)
    x = torch.randn(640, 12, generator=g)
    y = (x[:, :3].sum(dim=1) > 0).long()
    train_set = shard_for_this_rank(TensorDataset(x, y))
    sampler = DistributedSampler(train_set, shuffle=True)
    loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler)

    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 2)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for xb, yb in loader:
            optimizer.zero_grad()
            F.cross_entropy(model(xb), yb).backward()
            optimizer.step()
        if dist.get_rank() == 0:
            print(f"epoch {epoch}: {len(loader)} batches per rank", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
