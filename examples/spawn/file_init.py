"""Healthy, with a file:// rendezvous: the ranks meet through a file on a shared filesystem
(here a temporary directory), started by mp.spawn.

    python examples/spawn/file_init.py --init-file /tmp/ddp-init
"""

import argparse
import os
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def worker(local_rank, world_size, init_file):
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=local_rank,
                            world_size=world_size)
    data = TensorDataset(torch.randn(384, 6), torch.randn(384, 1))
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=16, sampler=sampler)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x, y in loader:
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--nprocs", type=int, default=2)
    parser.add_argument("--init-file", default=None)
    args = parser.parse_args()
    init_file = args.init_file or os.path.join(tempfile.mkdtemp(prefix="ddp-file-init-"), "rendezvous")
    mp.spawn(worker, args=(args.nprocs, init_file), nprocs=args.nprocs, join=True)
