# Clean twin of latent_counts_after_loss.py: the length of the per-class counts is agreed first
# (all_reduce with MAX), and every rank pads its counts to it before the all-reduce.
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

NUM_CLASSES = 6
dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(8, NUM_CLASSES))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(10):
    g = torch.Generator().manual_seed(100 * step + dist.get_rank())
    x = torch.randn(32, 8, generator=g)
    labels = torch.randint(0, NUM_CLASSES, (32,), generator=g)
    logits = model(x)
    loss = torch.nn.functional.cross_entropy(logits, labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    preds = logits.detach().argmax(1).clamp(max=1 + step % 3)
    preds[0] = 1 + step % 3
    total = loss.detach().clone()
    dist.all_reduce(total)
    counts = torch.bincount(preds)
    length = torch.tensor([counts.numel()])
    dist.all_reduce(length, op=dist.ReduceOp.MAX)  # every rank learns the longest
    counts = F.pad(counts, (0, int(length.item()) - counts.numel()))
    dist.all_reduce(counts)
dist.destroy_process_group()
