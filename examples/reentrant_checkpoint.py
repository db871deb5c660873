"""Broken: reentrant activation checkpointing under DDP with find_unused_parameters=True (ddpdoctor: DDP406).

A small transformer encoder saves memory with activation checkpointing, written the way many
older tutorials do: `torch.utils.checkpoint.checkpoint(layer, x)` with the reentrant variant
(torch's default for years; here spelled out). The DDP wrapper was given
find_unused_parameters=True "to be safe". Each checkpointed layer runs a backward pass of its
own inside the outer one, and DDP's unused-parameter bookkeeping sees the layer's parameters
become ready twice.

Without ddpdoctor: the first backward raises on every rank

    RuntimeError: Expected to mark a variable ready only once. This error is caused by one of
    the following reasons: 1) Use of a module parameter outside the `forward` function. ...
    Parameter at index 34 with name layers.2.ff.2.bias has been marked as ready twice.

a wall of text that names one parameter and two possible causes, neither of them "your
checkpoint call".

Fix: `checkpoint(layer, x, use_reentrant=False)` (run it: `--use-reentrant 0`), or
`DDP(model, static_graph=True)`, and drop find_unused_parameters=True.

    torchrun --nproc-per-node 2 examples/reentrant_checkpoint.py
"""

import argparse
import math

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.checkpoint import checkpoint
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class EncoderLayer(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm1 = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
        self.norm2 = nn.LayerNorm(dim)

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.ff(self.norm2(x))


class TinyEncoder(nn.Module):
    def __init__(self, vocab=64, dim=32, heads=4, depth=3, classes=4, use_reentrant=True):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(EncoderLayer(dim, heads) for _ in range(depth))
        self.head = nn.Linear(dim, classes)
        self.use_reentrant = use_reentrant

    def forward(self, tokens):
        x = self.embed(tokens) * math.sqrt(self.embed.embedding_dim)
        for layer in self.layers:
            if self.training:
                x = checkpoint(layer, x, use_reentrant=self.use_reentrant)  # saves activations
            else:
                x = layer(x)
        return self.head(x.mean(dim=1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--use-reentrant", type=int, default=1)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, 64, (256, 12), generator=g)
    labels = tokens[:, 0] % 4
    dataset = TensorDataset(tokens, labels)
    sampler = DistributedSampler(dataset, shuffle=True)
    loader = DataLoader(dataset, batch_size=16, sampler=sampler)

    torch.manual_seed(0)
    model = DDP(TinyEncoder(use_reentrant=bool(args.use_reentrant)), find_unused_parameters=True)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        for x, y in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
        if dist.get_rank() == 0:
            print(f"epoch {epoch} loss {loss.item():.3f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
