"""Broken: a mixture-of-experts layer skips experts that got no samples, and which experts get
samples depends on each rank's data (ddpdoctor: DDP401, unused set differs across ranks).

Module-level script. The model routes every sample to one of four experts (top-1 gating), and,
like most MoE implementations, only runs an expert on the samples routed to it:
`if mask.any(): out[mask] = expert(x[mask])`. An expert that receives no sample takes no part in
the loss on that rank.

The data is sharded per sensor: each rank reads its own shard, and rank 1's shard comes from a
single sensor whose readings all sit in one corner of the input space, so the gate sends all of
rank 1's samples to the same expert. Rank 0 uses every expert; rank 1 leaves three of them
without gradient. DDP runs with find_unused_parameters=False.

Without ddpdoctor: rank 1 finishes iteration 1 without launching its gradient all-reduce and
raises at its second forward:

    RuntimeError: Expected to have finished reduction in the prior iteration before starting a
    new one. ... Parameter indices which did not receive grad for rank 1: 2 3 4 5 6 7 8 9 14 15 16 17

Rank 0, still waiting in iteration 1's all-reduce, then dies with "Connection closed by peer"
(with NCCL it may hang until the watchdog timeout instead). Because rank 0 *does* use every
parameter, rank 0's log alone says nothing useful.

Fix: find_unused_parameters=True, or make every expert take part in the graph on every rank
(e.g. add `0 * sum(p.sum() for p in expert.parameters())` for idle experts), or shard the data
so every rank sees every sensor.

    torchrun --nproc-per-node 2 examples/unused_params_rank_dependent.py
"""

import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

# config
d_in = 8
d_hidden = 32
n_experts = 4
batch_size = 32
samples_per_shard = 256
epochs = 3
lr = 1e-2
log_every = 4


class Expert(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.fc1 = nn.Linear(d, h)
        self.fc2 = nn.Linear(h, d)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class MoE(nn.Module):
    """Top-1 mixture of experts: each sample goes through the expert its gate picks."""

    def __init__(self, d, h, n):
        super().__init__()
        self.gate = nn.Linear(d, n)
        self.experts = nn.ModuleList(Expert(d, h) for _ in range(n))

    def forward(self, x):
        probs = F.softmax(self.gate(x), dim=-1)
        weight, choice = probs.max(dim=-1)
        out = torch.zeros_like(x)
        for i, expert in enumerate(self.experts):
            mask = choice == i
            if mask.any():  # skip idle experts: saves compute
                out[mask] = weight[mask, None] * expert(x[mask])
        return out


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.moe = MoE(d_in, d_hidden, n_experts)
        self.head = nn.Linear(d_in, 1)

    def forward(self, x):
        return self.head(x + self.moe(x))


def load_shard(rank):
    """Each rank reads the shard written for it; shard k holds the readings of sensor k."""
    g = torch.Generator().manual_seed(100 + rank)
    if rank == 0:
        x = torch.randn(samples_per_shard, d_in, generator=g) * 3.0  # a noisy, wide-ranging sensor
    else:
        x = 0.05 * torch.randn(samples_per_shard, d_in, generator=g) + 4.0  # a steady one
    y = x.sin().sum(dim=1, keepdim=True)
    return TensorDataset(x, y)


dist.init_process_group("gloo")
rank = int(os.environ["RANK"])

torch.manual_seed(0)
model = DDP(Regressor())
optimizer = torch.optim.Adam(model.parameters(), lr=lr)
loader = DataLoader(load_shard(rank), batch_size=batch_size, shuffle=True)

step = 0
for epoch in range(epochs):
    for x, y in loader:
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if rank == 0 and step % log_every == 0:
            print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
        step += 1

dist.destroy_process_group()
