"""Broken: rank 1 crashes on one bad sample while rank 0 waits for it (ddpdoctor: DDP504).

A character-level sentiment classifier for restaurant reviews. The tokenizer maps characters
outside its alphabet to UNK, but the embedding table was sized for PAD plus the alphabet only:
UNK's id is one past the end of the table. Almost every review is plain ASCII, so the bug never
shows up on a laptop with a few samples. One hand-written review mentions a "crème brûlée";
the DistributedSampler deals it to rank 1 as part of its 5th batch, and rank 1's embedding
lookup raises `IndexError: index out of range in self`.

Without ddpdoctor: rank 1 dies with the IndexError inside its forward; rank 0, which had gone
on into the same step's gradient all-reduce, then fails in `loss.backward()` with "Connection
closed by peer" (gloo) or hangs until the watchdog timeout (NCCL). torchrun ends with a
ChildFailedError whose "Root Cause" names rank 1 but, without `@record`, shows no traceback
("To enable traceback see: ..."), and rank 0's connection error sits next to the real one,
looking like a second bug.

Fix: size the embedding for every id the tokenizer can produce
(`num_embeddings = len(VOCAB) + 2` for PAD and UNK).

    torchrun --nproc-per-node 2 examples/crash_rank1.py
"""

import argparse
import random

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

VOCAB = "abcdefghijklmnopqrstuvwxyz .,!'"
PAD = 0
stoi = {c: i + 1 for i, c in enumerate(VOCAB)}
UNK = len(VOCAB) + 1
NUM_EMBEDDINGS = len(VOCAB) + 1  # PAD + alphabet
MAX_LEN = 64

POSITIVE = ["great", "lovely", "excellent", "tasty", "friendly", "fresh", "perfect", "cozy"]
NEGATIVE = ["awful", "bland", "rude", "cold", "slow", "stale", "overpriced", "noisy"]
DISHES = ["pasta", "soup", "pizza", "salad", "burger", "coffee", "cake", "curry", "noodles"]
TEMPLATES = [
    "the {dish} was {adj}.",
    "{adj} {dish}, {adj2} service!",
    "really {adj} {dish} and the staff were {adj2}.",
    "we had the {dish}. it was {adj}, honestly.",
    "i'd call the {dish} {adj}. place is {adj2}.",
]
HANDWRITTEN = [  # (review, label) collected by hand
    ("the waiter ignored us for twenty minutes and the soup was cold.", 0),
    ("lovely little place, we will be back!", 1),
    ("best crème brûlée in town, and a perfect espresso too!", 1),
    ("overpriced and noisy. never again.", 0),
    ("friendly staff, fresh bread, great coffee.", 1),
    ("the pizza was stale and the salad was bland.", 0),
    ("cozy corner, tasty curry, perfect evening.", 1),
    ("slow service, rude manager, awful noodles.", 0),
]


def make_reviews(n_generated=504, seed=48):
    rng = random.Random(seed)
    reviews = []
    for _ in range(n_generated):
        label = rng.randint(0, 1)
        words = POSITIVE if label else NEGATIVE
        template = rng.choice(TEMPLATES)
        text = template.format(dish=rng.choice(DISHES), adj=rng.choice(words), adj2=rng.choice(words))
        reviews.append((text, label))
    reviews += HANDWRITTEN
    rng.shuffle(reviews)
    return reviews


def encode(text):
    ids = [stoi.get(c, UNK) for c in text.lower()][:MAX_LEN]
    return torch.tensor(ids + [PAD] * (MAX_LEN - len(ids)))


class ReviewDataset(Dataset):
    def __init__(self, reviews):
        self.reviews = reviews

    def __len__(self):
        return len(self.reviews)

    def __getitem__(self, i):
        text, label = self.reviews[i]
        return encode(text), label


class CharBagClassifier(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.emb = nn.Embedding(NUM_EMBEDDINGS, dim, padding_idx=PAD)
        self.mlp = nn.Sequential(nn.Linear(dim, 32), nn.ReLU(), nn.Linear(32, 2))

    def forward(self, ids):
        mask = (ids != PAD).unsqueeze(-1).float()
        pooled = (self.emb(ids) * mask).sum(1) / mask.sum(1).clamp(min=1)
        return self.mlp(pooled)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=0.01)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank = dist.get_rank()

    dataset = ReviewDataset(make_reviews())
    sampler = DistributedSampler(dataset, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)

    torch.manual_seed(0)
    model = DDP(CharBagClassifier())
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    step = 0
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for ids, labels in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(ids), labels)
            loss.backward()
            optimizer.step()
            if rank == 0 and step % 2 == 0:
                print(f"epoch {epoch} step {step}: loss {loss.item():.4f}", flush=True)
            step += 1

    dist.destroy_process_group()


if __name__ == "__main__":
    main()
