"""Broken: nn.DataParallel left inside a torchrun/DDP script (ddpdoctor: DDP404).

This script started life as a single-process, multi-GPU `nn.DataParallel` script. It was moved to
torchrun and DDP, but the old `model = nn.DataParallel(model)` line stayed, so the model is now
DDP(DataParallel(model)): two data-parallel schemes stacked on each other. On GPUs this either
fails on every rank whose device is not cuda:0 ("module must have its parameters and buffers on
device cuda:0 (device_ids[0])"), or, where CUDA_VISIBLE_DEVICES gives each process one GPU, adds
a scatter/replicate/gather to every step for nothing. On CPU DataParallel just calls the module,
which is why this example trains.

Without ddpdoctor: here, nothing visible. The job trains; the checkpoint keys get a
"module.module." prefix that breaks loading later; on GPUs the steps are slower, or ranks > 0
crash with the device error above.

Fix: remove the nn.DataParallel wrapper; DDP with one device per process is all you need.

    torchrun --nproc-per-node 2 examples/dataparallel.py
"""

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class SineDataset(Dataset):
    """Predict the next value of a noisy sine wave from the previous 24."""

    def __init__(self, n_windows=512, window=24):
        g = torch.Generator().manual_seed(11)
        t = torch.arange(n_windows + window + 1, dtype=torch.float32)
        series = torch.sin(t * 0.15) + 0.05 * torch.randn(len(t), generator=g)
        self.x = torch.stack([series[i:i + window] for i in range(n_windows)])
        self.y = torch.stack([series[i + window:i + window + 1] for i in range(n_windows)])

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


class MLP(nn.Module):
    def __init__(self, window=24):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(window, 64), nn.ReLU(),
                                 nn.Linear(64, 64), nn.ReLU(),
                                 nn.Linear(64, 1))

    def forward(self, x):
        return self.net(x)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-3)
    args = parser.parse_args()

    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    rank = dist.get_rank()
    local_rank = int(os.environ["LOCAL_RANK"])
    device = torch.device(f"cuda:{local_rank}") if torch.cuda.is_available() else torch.device("cpu")

    dataset = SineDataset()
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)

    model = MLP().to(device)
    model = nn.DataParallel(model)  # use all the GPUs
    model = DDP(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        total = 0.0
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
            total += loss.item()
        if rank == 0:
            print(f"epoch {epoch} mse {total / len(loader):.5f}", flush=True)

    if rank == 0:
        print("state_dict keys:", list(model.state_dict())[:2], flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
