# Issue 34: an error on one rank swallowed by the cleanup in `finally`. Rank 1 raises at step 3;
# its finally enters the barrier while rank 0 trains on into step 3's all-reduce, so the job
# hangs and the error never leaves the script. `--healthy`: nobody raises (the twin).
import sys
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train(model, opt, rank):
    for step in range(8):
        x = torch.randn(4, 8)
        if rank == 1 and step == 3 and "--healthy" not in sys.argv:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        loss = model(x).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    try:
        train(model, opt, dist.get_rank())
    finally:
        dist.barrier()
        dist.destroy_process_group()


main()
