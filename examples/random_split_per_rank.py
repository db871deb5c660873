"""Broken: each rank builds its own random shard, and the shards overlap (ddpdoctor: DDP301).

The author shards the dataset by hand: `random_split` into WORLD_SIZE equal parts, and each rank
keeps part number RANK. That is only a partition if every rank draws the *same* permutation. But
the script seeds torch with `seed + rank` first ("so that dropout differs across ranks"), and
`random_split` without a `generator=` uses that global RNG. Each rank therefore cuts a different
permutation, and the part it keeps is an independent random half of the data: on average half
of rank 1's samples are also in rank 0's shard, and a quarter of the dataset is never seen.

Without ddpdoctor: nothing fails and the loss goes down. The model simply sees a quarter of the
data twice per epoch and never sees another quarter; validation is a bit worse than it should be
and nobody knows why.

Fix: `random_split(ds, lengths, generator=torch.Generator().manual_seed(seed))` (the same seed on
every rank), or better, DistributedSampler.

    torchrun --nproc-per-node 2 examples/random_split_per_rank.py
"""

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, random_split


class SpiralDataset(Dataset):
    """Two interleaved spirals in 2-D, lifted to 8 features."""

    def __init__(self, n_samples=256):
        g = torch.Generator().manual_seed(42)
        t = torch.rand(n_samples, generator=g) * 3 * torch.pi
        label = torch.arange(n_samples) % 2
        sign = 1 - 2 * label.float()
        xy = torch.stack([t.cos() * t * sign, t.sin() * t * sign], dim=1) / 10
        xy = xy + 0.02 * torch.randn(n_samples, 2, generator=g)
        self.features = torch.cat([xy, xy ** 2, xy.sin(), xy.cos()], dim=1)
        self.labels = label

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.features[i], self.labels[i]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Dropout(0.1),
                                  nn.Linear(64, 64), nn.ReLU(), nn.Dropout(0.1))
        self.out = nn.Linear(64, 2)

    def forward(self, x):
        return self.out(self.body(x))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()

    dist.init_process_group(backend="gloo")
    rank, world_size = dist.get_rank(), dist.get_world_size()

    # different dropout masks on every rank
    torch.manual_seed(args.seed + rank)

    dataset = SpiralDataset(256)
    shard_len = len(dataset) // world_size
    lengths = [shard_len] * world_size
    lengths[-1] += len(dataset) - sum(lengths)
    my_shard = random_split(dataset, lengths)[rank]
    loader = DataLoader(my_shard, batch_size=args.batch_size, shuffle=True)

    model = DDP(Net())
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)

    for epoch in range(args.epochs):
        model.train()
        epoch_loss = 0.0
        for x, y in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            epoch_loss += loss.item()
        if rank == 0:
            print(f"epoch {epoch} | shard of {len(my_shard)} samples | loss {epoch_loss / len(loader):.4f}",
                  flush=True)

    dist.destroy_process_group()


if __name__ == "__main__":
    main()
