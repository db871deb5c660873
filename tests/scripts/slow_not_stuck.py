"""Healthy but slow in places, or stuck in the user's own code (issue 28: slow is not stuck).

    --startup S          every rank prepares its data for S seconds after init_process_group
                         (sleeping, as reading shards or waiting on a download does)
    --pause S --at N     every rank pauses S seconds after step N (an evaluation pass, an upload)
    --pause S --at N --only R   only rank R pauses: the others wait for it in the gradient all-reduce
    --poll               every rank polls for a file that never appears, before its first step

Healthy runs PASS with the time shown; one pausing rank is a straggler the others wait for; the
endless poll is ended by --timeout as incomplete, never a pass and never a hang.
"""

import argparse
import os
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--startup", type=float, default=0.0)
parser.add_argument("--pause", type=float, default=0.0)
parser.add_argument("--at", type=int, default=10)
parser.add_argument("--only", type=int, default=None)
parser.add_argument("--poll", action="store_true")
parser.add_argument("--steps", type=int, default=20)
args = parser.parse_args()


def load_dataset(seconds):
    time.sleep(seconds)
    g = torch.Generator().manual_seed(dist.get_rank())
    return torch.randn(64, 16, generator=g)


def wait_for_shards():
    marker = os.path.join(tempfile.gettempdir(), "ddpdoctor-shards-that-never-come.ready")
    while not os.path.exists(marker):
        time.sleep(0.5)


def evaluate(seconds):
    time.sleep(seconds)


dist.init_process_group("gloo")
rank = dist.get_rank()
if args.poll:
    wait_for_shards()
data = load_dataset(args.startup)
torch.manual_seed(0)
model = DDP(nn.Linear(16, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(1, args.steps + 1):
    x = data[(step * 8) % 64:(step * 8) % 64 + 8]
    loss = F.cross_entropy(model(x), (x[:, 0] > 0).long())
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step == args.at and args.pause and args.only in (None, rank):
        evaluate(args.pause)
dist.destroy_process_group()
