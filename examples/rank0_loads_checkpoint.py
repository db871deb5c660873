"""Broken: rank 0 alone loads pretrained weights after the model is wrapped in DDP (ddpdoctor: DDP405).

Fine-tuning script. The author knows that DDP copies rank 0's weights to every rank, so only
rank 0 loads the pretrained checkpoint. But DDP broadcasts the parameters once, in its
constructor, and the load happens *after* `DDP(model)`: rank 0 fine-tunes the pretrained
weights while rank 1 fine-tunes a random initialisation. DDP averages the gradients, so both
apply the same update to different weights, and the replicas never agree again.

Without ddpdoctor: nothing fails. The job runs to the end, the loss printed by rank 0 even looks
fine (rank 0 does hold the pretrained weights), and the checkpoint saved from rank 0 is
plausible. What is wrong is that every step's averaged gradient mixes gradients computed on two
different models, so the fine-tune is worse than a single-process run and no one knows why.

Fix: load the state dict on every rank (with map_location) *before* wrapping in DDP, or load on
rank 0 before `DDP(model)` so the constructor's broadcast copies it.

    torchrun --nproc-per-node 2 examples/rank0_loads_checkpoint.py
"""

import argparse
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

DEFAULT_PRETRAINED = os.path.join(tempfile.gettempdir(), "ddpdoctor-example-pretrained", "backbone.pt")


def build_model():
    return nn.Sequential(
        nn.Linear(16, 64), nn.ReLU(),
        nn.Linear(64, 64), nn.ReLU(),
        nn.Linear(64, 3),
    )


def ensure_pretrained(path):
    """Stand-in for downloading pretrained weights: write them once, from rank 0."""
    if dist.get_rank() == 0 and not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        torch.manual_seed(2024)
        torch.save(build_model().state_dict(), path)
    dist.barrier()


def main():
    parser = argparse.ArgumentParser(description="fine-tune a pretrained classifier with DDP")
    parser.add_argument("--pretrained", default=DEFAULT_PRETRAINED)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.01)
    args = parser.parse_args()

    dist.init_process_group(backend="gloo")
    rank = dist.get_rank()
    ensure_pretrained(args.pretrained)

    g = torch.Generator().manual_seed(5)
    x = torch.randn(448, 16, generator=g)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0.5).long()
    dataset = TensorDataset(x, y)
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)

    model = DDP(build_model())
    if rank == 0:
        # DDP will sync the weights from rank 0, so only rank 0 needs to read the file
        model.module.load_state_dict(torch.load(args.pretrained, map_location="cpu"))
        print(f"loaded pretrained weights from {args.pretrained}", flush=True)

    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        total = 0.0
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            optimizer.step()
            total += loss.item()
        if rank == 0:
            print(f"epoch {epoch}: loss {total / len(loader):.4f}", flush=True)

    dist.destroy_process_group()


if __name__ == "__main__":
    main()
