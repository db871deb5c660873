# DDP405, found before the run as DDP810: the step's forward calls the module the DDP wrapper
# holds (`model.module.features(x)`), so DDP's reducer is never prepared, the backward all-reduces
# nothing, and each rank steps on its own batch's gradients: the replicas drift apart.
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(5, 1)

    def features(self, x):
        return self.body(x)


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = DDP(Net())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(1 + dist.get_rank())  # each rank its own batches
    for _ in range(6):
        opt.zero_grad()
        loss = model.module.features(torch.randn(4, 5)).pow(2).mean()
        loss.backward()  # bug: all-reduces nothing
        opt.step()
    dist.destroy_process_group()


main()
