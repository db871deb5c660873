# Issue 34: the model is cast to another dtype after DDP wrapped it, so DDP's gradient
# all-reduce never runs and each rank trains its own model. `--healthy`: cast, then wrap.
import sys
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)
    net = torch.nn.Linear(8, 2)
    if "--healthy" in sys.argv:
        model = DDP(net.double())
    else:
        model = DDP(net)
        model.double()  # the bug: after wrapping
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(6):
        loss = model(torch.randn(4, 8, dtype=torch.float64)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    dist.destroy_process_group()


main()
