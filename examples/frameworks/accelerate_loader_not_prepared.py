"""Accelerate: the DataLoader left out of `accelerator.prepare`. ddpdoctor names it DDP301.

Launch:
    accelerate launch --cpu --num_processes 2 examples/frameworks/accelerate_loader_not_prepared.py

The healthy example (accelerate_healthy.py) with only the model and optimizer prepared. The
loader is not sharded, so every process reads the same batches (all seeded alike): N
processes do the work of one.

Fix: model, optimizer, loader = accelerator.prepare(model, optimizer, loader).
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from accelerate import Accelerator


def synthetic(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 32, generator=g)
    w = torch.randn(32, 1, generator=g)
    return TensorDataset(x, x @ w + 0.1 * torch.randn(n, 1, generator=g))


def main():
    accelerator = Accelerator(cpu=True, gradient_accumulation_steps=2)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(synthetic(1024), batch_size=16, shuffle=True)
    model, optimizer = accelerator.prepare(model, optimizer)  # BUG: the loader is left out

    for epoch in range(4):
        total = torch.zeros(1)
        for x, y in loader:
            with accelerator.accumulate(model):
                loss = nn.functional.mse_loss(model(x), y)
                accelerator.backward(loss)
                optimizer.step()
                optimizer.zero_grad()
            total += loss.detach()
        epoch_loss = accelerator.gather(total).sum()  # every process takes part
        if accelerator.is_main_process:
            print(f"epoch {epoch}: summed loss {epoch_loss.item():.3f}")
    accelerator.wait_for_everyone()


if __name__ == "__main__":
    main()
