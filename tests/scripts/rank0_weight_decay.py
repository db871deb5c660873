# DDP405, written differently: a hand-written weight decay applied by rank 0 alone after each
# optimizer step ("only the logging rank needs to do it"), so the replicas drift apart.
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
model = DDP(torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(30):
    x, y = torch.randn(16, 8), torch.randn(16, 1)
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
    if rank == 0:
        with torch.no_grad():
            for p in model.parameters():
                p.mul_(0.999)
dist.destroy_process_group()
