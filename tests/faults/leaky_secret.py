# Everything a careless script can do with a secret: take it as an argument, read it from the
# environment, print it, and crash with it in the exception message. ddpdoctor must keep every
# copy out of what it writes. The script also writes one file in its working directory: the only
# file that may appear there.
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

token = os.environ["DDPDOCTOR_TEST_API_TOKEN"]
assert sys.argv[1:] == ["--token", token], sys.argv
dist.init_process_group("gloo")
rank = dist.get_rank()
print(f"rank {rank}: logging in with {token}", flush=True)
if rank == 0:
    with open("written-by-the-script.txt", "w") as handle:
        handle.write("the script's own output\n")
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(6):
    opt.zero_grad()
    model(torch.randn(8, 4)).sum().backward()
    opt.step()
dist.barrier()
if rank == 1:
    raise PermissionError(f"the hub refused token {token}")
