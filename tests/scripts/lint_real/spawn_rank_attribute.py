# Stands for pytorch/examples 77f55b9 distributed/ddp-tutorial-series/multigpu.py: mp.spawn hands
# each process its rank, the trainer keeps it as an attribute, and only the process whose
# attribute is 0 saves. The save is rank-0-only.
# expect: clean
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


class Runner:
    def __init__(self, net, device_index, every):
        self.device_index = device_index
        self.every = every
        self.net = DDP(net)

    def snapshot(self, epoch):
        torch.save(self.net.module.state_dict(), "snapshot.pt")

    def fit(self, epochs):
        for epoch in range(epochs):
            if self.device_index == 0 and epoch % self.every == 0:
                self.snapshot(epoch)


def worker(proc_rank, nprocs):
    dist.init_process_group("gloo", rank=proc_rank, world_size=nprocs)
    Runner(torch.nn.Linear(4, 2), proc_rank, every=2).fit(4)


if __name__ == "__main__":
    mp.spawn(worker, args=(2,), nprocs=2)
