"""Broken, written for GPUs: a collective only rank 0 calls, in its logging (DDP502/DDP501).

A GPU trainer in the style of pytorch/examples (set_device, init_process_group("nccl"),
DDP(device_ids=[local_rank]), GradScaler + autocast, .cuda(non_blocking=True)). To log the
global loss instead of its own, rank 0 averages it over the ranks with
`dist.all_reduce(loss, op=dist.ReduceOp.AVG)` -- inside the `if rank == 0:` that guards the
print. Rank 0 enters that all_reduce; the other ranks go on into the next iteration, where DDP
communicates. The ranks are now in different collectives.

Without ddpdoctor: the job goes silent until NCCL's watchdog kills it (10 minutes by default),
with a timeout that names neither the line nor the rank. On a CPU-only CI runner the script
cannot even start, so nothing there catches it; `ddpdoctor probe --cpu` can:

    ddpdoctor probe --cpu examples/gpu_desync.py
    torchrun --nproc-per-node 2 examples/gpu_desync.py          # on GPUs

Fix: call the all_reduce on every rank and only print on rank 0.
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


def make_dataset(n=512, n_features=32, n_classes=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, n_features, generator=g)
    y = (x[:, :n_classes].argmax(dim=1) + torch.randint(0, 2, (n,), generator=g)) % n_classes
    return TensorDataset(x, y)


class Trainer:
    def __init__(self, model, loader, local_rank, log_every):
        self.local_rank = local_rank
        self.rank = dist.get_rank()
        self.model = DDP(model.to(local_rank), device_ids=[local_rank], output_device=local_rank)
        self.loader = loader
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-3)
        self.scaler = torch.amp.GradScaler("cuda")
        self.log_every = log_every
        self.iter_num = 0

    def train_step(self, x, y):
        self.optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = F.cross_entropy(self.model(x), y)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
        return loss.detach()

    def log(self, loss):
        if self.rank == 0 and self.iter_num % self.log_every == 0:
            dist.all_reduce(loss, op=dist.ReduceOp.AVG)  # the global loss, not just rank 0's
            print(f"iter {self.iter_num}: loss {loss.item():.4f}", flush=True)

    def train(self, epochs):
        for epoch in range(epochs):
            self.loader.sampler.set_epoch(epoch)
            for x, y in self.loader:
                x = x.cuda(non_blocking=True)
                y = y.cuda(non_blocking=True)
                loss = self.train_step(x, y)
                self.log(loss)
                self.iter_num += 1
            torch.cuda.synchronize()


def main():
    parser = argparse.ArgumentParser(description="GPU-style DDP job with a rank-0-only collective")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--log-every", type=int, default=5)
    args = parser.parse_args()

    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl")

    dataset = make_dataset()
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=DistributedSampler(dataset),
                        pin_memory=True)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 128), nn.GELU(), nn.Linear(128, 10))
    Trainer(model, loader, local_rank, args.log_every).train(args.epochs)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
