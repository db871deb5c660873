# Stands for facebookresearch/dino 7c446df main_dino.py:323-342: backward and the optimizer step
# sit in both branches of `if fp16_scaler is None: ... else: ...` and both run every iteration:
# no accumulation, nothing for no_sync to save.
# expect: clean
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
student = DDP(torch.nn.Linear(4, 2))
optimizer = torch.optim.SGD(student.parameters(), lr=0.1)
fp16_scaler = None
for it in range(10):
    loss = student(torch.randn(8, 4)).pow(2).mean()
    optimizer.zero_grad()
    if fp16_scaler is None:
        loss.backward()
        torch.nn.utils.clip_grad_norm_(student.parameters(), 3.0)
        optimizer.step()
    else:
        fp16_scaler.scale(loss).backward()
        fp16_scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(student.parameters(), 3.0)
        fp16_scaler.step(optimizer)
        fp16_scaler.update()
