"""Broken: a collective that only rank 0 calls, hidden in a logging callback (ddpdoctor: DDP502/DDP501).

minGPT-style: a generic `Trainer` class with callbacks, and a script that configures it. The
logging callback averages the loss across ranks with `dist.all_reduce` so the printed number is
the global loss. Since only rank 0 prints, the callback is registered on rank 0 only. After
iteration 0 rank 0 enters that all_reduce (one float), while rank 1 runs on into iteration 1,
where DDP itself communicates: first the broadcast with which it rebuilds its gradient buckets
(in the forward), then the gradient all-reduce. The two ranks are now in different collectives.

Without ddpdoctor: the job goes silent. Rank 0 sits in the logging all_reduce and rank 1 inside
DDP's forward, nothing is printed, and after the process-group timeout (30 minutes on gloo) the
job dies with "Timed out waiting ... for recv operation to complete" (on NCCL: a watchdog
timeout). Depending on what the mismatched collectives are and their sizes, gloo can instead
abort with "gloo::EnforceNotMet ... Is there a distributed collective mismatch in your code?"
or return a wrong sum. Nothing points at the callback.

Fix: call collectives on every rank (register the callback everywhere and only *print* on rank 0),
or drop the all_reduce and log rank 0's local loss.

    torchrun --nproc-per-node 2 examples/desync_collective.py
"""

import os
from collections import defaultdict

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class AdditionDataset(Dataset):
    """a + b for two-digit numbers; input is the two numbers one-hot encoded, target is a + b."""

    def __init__(self, n=512, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.a = torch.randint(0, 50, (n,), generator=g)
        self.b = torch.randint(0, 50, (n,), generator=g)

    def __len__(self):
        return len(self.a)

    def __getitem__(self, i):
        x = torch.cat([F.one_hot(self.a[i], 50), F.one_hot(self.b[i], 50)]).float()
        return x, self.a[i] + self.b[i]


class Trainer:
    """A minimal, generic trainer in the spirit of minGPT's."""

    class Config:
        max_epochs = 3
        batch_size = 32
        learning_rate = 1e-3

    def __init__(self, config, model, train_dataset):
        self.config = config
        self.model = model
        self.train_dataset = train_dataset
        self.callbacks = defaultdict(list)
        self.iter_num = 0
        self.loss = None

    def add_callback(self, onevent, callback):
        self.callbacks[onevent].append(callback)

    def trigger_callbacks(self, onevent):
        for callback in self.callbacks.get(onevent, []):
            callback(self)

    def run(self):
        sampler = DistributedSampler(self.train_dataset, shuffle=True)
        loader = DataLoader(self.train_dataset, batch_size=self.config.batch_size, sampler=sampler)
        optimizer = torch.optim.AdamW(self.model.parameters(), lr=self.config.learning_rate)
        self.model.train()
        for epoch in range(self.config.max_epochs):
            sampler.set_epoch(epoch)
            for x, y in loader:
                logits = self.model(x)
                self.loss = F.cross_entropy(logits, y)
                self.model.zero_grad(set_to_none=True)
                self.loss.backward()
                optimizer.step()
                self.trigger_callbacks("on_batch_end")
                self.iter_num += 1
            self.trigger_callbacks("on_epoch_end")


# ------------------------------------------------------------------------------------------
dist.init_process_group("gloo")
rank = int(os.environ["RANK"])
world_size = int(os.environ["WORLD_SIZE"])

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(100, 96), nn.ReLU(), nn.Linear(96, 99))
model = DDP(model)

train_config = Trainer.Config()
trainer = Trainer(train_config, model, AdditionDataset())


def batch_end_callback(trainer):
    if trainer.iter_num % 5 == 0:
        # report the loss averaged over all ranks, not just rank 0's
        loss = trainer.loss.detach().clone()
        dist.all_reduce(loss)
        loss /= world_size
        print(f"iter {trainer.iter_num}: global train loss {loss.item():.5f}", flush=True)


if rank == 0:  # only rank 0 logs
    trainer.add_callback("on_batch_end", batch_end_callback)

trainer.run()
dist.destroy_process_group()
