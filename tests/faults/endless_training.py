# Trains for ever (run it with --max-steps 0), fed by two DataLoader workers per rank: for
# SIGINT, SIGTERM, --timeout and a killed ddpdoctor, each of which must end the workers too.
# Five steps a second: training all the same to the watchdog, and little CPU for the tests that
# let it run for tens of seconds on a machine shared with the rest of the suite.
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

dist.init_process_group("gloo")
data = TensorDataset(torch.randn(4096, 16), torch.randn(4096, 1))
sampler = DistributedSampler(data)
loader = DataLoader(data, batch_size=32, sampler=sampler, num_workers=2, persistent_workers=True)
model = DDP(torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
epoch = 0
while True:
    sampler.set_epoch(epoch)
    for x, y in loader:
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        time.sleep(0.2)
    epoch += 1
