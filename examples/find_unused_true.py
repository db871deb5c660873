"""Wasteful: find_unused_parameters=True although every parameter is used (ddpdoctor: DDP402).

A denoising autoencoder, configured through a dataclass. Somebody once hit the "Expected to have
finished reduction" error in another project, and since then `find_unused_parameters=True` is
pasted into every DDP call "to be safe". Here every parameter takes part in the loss, so the
flag buys nothing: DDP still walks the whole autograd graph after every forward looking for
unused parameters, and it never rebuilds its gradient buckets in the order the gradients
actually become ready, which costs overlap of communication with backward.

Without ddpdoctor: the job runs and converges. The only trace is one warning per rank from DDP, easily
lost in a long log:

    [rank0]:[W ... reducer.cpp:1529] Warning: find_unused_parameters=True was specified in
    DDP constructor, but did not find any unused parameters in the forward pass. This flag
    results in an extra traversal of the autograd graph every iteration, which can adversely
    affect performance. ...

Fix: drop the flag (the default is False).

    torchrun --nproc-per-node 2 examples/find_unused_true.py
"""

import argparse
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


@dataclass
class Config:
    n_samples: int = 448
    dim: int = 32
    latent: int = 8
    batch_size: int = 32
    epochs: int = 3
    lr: float = 1e-2
    noise: float = 0.1


class AutoEncoder(nn.Module):
    def __init__(self, dim, latent):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(dim, 64), nn.ReLU(), nn.Linear(64, latent))
        self.decoder = nn.Sequential(nn.Linear(latent, 64), nn.ReLU(), nn.Linear(64, dim))

    def forward(self, x):
        return self.decoder(self.encoder(x))


def build_dataset(cfg):
    g = torch.Generator().manual_seed(3)
    basis = torch.randn(cfg.latent, cfg.dim, generator=g)
    codes = torch.randn(cfg.n_samples, cfg.latent, generator=g)
    return TensorDataset(codes @ basis)


def train(cfg: Config):
    dist.init_process_group("gloo")
    rank = dist.get_rank()

    dataset = build_dataset(cfg)
    sampler = DistributedSampler(dataset, shuffle=True)
    loader = DataLoader(dataset, batch_size=cfg.batch_size, sampler=sampler)

    torch.manual_seed(0)
    model = DDP(AutoEncoder(cfg.dim, cfg.latent), find_unused_parameters=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)

    for epoch in range(cfg.epochs):
        sampler.set_epoch(epoch)
        losses = []
        for (clean,) in loader:
            noisy = clean + cfg.noise * torch.randn_like(clean)
            loss = F.mse_loss(model(noisy), clean)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        if rank == 0:
            print(f"epoch {epoch}: reconstruction loss {sum(losses) / len(losses):.4f}", flush=True)

    dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=Config.epochs)
    parser.add_argument("--batch-size", type=int, default=Config.batch_size)
    args = parser.parse_args()
    train(Config(epochs=args.epochs, batch_size=args.batch_size))
