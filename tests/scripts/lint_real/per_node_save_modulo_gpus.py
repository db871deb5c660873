# Stands for pytorch/examples 77f55b9 imagenet/main.py:297-299,430 (and facebookresearch/moco
# 3b42c2a main_moco.py:442; reported as pytorch/examples issue #655, moco issue #83): with one
# process per GPU on several nodes, `rank % ngpus_per_node == 0` holds on the first process of
# EVERY node, so each node writes the same checkpoint file.
# expect: DDP806 warning line 15
import argparse

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def save_checkpoint(state, filename="checkpoint.pth.tar"):
    torch.save(state, filename)


def worker(gpu, ngpus_per_node, args):
    args.rank = args.node_rank * ngpus_per_node + gpu
    dist.init_process_group("gloo", rank=args.rank, world_size=args.world_size)
    net = DDP(torch.nn.Linear(4, 2))
    for epoch in range(args.epochs):
        if not args.multiprocessing_distributed or args.rank % ngpus_per_node == 0:
            save_checkpoint({"epoch": epoch + 1, "state_dict": net.state_dict()})


if __name__ == "__main__":
    args = argparse.Namespace(node_rank=0, world_size=4, epochs=2, multiprocessing_distributed=True)
    mp.spawn(worker, nprocs=2, args=(2, args))
