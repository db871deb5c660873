# Stands for karpathy/build-nanogpt f6d194b^ train_gpt2.py:488-499 (fixed in f6d194b): the
# accumulation loop sets `require_backward_grad_sync` AFTER the forward, but DDP reads it in the
# forward: the all-reduce happens on micro-step 0 and not on the last one.
# expect: DDP805 warning line 19
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
net = DDP(torch.nn.Linear(4, 1))
optimizer = torch.optim.AdamW(net.parameters(), lr=1e-3)
grad_accum_steps = 4
for step in range(10):
    optimizer.zero_grad()
    for micro_step in range(grad_accum_steps):
        x = torch.randn(8, 4)
        out = net(x)
        loss = out.pow(2).mean() / grad_accum_steps
        net.require_backward_grad_sync = (micro_step == grad_accum_steps - 1)
        loss.backward()
    optimizer.step()
