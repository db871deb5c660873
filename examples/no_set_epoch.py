"""Broken: DistributedSampler without sampler.set_epoch(epoch) (ddpdoctor: DDP302).

The sampler is there and each rank reads its own shard, but `set_epoch` is never called.
DistributedSampler seeds its shuffle with `seed + epoch`, and its epoch stays 0, so every epoch
replays exactly the same batches in exactly the same order. The DataLoader uses two worker
processes, like most image pipelines.

Without ddpdoctor: nothing fails. Training is just a little worse than it should be: each rank
sees the same fixed half of the data in the same order forever, which hurts generalisation and
makes runs suspiciously repeatable. The PyTorch docs warn about it in one sentence.

Fix: call `train_loader.sampler.set_epoch(epoch)` at the start of every epoch.

    torchrun --nproc-per-node 2 examples/no_set_epoch.py --epochs 3
"""

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class TinyImages(Dataset):
    """Synthetic 1x16x16 "images" of 3 classes: a bright horizontal bar, a vertical bar, or a blob."""

    def __init__(self, n=480, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.labels = torch.randint(0, 3, (n,), generator=g)
        self.images = 0.3 * torch.randn(n, 1, 16, 16, generator=g)
        pos = torch.randint(3, 13, (n,), generator=g)
        for i in range(n):
            p, c = pos[i].item(), self.labels[i].item()
            if c == 0:
                self.images[i, 0, p - 1:p + 1, :] += 1.0
            elif c == 1:
                self.images[i, 0, :, p - 1:p + 1] += 1.0
            else:
                self.images[i, 0, p - 3:p + 3, p - 3:p + 3] += 1.0

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        return self.images[idx], self.labels[idx]


class SmallCNN(nn.Module):
    def __init__(self, num_classes=3):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 4 * 4, num_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


def train_one_epoch(model, loader, optimizer, epoch, rank):
    model.train()
    total, n = 0.0, 0
    for x, y in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss.item()
        n += 1
    if rank == 0:
        print(f"[epoch {epoch}] train loss {total / n:.4f} over {n} batches", flush=True)


def main():
    parser = argparse.ArgumentParser(description="tiny CNN, DDP")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--lr", type=float, default=0.02)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank = dist.get_rank()

    dataset = TinyImages()
    sampler = DistributedSampler(dataset, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler,
                        num_workers=args.workers, drop_last=True)

    model = DDP(SmallCNN())
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    for epoch in range(args.epochs):
        train_one_epoch(model, loader, optimizer, epoch, rank)

    dist.destroy_process_group()


if __name__ == "__main__":
    main()
