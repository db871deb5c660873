# DDP302, written differently: no DataLoader lives across epochs. train_one_epoch() builds its
# own DistributedSampler and DataLoader each call and never calls set_epoch, so every epoch's
# sampler starts at epoch 0 and deals epoch 0's order again.
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def train_one_epoch(model, opt, dataset):
    sampler = DistributedSampler(dataset, shuffle=True)  # bug: a fresh sampler, set_epoch never called
    for inputs, targets in DataLoader(dataset, batch_size=8, sampler=sampler):
        opt.zero_grad()
        F.mse_loss(model(inputs), targets).backward()
        opt.step()


def main():
    dist.init_process_group("gloo")
    g = torch.Generator().manual_seed(0)
    dataset = TensorDataset(torch.randn(64, 6, generator=g), torch.randn(64, 1, generator=g))
    model = DDP(torch.nn.Linear(6, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for _epoch in range(3):
        train_one_epoch(model, opt, dataset)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
