# DDP504, written differently: rank 1 dies from a native crash (SIGSEGV in an extension),
# not a Python exception, while rank 0 waits in the gradient all-reduce.
import ctypes, os
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
model = DDP(torch.nn.Linear(3, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(20):
    if rank == 1 and step == 3:
        ctypes.string_at(0)  # a native crash: reads address 0
    opt.zero_grad()
    model(torch.randn(2, 3)).sum().backward()
    opt.step()
