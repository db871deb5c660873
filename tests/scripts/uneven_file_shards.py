# DDP303, written differently: "files" are sharded round-robin across ranks, but the files hold
# different numbers of samples, so the ranks' loaders have different lengths.
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import ConcatDataset, DataLoader, TensorDataset

dist.init_process_group(backend="gloo")
rank, world = dist.get_rank(), dist.get_world_size()
file_sizes = [96, 64, 96, 32]  # samples per shard file
shards = [TensorDataset(torch.randn(n, 6), torch.randint(0, 2, (n,))) for n in file_sizes]
mine = ConcatDataset(shards[rank::world])  # rank 0: 96+96, rank 1: 64+32
loader = DataLoader(mine, batch_size=32, shuffle=True)
net = DDP(torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2)))
opt = torch.optim.SGD(net.parameters(), lr=0.05)
for epoch in range(3):
    for xb, yb in loader:
        loss = torch.nn.functional.cross_entropy(net(xb), yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
dist.destroy_process_group()
