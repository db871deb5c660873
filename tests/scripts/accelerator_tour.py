# Every torch.accelerator call `probe --cpu` stands in for, asserted as a GPU script sees it, while
# torch's own code (DataLoader pinning, the optimizer's graph-capture check) keeps the CPU path.
import os

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset

acc = torch.accelerator
assert acc.is_available() is True
assert acc.device_count() == int(os.environ["LOCAL_WORLD_SIZE"])
assert acc.current_accelerator() == torch.device("cuda")
assert acc.current_accelerator(check_available=True).type == "cuda"
assert acc.current_device_index() == int(os.environ["LOCAL_RANK"])
acc.set_device_index(0)
assert acc.current_device_index() == 0 and torch.cuda.current_device() == 0
acc.synchronize()
with acc.device_index(0):
    pass
assert acc.memory_allocated() == 0 and acc.max_memory_allocated() == 0
acc.reset_peak_memory_stats()
acc.empty_cache()
free, total = acc.get_memory_info()
assert free <= total
device = torch.device(f"{acc.current_accelerator()}:{acc.current_device_index()}")
assert str(device) == "cuda:0"
assert dist.get_default_backend_for_device(device) == "nccl"
dist.init_process_group(backend=dist.get_default_backend_for_device(device))
model = torch.nn.Linear(4, 2).to(device)
x = torch.randn(8, 4, device=device).to(acc.current_accelerator(), non_blocking=True)
ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[acc.current_device_index()])
optimizer = torch.optim.AdamW(ddp.parameters())  # its step() asks torch.accelerator itself
loader = DataLoader(TensorDataset(torch.randn(16, 4)), batch_size=8, pin_memory=True, num_workers=1)
for (batch,) in loader:
    optimizer.zero_grad()
    ddp(batch.to(device)).sum().backward()
    optimizer.step()
t = torch.ones(3, device=device)
dist.all_reduce(t)
assert t.device.type == "cpu"
dist.destroy_process_group()
print("ACCELERATOR TOUR OK")
