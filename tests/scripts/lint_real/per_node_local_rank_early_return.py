# Stands for lucidrains/DALLE-pytorch 651a60e^ train_vae.py:98-107 (fixed in 651a60e, "Prevent
# parallel checkpoint writes"): the save helper returns early only where the LOCAL rank is above 0,
# so the first process of every node writes ./vae.pt; DeepSpeed sets up the process group (a job
# on several nodes: --nnodes).
# expect: DDP806 warning line 22
import argparse

import deepspeed
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int, default=-1)
parser.add_argument("--nnodes", type=int, default=1)  # several nodes
args = parser.parse_args()
deepspeed.init_distributed()
vae = torch.nn.Linear(4, 2)


def save_model(path):
    if args.local_rank > 0:
        return
    torch.save({"weights": vae.state_dict()}, path)


for epoch in range(2):
    save_model("./vae.pt")
