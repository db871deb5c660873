"""Broken: FSDP2 with every block sharded but the root left out (ddpdoctor: DDP608).

Launch:
    torchrun --nproc-per-node 2 examples/frameworks/fsdp2_unsharded_embedding.py

A small language model: a token embedding, three blocks, an output head. Each block is passed to
fully_shard, and training works. But `fully_shard(model)` on the root is missing, so the
embedding and the head (the root's own parameters, most of this model's weights) stay ordinary
replicated tensors on every rank, with their gradients and their Adam state: FSDP shards a
fraction of what it should, and nothing says so. (Their gradients are not even averaged across
ranks here, the job's second bug; the first one is what memory shows.)

Fix: call fully_shard on the root after the blocks:

    for block in model.blocks:
        fully_shard(block)
    fully_shard(model)
"""

import os

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import fully_shard
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

VOCAB, WIDTH = 8192, 128


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.ff = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))

    def forward(self, x):
        return x + self.ff(self.norm(x))


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.blocks = nn.ModuleList(Block(WIDTH) for _ in range(3))
        self.head = nn.Linear(WIDTH, VOCAB)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = TinyLM()
    for block in model.blocks:
        fully_shard(block)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, VOCAB, (512, 17), generator=g)
    data = TensorDataset(tokens[:, :-1], tokens[:, 1:])
    sampler = DistributedSampler(data, shuffle=True, seed=0)
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    for epoch in range(int(os.environ.get("EPOCHS", "2"))):
        sampler.set_epoch(epoch)
        for inputs, targets in loader:
            logits = model(inputs)
            loss = nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        if dist.get_rank() == 0:
            print(f"epoch {epoch} loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
