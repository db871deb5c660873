# Stands for lucidrains/DALLE-pytorch 651a60e train_vae.py (after the fix): the save returns early
# unless a helper says this process is the root worker (global rank 0).
# expect: clean
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def root_process():
    return dist.get_rank() == 0


def store(net, path):
    if not root_process():
        return
    torch.save({"weights": net.state_dict()}, path)


dist.init_process_group("gloo")
net = DDP(torch.nn.Linear(4, 2))
for epoch in range(2):
    store(net.module, "./vae.pt")
store(net.module, "./vae-final.pt")
