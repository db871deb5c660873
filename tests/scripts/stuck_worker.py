# Issue 34: a DataLoader worker of rank 1 blocks forever in __getitem__ (a lock never released),
# so rank 1 waits for its batch while rank 0 waits in the next gradient all-reduce. The hang is
# in the worker. `--healthy`: the worker does not block.
import os, sys, threading
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler

NEVER = threading.Event()


class Samples(Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, index):
        if os.environ.get("RANK") == "1" and index == 7 and "--healthy" not in sys.argv:
            NEVER.wait()  # the bug: waits for something that never comes
        generator = torch.Generator().manual_seed(index)
        return torch.randn(8, generator=generator), torch.randn(2, generator=generator)


def main():
    dist.init_process_group("gloo")
    data = Samples()
    loader = DataLoader(data, batch_size=2, num_workers=1, sampler=DistributedSampler(data, shuffle=False))
    model = DDP(torch.nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in loader:
        loss = (model(x) - y).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    dist.destroy_process_group()


main()
