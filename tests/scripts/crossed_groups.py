# Issue 34: a collective done in opposite order over two process groups. Rank 0 reduces its
# metrics on group A then group B, rank 1 on B then A: each waits in its first for the other.
# `--healthy`: every rank reduces A then B.
import sys
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    group_a = dist.new_group([0, 1])
    group_b = dist.new_group([0, 1])
    torch.manual_seed(rank)
    model = DDP(torch.nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(4):
        loss = model(torch.randn(4, 8)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        first, second = (group_a, group_b) if rank == 0 or "--healthy" in sys.argv else (group_b, group_a)
        dist.all_reduce(loss.detach(), group=first)
        dist.all_reduce(loss.detach(), group=second)
    dist.destroy_process_group()


main()
