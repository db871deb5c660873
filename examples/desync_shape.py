"""Broken: every rank all-reduces, but with a tensor whose shape depends on its data (ddpdoctor: DDP501).

The validation loop computes per-class accuracy with `torch.bincount`, sums the counts over
ranks with `dist.all_reduce`, and prints a per-class table on rank 0. `torch.bincount(t)` returns
`max(t) + 1` bins unless told `minlength=`, and the vector of *correct* predictions per class is
only as long as the highest class that this rank happened to get right. Each rank validates a
different shard, so the ranks enter the same all_reduce with tensors of different lengths.
The script validates once before training (a sanity check) and after every epoch.

Without ddpdoctor: it depends on the sizes. Gloo may abort the process

    terminate called after throwing an instance of 'gloo::EnforceNotMet'
      what():  [enforce fail at .../gloo/transport/tcp/pair.cc:...] op.preamble.length <= op.nbytes.
      ... Received data size doesn't match expected size. Is there a distributed collective
      mismatch in your code?

with "Connection reset by peer" on the other rank, or hang until the timeout, or, worst of all,
return a silently wrong sum on one rank. NCCL typically hangs or returns garbage.

Fix: `torch.bincount(t, minlength=num_classes)`: give collectives tensors whose shape does not
depend on the data.

    torchrun --nproc-per-node 2 examples/desync_shape.py
"""

import argparse

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

NUM_CLASSES = 10


class GaussianMixture(Dataset):
    def __init__(self, n, split_seed, n_features=24):
        centers = torch.randn(NUM_CLASSES, n_features, generator=torch.Generator().manual_seed(0)) * 1.5
        g = torch.Generator().manual_seed(split_seed)
        self.y = torch.randint(0, NUM_CLASSES, (n,), generator=g)
        self.x = centers[self.y] + torch.randn(n, n_features, generator=g)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


@torch.no_grad()
def validate(model, loader):
    model.eval()
    preds, targets = [], []
    for x, y in loader:
        preds.append(model(x).argmax(dim=1))
        targets.append(y)
    preds, targets = torch.cat(preds), torch.cat(targets)

    correct_per_class = torch.bincount(targets[preds == targets]).float()
    total_per_class = torch.bincount(targets).float()
    dist.all_reduce(correct_per_class)
    dist.all_reduce(total_per_class)
    model.train()
    n = min(len(correct_per_class), len(total_per_class))
    return correct_per_class[:n] / total_per_class[:n].clamp(min=1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.05)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank = dist.get_rank()

    train_set = GaussianMixture(448, split_seed=1)
    val_set = GaussianMixture(192, split_seed=2)
    train_sampler = DistributedSampler(train_set)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, sampler=train_sampler)
    val_loader = DataLoader(val_set, batch_size=48, sampler=DistributedSampler(val_set, shuffle=False))

    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(24, 64), nn.ReLU(), nn.Linear(64, NUM_CLASSES)))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    acc = validate(model, val_loader)
    if rank == 0:
        print("before training, per-class accuracy:", [round(a, 2) for a in acc.tolist()], flush=True)

    for epoch in range(args.epochs):
        train_sampler.set_epoch(epoch)
        for x, y in train_loader:
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
        acc = validate(model, val_loader)
        if rank == 0:
            print(f"epoch {epoch}: per-class accuracy", [round(a, 2) for a in acc.tolist()], flush=True)

    dist.destroy_process_group()


if __name__ == "__main__":
    main()
