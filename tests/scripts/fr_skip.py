"""A gloo job whose rank 1 skips an all_reduce, leaving Flight Recorder dumps behind.

    python -m torch.distributed.run --nproc-per-node 2 fr_skip.py DUMP_DIR

Gloo records Flight Recorder entries by default but never dumps them on its own: each rank
dumps from a thread once the main thread is blocked (a hang), as a watchdog would, then the job
ends itself.
"""

import os
import pickle
import sys
import threading
import time

import torch
import torch.distributed as dist

DUMP_DIR = sys.argv[1]
dist.init_process_group("gloo")
rank = dist.get_rank()


def dump_then_end():
    time.sleep(3)
    data = torch._C._distributed_c10d._dump_fr_trace()
    path = os.path.join(DUMP_DIR, f"rank_{rank}")
    with open(path + ".tmp", "wb") as handle:
        handle.write(data)
    os.replace(path + ".tmp", path)
    # A rank that exits closes its connections, which fails the peer's pending all_reduce
    # before that peer dumps: end only once every rank has dumped.
    world = dist.get_world_size()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not all(
            os.path.exists(os.path.join(DUMP_DIR, f"rank_{r}")) for r in range(world)):
        time.sleep(0.1)
    os._exit(0)


def sync_metrics(value):
    dist.all_reduce(value)


threading.Thread(target=dump_then_end, daemon=True).start()
x = torch.ones(10)
for step in range(4):
    dist.all_reduce(x)
if rank == 0:
    sync_metrics(x)  # rank 1 never calls it
time.sleep(60)
