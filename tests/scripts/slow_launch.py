"""Starts its own ranks (mp.spawn, run with --launcher none) after preparing its data in the
parent process: slow before any rank exists (issue 28: slow is not stuck).

    --prepare S   the parent prepares for S seconds before it spawns the ranks (sleeping, as
                  waiting on a download or a shared filesystem does)
    --steps N     each of the two ranks trains N steps

Healthy: under --timeout shorter than the preparation the verdict is incomplete, never a hang.
"""

import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

WORLD = 2


def prepare(seconds: float) -> torch.Tensor:
    time.sleep(seconds)
    return torch.randn(64, 8)


def train(rank: int, data: torch.Tensor, steps: int, port: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    model = DDP(nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    shard = data[rank::WORLD]
    for _ in range(steps):
        opt.zero_grad()
        F.mse_loss(model(shard), shard[:, :1]).backward()
        opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--prepare", type=float, default=0.0)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--port", type=int, default=29541)
    args = parser.parse_args()
    data = prepare(args.prepare)
    mp.spawn(train, args=(data, args.steps, args.port), nprocs=WORLD)
