"""Broken: a submodule never takes part in the loss, find_unused_parameters=False (ddpdoctor: DDP401).

The model was copied from a multi-task experiment: it still builds an auxiliary head
(`self.aux_head`) in `__init__`, but `forward` no longer uses it. DDP expects a gradient for
every parameter it registered; the aux head's never arrives, so the gradient bucket that holds
it never becomes ready.

Without ddpdoctor: the first iteration "works" (its gradients are silently not averaged), and
the second forward raises on every rank:

    RuntimeError: Expected to have finished reduction in the prior iteration before starting a
    new one. This error indicates that your module has parameters that were not used in
    producing loss. ... Parameter indices which did not receive grad for rank 0: 8 9

Only indices, not names (unless TORCH_DISTRIBUTED_DEBUG=INFO is set).

Fix: delete the unused head (or use it in the loss); only as a last resort pass
find_unused_parameters=True.

    torchrun --nproc-per-node 2 examples/unused_params.py
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


class Net(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.fc1 = nn.Linear(16 * 4 * 4, 64)
        self.fc2 = nn.Linear(64, num_classes)
        # auxiliary rotation-prediction head from the self-supervised experiment
        self.aux_head = nn.Linear(64, 4)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return self.fc2(x)


def train(args, model, train_loader, optimizer, epoch, rank):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        optimizer.zero_grad()
        output = model(data)
        loss = F.cross_entropy(output, target)
        loss.backward()
        optimizer.step()
        if rank == 0 and batch_idx % args.log_interval == 0:
            print(f"Train Epoch: {epoch} [{batch_idx * len(data)}/{len(train_loader.sampler)}]"
                  f"\tLoss: {loss.item():.6f}", flush=True)


def main():
    parser = argparse.ArgumentParser(description="PyTorch DDP example (12x12 digits)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--log-interval", type=int, default=2)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(1)

    g = torch.Generator().manual_seed(0)
    images = torch.randn(512, 1, 12, 12, generator=g)
    labels = torch.randint(0, 10, (512,), generator=g)
    dataset = TensorDataset(images, labels)
    sampler = DistributedSampler(dataset)
    train_loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)

    model = DDP(Net())
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)

    for epoch in range(1, args.epochs + 1):
        sampler.set_epoch(epoch)
        train(args, model, train_loader, optimizer, epoch, rank)

    dist.destroy_process_group()


if __name__ == "__main__":
    main()
