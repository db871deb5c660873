"""A healthy DDP job whose every backward computes for seconds with nothing to send until its
end, for `ddpdoctor attach` tests (started with plain torchrun, never by ddpdoctor):

    python -m torch.distributed.run --nproc-per-node 2 attach_long_backward.py ANY STEPS_FILE

The gradient of a matrix exponential costs about 14 times its forward (1280x1280: 0.5 s forward,
6.8 s backward on one core of the 2-core test machine), all of it in C++ under loss.backward().
Each rank appends "rank step" to STEPS_FILE as each backward starts, as attach_job.py does after
its steps.
"""

import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS_FILE = sys.argv[2]
N = 1280


class MatrixExp(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(n, n) / n ** 0.5)

    def forward(self, x):
        return torch.linalg.matrix_exp(self.weight + x)


dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(rank)
model = DDP(MatrixExp(N))
opt = torch.optim.SGD(model.parameters(), lr=1e-4)
step = 0
while True:
    loss = model(torch.randn(N, N) / 32).mean()
    with open(STEPS_FILE, "a") as handle:
        handle.write(f"{rank} {step}\n")
    loss.backward()
    opt.step()
    opt.zero_grad()
    step += 1
