# Stands for kan-bayashi/ParallelWaveGAN dc592cc parallel_wavegan/bin/train.py:311,777 (the fix
# of issue #177): samplers are kept in a dict handed to a Trainer object, which calls
# set_epoch through its attribute at every epoch. The current rules accept it; keep it clean.
# expect: clean
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class Trainer:
    def __init__(self, loaders, samplers, epochs):
        self.loaders, self.samplers, self.epochs = loaders, samplers, epochs

    def run(self):
        for epoch in range(self.epochs):
            if self.samplers["train"] is not None:
                self.samplers["train"].set_epoch(epoch)
            for (x,) in self.loaders["train"]:
                pass


dist.init_process_group("gloo")
sets = {"train": TensorDataset(torch.randn(64, 4)), "dev": TensorDataset(torch.randn(16, 4))}
samplers = {"train": DistributedSampler(sets["train"], shuffle=True),
            "dev": DistributedSampler(sets["dev"], shuffle=False)}
loaders = {name: DataLoader(sets[name], batch_size=8, sampler=samplers[name]) for name in sets}
Trainer(loaders, samplers, epochs=3).run()
