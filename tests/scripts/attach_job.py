"""A DDP job for `ddpdoctor attach` tests, started with plain torchrun, never by ddpdoctor.

    python -m torch.distributed.run --nproc-per-node 2 attach_job.py MODE STEPS_FILE

MODE: healthy (fast steps), straggler (rank 1 sleeps in its data loading), stuck (rank 1 loops
in its own code at step 5 while rank 0 waits in the gradient all-reduce), rank0_collective
(rank 0 calls a barrier the other rank skips, at step 5). Each rank appends "rank step" lines
to STEPS_FILE so a test knows the job trains and keeps training.
"""

import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

MODE, STEPS_FILE = sys.argv[1], sys.argv[2]
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(rank)
model = DDP(torch.nn.Linear(16, 16))
opt = torch.optim.SGD(model.parameters(), lr=0.01)


def load_batch():
    if MODE == "straggler" and rank == 1:
        time.sleep(0.2)  # a slow shard, read on the training thread
    return torch.randn(8, 16)


def wait_for_file_that_never_comes():
    while not os.path.exists("/nonexistent/ddpdoctor-attach-never"):
        time.sleep(0.05)


def log(step):
    with open(STEPS_FILE, "a") as handle:
        handle.write(f"{rank} {step}\n")


step = 0
while True:
    batch = load_batch()
    loss = model(batch).sum()
    if MODE == "stuck" and rank == 1 and step == 5:
        wait_for_file_that_never_comes()
    loss.backward()
    opt.step()
    opt.zero_grad()
    if MODE == "rank0_collective" and rank == 0 and step == 5:
        dist.barrier()
    if step < 10 or step % 20 == 0:
        log(step)
    step += 1
