"""DDP with a gradient-compression comm hook (fp16_compress_hook, or PowerSGD): ddpdoctor must
pass it clean, with the hook's all-reduces timed as the gradient buckets.

Launch:
    torchrun --nproc-per-node 2 examples/comm_hook_fp16.py                  # fp16_compress_hook
    torchrun --nproc-per-node 2 examples/comm_hook_fp16.py --hook powersgd  # PowerSGD, rank 2

The hook replaces DDP's bucket all-reduce: fp16_compress_hook halves the bytes on the wire,
PowerSGD sends two low-rank factors (after a few plain all-reduce steps). The probe wraps the
user's hook to time each bucket, and records the all-reduces the hook itself issues with via
"comm_hook" (their sizes follow the buckets, not the data).
"""

import argparse

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powersgd
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hook", choices=["fp16", "powersgd"], default="fp16")
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    torch.manual_seed(0)
    # fp16: two buckets (0.25 MB each). PowerSGD: one bucket: on gloo, PowerSGD issues each
    # bucket's second all-reduce from the first one's completion callback, on gloo's worker
    # threads, so with several buckets the ranks can issue them in different orders (a hang, or
    # gloo aborts: ddpdoctor reports DDP501 + DDP503 then).
    model = DDP(nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                              nn.Linear(256, 4)), bucket_cap_mb=0.25 if args.hook == "fp16" else 25)
    if args.hook == "fp16":
        model.register_comm_hook(state=None, hook=default_hooks.fp16_compress_hook)
    else:
        state = powersgd.PowerSGDState(process_group=None, matrix_approximation_rank=2,
                                       start_powerSGD_iter=3)
        model.register_comm_hook(state, powersgd.powerSGD_hook)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    g = torch.Generator().manual_seed(1)
    x = torch.randn(1024, 32, generator=g)
    data = TensorDataset(x, (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long())
    sampler = DistributedSampler(data, shuffle=True, seed=0)
    loader = DataLoader(data, batch_size=32, sampler=sampler)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for xb, yb in loader:
            optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            optimizer.step()
        if dist.get_rank() == 0:
            print(f"epoch {epoch} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
