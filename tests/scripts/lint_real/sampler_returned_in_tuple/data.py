from torch.utils.data import DataLoader, DistributedSampler


def make_shards(dataset, world_size, rank, batch_size):
    shard_sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True)
    loader = DataLoader(dataset, sampler=shard_sampler, batch_size=batch_size, drop_last=True)
    return dataset, loader, shard_sampler
