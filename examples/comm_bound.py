"""Slow: communication bound, the gradient all-reduce is most of every step (ddpdoctor: DDP604).

A bag-of-words text classifier with a big vocabulary: an `nn.EmbeddingBag` of 200,000 words x 64
dimensions (12.8M parameters, 51 MB of gradient) in front of a small linear head. A batch of 32
short documents touches a few hundred rows of the table, so forward and backward take a couple
of milliseconds, but DDP all-reduces the *whole* dense embedding gradient every step: 51 MB per
rank per step. And since the embedding is the first layer, its gradient is ready only at the very
end of backward, so none of that transfer hides behind compute.

Without ddpdoctor: the job runs and converges, just slowly, and adding ranks makes it no faster.
Nothing in the log says why.

Fix (any of):
  * sparse gradients for the table (`nn.EmbeddingBag(..., sparse=True)` with `torch.optim.SparseAdam`
    or SGD): only the touched rows travel;
  * more work per all-reduce: a larger batch per rank, or gradient accumulation under
    `model.no_sync()` so that the all-reduce runs every k micro-batches;
  * a compression hook: `model.register_comm_hook(None, default_hooks.bf16_compress_hook)`.

    torchrun --nproc-per-node 2 examples/comm_bound.py
"""

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class ReviewsDataset(Dataset):
    """Synthetic reviews: 20 word ids each; the label depends on which words appear."""

    def __init__(self, n_docs, vocab, doc_len=20, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.tokens = torch.randint(0, vocab, (n_docs, doc_len), generator=g)
        self.labels = (self.tokens % 7 == 0).sum(dim=1).clamp(max=2)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        return self.tokens[idx], self.labels[idx]


class BagOfWords(nn.Module):
    def __init__(self, vocab, dim=64, n_classes=3):
        super().__init__()
        self.embed = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.head = nn.Linear(dim, n_classes)

    def forward(self, tokens):
        return self.head(self.embed(tokens))


def main():
    parser = argparse.ArgumentParser(description="communication-bound DDP example")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--vocab", type=int, default=200_000)
    parser.add_argument("--docs", type=int, default=384)
    parser.add_argument("--lr", type=float, default=0.5)
    args = parser.parse_args()

    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    rank = dist.get_rank()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")

    dataset = ReviewsDataset(args.docs, args.vocab)
    sampler = DistributedSampler(dataset, shuffle=True)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler, drop_last=True)

    torch.manual_seed(0)
    model = DDP(BagOfWords(args.vocab).to(device))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for tokens, labels in loader:
            tokens, labels = tokens.to(device), labels.to(device)
            optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(tokens), labels)
            loss.backward()
            optimizer.step()
        if rank == 0:
            print(f"epoch {epoch} | loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
