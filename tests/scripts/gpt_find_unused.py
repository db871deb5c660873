# DDP402, written differently: nanoGPT-style module-level config, a tiny transformer block,
# find_unused_parameters=True "just in case", every parameter used.
import os
import torch
import torch.nn as nn
from torch.distributed import init_process_group, destroy_process_group
from torch.nn.parallel import DistributedDataParallel as DDP

n_embd, block_size, vocab, batch_size, max_iters = 32, 16, 50, 8, 100
init_process_group(backend="gloo")
ddp_rank = int(os.environ["RANK"])
torch.manual_seed(1337 + ddp_rank)
data = torch.randint(0, vocab, (4000,))


def get_batch():
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([data[i:i + block_size] for i in ix])
    y = torch.stack([data[i + 1:i + 1 + block_size] for i in ix])
    return x, y


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(n_embd)
        self.attn = nn.MultiheadAttention(n_embd, 2, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd))

    def forward(self, x):
        h = self.ln(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.ln(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(vocab, n_embd)
        self.block = Block()
        self.head = nn.Linear(n_embd, vocab)

    def forward(self, idx, targets):
        logits = self.head(self.block(self.tok(idx)))
        return nn.functional.cross_entropy(logits.view(-1, vocab), targets.view(-1))


model = DDP(GPT(), find_unused_parameters=True)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
for it in range(max_iters):
    X, Y = get_batch()
    loss = model(X, Y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
destroy_process_group()
