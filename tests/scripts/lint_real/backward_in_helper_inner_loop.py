# Stands for mlfoundations/open_lm b6309a6^ open_lm/train.py:49,124-139 (fixed in b6309a6, PR #60):
# each batch is split into accum_freq chunks; every chunk's backward goes through a small helper
# and the optimizer steps once after the chunk loop, with no no_sync around the chunks.
# expect: DDP805 warning line 29
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def backward(total_loss, scaler):
    if scaler is not None:
        scaler.scale(total_loss).backward()
    else:
        total_loss.backward()


dist.init_process_group("gloo")
net = DDP(torch.nn.Linear(4, 1))
optimizer = torch.optim.AdamW(net.parameters(), lr=1e-3)
scaler = None
accum_freq = 4
for step in range(10):
    inputs = torch.randn(16, 4)
    per_chunk = inputs.shape[0] // accum_freq
    optimizer.zero_grad()
    for ii in range(accum_freq):
        chunk = inputs[ii * per_chunk:(ii + 1) * per_chunk]
        local_loss = net(chunk).pow(2).mean() / accum_freq
        backward(local_loss, scaler)
    if scaler is not None:
        scaler.step(optimizer)
        scaler.update()
    else:
        optimizer.step()
