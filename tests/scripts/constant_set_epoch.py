# DDP302, written differently: set_epoch IS called, but with a constant, inside a Trainer class.
import os
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset, DistributedSampler


class Trainer:
    def __init__(self):
        dist.init_process_group("gloo")
        g = torch.Generator().manual_seed(3)
        self.data = TensorDataset(torch.randn(512, 10, generator=g), torch.randn(512, 1, generator=g))
        self.sampler = DistributedSampler(self.data, shuffle=True, seed=42)
        self.loader = DataLoader(self.data, batch_size=16, sampler=self.sampler)
        self.model = DistributedDataParallel(torch.nn.Linear(10, 1))
        self.opt = torch.optim.Adam(self.model.parameters(), 1e-3)

    def fit(self, epochs):
        for epoch in range(epochs):
            self.sampler.set_epoch(0)  # bug: the epoch never changes
            for x, y in self.loader:
                self.opt.zero_grad()
                torch.nn.functional.mse_loss(self.model(x), y).backward()
                self.opt.step()


if __name__ == "__main__":
    Trainer().fit(4)
    dist.destroy_process_group()
