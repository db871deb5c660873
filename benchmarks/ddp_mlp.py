"""The training script both probe benchmarks run: a plain DDP MLP on in-memory data.

It times its own steps, the same way with and without ddpdoctor: wall time (perf_counter) and
the CPU time of the whole process (process_time: every thread, gloo's included), and rank 0
writes them to --out as JSON: {"step_s": [...], "cpu_s": [...], "params": N}.

    torchrun --nproc-per-node 2 benchmarks/ddp_mlp.py --steps 40 --out /tmp/steps.json

The default model has about 10M parameters (1024 -> 2048 -> 2048 -> 1024 -> 1024 -> 10).
--python-hook registers a plain Python all-reduce comm hook (exact default numerics), to show
what any Python hook costs on this machine, with no ddpdoctor involved.
"""

import argparse
import json
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def mlp(widths):
    layers = []
    for a, b in zip(widths[:-1], widths[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


def python_allreduce_hook(state, bucket):
    buffer = bucket.buffer().mul_(1.0 / dist.get_world_size())
    fut = dist.all_reduce(buffer, async_op=True).get_future()
    return fut.then(lambda f: f.value()[0])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--widths", default="1024,2048,2048,1024,1024,10")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--out", default="")
    parser.add_argument("--python-hook", action="store_true")
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    widths = [int(w) for w in args.widths.split(",")]
    torch.manual_seed(0)
    model = mlp(widths)
    params = sum(p.numel() for p in model.parameters())
    ddp = DDP(model)
    if args.python_hook:
        ddp.register_comm_hook(None, python_allreduce_hook)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=1e-3, momentum=0.9)

    g = torch.Generator().manual_seed(1)
    n = args.batch_size * dist.get_world_size() * 16
    data = TensorDataset(torch.randn(n, widths[0], generator=g), torch.randint(0, widths[-1], (n,), generator=g))
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=args.batch_size, sampler=sampler, drop_last=True)

    times, cpu = [], []
    epoch = 0
    last, last_cpu = time.perf_counter(), time.process_time()
    while len(times) < args.steps:
        sampler.set_epoch(epoch)
        for x, y in loader:
            optimizer.zero_grad(set_to_none=True)
            F.cross_entropy(ddp(x), y).backward()
            optimizer.step()
            now, now_cpu = time.perf_counter(), time.process_time()
            times.append(now - last)
            cpu.append(now_cpu - last_cpu)
            last, last_cpu = now, now_cpu
            if len(times) == args.steps:
                break
        epoch += 1
    if rank == 0 and args.out:
        with open(args.out, "w") as handle:
            json.dump({"step_s": times, "cpu_s": cpu, "params": params}, handle)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
