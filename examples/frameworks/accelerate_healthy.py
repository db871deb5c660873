"""Hugging Face Accelerate, done right: the baseline ddpdoctor must pass clean.

Launch (any of):
    accelerate launch --cpu --num_processes 2 examples/frameworks/accelerate_healthy.py
    torchrun --nproc-per-node 2 examples/frameworks/accelerate_healthy.py
    ddpdoctor probe examples/frameworks/accelerate_healthy.py

A small MLP regressor on synthetic data, a hand-written loop, 4 epochs on CPU/gloo.

What is right with it:
  * the model, the optimizer AND the DataLoader go through `accelerator.prepare(...)`, so each
    process reads its own shard of the batches;
  * gradient accumulation runs inside `accelerator.accumulate(model)`, which skips the
    all-reduce on the micro-steps;
  * the epoch loss is gathered with `accelerator.gather` on every process, and only the
    printing sits under `if accelerator.is_main_process:`.
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
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)

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
