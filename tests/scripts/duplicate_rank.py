# DDP505, written differently: both processes pass rank=0 explicitly (copied from a
# single-process notebook), so the group can never form.
import torch.distributed as dist

dist.init_process_group(backend="gloo", init_method="env://", rank=0, world_size=2)
print("formed", dist.get_rank())
