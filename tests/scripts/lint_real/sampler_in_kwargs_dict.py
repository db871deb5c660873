# Stands for pytorch/examples 77f55b9 distributed/FSDP/T5_training.py:101-109 (and
# meta-llama/llama-recipes faae2fd finetuning.py:350): the DistributedSampler reaches the
# DataLoader through a kwargs dict, `DataLoader(ds, **loader_kw)`.
# expect: clean
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

dist.init_process_group("gloo")
train_set = TensorDataset(torch.randn(64, 4))
shards = DistributedSampler(train_set, shuffle=True)
loader_kw = {"batch_size": 8, "sampler": shards}
loader_kw.update({"num_workers": 0, "pin_memory": False})
train_loader = DataLoader(train_set, **loader_kw)
for epoch in range(3):
    shards.set_epoch(epoch)
    for (x,) in train_loader:
        pass
