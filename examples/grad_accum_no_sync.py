"""Wasteful: gradient accumulation that all-reduces on every micro-batch (ddpdoctor: DDP403).

A tiny character-level GPT in the nanoGPT style: module-level config variables, a `get_batch`
that draws random windows from a token tensor, and gradient accumulation over
`gradient_accumulation_steps` micro-batches per optimizer step.

nanoGPT only synchronises gradients on the last micro-step
(`model.require_backward_grad_sync = (micro_step == gradient_accumulation_steps - 1)`); this
script lost that line. Every `loss.backward()` therefore all-reduces the full gradient, 4 times
per optimizer step instead of once. The result is numerically the same, so nothing looks wrong.

Without ddpdoctor: the job runs and the loss goes down. It is just slower than it should be,
by up to 4x the communication per step, which on a real multi-node job is often most of the
step time.

Fix: wrap all but the last micro-step in `with model.no_sync():` (or set
`model.require_backward_grad_sync` as nanoGPT does).

    torchrun --nproc-per-node 2 examples/grad_accum_no_sync.py
"""

import math
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn import functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

# -----------------------------------------------------------------------------
# default config values
eval_interval = 10
log_interval = 5
max_iters = 30
gradient_accumulation_steps = 4
batch_size = 8
block_size = 32
n_layer = 2
n_head = 2
n_embd = 32
dropout = 0.0
learning_rate = 3e-3
weight_decay = 0.1
seed = 1337
# -----------------------------------------------------------------------------

# a small synthetic corpus so that nothing needs downloading
_words = ("the quick brown fox jumps over a lazy dog while seven wizards quietly hex "
          "every jolly bank clerk near the old river bridge").split()
_g = torch.Generator().manual_seed(0)
text = " ".join(_words[i] for i in torch.randint(0, len(_words), (6000,), generator=_g).tolist())
chars = sorted(set(text))
vocab_size = len(chars)
stoi = {ch: i for i, ch in enumerate(chars)}
data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
n = int(0.9 * len(data))
train_data, val_data = data[:n], data[n:]

# DDP setup
dist.init_process_group(backend="gloo")
ddp_rank = int(os.environ["RANK"])
ddp_world_size = int(os.environ["WORLD_SIZE"])
master_process = ddp_rank == 0
seed_offset = ddp_rank  # each process gets a different seed
torch.manual_seed(seed + seed_offset)


def get_batch(split):
    d = train_data if split == "train" else val_data
    ix = torch.randint(len(d) - block_size, (batch_size,))
    x = torch.stack([d[i:i + block_size] for i in ix])
    y = torch.stack([d[i + 1:i + 1 + block_size] for i in ix])
    return x, y


class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(n_embd, dim=2)
        q = q.view(B, T, n_head, C // n_head).transpose(1, 2)
        k = k.view(B, T, n_head, C // n_head).transpose(1, 2)
        v = v.view(B, T, n_head, C // n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention()
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.h = nn.ModuleList(Block() for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)

    def forward(self, idx, targets=None):
        pos = torch.arange(idx.size(1), device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss


model = GPT()
if master_process:
    print(f"number of parameters: {sum(p.numel() for p in model.parameters()) / 1e3:.1f}K", flush=True)
optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=weight_decay)
model = DDP(model)
raw_model = model.module


@torch.no_grad()
def estimate_loss(eval_iters=4):
    out = {}
    raw_model.eval()
    for split in ("train", "val"):
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            X, Y = get_batch(split)
            _, loss = raw_model(X, Y)
            losses[k] = loss.item()
        out[split] = losses.mean().item()
    raw_model.train()
    return out


def get_lr(it):
    return learning_rate * 0.5 * (1.0 + math.cos(math.pi * it / max_iters))


X, Y = get_batch("train")
t0 = time.time()
for iter_num in range(max_iters):
    for param_group in optimizer.param_groups:
        param_group["lr"] = get_lr(iter_num)

    if iter_num % eval_interval == 0 and master_process:
        losses = estimate_loss()
        print(f"step {iter_num}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}", flush=True)

    for micro_step in range(gradient_accumulation_steps):
        logits, loss = model(X, Y)
        loss = loss / gradient_accumulation_steps
        X, Y = get_batch("train")
        loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)

    if iter_num % log_interval == 0 and master_process:
        dt = time.time() - t0
        t0 = time.time()
        lossf = loss.item() * gradient_accumulation_steps
        print(f"iter {iter_num}: loss {lossf:.4f}, time {dt * 1000:.0f}ms", flush=True)

dist.destroy_process_group()
