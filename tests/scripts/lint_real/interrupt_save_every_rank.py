# Stands for kan-bayashi/ParallelWaveGAN dc592cc parallel_wavegan/bin/train.py:130,292-295,905-915:
# periodic checkpoints are written by rank 0 only, but main()'s KeyboardInterrupt handler saves on
# every rank (the launcher forwards SIGINT to all of them), all to the same path. The current
# rules report it; keep it reported.
# expect: DDP806 warning line 19
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, net, outdir):
        self.net, self.outdir, self.steps = net, outdir, 0

    def save_checkpoint(self, path):
        state = {"model": self.net.module.state_dict(), "steps": self.steps}
        torch.save(state, path)

    def run(self, total):
        while self.steps < total:
            self.steps += 1
            if dist.get_rank() == 0 and self.steps % 100 == 0:
                self.save_checkpoint(os.path.join(self.outdir, f"checkpoint-{self.steps}steps.pkl"))


def main():
    dist.init_process_group("gloo")
    trainer = Trainer(DDP(torch.nn.Linear(4, 2)), "exp")
    try:
        trainer.run(1000)
    except KeyboardInterrupt:
        trainer.save_checkpoint(os.path.join("exp", f"checkpoint-{trainer.steps}steps.pkl"))


if __name__ == "__main__":
    main()
