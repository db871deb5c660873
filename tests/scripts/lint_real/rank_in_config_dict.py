# Stands for kan-bayashi/ParallelWaveGAN dc592cc parallel_wavegan/bin/train.py:292-295: the rank
# is kept in the config dict and tested as `self.config["rank"] == 0` before the periodic save.
# (There the value is the launcher's --local_rank, one node; here the global rank, to isolate the
# subscripted rank test.)
# expect: clean
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, net, config):
        self.net, self.config, self.steps = net, config, 0

    def save_checkpoint(self, path):
        torch.save({"model": self.net.module.state_dict(), "steps": self.steps}, path)

    def run(self, total):
        while self.steps < total:
            self.steps += 1
            if self.config["rank"] == 0:
                if self.steps % self.config["save_interval_steps"] == 0:
                    self.save_checkpoint(f"checkpoint-{self.steps}steps.pkl")


dist.init_process_group("gloo")
config = {"save_interval_steps": 100}
config["rank"] = dist.get_rank()
Trainer(DDP(torch.nn.Linear(4, 2)), config).run(1000)
