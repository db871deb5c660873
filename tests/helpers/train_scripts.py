"""Training scripts that several tests write to a temp dir and probe."""

# Trains for about five seconds after start-up, saying so on every step.
SLOW_TRAIN = '''
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(12):
    opt.zero_grad()
    loss = model(torch.randn(16, 8)).pow(2).mean()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.4f}", flush=True)
    time.sleep(0.4)
print("training done", flush=True)
dist.destroy_process_group()
'''
