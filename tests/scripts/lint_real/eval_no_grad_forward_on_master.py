# Stands for karpathy/llama2.c 350e04fe train.py:221-262: at the top of each iteration the master
# process alone estimates the loss through the DDP-wrapped model (its module holds rotary-table
# buffers), in a function decorated @torch.no_grad(). With gradients off DDP broadcasts the
# buffers once, in the first forward after a training step, so rank 0's broadcast pairs with the
# other ranks' next training forward: it never hung there (checked with two gloo ranks), but any
# collective the others reached first would. A warning, not an error.
# expect: DDP801 warning line 32
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Rotary(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)
        self.register_buffer("freqs", torch.ones(8), persistent=False)

    def forward(self, x):
        return self.proj(x) * self.freqs


dist.init_process_group("gloo")
master = dist.get_rank() == 0
model = DDP(Rotary())
opt = torch.optim.AdamW(model.parameters())


@torch.no_grad()
def estimate_loss():
    model.eval()
    losses = [model(torch.randn(4, 8)).pow(2).mean() for _ in range(3)]
    model.train()
    return sum(losses) / len(losses)


for it in range(100):
    if it % 10 == 0 and master:
        print(it, float(estimate_loss()))
    model(torch.randn(4, 8)).pow(2).mean().backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
