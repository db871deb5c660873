"""Broken: every rank of the second node (ranks >= LOCAL_WORLD_SIZE) fails to open a file that
exists only on the first node, at its second step."""

import os

import torch
import torch.distributed as dist
import torch.nn as nn

dist.init_process_group("gloo")
rank = dist.get_rank()
local = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
model = nn.parallel.DistributedDataParallel(nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(6):
    if step == 2 and rank >= local:
        open("/nonexistent/shard-%d.bin" % rank, "rb")
    model(torch.randn(8, 16)).pow(2).mean().backward()
    opt.step()
    opt.zero_grad()
dist.destroy_process_group()
