"""Broken, in the style of pytorch/examples imagenet/main.py (ddpdoctor: DDP301).

The script starts its own ranks with mp.spawn and computes each rank as
node_rank * ngpus_per_node + gpu, with a tcp:// rendezvous; it is run as `python script.py`,
not under torchrun. The author forgot the DistributedSampler, so every rank trains on the whole
dataset in the same order: N GPUs do the work of one.

    python examples/spawn/imagenet_style_no_sampler.py --dist-url tcp://127.0.0.1:23456
"""

import argparse

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset

parser = argparse.ArgumentParser(description="ImageNet-style training (synthetic data)")
parser.add_argument("--epochs", default=3, type=int)
parser.add_argument("-b", "--batch-size", default=16, type=int)
parser.add_argument("--lr", default=0.05, type=float)
parser.add_argument("--world-size", default=1, type=int, help="number of nodes")
parser.add_argument("--rank", default=0, type=int, help="node rank")
parser.add_argument("--dist-url", default="tcp://127.0.0.1:23456", type=str)
parser.add_argument("--gpus-per-node", default=2, type=int, help="processes per node on CPU")


class FakeImages(Dataset):
    def __init__(self, n=512):
        g = torch.Generator().manual_seed(7)
        self.images = torch.randn(n, 3, 8, 8, generator=g)
        self.labels = torch.randint(0, 10, (n,), generator=g)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.images[i], self.labels[i]


def main_worker(gpu, ngpus_per_node, args):
    args.rank = args.rank * ngpus_per_node + gpu
    dist.init_process_group(backend="gloo", init_method=args.dist_url,
                            world_size=args.world_size, rank=args.rank)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten(), nn.Linear(8, 10))
    model = DistributedDataParallel(model)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), args.lr, momentum=0.9)
    train_loader = DataLoader(FakeImages(), batch_size=args.batch_size, shuffle=True)
    for epoch in range(args.epochs):
        for images, target in train_loader:
            loss = criterion(model(images), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if args.rank == 0:
            print(f"epoch {epoch} loss {loss.item():.3f}", flush=True)
    dist.destroy_process_group()


def main():
    args = parser.parse_args()
    ngpus_per_node = args.gpus_per_node
    args.world_size = ngpus_per_node * args.world_size
    mp.spawn(main_worker, nprocs=ngpus_per_node, args=(ngpus_per_node, args))


if __name__ == "__main__":
    main()
