"""Broken, the way it happens at the end of training: only rank 0 averages the validation loss
(an all_reduce under `if rank == 0`), then every rank waits for rank 0's checkpoint file.
Rank 0 sits in the all-reduce; the others sit polling for the file. Nothing errors."""

import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(rank)
model = nn.parallel.DistributedDataParallel(nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(4):
    loss = model(torch.randn(8, 16)).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()

val_loss = torch.tensor([loss.item()])
checkpoint = os.path.join(sys.argv[1] if len(sys.argv) > 1 else ".", "final.pt")
if rank == 0:
    dist.all_reduce(val_loss)  # bug: the other ranks never call this
    torch.save(model.state_dict(), checkpoint)
while not os.path.exists(checkpoint):  # every rank waits for the checkpoint
    time.sleep(0.05)
dist.destroy_process_group()
