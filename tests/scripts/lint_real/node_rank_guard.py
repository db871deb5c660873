# Stands for Spijkervet/SimCLR de910ae main.py:53-54,136 + model.py:40: `args.nr` is the NODE
# rank (the process rank is nr * gpus + gpu), the same on every process of node 0, so each of them
# writes the same checkpoint. The current rules report this one; keep it reported.
# expect: DDP806 warning line 14
import argparse

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def save_model(args, net):
    torch.save(net.state_dict(), f"{args.model_path}/checkpoint_{args.current_epoch}.tar")


def main(gpu, args):
    rank = args.nr * args.gpus + gpu
    dist.init_process_group("gloo", rank=rank, world_size=args.world_size)
    net = DDP(torch.nn.Linear(4, 2))
    for epoch in range(args.epochs):
        args.current_epoch = epoch
        if args.nr == 0 and epoch % 10 == 0:
            save_model(args, net)


if __name__ == "__main__":
    args = argparse.Namespace(nr=0, gpus=2, world_size=4, epochs=20, model_path="out")
    mp.spawn(main, args=(args,), nprocs=args.gpus)
