# Stands for kan-bayashi/ParallelWaveGAN dc592cc parallel_wavegan/bin/train.py:130,292-295,913:
# periodic checkpoints are written by rank 0 only, but the KeyboardInterrupt handler saves on
# every rank (the launcher forwards SIGINT to all of them), all to the same path. The current
# rules report it; keep it reported.
# expect: DDP806 warning line 17
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, net, rank):
        self.net, self.rank, self.steps = net, rank, 0

    def save_checkpoint(self, path):
        state = {"model": self.net.module.state_dict(), "steps": self.steps}
        torch.save(state, path)

    def run(self, total):
        while self.steps < total:
            self.steps += 1
            if self.rank == 0 and self.steps % 100 == 0:
                self.save_checkpoint(f"checkpoint-{self.steps}steps.pkl")


dist.init_process_group("gloo")
trainer = Trainer(DDP(torch.nn.Linear(4, 2)), dist.get_rank())
try:
    trainer.run(1000)
except KeyboardInterrupt:
    trainer.save_checkpoint(f"checkpoint-{trainer.steps}steps.pkl")
