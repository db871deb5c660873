"""Slow: input bound, every rank waits on its DataLoader (ddpdoctor: DDP605).

A small image classifier whose dataset reads each sample from (simulated) network storage: 20 ms
of latency per `__getitem__`, as an object-store GET or a cold NFS read costs. The DataLoader runs
with the default `num_workers=0`, so those reads happen one after another in the training process
itself: a batch of 8 takes 160 ms to arrive, while the model needs a few milliseconds to train on
it. Both ranks spend most of every step waiting for data; faster GPUs or more ranks would change
nothing.

Without ddpdoctor: the job runs and converges, slowly; GPU utilization (on a GPU) sits near zero.

Fix: read in parallel with training, and keep the workers between epochs:

    DataLoader(dataset, batch_size=8, sampler=sampler, num_workers=8,
               persistent_workers=True, prefetch_factor=4)

    torchrun --nproc-per-node 2 examples/input_bound.py
"""

import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class RemoteImages(Dataset):
    """Synthetic 3x16x16 images 'fetched' one by one from slow storage."""

    def __init__(self, n, latency_s=0.02, n_classes=5, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.labels = torch.randint(0, n_classes, (n,), generator=g)
        self.templates = torch.randn(n_classes, 3, 16, 16, generator=torch.Generator().manual_seed(5))
        self.latency_s = latency_s

    def __len__(self):
        return len(self.labels)

    def _fetch(self, idx):
        time.sleep(self.latency_s)  # the storage round trip
        g = torch.Generator().manual_seed(int(idx))
        return self.templates[self.labels[idx]] + 2.0 * torch.randn(3, 16, 16, generator=g)

    def __getitem__(self, idx):
        return self._fetch(idx), self.labels[idx]


class SmallCNN(nn.Module):
    def __init__(self, n_classes=5):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, padding=1)
        self.head = nn.Linear(16 * 8 * 8, n_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv(x)), 2)
        return self.head(x.flatten(1))


def main():
    parser = argparse.ArgumentParser(description="input-bound DDP example")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--num-workers", type=int, default=0)
    args = parser.parse_args()

    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    rank = dist.get_rank()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")

    dataset = RemoteImages(96)
    sampler = DistributedSampler(dataset, shuffle=True)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler, drop_last=True,
                        num_workers=args.num_workers)

    torch.manual_seed(0)
    model = DDP(SmallCNN().to(device))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            optimizer.step()
        if rank == 0:
            print(f"epoch {epoch} | loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
