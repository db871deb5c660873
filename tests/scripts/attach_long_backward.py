"""A healthy DDP job whose every backward computes for seconds with nothing to send until its
end, for `ddpdoctor attach` tests (plain `torchrun --nproc-per-node 2 attach_long_backward.py ANY
STEPS_FILE`, never ddpdoctor). A matrix exponential's gradient costs ~14x its forward, all in C++;
its time depends on the machine (6.8 s on a loaded core, 1 s idle), so each rank times one and sums
as many as last BACKWARD_S: a 2 s attach window lies inside a backward anywhere. Each rank appends
"rank step" to STEPS_FILE as each backward starts. (Tests name line 41: the backward.)"""
import math, sys, time  # noqa: E401

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS_FILE, N, BACKWARD_S = sys.argv[2], 1280, 10.0


def terms_for(seconds: float) -> int:
    """How many exponentials one backward must go through to last `seconds` here."""
    weight, started = (torch.randn(N, N) / N ** 0.5).requires_grad_(), time.perf_counter()
    torch.linalg.matrix_exp(weight).mean().backward()
    return max(1, math.ceil(seconds / max(time.perf_counter() - started, 1e-3)))


class MatrixExp(torch.nn.Module):
    def __init__(self, n, terms):
        super().__init__()
        self.weight, self.terms = torch.nn.Parameter(torch.randn(n, n) / n ** 0.5), terms

    def forward(self, x):
        return sum(torch.linalg.matrix_exp(self.weight + x * (k + 1) / self.terms) for k in range(self.terms))


dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(rank)
model, step = DDP(MatrixExp(N, terms_for(BACKWARD_S))), 0
opt = torch.optim.SGD(model.parameters(), lr=1e-4)
while True:
    loss = model(torch.randn(N, N) / 32).mean()
    with open(STEPS_FILE, "a") as handle:
        handle.write(f"{rank} {step}\n")
    loss.backward()
    opt.step()
    opt.zero_grad()
    step += 1
