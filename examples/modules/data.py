"""A synthetic dataset shared by the module examples."""

import torch
from torch.utils.data import TensorDataset


def make_dataset(n: int = 320) -> TensorDataset:
    g = torch.Generator().manual_seed(11)
    return TensorDataset(torch.randn(n, 8, generator=g), torch.randint(0, 2, (n,), generator=g))
