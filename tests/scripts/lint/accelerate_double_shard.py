# DDP803: a DistributedSampler (left over from a plain-DDP version of the script) on a loader
# that is then handed to accelerator.prepare(), which shards it once more: each process sees
# about 1/world² of the data. Fix: DataLoader(ds, shuffle=True) and let prepare() shard it.
import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

accelerator = Accelerator(cpu=True)
dataset = TensorDataset(torch.randn(512, 8), torch.randn(512, 1))
train_dl = DataLoader(dataset, batch_size=16,
                      sampler=DistributedSampler(dataset, num_replicas=accelerator.num_processes,
                                                 rank=accelerator.process_index))
model = torch.nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
model, optimizer, train_dl = accelerator.prepare(model, optimizer, train_dl)
for epoch in range(2):
    train_dl.sampler.set_epoch(epoch) if hasattr(train_dl.sampler, "set_epoch") else None
    for x, y in train_dl:
        optimizer.zero_grad()
        accelerator.backward(torch.nn.functional.mse_loss(model(x), y))
        optimizer.step()
    accelerator.print(f"epoch {epoch}: {len(train_dl)} batches on this process")
