# Stands for mlfoundations/open_clip 89fb801 src/open_clip_train/data.py:226-253 (ImageNet-val
# loader) + main.py: every rank builds all loaders; the evaluation loader comes from a helper, with
# an optional subset sampler or none, and only rank 0 evaluates with it. Not a training loader.
# expect: clean
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, SubsetRandomSampler, TensorDataset


def get_imagenet(split, subset):
    dataset = TensorDataset(torch.randn(32, 4))
    if subset:
        sampler = SubsetRandomSampler(range(0, 32, 2))
    else:
        sampler = None
    dataloader = DataLoader(dataset, batch_size=8, sampler=sampler)
    return dataloader


def get_data(subset):
    train_set = TensorDataset(torch.randn(64, 4))
    shards = DistributedSampler(train_set)
    data = {"train": (DataLoader(train_set, batch_size=8, sampler=shards), shards)}
    data["imagenet-val"] = get_imagenet("val", subset)
    return data


dist.init_process_group("gloo")
data = get_data(subset=True)
train_loader, shards = data["train"]
for epoch in range(2):
    shards.set_epoch(epoch)
    for (x,) in train_loader:
        pass
    if dist.get_rank() == 0:
        for (x,) in data["imagenet-val"]:
            pass
