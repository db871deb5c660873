# DDP701, written differently: a Trainer saves f"ckpt-{epoch}.pt" from every rank.
import os, tempfile
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, out_dir):
        self.out_dir = out_dir
        self.model = DDP(torch.nn.Linear(4, 2))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def save_checkpoint(self, epoch):
        torch.save({"model": self.model.module.state_dict(), "epoch": epoch},
                   os.path.join(self.out_dir, f"ckpt-{epoch}.pt"))

    def train(self, epochs):
        for epoch in range(epochs):
            for _ in range(4):
                self.opt.zero_grad()
                self.model(torch.randn(8, 4)).pow(2).mean().backward()
                self.opt.step()
            self.save_checkpoint(epoch)


if __name__ == "__main__":
    dist.init_process_group("gloo")
    out = os.path.join(tempfile.gettempdir(), "ddpdoctor-test-ckpts")
    os.makedirs(out, exist_ok=True)
    Trainer(out).train(3)
