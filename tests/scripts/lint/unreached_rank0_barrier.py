# Healthy for as long as a probe runs: the rank-0 barrier in save() (a DDP801 bug in the source)
# only runs every 1000 epochs, which a short probe never reaches. The static finding is shown,
# unconfirmed, and does not fail the probe's gate.
import os
import tempfile

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

SAVE_EVERY = 1000


def save(model, epoch):
    if dist.get_rank() == 0:
        torch.save(model.module.state_dict(), os.path.join(tempfile.gettempdir(), "ddpdoctor-unreached.pt"))
        dist.barrier()  # the bug: only rank 0 enters it (never reached in a short run)


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(dist.get_rank())  # each rank its own batches
    model = DDP(torch.nn.Linear(5, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(4):
        for _ in range(3):
            opt.zero_grad()
            model(torch.randn(4, 5)).sum().backward()
            opt.step()
        if epoch and epoch % SAVE_EVERY == 0:
            save(model, epoch)
    dist.destroy_process_group()


main()
