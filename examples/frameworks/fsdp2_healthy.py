"""FSDP2 (torch.distributed.fsdp.fully_shard), done right: the baseline ddpdoctor must pass clean.

Launch:
    torchrun --nproc-per-node 2 examples/frameworks/fsdp2_healthy.py

A small transformer-style MLP stack, each block sharded with fully_shard and then the root, on
CPU with gloo; synthetic regression data sharded by a DistributedSampler with set_epoch.

What is right with it:
  * every block is sharded before the root (fully_shard bottom-up), so each block's parameters
    are all-gathered just before its forward and freed after;
  * the optimizer is built after sharding, over the sharded (DTensor) parameters;
  * every rank starts from the same weights (one seed), samples its own batches.
"""

import os

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import fully_shard
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.ff = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))

    def forward(self, x):
        return x + self.ff(self.norm(x))


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = nn.Sequential(*[Block(64) for _ in range(3)], nn.Linear(64, 1))
    for block in model[:3]:
        fully_shard(block)
    fully_shard(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    g = torch.Generator().manual_seed(1)
    x = torch.randn(512, 64, generator=g)
    data = TensorDataset(x, x[:, :1] * 2.0)
    sampler = DistributedSampler(data, shuffle=True, seed=0)
    loader = DataLoader(data, batch_size=16, sampler=sampler)
    for epoch in range(int(os.environ.get("EPOCHS", "2"))):
        sampler.set_epoch(epoch)
        for xb, yb in loader:
            loss = nn.functional.mse_loss(model(xb), yb)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        if dist.get_rank() == 0:
            print(f"epoch {epoch} loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
