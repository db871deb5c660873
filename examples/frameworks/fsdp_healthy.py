"""FSDP (FullyShardedDataParallel), done right: the baseline ddpdoctor must pass clean.

Launch:
    torchrun --nproc-per-node 2 examples/frameworks/fsdp_healthy.py

The FSDP2 example's model wrapped the classic way: FullyShardedDataParallel with an auto-wrap
policy that makes each Block its own FSDP unit, on CPU with gloo (device_id=cpu), synthetic
data sharded by a DistributedSampler with set_epoch.

What is right with it:
  * each Block is its own unit (ModuleWrapPolicy), so only one block's parameters are
    unsharded at a time;
  * one seed on every rank, so the ranks start from the same weights (on GPU,
    sync_module_states=True broadcasts rank 0's instead; on CPU FSDP refuses it);
  * the optimizer is built after wrapping, over FSDP's flat parameters.
"""

import os

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import ModuleWrapPolicy
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
    model = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({Block}), device_id=torch.device("cpu"))
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
