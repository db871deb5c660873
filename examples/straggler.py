"""Slow: one straggler rank, every other rank waits for it each step (ddpdoctor: DDP601).

A classifier on synthetic blobs with a "training monitor": every step, the monitoring rank runs
the model over a held-out monitor batch of 32768 samples and logs its accuracy. Somebody put the
monitor on `--monitor-rank 1` so that rank 0 would stay free for checkpointing. But DDP
synchronizes every step: the gradient all-reduce completes only when the last rank joins it, so
rank 0 now idles in the all-reduce for as long as rank 1 spends on the monitor, every step. The
whole job runs at the monitor's pace.

Without ddpdoctor: the job runs and converges, slower than it should; both ranks report the same
step time, so nothing points at rank 1.

Fix: monitor every N steps, on a smaller batch, or (better) from the training batch's own logits:

    if step % 100 == 0:
        acc = (logits.argmax(1) == y).float().mean()

    torchrun --nproc-per-node 2 examples/straggler.py
"""

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def make_blobs(n, n_features=20, n_classes=4, seed=0):
    centers = torch.randn(n_classes, n_features, generator=torch.Generator().manual_seed(1234))
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, n_classes, (n,), generator=g)
    return centers[y] + torch.randn(n, n_features, generator=g), y


class Classifier(nn.Module):
    def __init__(self, n_features=20, hidden=256, n_classes=4):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_features, hidden), nn.ReLU(),
                                 nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, n_classes))

    def forward(self, x):
        return self.net(x)


class Monitor:
    """Accuracy on a fixed held-out batch, logged every `every` steps."""

    def __init__(self, samples, every):
        self.x, self.y = make_blobs(samples, seed=7)
        self.every = every

    @torch.no_grad()
    def __call__(self, model, step):
        if step % self.every:
            return None
        return (model(self.x).argmax(dim=1) == self.y).float().mean().item()


def main():
    parser = argparse.ArgumentParser(description="straggler DDP example")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--monitor-rank", type=int, default=1)
    parser.add_argument("--monitor-samples", type=int, default=32768)
    parser.add_argument("--monitor-every", type=int, default=1)
    args = parser.parse_args()

    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    rank = dist.get_rank()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")

    x, y = make_blobs(384)
    dataset = TensorDataset(x, y)
    sampler = DistributedSampler(dataset, shuffle=True)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler, drop_last=True)

    torch.manual_seed(0)
    model = DDP(Classifier().to(device))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    monitor = Monitor(args.monitor_samples, args.monitor_every) if rank == args.monitor_rank else None

    step = 0
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            if monitor is not None:
                acc = monitor(model, step)  # the monitoring rank only: everyone else waits
                if acc is not None and step % 20 == 0:
                    print(f"[rank {rank}] step {step} monitor acc {acc:.3f}", flush=True)
            optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            optimizer.step()
            step += 1
        if rank == 0:
            print(f"epoch {epoch} | loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
