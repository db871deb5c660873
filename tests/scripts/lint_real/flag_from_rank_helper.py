# Stands for mlfoundations/open_clip 89fb801 src/open_clip_train/main.py (and mlfoundations/open_lm
# b6309a6 open_lm/main.py): a logging flag is computed from a rank helper, and checkpoints are
# written under that flag only.
# expect: clean
import argparse

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def is_leader(opts):
    return opts.rank == 0


opts = argparse.Namespace(logs="runs")
dist.init_process_group("gloo")
opts.rank = dist.get_rank()
opts.write_logs = opts.logs and opts.logs.lower() != "none" and is_leader(opts)
net = DDP(torch.nn.Linear(4, 2))
for epoch in range(2):
    if opts.write_logs:
        torch.save({"epoch": epoch, "state": net.state_dict()}, f"runs/epoch_{epoch}.pt")
