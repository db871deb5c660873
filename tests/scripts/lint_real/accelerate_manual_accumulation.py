# Stands for huggingface/accelerate 16cb6eb examples/nlp_example.py:160-170 (and
# complete_nlp_example.py:221): the script accumulates by hand - accelerator.backward on every
# batch, optimizer.step every k batches - without `accelerator.accumulate(model)`, so the wrapped
# DDP model all-reduces on every batch.
# expect: DDP805 warning line 22
import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset

accelerator = Accelerator()
batch_size, max_gpu_batch = 64, 16
accumulation = max(1, batch_size // max_gpu_batch)
net = torch.nn.Linear(4, 1)
optimizer = torch.optim.AdamW(net.parameters(), lr=1e-3)
train_loader = DataLoader(TensorDataset(torch.randn(256, 4)), batch_size=max_gpu_batch, shuffle=True)
net, optimizer, train_loader = accelerator.prepare(net, optimizer, train_loader)
for epoch in range(2):
    net.train()
    for step, (x,) in enumerate(train_loader):
        loss = net(x).pow(2).mean()
        loss = loss / accumulation
        accelerator.backward(loss)
        if step % accumulation == 0:
            optimizer.step()
            optimizer.zero_grad()
