# Rank 1 dies of a native crash (SIGSEGV) in the middle of a step while rank 0 waits in the
# gradient all-reduce for it.
import ctypes

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(1000):
    loss = model(torch.randn(8, 4)).sum()
    if rank == 1 and step == 3:
        ctypes.string_at(0)  # reads address 0
    opt.zero_grad()
    loss.backward()
    opt.step()
