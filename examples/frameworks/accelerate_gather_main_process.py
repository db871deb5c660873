"""Accelerate: a collective under `if accelerator.is_main_process:`. ddpdoctor names it DDP502.

Launch:
    accelerate launch --cpu --num_processes 2 examples/frameworks/accelerate_gather_main_process.py

The healthy example (accelerate_healthy.py) with the epoch loss gathered inside the main-process
branch. accelerator.gather is a collective: the main process enters it alone and waits for the
others, which have gone on to the next epoch's all-reduces (a hang, or on gloo a mismatch).

Fix: call accelerator.gather(...) on every process, print under is_main_process only.
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
        if accelerator.is_main_process:
            epoch_loss = accelerator.gather(total).sum()  # BUG: only the main process gathers
            print(f"epoch {epoch}: summed loss {epoch_loss.item():.3f}")
    accelerator.wait_for_everyone()


if __name__ == "__main__":
    main()
