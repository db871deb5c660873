# Rank 1 calls sys.exit(3) at step 3 (a script's own "give up" path); rank 0 trains on and
# blocks in the next all-reduce.
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(1000):
    if rank == 1 and step == 3:
        sys.exit(3)
    opt.zero_grad()
    model(torch.randn(8, 4)).sum().backward()
    opt.step()
