# Stands for meta-llama/llama-recipes faae2fd src/llama_cookbook/utils/config_utils.py:95 +
# finetuning.py:350: a helper returns the DataLoader kwargs with a shuffling DistributedSampler,
# and the training loop never calls set_epoch: the same order every epoch. The current rules
# report it (a true positive); it must stay reported once kwargs dicts are followed.
# expect: DDP804 warning line 14
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def loader_kwargs(dataset, batch_size, mode):
    kwargs = {"batch_size": batch_size, "drop_last": True}
    if mode == "train":
        kwargs["sampler"] = DistributedSampler(
            dataset, rank=dist.get_rank(), num_replicas=dist.get_world_size(), shuffle=True)
    return kwargs


dist.init_process_group("gloo")
train_set = TensorDataset(torch.randn(64, 4))
train_loader = DataLoader(train_set, **loader_kwargs(train_set, 8, "train"))
for epoch in range(3):
    for (x,) in train_loader:
        pass
