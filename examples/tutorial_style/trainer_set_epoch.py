"""A Trainer written for GPUs with both device APIs (torch.cuda for the checks, torch.accelerator
for the device), a batch peek before each epoch, a snapshot every `--save-every` epochs, and
sampler.set_epoch called the way `--set-epoch` says:

    before    set_epoch(epoch) before the epoch's loop: healthy
    never     never called: every epoch replays epoch 0's order (ddpdoctor: DDP302)
    after     called after the epoch's loop: epochs 0 and 1 share one order (DDP302)
    constant  set_epoch(0) every epoch (DDP302)

    torchrun --nproc-per-node 2 examples/tutorial_style/trainer_set_epoch.py --set-epoch never
"""

import argparse
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class Trainer:
    def __init__(self, args):
        assert torch.cuda.is_available(), "this example needs GPUs"
        self.rank = int(os.environ["LOCAL_RANK"])
        self.device = torch.device(torch.accelerator.current_accelerator().type, self.rank)
        torch.cuda.set_device(self.device)
        dist.init_process_group("nccl")
        g = torch.Generator().manual_seed(0)
        data = TensorDataset(torch.randn(1024, 16, generator=g), torch.randint(0, 3, (1024,), generator=g))
        self.sampler = DistributedSampler(data, shuffle=True, seed=5)
        self.loader = DataLoader(data, batch_size=32, sampler=self.sampler, num_workers=0)
        self.model = DDP(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 3)).to(self.device),
                         device_ids=[self.rank])
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.05)
        self.mode = args.set_epoch
        self.first_epoch = 0
        self.save_every = args.save_every
        self.snapshot = os.path.join(tempfile.gettempdir(), f"ddpdoctor_trainer_{os.getpid()}.pt")

    def run_epoch(self, epoch):
        x, _ = next(iter(self.loader))  # peek: how big are the batches?
        if self.rank == 0:
            print(f"epoch {epoch}: batch size {len(x)}, {len(self.loader)} steps")
        if self.mode == "before":
            self.sampler.set_epoch(epoch)
        elif self.mode == "constant":
            self.sampler.set_epoch(self.first_epoch)
        for x, y in self.loader:
            x, y = x.to(self.device, non_blocking=True), y.to(self.device, non_blocking=True)
            loss = nn.functional.cross_entropy(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
        if self.mode == "after":
            self.sampler.set_epoch(epoch)
        torch.cuda.synchronize()

    def fit(self, epochs):
        for epoch in range(epochs):
            self.run_epoch(epoch)
            if self.rank == 0 and epoch % self.save_every == 0:
                torch.save({"model": self.model.module.state_dict(), "epoch": epoch}, self.snapshot)
        dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--set-epoch", choices=["before", "never", "after", "constant"], default="before")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--save-every", type=int, default=2)
    Trainer(parser.parse_args()).fit(parser.parse_args().epochs)
