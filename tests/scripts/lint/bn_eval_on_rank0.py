# DDP801, written differently: no explicit collective in the rank-0 branch. Rank 0 alone
# evaluates the *DDP-wrapped* model; its BatchNorm buffers make every DDP forward a broadcast,
# so rank 0's evaluation forward pairs with rank 1's next training forward and the ranks fall
# out of step (a hang or garbage). Evaluate `model.module` instead, or on every rank.
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                      nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


def accuracy(net, images, labels):
    net.eval()
    with torch.no_grad():
        correct = (net(images).argmax(1) == labels).float().mean().item()
    net.train()
    return correct


def main():
    dist.init_process_group("gloo")
    is_main = dist.get_rank() == 0
    ddp_net = DistributedDataParallel(ConvNet())
    opt = torch.optim.SGD(ddp_net.parameters(), lr=0.1)
    val_x, val_y = torch.randn(32, 1, 8, 8), torch.randint(0, 3, (32,))
    for it in range(20):
        opt.zero_grad()
        nn.functional.cross_entropy(ddp_net(torch.randn(16, 1, 8, 8)), torch.randint(0, 3, (16,))).backward()
        opt.step()
        if is_main and it % 5 == 4:
            print("val acc", accuracy(ddp_net, val_x, val_y))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
