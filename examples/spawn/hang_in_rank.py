"""Broken: one spawned rank hangs (ddpdoctor: DDP503).

Rank 1 waits for a "preprocessing done" file that nobody writes, while rank 0 has moved on
into the first gradient all-reduce. Without ddpdoctor: the job sits silent until the
process-group timeout (30 minutes on gloo, 10 on NCCL).

    python examples/spawn/hang_in_rank.py
"""

import os
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

FLAG = os.path.join(tempfile.gettempdir(), "ddpdoctor-example-never-written.flag")


def wait_for_preprocessing():
    while not os.path.exists(FLAG):
        time.sleep(0.5)


def run(rank, world_size, port):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world_size)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(100):
        if rank == 1 and step == 2:
            wait_for_preprocessing()
        opt.zero_grad()
        model(torch.randn(8, 4)).sum().backward()
        opt.step()


if __name__ == "__main__":
    import sys

    port = int(sys.argv[1]) if len(sys.argv) > 1 else 29611
    mp.spawn(run, args=(2, port), nprocs=2)
