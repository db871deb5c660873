"""Broken, written for GPUs: every rank trains on the whole dataset, in the same order (DDP301).

Written like pytorch/examples' ddp-tutorial-series/multigpu_torchrun.py: set_device(local_rank),
init_process_group("nccl"), model.to(local_rank), DDP(device_ids=[local_rank]), mixed precision
with GradScaler and autocast, .cuda(non_blocking=True), CUDA events to time each epoch. But its
DataLoader shuffles with `shuffle=True` instead of a DistributedSampler, and every rank seeds
its RNG alike: every rank draws the same permutation, so at every step all ranks compute the
gradient of the same batch, and the all-reduce averages N copies of it.

Without ddpdoctor: nothing fails. The loss goes down, and an epoch takes as many steps on 8
GPUs as on one: the extra GPUs are pure waste. And on a CPU-only CI runner the script cannot
even start (no NCCL, no CUDA), so no test there catches it. `ddpdoctor probe --cpu` can:

    ddpdoctor probe --cpu examples/gpu_no_sampler.py
    torchrun --nproc-per-node 2 examples/gpu_no_sampler.py      # on GPUs

Fix: `DataLoader(ds, batch_size=..., sampler=DistributedSampler(ds))` and
`sampler.set_epoch(epoch)` at the top of each epoch.
"""

import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed import destroy_process_group, init_process_group
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset


class MyTrainDataset(Dataset):
    """Random regression pairs, like the tutorial's datautils.MyTrainDataset."""

    def __init__(self, size, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.data = [(torch.rand(20, generator=g), torch.rand(1, generator=g)) for _ in range(size)]

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        return self.data[index]


def ddp_setup():
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    init_process_group(backend="nccl")


class Trainer:
    def __init__(self, model, train_data, optimizer):
        self.gpu_id = int(os.environ["LOCAL_RANK"])
        self.model = model.to(self.gpu_id)
        self.train_data = train_data
        self.optimizer = optimizer
        self.scaler = torch.amp.GradScaler("cuda")
        self.model = DDP(self.model, device_ids=[self.gpu_id], output_device=self.gpu_id)

    def _run_batch(self, source, targets):
        self.optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = F.mse_loss(self.model(source), targets)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()

    def _run_epoch(self, epoch):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for source, targets in self.train_data:
            source = source.cuda(non_blocking=True)
            targets = targets.cuda(non_blocking=True)
            self._run_batch(source, targets)
        end.record()
        torch.cuda.synchronize()
        print(f"[GPU{self.gpu_id}] Epoch {epoch} | Batchsize: {self.train_data.batch_size} "
              f"| Steps: {len(self.train_data)} | {start.elapsed_time(end):.0f} ms", flush=True)

    def train(self, max_epochs):
        for epoch in range(max_epochs):
            self._run_epoch(epoch)


def main():
    parser = argparse.ArgumentParser(description="GPU-style DDP job without a DistributedSampler")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()

    ddp_setup()
    torch.manual_seed(0)  # "for reproducibility" -- on every rank alike
    dataset = MyTrainDataset(384)
    train_data = DataLoader(dataset, batch_size=args.batch_size, shuffle=True, pin_memory=True)
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    Trainer(model, train_data, optimizer).train(args.epochs)
    destroy_process_group()


if __name__ == "__main__":
    main()
