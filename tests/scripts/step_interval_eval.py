"""Healthy, with its evaluation and checkpoint on a step interval (nanoGPT-like, no DataLoader):
`if step > 0 and step % args.eval_interval == 0:` - at the default interval of 50 a short probe
never gets there; `-- --eval-interval 2` brings it within the probe's steps. Also resumes from
a checkpoint when --resume names one (never by default: the load path stays unreached)."""

import argparse
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--eval-interval", type=int, default=50)
parser.add_argument("--max-iters", type=int, default=200)
parser.add_argument("--resume", default="")
args = parser.parse_args()

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
if args.resume:
    model.load_state_dict(torch.load(args.resume))
ddp = DDP(model)
opt = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
gen = torch.Generator().manual_seed(rank)
ckpt = os.path.join(tempfile.gettempdir(), "ddpdoctor-step-interval-eval.pt")


def get_batch():
    x = torch.randn(8, 16, generator=gen)
    return x, (x[:, 0] > 0).long()


@torch.no_grad()
def evaluate():
    ddp.eval()
    x, y = get_batch()
    loss = F.cross_entropy(ddp(x), y)
    ddp.train()
    return loss.item()


for step in range(args.max_iters):
    if step > 0 and step % args.eval_interval == 0:
        val = evaluate()
        if rank == 0:
            torch.save(model.state_dict(), ckpt)
            print(f"step {step}: val loss {val:.3f}", flush=True)
    x, y = get_batch()
    loss = F.cross_entropy(ddp(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
dist.destroy_process_group()
