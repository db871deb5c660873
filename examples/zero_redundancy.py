"""ZeroRedundancyOptimizer (ZeRO stage 1) with DDP, done right: ddpdoctor must pass it clean.

Launch:
    torchrun --nproc-per-node 2 examples/zero_redundancy.py

Each rank keeps the Adam state of its own share of the parameters only (ZeroRedundancyOptimizer
partitions them across ranks) and broadcasts its updated share after every step. The extra
collectives are ZeRO's own (recorded with via "zero"), the optimizer state differs per rank by
design, and the gradients are still all-reduced by DDP.

What is right with it:
  * the optimizer wraps the DDP model's parameters, built after DDP;
  * every rank calls optimizer.step() (each one's broadcasts are collectives);
  * the state is consolidated on rank 0 before it alone saves it: consolidate_state_dict is a
    collective too, so every rank calls it.
"""

import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                              nn.Linear(256, 4)))
    optimizer = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam, lr=1e-3)

    g = torch.Generator().manual_seed(1)
    x = torch.randn(1024, 32, generator=g)
    data = TensorDataset(x, (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long())
    sampler = DistributedSampler(data, shuffle=True, seed=0)
    loader = DataLoader(data, batch_size=32, sampler=sampler)
    for epoch in range(int(os.environ.get("EPOCHS", "2"))):
        sampler.set_epoch(epoch)
        for xb, yb in loader:
            optimizer.zero_grad(set_to_none=True)
            F.cross_entropy(model(xb), yb).backward()
            optimizer.step()
        optimizer.consolidate_state_dict(to=0)  # every rank: it is a collective
        if rank == 0:
            path = os.path.join(tempfile.gettempdir(), "ddpdoctor-example-zero.pt")
            torch.save({"model": model.module.state_dict(), "optimizer": optimizer.state_dict()}, path)
            print(f"epoch {epoch}: saved {path}", flush=True)
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
