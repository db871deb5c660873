"""A healthy DDP job whose rank 0 evaluates alone for minutes after step 5, while rank 1 goes
on to step 6 and waits for it in the gradient all-reduce; for `ddpdoctor attach` tests (started
with plain torchrun, never by ddpdoctor):

    python -m torch.distributed.run --nproc-per-node 2 attach_rank0_eval.py ANY STEPS_FILE

Each rank appends "rank step" to STEPS_FILE after each of its first steps, as attach_job.py.
"""

import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS_FILE = sys.argv[2]


def evaluate(model):
    """Rank 0's long evaluation: busy on its CPU the whole time, no collective."""
    weight = model.module.weight.detach()
    total = torch.zeros(16)
    with torch.no_grad():
        rounds = 10 ** 9  # (the loop on one line: a sample between two passes names the same line as one in a pass)
        for _ in range(rounds): total += (torch.randn(64, 16) @ weight).sum(0)  # noqa: E701
    return total


dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(rank)
model = DDP(torch.nn.Linear(16, 16))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
step = 0
while True:
    loss = model(torch.randn(8, 16)).sum()
    loss.backward()
    opt.step()
    opt.zero_grad()
    if step < 10:
        with open(STEPS_FILE, "a") as handle:
            handle.write(f"{rank} {step}\n")
    if rank == 0 and step == 5:
        evaluate(model)
    step += 1
