# Stands for ultralytics/yolov5 5081342 train.py:376-416: accumulation to a nominal batch (backward
# through the AMP scaler every batch, optimizer step once enough batches were seen), no no_sync.
# The current rules report it (a true positive); keep it reported.
# expect: DDP805 warning line 26
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

dist.init_process_group("gloo")
net = DDP(torch.nn.Linear(4, 1))
optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
scaler = torch.cuda.amp.GradScaler(enabled=False)
data = TensorDataset(torch.randn(256, 4))
sampler = DistributedSampler(data, shuffle=True)
loader = DataLoader(data, batch_size=16, sampler=sampler)
nominal, batch_size = 64, 16
accumulate = max(round(nominal / batch_size), 1)
last_opt_step = -1
for epoch in range(3):
    sampler.set_epoch(epoch)
    for i, (x,) in enumerate(loader):
        ni = i + len(loader) * epoch
        with torch.autocast("cpu", enabled=False):
            loss = net(x).pow(2).mean()
        scaler.scale(loss).backward()
        if ni - last_opt_step >= accumulate:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
            last_opt_step = ni
