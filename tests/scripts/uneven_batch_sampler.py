# Issue 34: a custom batch_sampler that shards by hand and keeps the remainder on rank 0, so
# rank 0 gets 4 batches and rank 1 gets 3: rank 0 waits in its last backward's all-reduce.
# The fix is in the sampler. `--healthy`: the sampler drops the remainder (3 batches each).
import sys
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Sampler, TensorDataset


class ContiguousBatches(Sampler):
    def __init__(self, size, batch, rank, world):
        share = size // world
        extra = 0 if "--healthy" in sys.argv else size % world  # the bug: rank 0 keeps the remainder
        start = 0 if rank == 0 else rank * share + extra
        end = (rank + 1) * share + extra
        self.indices, self.batch = list(range(start, end)), batch

    def __iter__(self):
        for i in range(0, len(self.indices), self.batch):
            yield self.indices[i:i + self.batch]

    def __len__(self):
        return (len(self.indices) + self.batch - 1) // self.batch


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    data = TensorDataset(torch.randn(13, 8), torch.randn(13, 2))
    loader = DataLoader(data, batch_sampler=ContiguousBatches(len(data), 2, rank, world))
    model = DDP(torch.nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in loader:
        loss = (model(x) - y).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    dist.barrier()
    dist.destroy_process_group()


main()
