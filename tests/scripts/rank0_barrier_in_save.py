# DDP502, written differently: the barrier meant to wait for the checkpoint sits inside the
# rank-0 branch, so rank 0 waits alone while rank 1 trains on into the next step's all-reduce.
import os, tempfile
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def save_checkpoint(model, epoch):
    if dist.get_rank() == 0:
        torch.save(model.module.state_dict(), os.path.join(tempfile.gettempdir(), f"ddpdoctor-test-ep{epoch}.pt"))
        dist.barrier()  # bug: only rank 0 reaches it


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(5, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(10):
        for _ in range(3):
            opt.zero_grad()
            model(torch.randn(4, 5)).sum().backward()
            opt.step()
        save_checkpoint(model, epoch)


main()
