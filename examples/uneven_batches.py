"""Broken: hand-sharded data gives the ranks different numbers of batches (ddpdoctor: DDP303).

Module-level script in the "config variables at the top" style. The data is sharded by hand
with `x[rank::world_size]`. The dataset has 225 samples, an odd number, so rank 0 gets 113 and
rank 1 gets 112; with batch size 16 that is 8 batches on rank 0 and 7 on rank 1.

At the end of epoch 0, rank 1 is done and goes to the epoch-end `dist.barrier()` (which guards
the checkpoint), while rank 0 runs its 8th batch and waits in DDP's gradient all-reduce for a
partner that never comes.

Without ddpdoctor: the job prints nothing after the last step of epoch 0 and hangs until the
process-group timeout (30 minutes on gloo, 10 on NCCL), then dies with a "Timed out waiting ...
for recv operation" (gloo) or a watchdog timeout (NCCL) that does not say why.

Fix: DistributedSampler (it pads so every rank gets the same count) or drop_last, or
`with model.join():` for genuinely uneven inputs.

    torchrun --nproc-per-node 2 examples/uneven_batches.py
"""

import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

# ---- config -------------------------------------------------------------------------------
n_samples = 225
n_features = 12
batch_size = 16
epochs = 3
learning_rate = 5e-3
out_dir = os.path.join(tempfile.gettempdir(), "ddpdoctor-example-uneven")
# -------------------------------------------------------------------------------------------

dist.init_process_group(backend="gloo")
rank = int(os.environ["RANK"])
world_size = int(os.environ["WORLD_SIZE"])
master_process = rank == 0
if master_process:
    os.makedirs(out_dir, exist_ok=True)

# the full dataset, identical on every rank
g = torch.Generator().manual_seed(7)
X = torch.randn(n_samples, n_features, generator=g)
Y = (X[:, :3].sum(dim=1, keepdim=True) > 0).float()

# shard by hand: every world_size-th sample
train_ds = TensorDataset(X[rank::world_size], Y[rank::world_size])
train_loader = DataLoader(train_ds, batch_size=batch_size, shuffle=True)
print(f"rank {rank}: {len(train_ds)} samples, {len(train_loader)} batches per epoch", flush=True)

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(n_features, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 1))
model = DDP(model)
optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
criterion = nn.BCEWithLogitsLoss()

for epoch in range(epochs):
    for it, (xb, yb) in enumerate(train_loader):
        loss = criterion(model(xb), yb)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if master_process and it % 4 == 0:
            print(f"epoch {epoch} iter {it}: loss {loss.item():.4f}", flush=True)

    dist.barrier()  # wait for everyone to finish the epoch before writing the checkpoint
    if master_process:
        torch.save(model.module.state_dict(), os.path.join(out_dir, f"epoch{epoch}.pt"))
        print(f"epoch {epoch} done, checkpoint saved", flush=True)

dist.destroy_process_group()
