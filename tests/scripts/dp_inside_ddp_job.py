# DDP404, written differently: DataParallel imported from torch.nn.parallel, wrapping a model
# that is then trained without DDP in a torchrun job.
import torch
import torch.distributed as dist
from torch.nn.parallel import DataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

dist.init_process_group("gloo")
ds = TensorDataset(torch.randn(256, 4), torch.randn(256, 1))
sampler = DistributedSampler(ds)
model = DataParallel(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(2):
    sampler.set_epoch(epoch)
    for x, y in DataLoader(ds, batch_size=16, sampler=sampler):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
dist.destroy_process_group()
