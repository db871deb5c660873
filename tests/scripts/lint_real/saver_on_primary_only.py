# Stands for huggingface/pytorch-image-models aa4b585 train.py + timm/utils/checkpoint_saver.py:
# the checkpoint writer object exists on the primary rank only (None elsewhere) and every save
# goes through `if writer is not None`.
# expect: clean
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Keeper:
    def __init__(self, folder):
        self.folder = folder

    def keep(self, net, epoch):
        torch.save(net.state_dict(), f"{self.folder}/last.pth")


def primary():
    return dist.get_rank() == 0


dist.init_process_group("gloo")
net = DDP(torch.nn.Linear(4, 2))
writer = None
if primary():
    writer = Keeper("out")
for epoch in range(3):
    if writer is not None:
        writer.keep(net.module, epoch)
