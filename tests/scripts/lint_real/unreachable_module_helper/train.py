# Stands for mlfoundations/open_clip 89fb801 (open_clip/push_to_hf_hub.py) and
# huggingface/pytorch-image-models aa4b585 (timm/models/_hub.py, repghost.py): the training
# script imports a package module that also holds export helpers and a `__main__` block; none of
# their torch.save calls is reached from this script, which saves on rank 0.
# expect: clean
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from hub import build_net

dist.init_process_group("gloo")
net = DDP(build_net())
if dist.get_rank() == 0:
    torch.save(net.module.state_dict(), "final.pt")
