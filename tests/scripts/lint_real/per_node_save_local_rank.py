# Stands for pytorch/examples 5cc81aa^ distributed/ddp-tutorial-series/multinode.py:68-74 (fixed in
# 5cc81aa, PR #1357): a multi-node trainer saves where LOCAL_RANK == 0, i.e. one process per node,
# every node writing the same path (it reads NNODES: a job on several nodes). The fix tests the
# global rank.
# expect: DDP806 warning line 23
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Runner:
    def __init__(self, net, every):
        self.local_rank = int(os.environ["LOCAL_RANK"])
        self.global_rank = int(os.environ["RANK"])
        self.nnodes = int(os.environ.get("NNODES", 1))  # several nodes
        self.every = every
        self.net = DDP(net)

    def snapshot(self, epoch):
        state = {"MODEL_STATE": self.net.module.state_dict(), "EPOCHS_RUN": epoch}
        torch.save(state, "snapshot.pt")

    def fit(self, epochs):
        for epoch in range(epochs):
            if self.local_rank == 0 and epoch % self.every == 0:
                self.snapshot(epoch)


dist.init_process_group("gloo")
Runner(torch.nn.Linear(4, 2), every=2).fit(4)
