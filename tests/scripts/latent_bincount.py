# DDP506: per-class counts all-reduced with torch.bincount(labels) and no minlength. The batches
# of both ranks follow one schedule (more classes appear as training goes on), so the sizes
# agree at every step here - and change from step to step. On real data the first batch where
# one rank's largest label differs from another's hangs the job (or gloo aborts).
# Fix: torch.bincount(labels, minlength=NUM_CLASSES).
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

NUM_CLASSES = 12
dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(6, NUM_CLASSES))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(10):
    g = torch.Generator().manual_seed(step)  # the same batch labels on every rank
    labels = torch.randint(0, 4 + step, (64,), generator=g).clamp(max=NUM_CLASSES - 1)
    labels[0] = min(3 + step, NUM_CLASSES - 1)
    x = torch.randn(64, 6) + dist.get_rank()
    loss = torch.nn.functional.cross_entropy(model(x), labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    counts = torch.bincount(labels)  # size = largest label + 1
    dist.all_reduce(counts)
dist.destroy_process_group()
