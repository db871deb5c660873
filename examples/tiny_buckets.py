"""Slow: bucket_cap_mb far too small, dozens of tiny all-reduces per step (ddpdoctor: DDP603).

A deep residual MLP (48 blocks) on synthetic regression data. Somebody read that "smaller buckets
start communicating earlier" and passed `bucket_cap_mb=0.01` to DDP. The cap is in MiB, so that is
10 KiB: every weight matrix of the model gets a bucket of its own, and each backward pass runs
about 50 separate all-reduces of ~40 KB. Each all-reduce pays a fixed cost (a launch, a round trip
between the ranks) whatever its size, so the step is mostly that fixed cost, paid 50 times.

Without ddpdoctor: the job runs and converges, with a step several times longer than it needs;
nothing in the log mentions buckets.

Fix: leave bucket_cap_mb at its default (25), or size it for a few buckets per backward:

    model = DDP(model)                      # not bucket_cap_mb=0.01

    torchrun --nproc-per-node 2 examples/tiny_buckets.py
"""

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        return x + torch.tanh(self.fc(x))


class ResMLP(nn.Module):
    def __init__(self, n_in=16, width=96, depth=48):
        super().__init__()
        self.stem = nn.Linear(n_in, width)
        self.blocks = nn.Sequential(*[Block(width) for _ in range(depth)])
        self.out = nn.Linear(width, 1)

    def forward(self, x):
        return self.out(self.blocks(self.stem(x))).squeeze(-1)


def make_data(n, n_in=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, n_in, generator=g)
    w = torch.randn(n_in, generator=torch.Generator().manual_seed(99))
    return x, torch.sin(x @ w) + 0.1 * torch.randn(n, generator=g)


def main():
    parser = argparse.ArgumentParser(description="tiny DDP buckets example")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--bucket-cap-mb", type=float, default=0.01)
    args = parser.parse_args()

    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    rank = dist.get_rank()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")

    x, y = make_data(384)
    dataset = TensorDataset(x, y)
    sampler = DistributedSampler(dataset, shuffle=True)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler, drop_last=True)

    torch.manual_seed(0)
    model = DDP(ResMLP().to(device), bucket_cap_mb=args.bucket_cap_mb)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            optimizer.zero_grad(set_to_none=True)
            loss = F.mse_loss(model(xb), yb)
            loss.backward()
            optimizer.step()
        if rank == 0:
            print(f"epoch {epoch} | mse {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
