# Issue 34: rank 0 evaluates through the DDP model (gradients on), then every rank meets at a
# barrier. The odd call is the forward: DDP broadcasts the BatchNorm buffers from rank 0 in it,
# so rank 0 waits in that broadcast while rank 1 waits in the barrier. `--healthy`: rank 0
# evaluates through model.module under no_grad (no collective).
import sys
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.BatchNorm1d(8), torch.nn.Linear(8, 2)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(4):
        loss = model(torch.randn(4, 8)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    if rank == 0:
        if "--healthy" in sys.argv:
            with torch.no_grad():
                print("val", model.module(torch.randn(4, 8)).mean().item())
        else:
            print("val", model(torch.randn(4, 8)).mean().item())
    dist.barrier()
    dist.destroy_process_group()


main()
