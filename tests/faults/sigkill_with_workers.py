# Rank 1 is killed with SIGKILL in the middle of a step (what the OOM killer does) while two
# DataLoader workers feed it: the workers are orphaned and must be found and reaped too.
# argv[1]: a directory where each worker writes its pid, so the test can check they are gone.
import os
import signal
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler

PIDS = sys.argv[1]


class Points(Dataset):
    def __len__(self):
        return 4096

    def __getitem__(self, index):
        g = torch.Generator().manual_seed(index)
        return torch.randn(8, generator=g), torch.randn(1, generator=g)


def note_worker(worker_id):
    with open(os.path.join(PIDS, f"worker-{os.getpid()}"), "w") as handle:
        handle.write(f"{dist.get_rank() if dist.is_initialized() else '?'} {worker_id}\n")


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    data = Points()
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=16, sampler=sampler, num_workers=2,
                        persistent_workers=True, worker_init_fn=note_worker)
    model = DDP(torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    step = 0
    for epoch in range(100):
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            if rank == 1 and step == 3:
                os.kill(os.getpid(), signal.SIGKILL)  # mid-step: after forward, before backward
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1


if __name__ == "__main__":
    main()
