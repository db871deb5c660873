"""Broken: every rank trains on the whole dataset, in the same order (ddpdoctor: DDP301).

A regression script that was "made distributed" by adding init_process_group and DDP, but whose
DataLoader still uses `shuffle=True` instead of a DistributedSampler. Every process seeds its
RNG with the same value, so every rank draws the same permutation: at every step all ranks
compute gradients on identical batches, and the all-reduce averages N copies of one gradient.

Without ddpdoctor: nothing fails. The job runs, the loss goes down, and an epoch takes exactly
as many steps on 2 (or 64) processes as on one: the extra ranks are pure waste, and each epoch
is really one epoch seen N times over.

Fix: `DataLoader(ds, batch_size=..., sampler=DistributedSampler(ds))` and
`sampler.set_epoch(epoch)` at the top of each epoch.

    torchrun --nproc-per-node 2 examples/no_sampler.py
"""

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset


def make_regression_data(n=384, n_features=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, n_features, generator=g)
    w = torch.randn(n_features, 1, generator=g)
    y = x @ w + 0.1 * torch.randn(n, 1, generator=g)
    return TensorDataset(x, y)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-2)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank = int(os.environ["RANK"])

    torch.manual_seed(0)  # "for reproducibility" -- on every rank alike

    dataset = make_regression_data()
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True)

    model = nn.Sequential(nn.Linear(16, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 1))
    model = DDP(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.MSELoss()

    for epoch in range(args.epochs):
        running = 0.0
        for step, (x, y) in enumerate(loader):
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            running += loss.item()
        if rank == 0:
            print(f"epoch {epoch}: {len(loader)} steps, mean loss {running / len(loader):.4f}", flush=True)

    dist.destroy_process_group()


if __name__ == "__main__":
    main()
