# DDP506: per-class counts of the predictions, torch.bincount(preds) without minlength, all-reduced
# right after an unrelated small all-reduce (the loss total). The size is 1 + the largest class
# predicted in the local batch: here the early classifier predicts the same few classes on every
# rank (clamped, to keep the test exact), so the sizes agree at each
# step and change from step to step. Nothing exchanged the size: the loss all-reduce before it
# carries a loss, not a length. On real data the first step where two ranks' largest classes
# differ hangs the job (or gloo aborts). Fix: torch.bincount(preds, minlength=NUM_CLASSES).
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

NUM_CLASSES = 6
dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(8, NUM_CLASSES))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(10):
    g = torch.Generator().manual_seed(100 * step + dist.get_rank())  # each rank its own batch
    x = torch.randn(32, 8, generator=g)
    labels = torch.randint(0, NUM_CLASSES, (32,), generator=g)
    logits = model(x)
    loss = torch.nn.functional.cross_entropy(logits, labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    # Early in training the classifier predicts few classes; which ones follows the batch.
    preds = logits.detach().argmax(1).clamp(max=1 + step % 3)
    preds[0] = 1 + step % 3
    total = loss.detach().clone()
    dist.all_reduce(total)  # the loss total: small, but not a size
    counts = torch.bincount(preds)  # size = largest class predicted + 1
    dist.all_reduce(counts)
dist.destroy_process_group()
