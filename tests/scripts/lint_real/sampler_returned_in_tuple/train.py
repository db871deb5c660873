# Stands for facebookresearch/ijepa 52c1ae95 src/datasets/imagenet1k.py:48 and src/train.py:192-271:
# the data helper builds the DistributedSampler and returns it third in a tuple; the training
# script unpacks it under another name and calls set_epoch on that name every epoch.
# expect: clean
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import TensorDataset

from data import make_shards

dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
_, loader, unsupervised_sampler = make_shards(TensorDataset(torch.randn(64, 4)), dist.get_world_size(),
                                              dist.get_rank(), 8)
for epoch in range(3):
    unsupervised_sampler.set_epoch(epoch)
    for (x,) in loader:
        model(x).sum().backward()
        opt.step()
        opt.zero_grad()
