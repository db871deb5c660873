"""DDP406 without a crash: an ALBERT-style shared layer, applied four times, each application
checkpointed with torch's default (reentrant) checkpoint; DDP with default flags.

The shared layer's parameters get one gradient per checkpointed application, four in one
backward; DDP counts them ready four times and all-reduces their bucket early. No error, no
warning beyond torch's use_reentrant deprecation note: the averaged gradients are wrong
(measured on torch 2.13: off by about as much as the gradients themselves).
No DataLoader: each rank draws its own random batches.
"""

import os
import warnings

import torch
import torch.distributed as dist
import torch.utils.checkpoint
from torch import nn
from torch.nn.parallel import DistributedDataParallel

warnings.filterwarnings("ignore", message=".*use_reentrant.*")


class SharedStack(nn.Module):
    def __init__(self, width=16, repeats=4):
        super().__init__()
        self.inp = nn.Linear(8, width)
        self.shared = nn.Sequential(nn.Linear(width, width), nn.Tanh())
        self.out = nn.Linear(width, 1)
        self.repeats = repeats

    def forward(self, x):
        h = self.inp(x)
        for _ in range(self.repeats):
            h = torch.utils.checkpoint.checkpoint(self.shared, h)
        return self.out(h)


dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
net = DistributedDataParallel(SharedStack())
opt = torch.optim.SGD(net.parameters(), lr=0.01)
gen = torch.Generator().manual_seed(100 + rank)
for it in range(int(os.environ.get("ITERS", "12"))):
    x = torch.randn(32, 8, generator=gen)
    target = x.sum(dim=1, keepdim=True)
    loss = ((net(x) - target) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
dist.destroy_process_group()
