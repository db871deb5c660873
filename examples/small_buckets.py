"""Slow: a small model split into a few latency-bound buckets (ddpdoctor: DDP603).

A 5-layer MLP of 64 units (67 KB of gradients) trained on a toy regression task. The
script sets `bucket_cap_mb=0.01` ("10 KB buckets start communicating earlier"), so each layer
gets a bucket of its own: four all-reduces of ~17 KB per backward. At that size an all-reduce
is nearly all fixed cost (a launch and a round trip between ranks), so four of them cost close
to four times one, and half of each step is spent waiting for them.

Unlike examples/tiny_buckets.py (50 buckets), the numbers here are small in absolute terms: a
few milliseconds per step. They are large against the step, which is what matters.

Fix: leave bucket_cap_mb at its default (25), which puts all 67 KB in one bucket:

    model = DDP(net)                        # not bucket_cap_mb=0.01

    torchrun --nproc-per-node 2 examples/small_buckets.py
"""

import os
import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

WIDTH = 64
EPOCHS = int(os.environ.get("EPOCHS", "4"))
CAP_MB = float(sys.argv[1]) if len(sys.argv) > 1 else 0.01


def toy_data(n=1024):
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(n, WIDTH, generator=gen)
    return TensorDataset(x, x.sum(dim=1, keepdim=True).tanh())


dist.init_process_group("gloo")
net = nn.Sequential(*[m for _ in range(4) for m in (nn.Linear(WIDTH, WIDTH), nn.ReLU())],
                    nn.Linear(WIDTH, 1))
model = DDP(net, bucket_cap_mb=CAP_MB)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
data = toy_data()
sampler = DistributedSampler(data)
loader = DataLoader(data, batch_size=16, sampler=sampler)

for epoch in range(EPOCHS):
    sampler.set_epoch(epoch)
    for x, y in loader:
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    if dist.get_rank() == 0:
        print(f"epoch {epoch} done", flush=True)

dist.destroy_process_group()
