"""Broken: one rank waits in dist.barrier() while the other polls for a file that never appears
(ddpdoctor: DDP503).

Module-level script. After the first epoch the validation features are built once, by rank 0,
and cached on disk; the other ranks wait for a marker file and then read the cache. The two
halves disagree on the marker's name: rank 0 writes `<cache>.ready`, the others poll for
`<cache>.done`. Rank 0 writes its cache and marker and goes to `dist.barrier()`; rank 1 loops
in `while not os.path.exists(...): time.sleep(1)` forever.

Without ddpdoctor: after the "epoch 0" line, the job prints nothing, uses no CPU and never
ends. Rank 0 times out in the barrier after the process-group timeout (30 minutes on gloo,
10 on NCCL) with "Timed out waiting ... for recv operation to complete"; on a cluster the job
may just sit until its wall-clock limit. The error, if it comes, points at the barrier, not at
the polling loop on the other rank.

Fix: use one name for the marker (better: no marker at all, just `dist.barrier()` on every
rank after rank 0 has written the cache).

    torchrun --nproc-per-node 2 examples/hang_barrier.py
"""

import os
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

epochs = 3
batch_size = 32
lr = 0.05
cache_dir = os.path.join(tempfile.gettempdir(), "ddpdoctor-example-cache")
val_cache = os.path.join(cache_dir, "val_features.pt")


def make_split(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 10, generator=g)
    y = (x.pow(2).sum(dim=1) > 10).long()
    return x, y


def build_val_cache():
    """Expensive feature extraction, done once by rank 0."""
    x, y = make_split(512, seed=1)
    feats = torch.cat([x, x.pow(2)], dim=1)
    os.makedirs(cache_dir, exist_ok=True)
    torch.save({"x": feats, "y": y}, val_cache)
    open(val_cache + ".ready", "w").close()


def wait_for_val_cache():
    while not os.path.exists(val_cache + ".done"):
        time.sleep(1)


dist.init_process_group("gloo")
rank = dist.get_rank()

x, y = make_split(448, seed=0)
train_ds = TensorDataset(torch.cat([x, x.pow(2)], dim=1), y)
sampler = DistributedSampler(train_ds)
loader = DataLoader(train_ds, batch_size=batch_size, sampler=sampler)

torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 2)))
opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)

val = None
for epoch in range(epochs):
    sampler.set_epoch(epoch)
    for xb, yb in loader:
        opt.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
    if rank == 0:
        print(f"epoch {epoch}: loss {loss.item():.4f}", flush=True)

    if val is None:
        if rank == 0:
            build_val_cache()
            dist.barrier()
        else:
            wait_for_val_cache()
            dist.barrier()
        val = torch.load(val_cache)

    with torch.no_grad():
        acc = (model.module(val["x"]).argmax(1) == val["y"]).float().mean().item()
    if rank == 0:
        print(f"epoch {epoch}: val acc {acc:.3f}", flush=True)

dist.destroy_process_group()
