"""nanoGPT-style training: no DataLoader, batches drawn by the script itself from a np.memmap of
token ids with torch.randint offsets, a tiny causal transformer with a constant mask and position
ids, torch.cuda only (no torch.accelerator), DDP.

Buggy as written: every rank seeds its sampling with the same `--seed`, so every rank draws the
same batches and DDP averages copies (ddpdoctor: DDP301, from the model's forward inputs).
`--seed-per-rank` seeds with seed + rank, as nanoGPT does, and the run is healthy.

    torchrun --nproc-per-node 2 examples/tutorial_style/nanogpt_style.py [--seed-per-rank]
"""

import argparse
import os
import tempfile

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=1337)
parser.add_argument("--seed-per-rank", action="store_true")
parser.add_argument("--max-iters", type=int, default=40)
args = parser.parse_args()

block_size, batch_size, vocab = 32, 8, 96
dist.init_process_group(backend="nccl")
ddp_rank = int(os.environ["RANK"])
ddp_local_rank = int(os.environ["LOCAL_RANK"])
device = f"cuda:{ddp_local_rank}"
torch.cuda.set_device(device)
torch.manual_seed(args.seed + (ddp_rank if args.seed_per_rank else 0))

# The token file: written once by rank 0, read by every rank through a memmap.
data_path = os.path.join(tempfile.gettempdir(), "ddpdoctor_nanogpt_style_tokens.bin")
if ddp_rank == 0 and not os.path.exists(data_path):
    rng = np.random.default_rng(0)
    rng.integers(0, vocab, size=20000, dtype=np.uint16).tofile(data_path + ".tmp")
    os.replace(data_path + ".tmp", data_path)
dist.barrier()


def get_batch():
    data = np.memmap(data_path, dtype=np.uint16, mode="r")
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([torch.from_numpy(data[i:i + block_size].astype(np.int64)) for i in ix])
    y = torch.stack([torch.from_numpy(data[i + 1:i + 1 + block_size].astype(np.int64)) for i in ix])
    return x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)


class TinyGPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(vocab, 32)
        self.pos = nn.Embedding(block_size, 32)
        self.block = nn.TransformerEncoderLayer(32, 4, 64, batch_first=True, dropout=0.0)
        self.head = nn.Linear(32, vocab)

    def forward(self, idx, mask, pos, targets):
        h = self.block(self.tok(idx) + self.pos(pos), src_mask=mask, is_causal=True)
        logits = self.head(h)
        return nn.functional.cross_entropy(logits.view(-1, vocab), targets.view(-1))


model = DDP(TinyGPT().to(device), device_ids=[ddp_local_rank])
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
# Inputs that are the same on every rank and every step, by design: not data.
mask = nn.Transformer.generate_square_subsequent_mask(block_size, device=device)
pos = torch.arange(block_size, device=device)

for it in range(args.max_iters):
    x, y = get_batch()
    loss = model(x, mask, pos, y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    if it % 10 == 0 and ddp_rank == 0:
        print(f"iter {it}: loss {loss.item():.3f}")
torch.cuda.synchronize()
dist.destroy_process_group()
