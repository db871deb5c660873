# Stands for mlfoundations/open_clip bfd2f34^ src/open_clip_train/train.py:251-281 (fixed in
# bfd2f34, issue #1121): evaluation returns at once on non-leader ranks, then runs the DDP-WRAPPED
# model, whose module holds a buffer. Under inference_mode DDP broadcasts the buffers once, in
# the first forward after a training step: the leader's broadcast paired with the other ranks'
# next training forward after every epoch but the last, where they were gone (issue #1121: it
# hung there). A latent hang, a warning. The fix evaluates `model.module`.
# expect: DDP801 warning line 36
import argparse

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class TextImage(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)
        self.register_buffer("attn_mask", torch.ones(4, 4), persistent=False)

    def forward(self, images, texts):
        return self.proj(images) @ self.attn_mask, texts


def is_leader(args):
    return args.rank == 0


def evaluate(model, batches, args):
    metrics = {}
    if not is_leader(args):
        return metrics
    model.eval()
    with torch.inference_mode():
        for images, texts in batches:
            out = model(images, texts)
            metrics["n"] = metrics.get("n", 0) + len(out)
    return metrics


dist.init_process_group("gloo")
model = DDP(TextImage())
evaluate(model, [(torch.randn(2, 4), None)], argparse.Namespace(rank=dist.get_rank()))
