"""Broken: the world size is hard-coded, so the process group never forms (ddpdoctor: DDP505).

Written like the old pytorch/examples ImageNet script: `--world-size`, `--rank` and `--dist-url`
on the command line, passed straight to `init_process_group`. The default `--world-size 4` was
right for the 4-GPU box it was written on. Launched with `torchrun --nproc-per-node 2`, the two
processes join a rendezvous that waits for four, and ranks 2 and 3 never come.

Without ddpdoctor: each rank prints its "initialising process group" line, then nothing. Both
processes sit inside `init_process_group` until its timeout (30 minutes by default) and then
fail with an error that does not mention the world size you asked for:

    torch.distributed.DistStoreError: wait timeout after 1800000ms, keys: /default_pg/0//cpu//0/2

(key ".../2": the store is waiting for rank 2 to publish its address.)

Fix: don't pass world_size/rank when launching with torchrun (`init_process_group("gloo")` reads
WORLD_SIZE and RANK from the environment), or default `--world-size` to `WORLD_SIZE`.

    torchrun --nproc-per-node 2 examples/wrong_world_size.py
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

parser = argparse.ArgumentParser(description="PyTorch distributed training (ImageNet-example style)")
parser.add_argument("--epochs", default=3, type=int, metavar="N", help="number of total epochs to run")
parser.add_argument("-b", "--batch-size", default=32, type=int, metavar="N")
parser.add_argument("--lr", "--learning-rate", default=0.1, type=float, metavar="LR", dest="lr")
parser.add_argument("--world-size", default=4, type=int, help="number of processes for distributed training")
parser.add_argument("--rank", default=-1, type=int, help="process rank for distributed training")
parser.add_argument("--dist-url", default="env://", type=str, help="url used to set up distributed training")
parser.add_argument("--dist-backend", default="gloo", type=str, help="distributed backend")


def main():
    args = parser.parse_args()
    if args.rank == -1 and "RANK" in os.environ:
        args.rank = int(os.environ["RANK"])

    print(f"rank {args.rank}: initialising process group (world size {args.world_size})", flush=True)
    dist.init_process_group(backend=args.dist_backend, init_method=args.dist_url,
                            world_size=args.world_size, rank=args.rank)
    main_worker(args)
    dist.destroy_process_group()


def main_worker(args):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(512, 32, generator=g)
    y = (x[:, :4].sum(1) > 0).long()
    dataset = TensorDataset(x, y)
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)

    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 2)))
    optimizer = torch.optim.SGD(model.parameters(), args.lr, momentum=0.9)

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for i, (inputs, target) in enumerate(loader):
            loss = F.cross_entropy(model(inputs), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if args.rank == 0:
            print(f"Epoch: [{epoch}] loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
