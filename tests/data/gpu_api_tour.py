"""Every CUDA and NCCL API that `probe --cpu` stands in for, called the way GPU scripts call
them, asserting what a GPU run would answer. Run by tests/test_cpu_shim.py as one rank."""

import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

local_rank = int(os.environ["LOCAL_RANK"])

# Queries and device selection.
assert torch.cuda.is_available()
assert torch.cuda.device_count() == int(os.environ["LOCAL_WORLD_SIZE"])
torch.cuda.set_device(local_rank)
assert torch.cuda.current_device() == local_rank
assert torch.cuda.get_device_name()
assert torch.cuda.get_device_properties(local_rank).total_memory > 0
with torch.cuda.device(local_rank):
    pass
torch.cuda.reset_peak_memory_stats()
assert torch.cuda.max_memory_allocated() == 0

# NCCL, with the device binding of recent torch.
device = torch.device("cuda", local_rank)
dist.init_process_group("nccl", device_id=device)
assert dist.get_backend() == "gloo"
subgroup = dist.new_group([0], backend="nccl")

# Every spelling of "put it on the GPU".
x = torch.randn(4, 3).cuda(non_blocking=True)
y = (torch.zeros(4, 3, device=device) + x.to(device) + x.to(local_rank) + x.to("cuda")
     + x.to(f"cuda:{local_rank}", non_blocking=True) + x.to(device=device, dtype=torch.float32))
assert x.new_zeros(2, device=device).shape == (2,)
assert torch.ones(2).pin_memory().sum().item() == 2

# DDP with positional device_ids and output_device, AMP, CUDA events.
model = nn.Linear(3, 1).cuda()
model.to(device)
ddp = DDP(model, [local_rank], local_rank)
optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
scaler, legacy_scaler = torch.amp.GradScaler("cuda"), torch.cuda.amp.GradScaler()
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
start.record()
with torch.autocast("cuda", dtype=torch.float16):
    out = ddp(y)
assert out.dtype == torch.float32  # AMP is off: the forward ran in fp32
scaler.scale(out.sum()).backward()
scaler.step(optimizer)
scaler.update()
end.record()
torch.cuda.synchronize()
assert end.elapsed_time(start) <= 0 <= start.elapsed_time(end)

# Collectives on "CUDA" tensors, a barrier pinned to the device.
total = torch.ones(1, device="cuda")
dist.all_reduce(total, op=dist.ReduceOp.AVG)
dist.all_reduce(torch.ones(1, device=device), group=subgroup)
dist.barrier(device_ids=[local_rank])
objects = [{"epoch": 3}]
dist.broadcast_object_list(objects, src=0)
gathered = [None]
dist.all_gather_object(gathered, objects[0])
assert gathered == [{"epoch": 3}]

# Checkpoints saved on a GPU, loaded with every kind of map_location.
path = os.path.join(tempfile.mkdtemp(), "model.pt")
torch.save(model.state_dict(), path)
for where in (f"cuda:{local_rank}", device, {"cuda:1": "cuda:0"}, lambda s, loc: s.cuda(local_rank)):
    model.load_state_dict(torch.load(path, map_location=where))

dist.destroy_process_group()
print("GPU API TOUR OK", flush=True)
