"""Broken: rank 0 resumes from the checkpoint and keeps the whole dict alive (ddpdoctor: DDP608).

A contrastive-learning script resumes from its last checkpoint: the model's weights, the epoch,
and the memory bank of features the loss compares against (here 128 MB). The author knows DDP
broadcasts rank 0's weights at construction, so only rank 0 reads the checkpoint, before
`DDP(model)`: the weights are right on every rank. But `ckpt` stays referenced in main() for
the whole run, so rank 0 holds a full copy of the checkpoint that no other rank has. On a GPU
the classic form is `torch.load(path)` without map_location on every rank: every copy goes back
to cuda:0, the device it was saved from.

Without ddpdoctor: nothing fails until the model grows; then rank 0 alone runs out of memory,
and the batch size everyone can use is set by rank 0.

Fix: take what you need and drop the rest (`del ckpt`), or torch.load(..., mmap=True).

    torchrun --nproc-per-node 2 examples/rank0_keeps_checkpoint.py
"""

import argparse
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

DEFAULT_CKPT = os.path.join(tempfile.gettempdir(), "ddpdoctor-example-resume", "last.pt")


def build_model():
    return nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 128))


def ensure_checkpoint(path, bank_mb):
    """Stand-in for an earlier run's checkpoint: written once, by rank 0."""
    if dist.get_rank() == 0 and not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        torch.manual_seed(7)
        bank = torch.randn(bank_mb * 2**20 // (128 * 4), 128)
        torch.save({"model": build_model().state_dict(), "epoch": 3, "feature_bank": bank}, path + ".tmp")
        os.replace(path + ".tmp", path)
    dist.barrier()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--resume", default=DEFAULT_CKPT)
    parser.add_argument("--bank-mb", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    ensure_checkpoint(args.resume, args.bank_mb)

    model = build_model()
    start_epoch = 0
    ckpt = None
    if rank == 0:
        # DDP broadcasts rank 0's weights, so only rank 0 needs to read the checkpoint
        ckpt = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(ckpt["model"])
        start_epoch = ckpt["epoch"]
    model = DDP(model)
    epoch_now = torch.tensor([start_epoch])
    dist.broadcast(epoch_now, src=0)  # every rank resumes at the same epoch
    start_epoch = int(epoch_now)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    g = torch.Generator().manual_seed(1)
    x = torch.randn(1024, 32, generator=g)
    data = TensorDataset(x, torch.randn(1024, 128, generator=g))
    sampler = DistributedSampler(data, shuffle=True, seed=0)
    loader = DataLoader(data, batch_size=32, sampler=sampler)
    for epoch in range(start_epoch, start_epoch + args.epochs):
        sampler.set_epoch(epoch)
        for xb, yb in loader:
            optimizer.zero_grad(set_to_none=True)
            F.mse_loss(model(xb), yb).backward()
            optimizer.step()
        if rank == 0:
            print(f"epoch {epoch} done (bank of {len(ckpt['feature_bank'])} features)", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
