"""Broken: every rank writes the same checkpoint file (ddpdoctor: DDP701).

A `Trainer` class with a `save_checkpoint` method called at the end of every epoch, with no
rank check. On one node that means N processes writing `checkpoint.pt` in the same directory
at the same moment; on a shared filesystem, N x nodes writers.

Without ddpdoctor: usually nothing visible. Every rank writes identical bytes, so most of the
time the last writer wins and the file is fine. Sometimes it is not: writes interleave or a
reader opens the file mid-write, and a later resume fails with
"PytorchStreamReader failed reading zip archive: failed finding central directory", or the
filesystem slows to a crawl under N concurrent writers of the same large file.

Fix: `if dist.get_rank() == 0: trainer.save_checkpoint(...)` followed by `dist.barrier()` (or
write per-rank files when the state really differs per rank).

    torchrun --nproc-per-node 2 examples/shared_checkpoint.py --out-dir /tmp/ckpt
"""

import argparse
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class PolynomialDataset(Dataset):
    """y = a polynomial of x with noise; x in [-2, 2]."""

    def __init__(self, n=480):
        g = torch.Generator().manual_seed(21)
        self.x = torch.rand(n, 1, generator=g) * 4 - 2
        self.y = 0.5 * self.x ** 3 - self.x + 0.1 * torch.randn(n, 1, generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


class Trainer:
    def __init__(self, model, loader, optimizer, out_dir):
        self.model = DDP(model)
        self.loader = loader
        self.optimizer = optimizer
        self.out_dir = out_dir
        self.rank = dist.get_rank()

    def train_epoch(self, epoch):
        self.loader.sampler.set_epoch(epoch)
        total = 0.0
        for x, y in self.loader:
            self.optimizer.zero_grad()
            loss = F.mse_loss(self.model(x), y)
            loss.backward()
            self.optimizer.step()
            total += loss.item()
        return total / len(self.loader)

    def save_checkpoint(self, epoch):
        path = os.path.join(self.out_dir, "checkpoint.pt")
        torch.save({"epoch": epoch,
                    "model": self.model.module.state_dict(),
                    "optimizer": self.optimizer.state_dict()}, path)
        return path

    def fit(self, epochs):
        for epoch in range(epochs):
            loss = self.train_epoch(epoch)
            path = self.save_checkpoint(epoch)
            if self.rank == 0:
                print(f"epoch {epoch}: mse {loss:.4f}, saved {path}", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=5e-3)
    parser.add_argument("--out-dir", default=os.path.join(tempfile.gettempdir(), "ddpdoctor-example-ckpt"))
    args = parser.parse_args()

    dist.init_process_group("gloo")
    os.makedirs(args.out_dir, exist_ok=True)

    dataset = PolynomialDataset()
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=DistributedSampler(dataset))
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    Trainer(model, loader, optimizer, args.out_dir).fit(args.epochs)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
