# DDP305: every rank draws the same random augmentation. The ranks read different samples (a
# DistributedSampler), but their DataLoader workers start from the same random state: torch is
# seeded alike on every rank (the workers' base seed comes from it) and the worker_init_fn seeds
# numpy and `random` from one global seed and the worker id, without the rank. So the k-th
# sample of every rank gets the same flip and the same noise.
#
#     same_augmentation.py global|per_rank NUM_WORKERS
#
# per_rank is the healthy twin: the seed includes the rank, in the script and in the workers.
import random
import sys

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler

MODE, WORKERS = sys.argv[1], int(sys.argv[2])
SEED = 1234


class Augmented(Dataset):
    def __init__(self):
        g = torch.Generator().manual_seed(0)
        self.x, self.y = torch.randn(48, 6, generator=g), torch.randn(48, 1, generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        x = self.x[i]
        if np.random.rand() < 0.5:  # a random flip
            x = x.flip(0)
        x = x + 0.01 * torch.randn(6)  # random noise
        return x * random.uniform(0.9, 1.1), self.y[i]


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    offset = rank if MODE == "per_rank" else 0

    def seed_worker(worker_id):
        # The bug: no rank term in the global mode.
        np.random.seed(SEED + 1000 * offset + worker_id)
        random.seed(SEED + 1000 * offset + worker_id)

    torch.manual_seed(SEED + offset)
    np.random.seed(SEED + offset)
    random.seed(SEED + offset)
    dataset = Augmented()
    sampler = DistributedSampler(dataset, shuffle=True, seed=SEED)
    loader = DataLoader(dataset, batch_size=4, sampler=sampler, num_workers=WORKERS,
                        worker_init_fn=seed_worker if WORKERS else None)
    model = DDP(torch.nn.Linear(6, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for inputs, targets in loader:
            opt.zero_grad()
            F.mse_loss(model(inputs), targets).backward()
            opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
